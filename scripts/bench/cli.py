"""The bench's command line: its options, the run (each part writing the JSON as it ends), the
table, and the exit status (see the package's docstring)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import scripts.bench
from scripts import REPO
from scripts.data import make_queries
from scripts.stores import sqlite3

from .common import RESULTS, log, machine_info, source_fingerprint
from .copy import run_copy
from .core import run_size
from .importers import importer_failures, run_importers
from .langgraph import langgraph_failures, run_langgraph
from .ops import run_operations
from .table import all_rows, print_table
from .vectors import run_vectors
from .web import run_web


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.bench", description=scripts.bench.__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--quick", action="store_true", help="10,000 only")
    parser.add_argument("--repeats", type=int, default=3, help="repeats of fast scenarios (median reported)")
    parser.add_argument("--slow", type=float, default=10.0, help="a scenario whose run exceeds this many seconds runs once")
    parser.add_argument("--adds", type=int, default=300, help="single adds per run (default 300)")
    parser.add_argument("--queries", type=int, default=200, help="recall queries per mix (default 200)")
    parser.add_argument("--exhaustive-sample", type=int, default=4000)
    parser.add_argument("--near-dup-max", type=int, default=100_000, help="largest size for the near-duplicate join")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workdir", type=Path, default=None, help="where store files go (default: a temp dir)")
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--only", choices=["all", "core", "ops", "vectors", "sync", "beside-writers", "copy", "web", "importers", "langgraph"],
                        default="all",
                        help="core: the per-size scenarios; ops: the job report and CLI scenarios; vectors: vector search, "
                             "embeddings sync and recall beside writers (sync, beside-writers: those two alone); "
                             "copy: memstore copy between backends (copy.py); web: memstore web's pages (web.py); "
                             "importers: import --from every format vs memstore's own JSONL (importers.py); "
                             "langgraph: MemstoreStore put and batch vs LangGraph's SqliteStore (langgraph.py)")
    parser.add_argument("--copy-size", type=int, default=100_000, help="memories of the copy scenario's store")
    parser.add_argument("--web-sizes", type=int, nargs="+", default=[100_000, 1_000_000], help="memories of the web scenario's stores")
    parser.add_argument("--web-namespaces", type=int, default=1_000, help="namespaces of the web scenario's stores")
    parser.add_argument("--web-runs", type=int, default=50, help="requests of each web page (and of each through the real server) per size")
    parser.add_argument("--web-cache", type=Path, default=None, help="keep the web scenario's built stores here and reuse them")
    parser.add_argument("--importers-size", type=int, default=100_000, help="memories of each importer scenario's source")
    parser.add_argument("--langgraph-puts", type=int, default=400, help="puts timed on each LangGraph store (batches: this / 20)")
    parser.add_argument("--model-dir", type=Path, default=REPO / ".model-cache" / "minilm", help="the offline model directory")
    parser.add_argument("--process-runs", type=int, default=7, help="runs of each recall process (median reported)")
    parser.add_argument("--vectors-size", type=int, default=100_000, help="memories of the process and PostgreSQL vector scenarios")
    parser.add_argument("--vectors-big", type=int, default=1_000_000, help="memories of the big long-lived vector scenario")
    parser.add_argument("--writers-size", type=int, default=10_000, help="memories of the store recalled beside writers")
    parser.add_argument("--writers", type=int, default=4, help="processes adding memories while recall is timed")
    parser.add_argument("--sync-size", type=int, default=2_000, help="conversation turns of the embeddings sync scenario (at most the slice's 1,946)")
    parser.add_argument("--ops-sizes", type=int, nargs="+", default=[50_000, 500_000], help="live stores of the job-report scenario")
    parser.add_argument("--cli-runs", type=int, default=21, help="wall-time runs of memstore add and of its baseline")
    parser.add_argument("--no-targets", action="store_true",
                        help="print a missed speed target but do not fail on it (a run at sizes too small to judge speed, "
                             "as the tests run the bench); the correctness checks still fail the run")
    args = parser.parse_args(argv)
    sizes = [] if args.only in ("ops", "vectors", "sync", "beside-writers", "copy", "web", "importers", "langgraph") else [10_000] if args.quick else sorted(args.sizes)

    started = time.perf_counter()
    results: list[dict] = []
    args.output.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="memstore-bench-", dir=args.workdir) as tmp:
        tmp = str(Path(tmp).resolve())  # absolute: child processes run from the repository's root
        operations: dict | None = None
        semantic: dict | None = None
        copy: dict | None = None
        web: dict | None = None
        importers: dict | None = None
        langgraph: dict | None = None

        def write_results(step: str) -> None:
            doc = {
                "benchmark": "memstore vs raw sqlite3",
                "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "command": " ".join([Path(sys.executable).name, "-m", "scripts.bench", *sys.argv[1:]]),
                "machine": machine_info(),
                "sqlite_version": sqlite3.sqlite_version,
                "library_source": source_fingerprint(),
                "config": {"sizes": sizes, "repeats": args.repeats, "slow": args.slow, "adds": args.adds,
                           "queries": args.queries, "seed": args.seed, "exhaustive_sample": args.exhaustive_sample,
                           "ops_sizes": args.ops_sizes, "cli_runs": args.cli_runs},
                "elapsed_seconds": round(time.perf_counter() - started, 1),
                "table": all_rows(results, operations, semantic, copy, web, importers, langgraph),
                "results": results,
                "operations": operations,
                "semantic": semantic,
                "copy": copy,
                "web": web,
                "importers": importers,
                "langgraph": langgraph,
            }  # fmt: skip
            args.output.write_text(json.dumps(doc, indent=2, default=str) + "\n")
            log(f"{step} done; wrote {args.output}")

        for n in sizes:
            results.append(run_size(n, args, Path(tmp)))
            write_results(f"size {n:,}")
        if args.only in ("all", "ops"):
            operations = run_operations(args, Path(tmp))
            write_results("operations")
        if args.only in ("all", "vectors", "sync", "beside-writers"):
            queries = make_queries(args.seed, args.queries, zipf=False)
            semantic = {"vectors": run_vectors(args, Path(tmp), queries, parts=("sync",) if args.only == "sync" else
                                               ("beside_writers",) if args.only == "beside-writers" else None)}  # fmt: skip
            write_results("semantic")
        if args.only in ("all", "copy"):
            copy = run_copy(args, Path(tmp))
            write_results("copy")
        if args.only in ("all", "web"):
            web = run_web(args, Path(tmp), make_queries(args.seed, args.queries, zipf=True))
            write_results("web")
        if args.only in ("all", "importers"):
            importers = run_importers(args, Path(tmp))
            write_results("importers")
        if args.only in ("all", "langgraph"):
            langgraph = run_langgraph(args, Path(tmp))
            write_results("langgraph")
    print()
    search = (semantic or {}).get("vectors", {}).get("search")
    print(f"machine: {os.cpu_count()} CPUs, {platform.system()} {platform.machine()}, Python {platform.python_version()} "
          f"({sys.executable}), SQLite {sqlite3.sqlite_version}" + (f", vector search: {search}" if search else ""))  # fmt: skip
    print_table(all_rows(results, operations, semantic, copy, web, importers, langgraph))
    ok = True
    for r in results:
        for part, checks in (("consolidation", ("full_same_result_as_raw", "incremental_same_result_as_full",
                                                 "floor_same_result_as_incremental")),
                             ("live_store", ("incremental_same_result_as_full", "floor_same_result_as_incremental"))):
            for check in checks:
                if part in r and not r[part][check]:
                    ok = False
                    print(f"CHECK FAILED at {r['size']:,}: {part} {check}", file=sys.stderr)
        if r.get("near_dup") and not r["near_dup"]["sample_identical"]:
            ok = False
            print(f"CHECK FAILED at {r['size']:,}: near-dup join differs from exhaustive", file=sys.stderr)
    if importers:
        for failure in importer_failures(importers):
            ok = False
            print(f"CHECK FAILED: {failure}", file=sys.stderr)
    if langgraph:
        for failure in langgraph_failures(langgraph):
            ok = ok and args.no_targets
            print(f"TARGET MISSED{' (not judged: --no-targets)' if args.no_targets else ''}: {failure}", file=sys.stderr)
    print(f"\nwrote {args.output}")
    return 0 if ok else 1

