"""Engines: one place for the connection URL, the SQLite pragmas and how transactions begin."""

from __future__ import annotations

import os
import re
import threading
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, Row, Select, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, OperationalError, SQLAlchemyError

from .errors import MemstoreError, StoreBusyError
from .files import create_private_file, make_private_dirs

# Long enough for a consolidation run of a million rows to finish while an agent waits to write.
BUSY_TIMEOUT_MS = 60_000
# SQLite's default: after a commit leaves this many pages in the WAL, the committer checkpoints.
WAL_AUTOCHECKPOINT_PAGES = 1000
# Execution option that marks a connection whose transactions will write.
WRITE_OPTION = "memstore_write"
# Bound parameters one statement may carry on either backend: PostgreSQL's protocol counts them in
# 16 bits (65,535), SQLite's default build allows 32,766. No statement memstore sends may grow past
# it with its input: IN lists are cut by CHUNK (`chunked`, `rows_in`), and many rows are written by
# executemany, one statement per row (measured 4 to 7 times quicker than multi-row VALUES cut to
# this limit, which SQLAlchemy compiles anew for each cut).
MAX_PARAMETERS = 32_766
# Values per `IN (...)` list: far below MAX_PARAMETERS, so a statement holding the list twice (the
# write path's probe) and its own few parameters fits too, and a short list plans as index probes.
CHUNK = 500

T = TypeVar("T")

_engines: "weakref.WeakSet[Engine]" = weakref.WeakSet()


def _forget_connections_after_fork() -> None:
    # A pooled SQLite connection used by two processes corrupts the file: the child starts afresh.
    for engine in list(_engines):
        engine.dispose(close=False)


os.register_at_fork(after_in_child=_forget_connections_after_fork)


def database_url(path_or_url: str | os.PathLike[str]) -> str:
    """A SQLAlchemy URL from a file path or a URL; a plain path means a SQLite file."""
    text = os.fspath(path_or_url)
    if "://" in text:
        return text
    return "sqlite:///" + str(Path(text).expanduser().resolve())


# A password in a URL that SQLAlchemy cannot parse, masked all the same.
_PASSWORD_IN_URL = re.compile(r"(://[^/@:]*:).*@")


def shown_location(location: str | os.PathLike[str] | URL) -> str:
    """A store's location as memstore prints it anywhere (errors, `path`, logs, reports): a URL
    with its password masked as `***`, a path as given. Output goes to terminals, cron mail and log
    files; a password must not."""
    if isinstance(location, URL):
        return location.render_as_string(hide_password=True)
    text = os.fspath(location)
    if "://" not in text:
        return text
    try:
        return make_url(text).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):
        return _PASSWORD_IN_URL.sub(r"\1***@", text)


def sqlite_file_missing(path_or_url: str | os.PathLike[str]) -> str | None:
    """The file's path when this names a SQLite file that does not exist yet, else None."""
    url = make_url(database_url(path_or_url))
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return None
    return None if Path(url.database).exists() else url.database


IMMUTABLE = "&immutable=1"


def read_only_uri(path: Path, *, may_be_immutable: bool = True) -> str:
    """A URI that opens another program's SQLite file read-only and leaves nothing beside it.
    `mode=ro` alone, on a file in WAL mode, creates `-wal` and `-shm` files it cannot remove;
    `immutable=1` (IMMUTABLE) reads without them, which is safe only when no `-wal` is there (no
    connection has the file open: nothing waits to be checkpointed). A file in rollback mode is read
    with its locks (`mode=ro` creates nothing beside it); one whose `-wal` is there is read through
    it, as any reader reads it. A caller that read as immutable reads again with
    `may_be_immutable=False` if a `-wal` appeared meanwhile (a writer's checkpoint may have
    changed pages under the read)."""
    with path.open("rb") as file:
        wal_mode = file.read(20)[18:20] == b"\x02\x02"  # the header's write and read versions
    immutable = may_be_immutable and wal_mode and not Path(f"{path}-wal").exists()
    return f"{path.resolve().as_uri()}?mode=ro{IMMUTABLE if immutable else ''}"


def refuse_store_file(engine: Engine, path: str | os.PathLike[str], what: str) -> Path:
    """`path` resolved, unless it names the store's own file (or its -wal, -shm or -journal file):
    writing there would replace the store with `what`."""
    target = Path(path).expanduser().resolve()
    if engine.dialect.name == "sqlite" and engine.url.database not in (None, "", ":memory:"):
        store = Path(engine.url.database).resolve()
        if target in {store, *(store.with_name(store.name + suffix) for suffix in ("-wal", "-shm", "-journal"))}:
            raise MemstoreError(f"{target} is the store itself; choose another file for the {what}")
    return target


def is_sqlite(engine_or_conn: Engine | Connection) -> bool:
    return engine_or_conn.dialect.name == "sqlite"


# The connection-pool entry's info key saying sqlite-vec is loaded in that connection.
VEC_LOADED = "memstore_sqlite_vec"


# Set to "sqlean" to open SQLite stores through sqlean.py (a second copy of SQLite that can load
# sqlite-vec) on a Python whose own `sqlite3` cannot. Only safe when nothing else in the process opens
# the store's file: see docs/reliability.md, "Sharing the file with other SQLite users".
SQLITE_LIBRARY_ENV = "MEMSTORE_SQLITE_LIBRARY"


def sqlite_driver() -> Any:
    """The DB-API module SQLite stores are opened with: Python's own `sqlite3`, the copy of SQLite
    every other library in the process (LangGraph's checkpointer, pandas, a user's script) opens
    files with. Two copies of SQLite must never open one file in one process: POSIX locks belong to
    the process, so when one copy closes its descriptor the other's locks are gone, and the WAL it
    is writing can be checkpointed and deleted under it. `sqlean` only when MEMSTORE_SQLITE_LIBRARY
    asks for it."""
    choice = os.environ.get(SQLITE_LIBRARY_ENV, "").strip().lower()
    if choice not in ("", "sqlite3", "sqlean"):
        raise MemstoreError(f"{SQLITE_LIBRARY_ENV}={choice!r}: must be sqlite3 or sqlean")
    if choice == "sqlean":
        try:
            import sqlean
        except ImportError as exc:
            raise MemstoreError(f"{SQLITE_LIBRARY_ENV}=sqlean, but sqlean.py is not installed (pip install sqlean.py)") from exc
        return sqlean
    import sqlite3

    return sqlite3


def can_load_extensions(driver: Any) -> bool:
    """Whether connections of this DB-API module can load SQLite extensions (sqlite-vec)."""
    return hasattr(driver.Connection, "enable_load_extension")


def sqlite_vec_path() -> str | None:
    """Where sqlite-vec's loadable extension is, when the package is installed. Found without
    importing the package, which imports NumPy."""
    from importlib.util import find_spec

    spec = find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.join(list(spec.submodule_search_locations)[0], "vec0")


def _load_sqlite_vec(dbapi_connection: Any) -> bool:
    path = sqlite_vec_path()
    if path is None or not hasattr(dbapi_connection, "enable_load_extension"):
        return False
    try:
        dbapi_connection.enable_load_extension(True)
        try:
            dbapi_connection.load_extension(path)
        finally:
            dbapi_connection.enable_load_extension(False)
    except Exception:  # a build of SQLite that refuses it: vector search falls back to NumPy
        return False
    return True


def vec_loaded(conn: Connection) -> bool:
    """Whether sqlite-vec is loaded in this (SQLite) connection."""
    return bool(conn.connection.info.get(VEC_LOADED))


def _configure_sqlite(engine: Engine, busy_timeout_ms: int) -> None:
    @event.listens_for(engine, "connect")
    def on_connect(dbapi_connection, record) -> None:
        # Take transaction control away from the driver: it begins lazily and never for some
        # statements, which turns a waiting writer into an instant "database is locked".
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {busy_timeout_ms}")
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.close()
        record.info[VEC_LOADED] = _load_sqlite_vec(dbapi_connection)

    @event.listens_for(engine, "begin")
    def on_begin(conn: Connection) -> None:
        # Writers take the write lock up front, so they queue on busy_timeout instead of failing
        # on a lock upgrade halfway through.
        mode = "IMMEDIATE" if conn.get_execution_options().get(WRITE_OPTION) else "DEFERRED"
        conn.exec_driver_sql(f"BEGIN {mode}")


def make_engine(path_or_url: str | os.PathLike[str], busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> Engine:
    url = make_url(database_url(path_or_url))
    if url.get_backend_name() == "sqlite" and (url.query.get("uri") or str(url.database or "").startswith("file:")):
        # A URI filename names its file in SQLite's own syntax: memstore could not make that file
        # private before SQLite creates it, so it takes paths only.
        raise MemstoreError(f"{url.database}: give the store as a path (or sqlite:///PATH), not a SQLite URI filename")
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        # A new store is private before SQLite writes a byte to it (its -wal and -shm files take
        # the store file's mode); an existing one keeps the mode its owner gave it.
        make_private_dirs(Path(url.database).parent)
        create_private_file(url.database)
    sqlite = url.get_backend_name() == "sqlite"
    engine = create_engine(url, module=sqlite_driver()) if sqlite and url.get_driver_name() == "pysqlite" else create_engine(url)
    if engine.dialect.name == "sqlite":
        _configure_sqlite(engine, busy_timeout_ms)
    _engines.add(engine)
    return engine


@contextmanager
def write_transaction(engine: Engine, *, defer_checkpoint: bool = False) -> Iterator[Connection]:
    """One write transaction (BEGIN IMMEDIATE on SQLite): committed whole or rolled back whole.

    `defer_checkpoint` (for the jobs, which write many pages) keeps SQLite from copying the WAL back
    into the database inside this commit, while the write lock is still held; the caller
    checkpoints afterwards (see `checkpoint`).
    """
    try:
        with engine.connect() as conn:
            conn = conn.execution_options(**{WRITE_OPTION: True})
            # Straight on the driver's connection: through SQLAlchemy a PRAGMA would open a transaction.
            driver = conn.connection.dbapi_connection if defer_checkpoint and is_sqlite(conn) else None
            if driver is not None:
                driver.execute("PRAGMA wal_autocheckpoint = 0")
            try:
                with conn.begin():
                    yield conn
            finally:
                if driver is not None:
                    driver.execute(f"PRAGMA wal_autocheckpoint = {WAL_AUTOCHECKPOINT_PAGES}")
    except OperationalError as exc:
        if "database is locked" in str(exc.orig) or "database is busy" in str(exc.orig):
            raise StoreBusyError("the store stayed locked by another writer past the busy timeout; try again") from exc
        raise


def roll_back(conn: Connection) -> None:
    """End a dry run: everything the write transaction `conn` wrote is rolled back, and its
    `write_transaction` block then commits nothing. The one way a dry run writes nothing (an
    import, a job, a restore, maintain)."""
    conn.get_transaction().rollback()


def chunked(values: Sequence[T], size: int = CHUNK) -> Iterator[list[T]]:
    """`values` in lists of at most `size`, in order."""
    for start in range(0, len(values), size):
        yield list(values[start : start + size])


def rows_in(conn: Connection, query: Select, column: Any, values: Sequence[Any]) -> Iterator[Row]:
    """The rows of `query` whose `column` is one of `values`: one statement per CHUNK values."""
    for chunk in chunked(values):
        yield from conn.execute(query.where(column.in_(chunk)))


def database_error(exc: SQLAlchemyError, location: str) -> str:
    """A database error as one line for a person: where, and the driver's first line."""
    detail = str(getattr(exc, "orig", None) or exc).splitlines()[0]
    return f"database error at {shown_location(location)}: {detail}"


def checkpoint(engine: Engine) -> None:
    """Copy the WAL back into the database without blocking writers (SQLite's PASSIVE checkpoint)."""
    if engine.dialect.name == "sqlite":
        raw = engine.raw_connection()  # no BEGIN: a checkpoint inside a read transaction stops short
        try:
            raw.driver_connection.execute("PRAGMA wal_checkpoint(PASSIVE)")
        finally:
            raw.close()


class BackgroundCheckpoints:
    """Checkpoints run after a job's commit, off its critical path: the write lock is already
    released, and a PASSIVE checkpoint never blocks writers. Finished ones are not kept."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._running: list[threading.Thread] = []
        self._lock = threading.Lock()

    def start(self) -> None:
        if not is_sqlite(self.engine):
            return
        worker = threading.Thread(target=checkpoint, args=(self.engine,), name="memstore-checkpoint")
        with self._lock:
            self._running = [each for each in self._running if each.is_alive()]
            self._running.append(worker)
        worker.start()

    def running(self) -> int:
        """Checkpoints still copying."""
        with self._lock:
            return sum(1 for each in self._running if each.is_alive())

    def wait(self) -> None:
        with self._lock:
            workers, self._running = self._running, []
        for worker in workers:
            worker.join()


@contextmanager
def read_transaction(engine: Engine) -> Iterator[Connection]:
    """A consistent snapshot for reads: every statement sees the same committed state. SQLite's
    transactions are snapshots already; PostgreSQL's default (READ COMMITTED) gives each statement
    its own, so a recall's two rankings, or a cache reading live and archived rows in turn, could
    see two states: there the transaction is REPEATABLE READ (a reader never waits or fails for it)."""
    with engine.connect() as conn:
        if conn.dialect.name == "postgresql":
            conn = conn.execution_options(isolation_level="REPEATABLE READ")
        with conn.begin():
            yield conn


def default_location() -> str:
    """MEMSTORE_DB if set, else `memstore.db` in the per-user app directory."""
    import click  # only for its per-platform app directory rule

    return os.environ.get("MEMSTORE_DB") or str(Path(click.get_app_dir("memstore")) / "memstore.db")
