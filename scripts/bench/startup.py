"""`memstore add` start-up of commits, measured side by side.

    .venv/bin/python -m scripts.bench.startup REV [REV ...] [--runs 25] [--size 10000] [--instructions]

The bench (``--only ops``) measures one ratio per run: `memstore --db STORE add TEXT` over
`python -c "import sqlalchemy, click"`. On a shared 2-core machine that ratio moves by 0.1 from
one run to the next, more than any change to the start-up path, so two bench runs made at
different times cannot say whether a commit made the command slower. This script measures the
same command for each tree in one run, interleaved (one `add` per tree, then the baseline, and
again; the trees' order turns by one each round), so every tree sees the same machine:

* HEAD and each REV are checked out into temporary git worktrees side by side (removed
  afterwards): a tree measured where it lies (this checkout, its compiled files, its disk) was
  measured 0.05 faster than the same commit checked out beside the others;
* each tree gets its own store of `--size` generated memories (scripts/data.py's
  generator), written by that tree's own code so its schema is the one the tree expects, then
  checkpointed;
* each tree's package is compiled to bytecode first (`compileall`), as `pip install` does: with
  PYTHONDONTWRITEBYTECODE set (it is, on the machines this project is built on) an uncompiled
  checkout compiles every module it imports on every run, and a tree split into more modules then
  measures its compiler, not its start-up;
* every command runs this interpreter on the same entry-point script, with PYTHONPATH set to the
  tree (so the tree's package, not the installed one, is imported);
* it prints, for each tree, the median wall time and the median CPU time (user + system, of the
  child process: less disturbed by other load than wall time) of `add`, and both as ratios over the
  baseline's medians; and, from `python -X importtime -c "import memstore.cli"` run in the same
  rounds, the median time spent importing memstore's own modules and SQLAlchemy's (each module's
  own time, summed) and how many of memstore's modules the command line loads; then, for each
  REV, the median of HEAD's CPU time less REV's over the rounds (each round's two runs made
  moments apart);
* with `--instructions`, the instructions each tree's `add` (and the baseline) executes, counted
  by Valgrind's cachegrind (which must be installed), hash seed fixed: the same count on every
  run, however busy the machine, so a difference of a fraction of a percent is seen. Wall time
  follows instructions closely for a start-up like this one, which waits on nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scripts import REPO
from scripts.data import generate_records
from scripts.stores import finalize_file

from .common import MEMSTORE_BIN

BASELINE = [sys.executable, "-c", "import sqlalchemy, click"]
WRITE_STORE = "import json, sys; from memstore import MemoryStore; s = MemoryStore(sys.argv[1]); s.add_many(json.load(open(sys.argv[2]))); s.close()"


def checkout(rev: str, into: Path) -> Path:
    """A detached worktree of `rev`. A checkout keeps its migrations at the top level and the
    installed package finds them through the editable install, which points at this checkout; the
    link makes `memstore.migrations` the tree's own."""
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(into), rev], check=True, capture_output=True)
    package_migrations = into / "memstore" / "migrations"
    if not package_migrations.exists() and (into / "migrations").is_dir():
        package_migrations.symlink_to(into / "migrations", target_is_directory=True)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(into / "memstore")], check=True)
    return into


def tree_env(tree: Path) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(tree))


def timed(command: list[str], tree: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) of one run of `command`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, cwd=tree, env=tree_env(tree), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def import_times(tree: Path) -> dict[str, float]:
    """Milliseconds spent importing memstore's modules and SQLAlchemy's for the command line (each
    module's own time, summed), and how many of memstore's modules it loads."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", "import memstore.cli"], cwd=tree, env=tree_env(tree),
                          check=True, capture_output=True, text=True)  # fmt: skip
    spent = {"memstore": 0.0, "sqlalchemy": 0.0, "memstore modules": 0}
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "self [us]" not in line:
            own, _, name = line.removeprefix("import time:").split("|")
            package = name.strip().split(".")[0]
            if package in ("memstore", "sqlalchemy"):
                spent[package] += int(own) / 1000
                spent["memstore modules"] += package == "memstore"
    return spent


def instructions(command: list[str], tree: Path) -> int:
    """Instructions one run of `command` executes, counted by cachegrind (hash seed fixed)."""
    counted = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null", *command],
        cwd=tree, env=dict(tree_env(tree), PYTHONHASHSEED="0"), check=True, capture_output=True, text=True,
    )  # fmt: skip
    refs = next(line for line in counted.stderr.splitlines() if "I   refs:" in line)
    return int(refs.split(":")[1].replace(",", ""))


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.bench.startup", description=__doc__.splitlines()[0])
    parser.add_argument("revs", nargs="+", help="commits to compare HEAD with (HEAD itself: a second copy of it)")
    parser.add_argument("--runs", type=int, default=25, help="`add` runs per tree (default 25)")
    parser.add_argument("--size", type=int, default=10_000, help="memories in each store (default 10,000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--instructions", action="store_true", help="also count instructions with Valgrind")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="memstore-startup-") as scratch:
        work = Path(scratch)
        records = work / "records.json"
        records.write_text(json.dumps(generate_records(args.size, args.seed)[0]))
        trees: dict[str, Path] = {}
        try:
            for n, rev in enumerate(["HEAD", *args.revs]):
                # A commit named twice is checked out twice: `scripts.bench.startup HEAD` measures how
                # far apart two copies of the same code come out (the method's own noise).
                label = rev if rev not in trees else f"{rev} (copy {n})"
                trees[label] = checkout(rev, work / f"tree{n}")
            stores = {}
            for n, (label, tree) in enumerate(trees.items()):
                stores[label] = work / f"store{n}.db"
                subprocess.run([sys.executable, "-c", WRITE_STORE, str(stores[label]), str(records)], cwd=tree, env=tree_env(tree), check=True)
                finalize_file(stores[label])
            times: dict[str, list[tuple[float, float]]] = {label: [] for label in trees}
            imports: dict[str, list[dict[str, float]]] = {label: [] for label in trees}
            baseline: list[tuple[float, float]] = []
            labels = list(trees)
            for run in range(args.runs):
                for label in labels[run % len(labels):] + labels[: run % len(labels)]:
                    tree = trees[label]
                    add = [sys.executable, str(MEMSTORE_BIN), "--db", str(stores[label]), "add", f"User prefers dark mode, take {run}."]
                    times[label].append(timed(add, tree))
                    imports[label].append(import_times(tree))
                baseline.append(timed(BASELINE, work))
            counts: dict[str, int] = {}
            if args.instructions:
                counts["baseline"] = instructions(BASELINE, work)
                for label, tree in trees.items():
                    counts[label] = instructions([sys.executable, str(MEMSTORE_BIN), "--db", str(stores[label]), "add", "Counted."], tree)
        finally:
            for tree in trees.values():
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)], capture_output=True)

    base_wall = statistics.median(wall for wall, _ in baseline)
    base_cpu = statistics.median(cpu for _, cpu in baseline)
    print(f"`memstore add` on a {args.size:,}-memory store, {args.runs} runs per tree, interleaved")
    print(f"baseline `import sqlalchemy, click`: wall {base_wall * 1000:.0f} ms, CPU {base_cpu * 1000:.0f} ms")
    print("| tree | wall ms | wall / baseline | CPU ms | CPU / baseline | importing memstore ms (modules) | importing SQLAlchemy ms |")
    print("|---|---|---|---|---|---|---|")
    for label, samples in times.items():
        wall = statistics.median(w for w, _ in samples)
        cpu = statistics.median(c for _, c in samples)
        own, sqlalchemy = (statistics.median(each[key] for each in imports[label]) for key in ("memstore", "sqlalchemy"))
        modules = imports[label][-1]["memstore modules"]
        print(f"| {label} | {wall * 1000:.0f} | {wall / base_wall:.2f} | {cpu * 1000:.0f} | {cpu / base_cpu:.2f} "
              f"| {own:.1f} ({modules:.0f}) | {sqlalchemy:.1f} |")  # fmt: skip
    # Runs of one round are made moments apart, so their differences cancel most of the machine's
    # drift: the median of those paired differences is the steadier comparison.
    for label in labels[1:]:
        paired = sorted(head[1] - other[1] for head, other in zip(times["HEAD"], times[label]))
        quartiles = statistics.quantiles(paired, n=4)
        print(f"HEAD - {label}, CPU ms paired by round: median {statistics.median(paired) * 1000:+.1f} "
              f"(quartiles {quartiles[0] * 1000:+.1f} .. {quartiles[2] * 1000:+.1f})")  # fmt: skip
    if counts:
        print(f"instructions (cachegrind): baseline {counts['baseline'] / 1e6:,.1f} M")
        for label in labels:
            print(f"  {label}: {counts[label] / 1e6:,.1f} M, {counts[label] / counts['baseline']:.4f} x baseline, "
                  f"{100 * (counts[label] / counts['HEAD'] - 1):+.2f} % against HEAD")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
