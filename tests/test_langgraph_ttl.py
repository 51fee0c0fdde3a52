"""MemstoreStore's TTL, on both backends: the TTL behaviours of LangGraph's own store tests
(libs/checkpoint-sqlite/tests/test_ttl.py and the `test_store_ttl` of libs/checkpoint-postgres),
ported to memstore, where expired items are archived by a sweep, never deleted.

Lifetimes here are a second and a half (LangGraph's tests use seconds) and every wait has a
margin of several times a store call; the behaviours that do not need the clock to move backdate
`expires_at` in the database instead, as LangGraph's omit-expired tests do.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from langgraph.store.base import GetOp, PutOp, SearchOp, TTLConfig
from sqlalchemy import text

from memstore.integrations.langgraph import MemstoreStore, namespace_to_text

# Long enough that each wait's margin (0.2 s to 0.4 x TTL) outlasts a stall of a loaded machine.
TTL_SECONDS = 1.5
TTL_MINUTES = TTL_SECONDS / 60
# The refresh tests assert an item is still live a fixed wait after its lifetime restarted: a
# longer lifetime, so a loaded machine's stall (0.6 s was seen) stays inside the margin.
REFRESH_TTL_SECONDS = 3.0
REFRESH_TTL_MINUTES = REFRESH_TTL_SECONDS / 60
LONG_MINUTES = 5.0  # long enough that nothing below races it


@pytest.fixture
def open_store(store_url):
    opened = []

    def open_(ttl: TTLConfig | None = None) -> MemstoreStore:
        opened.append(MemstoreStore(store_url, ttl=ttl))
        return opened[-1]

    yield open_
    for store in opened:
        store.close()


def _expire_now(store: MemstoreStore, namespace: tuple[str, ...], key: str) -> None:
    """Backdate an item's lifetime into the past without archiving it (expired, unswept)."""
    with store.store.engine.begin() as conn:
        conn.execute(
            text("UPDATE memories SET expires_at = :past WHERE namespace = :namespace AND fact_key = :key"),
            {"past": int(time.time() * 1000) - 60_000, "namespace": namespace_to_text(namespace), "key": key},
        )


def _expires_at(store: MemstoreStore, namespace: tuple[str, ...], key: str) -> int | None:
    with store.store.engine.connect() as conn:
        return conn.execute(
            text("SELECT expires_at FROM memories WHERE namespace = :namespace AND fact_key = :key"),
            {"namespace": namespace_to_text(namespace), "key": key},
        ).scalar_one()


def test_the_store_says_it_supports_ttl_and_refuses_to_show_expired_items(open_store):
    store = open_store()
    assert store.supports_ttl
    with pytest.raises(ValueError, match="never returns expired items"):
        MemstoreStore(store.store, ttl={"omit_expired": False})
    for bad in (0, -1, float("nan"), "5", True):
        with pytest.raises(ValueError, match="ttl must be a positive number of minutes"):
            store.batch([PutOp(("docs",), "a", {"v": 1}, ttl=bad)])
    assert store.search(("docs",)) == []


@pytest.mark.slow
def test_ttl_basic(open_store):
    store = open_store({"default_ttl": TTL_MINUTES})
    store.put(("test",), "item1", {"value": "test"})
    item = store.get(("test",), "item1")
    assert item is not None and item.value["value"] == "test"
    time.sleep(TTL_SECONDS + 0.4)
    assert store.get(("test",), "item1") is None  # invisible from its end, swept or not
    assert store.sweep_ttl() == 1
    assert store.get(("test",), "item1") is None
    # Archived, not deleted: as `expired`, by a run that restore undoes.
    (archived,) = store.store.list(None, archived=True)
    assert archived["reason"] == "expired" and archived["fact_key"] == "item1"
    run = store.store.runs()[0]
    assert (run["kind"], run["expired"]) == ("expire", 1)
    store.store.restore(run["id"])
    assert store.store.get(archived["id"]).get("archived_at") is None
    assert store.get(("test",), "item1") is None  # back as it was: expired
    assert store.sweep_ttl() == 1


def test_a_sweep_that_finds_nothing_writes_nothing(open_store):
    store = open_store({"default_ttl": LONG_MINUTES})
    store.put(("test",), "item1", {"value": "test"})
    assert store.sweep_ttl() == 0
    assert store.store.runs() == []


@pytest.mark.slow
def test_ttl_refresh(open_store):
    store = open_store({"default_ttl": REFRESH_TTL_MINUTES, "refresh_on_read": True})
    store.put(("test",), "item1", {"value": "test"})
    time.sleep(REFRESH_TTL_SECONDS / 2)
    assert store.sweep_ttl() == 0
    assert store.get(("test",), "item1", refresh_ttl=True) is not None  # starts its lifetime again
    time.sleep(REFRESH_TTL_SECONDS / 2 + 0.2)  # past the first lifetime, within the refreshed one
    assert store.sweep_ttl() == 0
    assert store.get(("test",), "item1", refresh_ttl=False).value["value"] == "test"
    time.sleep(REFRESH_TTL_SECONDS + 0.4)
    assert store.sweep_ttl() == 1
    assert store.get(("test",), "item1") is None


@pytest.mark.slow
def test_ttl_sweeper(open_store):
    store = open_store({"default_ttl": TTL_MINUTES, "sweep_interval_minutes": TTL_MINUTES / 2})
    done = store.start_ttl_sweeper()
    assert store.start_ttl_sweeper() is done  # one sweeper at a time
    store.put(("test",), "item1", {"value": "test"})
    assert store.get(("test",), "item1") is not None
    deadline = time.monotonic() + 30
    while not store.store.list(None, archived=True) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [row["reason"] for row in store.store.list(None, archived=True)] == ["expired"]
    assert store.get(("test",), "item1") is None
    assert store.stop_ttl_sweeper(timeout=30) and done.done() and done.exception() is None


def test_without_a_ttl_config_the_sweeper_does_not_start(open_store):
    store = open_store()
    done = store.start_ttl_sweeper()
    assert done.done() and store.stop_ttl_sweeper()


@pytest.mark.slow
def test_ttl_custom_value(open_store):
    store = open_store()
    store.put(("test",), "item1", {"value": "short"}, ttl=TTL_MINUTES)
    store.put(("test",), "item2", {"value": "long"}, ttl=3 * TTL_MINUTES)
    time.sleep(TTL_SECONDS + 0.4)
    store.sweep_ttl()
    assert store.get(("test",), "item1") is None
    assert store.get(("test",), "item2", refresh_ttl=False) is not None
    time.sleep(2 * TTL_SECONDS + 0.4)
    store.sweep_ttl()
    assert store.get(("test",), "item2") is None


@pytest.mark.slow
def test_ttl_override_default(open_store):
    store = open_store({"default_ttl": LONG_MINUTES})
    store.put(("test",), "item1", {"value": "override"}, ttl=TTL_MINUTES)
    store.put(("test",), "item2", {"value": "default"})
    store.put(("test",), "item3", {"value": "permanent"}, ttl=None)
    time.sleep(TTL_SECONDS + 0.4)
    store.sweep_ttl()
    assert store.get(("test",), "item1") is None
    assert store.get(("test",), "item2") is not None
    assert store.get(("test",), "item3") is not None
    assert _expires_at(store, ("test",), "item3") is None
    _expire_now(store, ("test",), "item2")  # the default lifetime, run out
    store.sweep_ttl()
    assert store.get(("test",), "item2") is None and store.get(("test",), "item3") is not None


@pytest.mark.slow
def test_search_with_ttl(open_store):
    store = open_store({"default_ttl": TTL_MINUTES})
    store.put(("test",), "item1", {"value": "apple"})
    store.put(("test",), "item2", {"value": "banana"})
    assert [item.key for item in store.search(("test",), filter={"value": "apple"})] == ["item1"]
    time.sleep(TTL_SECONDS + 0.4)
    store.sweep_ttl()
    assert store.search(("test",), filter={"value": "apple"}) == []


@pytest.mark.slow
def test_store_ttl_refreshed_by_get_and_by_search(open_store):
    """checkpoint-postgres's test_store_ttl: a get and a search with refresh_ttl keep an item alive;
    reads without it do not."""
    store = open_store({"default_ttl": REFRESH_TTL_MINUTES, "refresh_on_read": True})
    namespace = ("foo",)
    store.put(namespace, key="item1", value={"foo": "bar"}, ttl=REFRESH_TTL_MINUTES)
    time.sleep(REFRESH_TTL_SECONDS * 0.6)
    assert store.get(namespace, key="item1", refresh_ttl=True) is not None
    time.sleep(REFRESH_TTL_SECONDS * 0.6)
    assert len(store.search(namespace, query="foo", refresh_ttl=True)) == 1
    time.sleep(REFRESH_TTL_SECONDS * 0.6)
    assert store.get(namespace, key="item1", refresh_ttl=False) is not None
    time.sleep(REFRESH_TTL_SECONDS * 0.6)
    assert store.search(namespace, query="bar", refresh_ttl=False) == []


def test_a_put_of_the_stored_value_starts_its_lifetime_again_without_a_new_version(open_store):
    store = open_store()
    store.put(("test",), "item1", {"value": "same"}, ttl=LONG_MINUTES)
    first = _expires_at(store, ("test",), "item1")
    time.sleep(0.05)
    store.put(("test",), "item1", {"value": "same"}, ttl=LONG_MINUTES)
    assert _expires_at(store, ("test",), "item1") > first and store.store.runs() == []
    store.put(("test",), "item1", {"value": "same"}, ttl=None)  # a new TTL: a new version, lasting
    assert _expires_at(store, ("test",), "item1") is None
    assert [run["kind"] for run in store.store.runs()] == ["update"]


def test_omit_expired_filters_read_paths(open_store):
    store = open_store({"default_ttl": LONG_MINUTES, "omit_expired": True})
    expired_ns, control_ns = ("omit", "expired"), ("omit", "control")
    store.put(expired_ns, "e", {"data": "gone"}, ttl=LONG_MINUTES)
    store.put(control_ns, "c", {"data": "keep"}, ttl=None)
    _expire_now(store, expired_ns, "e")
    assert _expires_at(store, expired_ns, "e") is not None  # still in the live table: unswept
    assert store.get(expired_ns, "e") is None
    assert store.get(control_ns, "c") is not None
    assert store.search(expired_ns) == []
    assert store.search(expired_ns, query="gone") == []
    assert [item.key for item in store.search(control_ns)] == ["c"]
    namespaces = store.list_namespaces(prefix=("omit",))
    assert expired_ns not in namespaces and control_ns in namespaces


def test_refresh_ttl_only_refreshes_live_rows(open_store):
    store = open_store({"default_ttl": LONG_MINUTES, "refresh_on_read": True})
    namespace = ("refresh",)
    for key, n in (("expired", 0), ("live_get", 1), ("live_search", 2)):
        store.put(namespace, key, {"n": n}, ttl=LONG_MINUTES)
    _expire_now(store, namespace, "expired")
    before = {key: _expires_at(store, namespace, key) for key in ("expired", "live_get", "live_search")}
    time.sleep(0.05)
    assert store.get(namespace, "expired", refresh_ttl=True) is None
    assert "expired" not in [item.key for item in store.search(namespace, refresh_ttl=True)]
    assert _expires_at(store, namespace, "expired") == before["expired"]  # not brought back
    assert store.get(namespace, "live_get", refresh_ttl=True) is not None
    assert _expires_at(store, namespace, "live_get") > before["live_get"]
    assert _expires_at(store, namespace, "live_search") > before["live_search"]


def test_expired_items_are_left_out_before_limit_and_offset(open_store):
    store = open_store({"default_ttl": LONG_MINUTES})
    namespace = ("page",)
    for key in ("a", "expired", "b", "c"):
        store.put(namespace, key, {"k": key})
    _expire_now(store, namespace, "expired")
    page1, page2 = store.search(namespace, limit=2, offset=0), store.search(namespace, limit=2, offset=2)
    assert len(page1) == 2 and len(page2) == 1
    assert sorted(item.key for item in page1 + page2) == ["a", "b", "c"]


def test_batch_ops_carry_ttl_and_refresh(open_store):
    store = open_store()
    store.batch([PutOp(("b",), "x", {"v": 1}, ttl=LONG_MINUTES)])
    before = _expires_at(store, ("b",), "x")
    time.sleep(0.05)
    got, found = store.batch([GetOp(("b",), "x", refresh_ttl=False), SearchOp(("b",), refresh_ttl=False)])
    assert got is not None and [item.key for item in found] == ["x"]
    assert _expires_at(store, ("b",), "x") == before
    store.batch([GetOp(("b",), "x", refresh_ttl=True)])
    assert _expires_at(store, ("b",), "x") > before


@pytest.mark.slow
def test_async_ttl(open_store):
    store = open_store({"default_ttl": TTL_MINUTES, "refresh_on_read": True})

    async def scenario() -> None:
        await store.aput(("test",), "item1", {"value": "test"})
        assert (await store.aget(("test",), "item1")).value == {"value": "test"}
        await asyncio.sleep(TTL_SECONDS + 0.4)
        assert await store.aget(("test",), "item1") is None
        assert await store.asearch(("test",)) == []

    asyncio.run(scenario())
    assert store.sweep_ttl() == 1


def test_a_memory_given_a_lasting_life_is_not_given_its_ttl_back_by_a_read(open_store):
    store = open_store()
    store.put(("test",), "item1", {"value": "kept"}, ttl=LONG_MINUTES)
    [row] = store.store.list(namespace_to_text(("test",)))
    store.store.update(row["id"], no_expiry=True)  # `memstore update --no-expiry`: the put's meta stays
    assert store.get(("test",), "item1", refresh_ttl=True) is not None
    store.search(("test",), refresh_ttl=True)
    assert _expires_at(store, ("test",), "item1") is None


def test_a_put_without_ttl_of_the_stored_value_ends_a_lifetime_set_by_other_means(open_store):
    store = open_store()
    store.store.add('{"content": "tired"}', namespace=namespace_to_text(("users",)), fact_key="mood", ttl=LONG_MINUTES * 60)
    assert store.get(("users",), "mood").value == {"content": '{"content": "tired"}'}
    store.put(("users",), "mood", {"content": '{"content": "tired"}'}, ttl=None)  # LangGraph: None lives until deleted
    assert _expires_at(store, ("users",), "mood") is None


def test_a_ttl_too_long_for_the_store_is_refused_before_any_op_of_the_batch_is_written(open_store):
    store = open_store()
    with pytest.raises(ValueError, match="ttl must be a positive number of minutes"):
        store.batch([PutOp(("b",), "k1", {"v": 1}, ttl=None), PutOp(("b",), "k2", {"v": 2}, ttl=1e300)])
    assert store.search(("b",)) == []
    store.batch([PutOp(("b",), "k3", {"v": 3}, ttl=2**53 / 60 / 2)])  # long, and within what the store takes
    assert [item.key for item in store.search(("b",))] == ["k3"]


def test_a_put_ends_its_lifetime_exactly_ttl_after_the_put(open_store):
    from memstore.item_values import lifetime_ms as _lifetime_ms

    assert [m for m in range(1, 200_000) if _lifetime_ms(m / 60_000) != m] == []
    assert _lifetime_ms(1.5 / 60_000) == 2  # a part of a millisecond: never shorter
    store = open_store()
    for n, milliseconds in enumerate((119, 2007, 70_003)):
        before = int(time.time() * 1000)
        store.put(("t",), f"k{n}", {"v": n}, ttl=milliseconds / 60_000)
        after = int(time.time() * 1000)
        assert before + milliseconds <= _expires_at(store, ("t",), f"k{n}") <= after + milliseconds
