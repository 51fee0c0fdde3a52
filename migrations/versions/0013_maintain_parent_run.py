"""a maintain invocation's phase runs grouped under one run

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-04

`consolidation_runs.parent_run_id` names the run of kind `maintain` whose phase a run was, so one
`restore --run PARENT` undoes every phase of one `memstore maintain`, newest first (each phase stays
undoable alone). NULL for every other run and for the runs written before this revision.
`ix_consolidation_runs_parent_run_id` finds a maintain run's phases.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("consolidation_runs", sa.Column("parent_run_id", sa.Integer(), nullable=True))
    op.create_index(op.f("ix_consolidation_runs_parent_run_id"), "consolidation_runs", ["parent_run_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_consolidation_runs_parent_run_id"), table_name="consolidation_runs")
    # Plain DROP COLUMN (SQLite >= 3.35), as revision 0012's downgrade drops a column.
    op.execute("ALTER TABLE consolidation_runs DROP COLUMN parent_run_id")
