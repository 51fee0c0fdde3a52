"""seq becomes the live table's row key; the seq indexes go

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30

`memories.seq` becomes the primary key, assigned by the database: on SQLite the rowid itself, with
AUTOINCREMENT, so an insert that leaves it out (a shell insert included) gets a seq above every one
ever given, even after the largest row left, and a trigger refuses UPDATEs of it; on PostgreSQL a
BIGSERIAL. `id` stays unique and NOT NULL. The two seq indexes are dropped: the rowid order is the
seq order, and no one needs the archive's largest seq any more (a new write's seq only has to pass
the last run's high-water mark). Every delete from the live set and every archive copy then
maintains one B-tree less.

Existing rows are renumbered 1, 2, ... in their write order (rows with seq 0, older than revision
0003 or inserted from the shell, come first), so the runs' high-water marks no longer mean anything
and are cleared: the first run after this upgrade is a full one. On SQLite the table is rebuilt
(SQLite cannot change a primary key in place), which reads and writes the whole table once: its
indexes and triggers come back from their own stored DDL, the full-text index is rebuilt over the
new rowids, and a table holding columns memstore does not know is refused rather than rebuilt
without them.
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import text

from memstore.errors import SchemaError

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

COLUMNS_BEFORE_SEQ = (
    "id, namespace, text, norm_key, timestamp, importance, pinned, created_at, updated_at, "
    "last_recalled_at, recall_count, fact_key, meta"
)
COLUMN_DEFINITIONS = """
	id TEXT NOT NULL,
	namespace TEXT DEFAULT 'default' NOT NULL,
	text TEXT NOT NULL,
	norm_key TEXT NOT NULL,
	timestamp BIGINT NOT NULL,
	importance INTEGER NOT NULL,
	pinned BOOLEAN DEFAULT 0 NOT NULL,
	created_at BIGINT NOT NULL,
	updated_at BIGINT NOT NULL,
	last_recalled_at BIGINT,
	recall_count INTEGER DEFAULT 0 NOT NULL,
	fact_key TEXT,
	meta JSON,"""
CHECKS = """
	CONSTRAINT ck_memories_importance_range CHECK (importance BETWEEN 1 AND 5),
	CONSTRAINT ck_memories_recall_count_nonnegative CHECK (recall_count >= 0)"""

SQLITE_MEMORIES_AT_0005 = f"""CREATE TABLE memories ({COLUMN_DEFINITIONS}
	seq INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,{CHECKS},
	CONSTRAINT uq_memories_id UNIQUE (id)
)"""
SQLITE_MEMORIES_AT_0004 = f"""CREATE TABLE memories ({COLUMN_DEFINITIONS}
	seq BIGINT DEFAULT 0 NOT NULL,
	CONSTRAINT pk_memories PRIMARY KEY (id),{CHECKS}
)"""
# The write order is what the incremental job reads past, and the rowid the recall index is keyed
# by; AUTOINCREMENT keeps inserts above every seq ever given, but nothing would stop an UPDATE.
SEQ_GUARD = (
    "CREATE TRIGGER memories_seq_is_write_order BEFORE UPDATE OF seq ON memories WHEN new.seq IS NOT old.seq "
    "BEGIN SELECT RAISE(ABORT, 'memories.seq is the write order (and the rowid): it cannot be changed'); END"
)
SEQ_INDEXES = {
    "ix_memories_seq": "CREATE INDEX ix_memories_seq ON memories (seq)",
    "ix_memory_archive_seq": "CREATE INDEX ix_memory_archive_seq ON memory_archive (seq)",
}


def _rebuild_memories_sqlite(create_table: str, seq: str, skip: set[str]) -> None:
    """Change `memories` as SQLite's manual describes for changes ALTER TABLE cannot make: keep the
    rows aside, drop the table, create it anew, copy them back, recreate what hung on it.

    The rows wait in a temporary table and the new one is created under its own name, because
    ALTER TABLE RENAME would rewrite the user's views, and other tables' triggers, that name
    `memories`. The indexes and triggers of `memories` (a user's own included) come back from their
    stored DDL, so their exact text (DESC columns, trigger bodies) survives; `skip` names ones not to.
    """
    bind = op.get_bind()
    columns = [name for (name,) in bind.execute(text("SELECT name FROM pragma_table_info('memories') ORDER BY cid"))]
    unknown = [name for name in columns if name not in (*COLUMNS_BEFORE_SEQ.split(", "), "seq")]
    if unknown:
        raise SchemaError(
            f"memories has columns memstore does not know ({', '.join(unknown)}); this upgrade rebuilds the "
            "table and would drop them: move them to a table of your own first"
        )
    attached = bind.execute(
        text(
            "SELECT name, sql FROM sqlite_master WHERE tbl_name = 'memories' AND type IN ('index', 'trigger')"
            " AND sql IS NOT NULL ORDER BY type, name"
        )
    ).all()
    # A user's table may reference memories(id): dropping `memories` deletes its rows first, so let
    # foreign keys be checked at commit, when every id is back (this pragma ends with the transaction).
    op.execute("PRAGMA defer_foreign_keys = ON")
    op.execute(f"CREATE TEMP TABLE memories_rows AS SELECT {COLUMNS_BEFORE_SEQ}, {seq} AS seq FROM main.memories")
    # Its triggers go first, so dropping it fires none (nor the live counts' DELETE trigger).
    op.execute("DROP TABLE main.memories")
    op.execute(create_table)
    op.execute(f"INSERT INTO main.memories ({COLUMNS_BEFORE_SEQ}, seq) SELECT {COLUMNS_BEFORE_SEQ}, seq FROM memories_rows ORDER BY seq")
    op.execute("DROP TABLE temp.memories_rows")
    for name, ddl in attached:
        if name not in skip:
            op.execute(ddl)
    # The rows have new rowids: index them again.
    op.execute("INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')")


def upgrade() -> None:
    # Write order kept, numbered from 1; the old marks count in the old numbering.
    renumbered = "row_number() OVER (ORDER BY seq, rowid)"
    if op.get_bind().dialect.name == "sqlite":
        _rebuild_memories_sqlite(SQLITE_MEMORIES_AT_0005, renumbered, skip=set(SEQ_INDEXES))
        op.execute(SEQ_GUARD)
        op.execute("DROP INDEX ix_memory_archive_seq")
    else:
        op.execute(
            "UPDATE memories SET seq = renumbered.n FROM "
            "(SELECT id, row_number() OVER (ORDER BY seq, id) AS n FROM memories) AS renumbered "
            "WHERE memories.id = renumbered.id"
        )
        for index in SEQ_INDEXES:
            op.execute(f"DROP INDEX {index}")
        op.execute("ALTER TABLE memories DROP CONSTRAINT pk_memories")
        op.execute("ALTER TABLE memories ADD CONSTRAINT uq_memories_id UNIQUE (id)")
        op.execute("ALTER TABLE memories ADD CONSTRAINT pk_memories PRIMARY KEY (seq)")
        op.execute("ALTER TABLE memories ALTER COLUMN seq DROP DEFAULT")
        op.execute("CREATE SEQUENCE memories_seq_seq OWNED BY memories.seq")
        op.execute("SELECT setval('memories_seq_seq', (SELECT coalesce(max(seq), 0) + 1 FROM memories), false)")
        op.execute("ALTER TABLE memories ALTER COLUMN seq SET DEFAULT nextval('memories_seq_seq')")
    op.execute("UPDATE consolidation_runs SET high_water_seq = NULL")


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _rebuild_memories_sqlite(SQLITE_MEMORIES_AT_0004, "seq", skip={"memories_seq_is_write_order"})
        op.execute("DELETE FROM sqlite_sequence WHERE name = 'memories'")
    else:
        op.execute("ALTER TABLE memories ALTER COLUMN seq SET DEFAULT 0")
        op.execute("DROP SEQUENCE memories_seq_seq")
        op.execute("ALTER TABLE memories DROP CONSTRAINT pk_memories")
        op.execute("ALTER TABLE memories DROP CONSTRAINT uq_memories_id")
        op.execute("ALTER TABLE memories ADD CONSTRAINT pk_memories PRIMARY KEY (id)")
    for ddl in SEQ_INDEXES.values():
        op.execute(ddl)
