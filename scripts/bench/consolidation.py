"""Consolidation in the bench's per-size run: a full run against the bare SQL of one, then 1,000
new writes and the incremental run against a full one and against the floor (moving the same rows
bare), on the store consolidated at size // 10 and on a live store exactly at capacity."""

from __future__ import annotations

import random
import time
from pathlib import Path

from memstore.store import MemoryStore
from scripts.data import NOW_MS, TextMaker
from scripts.stores import copy_store, finalize_file, remove_store, sqlite3

from .common import COLS, raw_connect, repeat

# -- the bare SQL of one full consolidation run (namespace 'default') -----------------------------
RAW_RUN_ROW = """
INSERT INTO consolidation_runs (kind, namespace, capacity, status, started_at, finished_at,
    live_before, kept, duplicates, evicted, stale, high_water_seq)
VALUES ('consolidate', 'default', :capacity, 'applied', :now, :now,
    (SELECT count(*) FROM memories WHERE namespace = 'default'), 0, 0, 0, 0,
    (SELECT coalesce(max(seq), 0) FROM memories))
"""
RAW_STAGE1 = f"""
INSERT INTO memory_archive ({COLS}, archived_at, reason, superseded_by, run_id)
SELECT {COLS}, :now, 'duplicate', winner, :run_id FROM (
    SELECT memories.*,
           row_number() OVER w AS group_rank,
           first_value(id) OVER w AS winner
    FROM memories WHERE namespace = 'default'
    WINDOW w AS (PARTITION BY namespace, norm_key ORDER BY pinned DESC, timestamp DESC, importance DESC, id)
) WHERE group_rank > 1 AND pinned = 0
"""
RAW_STAGE1_DELETE = """
DELETE FROM memories WHERE id IN (
    SELECT id FROM memory_archive WHERE run_id = :run_id AND reason = 'duplicate' AND namespace = 'default')
"""
RAW_STAGE2 = f"""
INSERT INTO memory_archive ({COLS}, archived_at, reason, superseded_by, run_id)
SELECT {COLS}, :now, 'evicted', NULL, :run_id FROM memories
WHERE namespace = 'default' AND pinned = 0 AND id NOT IN (
    SELECT id FROM memories WHERE namespace = 'default' AND pinned = 0
    ORDER BY importance DESC, timestamp DESC, id LIMIT :capacity)
"""
RAW_STAGE2_DELETE = """
DELETE FROM memories WHERE id IN (
    SELECT id FROM memory_archive WHERE run_id = :run_id AND reason = 'evicted' AND namespace = 'default')
"""
# The floor under an incremental run: the bare statements that move a given set of rows (a run row
# without counts, one archive copy and one delete per row, one transaction).
RAW_RUN_ROW_BARE = """
INSERT INTO consolidation_runs (kind, namespace, capacity, status, started_at, finished_at,
    live_before, kept, duplicates, evicted, stale)
VALUES ('consolidate', 'default', :capacity, 'applied', :now, :now, 0, 0, 0, 0, 0)
"""
RAW_MOVE_ONE = f"""
INSERT INTO memory_archive ({COLS}, archived_at, reason, superseded_by, run_id)
SELECT {COLS}, :now, :reason, :superseded_by, :run_id FROM memories WHERE id = :id
"""


def run_memstore_consolidate(path: Path, capacity: int, full: bool):
    store = MemoryStore(path)
    try:
        start = time.perf_counter()
        report = store.consolidate(capacity, full=full, list_kept=False)
        seconds = time.perf_counter() - start
    finally:
        store.close()
    return seconds, report


def run_raw_consolidate(path: Path, capacity: int) -> tuple[float, dict]:
    conn = raw_connect(path)
    params = {"capacity": capacity, "now": NOW_MS}
    start = time.perf_counter()
    conn.execute("BEGIN IMMEDIATE")
    run_id = conn.execute(RAW_RUN_ROW, params).lastrowid
    params["run_id"] = run_id
    marks = {}
    t = time.perf_counter()
    for name, sql in (("stage1_insert", RAW_STAGE1), ("stage1_delete", RAW_STAGE1_DELETE),
                      ("stage2_insert", RAW_STAGE2), ("stage2_delete", RAW_STAGE2_DELETE)):  # fmt: skip
        conn.execute(sql, params)
        now = time.perf_counter()
        marks[name] = round(now - t, 4)
        t = now
    conn.execute("COMMIT")
    seconds = time.perf_counter() - start
    marks["commit"] = round(time.perf_counter() - t, 4)
    conn.close()
    return seconds, marks


def statement_profile(path: Path, capacity: int, full: bool) -> list[dict]:
    """One untimed run with per-statement timings (SQLAlchemy cursor events): where the time goes."""
    from sqlalchemy import event

    store = MemoryStore(path)
    timings: list[dict] = []
    started: dict = {}

    @event.listens_for(store.engine, "before_cursor_execute")
    def before(conn, cursor, statement, parameters, context, executemany):  # noqa: ARG001
        started["t"] = time.perf_counter()

    @event.listens_for(store.engine, "after_cursor_execute")
    def after(conn, cursor, statement, parameters, context, executemany):  # noqa: ARG001
        timings.append({"seconds": time.perf_counter() - started["t"], "sql": " ".join(statement.split())[:110]})

    try:
        start = time.perf_counter()
        store.consolidate(capacity, full=full, list_kept=False)
        total = time.perf_counter() - start
    finally:
        store.close()
    in_sql = sum(t["seconds"] for t in timings)
    timings.sort(key=lambda t: -t["seconds"])
    top = [{"seconds": round(t["seconds"], 4), "sql": t["sql"]} for t in timings[:6]]
    return [{"total_seconds": round(total, 4), "in_cursor_execute": round(in_sql, 4),
             "outside_sql (python, fetch, commit)": round(total - in_sql, 4)}, *top]  # fmt: skip


def new_writes(records: list[dict], live_ids: list[str], seed: int) -> list[dict]:
    """1,000 writes: repeats and same-key variants of live facts, high-importance and plain new ones."""
    rng = random.Random(seed + 11)
    by_id = {r["id"]: r for r in records}
    maker = TextMaker(random.Random(seed + 12))
    out = []
    ts = NOW_MS + 1000
    for i in range(300):  # exact repeats of a live fact, newer: the new row wins its key
        r = by_id[live_ids[rng.randrange(len(live_ids))]]
        out.append({"id": f"new-rep-{i}", "text": r["text"], "importance": rng.randint(1, 5), "timestamp": ts + i})
    for i in range(200):  # case / punctuation variants: same normalised key
        r = by_id[live_ids[rng.randrange(len(live_ids))]]
        text = r["text"].upper() if i % 2 else r["text"].rstrip(".!?") + "!"
        out.append({"id": f"new-var-{i}", "text": text, "importance": rng.randint(1, 5), "timestamp": ts + 300 + i})
    for i in range(300):  # new and important: push past capacity
        out.append({"id": f"new-imp-{i}", "text": maker.fresh(), "importance": 5, "timestamp": ts + 500 + i})
    for i in range(200):
        out.append({"id": f"new-any-{i}", "text": maker.fresh(), "importance": rng.randint(1, 5), "timestamp": ts + 800 + i})
    return out


def live_ids_of(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    ids = [row[0] for row in conn.execute("SELECT id FROM memories ORDER BY id")]
    conn.close()
    return ids


def bench_consolidation(work: Path, base: Path, records: list[dict], capacity: int, args) -> dict:
    out: dict = {}
    ms_path, raw_path = work / "full.db", work / "raw_full.db"
    reports = []

    def ms_once() -> float:
        copy_store(base, ms_path, sync=True)
        seconds, report = run_memstore_consolidate(ms_path, capacity, full=True)
        reports.append(report)
        return seconds

    raw_marks = []

    def raw_once() -> float:
        copy_store(base, raw_path, sync=True)
        seconds, marks = run_raw_consolidate(raw_path, capacity)
        raw_marks.append(marks)
        return seconds

    out["raw_full"] = repeat(raw_once, args.repeats, args.slow, "consolidate full raw")
    raw_live = live_ids_of(raw_path)
    out["memstore_full"] = repeat(ms_once, args.repeats, args.slow, "consolidate full memstore")
    ms_live = live_ids_of(ms_path)
    out["full_same_result_as_raw"] = raw_live == ms_live
    rep = reports[-1]
    out["full_counts"] = {"live_before": rep.live_before, "kept": rep.kept_count, "duplicates": rep.duplicates,
                          "evicted": rep.evicted, "pinned_kept": rep.pinned_kept}  # fmt: skip
    out["raw_statement_seconds"] = raw_marks[-1]
    remove_store(raw_path)

    # Where the memstore full run spends its time (untimed, separate copy).
    prof_path = work / "prof.db"
    copy_store(base, prof_path, sync=True)
    out["memstore_full_statement_profile"] = statement_profile(prof_path, capacity, full=True)

    out.update(incremental_after_writes(work, ms_path, records, capacity, args, "cap10"))
    for p in (ms_path, prof_path):
        remove_store(p)
    return out


def incremental_after_writes(work: Path, state: Path, records: list[dict], capacity: int, args, tag: str) -> dict:
    """1,000 new writes onto `state` (a store consolidated at `capacity`), then the incremental run
    vs a full run of the same state, and the floor (moving the same rows bare)."""
    out: dict = {}
    writes = new_writes(records, live_ids_of(state), args.seed)
    store = MemoryStore(state)
    try:
        added = store.add_many(writes)
        assert added.added == len(writes)
    finally:
        store.close()
    finalize_file(state)
    inc_path, full2_path, prof_path = work / f"{tag}_inc.db", work / f"{tag}_full2.db", work / f"{tag}_prof.db"
    inc_reports = []

    def inc_once() -> float:
        copy_store(state, inc_path, sync=True)
        seconds, report = run_memstore_consolidate(inc_path, capacity, full=False)
        assert report.incremental, "expected an incremental run"
        inc_reports.append(report)
        return seconds

    def full2_once() -> float:
        copy_store(state, full2_path, sync=True)
        seconds, _ = run_memstore_consolidate(full2_path, capacity, full=True)
        return seconds

    # ~0.1 s runs, where one disturbed run moves a median of three: five each.
    short_repeats = max(args.repeats, 5)
    out["memstore_incremental"] = repeat(inc_once, short_repeats, args.slow, f"{tag}: consolidate incremental")
    out["memstore_full_after_writes"] = repeat(full2_once, args.repeats, args.slow, f"{tag}: consolidate full after writes")
    out["incremental_same_result_as_full"] = live_ids_of(inc_path) == live_ids_of(full2_path)
    ir = inc_reports[-1]
    out["incremental_counts"] = {"capacity": capacity, "live_before": ir.live_before, "kept": ir.kept_count,
                                 "duplicates": ir.duplicates, "evicted": ir.evicted}  # fmt: skip
    copy_store(state, prof_path, sync=True)
    out["memstore_incremental_statement_profile"] = statement_profile(prof_path, capacity, full=False)

    # The floor: only moving the rows the incremental run archived, bare, on the same state.
    moved = [{"id": e.id, "reason": e.reason, "superseded_by": e.superseded_by, "now": NOW_MS} for e in ir.archived]
    floor_path = work / f"{tag}_floor.db"

    def floor_once() -> float:
        copy_store(state, floor_path, sync=True)
        conn = raw_connect(floor_path)
        conn.execute("PRAGMA wal_autocheckpoint = 0")  # as the job: its checkpoint runs after, off the clock
        start = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        run_id = conn.execute(RAW_RUN_ROW_BARE, {"capacity": capacity, "now": NOW_MS}).lastrowid
        conn.executemany(RAW_MOVE_ONE, [dict(row, run_id=run_id) for row in moved])
        conn.execute("DELETE FROM memories WHERE id IN (SELECT id FROM memory_archive WHERE run_id = ?)", (run_id,))
        conn.execute("COMMIT")
        seconds = time.perf_counter() - start
        conn.close()
        return seconds

    out["raw_move_archived_rows"] = repeat(floor_once, short_repeats, args.slow, f"{tag}: move the archived rows, bare")
    out["floor_same_result_as_incremental"] = live_ids_of(floor_path) == live_ids_of(inc_path)
    for p in (inc_path, full2_path, prof_path, floor_path):
        remove_store(p)
    return out


def bench_live_at_capacity(work: Path, base: Path, records: list[dict], args) -> dict:
    """The incremental scenario on a live store of about the generated size: a first full run with
    capacity = size (Stage 1 only), then capacity = the unpinned memories left, so the store is
    exactly full and the 1,000 writes push past it."""
    path = work / "live.db"
    copy_store(base, path, sync=True)
    run_memstore_consolidate(path, len(records), full=True)
    conn = sqlite3.connect(path)
    capacity = conn.execute("SELECT count(*) FROM memories WHERE pinned = 0").fetchone()[0]
    conn.close()
    out = incremental_after_writes(work, path, records, capacity, args, "full_store")
    remove_store(path)
    return out
