"""The query plans of the jobs' statements, as the SQLite memstore opens stores with explains them.

SQLite's planner has no statistics here (memstore never runs ANALYZE), so a plan depends on the
statement and the SQLite version, not on the rows: a small store shows the plan a big one gets.
Versions choose differently: SQLite 3.40 counted the expired memories of a namespace by walking
every memory in ix_memories_rank where 3.50 read the expiry index (3.50 walked it too for the count
over every namespace), and the nightly job grew ×7.7 from 50k to 500k memories instead of ×1.5. These tests fail when a statement of the job stops reading the index
it was written for, on whichever SQLite they run with (`tests/sqlitelib.py`: Python's own `sqlite3`
unless MEMSTORE_SQLITE_LIBRARY says otherwise).
"""

from __future__ import annotations

import re

from sqlalchemy import event

from memstore import MemoryStore
from memstore.records import now_ms

from .sqlitelib import sqlite3

# The index each kind of statement is written to read, found by a fragment of its SQL. Every job's
# statements are checked against every rule whose fragment they contain.
INTENDED = [
    # The expired memories: off the partial expiry index, never a namespace's whole index.
    ("expires_at <=", "USING INDEX ix_memories_expires_at (expires_at"),
    # Stage 1's window: straight off ix_memories_stage1, which holds every column it reads.
    ("row_number() OVER", "USING COVERING INDEX ix_memories_stage1 (namespace=?"),
    # Stage 2: the namespace's unpinned memories in rank order.
    ("ORDER BY memories.importance", "USING COVERING INDEX ix_memories_rank (namespace=? AND pinned=?)"),
    # The incremental run's new rows: a range of the rowid.
    ("WHERE memories.seq >", "USING INTEGER PRIMARY KEY (rowid>?)"),
    # What this run archived (to delete it from the live set, merge recall history, report it).
    ("memory_archive.run_id = ?", "USING INDEX ix_memory_archive_run_id (run_id=?)"),
]
# Statements that read every live memory on purpose: the audit of the trigger-kept counts (one pass
# over the smallest index).
READS_EVERY_MEMORY = ("FROM memory_live_counts",)


def _statements(store: MemoryStore, job) -> list[tuple[str, tuple]]:
    """The statements `job()` runs on `store`, with their parameters (the first row of an executemany)."""
    seen: list[tuple[str, tuple]] = []

    def keep(conn, cursor, statement, parameters, context, executemany):  # noqa: ARG001
        seen.append((statement, tuple(parameters[0] if executemany else parameters)))

    event.listen(store.engine, "before_cursor_execute", keep)
    try:
        job()
    finally:
        event.remove(store.engine, "before_cursor_execute", keep)
    return seen


def _plan(shell, statement: str, parameters: tuple) -> list[str]:
    return [str(step[-1]) for step in shell.execute(f"EXPLAIN QUERY PLAN {statement}", parameters)]


def _write_day(store: MemoryStore, day: int) -> None:
    """A day of an agent's writes in two namespaces: repeats and variants of earlier facts (Stage 1
    archives them), new ones (Stage 2 evicts past capacity), pinned ones, and some whose lifetime has
    already ended (every job archives them first)."""
    gone = now_ms() - 1
    store.add_many([
        {"text": f"Fact {i % 40} of the project{'!' if day % 2 else '.'}", "namespace": namespace,
         "importance": 1 + (i + day) % 5, "timestamp": day * 1000 + i, "pinned": i % 17 == 0,
         "expires_at": gone if i % 9 == 0 else None}
        for i in range(60) for namespace in ("default", "notes")
    ])  # fmt: skip


def test_every_statement_of_the_jobs_reads_the_index_it_is_written_for(sqlite_store, db_path):
    store = sqlite_store
    _write_day(store, 0)
    jobs = {
        "first consolidate": lambda: store.consolidate(30),
        "full consolidate, every namespace": lambda: store.consolidate(30, namespace=None, full=True),
        "expire, every namespace": store.expire,
        "expire one namespace": lambda: store.expire(namespace="notes"),
        "prune one namespace": lambda: store.prune("default"),
        "prune every namespace": lambda: store.prune(None),
        "maintain, every phase but meaning": lambda: store.maintain(
            ["check", "expire", "dedup", "stale", "evict", "verify"], capacity=30, namespace=None, stale=True
        ),
    }
    ran: dict[str, list[tuple[str, tuple]]] = {}
    for day, (name, job) in enumerate(jobs.items(), start=1):
        ran[name] = _statements(store, job)
        _write_day(store, day)  # the next job finds new writes, duplicates and expired memories again
    matched = {fragment: 0 for fragment, _ in INTENDED}
    with sqlite3.connect(db_path) as shell:
        for name, statements in ran.items():
            for statement, parameters in statements:
                flat = " ".join(statement.split())
                rules = [(fragment, index) for fragment, index in INTENDED if fragment in flat]
                if not rules:
                    continue
                plan = _plan(shell, statement, parameters)
                for fragment, index in rules:
                    matched[fragment] += 1
                    assert any(index in step for step in plan), (name, flat, plan)
    shell.close()
    # Every rule was put to the test (a rule no statement matches would pass whatever the planner did).
    assert all(matched.values()), matched


def test_the_incremental_nightly_job_reads_no_memory_it_does_not_change(sqlite_store, db_path):
    # The job a scheduler runs after a day of writes, as `consolidate` and as `maintain`'s phases
    # that write without meaning: after a first run, its cost follows the new writes and what it
    # archives. A step that scans `memories` (or a whole index of it) reads every live memory.
    store = sqlite_store
    _write_day(store, 0)
    store.consolidate(30, namespace=None)
    jobs = {
        "consolidate one namespace": lambda: store.consolidate(30),
        "consolidate every namespace": lambda: store.consolidate(30, namespace=None),
        "expire, every namespace": store.expire,
        "maintain one namespace": lambda: store.maintain(["expire", "dedup", "evict"], capacity=30),
        "maintain every namespace": lambda: store.maintain(["expire", "dedup", "evict"], capacity=30, namespace=None),
    }
    ran = {}
    for day, (name, job) in enumerate(jobs.items(), start=1):
        _write_day(store, day)
        ran[name] = _statements(store, job)
    scans = re.compile(r"\bSCAN memories\b")
    explained = 0
    with sqlite3.connect(db_path) as shell:
        for name, statements in ran.items():
            for statement, parameters in statements:
                flat = " ".join(statement.split())
                if not re.match(r"(SELECT|INSERT|UPDATE|DELETE|WITH)\b", flat, re.IGNORECASE):
                    continue
                plan = _plan(shell, statement, parameters)
                explained += 1
                if any(marker in flat for marker in READS_EVERY_MEMORY):
                    continue
                assert not any(scans.search(step) for step in plan), (name, flat, plan)
    shell.close()
    assert explained >= 50, explained
