"""Recall beside writers (part of ``--only vectors``): an agent's recall must not wait for another
writer's transaction.

One store of ``--writers-size`` generated memories (default 10,000) with random unit vectors of the
real model, queried by one process (one ``MemoryStore``) with the default recall, counting itself
(``touch=True``, as ``memstore recall`` does), hybrid and lexical: first on the idle store, then
while ``--writers`` processes (default 4) add memories as fast as they can, each add its own write
transaction. Reported: p50 and p99 of the answer's latency, idle and beside the writers, in one run;
target on SQLite: p99 beside the writers <= 2 x idle. A recall reads one snapshot and takes no write
lock; its count is written after (at the store's next use of its engine, or its close): the run
checks that every recall was counted once the store closed.

A control, in the same run and for reference: the same recalls beside as many processes that only
burn CPU and never open the store. Where its p99 is the writers' or worse, what stretches the
writers' tail is the CPU the recall waits for, not the store. Logged too: the cores the writers and
the burners used while the recalls were timed, the recall process's CPU per recall in each case
(all its threads: a library thread spinning beside the recall shows there), and on Linux what the
slowest 1% of recalls spent their time on: the recalling thread's CPU, its wait in the run queue
for a core (/proc's schedstat), and the rest, asleep (a lock, the busy handler, a read from disk).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from memstore import MemoryStore
from scripts.data import add_random_vectors, generate_records

from .vectors import log, remove

# A writer: adds memories in a loop until its deadline file appears, then prints how many it added.
WRITER = """
import sys, pathlib, itertools
from memstore import MemoryStore
path, name, stop = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
with MemoryStore(path) as store:
    for n in itertools.count():
        if stop.exists():
            print(n)
            break
        store.add(f"writer {name} noted fact number {n} about the build queue", namespace="writers")
"""

# A burner: spins on the CPU until the same deadline file appears; never opens the store.
BURNER = """
import sys, pathlib, itertools
stop = pathlib.Path(sys.argv[3])
for n in itertools.count():
    if n % 100_000 == 0 and stop.exists():
        print(0)
        break
"""


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


SCHEDSTAT = Path("/proc/thread-self/schedstat")


def waited_for_a_core() -> float:
    """Seconds this thread has waited in the run queue so far (0 without Linux's schedstat)."""
    try:
        return int(SCHEDSTAT.read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def timed_recalls(store: MemoryStore, queries: list[str], mode: str, counted: list[int], cpu: list[float], spent: list[tuple]) -> list[float]:
    """Each query recalled (and counted: touch=True) in `mode`; the latencies. `counted` gets the
    number of memories each answer returned, `cpu` the process's CPU time (every thread) of each,
    `spent` (latency, this thread's CPU, its wait for a core) of each."""
    latencies = []
    for query in queries:
        t, c, own, queued = time.perf_counter(), time.process_time(), time.thread_time(), waited_for_a_core()
        answer = store.recall(query, 5, "ns0", mode=mode)
        latencies.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
        spent.append((latencies[-1], time.thread_time() - own, waited_for_a_core() - queued))
        counted.append(len(answer))
    return latencies


def slowest_share(spent: list[tuple]) -> dict:
    """The slowest 1% of recalls (at least 2), on average: latency, CPU, wait for a core, the rest."""
    slowest = sorted(spent)[-max(2, len(spent) // 100) :]
    wall, own, queued = (statistics.mean(each[i] for each in slowest) for i in range(3))
    return {"latency": wall, "cpu": own, "run_queue": queued, "rest": wall - own - queued}


def cpu_seconds(pid: int) -> float:
    """CPU time a child process has used so far (Linux's /proc; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def beside(store: MemoryStore, path: Path, work: Path, queries: list[str], count: int, program: str, counted: list[int]) -> dict:
    """The recalls, both modes, while `count` processes run `program` (WRITER or BURNER): their
    latencies, the recall process's CPU per recall, the cores the processes used meanwhile and what
    they printed (the writers: memories added)."""
    stop = work / "beside.stop"
    stop.unlink(missing_ok=True)
    children = [subprocess.Popen([sys.executable, "-c", program, str(path), str(n), str(stop)], cwd=work,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for n in range(count)]  # fmt: skip
    try:
        time.sleep(1.0)  # the processes running at full speed before anything is timed
        used, started = sum(cpu_seconds(child.pid) for child in children), time.perf_counter()
        cpu: dict[str, list[float]] = {mode: [] for mode in ("hybrid", "lexical")}
        spent: dict[str, list[tuple]] = {mode: [] for mode in cpu}
        latencies = {mode: timed_recalls(store, queries, mode, counted, cpu[mode], spent[mode]) for mode in cpu}
        cores = (sum(cpu_seconds(child.pid) for child in children) - used) / (time.perf_counter() - started)
    finally:
        stop.touch()
        printed = [int(child.communicate(timeout=120)[0].strip() or 0) for child in children]
    return {"latencies": latencies, "cpu": cpu, "spent": spent, "cores": cores, "printed": printed}


def bench_beside_writers(args, work: Path, queries: list[str]) -> dict:
    path = work / "beside-writers.db"
    records, _ = generate_records(args.writers_size, args.seed)
    for record in records:
        record["namespace"] = "ns0"
    with MemoryStore(str(path)) as store:
        store.add_many(records)
        add_random_vectors(store, [r["id"] for r in records], args.model_dir, args.seed)
    out: dict = {"size": args.writers_size, "writers": args.writers, "queries": len(queries), "modes": {}}
    with MemoryStore(str(path)) as store:
        for _ in range(2):  # the query model loaded, lean and then optimized (see Embeddings.query_vector)
            store.recall(queries[0], 5, "ns0", touch=False)
        counted: list[int] = []
        idle_cpu: dict[str, list[float]] = {mode: [] for mode in ("hybrid", "lexical")}
        idle_spent: dict[str, list[tuple]] = {mode: [] for mode in idle_cpu}
        idle = {mode: timed_recalls(store, queries, mode, counted, idle_cpu[mode], idle_spent[mode]) for mode in idle_cpu}
        writers = beside(store, path, work, queries, args.writers, WRITER, counted)
        burners = beside(store, path, work, queries, args.writers, BURNER, counted)
        busy, control, added = writers["latencies"], burners["latencies"], writers["printed"]
    with MemoryStore(str(path)) as store:
        recalled = sum(row["recall_count"] for row in store.iter_rows("ns0"))
    expected = sum(r.get("recall_count", 0) for r in records) + sum(counted)
    for mode in ("hybrid", "lexical"):
        out["modes"][mode] = {
            "idle_p50": statistics.median(idle[mode]), "idle_p99": percentile(idle[mode], 0.99),
            "busy_p50": statistics.median(busy[mode]), "busy_p99": percentile(busy[mode], 0.99),
            "burners_p50": statistics.median(control[mode]), "burners_p99": percentile(control[mode], 0.99),
            "cpu_per_recall": {"idle": statistics.mean(idle_cpu[mode]), "writers": statistics.mean(writers["cpu"][mode]),
                               "burners": statistics.mean(burners["cpu"][mode])},
        }  # fmt: skip
        figures = out["modes"][mode]
        log(f"  beside {args.writers} writers, {mode}: p50 {figures['busy_p50'] * 1e3:.1f} ms (idle {figures['idle_p50'] * 1e3:.1f}), "
            f"p99 {figures['busy_p99'] * 1e3:.1f} ms (idle {figures['idle_p99'] * 1e3:.1f}); beside {args.writers} CPU burners: "
            f"p50 {figures['burners_p50'] * 1e3:.1f} ms, p99 {figures['burners_p99'] * 1e3:.1f} ms")  # fmt: skip
        log("    the recall process's CPU per recall: " + ", ".join(f"{case} {seconds * 1e3:.1f} ms" for case, seconds in figures["cpu_per_recall"].items()))
        figures["slowest_1pct"] = {"idle": slowest_share(idle_spent[mode]), "writers": slowest_share(writers["spent"][mode]),
                                   "burners": slowest_share(burners["spent"][mode])}  # fmt: skip
        for case, share in figures["slowest_1pct"].items():
            log(f"    slowest 1%, {case}: {share['latency'] * 1e3:.1f} ms = CPU {share['cpu'] * 1e3:.1f} + waiting for a core "
                f"{share['run_queue'] * 1e3:.1f} + the rest (asleep) {share['rest'] * 1e3:.1f}")  # fmt: skip
    out["writers_cores"], out["burners_cores"] = writers["cores"], burners["cores"]
    log(f"  cores used while timed: the writers {writers['cores']:.2f}, the burners {burners['cores']:.2f} (of {os.cpu_count()})")
    out["added_by_writers"] = sum(added)
    out["every_recall_counted"] = recalled == expected
    log(f"  the writers added {sum(added):,} memories meanwhile; every recall counted: {out['every_recall_counted']}")
    remove(path)
    return out


def beside_writers_rows(figures: dict) -> list[dict]:
    rows = []
    for mode, timed in figures["modes"].items():
        ratio = timed["busy_p99"] / timed["idle_p99"]
        rows.append(dict(scenario=f"recall p99 beside {figures['writers']} writers vs idle ({mode})", size=figures["size"],
                         memstore=timed["busy_p99"], baseline=timed["idle_p99"], ratio=ratio, ratio_def="(busy/idle)",
                         target="<= 2", met=ratio <= 2))  # fmt: skip
        rows.append(dict(scenario=f"  recall p50 beside the writers vs idle ({mode})", size=figures["size"], memstore=timed["busy_p50"],
                         baseline=timed["idle_p50"], ratio=timed["busy_p50"] / timed["idle_p50"], ratio_def="(busy/idle)",
                         target="(for reference)", met=None))  # fmt: skip
        if "burners_p99" in timed:  # the control: as many processes burning CPU, none touching the store
            rows.append(dict(scenario=f"  recall p99 beside {figures['writers']} CPU burners vs idle ({mode})", size=figures["size"],
                             memstore=timed["burners_p99"], baseline=timed["idle_p99"], ratio=timed["burners_p99"] / timed["idle_p99"],
                             ratio_def="(busy/idle)", target="(for reference)", met=None))  # fmt: skip
    return rows

