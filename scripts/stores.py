"""Store files: removing, folding in the WAL and copying them, and reading them from outside memstore.

Everything here reads a SQLite store through the same SQLite library memstore opens it with
(``memstore.db.sqlite_driver()``): two copies of SQLite in one process must never open the same
file (closing one's descriptor drops the other's POSIX locks). The readers use plain SQL, never
memstore, except ``store_check``, which opens the store as a user would.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from memstore.db import sqlite_driver

sqlite3 = sqlite_driver()

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


# -- the files ------------------------------------------------------------------------------------


def remove_store(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


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


def copy_store(source: Path, destination: Path, *, sync: bool = False) -> Path:
    """Copy a store no connection is writing to a fresh file, its WAL folded in first.

    With `sync`, the copy is flushed to disk before this returns: left to the kernel, writing back
    up to a gigabyte lands inside whatever is timed next (on its commit's fsync)."""
    finalize_file(source)
    remove_store(destination)
    shutil.copy(source, destination)  # with its mode: the copy is as private as the store
    if sync:
        os.sync()
    return destination


# -- reading a store from outside (plain SQL) -------------------------------------------------------


def connect(path: Path) -> sqlite3.Connection:
    # Read-write, so a WAL left by a killed process can be recovered; only reads are issued.
    return sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=60, isolation_level=None)


def snapshot(path: Path) -> dict[str, dict[str, tuple[int, str]]]:
    """Per table (row count, sha256 of every row in key order), twice: every column ("full"), and
    without the wall-clock columns of TIME_COLUMNS ("timeless")."""
    conn = connect(path)
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
    conn = connect(path)
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
    conn = connect(path)
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
    conn = connect(path)
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
    conn = connect(path)
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
