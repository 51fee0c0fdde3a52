"""recall index, merges, stale count

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29

Adds the full-text index recall searches (SQLite: an FTS5 table over `memories.text`, kept in step by
triggers on every insert, delete and text update, and rebuilt over the rows already there;
PostgreSQL: a GIN index on `to_tsvector('simple', text)`, which the server maintains itself), the
`memory_merges` table that lets `restore` take back recall history a run moved onto survivors, and
the per-run count of memories archived as stale.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

# Ids, namespaces and keys sort by code point on both backends (PostgreSQL: COLLATE "C").
CODE_POINT_TEXT = sa.Text().with_variant(sa.Text(collation="C"), "postgresql")

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

SQLITE_FTS = [
    "CREATE VIRTUAL TABLE memories_fts USING fts5("
    "text, content='memories', content_rowid='rowid', tokenize='unicode61 remove_diacritics 2')",
    "CREATE TRIGGER memories_fts_after_insert AFTER INSERT ON memories BEGIN "
    "INSERT INTO memories_fts(rowid, text) VALUES (new.rowid, new.text); END",
    "CREATE TRIGGER memories_fts_after_delete AFTER DELETE ON memories BEGIN "
    "INSERT INTO memories_fts(memories_fts, rowid, text) VALUES ('delete', old.rowid, old.text); END",
    "CREATE TRIGGER memories_fts_after_update AFTER UPDATE OF text ON memories BEGIN "
    "INSERT INTO memories_fts(memories_fts, rowid, text) VALUES ('delete', old.rowid, old.text); "
    "INSERT INTO memories_fts(rowid, text) VALUES (new.rowid, new.text); END",
    # An external-content index starts empty: index the rows that are already there.
    "INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')",
]


# PostgreSQL: full-text search over an expression index; the 'simple' configuration lowercases and
# does not stem, like FTS5's unicode61 tokenizer.
POSTGRESQL_FTS = "CREATE INDEX memories_fts_gin ON memories USING gin (to_tsvector('simple', text))"


def upgrade() -> None:
    op.create_table(
        "memory_merges",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("survivor_id", CODE_POINT_TEXT, nullable=False),
        sa.Column("absorbed_recall_count", sa.BigInteger(), nullable=False),
        sa.Column("last_recalled_at_before", sa.BigInteger(), nullable=True),
        sa.Column("last_recalled_at_after", sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(
            ["run_id"], ["consolidation_runs.id"], name=op.f("fk_memory_merges_run_id_consolidation_runs")
        ),
        sa.PrimaryKeyConstraint("run_id", "survivor_id", name=op.f("pk_memory_merges")),
    )
    with op.batch_alter_table("consolidation_runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("stale", sa.Integer(), server_default=sa.text("0"), nullable=False))
    if op.get_bind().dialect.name == "sqlite":
        for statement in SQLITE_FTS:
            op.execute(statement)
    else:
        op.execute(POSTGRESQL_FTS)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for trigger in ("after_insert", "after_delete", "after_update"):
            op.execute(f"DROP TRIGGER memories_fts_{trigger}")
        op.execute("DROP TABLE memories_fts")
    else:
        op.execute("DROP INDEX memories_fts_gin")
    with op.batch_alter_table("consolidation_runs", schema=None) as batch_op:
        batch_op.drop_column("stale")
    op.drop_table("memory_merges")
