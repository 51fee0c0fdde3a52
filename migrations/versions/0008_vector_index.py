"""the vector index: search by meaning inside the database, one namespace at a time

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01

`memory_vector_index` holds the live memories' vectors of the store's model with their namespace:
on SQLite a sqlite-vec `vec0` table (the namespace its partition key, cosine distance), on
PostgreSQL a pgvector column behind an HNSW index (cosine) and a b-tree on the namespace. It is
derived from `memories` and `memory_vectors`, built here for a store whose embeddings are enabled
when the connection has the extension, and otherwise later, by `memstore embeddings enable`,
`embeddings sync` or `check --fix` in a process that has it. `memstore_settings['vector_index']`
names the model it holds in step. No ordinary table changes.
"""

from __future__ import annotations

import struct

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

INDEX = "memory_vector_index"
STATE = "vector_index"


def _setting(conn, key: str) -> str | None:
    return conn.execute(sa.text("SELECT value FROM memstore_settings WHERE key = :key"), {"key": key}).scalar()


def _has_extension(conn) -> bool:
    if conn.dialect.name == "postgresql":
        return conn.execute(sa.text("SELECT 1 FROM pg_extension WHERE extname = 'vector'")).first() is not None
    try:
        with conn.begin_nested():
            conn.execute(sa.text("SELECT vec_version()"))
    except sa.exc.OperationalError:
        return False
    return True


def upgrade() -> None:
    conn = op.get_bind()
    model, dim = _setting(conn, "embedding_model"), _setting(conn, "embedding_dim")
    if model is None or not _has_extension(conn):
        return
    live = conn.execute(
        sa.text("SELECT m.id, m.namespace, v.vector FROM memories m JOIN memory_vectors v ON v.memory_id = m.id "
                "WHERE v.model = :model ORDER BY m.id"),
        {"model": model},
    ).all()  # fmt: skip
    if conn.dialect.name == "sqlite":
        conn.execute(sa.text(
            f"CREATE VIRTUAL TABLE {INDEX} USING vec0(memory_id text primary key, namespace text partition key, "
            f"embedding float[{int(dim)}] distance_metric=cosine, chunk_size=64)"
        ))  # fmt: skip
        rows = [{"id": i, "namespace": n, "vector": v} for i, n, v in live]
        insert = f"INSERT INTO {INDEX} (memory_id, namespace, embedding) VALUES (:id, :namespace, :vector)"
    else:
        conn.execute(sa.text(
            f'CREATE TABLE {INDEX} (memory_id text COLLATE "C" PRIMARY KEY, namespace text COLLATE "C" NOT NULL, '
            f"embedding vector({int(dim)}) NOT NULL)"
        ))  # fmt: skip
        conn.execute(sa.text(f"CREATE INDEX ix_{INDEX}_embedding ON {INDEX} USING hnsw (embedding vector_cosine_ops)"))
        conn.execute(sa.text(f"CREATE INDEX ix_{INDEX}_namespace ON {INDEX} (namespace)"))
        rows = [{"id": i, "namespace": n, "vector": "[" + ",".join(map(repr, struct.unpack(f"<{len(v) // 4}f", v))) + "]"} for i, n, v in live]
        insert = f"INSERT INTO {INDEX} (memory_id, namespace, embedding) VALUES (:id, :namespace, CAST(:vector AS vector))"
    if rows:
        conn.execute(sa.text(insert), rows)
    conn.execute(sa.text("DELETE FROM memstore_settings WHERE key = :key"), {"key": STATE})
    conn.execute(sa.text("INSERT INTO memstore_settings (key, value) VALUES (:key, :value)"), {"key": STATE, "value": model})


def downgrade() -> None:
    conn = op.get_bind()
    exists = (
        conn.execute(sa.text("SELECT 1 FROM sqlite_master WHERE name = :name"), {"name": INDEX}).first() is not None
        if conn.dialect.name == "sqlite"
        else sa.inspect(conn).has_table(INDEX)
    )
    if exists:
        if conn.dialect.name == "sqlite" and not _has_extension(conn):
            raise RuntimeError(
                f"{INDEX} is a sqlite-vec table, which only a connection with sqlite-vec loaded can drop: "
                "install memstore's semantic extra (pip install 'memstore[semantic]') to downgrade"
            )
        conn.execute(sa.text(f"DROP TABLE {INDEX}"))
    conn.execute(sa.text("DELETE FROM memstore_settings WHERE key = :key"), {"key": STATE})
