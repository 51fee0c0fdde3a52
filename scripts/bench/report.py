"""Benchmark the hygiene report (`MemoryStore.report`) on a large synthetic store.

    .venv/bin/python -m scripts.bench.report [--size 100000] [--seed 1] [--repeats 3]
                                             [--exhaustive-sample 4000] [--profile] [--output PATH]

Target (from the issue): on a 100,000-memory store the whole report finishes within 60 s on a
2-core machine. This is measured here, not in a timed test.

What it does:

1. Generates a store deterministically from ``random.Random(seed)`` (``generate_records`` of
   scripts/data.py): texts of ~100 characters
   drawn from a vocabulary of a few thousand words with a Zipf-like distribution (common words
   such as "the" and "user" are very frequent), ~30 % near-duplicate variants of earlier memories
   (one or two words dropped / replaced / added, case or punctuation changed), some exact
   duplicates, a few pinned, recall counts and dates spread over two years, and a few fact_keys
   shared by 2-3 records. They go into a fresh SQLite file in a temp dir with one
   ``MemoryStore.add_many`` call (timed separately; not part of the report figure).
2. Times ``MemoryStore.report(now=...)`` end to end (median of ``--repeats`` runs).
3. On the first ``--exhaustive-sample`` memories, runs ``yardstick.exhaustive_pairs`` (the O(n^2)
   yardstick) and ``hygiene.similar_pairs`` at threshold 0.5 and checks that they agree exactly
   (exit status 1 if not), then extrapolates the exhaustive cost to the full size. The same
   sample also checks the 0.8 self-join and, when `similar_pairs` takes `sides`, the
   negated-vs-plain join the report uses for contradictions.
4. Prints a table and writes the same figures to ``bench-results/report.json`` (with machine
   info and which library commit / file hashes were measured). ``--profile`` adds one untimed
   report under cProfile (``bench-results/report.prof`` plus the top functions in the JSON).

The exit status is 0 whether or not the 60 s target is met (the output says which); it is
non-zero only when the exactness check fails.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from memstore import hygiene, words
from memstore.store import MemoryStore
from scripts import REPO
from scripts.data import NOW_MS, VOCABULARY_SIZE, ZIPF_EXPONENT, generate_records

from .common import machine_info, source_fingerprint
from .yardstick import exhaustive_pairs

TARGET_SECONDS = 60.0
SAMPLE_THRESHOLD = 0.5
RESULTS = REPO / "bench-results" / "report.json"


# -- measurements ---------------------------------------------------------------------------------


def time_call(fn):
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def profile_report(store: MemoryStore, destination: Path, top: int = 15) -> list[dict]:
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.runcall(store.report, now=NOW_MS)
    destination.parent.mkdir(parents=True, exist_ok=True)
    profiler.dump_stats(destination)
    stats = pstats.Stats(profiler)
    rows = []
    for (filename, line, function), (_cc, calls, tottime, cumtime, _callers) in stats.stats.items():
        rows.append({"function": f"{Path(filename).name}:{line}({function})", "calls": calls,
                     "tottime": round(tottime, 3), "cumtime": round(cumtime, 3)})  # fmt: skip
    rows.sort(key=lambda r: -r["tottime"])
    print(f"\nprofile of one report (cProfile, slower than the timed runs), written to {destination}:")
    print(f"  {'tottime':>8} {'cumtime':>8} {'calls':>11}  function")
    for r in rows[:top]:
        print(f"  {r['tottime']:8.2f} {r['cumtime']:8.2f} {r['calls']:11,}  {r['function']}")
    return rows[:top]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.bench.report", description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000, help="memories in the store (default 100000)")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    parser.add_argument("--repeats", type=int, default=3, help="report runs; the median is the figure (default 3)")
    parser.add_argument(
        "--exhaustive-sample", type=int, default=4000,
        help="memories for the exhaustive-vs-prefix-filter check (default 4000)",
    )  # fmt: skip
    parser.add_argument(
        "--profile", action="store_true",
        help="also run one report under cProfile (not timed); writes <output>.prof and prints the top functions",
    )  # fmt: skip
    parser.add_argument("--output", type=Path, default=RESULTS, help=f"JSON output (default {RESULTS})")
    args = parser.parse_args(argv)
    if args.size < 1 or args.repeats < 1 or args.exhaustive_sample < 2:
        parser.error("--size and --repeats must be >= 1, --exhaustive-sample >= 2")

    print(f"generating {args.size:,} memories (seed {args.seed}) ...", flush=True)
    generate_seconds, (records, kinds) = time_call(lambda: generate_records(args.size, args.seed))

    with tempfile.TemporaryDirectory(prefix="memstore-bench-") as tmp:
        store = MemoryStore(Path(tmp) / "bench.db")
        try:
            print("inserting with one add_many call ...", flush=True)
            insert_seconds, added = time_call(lambda: store.add_many(records))
            assert added.added == args.size, added.added
            stored = store.count()

            runs: list[float] = []
            first = None
            deterministic = True
            for n in range(args.repeats):
                seconds, report = time_call(lambda: store.report(now=NOW_MS))
                runs.append(seconds)
                print(f"  report run {n + 1}/{args.repeats}: {seconds:.2f} s", flush=True)
                if first is None:
                    first = report
                elif report != first:
                    deterministic = False
                del report
            report = first

            # Reading the rows is the SQL part of the report; the rest is pure-Python hygiene.
            fetch_seconds, rows = time_call(lambda: list(store.iter_rows("default")))
            del rows
            profile_top = None
            if args.profile:
                profile_top = profile_report(store, args.output.with_suffix(".prof"))
        finally:
            store.close()

    # Exhaustive yardstick vs the prefix-filtered join on the same sample (the first k memories
    # in generation order: a smaller store with the same duplicate structure).
    k = min(args.exhaustive_sample, args.size)
    sample = [hygiene.token_set(r["text"]) for r in records[:k]]
    print(f"exhaustive pairs on a sample of {k:,} ...", flush=True)
    exhaustive_seconds, exhaustive = time_call(lambda: exhaustive_pairs(sample, SAMPLE_THRESHOLD))
    prefix_seconds, prefix = time_call(lambda: hygiene.similar_pairs(sample, SAMPLE_THRESHOLD))
    identical = exhaustive == prefix
    # The report itself joins at the near-duplicate threshold and, when similar_pairs takes
    # `sides`, joins negated against plain memories only: check those against the yardstick too
    # (pairs at >= 0.8 and cross-side pairs are subsets of the exhaustive answer at 0.5).
    extra_checks = {}
    near_t = hygiene.NEAR_DUPLICATE_THRESHOLD
    if near_t >= SAMPLE_THRESHOLD:
        extra_checks[f"self_join_at_{near_t}"] = (
            hygiene.similar_pairs(sample, near_t) == [p for p in exhaustive if p.similarity >= near_t]
        )
    if "sides" in inspect.signature(hygiene.similar_pairs).parameters:
        negated = [bool(s & words.REPORT_NEGATIONS) for s in sample]
        extra_checks["negated_vs_plain_at_0.5"] = hygiene.similar_pairs(sample, SAMPLE_THRESHOLD, sides=negated) == [
            p for p in exhaustive if negated[p.first] != negated[p.second]
        ]
    all_identical = identical and all(extra_checks.values())
    sample_pairs = k * (k - 1) // 2
    full_pairs = args.size * (args.size - 1) // 2
    cost_per_pair = exhaustive_seconds / sample_pairs if sample_pairs else 0.0
    extrapolated = cost_per_pair * full_pairs
    median = statistics.median(runs)
    met = median <= TARGET_SECONDS

    results = {
        "benchmark": "memstore hygiene report",
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.executable).name, "-m", "scripts.bench.report", *sys.argv[1:]]),
        "machine": machine_info(),
        "library_source": source_fingerprint(),
        "config": {
            "size": args.size, "seed": args.seed, "repeats": args.repeats,
            "exhaustive_sample": k, "sample_threshold": SAMPLE_THRESHOLD, "now_ms": NOW_MS,
            "near_duplicate_threshold": hygiene.NEAR_DUPLICATE_THRESHOLD,
            "contradiction_threshold": hygiene.CONTRADICTION_THRESHOLD,
            "vocabulary_size": VOCABULARY_SIZE, "zipf_exponent": ZIPF_EXPONENT,
        },  # fmt: skip
        "store": {"records": stored, **kinds},
        "timings_seconds": {
            "generate": round(generate_seconds, 3),
            "insert_add_many": round(insert_seconds, 3),
            "report_runs": [round(s, 3) for s in runs],
            "report_median": round(median, 3),
        },
        "report_breakdown_seconds": {
            "fetch_rows": round(fetch_seconds, 3),
            "hygiene_rest_of_median": round(median - fetch_seconds, 3),
        },
        "profile_top_tottime": profile_top,
        "report_counts": {
            "total_records": report["total_records"],
            "near_duplicate_pairs": len(report["near_duplicate_pairs"]),
            "contradiction_flags": len(report["contradiction_flags"]),
            "contradictions_negation": sum(c["reason"] == "negation differs" for c in report["contradiction_flags"]),
            "contradictions_fact_key": sum(c["reason"] != "negation differs" for c in report["contradiction_flags"]),
            "exact_duplicate_groups": len(report["exact_duplicate_groups"]),
            "exact_duplicate_records": sum(len(g) for g in report["exact_duplicate_groups"]),
            "repeated_runs_identical": deterministic,
        },
        "exactness_sample": {
            "sample_size": k,
            "pairs_compared": sample_pairs,
            "exhaustive_seconds": round(exhaustive_seconds, 3),
            "similar_pairs_seconds": round(prefix_seconds, 4),
            "pairs_found": len(exhaustive),
            "similar_pairs_found": len(prefix),
            "identical": identical,
            "other_checks_identical": extra_checks,
            "exhaustive_cost_per_pair_us": round(cost_per_pair * 1e6, 4),
        },
        "extrapolation": {
            "full_pairs": full_pairs,
            "exhaustive_seconds_extrapolated": round(extrapolated, 1),
            "ratio_exhaustive_over_report": round(extrapolated / median, 1) if median else None,
        },
        "target": {"seconds": TARGET_SECONDS, "met": met},
    }

    rc = results["report_counts"]
    ex = results["exactness_sample"]
    bd = results["report_breakdown_seconds"]
    rows_out = [
        ("machine", f"{os.cpu_count()} CPUs, {platform.system()} {platform.machine()}, Python {platform.python_version()}"),
        ("store size", f"{stored:,} memories (avg {kinds['avg_text_chars']} chars; {kinds['variant']:,} variants, "
                       f"{kinds['exact_duplicate']:,} exact copies, {kinds['pinned']:,} pinned, {kinds['with_fact_key']:,} with fact_key)"),
        ("generate", f"{generate_seconds:.2f} s"),
        ("insert (add_many, 1 call)", f"{insert_seconds:.2f} s   (not part of the report figure)"),
        ("report runs", ", ".join(f"{s:.2f}" for s in runs) + " s"),
        ("report (median)", f"{median:.2f} s"),
        ("  of which: fetch rows", f"{bd['fetch_rows']:.2f} s   (separate pass: iter_rows only)"),
        ("  of which: hygiene", f"{bd['hygiene_rest_of_median']:.2f} s   (median minus fetch)"),
        ("near-duplicate pairs", f"{rc['near_duplicate_pairs']:,}"),
        ("contradiction flags", f"{rc['contradiction_flags']:,} ({rc['contradictions_negation']:,} negation, "
                                f"{rc['contradictions_fact_key']:,} fact_key)"),
        ("exact duplicate groups", f"{rc['exact_duplicate_groups']:,} ({rc['exact_duplicate_records']:,} records)"),
        ("repeated runs identical", "yes" if deterministic else "NO"),
        (f"exhaustive, sample {k:,}", f"{exhaustive_seconds:.2f} s ({sample_pairs:,} pairs, {ex['exhaustive_cost_per_pair_us']:.3f} us/pair)"),
        (f"similar_pairs, sample {k:,}", f"{prefix_seconds:.4f} s"),
        ("pairs on sample (t=0.5)", f"{len(exhaustive):,} exhaustive / {len(prefix):,} prefix-filtered: "
                                    + ("IDENTICAL" if identical else "MISMATCH")),
        *((f"  also: {name}", "IDENTICAL" if ok else "MISMATCH") for name, ok in extra_checks.items()),
        ("exhaustive extrapolated", f"{extrapolated:,.0f} s ({extrapolated / 3600:.1f} h) for {full_pairs:,} pairs"),
        ("ratio exhaustive / report", f"{extrapolated / median:,.0f}x" if median else "n/a"),
        (f"target (<= {TARGET_SECONDS:.0f} s)", "target met" if met else "target NOT met"),
    ]  # fmt: skip
    width = max(len(name) for name, _ in rows_out)
    print()
    for name, value in rows_out:
        print(f"{name:<{width}}  {value}")

    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=2) + "\n")
    print(f"\nwrote {args.output}")
    print("target met" if met else "target NOT met", f"(median {median:.2f} s vs {TARGET_SECONDS:.0f} s)")
    if not all_identical:
        failed = [name for name, ok in extra_checks.items() if not ok]
        print(f"EXACTNESS MISMATCH in: {', '.join((['self_join_at_0.5'] if not identical else []) + failed)}", file=sys.stderr)
    if not identical:
        missing = sorted(set((p.first, p.second) for p in exhaustive) ^ set((p.first, p.second) for p in prefix))
        print(f"  at 0.5: {len(missing)} pairs differ, e.g. {missing[:5]}", file=sys.stderr)
    return 0 if all_identical else 1


if __name__ == "__main__":
    sys.exit(main())
