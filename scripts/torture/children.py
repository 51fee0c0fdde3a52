"""The torture suite's child processes (run as `python -m scripts.torture _job|_writer|_jobloop ...`),
starting them, and reading what they logged.

A writer logs JSON Lines appended with one os.write per line (a SIGKILL cannot tear a line, and the
kernel keeps what was written even though the process dies).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from scripts.data import NOW_MS, YEAR_MS, spelling
from scripts.stores import stored_rows

from .common import percentile, rounded, start_child, wait_for_file


def child_job(argv: list[str]) -> int:
    """One consolidation run; prints `ready` right before the job starts, `done <run>` after it."""
    parser = argparse.ArgumentParser(prog="python -m scripts.torture _job")
    parser.add_argument("--db", required=True)
    parser.add_argument("--capacity", type=int, required=True)
    args = parser.parse_args(argv)
    from memstore import MemoryStore

    store = MemoryStore(args.db, create=False)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    report = store.consolidate(args.capacity, namespace=None)
    sys.stdout.write(f"done {report.run_id}\n")
    sys.stdout.flush()
    store.close()
    return 0


def child_writer(argv: list[str]) -> int:
    """An agent: `add` a memory every `interval` seconds, logging each id only after add() returned.

    The log is JSON Lines appended with one os.write per line (a SIGKILL cannot tear a line, and the
    kernel keeps what was written even though the process dies): {"b": seq, ...} before an add,
    {"a": id, "s": seq, "ms": latency} after it returned, {"e": seq, "type", "msg", "ms"} if it raised.
    """
    parser = argparse.ArgumentParser(prog="python -m scripts.torture _writer")
    parser.add_argument("--db", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--wid", required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--interval", type=float, default=0.01)
    parser.add_argument("--seconds", type=float, default=0.0, help="0: until killed")
    parser.add_argument("--go", required=True, help="start when this file exists")
    parser.add_argument("--fact-count", type=int, default=1000)
    parser.add_argument("--explicit-ids", action="store_true", help="choose each id (else memstore generates it)")
    args = parser.parse_args(argv)
    from memstore import MemoryStore

    rng = random.Random(args.seed)
    fd = os.open(args.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def emit(entry: dict) -> None:
        os.write(fd, (json.dumps(entry, ensure_ascii=False) + "\n").encode())

    store = MemoryStore(args.db, create=False)
    Path(args.log + ".ready").touch()
    wait_for_file(Path(args.go))
    end = time.monotonic() + args.seconds if args.seconds else float("inf")
    seq = 0
    while time.monotonic() < end:
        if rng.random() < 0.5:
            text = spelling(rng, args.fact_count)  # a spelling of a fact the store already holds
        else:
            text = f"agent {args.wid} observed event {seq} ({rng.random():.6f})"
        importance = rng.randint(1, 5)
        # Dated like the store's memories (agents also record older events), so the job archives
        # acknowledged writes too: as outranked duplicates and as evictions.
        timestamp = NOW_MS - rng.randrange(YEAR_MS) if rng.random() < 0.5 else None
        chosen = f"w{args.wid}-{seq}" if args.explicit_ids else None
        emit({"b": seq, "id": chosen, "t": text, "imp": importance})
        start = time.perf_counter()
        try:
            row = store.add(text, id=chosen, importance=importance, timestamp=timestamp)
        except Exception as exc:
            ms = (time.perf_counter() - start) * 1000
            emit({"e": seq, "type": type(exc).__name__, "msg": str(exc)[:300], "ms": ms})
        else:
            ms = (time.perf_counter() - start) * 1000
            emit({"a": row["id"], "s": seq, "ms": ms})
        seq += 1
        if args.interval:
            time.sleep(args.interval)
    store.close()
    os.close(fd)
    return 0


def child_jobloop(argv: list[str]) -> int:
    """The consolidation job over and over (every namespace) until the stop file appears."""
    parser = argparse.ArgumentParser(prog="python -m scripts.torture _jobloop")
    parser.add_argument("--db", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--capacity", type=int, required=True)
    parser.add_argument("--pause", type=float, default=0.0)
    parser.add_argument("--go", required=True)
    parser.add_argument("--stop", required=True)
    args = parser.parse_args(argv)
    from memstore import MemoryStore

    fd = os.open(args.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    store = MemoryStore(args.db, create=False)
    Path(args.log + ".ready").touch()
    wait_for_file(Path(args.go))
    while not Path(args.stop).exists():
        start = time.perf_counter()
        try:
            report = store.consolidate(args.capacity, namespace=None)
            entry = {"run": report.run_id, "s": time.perf_counter() - start, "live_before": report.live_before,
                     "kept": report.kept_count, "duplicates": report.duplicates, "evicted": report.evicted}  # fmt: skip
        except Exception as exc:
            entry = {"e": type(exc).__name__, "msg": str(exc)[:300], "s": time.perf_counter() - start}
        os.write(fd, (json.dumps(entry) + "\n").encode())
        if args.pause:
            time.sleep(args.pause)
    store.close()
    return 0


CHILDREN = {"_job": child_job, "_writer": child_writer, "_jobloop": child_jobloop}


def read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    entries = []
    for line in path.read_text(encoding="utf-8").split("\n"):
        if line.strip():
            try:
                entries.append(json.loads(line))
            except json.JSONDecodeError:
                pass  # cannot happen with one os.write per line; a torn line would just be skipped
    return entries


def analyse_writer_logs(logs: list[Path]) -> dict[str, Any]:
    """Acknowledged ids (with what was asked to be stored), errors, latencies, and adds in flight at exit."""
    acked: dict[str, tuple[str, int]] = {}
    inflight: list[dict] = []
    errors: list[dict] = []
    latencies: list[float] = []
    attempts = 0
    for log in logs:
        begun: dict[int, dict] = {}
        for entry in read_jsonl(log):
            if "b" in entry:
                begun[entry["b"]] = entry
                attempts += 1
            elif "a" in entry:
                asked = begun.pop(entry["s"])
                acked[entry["a"]] = (asked["t"], asked["imp"])
                latencies.append(entry["ms"])
                if asked["id"] is not None and asked["id"] != entry["a"]:
                    errors.append({"type": "WrongId", "msg": f"asked for {asked['id']!r}, told {entry['a']!r}"})
            elif "e" in entry:
                begun.pop(entry["e"], None)
                errors.append(entry)
                latencies.append(entry["ms"])
        inflight += begun.values()  # begun, never answered: the writer died inside add()
    return {"acked": acked, "inflight": inflight, "errors": errors, "latencies": latencies, "attempts": attempts}


def verify_acked(path: Path, acked: dict[str, tuple[str, int]], inflight: list[dict]) -> dict[str, Any]:
    rows = stored_rows(path)
    missing = [i for i in acked if i not in rows]
    mismatched = [i for i, (t, imp) in acked.items() if i in rows and rows[i][1:] != (t, imp)]
    archived = sum(1 for i in acked if i in rows and rows[i][0] == "archived")
    inflight_present = [e for e in inflight if e["id"] is not None and e["id"] in rows]
    inflight_mismatched = [e["id"] for e in inflight_present if rows[e["id"]][1:] != (e["t"], e["imp"])]
    return {
        "missing": missing,
        "mismatched": mismatched + inflight_mismatched,
        "acked_archived": archived,
        "inflight_committed": len(inflight_present),
    }


def spawn_writer(work: Path, db: Path, wid: str, seed: int, *, interval: float, seconds: float,
                  fact_count: int, explicit_ids: bool) -> tuple[subprocess.Popen, Path]:  # fmt: skip
    log = work / f"writer-{wid}.jsonl"
    args = ["--db", str(db), "--log", str(log), "--wid", wid, "--seed", str(seed), "--interval", str(interval),
            "--seconds", str(seconds), "--go", str(work / "go"), "--fact-count", str(fact_count)]  # fmt: skip
    if explicit_ids:
        args.append("--explicit-ids")
    err = open(work / f"writer-{wid}.stderr", "w")
    proc = start_child("_writer", *args, stdout=subprocess.DEVNULL, stderr=err)
    err.close()
    return proc, log


def spawn_jobloop(work: Path, db: Path, capacity: int, pause: float) -> tuple[subprocess.Popen, Path]:
    log = work / "jobloop.jsonl"
    err = open(work / "jobloop.stderr", "w")
    proc = start_child("_jobloop", "--db", str(db), "--log", str(log), "--capacity", str(capacity), "--pause", str(pause),
                       "--go", str(work / "go"), "--stop", str(work / "stop"), stdout=subprocess.DEVNULL, stderr=err)  # fmt: skip
    err.close()
    return proc, log


def job_figures(log: Path) -> dict[str, Any]:
    entries = read_jsonl(log)
    runs = [e for e in entries if "run" in e]
    errors = [e for e in entries if "e" in e]
    return {
        "job_runs": len(runs),
        "job_errors": len(errors),
        "job_error_samples": [f"{e['e']}: {e['msg']}" for e in errors[:3]],
        "job_p50_s": rounded(percentile([e["s"] for e in runs], 50), 3),
        "job_max_s": rounded(max((e["s"] for e in runs), default=None), 3),
        "job_live_before_min": min((e["live_before"] for e in runs), default=None),
        "job_archived_total": sum(e["duplicates"] + e["evicted"] for e in runs),
    }


def kill_all(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
    for proc in procs:
        proc.wait()
