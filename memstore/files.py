"""Files memstore creates are its owner's alone: 0600 files and 0700 directories, whatever the umask.

Memories are personal data (names, health facts, a token pasted into a chat), so a new store, its
`-wal`/`-shm` files, a backup or an export is never readable by other local users. A file that
already exists keeps the mode its owner gave it.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

PRIVATE_FILE_MODE = 0o600
PRIVATE_DIR_MODE = 0o700


def make_private_dirs(directory: str | os.PathLike[str]) -> None:
    """Create `directory` and its missing parents as 0700; directories that exist are left alone."""
    missing = []
    path = Path(directory)
    while not path.exists():
        missing.append(path)
        path = path.parent
    for path in reversed(missing):
        try:
            path.mkdir(mode=PRIVATE_DIR_MODE)
        except FileExistsError:  # made meanwhile by another process: theirs to set
            continue
        os.chmod(path, PRIVATE_DIR_MODE)  # mkdir's mode went through the umask


def _create_exclusive(path: str | os.PathLike[str], flags: int) -> int | None:
    """A descriptor of a new file created 0600, or None if the file exists."""
    try:
        fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE)
    except FileExistsError:
        return None
    os.fchmod(fd, PRIVATE_FILE_MODE)  # os.open's mode went through the umask
    return fd


def create_private_file(path: str | os.PathLike[str]) -> bool:
    """Create `path` empty and 0600 unless it exists; True if this call created it.

    SQLite gives a database's `-wal`, `-shm` and `-journal` files the database file's own mode, so
    creating the store file this way first keeps all of them private.
    """
    fd = _create_exclusive(path, os.O_WRONLY)
    if fd is None:
        return False
    os.close(fd)
    return True


def shared_with_others(path: str | os.PathLike[str]) -> int | None:
    """The permission bits of `path` when group or others have any access to it, else None."""
    mode = stat.S_IMODE(os.stat(path).st_mode)
    return mode if mode & 0o077 else None


@contextmanager
def replaced_privately(path: str | os.PathLike[str], *, encoding: str = "utf-8", binary: bool = False) -> Iterator[IO[Any]]:
    """Write text (or bytes, `binary`) to a temporary file beside `path`, renamed over it only once
    whole: a failure halfway leaves `path` as it was. The file is 0600, or keeps the mode of the
    file it replaces. Binary files are flushed to disk before the rename."""
    target = Path(path)
    partial = target.with_name(f".{target.name}.partial-{os.getpid()}")
    fd = _create_exclusive(partial, os.O_WRONLY)
    if fd is None:
        raise FileExistsError(errno.EEXIST, "a partial file is in the way", str(partial))
    try:
        if target.exists():
            shutil.copymode(target, partial)
        if binary:
            with os.fdopen(fd, "wb") as raw:
                yield raw
                raw.flush()
                os.fdatasync(raw.fileno())
        else:
            with os.fdopen(fd, "w", encoding=encoding, newline="") as file:
                yield file
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
