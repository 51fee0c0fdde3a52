"""Writes that wait, and a sweeper that meets an error (issue 29, items 4 to 6).

- A write that queued for the store is dated when it is written: `list --as-of T` at a moment T
  inside the wait does not show it (every reader at T missed it).
- A LangGraph put's lifetime starts when it is written: a put that queued past its TTL is not saved
  already expired, new key or old.
- The TTL sweeper logs a failed sweep and carries on: an item that expires after the failure is
  still swept.

The lock is held by a plain connection of the driver (SQLite: BEGIN IMMEDIATE, as another program
sharing the file would; PostgreSQL: the put's own key lock), never by a stand-in.
"""

from __future__ import annotations

import io
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from langgraph.store.base import TTLConfig
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from memstore import MemoryStore
from memstore.integrations.langgraph import MemstoreStore, namespace_to_text
from memstore.records import now_ms

# How long the lock is held around the moment checked: a write's own time is far below this.
WAIT_S = 0.6
NAMESPACE = ("users", "u1")


@contextmanager
def sqlite_write_lock(path) -> Iterator[None]:
    """Hold SQLite's write lock from another connection, as a second program would."""
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        yield
        holder.execute("COMMIT")
    finally:
        holder.close()


def _in_thread(write: Callable[[], object]) -> tuple[threading.Thread, list[BaseException]]:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            write()
        except BaseException as exc:  # reported by the test, not lost in the thread
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, errors


def _queued(lock: Callable[[], object], write: Callable[[], object]) -> int:
    """Start `write` while `lock` is held; return a moment inside its wait."""
    with lock():
        thread, errors = _in_thread(write)
        time.sleep(WAIT_S)
        moment = now_ms()
        time.sleep(WAIT_S)
    thread.join(60)
    assert not thread.is_alive() and not errors, errors
    return moment


WRITES = {
    "add": lambda store, lg: store.add("queued add", id="q1"),
    "remember": lambda store, lg: store.remember("queued remember", id="q1"),
    "import": lambda store, lg: store.import_from("memstore", io.StringIO(json.dumps({"id": "q1", "text": "queued import"}) + "\n"), name="in.jsonl"),
    "add_many": lambda store, lg: store.add_many([{"id": "q1", "text": "queued add_many"}]),
    "put": lambda store, lg: lg.put(NAMESPACE, "q1", {"text": "queued put"}),
}


@pytest.mark.parametrize("kind", sorted(WRITES))
def test_a_write_that_queued_is_not_live_as_of_a_moment_inside_its_wait(kind, sqlite_store, db_path):
    sqlite_store.add("already here", id="seed", namespace="users.u1")
    lg = MemstoreStore(sqlite_store)
    moment = _queued(lambda: sqlite_write_lock(db_path), lambda: WRITES[kind](sqlite_store, lg))
    [written] = [row for row in sqlite_store.list(None) if row["id"] != "seed"]
    assert written["stored_at"] > moment and written["created_at"] > moment and written["timestamp"] > moment
    assert [row["id"] for row in sqlite_store.list(None, as_of=moment)] == ["seed"]
    assert {row["id"] for row in sqlite_store.list(None, as_of=now_ms())} == {"seed", written["id"]}


def test_a_put_over_a_key_that_queued_archives_the_old_version_when_it_is_written(sqlite_store, db_path):
    lg = MemstoreStore(sqlite_store)
    lg.put(NAMESPACE, "k", {"text": "first"})
    moment = _queued(lambda: sqlite_write_lock(db_path), lambda: lg.put(NAMESPACE, "k", {"text": "second"}))
    [was_live] = sqlite_store.list("users.u1", as_of=moment)
    assert was_live["meta"]["value"] == {"text": "first"}
    [archived] = sqlite_store.list("users.u1", archived=True)
    assert archived["archived_at"] > moment


@contextmanager
def postgres_key_lock(store: MemoryStore, namespace: str, key: str) -> Iterator[None]:
    """Hold the lock a put takes on its key (runs.lock_key), from another session."""
    with store.engine.connect() as conn:
        name = f"{namespace}\x1f{key}"
        conn.execute(text("SELECT pg_advisory_lock(hashtextextended(:name, 1))"), {"name": name})
        conn.commit()
        try:
            yield
        finally:
            conn.execute(text("SELECT pg_advisory_unlock(hashtextextended(:name, 1))"), {"name": name})
            conn.commit()


@pytest.mark.parametrize("over_a_stored_value", [False, True], ids=["new key", "stored key"])
def test_a_put_that_queued_past_its_ttl_is_not_saved_expired(over_a_stored_value, store, store_url, db_path):
    lg = MemstoreStore(store)
    if over_a_stored_value:
        lg.put(NAMESPACE, "k", {"text": "lasting"})
    ttl_seconds = WAIT_S  # shorter than the wait: dated before it, the put would be born expired
    if store.is_sqlite:
        lock = lambda: sqlite_write_lock(db_path)  # noqa: E731
    else:
        lock = lambda: postgres_key_lock(store, namespace_to_text(NAMESPACE), "k")  # noqa: E731
    _queued(lock, lambda: lg.put(NAMESPACE, "k", {"text": "short-lived"}, ttl=ttl_seconds / 60))
    item = lg.get(NAMESPACE, "k", refresh_ttl=False)
    assert item is not None and item.value == {"text": "short-lived"}
    [row] = store.list("users.u1")
    assert row["expires_at"] - row["stored_at"] == pytest.approx(ttl_seconds * 1000, abs=1)


@contextmanager
def failing_sweeps(store: MemoryStore) -> Iterator[None]:
    """Make every archive write fail with a real database error until the block ends."""
    with store.engine.begin() as conn:
        if store.is_sqlite:
            conn.execute(text("CREATE TRIGGER no_archive BEFORE INSERT ON memory_archive BEGIN SELECT RAISE(ABORT, 'no room'); END"))
        else:
            conn.execute(text("CREATE FUNCTION no_room() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no room'; END $$"))
            conn.execute(text("CREATE TRIGGER no_archive BEFORE INSERT ON memory_archive FOR EACH ROW EXECUTE FUNCTION no_room()"))
    try:
        yield
    finally:
        with store.engine.begin() as conn:
            conn.execute(text("DROP TRIGGER no_archive" + ("" if store.is_sqlite else " ON memory_archive")))
            if not store.is_sqlite:
                conn.execute(text("DROP FUNCTION no_room()"))


def _wait_until(condition: Callable[[], bool], seconds: float = 60) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def test_the_ttl_sweeper_carries_on_after_a_failed_sweep(store, caplog):
    lg = MemstoreStore(store, ttl=TTLConfig(default_ttl=0.3 / 60, sweep_interval_minutes=0.5 / 60))
    lg.put(NAMESPACE, "before", {"text": "expires while sweeps fail"})
    caplog.set_level(logging.ERROR, logger="memstore.integrations.langgraph")
    with failing_sweeps(store):
        done = lg.start_ttl_sweeper()
        try:
            time.sleep(2.0)  # several sweeps, each failing
            assert not done.done()
            assert "TTL sweep failed" in caplog.text
        except BaseException:
            lg.stop_ttl_sweeper(10)
            raise
    try:
        lg.put(NAMESPACE, "after", {"text": "expires once sweeps work again"})
        swept = lambda: {row["fact_key"] for row in store.list("users.u1", archived=True)} == {"before", "after"}  # noqa: E731
        assert _wait_until(swept), store.list("users.u1", archived=True)
        assert not done.done()
    finally:
        assert lg.stop_ttl_sweeper(10)
    assert done.result(0) is None


def test_the_ttl_sweeper_carries_on_after_its_connection_is_killed(pg_url, caplog):
    lg = MemstoreStore(pg_url, ttl=TTLConfig(default_ttl=2.0 / 60, sweep_interval_minutes=0.5 / 60))
    caplog.set_level(logging.ERROR, logger="memstore.integrations.langgraph")
    try:
        lg.put(NAMESPACE, "later", {"text": "expires after the kill"})
        done = lg.start_ttl_sweeper()
        time.sleep(0.2)  # the first sweep has run and left its connection in the pool
        killer = create_engine(pg_url, poolclass=NullPool)  # not from the store's pool: that is what dies
        with killer.connect() as conn:
            killed = conn.execute(text(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )).scalar_one()  # fmt: skip
        killer.dispose()
        assert killed >= 1
        assert _wait_until(lambda: "TTL sweep failed" in caplog.text)
        swept = lambda: [row["fact_key"] for row in lg.store.list("users.u1", archived=True)] == ["later"]  # noqa: E731
        assert _wait_until(swept)
        assert not done.done()
    finally:
        lg.stop_ttl_sweeper(10)
        lg.close()


def test_a_vector_written_while_its_memory_is_being_archived_stays_out_of_the_pgvector_index(pg_url, model_dir):
    """The race the probe (scripts/probe) found: `embeddings sync` (inside `maintain`) writes the vector of a
    memory that a concurrent transaction (a LangGraph put's update) is archiving. Read without a
    lock, the memory still looks live, so its vector entered the index after the archiving
    transaction had taken it out: `check` then found index drift."""
    from memstore.db import write_transaction
    from memstore.integrity import check_integrity
    from memstore.lifecycle import forget_in_transaction
    from memstore.vectors.storage import model_of, store_vectors

    with MemoryStore(pg_url) as store:
        store.add("A fact that is being archived.", id="m1")
        store.add("A fact that stays.", id="m2")
        store.enable_embeddings(model_dir)
        store.sync_embeddings()
        with store.engine.begin() as conn:
            conn.execute(text("DELETE FROM memory_vectors WHERE memory_id = 'm1'"))  # m1 is pending again
            conn.execute(text("DELETE FROM memory_vector_index WHERE memory_id = 'm1'"))
        with store.engine.connect() as conn:
            blob = conn.execute(text("SELECT vector FROM memory_vectors WHERE memory_id = 'm2'")).scalar_one()
        with write_transaction(store.engine) as archiving:
            forget_in_transaction(archiving, ["m1"], None, None, now_ms())

            def write_vector() -> None:
                with write_transaction(store.engine) as writer:
                    store_vectors(writer, model_of(writer), ["m1"], [blob], now_ms())

            thread, errors = _in_thread(write_vector)
            time.sleep(WAIT_S)  # the vector's transaction reaches the index while m1's archiving is uncommitted
        thread.join(60)
        assert not thread.is_alive() and not errors, errors
        findings = [finding.detail for finding in check_integrity(store.engine).findings]
        assert findings == []
        assert store.get("m1")["reason"] == "forgotten"
