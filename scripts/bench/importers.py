"""The importer scenario of the bench (``--only importers``; also part of ``--only all``):
`memstore import --from FORMAT SOURCE`, as `MemoryStore.import_from` (what the command calls), for
every format memstore imports, against memstore's own JSONL import measured in the same run.

The sources (sources.py): for ``--importers-size`` N (default 100,000), a source of exactly N
memories in each format, generated untimed from the bench's synthetic texts.

The baseline: memstore's own JSONL export shape (``id, namespace, text, timestamp, importance,
pinned, created_at, updated_at, last_recalled_at, recall_count, fact_key, meta``) of N records over
10 namespaces, ``import_from("memstore", path)``, after one untimed import of its first 1,000 lines
(modules imported, statements compiled), measured before the importers and again after them; the
faster of the two medians is the yardstick (the stricter one, whichever way the machine drifted).

Each import goes into a fresh SQLite store (created before the clock starts, closed after it stops)
and is repeated ``--repeats`` times (median reported) unless a run exceeds ``--slow`` seconds, then
once. Reported per format: seconds, memories per second and the rate's ratio to the JSONL
baseline's rate (target >= 0.50, from the issue). Every import must have added exactly N memories
(live + archived), archived exactly the ones the source kept as not live, and rejected nothing;
otherwise the bench exits non-zero.

    .venv/bin/python -m scripts.bench --only importers [--importers-size 100000]
"""

from __future__ import annotations

import random
import shutil
import statistics
import sys
import time
from pathlib import Path

from memstore import MemoryStore
from memstore.importers import reader
from scripts.stores import sqlite3

from .sources import SOURCES, Texts, build_memstore_jsonl, source_bytes

TARGET_RATIO = 0.50


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# -- the measurement ------------------------------------------------------------------------------


def remove_store(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    shutil.rmtree(f"{path}-vectors", ignore_errors=True)


def stored_rows(path: Path) -> tuple[int, int]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT (SELECT count(*) FROM memories), (SELECT count(*) FROM memory_archive)").fetchone()
    finally:
        conn.close()


def timed_import(target: Path, source_format: str, source: Path) -> tuple[float, dict, tuple[int, int]]:
    """One import into a fresh store: the store is created before the clock starts and closed after it stops."""
    remove_store(target)
    with MemoryStore(target) as store:
        started = time.perf_counter()
        report = store.import_from(source_format, source)
        seconds = time.perf_counter() - started
    rows = stored_rows(target)
    remove_store(target)
    return seconds, report.to_dict(), rows


def measure(label: str, source_format: str, built: dict, work: Path, args) -> dict:
    if source_format != "memstore":
        reader(source_format)  # the importer's module imported before the clock starts
    target = work / "importers-target.db"
    times, problems, report, rows = [], [], None, None
    for run in range(args.repeats):
        seconds, report, rows = timed_import(target, source_format, built["source"])
        times.append(seconds)
        log(f"  {label} run {run + 1}: {seconds:.2f} s ({built['expected'] / seconds:,.0f}/s)")
        if report["added"] != built["expected"]:
            problems.append(f"run {run + 1} added {report['added']:,}, expected {built['expected']:,}")
        if report["archived"] != built["archived"]:
            problems.append(f"run {run + 1} archived {report['archived']:,}, expected {built['archived']:,}")
        if report["skipped"] or report["unchanged"] or report["repeated"]:
            problems.append(f"run {run + 1} skipped {report['skipped']}, unchanged {report['unchanged']}, repeated {report['repeated']}")
        if rows != (built["expected"] - built["archived"], built["archived"]):
            problems.append(f"run {run + 1} left {rows[0]:,} live + {rows[1]:,} archived rows, expected "
                            f"{built['expected'] - built['archived']:,} + {built['archived']:,}")  # fmt: skip
        if seconds > args.slow:
            break
    median = statistics.median(times)
    return {"format": source_format, "times": times, "seconds": median, "rate_per_s": built["expected"] / median,
            "expected": built["expected"], "expected_archived": built["archived"], "source_bytes": source_bytes(built["source"]),
            "detail": built["detail"], "report": report, "stored_rows": rows, "problems": problems, "ok": not problems}  # fmt: skip


def run_importers(args, work: Path) -> dict:
    size = args.importers_size
    folder = work / "importers"
    folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    texts = Texts(size, args.seed)
    log(f"== importers: {size:,} unique texts in {time.perf_counter() - started:.1f} s")
    out: dict = {"size": size, "target_ratio": TARGET_RATIO}
    try:
        baseline_source = build_memstore_jsonl(folder, texts, args.seed)
        warm_up(baseline_source["source"], work)
        log(f"== importers: memstore JSONL (the baseline) of {size:,} ...")
        out["baseline_before"] = measure("memstore JSONL", "memstore", baseline_source, work, args)
        out["formats"] = {}
        for label, source_format, build in SOURCES:
            started = time.perf_counter()
            texts.rng = random.Random(f"{args.seed}-{label}")
            built = build(folder, texts)
            log(f"== importers: {label}: source of {size:,} built in {time.perf_counter() - started:.1f} s "
                f"({source_bytes(built['source']) / 1e6:,.1f} MB)")  # fmt: skip
            figures = measure(label, source_format, built, work, args)
            out["formats"][label] = figures
            log(f"  {label}: {figures['seconds']:.2f} s, {figures['rate_per_s']:,.0f}/s, "
                f"{figures['rate_per_s'] / out['baseline_before']['rate_per_s']:.2f} x the first JSONL rate"
                f"{'' if figures['ok'] else ' CHECK FAILED: ' + '; '.join(figures['problems'])}")  # fmt: skip
            source = built["source"]
            shutil.rmtree(source) if source.is_dir() else source.unlink()
        log(f"== importers: memstore JSONL (the baseline) of {size:,} again ...")
        out["baseline_after"] = measure("memstore JSONL", "memstore", baseline_source, work, args)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    # The baseline is the faster of its two measurements (before and after the importers): the
    # stricter yardstick, whichever way the machine drifted during the run.
    out["baseline"] = min(out["baseline_before"], out["baseline_after"], key=lambda figures: figures["seconds"])
    for figures in out["formats"].values():
        figures["ratio"] = figures["rate_per_s"] / out["baseline"]["rate_per_s"]
    return out


def warm_up(jsonl: Path, work: Path) -> None:
    """One untimed import of the baseline's first 1,000 lines: modules imported, statements compiled."""
    sample = work / "importers-warm-up.jsonl"
    with jsonl.open("rb") as stream:
        sample.write_bytes(b"".join(line for line, _ in zip(stream, range(1000))))
    timed_import(work / "importers-warm-up.db", "memstore", sample)
    sample.unlink()


def importer_failures(importers: dict) -> list[str]:
    """Every count check that failed (the bench exits non-zero on any)."""
    entries = [(f"memstore JSONL ({when})", importers[f"baseline_{when}"]) for when in ("before", "after") if f"baseline_{when}" in importers]
    entries += list(importers.get("formats", {}).items())
    return [f"importers {label}: {problem}" for label, figures in entries for problem in figures["problems"]]


def importer_rows(importers: dict) -> list[dict]:
    """The rows the bench prints for this scenario."""
    size = importers["size"]
    base = importers["baseline"]
    ok = importers["baseline_before"]["ok"] and importers["baseline_after"]["ok"]
    rows = [dict(scenario=f"import --from memstore (JSONL baseline, {base['rate_per_s']:,.0f}/s; "
                          f"before {importers['baseline_before']['seconds']:.2f} s, after {importers['baseline_after']['seconds']:.2f} s)",
                 size=size, memstore=base["seconds"], baseline=None, ratio=None, ratio_def="",
                 target="counts exact", met=ok)]
    for label, figures in importers.get("formats", {}).items():
        rows.append(dict(scenario=f"import --from {label} ({figures['rate_per_s']:,.0f}/s)", size=size, memstore=figures["seconds"],
                         baseline=base["seconds"], ratio=figures["ratio"], ratio_def="rate/JSONL rate",
                         target=f">= {TARGET_RATIO:.2f} & counts exact", met=figures["ratio"] >= TARGET_RATIO and figures["ok"]))
    return rows  # fmt: skip
