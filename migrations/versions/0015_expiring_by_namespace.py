"""the memories with a lifetime, by namespace and when it ends

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-04

`ix_memories_namespace_expires_at` (namespace, expires_at), partial (WHERE expires_at IS NOT NULL)
like revision 0009's `ix_memories_expires_at`: the overview counts the memories of one namespace
that expire within a week off it, reading only those rows. Before it SQLite answered that count by
walking every memory of the namespace (`ix_memories_fact_key`, 29 ms for a namespace of 91,000
memories), since neither index it had held both the namespace and the end of a lifetime. A
downgrade drops the index.
"""

from __future__ import annotations

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Raw DDL as 0009 writes its partial index: the same predicate on SQLite and PostgreSQL.
    op.execute(
        "CREATE INDEX ix_memories_namespace_expires_at ON memories (namespace, expires_at) WHERE expires_at IS NOT NULL"
    )


def downgrade() -> None:
    op.execute("DROP INDEX ix_memories_namespace_expires_at")
