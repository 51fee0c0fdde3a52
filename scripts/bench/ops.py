"""Operations, once per bench run (``--only ops``): the nightly job's report on live stores of
``--ops-sizes`` (through the API and ``memstore consolidate --json``), and ``memstore add TEXT`` as
a per-turn hook calls it against the interpreter importing SQLAlchemy and click."""

from __future__ import annotations

import compileall
import subprocess
import sys
import time
from pathlib import Path

import memstore
from memstore.store import MemoryStore
from scripts.data import generate_records
from scripts.stores import copy_store, finalize_file, remove_store, sqlite3

from .common import MEMSTORE_BIN, log, med, wall_time
from .consolidation import live_ids_of, new_writes


def consolidated_at_capacity(work: Path, size: int, seed: int) -> tuple[Path, list[dict], int]:
    """A generated store of `size` consolidated so that it is exactly full (capacity = the unpinned
    memories left after Stage 1), as an agent's store is after a few nightly runs."""
    records, _ = generate_records(size, seed)
    path = work / f"ops-{size}.db"
    remove_store(path)
    with MemoryStore(path) as store:
        store.add_many(records)
        store.consolidate(size)
    conn = sqlite3.connect(path)
    capacity = conn.execute("SELECT count(*) FROM memories WHERE pinned = 0").fetchone()[0]
    conn.close()
    return path, records, capacity


def bench_job_reports(work: Path, sizes: list[int], args) -> list[dict]:
    """The nightly run after 1,000 writes, through the API's defaults and through the CLI's --json,
    on a live store of each size. The sizes take turns, run by run: their ratio is the target, and on
    a shared machine timings taken minutes apart drift more than the ratio itself (one such run
    measured 3.38x where the sizes taking turns measured 1.47x)."""
    jobs = []
    for size in sizes:
        log(f"== operations: job report on a live store of {size:,} ...")
        state, records, capacity = consolidated_at_capacity(work, size, args.seed)
        with MemoryStore(state) as store:
            store.add_many(new_writes(records, live_ids_of(state), args.seed))
        finalize_file(state)
        jobs.append({"size": size, "capacity": capacity, "state": state, "run": work / f"ops-{size}-run.db",
                     "api": [], "cli_json": [], "reports": [], "lines": []})  # fmt: skip

    def api_once(job: dict) -> float:
        copy_store(job["state"], job["run"], sync=True)
        with MemoryStore(job["run"]) as store:
            start = time.perf_counter()
            job["reports"].append(store.consolidate(job["capacity"]))  # the API's defaults, as a scheduled job calls it
            return time.perf_counter() - start

    def cli_once(job: dict) -> float:
        copy_store(job["state"], job["run"], sync=True)
        command = [str(MEMSTORE_BIN), "--db", str(job["run"]), "consolidate", "--capacity", str(job["capacity"]), "--json"]
        start = time.perf_counter()
        done = subprocess.run(command, check=True, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        job["lines"].append(done.stdout)
        return seconds

    for n in range(max(args.repeats, 5)):
        for job in jobs:
            for key, once, label in (("api", api_once, "consolidate(capacity)"), ("cli_json", cli_once, "memstore consolidate --json")):
                job[key].append(once(job))
                log(f"  {job['size']:,}: {label} run {n + 1}: {job[key][-1]:.4f} s")
    out = []
    for job in jobs:
        report, line = job["reports"][-1], job["lines"][-1]
        out.append({
            "size": job["size"], "capacity": job["capacity"], "api": job["api"], "cli_json": job["cli_json"],
            "counts": {"live_before": report.live_before, "kept": report.kept_count, "archived": len(report.archived)},
            "json_line_bytes": len(line.encode()), "json_lines": line.count("\n"),
        })  # fmt: skip
        remove_store(job["run"])
        remove_store(job["state"])
    return out


def bench_cli_add(work: Path, args) -> dict:
    """`memstore add TEXT` against the interpreter importing only SQLAlchemy and click."""
    log("== operations: memstore add as a per-turn hook calls it ...")
    path = work / "ops-cli.db"
    remove_store(path)
    with MemoryStore(path) as store:
        store.add_many(generate_records(10_000, args.seed)[0])
    finalize_file(path)
    # Start-up as an installed package has it: `pip install` compiles to bytecode, and a checkout
    # run with PYTHONDONTWRITEBYTECODE would otherwise compile every module it imports on every run.
    compileall.compile_dir(Path(memstore.__file__).parent, quiet=1)
    baseline = [sys.executable, "-c", "import sqlalchemy, click"]
    memstore_times, baseline_times = [], []
    for n in range(args.cli_runs):
        memstore_times.append(wall_time([str(MEMSTORE_BIN), "--db", str(path), "add", f"User prefers dark mode, take {n}."]))
        baseline_times.append(wall_time(baseline))
    log(f"  memstore add median {med(memstore_times):.3f} s, import sqlalchemy, click median {med(baseline_times):.3f} s")
    remove_store(path)
    return {"memstore_add": memstore_times, "import_sqlalchemy_click": baseline_times}


def run_operations(args, work: Path) -> dict:
    return {"job_report": bench_job_reports(work, sorted(args.ops_sizes), args), "cli_add": bench_cli_add(work, args)}


def operations_rows(ops: dict) -> list[dict]:
    rows = []
    runs = ops["job_report"]
    for run in runs:
        rows.append(dict(scenario=f"job after 1000 writes, live {run['counts']['live_before'] // 1000:,}k: API", size=run["size"],
                         memstore=med(run["api"]), baseline=None, ratio=None, ratio_def="", target="(see growth)", met=None))
        rows.append(dict(scenario=f"  consolidate --json ({run['json_line_bytes']:,} bytes, {run['json_lines']} line)", size=run["size"],
                         memstore=med(run["cli_json"]), baseline=None, ratio=None, ratio_def="", target="(see growth)", met=None))
    if len(runs) >= 2:
        small, large = runs[0], runs[-1]
        for key, label in (("api", "API"), ("cli_json", "--json")):
            ratio = med(large[key]) / med(small[key])
            rows.append(dict(scenario=f"job growth {small['size'] // 1000:,}k -> {large['size'] // 1000:,}k ({label})", size=large["size"],
                             memstore=med(large[key]), baseline=med(small[key]), ratio=ratio, ratio_def="big/small",
                             target="<= 2", met=ratio <= 2))
    add = ops["cli_add"]
    ms, base = med(add["memstore_add"]), med(add["import_sqlalchemy_click"])
    rows.append(dict(scenario="memstore add TEXT vs import sqlalchemy, click", size=10_000, memstore=ms, baseline=base,
                     ratio=ms / base, ratio_def="ms/base", target="<= 1.3", met=ms / base <= 1.3))
    return rows  # fmt: skip
