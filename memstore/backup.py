"""Backups of a SQLite store through SQLite's online backup API.

The copy is taken in one backup step under a read transaction, so it is a consistent snapshot even
while agents keep writing (WAL lets them), and it includes what is still in the -wal file. It is
written to a temporary file beside the destination and renamed into place, so a crash never leaves
a half-written backup under the destination's name. A new backup is private to its owner (0600); one
written over an existing file (`force`) keeps that file's mode. A destination that is a device or a
FIFO (`force`) gets the finished copy written into it instead of being replaced; a symlink is
followed (memstore.files).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from typing import Any

from sqlalchemy import Engine

from .db import refuse_store_file, sqlite_driver
from .errors import MemstoreError
from .files import create_private_file, put_in_place, written_into

COUNTED_TABLES = ("memories", "memory_archive", "consolidation_runs")


def backup_sqlite(engine: Engine, destination: str | os.PathLike[str], *, force: bool = False) -> dict[str, Any]:
    target = refuse_store_file(engine, destination, "backup")  # symlinks followed
    into = written_into(destination)  # a device or a FIFO: the copy is written into it
    if target.is_dir():
        raise MemstoreError(f"{target} is a directory; give a file name")
    if (into or target.exists()) and not force:
        raise MemstoreError(f"{target} already exists; pass --force to overwrite it")
    if not into and not target.parent.is_dir():
        raise MemstoreError(f"{target.parent} does not exist")

    if into:
        # SQLite writes the copy into a file it can seek, made private in the temporary directory
        # (not beside a device, in /dev); its bytes then go into the node.
        fd, name = tempfile.mkstemp(prefix=".memstore-backup-", suffix=".partial")
        os.close(fd)
        partial = Path(name)
    else:
        partial = target.with_name(f".{target.name}.partial-{os.getpid()}")
        if not create_private_file(partial):  # never write into a file someone else made (or its mode)
            raise MemstoreError(f"{partial} is in the way (left by another backup?); remove it and try again")
        if target.exists():
            shutil.copymode(target, partial)
    raw = engine.raw_connection()
    try:
        copy = sqlite_driver().connect(partial)
        try:
            raw.driver_connection.backup(copy)
            counts = {table: copy.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in COUNTED_TABLES}
            integrity = copy.execute("PRAGMA quick_check").fetchone()[0]
        finally:
            copy.close()
        if integrity != "ok":
            raise MemstoreError(f"the backup failed its integrity check ({integrity}); {target} was not written")
        put_in_place(partial, destination)
    finally:
        raw.close()
        partial.unlink(missing_ok=True)
    return {"path": str(target), **counts}
