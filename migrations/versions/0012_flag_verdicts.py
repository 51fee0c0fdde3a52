"""how each contradiction flag was settled; flags looked up by either side

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-03

A flag now follows its memories: it closes when a side leaves the live set, with that side's
archive reason as its verdict, and a dismissal is a run. `contradiction_flags.verdict` records how a
flag was settled (NULL while open); `ix_contradiction_flags_newer_id` lets recall find the open flags
of the memories it returns by either side (the unique index covers `older_id`).

The flags settled before this revision get their verdict: "dismissed" for a dismissal, "superseded"
for a supersede. An open flag a side of which has already left the live set (a forget or an update
left it open) is closed with that side's archive reason, by the run that archived it.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None



def _left(column: str) -> str:
    """`column` of the archived row of the side that left: the older side first when both did."""
    side = "SELECT a.{column} FROM memory_archive a WHERE a.id = contradiction_flags.{side}"
    return f"COALESCE(({side.format(column=column, side='older_id')}), ({side.format(column=column, side='newer_id')}))"


def upgrade() -> None:
    op.add_column("contradiction_flags", sa.Column("verdict", sa.Text(), nullable=True))
    op.create_index(op.f("ix_contradiction_flags_newer_id"), "contradiction_flags", ["newer_id"])
    op.execute("UPDATE contradiction_flags SET verdict = 'dismissed' WHERE status = 'dismissed'")
    op.execute("UPDATE contradiction_flags SET verdict = 'superseded' WHERE status = 'resolved'")
    op.execute(
        f"UPDATE contradiction_flags SET status = 'resolved', verdict = {_left('reason')},"
        f" closed_at = {_left('archived_at')}, closed_by_run = {_left('run_id')}"
        f" WHERE status = 'open' AND {_left('id')} IS NOT NULL"
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_contradiction_flags_newer_id"), table_name="contradiction_flags")
    # Plain DROP COLUMN (SQLite >= 3.35), as revision 0007's downgrade drops a column.
    op.execute("ALTER TABLE contradiction_flags DROP COLUMN verdict")
