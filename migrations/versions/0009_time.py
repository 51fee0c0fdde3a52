"""time in the store: lifetimes, the moment each memory entered the store, and the gaps restores close

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01

`memories.expires_at` (and the archive's): when a memory stops being visible, Unix ms, or NULL for
never; `ix_memories_expires_at` (a partial index over the memories that have one) lets the expire
step find the expired ones without reading the rest; `ix_memory_archive_as_of` finds what left a
namespace after a moment. `stored_at`: when the row entered memstore
(NULL for rows written before this revision or in the shell: their `created_at` stands in). The
archive reason `expired`, and each run's count of them (`consolidation_runs.expired`). `memory_gaps`: each time a restore brought a memory back, the time it had
been out (archived_at .. restored_at), so the store can say what was live at any past moment.

On SQLite the reason's CHECK constraint is changed as revision 0006 changed it: `memory_archive` is
rebuilt once from its own stored DDL (the new columns are added first, so the rebuilt table has
them). A downgrade refuses while archived rows are `expired` (restore their runs first).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import sqlalchemy as sa
from alembic import op
from sqlalchemy import text

from memstore.errors import SchemaError

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

# The procedure that changes the reasons, as revision 0006 wrote it (Alembic loads revisions by path).
_spec = importlib.util.spec_from_file_location("memstore_revision_0006", Path(__file__).with_name("0006_lifecycle_reasons.py"))
_reasons = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_reasons)
REASONS_BEFORE = _reasons.REASONS_AFTER
REASONS_AFTER = (*REASONS_BEFORE, "expired")
CODE_POINT_TEXT = sa.Text().with_variant(sa.Text(collation="C"), "postgresql")
TABLES = ("memories", "memory_archive")
COLUMNS = ("expires_at", "stored_at")


def upgrade() -> None:
    for table in TABLES:
        for column in COLUMNS:
            op.execute(f"ALTER TABLE {table} ADD COLUMN {column} BIGINT")
    op.execute("ALTER TABLE consolidation_runs ADD COLUMN expired INTEGER DEFAULT 0 NOT NULL")
    _reasons._change_reasons(REASONS_BEFORE, REASONS_AFTER)
    op.execute("CREATE INDEX ix_memories_expires_at ON memories (expires_at) WHERE expires_at IS NOT NULL")
    op.create_index("ix_memory_archive_as_of", "memory_archive", ["namespace", "archived_at"])
    op.create_table(
        "memory_gaps",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("memory_id", CODE_POINT_TEXT, nullable=False),
        sa.Column("archived_at", sa.BigInteger(), nullable=False),
        sa.Column("restored_at", sa.BigInteger(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["consolidation_runs.id"], name=op.f("fk_memory_gaps_run_id_consolidation_runs")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_memory_gaps")),
    )
    op.create_index(op.f("ix_memory_gaps_memory_id"), "memory_gaps", ["memory_id"])


def downgrade() -> None:
    held = op.get_bind().execute(text("SELECT count(*) FROM memory_archive WHERE reason = 'expired'")).scalar_one()
    if held:
        raise SchemaError(
            f"{held} archived memories expired, which revision 0008 cannot record; "
            "restore their runs (memstore runs, memstore restore --run N) before downgrading"
        )
    op.drop_index(op.f("ix_memory_gaps_memory_id"), table_name="memory_gaps")
    op.drop_table("memory_gaps")
    op.execute("DROP INDEX ix_memories_expires_at")
    op.drop_index("ix_memory_archive_as_of", table_name="memory_archive")
    _reasons._change_reasons(REASONS_AFTER, REASONS_BEFORE)
    op.execute("ALTER TABLE consolidation_runs DROP COLUMN expired")
    for table in TABLES:
        for column in COLUMNS:
            op.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
