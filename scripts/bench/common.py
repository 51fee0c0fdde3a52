"""What the bench's scenarios share: the log, repeating a timed run, medians, the baseline's raw
sqlite3 connection and rows, running a command, and which machine and code were measured."""

from __future__ import annotations

import hashlib
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from memstore.normalize import normalize_key
from memstore.store import MemoryStore
from scripts import REPO
from scripts.stores import finalize_file, remove_store, sqlite3

RESULTS = REPO / "bench-results" / "bench.json"
MEMSTORE_BIN = Path(sys.executable).with_name("memstore")

# What a writer supplies; seq is the database's to assign (memories' rowid), as memstore leaves it.
WRITTEN_COLUMNS = (
    "id", "namespace", "text", "norm_key", "timestamp", "importance", "pinned", "created_at",
    "updated_at", "last_recalled_at", "recall_count", "fact_key", "meta",
)  # fmt: skip
COLS = ", ".join((*WRITTEN_COLUMNS, "seq"))  # a whole row, as copied into the archive
INSERT_SQL = f"INSERT INTO memories ({', '.join(WRITTEN_COLUMNS)}) VALUES ({', '.join('?' * len(WRITTEN_COLUMNS))})"


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def raw_connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA busy_timeout = 60000")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA journal_mode = WAL")
    return conn


def empty_store(path: Path) -> Path:
    remove_store(path)
    MemoryStore(path).close()
    finalize_file(path)
    return path


def repeat(fn, repeats: int, slow: float, label: str) -> list[float]:
    """Run fn() (which returns seconds) up to `repeats` times; once only if a run exceeds `slow`."""
    times = []
    for n in range(repeats):
        seconds = fn()
        times.append(seconds)
        log(f"  {label} run {n + 1}: {seconds:.4f} s")
        if seconds > slow:
            break
    return times


def raw_row(record: dict) -> tuple:
    ts = record.get("timestamp")
    if ts is None:
        ts = record["updated_at"] if record.get("updated_at") is not None else record["created_at"]
    return (
        record["id"], "default", record["text"], normalize_key(record["text"]), ts,
        record.get("importance", 3), int(bool(record.get("pinned"))), record["created_at"],
        record.get("updated_at") or record["created_at"], record.get("last_recalled_at"),
        record.get("recall_count") or 0, record.get("fact_key"), None,
    )  # fmt: skip


def wall_time(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def med(xs):
    return statistics.median(xs) if xs else None


def machine_info() -> dict:
    return {
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor() or None,
        "python": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
    }


def source_fingerprint() -> dict:
    """Which library code was measured: HEAD, uncommitted changes under memstore/, file hashes."""
    info: dict = {"sha256": {}}
    for name in ("hygiene.py", "store.py"):
        path = REPO / "memstore" / name
        info["sha256"][name] = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    env = dict(os.environ, GIT_OPTIONAL_LOCKS="0")  # read-only: no index refresh
    try:
        git = lambda *a: subprocess.run(["git", *a], cwd=REPO, env=env, capture_output=True, text=True, timeout=20).stdout.strip()
        info["git_head"] = git("rev-parse", "--short", "HEAD") or None
        info["uncommitted_library_files"] = git("diff", "--name-only", "HEAD", "--", "memstore").split()
    except (OSError, subprocess.SubprocessError):
        info["git_head"] = None
    return info
