"""memstore torture suite: crashes, concurrency, killed writers, injected faults, a full disk, lock hygiene.

    .venv/bin/python -m scripts.torture                 # every scenario at full size (~10-15 min)
    .venv/bin/python -m scripts.torture --quick         # small sizes (~1 min)
    .venv/bin/python -m scripts.torture --only crash faults --json bench-results/torture.json

Each scenario is a function `scenario_<name>(workdir=None, **sizes) -> dict` returning its figures and a
boolean `passed`; `tests/test_torture.py` imports the same functions and runs them at small sizes.
The suite prints a table (scenario, size, figures, PASS/FAIL), writes every figure as JSON (default
bench-results/torture.json) and exits 1 when any scenario fails.

Everything runs on real SQLite files in a temporary directory. Processes that are killed are real
separate processes (`subprocess`), killed with SIGKILL: `python -m scripts.torture _job|_writer|_jobloop`
(children.py) is what those processes run.

Scenarios (the numbers are those of the issue):
  crash           1. kill -9 of the consolidation job at random instants
  concurrent      2. writer processes adding every ~10 ms while the job runs over and over
  killed-writers  3. writers SIGKILLed at random instants, mid-write
  faults          4. an exception at the k-th statement of the job, for every k until it completes
  disk-full       5. the job on a full disk (a small tmpfs, or PRAGMA max_page_count where mounting fails)
  lock            8. a write that cannot get the lock within the busy timeout

The modules: crash.py, writers.py (concurrent and killed-writers), faults.py, disk_full.py (with
capped_cli.py, the CLI on a capped file), lock.py; children.py (the child processes), common.py;
suite.py (the table and the command line). The stores come from scripts/data.py and are read from
outside memstore by scripts/stores.py.
"""

