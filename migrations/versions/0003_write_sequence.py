"""write sequence and high-water mark for incremental consolidation

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30

Every row gets `seq`, its place in write order (0 for rows written before this revision), indexed
in both tables; each run records `high_water_seq`, the largest seq when it started, so the next
run can deduplicate only the keys written since.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


# Plain ADD COLUMN / CREATE INDEX, never a batch-mode table rebuild: a rebuild from reflection would
# drop the DESC of the job's indexes and the recall triggers on `memories`. Both backends can add a
# column with a default, and SQLite (>= 3.35) can drop one.


def upgrade() -> None:
    for table in ("memories", "memory_archive"):
        op.add_column(table, sa.Column("seq", sa.BigInteger(), server_default=sa.text("0"), nullable=False))
        op.create_index(f"ix_{table}_seq", table, ["seq"], unique=False)
    op.add_column("consolidation_runs", sa.Column("high_water_seq", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    op.drop_column("consolidation_runs", "high_water_seq")
    for table in ("memory_archive", "memories"):
        op.drop_index(f"ix_{table}_seq", table_name=table)
        op.drop_column(table, "seq")
