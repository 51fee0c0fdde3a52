"""recall counts in 64 bits on PostgreSQL

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01

`recall_count` of `memories` and `memory_archive` was PostgreSQL's INTEGER, 32 bits. Merging
duplicates sums their counts, so two memories recalled a billion times each could not be merged:
the job failed with "integer out of range" every time it ran. Both columns become BIGINT there.
SQLite's INTEGER holds 64 bits already, so nothing changes in a SQLite file (its DDL included).

A downgrade refuses while a count is past what INTEGER holds.
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import text

from memstore.errors import SchemaError

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

TABLES = ("memories", "memory_archive")
INTEGER_MAX = 2**31 - 1


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for table in TABLES:
            op.execute(f"ALTER TABLE {table} ALTER COLUMN recall_count TYPE BIGINT")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    past = sum(
        op.get_bind().execute(text(f"SELECT count(*) FROM {table} WHERE recall_count > {INTEGER_MAX}")).scalar_one()
        for table in TABLES
    )
    if past:
        raise SchemaError(f"{past} memories have a recall count past {INTEGER_MAX:,}, which revision 0009 cannot hold; nothing was changed")
    for table in TABLES:
        op.execute(f"ALTER TABLE {table} ALTER COLUMN recall_count TYPE INTEGER")
