"""MemstoreStore: LangGraph's BaseStore over memstore, on real SQLite files (the core once more on
PostgreSQL). The first tests port what LangGraph's own tests check on its SQLite store."""

from __future__ import annotations

import asyncio
import doctest
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import TypedDict

import pytest
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchItem,
    SearchOp,
)

from memstore import MemoryStore, ValidationError
from memstore import item_values
from memstore.integrations import langgraph as adapter
from memstore.integrations.langgraph import MemstoreStore, memory_text


@pytest.fixture
def lg(tmp_path):
    with MemstoreStore(tmp_path / "graph.db") as opened:
        yield opened


def keys(items) -> list[str]:
    return [item.key for item in items]


# -- batch ------------------------------------------------------------------------------------


def test_batch_answers_in_the_order_the_ops_came(lg):
    lg.put(("test", "foo"), "key1", {"data": "value1"})
    lg.put(("test", "bar"), "key2", {"data": "value2"})

    results = lg.batch([
        GetOp(("test", "foo"), "key1"),
        PutOp(("test", "bar"), "key2", {"data": "value2"}),
        SearchOp(("test",), filter={"data": "value1"}),
        ListNamespacesOp(limit=10),
        GetOp(("test",), "key3"),
    ])  # fmt: skip
    assert len(results) == 5
    assert isinstance(results[0], Item) and results[0].value == {"data": "value1"}
    assert (results[0].key, results[0].namespace) == ("key1", ("test", "foo"))
    assert results[1] is None
    assert [(item.key, item.value) for item in results[2]] == [("key1", {"data": "value1"})]
    assert results[3] == [("test", "bar"), ("test", "foo")]
    assert results[4] is None

    results = lg.batch([
        SearchOp(("test",), limit=5),
        GetOp(("test", "bar"), "key2"),
        ListNamespacesOp(limit=5),
        PutOp(("test",), "key3", {"data": "value3"}),
        GetOp(("test", "foo"), "key1"),
    ])  # fmt: skip
    assert sorted(keys(results[0])) == ["key1", "key2"]
    assert results[1].value == {"data": "value2"} and results[1].namespace == ("test", "bar")
    assert results[2] == [("test", "bar"), ("test", "foo")]
    assert results[3] is None
    assert results[4].value == {"data": "value1"}
    assert lg.get(("test",), "key3").value == {"data": "value3"}


def test_batch_of_gets_puts_and_a_delete(lg):
    assert lg.batch([
        PutOp(("test",), "key1", {"data": "value1"}),
        PutOp(("test",), "key2", {"data": "value2"}),
        PutOp(("test",), "key3", None),  # deleting what is not there is no error
    ]) == [None, None, None]  # fmt: skip
    results = lg.batch([GetOp(("test",), "key1"), GetOp(("test",), "key2"), GetOp(("test",), "key3")])
    assert [item and item.value for item in results] == [{"data": "value1"}, {"data": "value2"}, None]


def test_batch_of_searches(lg):
    lg.put(("test", "foo"), "key1", {"data": "value1", "tag": "a"})
    lg.put(("test", "bar"), "key2", {"data": "value2", "tag": "a"})
    lg.put(("test", "baz"), "key3", {"data": "value3", "tag": "b"})
    tagged, first_two, foo = lg.batch([
        SearchOp(("test",), filter={"tag": "a"}),
        SearchOp(("test",), limit=2),
        SearchOp(("test", "foo")),
    ])  # fmt: skip
    assert sorted(keys(tagged)) == ["key1", "key2"] and all(isinstance(item, SearchItem) for item in tagged)
    assert len(first_two) == 2
    assert [(item.namespace, item.key) for item in foo] == [(("test", "foo"), "key1")]


def test_batch_of_namespace_listings(lg):
    for namespace, key in [
        (("test", "documents", "public"), "doc1"),
        (("test", "documents", "private"), "doc2"),
        (("test", "images", "public"), "img1"),
        (("prod", "documents", "public"), "doc3"),
    ]:
        lg.put(namespace, key, {"content": f"{key} content"})
    every, shallow, public = lg.batch([
        ListNamespacesOp(),
        ListNamespacesOp(max_depth=2),
        ListNamespacesOp(match_conditions=(MatchCondition("suffix", ("public",)),)),
    ])  # fmt: skip
    assert len(every) == 4
    assert shallow == [("prod", "documents"), ("test", "documents"), ("test", "images")]
    assert public == [("prod", "documents", "public"), ("test", "documents", "public"), ("test", "images", "public")]


def test_reads_see_the_store_before_the_batchs_puts_and_the_last_put_to_a_key_wins(lg):
    lg.put(("docs",), "a", {"v": 1})
    before, _, _, _ = lg.batch([
        GetOp(("docs",), "a"),
        PutOp(("docs",), "a", {"v": 2}),
        PutOp(("docs",), "a", {"v": 3}),
        PutOp(("docs",), "b", {"v": 1}),
    ])  # fmt: skip
    assert before.value == {"v": 1}
    assert lg.get(("docs",), "a").value == {"v": 3}
    assert lg.get(("docs",), "b").value == {"v": 1}


@pytest.mark.parametrize("namespace", [("foo.bar",), ("foo", ""), ("foo", 1), ("foo", "a\x00b")])
@pytest.mark.parametrize("kind", ["get", "put", "delete", "search", "prefix", "suffix"])
def test_an_invalid_namespace_anywhere_in_a_batch_raises_and_writes_nothing(lg, namespace, kind):
    op = {
        "get": GetOp(namespace, "key"),
        "put": PutOp(namespace, "key", {"changed": True}),
        "delete": PutOp(namespace, "key", None),
        "search": SearchOp(namespace),
        "prefix": ListNamespacesOp((MatchCondition("prefix", namespace),)),
        "suffix": ListNamespacesOp((MatchCondition("suffix", namespace),)),
    }[kind]
    lg.put(("foo", "bar"), "key", {"original": True})
    with pytest.raises(InvalidNamespaceError):
        lg.batch([PutOp(("valid",), "key", {}), op])
    assert lg.get(("foo", "bar"), "key").value == {"original": True}
    assert lg.get(("valid",), "key") is None


def test_the_public_methods_check_namespaces_too(lg):
    for call in (
        lambda: lg.get(("foo.bar",), "key"),
        lambda: lg.delete(("foo.bar",), "key"),
        lambda: lg.search(("foo.bar",)),
        lambda: lg.put((), "key", {"v": 1}),
        lambda: lg.list_namespaces(prefix=("a.b",)),
    ):
        with pytest.raises(InvalidNamespaceError):
            call()


@pytest.mark.parametrize(
    "value, problem",
    [
        ({"when": datetime(2024, 1, 1)}, "is not strict JSON: Object of type datetime is not JSON serializable"),
        ({"score": float("nan")}, "is not strict JSON: Out of range float values are not JSON compliant"),
        ({"scores": {1: "one"}}, "field 'value.scores': has the non-string key 1; JSON keys are strings"),
        (["not", "a", "mapping"], "must be a mapping (a JSON object) or None, got list"),
        ({"content": "a\x00b"}, "field 'text': must not contain a NUL character"),
    ],
)
def test_a_value_json_cannot_carry_is_refused_before_anything_is_written(lg, value, problem):
    with pytest.raises(ValidationError) as raised:
        lg.batch([PutOp(("docs",), "first", {"v": 1}), PutOp(("docs",), "bad", value)])
    assert str(raised.value).startswith("put ('docs',) key 'bad': ")
    assert problem in str(raised.value)
    assert lg.search(("docs",)) == []


# -- get, put, delete ---------------------------------------------------------------------------


def test_get_put_update_and_delete(lg):
    namespace = ("test", "documents")
    lg.put(namespace, "doc1", {"title": "Test Document", "content": "Hello, World!"})
    item = lg.get(namespace, "doc1")
    assert (item.namespace, item.key, item.value) == (namespace, "doc1", {"title": "Test Document", "content": "Hello, World!"})

    lg.put(namespace, "doc1", {"title": "Updated Document", "content": "Hello, Updated!"})
    updated = lg.get(namespace, "doc1")
    assert updated.value == {"title": "Updated Document", "content": "Hello, Updated!"}
    assert updated.created_at == item.created_at and updated.updated_at >= item.updated_at

    assert lg.get(("test", "other_documents"), "doc1") is None
    lg.delete(namespace, "doc1")
    assert lg.get(namespace, "doc1") is None
    assert lg.search(("test",)) == [] and lg.list_namespaces() == []


def test_item_times_are_the_memorys_times_in_utc(lg):
    lg.put(("docs",), "a", {"content": "Deploys on Fridays"})
    item = lg.get(("docs",), "a")
    row = lg.store.find_fact("docs", "a")
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    assert item.created_at == epoch + timedelta(milliseconds=row["created_at"])
    assert item.updated_at == epoch + timedelta(milliseconds=row["updated_at"])
    assert item.created_at.tzinfo is UTC


def test_a_put_to_an_existing_key_is_an_update_the_old_version_archived_as_superseded(lg):
    lg.put(("users", "u1"), "tz", {"content": "User is in Berlin."})
    old = lg.store.find_fact("users.u1", "tz")
    lg.put(("users", "u1"), "tz", {"content": "User moved to Lisbon."})
    new = lg.store.find_fact("users.u1", "tz")

    assert new["id"] != old["id"] and new["text"] == "User moved to Lisbon."
    assert new["created_at"] == old["created_at"]
    versions = lg.store.history(new["id"])
    assert [(v["id"], v["state"], v["reason"], v["superseded_by"]) for v in versions] == [
        (old["id"], "archived", "superseded", new["id"]),
        (new["id"], "live", None, None),
    ]
    # Nothing a graph overwrites is lost: restore undoes the update.
    lg.store.restore(versions[0]["run_id"])
    assert lg.get(("users", "u1"), "tz").value == {"content": "User is in Berlin."}


def test_putting_the_value_already_stored_writes_no_new_version(lg):
    value = {"content": "User prefers dark mode.", "tags": ["ui", "prefs"], "weight": 0.5}
    lg.put(("users", "u1"), "theme", value)
    first = lg.store.find_fact("users.u1", "theme")
    lg.put(("users", "u1"), "theme", dict(reversed(list(value.items()))))  # key order is not a change
    lg.put(("users", "u1"), "theme", {**value, "tags": ("ui", "prefs")})  # a tuple is a JSON list
    assert lg.store.find_fact("users.u1", "theme") == first
    assert lg.store.count(archived=True) == 0 and lg.store.runs() == []


def test_a_change_only_json_sees_is_a_new_version(lg):
    lg.put(("docs",), "a", {"content": "same text", "n": 1})
    lg.put(("docs",), "a", {"content": "same text", "n": 1.0})
    assert repr(lg.get(("docs",), "a").value["n"]) == "1.0"
    lg.put(("docs",), "a", {"content": "same text", "n": True})
    assert lg.get(("docs",), "a").value["n"] is True
    assert [v["state"] for v in lg.store.history(lg.store.find_fact("docs", "a")["id"])] == ["archived"] * 2 + ["live"]


def test_threads_putting_one_new_key_make_one_memory(lg):
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda n: lg.put(("docs",), "shared", {"content": f"version {n}"}), range(8)))
    (live,) = lg.store.list("docs")
    assert live["fact_key"] == "shared"
    assert len(lg.store.history(live["id"])) == 8  # the first put added it, seven updated it


def test_two_stores_on_one_database_putting_the_same_keys_make_one_memory_per_key(store_url):
    """Two MemstoreStore objects on one store (two workers of one graph): the read and the write of a
    put are one transaction, so racing puts to a key neither duplicate it nor fail on each other."""
    import threading

    workers = [MemstoreStore(store_url), MemstoreStore(store_url)]
    start = threading.Barrier(8)

    def put_all(n: int) -> None:
        start.wait()
        for key in ("new1", "new2", "new3"):
            workers[n % 2].put(("u1",), key, {"content": f"{key} from writer {n}"})

    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(put_all, range(8)))  # re-raises any put that failed
        reader = workers[0]
        live = reader.store.list("u1")
        assert sorted(row["fact_key"] for row in live) == ["new1", "new2", "new3"]
        assert all(len(reader.store.history(row["id"])) == 8 for row in live)  # 1 add, 7 updates each
        workers[1].delete(("u1",), "new1")
        assert reader.get(("u1",), "new1") is None
    finally:
        for worker in workers:
            worker.close()


def test_delete_and_a_put_of_none_are_forgets_that_restore_undoes(lg):
    lg.put(("users", "u1"), "a", {"content": "Deploys on Fridays"})
    lg.put(("users", "u1"), "b", {"content": "User prefers dark mode."})
    memory_id = lg.store.find_fact("users.u1", "a")["id"]

    lg.delete(("users", "u1"), "a")
    lg.batch([PutOp(("users", "u1"), "b", None)])
    assert lg.get(("users", "u1"), "a") is None and lg.get(("users", "u1"), "b") is None
    archived = lg.store.get(memory_id)
    assert archived["reason"] == "forgotten"
    assert [run["kind"] for run in lg.store.runs()] == ["forget", "forget"]

    for run in lg.store.runs():
        lg.store.restore(run["id"])
    assert lg.get(("users", "u1"), "a").value == {"content": "Deploys on Fridays"}
    assert lg.get(("users", "u1"), "b").value == {"content": "User prefers dark mode."}


def test_values_round_trip_exactly(lg):
    value = {
        "content": "Ünïcödé 🧠 naïve café, 中文, עברית",
        "nested": {"deeper": {"list": [1, 2.5, -0.0, 1e-7, 1.7976931348623157e308, 2**63 + 1]}},
        "flags": [True, False, None],
        "empty": {"list": [], "object": {}, "string": ""},
        "float_that_looks_int": 3.0,
        "quote": 'He said "hi" \\ then left\n',
    }
    lg.put(("docs",), "everything", value)
    stored = lg.get(("docs",), "everything").value
    assert stored == value
    assert repr(stored) == repr(value)  # 3.0 stays a float, True stays a bool, key order is kept
    (found,) = lg.search(("docs",))
    assert repr(found.value) == repr(value)


def test_the_memory_text_comes_from_the_value(lg):
    cases = [
        ({"content": "User likes tea."}, "User likes tea."),  # LangMem's manage_memory
        ({"kind": "Preference", "content": {"what": "tea", "likes": True, "note": "非常"}},
         '{"likes":true,"note":"非常","what":"tea"}'),  # LangMem's structured memories
        ({"text": "Deploys on Fridays", "source": "standup"}, "Deploys on Fridays"),
        ({"content": 42, "text": "the answer"}, "the answer"),
        ({"theme": "dark", "size": 12}, '{"size":12,"theme":"dark"}'),
    ]  # fmt: skip
    for index, (value, text) in enumerate(cases):
        assert memory_text(value) == text
        lg.put(("docs",), f"k{index}", value)
        assert lg.store.find_fact("docs", f"k{index}")["text"] == text
        assert lg.get(("docs",), f"k{index}").value == value


def test_memories_written_by_other_means_appear_with_their_id_as_key(lg):
    lg.store.add("Deploys on Fridays", id="m1", namespace="team.ops")
    lg.store.add("Standups are at 9", id="m2", namespace="team.ops", fact_key="standup")
    lg.store.add("Deploys on Fridays", id="m3", namespace="default")

    assert lg.list_namespaces() == [("default",), ("team", "ops")]
    assert sorted(keys(lg.search(("team",)))) == ["m1", "standup"]
    assert lg.get(("team", "ops"), "m1").value == {"content": "Deploys on Fridays"}
    assert lg.get(("team", "ops"), "m2") is None  # it answers to its fact_key
    assert lg.get(("team", "ops"), "m3") is None  # another namespace's memory

    # A put to such a key updates that memory, which takes the key as its fact_key.
    lg.put(("team", "ops"), "m1", {"content": "Deploys on Thursdays"})
    assert lg.get(("team", "ops"), "m1").value == {"content": "Deploys on Thursdays"}
    assert lg.store.get("m1")["reason"] == "superseded"
    assert lg.store.find_fact("team.ops", "m1")["text"] == "Deploys on Thursdays"
    lg.delete(("team", "ops"), "standup")
    assert lg.store.get("m2")["reason"] == "forgotten"


# -- search ---------------------------------------------------------------------------------


def test_search_by_namespace_prefix_with_filters_and_pages(lg):
    base = "search"
    for namespace, key, value in [
        ((base, "documents", "user1"), "d1", {"title": "Doc 1", "author": "John Doe", "tags": ["important"]}),
        ((base, "documents", "user2"), "d2", {"title": "Doc 2", "author": "Jane Smith", "tags": ["draft"]}),
        ((base, "reports", "department1"), "r1", {"title": "Report A", "author": "John Doe", "tags": ["final"]}),
        ((base, "reports", "department2"), "r2", {"title": "Report B", "author": "Alice Johnson", "tags": ["draft"]}),
    ]:
        lg.put(namespace, key, value)

    assert keys(lg.search((base, "documents"))) == ["d1", "d2"]  # namespace, then rank order
    assert keys(lg.search((base, "reports"))) == ["r1", "r2"]
    first_page, second_page = lg.search((base,), limit=2), lg.search((base,), limit=2, offset=2)
    assert keys(first_page) + keys(second_page) == keys(lg.search((base,))) == ["d1", "d2", "r1", "r2"]
    assert lg.search((base,), offset=3) == lg.search((base,))[3:]
    assert keys(lg.search((base,), filter={"author": "John Doe"})) == ["d1", "r1"]
    assert keys(lg.search((base,), filter={"tags": ["draft"]})) == ["d2", "r2"]
    assert keys(lg.search((base,), filter={"author": "John Doe", "tags": ["final"]})) == ["r1"]
    assert all(item.score is None for item in lg.search((base,)))


def test_search_prefix_stops_at_label_boundaries_and_the_empty_prefix_is_everything(lg):
    for namespace in [("foo",), ("foo", "child"), ("foo", "child", "deep"), ("foobar",), ("foobar", "baz"), ("foo2",)]:
        lg.put(namespace, "k", {"v": 1})

    def namespaces(prefix):
        return {item.namespace for item in lg.search(prefix, limit=100)}

    assert namespaces(("foo",)) == {("foo",), ("foo", "child"), ("foo", "child", "deep")}
    assert namespaces(("foobar",)) == {("foobar",), ("foobar", "baz")}
    assert namespaces(("fo",)) == set()
    assert namespaces(("user_%",)) == set()
    assert len(namespaces(())) == 6


def test_search_prefix_tells_upper_from_lower_case_on_both_backends(store_url):
    # SQLite's LIKE ignores ASCII case: a prefix "bob" once took user "Bob"'s items too.
    with MemstoreStore(store_url) as lg:
        for namespace, key in [(("Bob", "memories"), "m1"), (("bob", "memories"), "m2"), (("bob",), "m3"), (("BOB",), "m4"), (("bob/",), "m5")]:
            lg.put(namespace, key, {"content": key})
        assert sorted((item.namespace, item.key) for item in lg.search(("bob",), limit=100)) == [(("bob",), "m3"), (("bob", "memories"), "m2")]
        assert [item.key for item in lg.search(("Bob",), limit=100)] == ["m1"]


def test_filter_operators(lg):
    for key, value in [
        ("a", {"n": 1, "color": "red", "active": True, "meta": {"owner": "ann", "level": 2}}),
        ("b", {"n": 2.5, "color": "blue", "active": False, "meta": {"owner": "bob", "level": 5}}),
        ("c", {"n": 4, "color": "green", "active": 1, "note": None}),
        ("d", {"color": "red", "access-level": "public"}),
    ]:
        lg.put(("items",), key, value)

    def found(filter):
        return sorted(keys(lg.search(("items",), filter=filter)))

    assert found({"n": {"$gt": 1}}) == ["b", "c"]
    assert found({"n": {"$gte": 1, "$lt": 4}}) == ["a", "b"]
    assert found({"n": {"$lte": 2.5}}) == ["a", "b"]
    assert found({"n": {"$eq": 4.0}}) == ["c"]
    assert found({"n": 1.0}) == ["a"]
    assert found({"color": {"$ne": "red"}}) == ["b", "c"]
    assert found({"n": {"$ne": 1}}) == ["b", "c", "d"]  # a missing field is not equal to 1
    assert found({"active": True}) == ["a"]  # true is not the number 1
    assert found({"active": 1}) == ["c"]
    assert found({"note": None}) == ["a", "b", "c", "d"]  # null or missing, as in LangGraph's stores
    assert found({"meta": {"owner": "bob"}}) == ["b"]  # a nested filter
    assert found({"meta.level": {"$gt": 3}}) == ["b"]  # a dotted path
    assert found({"access-level": "public"}) == ["d"]
    assert found({"color": "red", "n": {"$gt": 0}}) == ["a"]
    assert found({"color": "public' OR '1'='1"}) == []
    with pytest.raises(ValueError, match=r"Unsupported operator: \$in"):
        lg.search(("items",), filter={"n": {"$in": [1]}})


def test_numbers_are_compared_as_numbers(lg):
    # LangGraph's PostgreSQL store compares them as text, where "9" > "10".
    for key, price in [("nine", 9), ("ten", 10), ("hundred", 100), ("tiny", 0.5), ("negative", -10), ("huge", 10**20)]:
        lg.put(("items",), key, {"price": price})
    lg.put(("items",), "text", {"price": "9"})

    def found(filter):
        return sorted(keys(lg.search(("items",), filter=filter)))

    assert found({"price": {"$gt": 9}}) == ["huge", "hundred", "ten"]
    assert found({"price": {"$lt": 10}}) == ["negative", "nine", "tiny"]
    assert found({"price": {"$lt": float("inf")}}) == ["huge", "hundred", "negative", "nine", "ten", "tiny"]
    assert found({"price": {"$gt": 10**19}}) == ["huge"]
    assert found({"price": {"$eq": float("nan")}}) == []
    # A string compares with strings only.
    assert found({"price": {"$gte": "8"}}) == ["text"]
    assert found({"price": "9"}) == ["text"] and found({"price": 9}) == ["nine"]


def test_search_with_a_query_is_recall_merged_across_namespaces(lg):
    lg.put(("users", "u1"), "theme", {"content": "User prefers dark mode in the editor", "kind": "ui"})
    lg.put(("users", "u1"), "deploy", {"content": "Deploys happen on Fridays", "kind": "ops"})
    lg.put(("users", "u2"), "theme", {"content": "Dark mode everywhere, dark terminal too", "kind": "ui"})
    lg.put(("users", "u2"), "lunch", {"content": "Lunch at noon", "kind": "life"})
    lg.put(("teams",), "theme", {"content": "The team uses dark mode", "kind": "ui"})

    found = lg.search(("users",), query="dark mode")
    assert {(item.namespace, item.key) for item in found} == {(("users", "u1"), "theme"), (("users", "u2"), "theme")}
    # Each score is recall's, and the merge keeps recall's order: higher first, ties by id.
    expected = sorted(
        (row for name in ("users.u1", "users.u2") for row in lg.store.recall("dark mode", 5, name, touch=False)),
        key=lambda row: (-row["score"], row["id"]),
    )
    assert [(item.key, item.score) for item in found] == [(row["fact_key"], row["score"]) for row in expected]
    assert found[0].score >= found[1].score

    assert keys(lg.search(("users",), query="dark mode", limit=1)) == keys(found)[:1]
    assert keys(lg.search(("users",), query="dark mode", offset=1)) == keys(found)[1:]
    assert len(lg.search((), query="dark mode")) == 3
    assert keys(lg.search((), query="dark mode", filter={"kind": "ui"}, limit=10)) == keys(lg.search((), query="dark mode"))
    assert lg.search(("users",), query="dark mode", filter={"kind": "ops"}) == []
    assert lg.search(("users",), query="zebra") == []
    # Searching is not recalling: recall counts stay as they were.
    assert all(row["recall_count"] == 0 for row in lg.store.iter_rows(None))


def test_a_filtered_query_fetches_more_until_the_page_is_complete(lg):
    for index in range(40):
        lg.put(("notes",), f"n{index:02}", {"content": f"tea note {index}" + " tea" * (index % 4), "keep": index % 7 == 0})
    lg.put(("other",), "x", {"content": "tea tea tea", "keep": True})
    everything = lg.search(("notes",), query="tea", limit=100)
    assert len(everything) == 40
    wanted = [item.key for item in everything if item.value["keep"]]
    assert keys(lg.search(("notes",), query="tea", filter={"keep": True}, limit=3)) == wanted[:3]
    assert keys(lg.search(("notes",), query="tea", filter={"keep": True}, limit=10)) == wanted
    assert keys(lg.search(("notes",), query="tea", filter={"keep": True}, offset=2, limit=2)) == wanted[2:4]


# -- namespaces -------------------------------------------------------------------------------


def test_list_namespaces_by_prefix_suffix_wildcard_depth_and_page(lg):
    p = "pref"
    namespaces = [
        (p, "test", "documents", "public", p),
        (p, "test", "documents", "private", p),
        (p, "test", "images", "public", p),
        (p, "test", "images", "private", p),
        (p, "prod", "documents", "public", p),
        (p, "prod", "documents", "some", "nesting", "public", p),
        (p, "prod", "documents", "private", p),
    ]
    for namespace in namespaces:
        lg.put(namespace, "dummy", {"content": "dummy"})

    assert len(lg.list_namespaces(prefix=(p, "test"))) == 4
    assert lg.list_namespaces(prefix=(p, "test", "documents")) == [namespaces[1], namespaces[0]]
    assert len(lg.list_namespaces(suffix=("public", p))) == 4
    assert lg.list_namespaces(prefix=(p, "test"), suffix=("public", p)) == [namespaces[0], namespaces[2]]
    assert len(lg.list_namespaces(prefix=(p, "*", "documents"))) == 5
    assert len(lg.list_namespaces(suffix=("*", "public", p))) == 4
    assert lg.list_namespaces(suffix=("some", "*", "public", p)) == [namespaces[5]]
    assert lg.list_namespaces(max_depth=3) == [(p, "prod", "documents"), (p, "test", "documents"), (p, "test", "images")]
    assert len(lg.list_namespaces(max_depth=4, prefix=(p, "*", "documents"))) == 5
    assert lg.list_namespaces(prefix=(p,)) == sorted(namespaces)
    assert lg.list_namespaces(prefix=(p,), limit=3) == sorted(namespaces)[:3]
    assert lg.list_namespaces(prefix=(p,), offset=3) == sorted(namespaces)[3:]
    assert lg.list_namespaces(prefix=(p,), limit=2, offset=5) == sorted(namespaces)[5:7]


def test_list_namespaces_matches_whole_labels(lg):
    for namespace in [
        ("foo",), ("foo", "child"), ("foobar",), ("foobar", "baz"),
        ("uid", "users", "alice"), ("uid", "users", "malice"), ("uid", "a", "b", "alice"), ("users", "alice\n"),
    ]:  # fmt: skip
        lg.put(namespace, "k", {"v": 1})
    assert lg.list_namespaces(prefix=["foo"]) == [("foo",), ("foo", "child")]
    assert lg.list_namespaces(suffix=["alice"]) == [("uid", "a", "b", "alice"), ("uid", "users", "alice")]
    assert lg.list_namespaces(prefix=["uid", "*", "alice"]) == [("uid", "users", "alice")]
    assert len(lg.list_namespaces(prefix=["uid"])) == 3


def test_a_namespace_leaves_the_listing_when_its_last_item_is_deleted(lg):
    lg.put(("a", "b"), "k", {"v": 1})
    lg.delete(("a", "b"), "k")
    assert lg.list_namespaces() == []


# -- async, opening --------------------------------------------------------------------------


def test_async_methods(lg):
    async def scenario():
        await lg.aput(("docs",), "a", {"content": "Deploys on Fridays", "n": 1})
        await lg.aput(("docs",), "b", {"content": "Lunch at noon", "n": 2})
        got, found, listed = await lg.abatch([
            GetOp(("docs",), "a"), SearchOp(("docs",), filter={"n": {"$gt": 1}}), ListNamespacesOp(),
        ])  # fmt: skip
        await lg.adelete(("docs",), "a")
        return got, found, listed, await lg.aget(("docs",), "a"), await lg.asearch(("docs",), query="lunch")

    got, found, listed, deleted, recalled = asyncio.run(scenario())
    assert got.value == {"content": "Deploys on Fridays", "n": 1}
    assert keys(found) == ["b"] and listed == [("docs",)]
    assert deleted is None and keys(recalled) == ["b"]


def test_from_conn_string_opens_a_store_for_a_with_block(tmp_path):
    path = tmp_path / "graph.db"
    with MemstoreStore.from_conn_string(str(path)) as store:
        store.setup()  # code written for SqliteStore calls it; nothing to do
        store.put(("docs",), "a", {"content": "Deploys on Fridays"})
    with MemoryStore(path) as memories:
        assert [row["fact_key"] for row in memories.list("docs")] == ["a"]
        # An open MemoryStore can be wrapped too; closing the wrapper leaves it open.
        MemstoreStore(memories).close()
        assert MemstoreStore(memories).get(("docs",), "a").value == {"content": "Deploys on Fridays"}


# -- a real graph, then the job ------------------------------------------------------------------


class TurnState(TypedDict, total=False):
    user: str
    facts: list[str]
    recalled: list[str]


def test_a_compiled_graph_remembers_through_its_store_and_the_job_deduplicates_what_it_wrote(tmp_path):
    from langgraph.graph import START, StateGraph
    from langgraph.runtime import Runtime

    def remember(state: TurnState, runtime: Runtime) -> TurnState:
        namespace = ("memories", state["user"])
        for index, fact in enumerate(state["facts"]):
            runtime.store.put(namespace, f"fact-{index}", {"content": fact})
        return {"recalled": [item.value["content"] for item in runtime.store.search(namespace, query="dark mode")]}

    path = tmp_path / "agent.db"
    facts = ["User prefers dark mode.", "Deploys on Fridays", "user prefers DARK mode"]
    with MemstoreStore(path) as store:
        graph = StateGraph(TurnState).add_node(remember).add_edge(START, "remember").compile(store=store)
        result = graph.invoke({"user": "u1", "facts": facts})
        assert sorted(result["recalled"]) == ["User prefers dark mode.", "user prefers DARK mode"]
        # The next turn writes the same facts again: nothing changes.
        graph.invoke({"user": "u1", "facts": facts})
        assert store.store.count("memories.u1") == 3 and store.store.runs() == []

    with MemoryStore(path) as memories:
        report = memories.consolidate(10, namespace="memories.u1")
        assert (report.live_before, report.kept_count, report.duplicates, report.evicted) == (3, 2, 1, 0)
        (archived,) = report.archived
        survivor = memories.get(archived.superseded_by)
        assert {memories.get(archived.id)["fact_key"], survivor["fact_key"]} == {"fact-0", "fact-2"}

    with MemstoreStore(path) as store:
        gone = store.store.get(archived.id)["fact_key"]
        assert store.get(("memories", "u1"), gone) is None
        assert sorted(keys(store.search(("memories", "u1")))) == sorted({"fact-1", survivor["fact_key"]})
        store.store.restore(report.run_id)
        assert store.get(("memories", "u1"), gone).value == {"content": facts[int(gone[-1])]}


def test_docstring_examples():
    failed, attempted = doctest.testmod(item_values)
    assert failed == 0 and attempted > 0


# -- the optional extra -------------------------------------------------------------------------


def run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=120)


def test_importing_memstore_does_not_import_langgraph():
    done = run_python(
        "import sys, memstore, memstore.store, memstore.integrations\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('langgraph', 'langchain_core')))"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_without_langgraph_the_import_error_says_what_to_install():
    done = run_python(
        "import sys\nsys.modules['langgraph'] = None\n"
        "try:\n    import memstore.integrations.langgraph\nexcept ImportError as exc:\n    print(exc)"
    )
    assert done.returncode == 0, done.stderr
    assert "pip install 'memstore-agents[langgraph]'" in done.stdout


# -- both backends --------------------------------------------------------------------------------


def test_core_behaviours_on_each_backend(store_url):
    with MemstoreStore(store_url) as lg:
        value = {"content": "User prefers dark mode.", "n": 10, "x": 0.1, "nested": {"ok": [True, None, "é"]}}
        lg.batch([PutOp(("users", "u1"), "theme", value), PutOp(("users", "u2"), "theme", {"content": "Lunch", "n": 9})])
        assert repr(lg.get(("users", "u1"), "theme").value) == repr(value)
        assert keys(lg.search(("users",), filter={"n": {"$gt": 9}})) == ["theme"]
        assert [item.namespace for item in lg.search(("users",), filter={"n": {"$lt": 10}})] == [("users", "u2")]
        (found,) = lg.search(("users",), query="dark mode")
        assert found.namespace == ("users", "u1") and found.score > 0
        assert lg.list_namespaces(prefix=("users",), max_depth=1) == [("users",)]
        assert lg.get(("users", "u1"), "no\x00such key") is None

        lg.put(("users", "u1"), "theme", {"content": "User prefers light mode."})
        lg.put(("users", "u1"), "theme", {"content": "User prefers light mode."})
        live = lg.store.find_fact("users.u1", "theme")
        assert [v["state"] for v in lg.store.history(live["id"])] == ["archived", "live"]

        lg.delete(("users", "u1"), "theme")
        assert lg.get(("users", "u1"), "theme") is None
        lg.store.restore(lg.store.runs()[0]["id"])
        assert lg.get(("users", "u1"), "theme").value == {"content": "User prefers light mode."}


def test_a_key_held_as_an_id_in_another_namespace_reads_and_writes_as_a_key_held_nowhere(store):
    """A graph's namespace cannot tell whether another namespace holds a memory whose id is a key."""
    store.add("The other tenant's secret.", id="bsecret", namespace="b")
    store.add("The other tenant's old secret.", id="barchived", namespace="b")
    store.forget(["barchived"])
    lg = MemstoreStore(store)
    assert [lg.get(("a",), key) for key in ("bsecret", "barchived", "nowhere")] == [None, None, None]
    assert lg.search(("a",)) == [] and lg.list_namespaces() == [("b",)]
    for key in ("bsecret", "barchived", "nowhere"):
        lg.put(("a",), key, {"text": f"mine under {key}"})
    assert {key: lg.get(("a",), key).value["text"] for key in ("bsecret", "barchived", "nowhere")} == {
        key: f"mine under {key}" for key in ("bsecret", "barchived", "nowhere")
    }
    lg.delete(("a",), "bsecret")
    assert store.get("bsecret")["text"] == "The other tenant's secret." and "archived_at" not in store.get("bsecret")


def test_a_batch_of_puts_is_one_transaction_and_each_change_its_own_run(lg):
    from langgraph.store.base import PutOp
    from sqlalchemy import event

    lg.batch([PutOp(("users", "u1"), f"k{i}", {"content": f"fact {i}"}) for i in range(20)])
    commits = []
    event.listen(lg.store.engine, "commit", lambda conn: commits.append(1))
    ops = [PutOp(("users", "u1"), f"k{i}", {"content": f"fact {i}, revised"}) for i in range(3)]
    ops += [PutOp(("users", "u1"), "k3", None), PutOp(("users", "u1"), "new", {"content": "a new fact"})]
    lg.batch(ops)
    assert len(commits) == 1
    runs = lg.store.runs()[:4]
    assert sorted(run["kind"] for run in runs) == ["forget", "update", "update", "update"]
    lg.store.restore(next(run["id"] for run in runs if run["kind"] == "forget"))
    assert lg.get(("users", "u1"), "k3").value == {"content": "fact 3"}
    assert lg.get(("users", "u1"), "k0").value == {"content": "fact 0, revised"}
