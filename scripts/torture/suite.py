"""The torture suite's table and command line: which scenarios at which sizes, running them, the
table and the JSON (see the package's docstring)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import textwrap
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import scripts.torture
from scripts import REPO
from scripts.stores import sqlite3

from .crash import scenario_crash
from .disk_full import scenario_disk_full
from .faults import scenario_faults
from .lock import scenario_lock
from .writers import scenario_concurrent, scenario_killed_writers

DEFAULT_JSON = REPO / "bench-results" / "torture.json"

SCENARIOS: dict[str, tuple[Callable[..., dict], dict, dict]] = {
    # name: (function, full sizes, --quick sizes)
    "crash": (scenario_crash, {"memories": 50_000, "trials": 200}, {"memories": 2_000, "trials": 5}),
    "concurrent": (
        scenario_concurrent,
        {"memories": 120_000, "capacity": 100_000, "writers": 8, "seconds": 60},
        {"memories": 2_000, "capacity": 1_500, "writers": 3, "seconds": 3, "job_pause": 0.2},
    ),
    "killed-writers": (
        scenario_killed_writers,
        {"memories": 20_000, "capacity": 15_000, "writers": 8, "seconds": 30},
        {"memories": 2_000, "capacity": 1_500, "writers": 3, "seconds": 4, "job_pause": 0.2},
    ),
    "faults": (scenario_faults, {"memories": 50_000}, {"memories": 2_000}),
    "disk-full": (scenario_disk_full, {"memories": 20_000}, {"memories": 2_000}),
    "lock": (scenario_lock, {"trials": 20}, {"trials": 3}),
}

# The figures the table shows per scenario (everything is in the JSON).
TABLE_FIGURES = {
    "crash": ["before_state", "after_state", "neither_state", "killed", "exited_before_kill", "job_seconds", "failure_count"],
    "concurrent": ["acked", "writes_per_s", "locked_errors", "other_errors", "missing_ids", "acked_archived", "p50_ms",
                   "p99_ms", "max_ms", "job_runs", "job_errors", "job_p50_s", "job_live_before_min"],
    "killed-writers": ["kills", "kills_inside_add", "inflight_committed", "acked", "missing_ids", "partial_rows",
                       "content_mismatches", "locked_errors", "other_errors", "job_runs"],
    "faults": ["statements_in_job", "kinds", "faults_injected", "store_changed_after_failure", "failure_count"],
    "disk-full": ["method", "exit_code", "clear_error", "store_unchanged", "opens_and_check_ok", "retry_after_space_freed_ok",
                  "error_line"],
    "lock": ["trials", "wait_ms_min", "wait_ms_max", "failure_count", "messages"],
}  # fmt: skip


def format_table(results: list[dict]) -> str:
    rows = []
    for result in results:
        name = result["scenario"]
        if "error" in result:
            figures = f"error: {result['error']}"
        else:
            figures = ", ".join(f"{key}={result.get(key)}" for key in TABLE_FIGURES.get(name, []))
        rows.append((name, result.get("size", ""), figures, "PASS" if result.get("passed") else "FAIL", f"{result.get('wall_s', 0):.0f}s"))
    headers = ("scenario", "size", "figures", "result", "time")
    fig_width = 70
    widths = [max(len(headers[i]), *(len(r[i]) for r in rows)) for i in (0, 1)]
    lines = [f"{headers[0]:<{widths[0]}}  {headers[1]:<{widths[1]}}  {headers[2]:<{fig_width}}  {headers[3]}  {headers[4]}"]
    lines.append("-" * len(lines[0]))
    for name, size, figures, verdict, wall in rows:
        wrapped = textwrap.wrap(figures, fig_width) or [""]
        lines.append(f"{name:<{widths[0]}}  {size:<{widths[1]}}  {wrapped[0]:<{fig_width}}  {verdict:<6}  {wall}")
        for more in wrapped[1:]:
            lines.append(f"{'':<{widths[0]}}  {'':<{widths[1]}}  {more}")
    return "\n".join(lines)


def run_scenarios(names: list[str], quick: bool, workdir: str | None = None, log=print) -> list[dict]:
    results = []
    for name in names:
        fn, full, small = SCENARIOS[name]
        sizes = small if quick else full
        log(f"[torture] {name} {sizes} ...")
        start = time.monotonic()
        try:
            result = fn(workdir, **sizes)
        except Exception as exc:  # a scenario that cannot run is a failure, reported like the others
            import traceback

            result = {"passed": False, "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
        result = {"scenario": name, "sizes": sizes, **result, "wall_s": round(time.monotonic() - start, 1)}
        log(f"[torture] {name}: {'PASS' if result['passed'] else 'FAIL'} in {result['wall_s']} s")
        results.append(result)
    return results


def environment() -> dict[str, Any]:
    import sqlalchemy

    import memstore  # noqa: F401

    return {
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "sqlalchemy": sqlalchemy.__version__,
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "uid": os.geteuid() if hasattr(os, "geteuid") else None,
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="python -m scripts.torture", description=scripts.torture.__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--quick", action="store_true", help="small sizes (about a minute)")
    parser.add_argument("--only", nargs="+", choices=list(SCENARIOS), metavar="NAME",
                        help=f"run only these scenarios: {', '.join(SCENARIOS)}")  # fmt: skip
    parser.add_argument("--json", default=str(DEFAULT_JSON), help="where to write the figures (default: %(default)s)")
    parser.add_argument("--workdir", default=None, help="keep the stores and logs here (default: a temp dir, removed)")
    args = parser.parse_args(argv)

    names = args.only or list(SCENARIOS)
    started = datetime.now(timezone.utc)
    results = run_scenarios(names, args.quick, args.workdir, log=lambda msg: print(msg, file=sys.stderr, flush=True))
    passed = all(r["passed"] for r in results)
    print(format_table(results))
    print(f"\n{'ALL PASS' if passed else 'FAILED'} ({'quick' if args.quick else 'full'} sizes)")
    document = {
        "mode": "quick" if args.quick else "full",
        "started": started.isoformat(timespec="seconds"),
        "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "environment": environment(),
        "passed": passed,
        "scenarios": results,
    }
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(document, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    print(f"figures written to {out}")
    return 0 if passed else 1
