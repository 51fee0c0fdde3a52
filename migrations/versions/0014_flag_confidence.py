"""a contradiction flag's confidence and signal

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-04

A flag now means one subject, one attribute, two values that cannot both hold (issue 41):
`contradiction_flags.reason` reads "subject: old → new", `confidence` (0..1) ranks the flags and
decides which `maintain --resolve-updates` settles, `signal` keeps what in the texts showed the
change ("a number differs: 100 vs 500"). A flag raised before this revision keeps its reason, which
was that signal: it is copied into `signal`; its confidence stays NULL (unknown).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("contradiction_flags", sa.Column("confidence", sa.Float(), nullable=True))
    op.add_column("contradiction_flags", sa.Column("signal", sa.Text(), nullable=True))
    op.execute("UPDATE contradiction_flags SET signal = reason")


def downgrade() -> None:
    # Plain DROP COLUMN (SQLite >= 3.35), as revision 0012's downgrade drops a column.
    op.execute("ALTER TABLE contradiction_flags DROP COLUMN signal")
    op.execute("ALTER TABLE contradiction_flags DROP COLUMN confidence")
