"""MemoryStore: the write path, reads, the job and the engine settings, on real SQLite files."""

from __future__ import annotations

import multiprocessing
from .sqlitelib import dump, sqlite3
import threading
import time

import pytest
from sqlalchemy import text

from memstore import IdConflictError, MemoryStore, NotFoundError, StoreBusyError, ValidationError
from memstore.db import BUSY_TIMEOUT_MS

from .conftest import SEED_SAMPLE


def ids(rows):
    return [r["id"] for r in rows]


def test_add_fills_defaults_and_stores_the_key(store):
    before = time.time_ns() // 1_000_000
    row = store.add("  User prefers DARK mode! ")
    after = time.time_ns() // 1_000_000
    assert len(row["id"]) == 32 and row["namespace"] == "default" and row["importance"] == 3
    assert before <= row["timestamp"] <= after and row["created_at"] == row["updated_at"]
    assert row["norm_key"] == "user prefers dark mode" and row["pinned"] is False


def test_add_returns_the_stored_row_with_the_seq_the_database_gave_it(store):
    first = store.add("fact", id="a", timestamp=5)
    second = store.add("other fact", id="b", timestamp=5)
    retried = store.add("fact", id="a", timestamp=5)
    assert first == store.get("a") == retried
    assert list(first) == list(retried)  # same key order, written now or found stored
    assert (first["seq"], second["seq"]) == (1, 2)


def test_the_models_still_name_a_memory_by_its_id(store):
    # seq is the table's key (the rowid on SQLite); the ORM identity stays the id.
    from sqlalchemy.orm import Session

    from memstore.models import Memory

    store.add("fact", id="m1")
    with Session(store.engine) as session:
        assert session.get(Memory, "m1").text == "fact"


def test_store_accepts_what_the_reference_accepts(store):
    store.add("", id="é\u0301😀", timestamp=-(2**63), importance=1)
    store.add("x", id=" ", timestamp=2**63 - 1, importance=5)
    assert store.get("é\u0301😀")["timestamp"] == -(2**63)
    assert store.get(" ")["timestamp"] == 2**63 - 1


def test_identical_re_add_is_a_no_op_and_a_different_record_under_the_id_is_an_error(store):
    store.add("fact", id="a", timestamp=5)
    store.add("fact", id="a", timestamp=5)
    store.add("fact", id="a")  # a retry that did not pin the timestamp still matches
    assert store.count() == 1
    with pytest.raises(IdConflictError, match="'a' already holds a different memory"):
        store.add("other fact", id="a")


def test_an_archived_id_cannot_be_reused_for_another_record(store):
    store.add_many(SEED_SAMPLE)
    store.consolidate(5)
    store.add(SEED_SAMPLE[0]["text"], id="m1", timestamp=10, importance=3)  # retry: no-op
    assert store.count() == 2
    with pytest.raises(IdConflictError, match="archived"):
        store.add("something new", id="m1")


def test_add_many_validates_everything_before_writing_anything(store):
    records = [dict(r) for r in SEED_SAMPLE] + [{"id": "bad", "text": "x", "importance": 9}]
    with pytest.raises(ValidationError, match="record 3: field 'importance'"):
        store.add_many(records)
    assert store.count() == 0


def test_add_many_rejects_an_id_repeated_within_the_batch(store):
    with pytest.raises(ValidationError, match="record 1: field 'id': repeats"):
        store.add_many([{"id": "a", "text": "x"}, {"id": "a", "text": "x"}])
    assert store.count() == 0


def test_norm_key_is_never_taken_from_input(store):
    with pytest.raises(ValidationError, match="field 'norm_key'"):
        store.add_many([{"id": "a", "text": "x", "norm_key": "forged"}])


@pytest.mark.parametrize(
    ("record", "field"),
    [
        ({"text": "x", "namespace": ""}, "namespace"),
        ({"text": "x\x00y"}, "text"),
        ({"text": "\ud800"}, "text"),
        ({"text": "x", "pinned": 1}, "pinned"),
        ({"text": "x", "meta": [1]}, "meta"),
        ({"text": "x", "recall_count": -1}, "recall_count"),
        ({"id": "a"}, "text"),
    ],
)
def test_invalid_fields_are_named(store, record, field):
    with pytest.raises(ValidationError, match=f"field '{field}'"):
        store.add_many([record])


def test_seed_sample_keeps_m3_then_m2_with_m1_archived_as_duplicate(store):
    store.add_many(SEED_SAMPLE)
    report = store.consolidate(5, list_kept=True)
    assert report.kept_ids == ["m3", "m2"] and ids(store.list()) == ["m3", "m2"]
    archived = store.get("m1")
    assert (archived["reason"], archived["superseded_by"], archived["run_id"]) == ("duplicate", "m2", report.run_id)
    assert archived["text"] == "User prefers dark mode."
    assert store.get("m2")["norm_key"] == "user prefers dark mode"


def test_dry_run_reports_the_same_plan_and_writes_nothing(sqlite_store, db_path):
    sqlite_store.add_many(SEED_SAMPLE)
    dump_before = dump(db_path)
    dry = sqlite_store.consolidate(1, dry_run=True, list_kept=True)
    assert dump(db_path) == dump_before
    real = sqlite_store.consolidate(1, list_kept=True)
    assert (dry.run_id, real.run_id) == (None, 1)
    assert dry.kept_ids == real.kept_ids == ["m3"]
    assert dry.archived == real.archived


def test_second_run_with_same_capacity_archives_nothing(store):
    store.add_many(SEED_SAMPLE + [{"id": f"x{i}", "text": f"fact {i}", "timestamp": i, "importance": 2} for i in range(10)])
    first = store.consolidate(4, list_kept=True)
    assert (first.duplicates, first.evicted) == (1, 8)
    second = store.consolidate(4, list_kept=True)
    assert second.archived == [] and second.kept_ids == first.kept_ids


def test_consolidation_is_per_namespace(store):
    store.add_many([dict(r, namespace="a") for r in SEED_SAMPLE] + [dict(r, id=r["id"] + "b", namespace="b") for r in SEED_SAMPLE])
    report = store.consolidate(1, "a", list_kept=True)
    assert report.kept_ids == ["m3"] and store.count("b") == 3
    everything = store.consolidate(1, None, list_kept=True)
    assert everything.kept_ids == ["m3", "m3b"] and store.count() == 2


def test_pinned_memories_are_never_archived_and_do_not_count(store):
    store.add_many(
        [
            {"id": "p", "text": "keep me", "timestamp": 0, "importance": 1, "pinned": True},
            {"id": "p-copy", "text": "Keep me!", "timestamp": 9, "importance": 5},
            {"id": "a", "text": "a", "timestamp": 1, "importance": 4},
            {"id": "b", "text": "b", "timestamp": 1, "importance": 3},
        ]
    )
    report = store.consolidate(1, list_kept=True)
    assert report.kept_ids == ["a", "p"]
    assert store.get("p-copy")["superseded_by"] == "p" and store.get("b")["reason"] == "evicted"


def test_restore_puts_a_run_back_and_cannot_be_applied_twice(store):
    store.add_many(SEED_SAMPLE)
    def rows_without_seq():  # restored rows are written again: they get a new seq, nothing else changes
        return sorted(({k: v for k, v in r.items() if k != "seq"} for r in store.list()), key=lambda r: r["id"])

    before = rows_without_seq()
    run = store.consolidate(0)
    assert store.count() == 0
    restored = store.restore(run.run_id)
    assert restored.restored_ids == ["m1", "m2", "m3"]
    assert rows_without_seq() == before
    assert store.runs()[0]["status"] == "restored"
    with pytest.raises(Exception, match="already restored"):
        store.restore(run.run_id)
    with pytest.raises(NotFoundError):
        store.restore(999)


def test_runs_record_parameters_and_counts(store):
    store.add_many(SEED_SAMPLE)
    store.consolidate(1)
    (run,) = store.runs()
    assert (run["namespace"], run["capacity"], run["live_before"], run["kept"], run["duplicates"], run["evicted"]) == (
        "default", 1, 3, 1, 1, 1,
    )  # fmt: skip
    assert run["started_at"] <= run["finished_at"]


def test_get_missing_id_raises_not_found(store):
    with pytest.raises(NotFoundError, match="no memory with id 'nope'"):
        store.get("nope")


def test_engine_settings(sqlite_store):
    with sqlite_store.engine.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1
        assert conn.execute(text("PRAGMA busy_timeout")).scalar() == BUSY_TIMEOUT_MS


def test_a_writer_waits_for_the_lock_instead_of_failing(sqlite_store, db_path):
    """Another process holds the write lock for a moment; the add queues behind it and succeeds."""
    holder = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO consolidation_runs (started_at, finished_at, live_before, kept, duplicates, evicted) VALUES (0, 0, 0, 0, 0, 0)")
    released = threading.Event()

    def release_later():
        time.sleep(0.3)
        holder.execute("COMMIT")
        released.set()

    threading.Thread(target=release_later).start()
    sqlite_store.add("written after the lock is released", id="late")
    assert released.is_set()
    assert sqlite_store.get("late")["text"] == "written after the lock is released"


def test_a_write_that_cannot_get_the_lock_fails_cleanly_and_the_next_one_succeeds(db_path):
    with MemoryStore(db_path, busy_timeout_ms=100) as impatient:
        holder = sqlite3.connect(db_path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        with pytest.raises(StoreBusyError, match="locked by another writer"):
            impatient.add("blocked", id="blocked")
        assert impatient.engine.pool.checkedout() == 0
        holder.execute("ROLLBACK")
        impatient.add("free now", id="free")
        assert ids(impatient.list()) == ["free"]


def _add_in_child(path: str) -> None:
    with MemoryStore(path) as child_store:
        child_store.add("from the child", id="child")


def test_a_forked_child_does_not_reuse_the_parents_connections(sqlite_store, db_path):
    sqlite_store.add("from the parent", id="parent")  # the parent's pool now holds a connection
    context = multiprocessing.get_context("fork")
    child = context.Process(target=_add_in_child, args=(str(db_path),))
    child.start()
    child.join(30)
    assert child.exitcode == 0
    sqlite_store.add("parent again", id="parent-2")
    assert sorted(ids(sqlite_store.list())) == ["child", "parent", "parent-2"]
    assert sqlite3.connect(db_path).execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_batches_past_one_lookup_chunk_find_taken_ids_in_every_chunk(store):
    # The write path probes ids 500 at a time; a retry or a conflict deep in a batch must be seen.
    first = [{"id": f"r{n:04d}", "text": f"memory {n}", "timestamp": n} for n in range(1200)]
    assert store.add_many(first).added == 1200
    store.consolidate(1000)  # archives the 200 oldest: taken ids now live in both tables
    again = store.add_many(first)
    assert (again.added, again.unchanged) == (0, 1200)
    changed = [dict(record) for record in first]
    changed[1100]["text"] = "something else"
    with pytest.raises(IdConflictError, match="'r1100' already holds a different memory"):
        store.add_many([*changed[1000:], {"id": "fresh", "text": "new"}])
    changed = [dict(record) for record in first]
    changed[10]["text"] = "something else"
    with pytest.raises(IdConflictError, match=r"'r0010' already holds a different memory \(archived\)"):
        store.add_many(changed[::-1])
    assert store.count() == 1000 and store.add_many([{"id": "fresh", "text": "new"}]).added == 1
    assert max(row["seq"] for row in store.list()) == 1201


def test_a_retry_compares_meta_as_json_so_true_is_not_1(store):
    # Python's == calls 1, 1.0 and true equal; a JSON reader (and the agent that wrote them) does not.
    store.add("x", id="m", meta={"v": 1})
    assert store.add("x", id="m", meta={"v": 1})["id"] == "m"  # the same record again: a retry
    for other in ({"v": True}, {"v": 1.0}):
        with pytest.raises(IdConflictError):
            store.add("x", id="m", meta=other)


def test_recall_counts_past_32_bits_merge_exactly(store):
    """Merged duplicates carry the sum of their recall counts: past 2^31 - 1 on both backends
    (PostgreSQL's INTEGER column failed the job with "integer out of range" before revision 0010),
    and the merged memory can still be corrected."""
    big = 2**31 - 1
    store.add_many([{"id": "a", "text": "User likes tea.", "recall_count": big},
                    {"id": "b", "text": "user likes tea", "recall_count": big}])  # fmt: skip
    store.consolidate(10)
    (kept,) = store.list()
    assert kept["recall_count"] == 2 * big and type(kept["recall_count"]) is int
    corrected = store.update("a", importance=5)
    assert corrected["recall_count"] == 2 * big
