"""archive reasons for forget, update, supersede and semantic merges; look-ups by successor and by fact key

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30

`memory_archive.reason` may now also be `forgotten` (a person or an agent forgot the memory),
`superseded` (an update or a person's choice replaced it; `superseded_by` names the successor) and
`semantic_duplicate` (merged into `superseded_by` as the same fact said in other words).
Two indexes: `ix_memory_archive_superseded_by`, so a memory's history can walk from a version to
the ones it replaced, and `ix_memories_fact_key` on (namespace, fact_key), so a fact is found by its
key (the LangGraph store's item key) without a scan.

On SQLite a CHECK constraint cannot be altered in place: `memory_archive` is rebuilt once, from its
own stored DDL with only the list of reasons changed, so its columns, their order and the user's own
indexes and triggers on it come back as they were. A downgrade refuses while archived rows carry
the new reasons (restore their runs first); it would otherwise have to drop or relabel them.
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import text

from memstore.errors import SchemaError

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

REASONS_BEFORE = ("duplicate", "evicted", "stale", "manual")
REASONS_AFTER = (*REASONS_BEFORE, "forgotten", "superseded", "semantic_duplicate")
CHECK_NAME = "ck_memory_archive_reason_known"
INDEXES = {
    "ix_memory_archive_superseded_by": "CREATE INDEX ix_memory_archive_superseded_by ON memory_archive (superseded_by)",
    "ix_memories_fact_key": "CREATE INDEX ix_memories_fact_key ON memories (namespace, fact_key)",
}


def _reason_check(reasons: tuple[str, ...]) -> str:
    return "CHECK (reason IN (" + ", ".join(f"'{reason}'" for reason in reasons) + "))"


def _rebuild_archive_sqlite(before: tuple[str, ...], after: tuple[str, ...]) -> None:
    """Recreate memory_archive with its reason CHECK listing `after` instead of `before` (SQLite's
    manual's procedure for changes ALTER TABLE cannot make: rows aside, drop, create, copy back)."""
    bind = op.get_bind()
    ddl = bind.execute(text("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'memory_archive'")).scalar_one()
    old_check = _reason_check(before)
    if ddl.count(old_check) != 1:
        raise SchemaError(
            f"memory_archive's {CHECK_NAME} is not `{old_check}` (changed by hand?); this upgrade rebuilds "
            "the table to change it: put the constraint back as memstore made it first"
        )
    attached = bind.execute(
        text(
            "SELECT name, sql FROM sqlite_master WHERE tbl_name = 'memory_archive' AND type IN ('index', 'trigger')"
            " AND sql IS NOT NULL ORDER BY type, name"
        )
    ).all()
    # A user's table may reference memory_archive: check its foreign keys at commit, when every row
    # is back (the pragma ends with the transaction).
    op.execute("PRAGMA defer_foreign_keys = ON")
    op.execute("CREATE TEMP TABLE memory_archive_rows AS SELECT * FROM main.memory_archive")
    op.execute("DROP TABLE main.memory_archive")
    op.execute(ddl.replace(old_check, _reason_check(after)))
    op.execute("INSERT INTO main.memory_archive SELECT * FROM temp.memory_archive_rows")
    op.execute("DROP TABLE temp.memory_archive_rows")
    for _, statement in attached:
        op.execute(statement)


def _change_reasons(before: tuple[str, ...], after: tuple[str, ...]) -> None:
    if op.get_bind().dialect.name == "sqlite":
        _rebuild_archive_sqlite(before, after)
    else:
        op.execute(f"ALTER TABLE memory_archive DROP CONSTRAINT {CHECK_NAME}")
        op.execute(f"ALTER TABLE memory_archive ADD CONSTRAINT {CHECK_NAME} {_reason_check(after)}")


def upgrade() -> None:
    _change_reasons(REASONS_BEFORE, REASONS_AFTER)
    for statement in INDEXES.values():
        op.execute(statement)


def downgrade() -> None:
    new_reasons = ", ".join(f"'{reason}'" for reason in REASONS_AFTER if reason not in REASONS_BEFORE)
    held = op.get_bind().execute(text(f"SELECT count(*) FROM memory_archive WHERE reason IN ({new_reasons})")).scalar_one()
    if held:
        raise SchemaError(
            f"{held} archived memories were forgotten, superseded or merged by meaning, which revision 0005 "
            "cannot record; "
            "restore their runs (memstore runs, memstore restore --run N) before downgrading"
        )
    for name in INDEXES:
        op.execute(f"DROP INDEX {name}")
    _change_reasons(REASONS_AFTER, REASONS_BEFORE)
