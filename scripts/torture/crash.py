"""1. Crash during consolidation: kill -9 of the job at random instants."""

from __future__ import annotations

import random
import signal
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

from scripts.data import build_store
from scripts.stores import copy_store, integrity, snapshot, store_check, table_counts

from .common import NAMESPACES, rounded, scenario_dir, start_child


def run_job_child(path: Path, capacity: int, kill_after: float | None) -> dict[str, Any]:
    """Start the job in its own process; SIGKILL it `kill_after` seconds after it starts the job."""
    proc = start_child("_job", "--db", str(path), "--capacity", str(capacity), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        started = time.monotonic()
        if line.strip() != "ready":
            proc.wait(timeout=60)
            raise RuntimeError(f"job child did not start: {proc.stderr.read()[-2000:]}")
        killed = False
        if kill_after is not None:
            time.sleep(max(0.0, started + kill_after - time.monotonic()))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                killed = True
        job_seconds = None
        if not killed:
            # The job's own duration: from `ready` to `done` (printed once consolidate() has committed
            # and returned), not counting the interpreter's exit.
            line = proc.stdout.readline()
            job_seconds = time.monotonic() - started if line.startswith("done") else None
        out, err = proc.communicate(timeout=600)
        return {"seconds": job_seconds, "killed": killed, "returncode": proc.returncode,
                "done": job_seconds is not None or "done" in out, "stderr": err[-2000:]}  # fmt: skip
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def scenario_crash(workdir=None, *, memories: int = 50_000, trials: int = 200, seed: int = 1) -> dict[str, Any]:
    """kill -9 of the job at random instants: each trial must end exactly in the before- or the after-state."""
    with scenario_dir(workdir, "crash") as work:
        pristine = work / "pristine.db"
        built = build_store(pristine, memories, fact_ratio=0.5, namespaces=NAMESPACES, prior=memories // 5, seed=seed)
        capacity = max(1, int(memories * 0.15))  # per namespace: Stage 2 evicts as well
        before = snapshot(pristine)
        total = built["live"] + built["archived"]

        # The after-state and the job's duration, from uncrashed runs on copies.
        durations, after, calibration_ok = [], None, True
        for i in range(3):
            trial = copy_store(pristine, work / "calibrate.db")
            result = run_job_child(trial, capacity, None)
            calibration_ok &= result["returncode"] == 0 and result["seconds"] is not None
            durations.append(result["seconds"] or 0.0)
            state = snapshot(trial)
            after = after or state["timeless"]
            calibration_ok &= state["timeless"] == after and state["full"] != before["full"]
        job_seconds = statistics.median(durations)
        after_counts = table_counts(work / "calibrate.db")

        rng = random.Random(seed)
        outcomes = {"before": 0, "after": 0, "neither": 0}
        killed = exited = 0
        failures: list[str] = []
        delays = []
        for i in range(trials):
            # Stratified over [0, 1.1 x duration]: very early instants, every part of the job, the
            # commit, and the last ones after the process is gone.
            delay = (i + rng.random()) / trials * job_seconds * 1.1
            delays.append(delay)
            trial = copy_store(pristine, work / "trial.db")
            result = run_job_child(trial, capacity, delay)
            killed += result["killed"]
            exited += not result["killed"]
            if not result["killed"] and result["returncode"] != 0:
                failures.append(f"trial {i}: job exited {result['returncode']}: {result['stderr'][-300:]}")
            state = snapshot(trial)
            if state["full"] == before["full"]:
                outcome = "before"
            elif state["timeless"] == after:
                outcome = "after"
            else:
                outcome = "neither"
                failures.append(f"trial {i} (kill at {delay:.3f} s): neither before nor after: {state['full']}")
            outcomes[outcome] += 1
            checked = integrity(trial)
            if checked != ["ok"]:
                failures.append(f"trial {i}: integrity_check {checked[:3]}")
            counts = table_counts(trial)
            if counts["live"] + counts["archived"] != total:
                failures.append(f"trial {i}: live {counts['live']} + archived {counts['archived']} != {total}")
            if counts["both"]:
                failures.append(f"trial {i}: {counts['both']} ids both live and archived")
            ok, findings = store_check(trial)
            if not ok:
                failures.append(f"trial {i}: check() failed: {findings}")
        # Enough trials must land on both sides of the commit, or the kill instants missed the job.
        mix_ok = trials < 20 or (outcomes["before"] > 0 and outcomes["after"] > 0)
        return {
            "size": f"{built['live']:,} live + {built['archived']:,} archived, {trials} kills",
            "memories": built["live"],
            "archived_before": built["archived"],
            "live_after_job": after_counts["live"],
            "archived_after_job": after_counts["archived"],
            "trials": trials,
            "job_seconds": rounded(job_seconds, 3),
            "kill_delay_s_min": rounded(min(delays, default=0), 4),
            "kill_delay_s_max": rounded(max(delays, default=0), 4),
            "killed": killed,
            "exited_before_kill": exited,
            "before_state": outcomes["before"],
            "after_state": outcomes["after"],
            "neither_state": outcomes["neither"],
            "calibration_ok": calibration_ok,
            "failures": failures[:20],
            "failure_count": len(failures),
            "passed": calibration_ok and not failures and outcomes["neither"] == 0 and mix_ok,
        }
