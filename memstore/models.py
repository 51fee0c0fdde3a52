"""The schema. Table and column names are part of the interface: people read them in the sqlite3 shell.

Times are Unix milliseconds in signed 64-bit integers (`timestamp`, `created_at`, ...), so the
consolidation rules compare plain numbers and `datetime(created_at / 1000, 'unixepoch')` reads them.
"""

from __future__ import annotations

from typing import Any, Optional

from sqlalchemy import (
    JSON,
    BigInteger,
    CheckConstraint,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Text,
    false,
    text as sql_text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# Every constraint gets a stable name; Alembic's batch mode on SQLite needs names to alter tables.
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# Ids, namespaces and keys compare and sort by code point on every backend: SQLite's default
# BINARY collation, PostgreSQL's "C" (its default collation would order "B", "a", "é" differently).
CodePointText = Text().with_variant(Text(collation="C"), "postgresql")

ARCHIVE_REASONS = ("duplicate", "evicted", "stale", "manual")
RUN_STATUSES = ("applied", "restored")
RUN_KINDS = ("consolidate", "prune")


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class MemoryColumns:
    """Columns shared by the live set and the archive, so an archived row is the live row, whole."""

    id: Mapped[str] = mapped_column(CodePointText, primary_key=True)
    namespace: Mapped[str] = mapped_column(CodePointText, server_default="default")
    text: Mapped[str] = mapped_column(Text)
    # Written by the application from normalize_key(text) on every write path; never taken from input.
    norm_key: Mapped[str] = mapped_column(CodePointText)
    timestamp: Mapped[int] = mapped_column(BigInteger)
    importance: Mapped[int] = mapped_column(Integer)
    pinned: Mapped[bool] = mapped_column(server_default=false())
    created_at: Mapped[int] = mapped_column(BigInteger)
    updated_at: Mapped[int] = mapped_column(BigInteger)
    last_recalled_at: Mapped[Optional[int]] = mapped_column(BigInteger)
    recall_count: Mapped[int] = mapped_column(Integer, server_default=sql_text("0"))
    fact_key: Mapped[Optional[str]] = mapped_column(CodePointText)
    meta: Mapped[Optional[dict[str, Any]]] = mapped_column(JSON)
    # Write order (see Memory.seq); in the archive, the seq the row had while it was live (in the
    # numbering of its time: revision 0005 renumbered the live rows only).
    seq: Mapped[int] = mapped_column(BigInteger, server_default=sql_text("0"))


# SQLite makes a column the rowid only when its type is spelled exactly INTEGER.
ROWID_BIGINT = BigInteger().with_variant(Integer, "sqlite")


class Memory(MemoryColumns, Base):
    """The live set: what recall sees and what consolidation ranks."""

    __tablename__ = "memories"
    __table_args__ = (
        CheckConstraint("importance BETWEEN 1 AND 5", name="importance_range"),
        CheckConstraint("recall_count >= 0", name="recall_count_nonnegative"),
        {"sqlite_autoincrement": True},
    )

    # `id` is what names a memory: unique and NOT NULL, the conflict target of upserts, and the
    # ORM's identity (session.get(Memory, "m1")), as when it was the table's primary key. The
    # table's key is `seq` (below), which SQLite allows only as its one INTEGER PRIMARY KEY.
    # sort_order keeps the columns in the archive's order: id first, seq last.
    id: Mapped[str] = mapped_column(CodePointText, unique=True, sort_order=-1)
    # Write order, assigned by the database: SQLite's rowid with AUTOINCREMENT (an insert that leaves
    # it out, a shell insert included, gets a seq above every one ever given, even after the largest
    # row left; a trigger refuses UPDATEs of it), PostgreSQL's BIGSERIAL. The job reads only rows
    # past its last high-water mark.
    seq: Mapped[int] = mapped_column(ROWID_BIGINT, primary_key=True, sort_order=1)

    __mapper_args__ = {"primary_key": [id]}


class ArchivedMemory(MemoryColumns, Base):
    """Every record that left the live set, whole, with why and by which run. Nothing is hard-deleted."""

    __tablename__ = "memory_archive"

    # sort_order puts the archive's own columns after the copied memory columns.
    archived_at: Mapped[int] = mapped_column(BigInteger, sort_order=1)
    reason: Mapped[str] = mapped_column(Text, sort_order=1)
    superseded_by: Mapped[Optional[str]] = mapped_column(CodePointText, sort_order=1)
    run_id: Mapped[Optional[int]] = mapped_column(
        ForeignKey("consolidation_runs.id"), index=True, sort_order=1
    )

    __table_args__ = (
        CheckConstraint("importance BETWEEN 1 AND 5", name="importance_range"),
        CheckConstraint("recall_count >= 0", name="recall_count_nonnegative"),
        CheckConstraint(
            "reason IN (" + ", ".join(f"'{r}'" for r in ARCHIVE_REASONS) + ")", name="reason_known"
        ),
    )


class ConsolidationRun(Base):
    """One row per applied job run: its parameters, what it did, and whether it was undone."""

    __tablename__ = "consolidation_runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(Text, server_default="consolidate")
    # NULL when the run covered every namespace.
    namespace: Mapped[Optional[str]] = mapped_column(CodePointText)
    capacity: Mapped[Optional[int]] = mapped_column(Integer)
    params: Mapped[Optional[dict[str, Any]]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(Text, server_default="applied")
    started_at: Mapped[int] = mapped_column(BigInteger)
    finished_at: Mapped[int] = mapped_column(BigInteger)
    live_before: Mapped[int] = mapped_column(Integer)
    kept: Mapped[int] = mapped_column(Integer)
    duplicates: Mapped[int] = mapped_column(Integer)
    evicted: Mapped[int] = mapped_column(Integer)
    stale: Mapped[int] = mapped_column(Integer, server_default=sql_text("0"))
    restored_at: Mapped[Optional[int]] = mapped_column(BigInteger)
    # The largest live seq when the run started: the next incremental run reads past it.
    high_water_seq: Mapped[Optional[int]] = mapped_column(BigInteger)

    __table_args__ = (
        CheckConstraint(
            "status IN (" + ", ".join(f"'{s}'" for s in RUN_STATUSES) + ")", name="status_known"
        ),
    )


class MemoryMerge(Base):
    """Recall history a run moved from archived duplicates onto their survivor, so restore can take it back."""

    __tablename__ = "memory_merges"

    run_id: Mapped[int] = mapped_column(ForeignKey("consolidation_runs.id"), primary_key=True)
    survivor_id: Mapped[str] = mapped_column(CodePointText, primary_key=True)
    absorbed_recall_count: Mapped[int] = mapped_column(BigInteger)
    last_recalled_at_before: Mapped[Optional[int]] = mapped_column(BigInteger)
    last_recalled_at_after: Mapped[Optional[int]] = mapped_column(BigInteger)


# Objects that live in the database but not in the models, SQLite only: the full-text index (and
# its shadow tables) and the live counts per namespace, both kept in step with `memories` by
# triggers. Alembic's comparison must leave them alone.
FTS_TABLE = "memories_fts"
LIVE_COUNTS_TABLE = "memory_live_counts"
LIVE_COUNTS_TRIGGERS = tuple(f"{LIVE_COUNTS_TABLE}_after_{event}" for event in ("insert", "delete", "update"))
# SQLite: refuses an UPDATE of memories.seq (the write order and the rowid the recall index uses).
SEQ_GUARD_TRIGGER = "memories_seq_is_write_order"


def managed_outside_models(name: str | None) -> bool:
    return bool(name) and name.startswith((FTS_TABLE, LIVE_COUNTS_TABLE))


_memories = Memory.__table__

# The two orders of the rules, defined once: the job's SQL and the indexes below both use them.
# Stage 1, inside a (namespace, norm_key) group: a pinned memory wins, then the newest, then the
# more important, then the smallest id.
STAGE1_ORDER = (
    _memories.c.pinned.desc(),
    _memories.c.timestamp.desc(),
    _memories.c.importance.desc(),
    _memories.c.id,
)
# Stage 2 ranking: importance DESC, timestamp DESC, id ASC.
RANK_ORDER = (_memories.c.importance.desc(), _memories.c.timestamp.desc(), _memories.c.id)
# The same ranking read from the bottom: the incremental job evicts the last rows first.
RANK_ORDER_FROM_BOTTOM = (_memories.c.importance, _memories.c.timestamp, _memories.c.id.desc())

# Stage 1 walks each (namespace, norm_key) group in window order straight off this index.
Index("ix_memories_stage1", _memories.c.namespace, _memories.c.norm_key, *STAGE1_ORDER)
# Stage 2 reads the top `capacity` unpinned rows of a namespace without sorting the table.
Index("ix_memories_rank", _memories.c.namespace, _memories.c.pinned, *RANK_ORDER)

MEMORY_COLUMNS = tuple(c.name for c in _memories.columns)
