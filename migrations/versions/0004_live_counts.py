"""live counts per namespace, kept by triggers (SQLite)

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30

`memory_live_counts` holds, per namespace, how many live memories are unpinned and pinned, kept
exact by triggers on every insert, delete and namespace/pinned update of `memories`, so an
incremental run needs no pass over the live set to know how far past capacity a namespace is.
"Unpinned" is the stages' own predicate, `pinned = 0`. PostgreSQL runs are never incremental and
count as before, so it gets nothing here.
"""

from __future__ import annotations

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

# 1 for a row the stages treat as unpinned, else 0 (NULL, 2, '' ... are all "not = 0").
UNPINNED_NEW = "coalesce(new.pinned = 0, 0)"
UNPINNED_OLD = "coalesce(old.pinned = 0, 0)"

ADD_NEW = (
    "INSERT INTO memory_live_counts (namespace, unpinned, pinned) "
    f"VALUES (new.namespace, {UNPINNED_NEW}, 1 - {UNPINNED_NEW}) "
    "ON CONFLICT (namespace) DO UPDATE SET unpinned = unpinned + excluded.unpinned, pinned = pinned + excluded.pinned;"
)
SUBTRACT_OLD = (
    f"UPDATE memory_live_counts SET unpinned = unpinned - {UNPINNED_OLD}, pinned = pinned - (1 - {UNPINNED_OLD}) "
    "WHERE namespace = old.namespace;"
)

SQLITE_LIVE_COUNTS = [
    "CREATE TABLE memory_live_counts ("
    "namespace TEXT NOT NULL PRIMARY KEY, unpinned INTEGER NOT NULL, pinned INTEGER NOT NULL) WITHOUT ROWID",
    "INSERT INTO memory_live_counts (namespace, unpinned, pinned) "
    "SELECT namespace, sum(coalesce(pinned = 0, 0)), sum(1 - coalesce(pinned = 0, 0)) FROM memories GROUP BY namespace",
    f"CREATE TRIGGER memory_live_counts_after_insert AFTER INSERT ON memories BEGIN {ADD_NEW} END",
    f"CREATE TRIGGER memory_live_counts_after_delete AFTER DELETE ON memories BEGIN {SUBTRACT_OLD} END",
    "CREATE TRIGGER memory_live_counts_after_update AFTER UPDATE OF namespace, pinned ON memories "
    f"BEGIN {SUBTRACT_OLD} {ADD_NEW} END",
]


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for statement in SQLITE_LIVE_COUNTS:
            op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for event in ("insert", "delete", "update"):
            op.execute(f"DROP TRIGGER memory_live_counts_after_{event}")
        op.execute("DROP TABLE memory_live_counts")
