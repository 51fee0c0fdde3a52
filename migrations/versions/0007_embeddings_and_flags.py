"""embeddings, contradiction flags, store settings; the similarity of a semantic merge

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30

`memory_vectors` holds one embedding per memory (live or archived: archiving keeps it) as a
little-endian float32 blob with its model and dimension, readable from the shell.
`memstore_settings` records the store's embedding model. `contradiction_flags` holds pairs of
memories that may contradict each other, open until a person resolves or dismisses them.
`memory_archive.similarity` records the cosine similarity behind a `semantic_duplicate` merge.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

CODE_POINT_TEXT = sa.Text().with_variant(sa.Text(collation="C"), "postgresql")

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "memstore_settings",
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_memstore_settings")),
    )
    op.create_table(
        "memory_vectors",
        sa.Column("memory_id", CODE_POINT_TEXT, nullable=False),
        sa.Column("model", sa.Text(), nullable=False),
        sa.Column("dim", sa.Integer(), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
        sa.Column("embedded_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("memory_id", name=op.f("pk_memory_vectors")),
    )
    op.create_index(op.f("ix_memory_vectors_model"), "memory_vectors", ["model", "embedded_at"])
    op.create_table(
        "contradiction_flags",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("namespace", CODE_POINT_TEXT, nullable=False),
        sa.Column("older_id", CODE_POINT_TEXT, nullable=False),
        sa.Column("newer_id", CODE_POINT_TEXT, nullable=False),
        sa.Column("similarity", sa.Float(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("status", sa.Text(), server_default="open", nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("flagged_at", sa.BigInteger(), nullable=False),
        sa.Column("closed_at", sa.BigInteger(), nullable=True),
        sa.Column("closed_by_run", sa.Integer(), nullable=True),
        sa.CheckConstraint("status IN ('open', 'resolved', 'dismissed')", name=op.f("ck_contradiction_flags_status_known")),
        sa.ForeignKeyConstraint(
            ["run_id"], ["consolidation_runs.id"], name=op.f("fk_contradiction_flags_run_id_consolidation_runs")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_contradiction_flags")),
        sa.UniqueConstraint("older_id", "newer_id", name=op.f("uq_contradiction_flags_older_id")),
    )
    op.create_index(op.f("ix_contradiction_flags_run_id"), "contradiction_flags", ["run_id"])
    op.add_column("memory_archive", sa.Column("similarity", sa.Float(), nullable=True))


def downgrade() -> None:
    # Plain DROP COLUMN (SQLite >= 3.35): a batch rebuild would rewrite the archive's DDL, whose
    # reason CHECK revision 0006's downgrade must find as it left it.
    op.execute("ALTER TABLE memory_archive DROP COLUMN similarity")
    op.drop_index(op.f("ix_contradiction_flags_run_id"), table_name="contradiction_flags")
    op.drop_table("contradiction_flags")
    op.drop_index(op.f("ix_memory_vectors_model"), table_name="memory_vectors")
    op.drop_table("memory_vectors")
    op.drop_table("memstore_settings")
