"""The vector index: the live memories' vectors of the store's model, by namespace, inside the database
(the second of the four ways of `memstore.vectors.search`).

SQLite: a sqlite-vec `vec0` virtual table with the namespace as its partition key and cosine
distance, so a search scans one namespace inside SQLite. PostgreSQL: a pgvector column behind an
HNSW index (cosine), the namespace filtered with iterative index scans, and a b-tree on the
namespace for the small ones. Both are named `memory_vector_index`:

    memory_id  the memory (live)        namespace  its namespace        embedding  its vector

The index is derived data. `memory_vectors` holds every vector (archived memories keep theirs), and
this table only what search needs. Nothing in the database keeps it in step (a trigger would need
the extension, and the file must stay usable from the plain `sqlite3` shell): memstore does, in the
same transactions, wherever memories become live or leave (`runs`, `restore`, the corrections) and
wherever vectors are written (`memstore.vectors.storage`). `memstore_settings['vector_index']` names the
model the index holds when it is in step, and is 'stale' after a change this process could not
apply (a SQLite without sqlite-vec): search then takes the NumPy path, and the next
`embeddings sync` or `check --fix` rebuilds it.

Only a `usable` vector enters the index: one a hand edit cut short or filled with NaN would be
refused by sqlite-vec and pgvector, and fail the restore or the rebuild that carried it (`memstore
check` finds such a vector, `--fix` sets it aside for `embeddings sync`).
"""

from __future__ import annotations

import array
import math
import re
import struct
import sys
from collections.abc import Collection, Sequence
from typing import Any

from sqlalchemy import Connection, Select, bindparam, delete, insert, select, text

from ..db import chunked, rows_in, vec_loaded
from ..schema import VECTOR_INDEX_TABLE as INDEX_TABLE
from ..schema import memories, memory_vectors, memstore_settings

STATE_SETTING = "vector_index"
STALE = "stale"
# Vectors per sqlite-vec chunk: each namespace holds at least one chunk, so a small one keeps a
# store of many small namespaces small (1,024, sqlite-vec's default, made a store of 1,000
# namespaces of 100 ten times bigger); search time is about the same.
SQLITE_CHUNK = 64
# sqlite-vec answers at most this many neighbours per query.
SQLITE_MAX_K = 4096
# PostgreSQL: how many candidates an HNSW scan under a namespace filter keeps looking for.
PG_EF_SEARCH = 100
# PostgreSQL: vectors added at once (an import of an export with vectors) from which the HNSW index is
# dropped and built again over the table instead of updated row by row, when they are also at least
# a fifth of what the table holds. 100,000 rows one at a time ran past 8 minutes (more than 5 ms a
# row) on two cores; a build over 100,000 took 83 s (under 1 ms a row) with 512 MB to hold its graph.
PG_BULK_ROWS = 1_000
# A build holds the graph in maintenance_work_mem (64 MB by default) or spills, four times slower at
# 100,000: a build raises it, for its transaction only, to what the graph needs (about 1.25 times
# the vectors' bytes plus 1 kB a row), at most this many kB.
PG_BUILD_MEMORY_MAX = 1024 * 1024


def fits(blob: bytes, dim: int) -> bool:
    """Whether a stored vector holds `dim` little-endian float32 values, as `embedder.to_blob`
    writes them: what a row of a matrix of the model's vectors must be."""
    return len(blob) == 4 * dim


def usable(blob: bytes, dim: int) -> bool:
    """Whether a stored vector can be indexed and searched: it `fits` and every value is a finite
    number (a NaN or an infinity has no cosine with anything)."""
    if not fits(blob, dim):
        return False
    values = array.array("f")
    values.frombytes(blob)
    if sys.byteorder == "big":
        values.byteswap()
    # In float64 a sum of float32 values cannot overflow, so it is finite exactly when every value
    # is: one pass in C instead of a test per value.
    return math.isfinite(sum(values))


def _state(conn: Connection) -> str | None:
    return conn.execute(select(memstore_settings.c.value).where(memstore_settings.c.key == STATE_SETTING)).scalar_one_or_none()


def _set_state(conn: Connection, value: str | None) -> None:
    conn.execute(delete(memstore_settings).where(memstore_settings.c.key == STATE_SETTING))
    if value is not None:
        conn.execute(insert(memstore_settings).values(key=STATE_SETTING, value=value))


def backend(conn: Connection) -> str | None:
    """"sqlite-vec" or "pgvector" when this connection can search and keep the index, else None."""
    if conn.dialect.name == "sqlite":
        return "sqlite-vec" if vec_loaded(conn) else None
    if conn.dialect.name == "postgresql":
        return "pgvector" if conn.execute(text("SELECT 1 FROM pg_extension WHERE extname = 'vector'")).first() else None
    return None


def enable_pgvector(conn: Connection) -> str | None:
    """Create pgvector's extension if this role may; None when done (or there already), else why not."""
    if conn.dialect.name != "postgresql" or backend(conn) is not None:
        return None
    try:
        with conn.begin_nested():
            conn.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
    except Exception as exc:  # not installed on the server, or not allowed: say what to run
        detail = str(getattr(exc, "orig", exc)).splitlines()[0]
        return f"pgvector is not enabled ({detail}); a database owner can run: CREATE EXTENSION vector;"
    return None


def exists(conn: Connection) -> bool:
    if conn.dialect.name == "sqlite":
        return conn.execute(text("SELECT 1 FROM sqlite_master WHERE name = :name"), {"name": INDEX_TABLE}).first() is not None
    return conn.dialect.has_table(conn, INDEX_TABLE)


def ready(conn: Connection, model_name: str) -> bool:
    """Whether search may use the index: this connection can, and it holds `model_name`, in step."""
    return backend(conn) is not None and _state(conn) == model_name


def drop(conn: Connection) -> None:
    """Drop the index (a store going back to NumPy search, or a migration down)."""
    if exists(conn):
        conn.execute(text(f"DROP TABLE {INDEX_TABLE}"))
    _set_state(conn, None)


def rebuild(conn: Connection, model_name: str, dim: int) -> bool:
    """(Re)create the index for `model_name` and fill it with the live memories' vectors; False
    (and nothing changed but the state) when this connection has no vector extension."""
    kind = backend(conn)
    if kind is None:
        _set_state(conn, STALE if exists(conn) else None)
        return False
    if exists(conn):
        conn.execute(text(f"DROP TABLE {INDEX_TABLE}"))
    if kind == "sqlite-vec":
        conn.execute(text(
            f"CREATE VIRTUAL TABLE {INDEX_TABLE} USING vec0(memory_id text primary key, namespace text partition key, "
            f"embedding float[{dim}] distance_metric=cosine, chunk_size={SQLITE_CHUNK})"
        ))  # fmt: skip
    else:
        conn.execute(text(
            f'CREATE TABLE {INDEX_TABLE} (memory_id text COLLATE "C" PRIMARY KEY, namespace text COLLATE "C" NOT NULL, '
            f"embedding vector({dim}) NOT NULL)"
        ))  # fmt: skip
    live = (
        select(memories.c.id, memories.c.namespace, memory_vectors.c.vector)
        .join(memory_vectors, memory_vectors.c.memory_id == memories.c.id)
        .where(memory_vectors.c.model == model_name)
        .order_by(memories.c.id)
    )
    _insert(conn, kind, [row for row in conn.execute(live) if usable(row.vector, dim)])
    if kind == "pgvector":  # built over the rows, which is much quicker than row by row
        _build_hnsw(conn)
        conn.execute(text(f"CREATE INDEX ix_{INDEX_TABLE}_namespace ON {INDEX_TABLE} (namespace)"))
    _set_state(conn, model_name)
    return True


def _build_hnsw(conn: Connection) -> None:
    """Build the HNSW index over the rows of the (PostgreSQL) index table, its graph in memory."""
    rows, dim = conn.execute(text(f"SELECT count(*), coalesce(max(vector_dims(embedding)), 0) FROM {INDEX_TABLE}")).one()
    wanted_kb = min(PG_BUILD_MEMORY_MAX, rows * (dim * 5 + 1024) // 1024)
    current_kb = conn.execute(text("SELECT setting::bigint FROM pg_settings WHERE name = 'maintenance_work_mem'")).scalar_one()
    if wanted_kb > current_kb:  # never lowered: a server configured higher keeps its setting
        conn.execute(text(f"SET LOCAL maintenance_work_mem = '{wanted_kb}kB'"))
    conn.execute(text(f"CREATE INDEX ix_{INDEX_TABLE}_embedding ON {INDEX_TABLE} USING hnsw (embedding vector_cosine_ops)"))


def _literal(blob: bytes) -> str:
    """A little-endian float32 blob as pgvector's text form."""
    values = struct.unpack(f"<{len(blob) // 4}f", blob)
    return "[" + ",".join(repr(value) for value in values) + "]"


def _insert(conn: Connection, kind: str, rows: Sequence[Any]) -> None:
    if not rows:
        return
    if kind == "pgvector":
        _copy_in(conn, rows)
        return
    sql = f"INSERT INTO {INDEX_TABLE} (memory_id, namespace, embedding) VALUES (:id, :namespace, :vector)"
    params = [{"id": row[0], "namespace": row[1], "vector": row[2]} for row in rows]
    for chunk in chunked(params):
        conn.execute(text(sql), chunk)


# COPY's binary format: its signature, no flags, no header extension; then a tuple per row.
_COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack("!ii", 0, 0)


def _copy_in(conn: Connection, rows: Sequence[Any]) -> None:
    """(memory_id, namespace, blob) rows into the PostgreSQL index table by one binary COPY, in this
    transaction: no bound parameters however many, and each vector goes in pgvector's binary form
    (16-bit width, 16 unused bits, big-endian float32s) made from the blob's bytes: printing
    38 million floats as text for `CAST(... AS vector)` took 41 s (under a profiler) of an import
    of 100,000 records with vectors of 384."""
    with conn.connection.driver_connection.cursor() as cursor:
        with cursor.copy(f"COPY {INDEX_TABLE} (memory_id, namespace, embedding) FROM STDIN (FORMAT BINARY)") as copy:
            copy.write(_COPY_HEADER)
            for memory_id, namespace, blob in rows:
                values = array.array("f")
                values.frombytes(blob)  # little-endian float32 (`to_blob`) ...
                values.byteswap()  # ... reversed element by element: big-endian on any machine
                vector = struct.pack("!hh", len(values), 0) + values.tobytes()
                fields = [memory_id.encode(), namespace.encode(), vector]
                copy.write(struct.pack("!h", len(fields)) + b"".join(struct.pack("!i", len(field)) + field for field in fields))
            copy.write(struct.pack("!h", -1))


def _delete(conn: Connection, kind: str, ids: Sequence[str]) -> None:
    if not ids:
        return
    if kind == "sqlite-vec":
        # One statement per id: sqlite-vec looks a primary key up, but scans the table for an IN list.
        conn.execute(text(f"DELETE FROM {INDEX_TABLE} WHERE memory_id = :id"), [{"id": memory_id} for memory_id in ids])
        return
    statement = text(f"DELETE FROM {INDEX_TABLE} WHERE memory_id IN :ids").bindparams(bindparam("ids", expanding=True))
    for chunk in chunked(ids):  # an IN list of every id could pass the parameter limit
        conn.execute(statement, {"ids": chunk})


def _in_step_model(conn: Connection) -> tuple[str | None, str | None]:
    """(the backend, the model the index holds) when this connection can keep it; (None, None)
    when there is nothing to keep (no index) or it is stale already; marks it stale when it exists
    but this connection cannot keep it."""
    state = _state(conn)
    if state is None or state == STALE:
        return None, None
    kind = backend(conn)
    if kind is None:
        _set_state(conn, STALE)
        return None, None
    return kind, state


def remove(conn: Connection, ids: Sequence[str] | Select) -> None:
    """Memories leaving the live set (ids, or a query of them, read only when there is an index to
    keep): out of the index."""
    kind, _ = _in_step_model(conn)
    if kind is not None:
        _delete(conn, kind, list(conn.execute(ids).scalars()) if isinstance(ids, Select) else list(ids))


def add(conn: Connection, ids: Sequence[str]) -> None:
    """Memories that are live and may have a vector of the indexed model (restored, re-embedded):
    into the index, replacing what it held for them."""
    kind, model_name = _in_step_model(conn)
    if kind is None or not ids:
        return
    # Many at once on PostgreSQL: the HNSW index goes for the inserts and is built again after them,
    # in this transaction. Dropping it locks the table until the commit: other sessions' searches
    # wait for the import to commit.
    rebuild_hnsw = kind == "pgvector" and len(ids) >= PG_BULK_ROWS and len(ids) * 5 >= _held(conn)
    if rebuild_hnsw:
        conn.execute(text(f"DROP INDEX IF EXISTS ix_{INDEX_TABLE}_embedding"))
    _delete(conn, kind, list(ids))
    # Looked up by id; the model compared here, not in SQL, where SQLite would walk the model's
    # index over every vector instead.
    query = select(memories.c.id, memories.c.namespace, memory_vectors.c.vector, memory_vectors.c.model).join(
        memory_vectors, memory_vectors.c.memory_id == memories.c.id
    )
    if kind == "pgvector":
        # FOR SHARE: a memory another transaction is archiving right now (a put's update, a job)
        # is waited for and then left out. Read without the lock, it still looks live, and its
        # vector would enter the index after that transaction had taken it out.
        query = query.with_for_update(read=True, of=memories)
    width = _width(conn, kind)
    rows = [row[:3] for row in rows_in(conn, query, memories.c.id, list(ids)) if row.model == model_name and usable(row.vector, width)]
    _insert(conn, kind, rows)
    if rebuild_hnsw:
        _build_hnsw(conn)


def _width(conn: Connection, kind: str) -> int:
    """How many values the index's vectors hold, as it was built (`rebuild`'s `dim`)."""
    if kind == "sqlite-vec":
        declared = conn.execute(text("SELECT sql FROM sqlite_master WHERE name = :name"), {"name": INDEX_TABLE}).scalar_one()
        return int(re.search(r"float\[(\d+)\]", declared).group(1))
    # pgvector keeps a vector(n) column's n as its type modifier.
    return conn.execute(
        text("SELECT atttypmod FROM pg_attribute WHERE attrelid = CAST(:name AS regclass) AND attname = 'embedding'"), {"name": INDEX_TABLE}
    ).scalar_one()


def _held(conn: Connection) -> int:
    return conn.execute(text(f"SELECT count(*) FROM {INDEX_TABLE}")).scalar_one()


def depth_limit(conn: Connection) -> int | None:
    """The most neighbours one `nearest` call returns here (sqlite-vec's limit on k), or None when
    any depth is served. A caller that reaches it without a sure answer must search another way."""
    return SQLITE_MAX_K if conn.dialect.name == "sqlite" else None


def nearest(conn: Connection, query_blob: bytes, namespace: str, depth: int) -> list[tuple[str, float]]:
    """(id, cosine distance) of up to `depth` indexed memories of `namespace` nearest to the query,
    nearest first (an exact scan of the namespace on SQLite; HNSW, or an exact scan of a small
    namespace found by its b-tree, on PostgreSQL). `depth` must not exceed `depth_limit`."""
    if conn.dialect.name == "sqlite":
        rows = conn.execute(
            text(f"SELECT memory_id, distance FROM {INDEX_TABLE} WHERE embedding MATCH :vector AND namespace = :namespace "
                 "AND k = :k ORDER BY distance"),
            {"vector": query_blob, "namespace": namespace, "k": depth},
        )  # fmt: skip
        return [(row[0], float(row[1])) for row in rows]
    conn.execute(text("SET LOCAL hnsw.iterative_scan = relaxed_order"))
    conn.execute(text(f"SET LOCAL hnsw.ef_search = {max(PG_EF_SEARCH, min(depth, 1000))}"))
    rows = conn.execute(
        text(f"SELECT memory_id, embedding <=> CAST(:vector AS vector) AS distance FROM {INDEX_TABLE} "
             "WHERE namespace = :namespace ORDER BY embedding <=> CAST(:vector AS vector) LIMIT :k"),
        {"vector": _literal(query_blob), "namespace": namespace, "k": depth},
    )  # fmt: skip
    return [(row[0], float(row[1])) for row in rows]


def out_of_step(conn: Connection, model_name: str, unusable: Collection[str] = ()) -> tuple[list[str], list[str]]:
    """(ids the index holds that it should not, ids it should hold but does not): the check of
    `memstore check`, which reads both whole. The memories of `unusable` vectors are left out of
    both: the index never takes those vectors (it may still hold what one replaced), and the check
    reports them itself."""
    held = set(conn.execute(text(f"SELECT memory_id FROM {INDEX_TABLE}")).scalars()) - set(unusable)
    wanted = set(
        conn.execute(
            select(memories.c.id)
            .join(memory_vectors, memory_vectors.c.memory_id == memories.c.id)
            .where(memory_vectors.c.model == model_name)
        ).scalars()
    ) - set(unusable)
    return sorted(held - wanted), sorted(wanted - held)


def state(conn: Connection) -> str | None:
    """The model the index holds in step, 'stale', or None (no index)."""
    return _state(conn)


__all__ = [
    "INDEX_TABLE", "STALE", "add", "backend", "drop", "enable_pgvector", "exists", "fits", "nearest", "out_of_step", "ready",
    "rebuild", "remove", "state", "usable",
]  # fmt: skip
