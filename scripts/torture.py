#!/usr/bin/env python
"""memstore torture suite: crashes, concurrency, killed writers, injected faults, a full disk, lock hygiene.

    .venv/bin/python scripts/torture.py                 # every scenario at full size (~10-15 min)
    .venv/bin/python scripts/torture.py --quick         # small sizes (~1 min)
    .venv/bin/python scripts/torture.py --only crash faults --json bench-results/torture.json

Each scenario is a function `scenario_<name>(workdir=None, **sizes) -> dict` returning its figures and a
boolean `passed`; `tests/test_torture.py` imports this file and runs the same functions at small sizes.
The script prints a table (scenario, size, figures, PASS/FAIL), writes every figure as JSON (default
bench-results/torture.json) and exits 1 when any scenario fails.

Everything runs on real SQLite files in a temporary directory. Processes that are killed are real
separate processes (`subprocess`), killed with SIGKILL. Internal child modes of this script
(`_job`, `_writer`, `_jobloop`) are what those processes run.

Scenarios (the numbers are those of the issue):
  crash           1. kill -9 of the consolidation job at random instants
  concurrent      2. writer processes adding every ~10 ms while the job runs over and over
  killed-writers  3. writers SIGKILLed at random instants, mid-write
  faults          4. an exception at the k-th statement of the job, for every k until it completes
  disk-full       5. the job on a full disk (a small tmpfs, or PRAGMA max_page_count where mounting fails)
  lock            8. a write that cannot get the lock within the busy timeout
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).resolve()
sys.path.insert(0, str(SCRIPT.parent.parent))
from memstore.db import sqlite_driver  # noqa: E402

# The SQLite library memstore opens stores with here: two copies of SQLite in one process must
# never open the same file (closing one's descriptor drops the other's POSIX locks).
sqlite3 = sqlite_driver()
ROOT = SCRIPT.parent.parent
PYTHON = sys.executable
DEFAULT_JSON = ROOT / "bench-results" / "torture.json"

# Synthetic data is dated relative to a fixed instant, so every store built from a seed is the same.
NOW_MS = 1_750_000_000_000
YEAR_MS = 365 * 24 * 3600 * 1000
NAMESPACES = ("default", "agent-b")
# Columns whose values are the wall clock of the run that wrote them: two runs of the same job on
# the same input differ only there.
TIME_COLUMNS = {"memory_archive": {"archived_at"}, "consolidation_runs": {"started_at", "finished_at"}}
# Every table the job writes, with the key that orders a dump of it.
TABLES = {
    "memories": "id",
    "memory_archive": "id",
    "consolidation_runs": "id",
    "memory_merges": "run_id, survivor_id",
}


# ---------------------------------------------------------------------------------------------
# Synthetic stores
# ---------------------------------------------------------------------------------------------

_SUBJECTS = ("user", "the agent", "project atlas", "the build", "our team", "the customer", "café owner", "the CI runner")
_VERBS = ("prefers", "uses", "deploys", "avoids", "mentions", "schedules", "reviews", "asks about")
_OBJECTS = ("dark mode", "tabs over spaces", "python 3 12", "friday releases", "long lunches", "unit tests",
            "the blue theme", "résumé templates")  # fmt: skip

# Ways people write the same fact. All but the last collide under normalize_key; the last (" ?")
# keeps a trailing space after the removal, so it is a near-duplicate that is *not* a duplicate.
_VARIANTS: tuple[Callable[[str], str], ...] = (
    lambda s: s,
    lambda s: s.upper(),
    lambda s: s[0].upper() + s[1:] + ".",
    lambda s: s + "!",
    lambda s: "  " + s + "\t",
    lambda s: s.replace(" ", "   "),
    lambda s: '"' + s + '"',
    lambda s: s + " ?",
)


def fact_text(i: int) -> str:
    """The i-th distinct fact (no character of it is removed by normalize_key)."""
    return f"{_SUBJECTS[i % 8]} {_VERBS[(i // 8) % 8]} {_OBJECTS[(i // 64) % 8]} (note {i})"


def variant_text(rng: random.Random, fact_count: int) -> str:
    return rng.choice(_VARIANTS)(fact_text(rng.randrange(fact_count)))


def make_records(n: int, rng: random.Random, fact_count: int, namespaces: tuple[str, ...], prefix: str) -> Iterator[dict]:
    for i in range(n):
        recall_count = rng.choice((0, 0, 0, 0, 1, 2, 5))
        created = NOW_MS - rng.randrange(YEAR_MS)
        yield {
            "id": f"{prefix}{i:07d}",
            "namespace": rng.choice(namespaces),
            "text": variant_text(rng, fact_count),
            "timestamp": NOW_MS - rng.randrange(YEAR_MS),
            "importance": rng.randint(1, 5),
            "pinned": rng.random() < 0.002,
            "created_at": created,
            "recall_count": recall_count,
            "last_recalled_at": created + rng.randrange(YEAR_MS) if recall_count else None,
            "fact_key": f"fact-{i % 97}" if rng.random() < 0.05 else None,
            "meta": {"source": "torture", "i": i} if rng.random() < 0.1 else None,
        }


def _add_in_chunks(store, records: Iterator[dict], chunk: int = 10_000) -> None:
    batch: list[dict] = []
    for record in records:
        batch.append(record)
        if len(batch) == chunk:
            store.add_many(batch)
            batch = []
    if batch:
        store.add_many(batch)


def build_store(
    path: Path,
    memories: int,
    *,
    fact_ratio: float = 0.5,
    namespaces: tuple[str, ...] = ("default",),
    prior: int = 0,
    seed: int = 0,
) -> dict[str, int]:
    """A store with `memories` live rows drawn from `memories * fact_ratio` facts in many spellings.

    With `prior`, `prior` older rows go in first and one consolidation run archives part of them, so the
    store already has an archive, a run and merges (the job must leave those alone). The file is
    checkpointed and closed: it can be copied on its own.
    """
    from memstore import MemoryStore

    rng = random.Random(seed)
    fact_count = max(1, int(memories * fact_ratio))
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    with MemoryStore(path) as store:
        if prior:
            _add_in_chunks(store, make_records(prior, rng, fact_count, namespaces, "p"))
            store.consolidate(max(1, prior * 2 // 5 // len(namespaces)), namespace=None)
        _add_in_chunks(store, make_records(memories, rng, fact_count, namespaces, "m"))
    finalize_file(path)
    return table_counts(path)


def finalize_file(path: Path) -> None:
    """Fold the WAL into the database file, so the file alone is the whole store."""
    conn = sqlite3.connect(path)
    try:
        busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy:
            raise RuntimeError(f"{path}: checkpoint blocked by another connection")
    finally:
        conn.close()
    wal = Path(f"{path}-wal")
    if wal.exists() and wal.stat().st_size:
        raise RuntimeError(f"{wal} still holds {wal.stat().st_size} bytes after the checkpoint")


def copy_store(source: Path, destination: Path) -> Path:
    """Copy a finalized store (no WAL content) to a fresh file."""
    wal = Path(f"{source}-wal")
    if wal.exists() and wal.stat().st_size:
        raise RuntimeError(f"{source} has WAL content: copying the file alone would lose it")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{destination}{suffix}").unlink(missing_ok=True)
    shutil.copy(source, destination)  # with its mode: the copy is as private as the store
    return destination


# ---------------------------------------------------------------------------------------------
# Looking at a store from outside (plain sqlite3, never through memstore)
# ---------------------------------------------------------------------------------------------


def _connect(path: Path) -> sqlite3.Connection:
    # Read-write, so a WAL left by a killed process can be recovered; only reads are issued.
    return sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=60, isolation_level=None)


def snapshot(path: Path) -> dict[str, dict[str, tuple[int, str]]]:
    """Per table (row count, sha256 of every row in key order), twice: every column ("full"), and
    without the wall-clock columns of TIME_COLUMNS ("timeless")."""
    conn = _connect(path)
    try:
        full: dict[str, tuple[int, str]] = {}
        timeless: dict[str, tuple[int, str]] = {}
        conn.execute("BEGIN")  # one consistent read of all four tables
        for table, key in TABLES.items():
            columns = [row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')]
            keep = [i for i, name in enumerate(columns) if name not in TIME_COLUMNS.get(table, ())]
            quoted = ", ".join(f'"{name}"' for name in columns)
            h_full, h_timeless, count = hashlib.sha256(), hashlib.sha256(), 0
            for row in conn.execute(f'SELECT {quoted} FROM "{table}" ORDER BY {key}'):
                h_full.update(repr(row).encode())
                h_timeless.update(repr(tuple(row[i] for i in keep)).encode())
                count += 1
            full[table] = (count, h_full.hexdigest())
            timeless[table] = (count, h_timeless.hexdigest())
        conn.execute("COMMIT")
        return {"full": full, "timeless": timeless}
    finally:
        conn.close()


def table_counts(path: Path) -> dict[str, int]:
    conn = _connect(path)
    try:
        return {
            "live": conn.execute("SELECT count(*) FROM memories").fetchone()[0],
            "archived": conn.execute("SELECT count(*) FROM memory_archive").fetchone()[0],
            "both": conn.execute("SELECT count(*) FROM memories WHERE id IN (SELECT id FROM memory_archive)").fetchone()[0],
            "runs": conn.execute("SELECT count(*) FROM consolidation_runs").fetchone()[0],
        }
    finally:
        conn.close()


def integrity(path: Path) -> list[str]:
    conn = _connect(path)
    try:
        return [row[0] for row in conn.execute("PRAGMA integrity_check")]
    finally:
        conn.close()


def write_lock_free(path: Path) -> bool:
    """True when nobody holds the write lock (BEGIN IMMEDIATE succeeds at once)."""
    conn = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("ROLLBACK")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        conn.close()


def store_check(path: Path) -> tuple[bool, list[str]]:
    """Open the store through memstore (as a user would) and run `check()`."""
    from memstore import MemoryStore

    try:
        with MemoryStore(path, create=False) as store:
            report = store.check()
            return report.ok, [f"{f.check}: {f.detail}" for f in report.findings if not f.fixed][:10]
    except Exception as exc:  # the store failing to open is a finding, not a crash of the suite
        return False, [f"open failed: {type(exc).__name__}: {exc}"]


def partial_rows(path: Path) -> list[str]:
    """Rows that are not whole: a NULL in a column the models declare NOT NULL, a stored norm_key that
    is not normalize_key(text), an importance out of 1..5, a reason the archive does not know."""
    from memstore.models import ARCHIVE_REASONS, ArchivedMemory, Memory
    from memstore.normalize import normalize_key

    problems: list[str] = []
    conn = _connect(path)
    try:
        conn.execute("BEGIN")
        for model in (Memory, ArchivedMemory):
            table = model.__table__
            names = [c.name for c in table.columns]
            required = [i for i, c in enumerate(table.columns) if not c.nullable]
            text_at, key_at, imp_at = names.index("text"), names.index("norm_key"), names.index("importance")
            reason_at = names.index("reason") if "reason" in names else None
            quoted = ", ".join(f'"{n}"' for n in names)
            for row in conn.execute(f'SELECT {quoted} FROM "{table.name}"'):
                nulls = [names[i] for i in required if row[i] is None]
                if nulls:
                    problems.append(f"{table.name} {row[0]!r}: NULL in {nulls}")
                elif row[key_at] != normalize_key(row[text_at]):
                    problems.append(f"{table.name} {row[0]!r}: norm_key {row[key_at]!r} is not the key of its text")
                elif not 1 <= row[imp_at] <= 5:
                    problems.append(f"{table.name} {row[0]!r}: importance {row[imp_at]!r}")
                elif reason_at is not None and row[reason_at] not in ARCHIVE_REASONS:
                    problems.append(f"{table.name} {row[0]!r}: reason {row[reason_at]!r}")
        conn.execute("COMMIT")
    finally:
        conn.close()
    return problems


def stored_rows(path: Path) -> dict[str, tuple[str, str, int]]:
    """id -> (where, text, importance) for every live and archived row."""
    conn = _connect(path)
    try:
        found: dict[str, tuple[str, str, int]] = {}
        conn.execute("BEGIN")
        for table, where in (("memories", "live"), ("memory_archive", "archived")):
            for row_id, text, importance in conn.execute(f"SELECT id, text, importance FROM {table}"):
                found[row_id] = (where, text, importance)
        conn.execute("COMMIT")
        return found
    finally:
        conn.close()


# ---------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(-(-q * len(ordered) // 100))))
    return ordered[rank - 1]


def _r(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)


@contextmanager
def _workdir(workdir: str | os.PathLike[str] | None, name: str) -> Iterator[Path]:
    """The scenario's directory: a subdirectory of `workdir`, or a temporary one removed afterwards."""
    if workdir is not None:
        path = Path(workdir) / name
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
        yield path
        return
    path = Path(tempfile.mkdtemp(prefix=f"memstore-torture-{name}-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _child(mode: str, *args: str) -> list[str]:
    return [PYTHON, str(SCRIPT), mode, *args]


def _memstore_cli() -> list[str]:
    """The installed `memstore` command next to this interpreter, else the same entry point via -c."""
    script = Path(PYTHON).parent / "memstore"
    if script.exists():
        return [str(script)]
    return [PYTHON, "-c", "import sys; from memstore.cli import main; sys.argv[0] = 'memstore'; main()"]


def _wait_for(paths: list[Path], timeout: float, procs: list[subprocess.Popen] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not all(p.exists() for p in paths):
        for proc in procs or []:
            if proc.poll() is not None:
                raise RuntimeError(f"child {proc.args} exited early with code {proc.returncode}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"children not ready after {timeout} s: {[str(p) for p in paths if not p.exists()]}")
        time.sleep(0.01)


def _wait_for_file(path: Path) -> None:
    while not path.exists():
        time.sleep(0.002)


def _is_locked_error(kind: str, message: str) -> bool:
    text = message.lower()
    return kind == "StoreBusyError" or "database is locked" in text or "database is busy" in text


# ---------------------------------------------------------------------------------------------
# Child processes (run as `python scripts/torture.py _job|_writer|_jobloop ...`)
# ---------------------------------------------------------------------------------------------


def child_job(argv: list[str]) -> int:
    """One consolidation run; prints `ready` right before the job starts, `done <run>` after it."""
    parser = argparse.ArgumentParser(prog="torture.py _job")
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
    parser = argparse.ArgumentParser(prog="torture.py _writer")
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
    _wait_for_file(Path(args.go))
    end = time.monotonic() + args.seconds if args.seconds else float("inf")
    seq = 0
    while time.monotonic() < end:
        if rng.random() < 0.5:
            text = variant_text(rng, args.fact_count)  # a spelling of a fact the store already holds
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
    parser = argparse.ArgumentParser(prog="torture.py _jobloop")
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
    _wait_for_file(Path(args.go))
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


# ---------------------------------------------------------------------------------------------
# 1. Crash during consolidation
# ---------------------------------------------------------------------------------------------


def _run_job_child(path: Path, capacity: int, kill_after: float | None) -> dict[str, Any]:
    """Start the job in its own process; SIGKILL it `kill_after` seconds after it starts the job."""
    proc = subprocess.Popen(
        _child("_job", "--db", str(path), "--capacity", str(capacity)),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
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
    with _workdir(workdir, "crash") as work:
        pristine = work / "pristine.db"
        built = build_store(pristine, memories, fact_ratio=0.5, namespaces=NAMESPACES, prior=memories // 5, seed=seed)
        capacity = max(1, int(memories * 0.15))  # per namespace: Stage 2 evicts as well
        before = snapshot(pristine)
        total = built["live"] + built["archived"]

        # The after-state and the job's duration, from uncrashed runs on copies.
        durations, after, calibration_ok = [], None, True
        for i in range(3):
            trial = copy_store(pristine, work / "calibrate.db")
            result = _run_job_child(trial, capacity, None)
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
            result = _run_job_child(trial, capacity, delay)
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
            "job_seconds": _r(job_seconds, 3),
            "kill_delay_s_min": _r(min(delays, default=0), 4),
            "kill_delay_s_max": _r(max(delays, default=0), 4),
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


# ---------------------------------------------------------------------------------------------
# 2. Concurrent agents, and 3. writers killed mid-write
# ---------------------------------------------------------------------------------------------


def _spawn_writer(work: Path, db: Path, wid: str, seed: int, *, interval: float, seconds: float,
                  fact_count: int, explicit_ids: bool) -> tuple[subprocess.Popen, Path]:  # fmt: skip
    log = work / f"writer-{wid}.jsonl"
    args = ["--db", str(db), "--log", str(log), "--wid", wid, "--seed", str(seed), "--interval", str(interval),
            "--seconds", str(seconds), "--go", str(work / "go"), "--fact-count", str(fact_count)]  # fmt: skip
    if explicit_ids:
        args.append("--explicit-ids")
    err = open(work / f"writer-{wid}.stderr", "w")
    proc = subprocess.Popen(_child("_writer", *args), stdout=subprocess.DEVNULL, stderr=err)
    err.close()
    return proc, log


def _spawn_jobloop(work: Path, db: Path, capacity: int, pause: float) -> tuple[subprocess.Popen, Path]:
    log = work / "jobloop.jsonl"
    err = open(work / "jobloop.stderr", "w")
    proc = subprocess.Popen(
        _child("_jobloop", "--db", str(db), "--log", str(log), "--capacity", str(capacity), "--pause", str(pause),
               "--go", str(work / "go"), "--stop", str(work / "stop")),
        stdout=subprocess.DEVNULL, stderr=err,
    )  # fmt: skip
    err.close()
    return proc, log


def _job_figures(log: Path) -> dict[str, Any]:
    entries = read_jsonl(log)
    runs = [e for e in entries if "run" in e]
    errors = [e for e in entries if "e" in e]
    return {
        "job_runs": len(runs),
        "job_errors": len(errors),
        "job_error_samples": [f"{e['e']}: {e['msg']}" for e in errors[:3]],
        "job_p50_s": _r(percentile([e["s"] for e in runs], 50), 3),
        "job_max_s": _r(max((e["s"] for e in runs), default=None), 3),
        "job_live_before_min": min((e["live_before"] for e in runs), default=None),
        "job_archived_total": sum(e["duplicates"] + e["evicted"] for e in runs),
    }


def _kill_all(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
    for proc in procs:
        proc.wait()


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
    with _workdir(workdir, "concurrent") as work:
        db = work / "store.db"
        fact_count = max(1, memories * 4)  # mostly distinct facts: the live set stays near `capacity`
        built = build_store(db, memories, fact_ratio=4, seed=seed)
        procs: list[subprocess.Popen] = []
        try:
            job, job_log = _spawn_jobloop(work, db, capacity, job_pause)
            procs.append(job)
            logs = []
            for w in range(writers):
                proc, log = _spawn_writer(work, db, str(w), seed * 1000 + w, interval=interval, seconds=seconds,
                                          fact_count=fact_count, explicit_ids=False)  # fmt: skip
                procs.append(proc)
                logs.append(log)
            _wait_for([Path(f"{log}.ready") for log in [job_log, *logs]], 120, procs)
            (work / "go").touch()
            started = time.monotonic()
            for proc in procs[1:]:
                proc.wait(timeout=seconds + 300)
            elapsed = time.monotonic() - started
            (work / "stop").touch()
            job.wait(timeout=300)
        finally:
            _kill_all(procs)
        writer_codes = [p.returncode for p in procs[1:]]
        found = analyse_writer_logs(logs)
        locked = [e for e in found["errors"] if _is_locked_error(e["type"], e["msg"])]
        other = [e for e in found["errors"] if not _is_locked_error(e["type"], e["msg"])]
        verified = verify_acked(db, found["acked"], found["inflight"])
        checked = integrity(db)
        ok, findings = store_check(db)
        jobs = _job_figures(job_log)
        counts = table_counts(db)
        lat = found["latencies"]
        figures = {
            "size": f"{built['live']:,} memories, {writers} writers x {seconds:g} s, job loop (pause {job_pause:g} s), capacity {capacity:,}",
            "memories": built["live"],
            "capacity": capacity,
            "writers": writers,
            "seconds": _r(elapsed, 1),
            "interval_ms": interval * 1000,
            "job_pause_s": job_pause,
            "adds_attempted": found["attempts"],
            "acked": len(found["acked"]),
            "writes_per_s": _r(len(found["acked"]) / elapsed if elapsed else 0, 1),
            "locked_errors": len(locked),
            "other_errors": len(other),
            "error_samples": [f"{e['type']}: {e['msg']}" for e in (locked + other)[:3]],
            "missing_ids": len(verified["missing"]),
            "missing_samples": verified["missing"][:5],
            "content_mismatches": len(verified["mismatched"]),
            "acked_archived": verified["acked_archived"],
            "p50_ms": _r(percentile(lat, 50)),
            "p99_ms": _r(percentile(lat, 99)),
            "max_ms": _r(max(lat, default=None)),
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
    with _workdir(workdir, "killed-writers") as work:
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
            proc, log = _spawn_writer(work, db, str(spawned), seed * 1000 + spawned, interval=interval, seconds=0,
                                      fact_count=fact_count, explicit_ids=True)  # fmt: skip
            spawned += 1
            procs.append(proc)
            logs.append(log)
            live.append((proc, log))

        kills = 0
        try:
            job, job_log = _spawn_jobloop(work, db, capacity, job_pause)
            procs.append(job)
            for _ in range(writers):
                spawn()
            _wait_for([Path(f"{log}.ready") for log in [job_log, *logs]], 120, procs)
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
            _kill_all(procs)
        found = analyse_writer_logs(logs)
        locked = [e for e in found["errors"] if _is_locked_error(e["type"], e["msg"])]
        other = [e for e in found["errors"] if not _is_locked_error(e["type"], e["msg"])]
        verified = verify_acked(db, found["acked"], found["inflight"])
        checked = integrity(db)
        partial = partial_rows(db)
        ok, findings = store_check(db)
        counts = table_counts(db)
        jobs = _job_figures(job_log)
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


# ---------------------------------------------------------------------------------------------
# 4. Fault injection
# ---------------------------------------------------------------------------------------------


class InjectedFault(RuntimeError):
    """Raised by the torture suite at the k-th statement of the job."""


# What is raised at the k-th statement: a plain Python exception (a bug in the job's own code), a
# driver error as SQLite reports an I/O failure, and one as SQLite reports a lock (memstore turns
# that one into StoreBusyError).
FAULT_KINDS: dict[str, Callable[[str], BaseException]] = {
    "python": lambda where: InjectedFault(f"injected fault {where}"),
    "sqlite-io": lambda where: sqlite3.OperationalError(f"disk I/O error (injected fault {where})"),
    "sqlite-busy": lambda where: sqlite3.OperationalError(f"database is locked (injected fault {where})"),
}


def _caused_by_injection(exc: BaseException | None) -> bool:
    seen = set()
    while exc is not None and id(exc) not in seen:
        if "injected fault" in str(exc):
            return True
        seen.add(id(exc))
        exc = getattr(exc, "orig", None) or exc.__cause__ or exc.__context__
    return False


def scenario_faults(
    workdir=None, *, memories: int = 50_000, kinds: tuple[str, ...] = tuple(FAULT_KINDS), seed: int = 4, max_k: int = 100_000
) -> dict[str, Any]:
    """An exception at the k-th statement the job executes, for k = 1, 2, ... until a run completes, once
    per kind of fault: after every failure the store is exactly as before (rows, archive, runs, merges),
    no connection is checked out, the write lock is free, and the store opens and passes check()."""
    from sqlalchemy import event

    from memstore import MemoryStore

    with _workdir(workdir, "faults") as work:
        pristine = work / "pristine.db"
        built = build_store(pristine, memories, fact_ratio=0.5, namespaces=NAMESPACES, prior=memories // 5, seed=seed)
        capacity = max(1, int(memories * 0.15))
        before = snapshot(pristine)

        # The expected after-state, and what the job executes, from a run without faults.
        statements: list[str] = []
        trial = copy_store(pristine, work / "trial.db")
        with MemoryStore(trial, create=False) as store:
            record = lambda conn, cursor, statement, *rest: statements.append(" ".join(statement.split())[:70])  # noqa: E731
            event.listen(store.engine, "before_cursor_execute", record)
            store.consolidate(capacity, namespace=None)
            event.remove(store.engine, "before_cursor_execute", record)
        after = snapshot(trial)["timeless"]

        failures: list[str] = []
        foreign_errors: list[str] = []
        raised: dict[str, set[str]] = {kind: set() for kind in kinds}
        completed_at: dict[str, int | None] = {}
        injected = 0
        for kind in kinds:
            completed_at[kind] = None
            for k in range(1, max_k + 1):
                trial = copy_store(pristine, work / "trial.db")
                store = MemoryStore(trial, create=False)
                executed = 0

                def fault(conn, cursor, statement, parameters, context, executemany, k=k, kind=kind):
                    nonlocal executed
                    executed += 1
                    if executed == k:
                        raise FAULT_KINDS[kind](f"at statement {k}: {' '.join(statement.split())[:60]}")

                event.listen(store.engine, "before_cursor_execute", fault)
                completed = False
                try:
                    store.consolidate(capacity, namespace=None)
                    completed = True
                except Exception as exc:
                    raised[kind].add(f"{type(exc).__module__}.{type(exc).__name__}")
                    if not _caused_by_injection(exc):
                        foreign_errors.append(f"{kind} k={k}: {type(exc).__name__}: {exc}"[:300])
                finally:
                    event.remove(store.engine, "before_cursor_execute", fault)
                checked_out = store.engine.pool.checkedout()
                lock_free = write_lock_free(trial)
                store.close()
                where = f"{kind} k={k}"
                if completed:
                    completed_at[kind] = k
                    if snapshot(trial)["timeless"] != after:
                        failures.append(f"{where}: the completed run differs from the expected after-state")
                    break
                injected += 1
                if checked_out:
                    failures.append(f"{where}: {checked_out} connection(s) still checked out after the failure")
                if not lock_free:
                    failures.append(f"{where}: the write lock is still held after the failure")
                if snapshot(trial)["full"] != before["full"]:
                    failures.append(f"{where}: the store changed after a failure at statement {k}")
                checked = integrity(trial)
                if checked != ["ok"]:
                    failures.append(f"{where}: integrity_check {checked[:3]}")
                ok, findings = store_check(trial)
                if not ok:
                    failures.append(f"{where}: check() failed after reopening: {findings}")
        every_k = all(at == len(statements) + 1 for at in completed_at.values())
        return {
            "size": f"{built['live']:,} live + {built['archived']:,} archived, every k of {len(statements)} statements x {len(kinds)} kinds",
            "memories": built["live"],
            "statements_in_job": len(statements),
            "kinds": list(kinds),
            "k_tried": max((at or max_k) for at in completed_at.values()) if completed_at else 0,
            "faults_injected": injected,
            "completed_at_k": completed_at,
            "raised_to_caller": {kind: sorted(names) for kind, names in raised.items()},
            "store_changed_after_failure": sum("changed" in f for f in failures),
            "statement_heads": sorted({" ".join(s.split()[:3]) for s in statements}),
            "foreign_errors": foreign_errors[:5],
            "failures": failures[:20],
            "failure_count": len(failures),
            "passed": bool(kinds) and every_k and not failures and not foreign_errors,
        }


# ---------------------------------------------------------------------------------------------
# 5. Disk full during the job
# ---------------------------------------------------------------------------------------------

_MAX_PAGE_COUNT_CHILD = """
import sys
from sqlalchemy import event
from sqlalchemy.engine import Engine
limit = int(sys.argv.pop(1))
def cap(dbapi_connection, record):
    dbapi_connection.execute(f"PRAGMA max_page_count = {limit}")
event.listen(Engine, "connect", cap)
from memstore.cli import main
sys.argv[0] = "memstore"
main()
"""


def _try_mount(directory: Path, size: int) -> str | None:
    """Mount a tmpfs of `size` bytes; None on success, else why not."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "not root"
    try:
        result = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(directory)],
                                capture_output=True, text=True, timeout=30)  # fmt: skip
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None if result.returncode == 0 else (result.stderr.strip() or f"mount exited {result.returncode}")


def _unmount(directory: Path) -> None:
    if subprocess.run(["umount", str(directory)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", str(directory)], capture_output=True)


def scenario_disk_full(workdir=None, *, memories: int = 20_000, method: str = "auto", seed: int = 5) -> dict[str, Any]:
    """The job through the CLI on a disk that fills up halfway through it: exit 1 with a one-line error,
    the store exactly as before, opens and passes check(); once space is freed the job succeeds.

    method: "tmpfs" (a tmpfs sized to the store plus half the job's growth), "max_page_count" (the job's
    connections may not grow the file past the store plus half the job's growth), or "auto" (tmpfs if
    it can be mounted, else max_page_count).
    """
    from memstore import MemoryStore

    if method not in ("auto", "tmpfs", "max_page_count"):
        raise ValueError(f"unknown method {method!r}")
    with _workdir(workdir, "disk-full") as work:
        pristine = work / "pristine.db"
        built = build_store(pristine, memories, fact_ratio=0.5, namespaces=NAMESPACES, prior=memories // 5, seed=seed)
        capacity = max(1, int(memories * 0.15))
        before = snapshot(pristine)
        db_bytes = pristine.stat().st_size

        # How much the job grows the store: its WAL before the checkpoint, and the pages it adds.
        reference = copy_store(pristine, work / "reference.db")
        with MemoryStore(reference, create=False) as store:
            with store.engine.connect() as conn:
                pages_before = conn.exec_driver_sql("PRAGMA page_count").scalar()
                page_size = conn.exec_driver_sql("PRAGMA page_size").scalar()
            store.consolidate(capacity, namespace=None)
            wal_growth = Path(f"{reference}-wal").stat().st_size
            with store.engine.connect() as conn:
                page_growth = conn.exec_driver_sql("PRAGMA page_count").scalar() - pages_before
        after = snapshot(reference)["timeless"]

        cli = [*_memstore_cli()]
        job_args = ["consolidate", "--capacity", str(capacity), "--all-namespaces"]
        mount_error = None
        mounted = None
        used = method
        figures: dict[str, Any] = {}
        try:
            if method in ("auto", "tmpfs"):
                mnt = work / "tmpfs"
                mnt.mkdir()
                slack = max(16 * 1024, (wal_growth // 2) // 4096 * 4096)
                size = (db_bytes + 32 * 1024 + slack + 4095) // 4096 * 4096  # the store, its -shm, half the growth
                mount_error = _try_mount(mnt, size)
                if mount_error is None:
                    mounted, used = mnt, "tmpfs"
                    figures.update(tmpfs_bytes=size, slack_bytes=slack)
                elif method == "tmpfs":
                    raise RuntimeError(f"cannot mount a tmpfs: {mount_error}")
                else:
                    used = "max_page_count"
            if used == "tmpfs":
                store_path = copy_store(pristine, mounted / "store.db")
                command = [*cli, "--db", str(store_path), *job_args]
            else:
                store_path = copy_store(pristine, work / "store.db")
                limit = pages_before + max(1, page_growth // 2)
                figures.update(max_page_count=limit, pages_before=pages_before, page_growth=page_growth)
                command = [PYTHON, "-c", _MAX_PAGE_COUNT_CHILD, str(limit), "--db", str(store_path), *job_args]
            run = subprocess.run(command, capture_output=True, text=True, timeout=600)
            stderr_lines = run.stderr.strip().splitlines()
            error_line = stderr_lines[0] if stderr_lines else ""
            clear_error = (
                run.returncode == 1
                and len(stderr_lines) == 1
                and error_line.startswith("Error: ")
                and "Traceback" not in run.stderr
                and "full" in error_line.lower()
            )
            unchanged = snapshot(store_path)["full"] == before["full"]
            checked = integrity(store_path)
            ok, findings = store_check(store_path)
            lock_free = write_lock_free(store_path)
            # Free the space (or lift the limit): the same job must now succeed.
            if used == "tmpfs":
                subprocess.run(["mount", "-o", f"remount,size={db_bytes * 4 + wal_growth * 4}", str(mounted)], check=True)
                retry = subprocess.run([*cli, "--db", str(store_path), *job_args], capture_output=True, text=True, timeout=600)
            else:
                retry = subprocess.run([*cli, "--db", str(store_path), *job_args], capture_output=True, text=True, timeout=600)
            retry_ok = retry.returncode == 0 and snapshot(store_path)["timeless"] == after
        finally:
            if mounted is not None:
                _unmount(mounted)
        figures = {
            "size": f"{built['live']:,} live + {built['archived']:,} archived, {used}",
            "memories": built["live"],
            "method": used,
            "mount_error": mount_error,
            "store_bytes": db_bytes,
            "job_wal_growth_bytes": wal_growth,
            "job_page_growth": page_growth,
            "page_size": page_size,
            **figures,
            "exit_code": run.returncode,
            "error_line": error_line,
            "stdout": run.stdout.strip()[:200],
            "clear_error": clear_error,
            "store_unchanged": unchanged,
            "integrity": checked[:3],
            "opens_and_check_ok": ok,
            "check_findings": findings,
            "write_lock_free": lock_free,
            "retry_after_space_freed_ok": retry_ok,
            "retry_stderr": retry.stderr.strip()[:300],
        }
        figures["passed"] = clear_error and unchanged and checked == ["ok"] and ok and lock_free and retry_ok
        return figures


# ---------------------------------------------------------------------------------------------
# 8. Lock hygiene
# ---------------------------------------------------------------------------------------------


def scenario_lock(workdir=None, *, trials: int = 20, busy_timeout_ms: int = 200, seed: int = 8) -> dict[str, Any]:
    """Another connection holds BEGIN IMMEDIATE: a write (add, add_many, the job, on alternate trials) fails
    after the busy timeout with StoreBusyError and a clear message, no connection stays checked out, and
    once the lock is released the next write succeeds. One store serves every trial, so a leaked
    connection or transaction would pile up."""
    from memstore import MemoryStore, StoreBusyError

    with _workdir(workdir, "lock") as work:
        db = work / "store.db"
        build_store(db, 200, seed=seed)
        store = MemoryStore(db, create=False, busy_timeout_ms=busy_timeout_ms)
        failures: list[str] = []
        waits: list[float] = []
        messages: set[str] = set()
        kinds = ("add", "add_many", "consolidate")
        try:
            for t in range(trials):
                kind = kinds[t % len(kinds)]
                holder = sqlite3.connect(db, isolation_level=None, timeout=5)
                holder.execute("BEGIN IMMEDIATE")
                live_before = store.count(None)  # reads go on while the lock is held (WAL)
                start = time.perf_counter()
                try:
                    if kind == "add":
                        store.add(f"locked out {t}", id=f"lock-{t}")
                    elif kind == "add_many":
                        store.add_many([{"id": f"lock-{t}", "text": f"locked out {t}"}])
                    else:
                        store.consolidate(10, namespace=None)
                    failures.append(f"trial {t}: {kind} succeeded while another connection held the write lock")
                except StoreBusyError as exc:
                    messages.add(str(exc))
                    if "lock" not in str(exc).lower():
                        failures.append(f"trial {t}: unclear message {str(exc)!r}")
                except Exception as exc:
                    failures.append(f"trial {t}: {kind} raised {type(exc).__name__}: {exc} (not StoreBusyError)")
                waited = time.perf_counter() - start
                waits.append(waited * 1000)
                if waited < busy_timeout_ms / 1000 * 0.9:
                    failures.append(f"trial {t}: gave up after {waited * 1000:.0f} ms, before the {busy_timeout_ms} ms timeout")
                if store.engine.pool.checkedout():
                    failures.append(f"trial {t}: {store.engine.pool.checkedout()} connection(s) checked out after the failure")
                holder.execute("ROLLBACK")
                holder.close()
                if store.count(None) != live_before:
                    failures.append(f"trial {t}: the failed {kind} changed the live set")
                try:
                    row = store.add(f"after the lock {t}", id=f"after-{t}")
                    if row["id"] != f"after-{t}":
                        failures.append(f"trial {t}: next add returned {row['id']!r}")
                except Exception as exc:
                    failures.append(f"trial {t}: the next add failed: {type(exc).__name__}: {exc}")
                if store.engine.pool.checkedout():
                    failures.append(f"trial {t}: connection checked out after the successful add")
            pool_status = store.engine.pool.status()
        finally:
            store.close()
        ok, findings = store_check(db)
        return {
            "size": f"{trials} lock-outs, busy_timeout {busy_timeout_ms} ms",
            "trials": trials,
            "busy_timeout_ms": busy_timeout_ms,
            "wait_ms_min": _r(min(waits, default=None)),
            "wait_ms_max": _r(max(waits, default=None)),
            "messages": sorted(messages),
            "pool_status": pool_status,
            "check_ok": ok,
            "check_findings": findings,
            "failures": failures[:20],
            "failure_count": len(failures),
            "passed": not failures and ok and len(messages) >= 1,
        }


# ---------------------------------------------------------------------------------------------
# The table and the command line
# ---------------------------------------------------------------------------------------------

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
    children = {"_job": child_job, "_writer": child_writer, "_jobloop": child_jobloop}
    if argv and argv[0] in children:
        return children[argv[0]](argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
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


if __name__ == "__main__":
    sys.exit(main())
