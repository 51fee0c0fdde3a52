"""2. Concurrent agents: writer processes adding every ~10 ms while the job runs over and over; and
3. writers SIGKILLed at random instants, mid-write."""

from __future__ import annotations

import random
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from scripts.data import build_store
from scripts.stores import integrity, partial_rows, store_check, table_counts

from .children import analyse_writer_logs, job_figures, kill_all, spawn_jobloop, spawn_writer, verify_acked
from .common import is_locked_error, percentile, rounded, scenario_dir, wait_for


def scenario_concurrent(
    workdir=None,
    *,
    memories: int = 120_000,
    capacity: int = 100_000,
    writers: int = 8,
    seconds: float = 60.0,
    interval: float = 0.01,
    job_pause: float = 0.5,
    seed: int = 2,
) -> dict[str, Any]:
    """Writers add every ~10 ms while the job runs over and over with a capacity below the store's size."""
    with scenario_dir(workdir, "concurrent") as work:
        db = work / "store.db"
        fact_count = max(1, memories * 4)  # mostly distinct facts: the live set stays near `capacity`
        built = build_store(db, memories, fact_ratio=4, seed=seed)
        procs: list[subprocess.Popen] = []
        try:
            job, job_log = spawn_jobloop(work, db, capacity, job_pause)
            procs.append(job)
            logs = []
            for w in range(writers):
                proc, log = spawn_writer(work, db, str(w), seed * 1000 + w, interval=interval, seconds=seconds,
                                          fact_count=fact_count, explicit_ids=False)  # fmt: skip
                procs.append(proc)
                logs.append(log)
            wait_for([Path(f"{log}.ready") for log in [job_log, *logs]], 120, procs)
            (work / "go").touch()
            started = time.monotonic()
            for proc in procs[1:]:
                proc.wait(timeout=seconds + 300)
            elapsed = time.monotonic() - started
            (work / "stop").touch()
            job.wait(timeout=300)
        finally:
            kill_all(procs)
        writer_codes = [p.returncode for p in procs[1:]]
        found = analyse_writer_logs(logs)
        locked = [e for e in found["errors"] if is_locked_error(e["type"], e["msg"])]
        other = [e for e in found["errors"] if not is_locked_error(e["type"], e["msg"])]
        verified = verify_acked(db, found["acked"], found["inflight"])
        checked = integrity(db)
        ok, findings = store_check(db)
        jobs = job_figures(job_log)
        counts = table_counts(db)
        lat = found["latencies"]
        figures = {
            "size": f"{built['live']:,} memories, {writers} writers x {seconds:g} s, job loop (pause {job_pause:g} s), capacity {capacity:,}",
            "memories": built["live"],
            "capacity": capacity,
            "writers": writers,
            "seconds": rounded(elapsed, 1),
            "interval_ms": interval * 1000,
            "job_pause_s": job_pause,
            "adds_attempted": found["attempts"],
            "acked": len(found["acked"]),
            "writes_per_s": rounded(len(found["acked"]) / elapsed if elapsed else 0, 1),
            "locked_errors": len(locked),
            "other_errors": len(other),
            "error_samples": [f"{e['type']}: {e['msg']}" for e in (locked + other)[:3]],
            "missing_ids": len(verified["missing"]),
            "missing_samples": verified["missing"][:5],
            "content_mismatches": len(verified["mismatched"]),
            "acked_archived": verified["acked_archived"],
            "p50_ms": rounded(percentile(lat, 50)),
            "p99_ms": rounded(percentile(lat, 99)),
            "max_ms": rounded(max(lat, default=None)),
            **jobs,
            "live_end": counts["live"],
            "archived_end": counts["archived"],
            "writer_exit_codes_ok": all(code == 0 for code in writer_codes),
            "integrity": checked[:3],
            "check_ok": ok,
            "check_findings": findings,
        }
        figures["passed"] = (
            figures["acked"] > 0
            and not locked
            and not other
            and not verified["missing"]
            and not verified["mismatched"]
            and jobs["job_runs"] >= 1
            and jobs["job_errors"] == 0
            and figures["writer_exit_codes_ok"]
            and checked == ["ok"]
            and ok
        )
        return figures


def scenario_killed_writers(
    workdir=None,
    *,
    memories: int = 20_000,
    capacity: int = 15_000,
    writers: int = 8,
    seconds: float = 30.0,
    interval: float = 0.002,
    kill_every: tuple[float, float] = (0.1, 0.4),
    job_pause: float = 0.5,
    seed: int = 3,
) -> dict[str, Any]:
    """Writers SIGKILLed at random instants (and replaced) while the job runs: no acknowledged id lost, no
    partial row. Writers choose their ids, so a row whose add() was cut short can be checked too."""
    with scenario_dir(workdir, "killed-writers") as work:
        db = work / "store.db"
        fact_count = max(1, memories // 2)
        built = build_store(db, memories, fact_ratio=0.5, seed=seed)
        rng = random.Random(seed)
        procs: list[subprocess.Popen] = []
        logs: list[Path] = []
        live: list[tuple[subprocess.Popen, Path]] = []
        spawned = 0

        def spawn() -> None:
            nonlocal spawned
            proc, log = spawn_writer(work, db, str(spawned), seed * 1000 + spawned, interval=interval, seconds=0,
                                      fact_count=fact_count, explicit_ids=True)  # fmt: skip
            spawned += 1
            procs.append(proc)
            logs.append(log)
            live.append((proc, log))

        kills = 0
        try:
            job, job_log = spawn_jobloop(work, db, capacity, job_pause)
            procs.append(job)
            for _ in range(writers):
                spawn()
            wait_for([Path(f"{log}.ready") for log in [job_log, *logs]], 120, procs)
            (work / "go").touch()
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                time.sleep(rng.uniform(*kill_every))
                # Only writers that are writing (past their start-up) are worth killing.
                ready = [(p, log) for p, log in live if Path(f"{log}.ready").exists()]
                if not ready:
                    continue
                victim = rng.choice(ready)
                victim[0].send_signal(signal.SIGKILL)
                victim[0].wait()
                kills += 1
                live.remove(victim)
                spawn()
            # The survivors die the same way.
            for proc, _ in live:
                proc.send_signal(signal.SIGKILL)
                kills += 1
            for proc, _ in live:
                proc.wait()
            (work / "stop").touch()
            job.wait(timeout=300)
        finally:
            kill_all(procs)
        found = analyse_writer_logs(logs)
        locked = [e for e in found["errors"] if is_locked_error(e["type"], e["msg"])]
        other = [e for e in found["errors"] if not is_locked_error(e["type"], e["msg"])]
        verified = verify_acked(db, found["acked"], found["inflight"])
        checked = integrity(db)
        partial = partial_rows(db)
        ok, findings = store_check(db)
        counts = table_counts(db)
        jobs = job_figures(job_log)
        figures = {
            "size": f"{built['live']:,} memories, {writers} writers, {kills} SIGKILLs in {seconds:g} s",
            "memories": built["live"],
            "writers": writers,
            "seconds": seconds,
            "kills": kills,
            "kills_inside_add": len(found["inflight"]),
            "inflight_committed": verified["inflight_committed"],
            "inflight_absent": len(found["inflight"]) - verified["inflight_committed"],
            "adds_attempted": found["attempts"],
            "acked": len(found["acked"]),
            "acked_archived": verified["acked_archived"],
            "missing_ids": len(verified["missing"]),
            "missing_samples": verified["missing"][:5],
            "content_mismatches": len(verified["mismatched"]),
            "partial_rows": len(partial),
            "partial_samples": partial[:5],
            "locked_errors": len(locked),
            "other_errors": len(other),
            "error_samples": [f"{e['type']}: {e['msg']}" for e in (locked + other)[:3]],
            "both_live_and_archived": counts["both"],
            **jobs,
            "integrity": checked[:3],
            "check_ok": ok,
            "check_findings": findings,
        }
        figures["passed"] = (
            kills > 0
            and figures["acked"] > 0
            and not verified["missing"]
            and not verified["mismatched"]
            and not partial
            and not locked
            and not other
            and counts["both"] == 0
            and jobs["job_errors"] == 0
            and checked == ["ok"]
            and ok
        )
        return figures
