"""Copying a whole store into a new or empty one, SQLite or PostgreSQL either way: `memstore copy`.

Every table of `memstore.schema` moves, row for row and value for value: the live set, the archive
with its reasons and `superseded_by`, the runs (so `restore --run N` and `--as-of` answer on the
copy as on the original), merges, gaps, settings, vectors and contradiction flags with a person's
verdicts. Ids, seqs and run ids keep their numbers; a JSON column's stored text is copied as it is.

What is derived is rebuilt in the target, not copied: the full-text index (SQLite's FTS5 table,
filled by its triggers as rows arrive; PostgreSQL's GIN expression index, kept by the server), the
live counts per namespace (SQLite; recounted at the end), the vector index (`vector_index.rebuild`,
where the target connection has sqlite-vec or pgvector) and the counters that number new rows
(SQLite's `sqlite_sequence`, PostgreSQL's sequences), set to what the source had given so far, so
that a later write neither collides with a copied id nor lands below a run's high-water mark.

The source is read in one snapshot (`read_transaction`); the target is written in one transaction,
so a copy that fails leaves the target as it was: migrated, and empty. A SQLite file that is not a
store and holds tables (LangGraph's `store`, any other application's) is refused before it is
touched: migrating it would write a store into another program's file. The source's file under
another name (a hard link, a symlink) is the source itself.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import JSON, Column, Connection, Engine, Integer, Table, Text, cast, func, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from .db import database_url, make_engine, read_only_uri, read_transaction, shown_location, sqlite_driver, write_transaction
from .errors import MemstoreError
from .live_counts import recount_live
from .migrate import VERSION_TABLE, upgrade
from .schema import managed_outside_models, memories, memory_archive, consolidation_runs, metadata
from .vectors import index as vector_index
from .vectors.search import search_path
from .vectors.storage import model_of

# Rows read from the source per fetch and written per batch: large enough that the per-batch cost
# vanishes, small enough that 100,000 vectors (1.5 kB each) are never held at once.
BATCH_ROWS = 5_000


@dataclass
class CopyReport:
    source: str
    target: str
    rows: dict[str, int] = field(default_factory=dict)  # per table, in the order they were written
    # Where vector search runs in the target (`vectors.search.search_path`): "sqlite-vec" or
    # "pgvector" (the index was rebuilt), "vector-file" or "numpy" (no extension here), or None (the
    # store has no embedding model).
    vector_search: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "target": self.target, "rows": dict(self.rows), "vector_search": self.vector_search}


def _tables() -> list[Table]:
    """Every table memstore owns, parents before children (the foreign keys to the runs)."""
    return list(metadata.sorted_tables)


def _read_columns(table: Table) -> list[Any]:
    # A JSON column is read as the text stored, and written back as that text: decoding and encoding
    # again would turn SQL NULL into 'null' and respace what a shell wrote.
    return [cast(column, Text).label(column.name) if isinstance(column.type, JSON) else column for column in table.columns]


def _source_rows(conn: Connection, table: Table) -> Iterator[Sequence[tuple]]:
    """The table's rows in primary-key order, a batch at a time, as Python values (bool, int,
    float, str, bytes, None) that either driver writes back unchanged."""
    query = select(*_read_columns(table)).order_by(*table.primary_key.columns)
    result = conn.execution_options(stream_results=True, max_row_buffer=BATCH_ROWS).execute(query)
    for batch in result.partitions(BATCH_ROWS):
        yield [tuple(row) for row in batch]


def _write_sqlite(conn: Connection, table: Table, batches: Iterator[Sequence[tuple]]) -> int:
    # executemany of a one-row INSERT: each statement binds one row's values (16 at most), far
    # below SQLite's and PostgreSQL's limits on parameters per statement.
    names = ", ".join(f'"{column.name}"' for column in table.columns)
    sql = f'INSERT INTO "{table.name}" ({names}) VALUES ({", ".join("?" * len(table.columns))})'
    cursor = conn.connection.driver_connection.cursor()
    written = 0
    try:
        for batch in batches:
            cursor.executemany(sql, batch)
            written += len(batch)
    finally:
        cursor.close()
    return written


def _write_postgresql(conn: Connection, table: Table, batches: Iterator[Sequence[tuple]]) -> int:
    # COPY FROM STDIN: no bound parameters at all (so no 65,535 limit), and several times quicker
    # than INSERTs. psycopg turns each Python value into PostgreSQL's text form: bool, int, the
    # shortest exact repr of a float, bytes as bytea, a JSON column's stored text as it is.
    names = ", ".join(f'"{column.name}"' for column in table.columns)
    written = 0
    with conn.connection.driver_connection.cursor() as cursor:
        with cursor.copy(f'COPY "{table.name}" ({names}) FROM STDIN') as copy:
            for batch in batches:
                for row in batch:
                    copy.write_row(row)
                written += len(batch)
    return written


def _refuse_filled(conn: Connection, location: str) -> None:
    held = conn.execute(select(func.count()).select_from(memories)).scalar_one()
    if held:
        raise MemstoreError(f"{shown_location(location)} already holds {held} memories; copy into a new or empty store (copy never merges)")
    for table in _tables():
        if conn.execute(select(table.columns[0]).limit(1)).first() is not None:
            raise MemstoreError(f"{shown_location(location)} is not empty ({table.name} has rows); copy into a new or empty store (copy never merges)")


# -- the counters that number new rows --------------------------------------------------------


def _numbered_columns() -> list[Column]:
    """The integer keys the database numbers: memories.seq (the write order), the ids of runs,
    gaps and flags."""
    numbered = []
    for table in _tables():
        keys = list(table.primary_key.columns)
        if len(keys) == 1 and isinstance(keys[0].type, Integer):
            numbered.append(keys[0])
    return numbered


def _given_so_far(conn: Connection, column: Column) -> int:
    """The largest number the source has handed out for `column`: its largest row, or more when
    the largest rows left (SQLite's AUTOINCREMENT keeps the high mark in sqlite_sequence; a
    PostgreSQL sequence is never rolled back). For memories.seq, never below an archived row's
    seq or a run's high-water mark, which a new write must pass."""
    table = column.table
    values = [conn.execute(select(func.coalesce(func.max(column), 0))).scalar_one()]
    if column is memories.c.seq:
        values.append(conn.execute(select(func.coalesce(func.max(memory_archive.c.seq), 0))).scalar_one())
        values.append(conn.execute(select(func.coalesce(func.max(consolidation_runs.c.high_water_seq), 0))).scalar_one())
    if conn.dialect.name == "sqlite":
        if table.dialect_options["sqlite"]["autoincrement"]:
            stored = conn.execute(text("SELECT seq FROM sqlite_sequence WHERE name = :name"), {"name": table.name}).scalar()
            values.append(stored or 0)
    else:
        sequence = _sequence_of(conn, column)
        if sequence is not None:
            last, called = conn.execute(text(f"SELECT last_value, is_called FROM {sequence}")).one()
            values.append(last if called else last - 1)
    return max(values)


def _sequence_of(conn: Connection, column: Column) -> str | None:
    return conn.execute(text("SELECT pg_get_serial_sequence(:table, :column)"), {"table": column.table.name, "column": column.name}).scalar()


def _set_counter(conn: Connection, column: Column, given: int) -> None:
    """Make the target number its next row of `column` above `given`, as the source would."""
    if conn.dialect.name == "sqlite":
        # Only AUTOINCREMENT tables keep a counter; the others number from their largest row.
        if column.table.dialect_options["sqlite"]["autoincrement"] and given > 0:
            name = {"name": column.table.name, "given": given}
            if not conn.execute(text("UPDATE sqlite_sequence SET seq = max(seq, :given) WHERE name = :name"), name).rowcount:
                conn.execute(text("INSERT INTO sqlite_sequence (name, seq) VALUES (:name, :given)"), name)
        return
    sequence = _sequence_of(conn, column)
    if sequence is not None:
        # setval(.., n, true): the next value is n + 1; a sequence never used restarts at 1.
        conn.execute(text("SELECT setval(CAST(:sequence AS regclass), :value, :called)"),
                     {"sequence": sequence, "value": max(given, 1), "called": given > 0})  # fmt: skip


# -- the copy ---------------------------------------------------------------------------------


def copy_store(
    source: Engine, target: Engine, *, target_location: str, progress: Callable[[str, int], None] | None = None
) -> CopyReport:
    """Copy every table of `source` into `target` (both migrated to head; the target new or empty,
    else MemstoreError) and rebuild the target's derived data; `progress(table, rows)` after each
    table. One snapshot of the source, one transaction on the target."""
    report = CopyReport(source=shown_location(source.url), target=shown_location(target.url))
    write = _write_sqlite if target.dialect.name == "sqlite" else _write_postgresql
    with read_transaction(source) as reader, write_transaction(target, defer_checkpoint=True) as writer:
        _refuse_filled(writer, target_location)
        for table in _tables():
            try:
                report.rows[table.name] = write(writer, table, _source_rows(reader, table))
            except writer.dialect.loaded_dbapi.Error as exc:
                # Raised by the driver's own cursor: made SQLAlchemy's, as every other database
                # error reaches the caller (and the CLI's one line).
                raise DBAPIError.instance(f"copy of {table.name}", None, exc, writer.dialect.loaded_dbapi.Error) from exc
            if progress is not None:
                progress(table.name, report.rows[table.name])
        for column in _numbered_columns():
            _set_counter(writer, column, _given_so_far(reader, column))
        report.vector_search = _rebuild_derived(writer)
    return report


def copy_into(
    source: Engine, location: str | os.PathLike[str], *, progress: Callable[[str, int], None] | None = None
) -> CopyReport:
    """Copy the store of `source` into the store at `location` (a path or URL), which is created
    and migrated to head first when new; see `copy_store`."""
    location = os.fspath(location)
    url = make_url(database_url(location))
    if url == source.url or url.get_backend_name() == "sqlite" and _same_file(url.database, source):
        raise MemstoreError(f"{shown_location(location)} is the source store itself; copy into a new or empty store")
    if url.get_backend_name() == "sqlite":
        _refuse_foreign_file(url.database, location)
    target = make_engine(location)
    try:
        upgrade(target)
        return copy_store(source, target, target_location=location, progress=progress)
    finally:
        target.dispose()


def _same_file(database: str | None, source: Engine) -> bool:
    if not database or source.dialect.name != "sqlite" or not source.url.database:
        return False
    try:
        return os.path.samefile(database, source.url.database)
    except (OSError, ValueError):  # either is not there (yet): not one file
        return False


def _memstores(name: str) -> bool:
    return name in metadata.tables or name == VERSION_TABLE or name.startswith("sqlite_") or managed_outside_models(name)


def _refuse_foreign_file(database: str | None, location: str) -> None:
    """Refuse an existing SQLite file that is not a store and holds tables memstore does not own,
    read without writing to it or beside it (`db.read_only_uri`): another program's file is not a
    store to migrate. A file that is not a database at all is left to the migration to name."""
    if not database or database == ":memory:" or not Path(database).is_file():
        return
    driver = sqlite_driver()
    try:
        connection = driver.connect(read_only_uri(Path(database)), uri=True)
    except (driver.Error, OSError):
        return
    try:
        names = [name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")]
    except driver.Error:
        return
    finally:
        connection.close()
    foreign = sorted(name for name in names if not _memstores(name))
    # A store shares its file with the agent's other libraries (LangGraph's checkpointer): their
    # tables beside memstore's are expected; without memstore's, the file is theirs alone.
    if foreign and memories.name not in names:
        shown = ", ".join(repr(name) for name in foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise MemstoreError(
            f"{shown_location(location)} holds tables that are not memstore's ({shown}): another program's file, not a store; copy into a new file or an empty store"
        )


def _rebuild_derived(conn: Connection) -> str | None:
    """The target's derived data, from the rows just written; where vector search runs now."""
    if conn.dialect.name == "sqlite":
        # The FTS5 index was filled by its triggers, row by row, as memories arrived; the live
        # counts too, but they are recounted from the rows so they are exact whatever came in.
        recount_live(conn)
    # The source's record of its own vector index says nothing about the target's.
    vector_index.drop(conn)
    model = model_of(conn)
    if model is None:
        return None
    if vector_index.enable_pgvector(conn) is None and conn.dialect.name == "postgresql":
        # The HNSW graph is built in memory when it fits: much quicker than spilling to disk.
        conn.execute(text("SET LOCAL maintenance_work_mem = '512MB'"))
    vector_index.rebuild(conn, model.name, model.dim)
    return search_path(conn, model)


__all__ = ["BATCH_ROWS", "CopyReport", "copy_into", "copy_store"]
