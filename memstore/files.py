"""Files memstore creates are its owner's alone: 0600 files and 0700 directories, whatever the umask.

Memories are personal data (names, health facts, a token pasted into a chat), so a new store, its
`-wal`/`-shm` files, a backup or an export is never readable by other local users. A file that
already exists keeps the mode its owner gave it.

A file memstore writes whole (`export -o`, `backup`, the vector files) is replaced atomically only
when it is a regular file or absent: a temporary file beside it, renamed over it once whole. Any
other node is written into, never replaced: a character device (`/dev/null`, `/dev/stdout`), a
FIFO or a block device is opened and written, as a shell's `>` does; renaming over one would swap
the node itself for a regular file (run as root, `export -o /dev/null` did that to the machine's
`/dev/null`). A symlink is followed: the link stays, the file it points to is written (created,
0600, if it does not exist yet).
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

from .errors import MemstoreError

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


def followed(path: str | os.PathLike[str]) -> Path:
    """`path` with every symlink in it followed: the regular file a write to `path` replaces."""
    return Path(os.path.realpath(os.path.expanduser(path)))


def written_into(path: str | os.PathLike[str]) -> bool:
    """True when `path` exists and is neither a regular file nor a directory (a device, a FIFO),
    through any symlink: a node that is opened and written into, never replaced. Asked of the path
    as given: `/dev/stdout` links to `/proc/self/fd/1`, whose pipe has no name to resolve to."""
    try:
        mode = os.stat(os.path.expanduser(path)).st_mode
    except FileNotFoundError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _open_node(path: str | os.PathLike[str], binary: bool, encoding: str = "utf-8") -> IO[Any]:
    # No O_CREAT: if the node went away meanwhile this fails rather than create a file with the
    # umask's mode; no O_TRUNC, which a device or FIFO ignores anyway. A FIFO's open waits for a reader.
    fd = os.open(os.path.expanduser(path), os.O_WRONLY | os.O_NOCTTY)
    return os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding=encoding, newline="")


def put_in_place(partial: str | os.PathLike[str], path: str | os.PathLike[str]) -> None:
    """Put the finished file `partial` where `path` is: renamed over it when it is a regular file
    or absent (atomic), its bytes copied into it when it is a device or a FIFO (`partial` stays for
    the caller to remove)."""
    if written_into(path):
        with open(partial, "rb") as source, _open_node(path, True) as sink:
            shutil.copyfileobj(source, sink)
    else:
        os.replace(partial, followed(path))


@contextmanager
def replaced_privately(path: str | os.PathLike[str], *, encoding: str = "utf-8", binary: bool = False) -> Iterator[IO[Any]]:
    """Write text (or bytes, `binary`) to a temporary file beside `path`, renamed over it only once
    whole: a failure halfway leaves `path` as it was. The file is 0600, or keeps the mode of the
    file it replaces. Binary files are flushed to disk before the rename.

    A device or a FIFO at `path` is written into instead (no temporary file, no rename); a symlink
    is followed (see the module's docstring)."""
    if written_into(path):
        with _open_node(path, binary, encoding) as node:
            yield node
        return
    target = followed(path)
    if not target.parent.is_dir():
        # Named here: the first file the write would create is the partial one, a name of ours.
        raise MemstoreError(f"{target.parent} does not exist (the folder to write {target.name} in)")
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
