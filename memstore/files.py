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

A folder of derived files memstore alone writes (the vector files beside a store) is held to more:
it is the user's own 0700 folder, opened without following a link and used through its descriptor,
and anything else found under its name is removed and made again (`open_private_folder`); the files
in it are opened without following links, and only regular files are read (`open_in_folder`).
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import stat
from collections.abc import Iterable, Iterator
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
    # The process id names the writer; the random part keeps a file a killed process of the same id
    # left behind from ever being in the way.
    partial = target.with_name(f".{target.name}.partial-{os.getpid()}-{secrets.token_hex(4)}")
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


# ---------------------------------------------------------------------------------------------
# A private folder of derived files (the vector files), used through its descriptor
# ---------------------------------------------------------------------------------------------

# What an open inside a private folder adds: never through a link; a FIFO never blocks the open.
_IN_FOLDER = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


def folder_problem(path: str | os.PathLike[str]) -> str | None:
    """Why `path` is not its user's private folder of private regular files, in a few words (None
    when it is, or when nothing is there): what `memstore check` reports."""
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(found.st_mode):
        return "is a symlink"
    if not stat.S_ISDIR(found.st_mode):
        return "is not a folder"
    if found.st_uid != os.geteuid():
        return f"belongs to uid {found.st_uid}, not to this user (uid {os.geteuid()})"
    if (mode := stat.S_IMODE(found.st_mode)) & 0o077:
        return f"is mode {mode:04o}, not 0700"
    for entry in sorted(os.scandir(path), key=lambda entry: entry.name):
        held = entry.stat(follow_symlinks=False)
        if stat.S_ISLNK(held.st_mode):
            return f"holds {entry.name}, a symlink"
        if not stat.S_ISREG(held.st_mode):
            return f"holds {entry.name}, which is not a regular file"
        if held.st_uid != os.geteuid():
            return f"holds {entry.name} of uid {held.st_uid}"
        if (mode := stat.S_IMODE(held.st_mode)) & 0o077:
            return f"holds {entry.name}, mode {mode:04o}"
    return None


def remove_node(name: str, folder: int) -> None:
    """Remove whatever `name` is in the folder open as `folder`: a file, a link (never what it
    points to), a folder with everything in it."""
    try:
        found = os.lstat(name, dir_fd=folder)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(found.st_mode):
        shutil.rmtree(name, dir_fd=folder)  # by descriptors, never following a link
    else:
        os.unlink(name, dir_fd=folder)


def remove_folder(path: str | os.PathLike[str]) -> None:
    """Remove `path` when it is a folder (with what it holds) or a link (not what it points to)."""
    if os.path.islink(path):
        os.unlink(path)
    elif os.path.isdir(path):
        shutil.rmtree(path)  # by descriptors on Linux (`shutil.rmtree.avoids_symlink_attacks`)


def open_private_folder(path: str | os.PathLike[str]) -> int:
    """A descriptor of `path`, this user's own 0700 folder (created if missing), for files this
    process writes and reads by name inside it (`open_in_folder`). What else is found there is
    never trusted: a link is removed (never followed), a folder of another user removed with what
    it holds and made again, the user's own folder that group or others can open made 0700 (and
    emptied when they could write into it: a file there may be theirs, or a link). Raises OSError
    when it cannot be made so (a regular file in the way, a folder this user may not remove)."""
    for _ in range(4):  # a link or another's folder removed, a folder made, then open
        try:
            folder = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            try:
                os.mkdir(path, PRIVATE_DIR_MODE)  # its mode, through the umask, is checked below
            except FileExistsError:  # made meanwhile: looked at as anything found there is
                pass
            continue
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(path):
                os.unlink(path)  # a link: gone, never followed
                continue
            raise
        found = os.fstat(folder)
        if found.st_uid != os.geteuid():
            os.close(folder)
            remove_folder(path)
            continue
        mode = stat.S_IMODE(found.st_mode)
        if mode & 0o077:
            os.fchmod(folder, PRIVATE_DIR_MODE)  # first: nobody else adds anything from now on
            if mode & 0o022:
                for name in os.listdir(folder):
                    remove_node(name, folder)
        return folder
    raise OSError(errno.EPERM, "not this user's private folder", os.fspath(path))


def open_in_folder(folder: int, name: str, flags: int = os.O_RDONLY) -> int:
    """A descriptor of the regular file `name` in the folder open as `folder`, opened with `flags`
    (with O_CREAT: created 0600), never through a link. Anything else found under the name (a link,
    a folder, a FIFO) raises OSError; with O_CREAT it is removed and the file made instead."""
    for _ in range(2):
        try:
            fd = os.open(name, flags | _IN_FOLDER, PRIVATE_FILE_MODE, dir_fd=folder)
        except OSError as exc:
            if not flags & os.O_CREAT or exc.errno not in (errno.ELOOP, errno.EISDIR, errno.ENXIO, errno.EWOULDBLOCK):
                raise
            remove_node(name, folder)
            continue
        found = os.fstat(fd)
        if stat.S_ISREG(found.st_mode):
            os.set_blocking(fd, True)
            return fd
        os.close(fd)
        if not flags & os.O_CREAT:
            raise OSError(errno.EINVAL, "not a regular file", name)
        remove_node(name, folder)
    raise OSError(errno.EINVAL, "not a regular file", name)


def replace_in_folder(folder: int, name: str, chunks: Iterable[bytes]) -> None:
    """Write `chunks` to `name` in the folder open as `folder`: a new 0600 file beside it, flushed
    to disk, renamed over it once whole. The rename replaces whatever `name` was (a link itself,
    never what it points to); a folder in the way is removed first."""
    partial = f".{name}.partial-{os.getpid()}-{secrets.token_hex(4)}"
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _IN_FOLDER, PRIVATE_FILE_MODE, dir_fd=folder)
    try:
        os.set_blocking(fd, True)
        os.fchmod(fd, PRIVATE_FILE_MODE)
        with os.fdopen(fd, "wb", closefd=False) as out:
            for chunk in chunks:
                out.write(chunk)
        os.fdatasync(fd)
        try:
            os.replace(partial, name, src_dir_fd=folder, dst_dir_fd=folder)
        except IsADirectoryError:
            remove_node(name, folder)
            os.replace(partial, name, src_dir_fd=folder, dst_dir_fd=folder)
    finally:
        os.close(fd)
        try:
            os.unlink(partial, dir_fd=folder)
        except FileNotFoundError:
            pass
