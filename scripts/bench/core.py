"""The per-size scenarios of the bench (``--only core``): bulk import, single adds, and the
near-duplicate join, and the run of every scenario on one generated store (``run_size``): these,
recall (recall.py) and consolidation (consolidation.py)."""

from __future__ import annotations

import random
import time
from pathlib import Path

from memstore import hygiene
from memstore.store import MemoryStore
from scripts.data import NOW_MS, generate_records
from scripts.stores import copy_store, finalize_file, remove_store

from .common import INSERT_SQL, empty_store, log, raw_connect, raw_row, repeat
from .consolidation import bench_consolidation, bench_live_at_capacity
from .recall import bench_recall
from .yardstick import exhaustive_pairs


def bench_bulk(work: Path, records: list[dict], rows: list[tuple], args) -> tuple[list[float], list[float], Path]:
    base = work / "base.db"

    def memstore_once() -> float:
        empty_store(base)
        store = MemoryStore(base)
        try:
            start = time.perf_counter()
            result = store.add_many(records)
            seconds = time.perf_counter() - start
        finally:
            store.close()
        assert result.added == len(records), result.added
        return seconds

    raw_path = work / "raw_bulk.db"

    def raw_once() -> float:
        empty_store(raw_path)
        conn = raw_connect(raw_path)
        start = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(INSERT_SQL, rows)
        conn.execute("COMMIT")
        seconds = time.perf_counter() - start
        conn.close()
        return seconds

    raw = repeat(raw_once, args.repeats, args.slow, "bulk raw")
    remove_store(raw_path)
    ms = repeat(memstore_once, args.repeats, args.slow, "bulk memstore")
    finalize_file(base)
    return ms, raw, base


def bench_add(work: Path, base: Path, records: list[dict], args) -> tuple[list[float], list[float]]:
    rng = random.Random(args.seed + 7)
    sample = [records[rng.randrange(len(records))] for _ in range(args.adds)]
    path = work / "add.db"

    def memstore_once(rep: int) -> float:
        copy_store(base, path, sync=True)
        store = MemoryStore(path)
        try:
            start = time.perf_counter()
            for i, r in enumerate(sample):
                store.add(r["text"], id=f"add{rep}-{i}", timestamp=NOW_MS + i, importance=r["importance"])
            seconds = time.perf_counter() - start
        finally:
            store.close()
        return seconds

    def raw_once(rep: int) -> float:
        copy_store(base, path, sync=True)
        conn = raw_connect(path)
        prepared = [
            raw_row({"id": f"add{rep}-{i}", "text": r["text"], "timestamp": NOW_MS + i, "importance": r["importance"],
                     "created_at": NOW_MS})
            for i, r in enumerate(sample)
        ]  # fmt: skip
        start = time.perf_counter()
        for row in prepared:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(INSERT_SQL, row)
            conn.execute("COMMIT")
        seconds = time.perf_counter() - start
        conn.close()
        return seconds

    counter = iter(range(1000))
    raw = repeat(lambda: raw_once(next(counter)), args.repeats, args.slow, "add raw")
    counter2 = iter(range(1000))
    ms = repeat(lambda: memstore_once(next(counter2)), args.repeats, args.slow, "add memstore")
    remove_store(path)
    return ms, raw


_EXHAUSTIVE_CACHE: dict = {}


def bench_near_dup(records: list[dict], args) -> dict:
    threshold = hygiene.NEAR_DUPLICATE_THRESHOLD
    sets = [hygiene.token_set(r["text"]) for r in records]
    k = min(args.exhaustive_sample, len(sets))
    key = (k, args.seed)
    if key not in _EXHAUSTIVE_CACHE:  # records[:k] are the same for every size (same seed)
        sample = sets[:k]
        start = time.perf_counter()
        exhaustive = exhaustive_pairs(sample, threshold)
        ex_seconds = time.perf_counter() - start
        identical = hygiene.similar_pairs(sample, threshold) == exhaustive
        _EXHAUSTIVE_CACHE[key] = (ex_seconds, identical, len(exhaustive))
        log(f"  exhaustive pairs on {k:,}: {ex_seconds:.2f} s, similar_pairs identical: {identical}")
    ex_seconds, identical, found = _EXHAUSTIVE_CACHE[key]
    per_pair = ex_seconds / (k * (k - 1) / 2)
    n = len(sets)

    def once() -> float:
        start = time.perf_counter()
        hygiene.similar_pairs(sets, threshold)
        return time.perf_counter() - start

    times = repeat(once, args.repeats, args.slow, "similar_pairs")
    extrapolated = per_pair * n * (n - 1) / 2
    return {"similar_pairs": times, "exhaustive_sample": k, "exhaustive_sample_seconds": ex_seconds,
            "exhaustive_extrapolated_seconds": extrapolated, "sample_identical": identical,
            "sample_pairs_found": found}  # fmt: skip


def run_size(n: int, args, work: Path) -> dict:
    log(f"== size {n:,}: generating ...")
    t = time.perf_counter()
    records, kinds = generate_records(n, args.seed)
    rows = [raw_row(r) for r in records]
    log(f"   generated in {time.perf_counter() - t:.1f} s ({kinds})")
    capacity = max(n // 10, 1)
    result: dict = {"size": n, "capacity": capacity, "store": kinds}

    log("bulk import ...")
    ms, raw, base = bench_bulk(work, records, rows, args)
    result["bulk"] = {"memstore": ms, "raw": raw}
    del rows
    log("single adds ...")
    ms, raw = bench_add(work, base, records, args)
    result["add"] = {"memstore": ms, "raw": raw, "records_per_run": args.adds}
    log("recall ...")
    result["recall"] = bench_recall(work, base, args)
    log("consolidation ...")
    result["consolidation"] = bench_consolidation(work, base, records, capacity, args)
    log("consolidation, live store at capacity ...")
    result["live_store"] = bench_live_at_capacity(work, base, records, args)
    if n <= args.near_dup_max:
        log("near-duplicate join ...")
        result["near_dup"] = bench_near_dup(records, args)
    remove_store(base)
    return result
