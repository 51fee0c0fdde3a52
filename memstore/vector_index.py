"""The vector index: the live memories' vectors of the store's model, by namespace, inside the database.

SQLite: a sqlite-vec `vec0` virtual table with the namespace as its partition key and cosine
distance, so a search scans one namespace inside SQLite. PostgreSQL: a pgvector column behind an
HNSW index (cosine), the namespace filtered with iterative index scans, and a b-tree on the
namespace for the small ones. Both are named `memory_vector_index`:

    memory_id  the memory (live)        namespace  its namespace        embedding  its vector

The index is derived data. `memory_vectors` holds every vector (archived memories keep theirs), and
this table only what search needs. Nothing in the database keeps it in step (a trigger would need
the extension, and the file must stay usable from the plain `sqlite3` shell): memstore does, in the
same transactions, wherever memories become live or leave (`runs`, `restore`, the corrections) and
wherever vectors are written (`semantic.vectors`). `memstore_settings['vector_index']` names the
model the index holds when it is in step, and is 'stale' after a change this process could not
apply (a SQLite without sqlite-vec): search then takes the NumPy path, and the next
`embeddings sync` or `check --fix` rebuilds it.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Select, delete, insert, select, text

from .db import chunked, rows_in, vec_loaded
from .schema import VECTOR_INDEX_TABLE as INDEX_TABLE
from .schema import memories, memory_vectors, memstore_settings

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
    _insert(conn, kind, conn.execute(live).all())
    if kind == "pgvector":  # built over the rows, which is much quicker than row by row
        conn.execute(text(f"CREATE INDEX ix_{INDEX_TABLE}_embedding ON {INDEX_TABLE} USING hnsw (embedding vector_cosine_ops)"))
        conn.execute(text(f"CREATE INDEX ix_{INDEX_TABLE}_namespace ON {INDEX_TABLE} (namespace)"))
    _set_state(conn, model_name)
    return True


def _literal(blob: bytes) -> str:
    """A little-endian float32 blob as pgvector's text form."""
    values = struct.unpack(f"<{len(blob) // 4}f", blob)
    return "[" + ",".join(repr(value) for value in values) + "]"


def _insert(conn: Connection, kind: str, rows: Sequence[Any]) -> None:
    if not rows:
        return
    if kind == "sqlite-vec":
        sql = f"INSERT INTO {INDEX_TABLE} (memory_id, namespace, embedding) VALUES (:id, :namespace, :vector)"
        params = [{"id": row[0], "namespace": row[1], "vector": row[2]} for row in rows]
    else:
        sql = f"INSERT INTO {INDEX_TABLE} (memory_id, namespace, embedding) VALUES (:id, :namespace, CAST(:vector AS vector))"
        params = [{"id": row[0], "namespace": row[1], "vector": _literal(row[2])} for row in rows]
    for chunk in chunked(params):
        conn.execute(text(sql), chunk)


def _delete(conn: Connection, ids: Sequence[str]) -> None:
    # One statement per id: sqlite-vec looks a primary key up, but scans the table for an IN list.
    if ids:
        conn.execute(text(f"DELETE FROM {INDEX_TABLE} WHERE memory_id = :id"), [{"id": memory_id} for memory_id in ids])


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
        _delete(conn, list(conn.execute(ids).scalars()) if isinstance(ids, Select) else list(ids))


def add(conn: Connection, ids: Sequence[str]) -> None:
    """Memories that are live and may have a vector of the indexed model (restored, re-embedded):
    into the index, replacing what it held for them."""
    kind, model_name = _in_step_model(conn)
    if kind is None or not ids:
        return
    _delete(conn, list(ids))
    # Looked up by id; the model compared here, not in SQL, where SQLite would walk the model's
    # index over every vector instead.
    query = select(memories.c.id, memories.c.namespace, memory_vectors.c.vector, memory_vectors.c.model).join(
        memory_vectors, memory_vectors.c.memory_id == memories.c.id
    )
    rows = [row[:3] for row in rows_in(conn, query, memories.c.id, list(ids)) if row.model == model_name]
    _insert(conn, kind, rows)


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


def out_of_step(conn: Connection, model_name: str) -> tuple[list[str], list[str]]:
    """(ids the index holds that it should not, ids it should hold but does not): the check of
    `memstore check`, which reads both whole."""
    held = set(conn.execute(text(f"SELECT memory_id FROM {INDEX_TABLE}")).scalars())
    wanted = set(
        conn.execute(
            select(memories.c.id)
            .join(memory_vectors, memory_vectors.c.memory_id == memories.c.id)
            .where(memory_vectors.c.model == model_name)
        ).scalars()
    )
    return sorted(held - wanted), sorted(wanted - held)


def state(conn: Connection) -> str | None:
    """The model the index holds in step, 'stale', or None (no index)."""
    return _state(conn)


__all__ = [
    "INDEX_TABLE", "STALE", "add", "backend", "drop", "enable_pgvector", "exists", "nearest", "out_of_step", "ready",
    "rebuild", "remove", "state",
]  # fmt: skip
