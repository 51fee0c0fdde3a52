"""The schema, defined once as SQLAlchemy Core tables. Table and column names are part of the
interface: people read them in the sqlite3 shell.

Times are Unix milliseconds in signed 64-bit integers (`timestamp`, `created_at`, ...), so the
consolidation rules compare plain numbers and `datetime(created_at / 1000, 'unixepoch')` reads them.

Every write and read path works on these tables; `memstore.models` maps typed ORM classes onto the
same tables for code that wants them. Keeping the ORM out of this module keeps it out of a
per-turn `memstore add`, which needs only Core.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    Table,
    Text,
    UniqueConstraint,
    false,
    or_,
    text as sql_text,
)

from .defaults import DEFAULT_NAMESPACE

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
# A 64-bit integer spelled INTEGER on SQLite, where INTEGER holds 64 bits already: SQLite makes a
# column the rowid only when its type is spelled exactly so (`seq`), and a file keeps its DDL when
# PostgreSQL's column grows to BIGINT (`recall_count`, revision 0010).
INT64_INTEGER = BigInteger().with_variant(Integer, "sqlite")

# Why a memory left the live set: the jobs (duplicate, evicted, stale), a hand edit (manual), the
# lifecycle operations (forgotten; superseded by an update or by a person's choice), a merge of the
# same fact said in other words (semantic_duplicate), and the end of its lifetime (expired).
ARCHIVE_REASONS = ("duplicate", "evicted", "stale", "manual", "forgotten", "superseded", "semantic_duplicate", "expired")
RUN_STATUSES = ("applied", "restored")
RUN_KINDS = ("consolidate", "prune", "forget", "update", "supersede", "dedup", "evict", "stale", "semantic", "contradict", "expire", "dismiss", "maintain", "restore")
# The time columns every memory row ends with, live or archived (added by revision 0009, after the
# others): when it stops being visible (None: never), and when it entered memstore (None for a row
# written before revision 0009 or in the sqlite3 shell: its created_at stands in).
TIME_COLUMNS = ("expires_at", "stored_at")
FLAG_STATUSES = ("open", "resolved", "dismissed")
# How a flag was settled: the archive reason of the side that left the live set, or a dismissal.
FLAG_VERDICTS = (*ARCHIVE_REASONS, "dismissed")

metadata = MetaData(naming_convention=NAMING_CONVENTION)


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN (" + ", ".join(f"'{value}'" for value in values) + ")"


def _memory_columns(*, id_is_key: bool) -> list[Column]:
    """Columns shared by the live set and the archive, so an archived row is the live row, whole."""
    return [
        # In the archive `id` is the key; in the live set the key is `seq` and `id` is unique.
        Column("id", CodePointText, primary_key=id_is_key, unique=not id_is_key, nullable=False),
        Column("namespace", CodePointText, nullable=False, server_default=DEFAULT_NAMESPACE),
        Column("text", Text, nullable=False),
        # Written by the application from normalize_key(text) on every write path; never taken from input.
        Column("norm_key", CodePointText, nullable=False),
        Column("timestamp", BigInteger, nullable=False),
        Column("importance", Integer, nullable=False),
        Column("pinned", Boolean, nullable=False, server_default=false()),
        Column("created_at", BigInteger, nullable=False),
        Column("updated_at", BigInteger, nullable=False),
        Column("last_recalled_at", BigInteger),
        Column("recall_count", INT64_INTEGER, nullable=False, server_default=sql_text("0")),
        Column("fact_key", CodePointText),
        Column("meta", JSON),
    ]


def _memory_checks() -> list[CheckConstraint]:
    return [
        CheckConstraint("importance BETWEEN 1 AND 5", name="importance_range"),
        CheckConstraint("recall_count >= 0", name="recall_count_nonnegative"),
    ]


# The live set: what recall sees and what consolidation ranks.
memories = Table(
    "memories",
    metadata,
    *_memory_columns(id_is_key=False),
    # Write order, assigned by the database: SQLite's rowid with AUTOINCREMENT (an insert that leaves
    # it out, a shell insert included, gets a seq above every one ever given, even after the largest
    # row left; a trigger refuses UPDATEs of it), PostgreSQL's BIGSERIAL. The job reads only rows
    # past its last high-water mark. `id` still names a memory (unique, the conflict target of
    # upserts); SQLite allows only its one INTEGER PRIMARY KEY to be the rowid, hence seq as the key.
    Column("seq", INT64_INTEGER, primary_key=True),
    Column("expires_at", BigInteger),
    Column("stored_at", BigInteger),
    *_memory_checks(),
    sqlite_autoincrement=True,
)

# Every record that left the live set, whole, with why and by which run. Nothing is hard-deleted.
memory_archive = Table(
    "memory_archive",
    metadata,
    *_memory_columns(id_is_key=True),
    # The seq the row had while it was live (in the numbering of its time: revision 0005
    # renumbered the live rows only).
    Column("seq", BigInteger, nullable=False, server_default=sql_text("0")),
    Column("archived_at", BigInteger, nullable=False),
    Column("reason", Text, nullable=False),
    # The memory that replaced this one (its survivor or successor); indexed so a history can walk
    # back from a version to the ones it replaced.
    Column("superseded_by", CodePointText, index=True),
    Column("run_id", Integer, ForeignKey("consolidation_runs.id"), index=True),
    # For a semantic_duplicate: the cosine similarity to the survivor that justified the merge.
    Column("similarity", Float),
    Column("expires_at", BigInteger),
    Column("stored_at", BigInteger),
    *_memory_checks(),
    CheckConstraint(_in("reason", ARCHIVE_REASONS), name="reason_known"),
)

# One row per applied job run: its parameters, what it did, and whether it was undone.
consolidation_runs = Table(
    "consolidation_runs",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("kind", Text, nullable=False, server_default="consolidate"),
    # NULL when the run covered every namespace.
    Column("namespace", CodePointText),
    Column("capacity", Integer),
    Column("params", JSON),
    Column("status", Text, nullable=False, server_default="applied"),
    Column("started_at", BigInteger, nullable=False),
    Column("finished_at", BigInteger, nullable=False),
    Column("live_before", Integer, nullable=False),
    Column("kept", Integer, nullable=False),
    Column("duplicates", Integer, nullable=False),
    Column("evicted", Integer, nullable=False),
    Column("stale", Integer, nullable=False, server_default=sql_text("0")),
    Column("restored_at", BigInteger),
    # The largest live seq when the run started: the next incremental run reads past it.
    Column("high_water_seq", BigInteger),
    # Memories the run archived because their lifetime had ended (revision 0009).
    Column("expired", Integer, nullable=False, server_default=sql_text("0")),
    # The `maintain` run whose phase this run was (revision 0013): restoring that one undoes them all.
    Column("parent_run_id", Integer, index=True),
    CheckConstraint(_in("status", RUN_STATUSES), name="status_known"),
)

# Recall history a run moved from archived duplicates onto their survivor, so restore can take it back.
memory_merges = Table(
    "memory_merges",
    metadata,
    Column("run_id", Integer, ForeignKey("consolidation_runs.id"), primary_key=True),
    Column("survivor_id", CodePointText, primary_key=True),
    Column("absorbed_recall_count", BigInteger, nullable=False),
    Column("last_recalled_at_before", BigInteger),
    Column("last_recalled_at_after", BigInteger),
)

# The times a memory was out of the live set and came back: archived by `run_id` at `archived_at`,
# restored at `restored_at`. With `stored_at` and the archive's `archived_at` they say, for any past
# moment, whether a memory was live then (`memstore list --as-of`).
memory_gaps = Table(
    "memory_gaps",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("memory_id", CodePointText, nullable=False, index=True),
    Column("archived_at", BigInteger, nullable=False),
    Column("restored_at", BigInteger, nullable=False),
    Column("run_id", Integer, ForeignKey("consolidation_runs.id"), nullable=False),
)

# Settings of the store itself, such as the embedding model in use ("embedding_model").
memstore_settings = Table(
    "memstore_settings",
    metadata,
    Column("key", Text, primary_key=True),
    Column("value", Text, nullable=False),
)

# One embedding per memory, live or archived (archiving and restoring keep it), for the model that
# made it: a little-endian float32 blob of `dim` numbers, unit length, so cosine is a dot product.
# Memories without a vector for the store's model are the ones `embeddings sync` embeds.
memory_vectors = Table(
    "memory_vectors",
    metadata,
    Column("memory_id", CodePointText, primary_key=True),
    Column("model", Text, nullable=False),
    Column("dim", Integer, nullable=False),
    Column("vector", LargeBinary, nullable=False),
    Column("embedded_at", BigInteger, nullable=False),
)
# A process holding the vectors in memory reads only those embedded since it last looked.
Index("ix_memory_vectors_model", memory_vectors.c.model, memory_vectors.c.embedded_at)

# Pairs of memories that may contradict each other, for a person to resolve (`memstore supersede`)
# or dismiss; never resolved by a job. `older_id` / `newer_id` by (timestamp, id): the newer side is
# probably current. A flag follows its memories (memstore.flag_lifecycle): it closes when a side
# leaves the live set and moves to the new version when a side is updated.
contradiction_flags = Table(
    "contradiction_flags",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("namespace", CodePointText, nullable=False),
    Column("older_id", CodePointText, nullable=False),
    Column("newer_id", CodePointText, nullable=False),
    Column("similarity", Float, nullable=False),
    Column("reason", Text, nullable=False),
    Column("status", Text, nullable=False, server_default="open"),
    Column("run_id", Integer, ForeignKey("consolidation_runs.id"), nullable=False, index=True),
    Column("flagged_at", BigInteger, nullable=False),
    Column("closed_at", BigInteger),
    # The run that settled it (a supersede, a forget, a job, a dismissal); restoring that run opens
    # the flag again.
    Column("closed_by_run", Integer),
    # How it was settled (revision 0012): the archive reason of the side that left (FLAG_VERDICTS),
    # or "dismissed"; NULL while open.
    Column("verdict", Text),
    # How sure the contradict phase is that the pair states two values of one attribute (0..1,
    # memstore.semantic.statements), and what in the texts showed the change ("a number differs:
    # 100 vs 500"); `reason` reads "subject: old → new". Revision 0014; NULL for older flags.
    Column("confidence", Float),
    Column("signal", Text),
    UniqueConstraint("older_id", "newer_id"),
    CheckConstraint(_in("status", FLAG_STATUSES), name="status_known"),
)

# Recall marks the memories with an open flag, looked up by either side (older_id by the unique index).
Index("ix_contradiction_flags_newer_id", contradiction_flags.c.newer_id)

# Objects that live in the database but not in these tables, SQLite only: the full-text index (and
# its shadow tables) and the live counts per namespace, both kept in step with `memories` by
# triggers. Alembic's comparison must leave them alone.
FTS_TABLE = "memories_fts"
LIVE_COUNTS_TABLE = "memory_live_counts"
LIVE_COUNTS_TRIGGERS = tuple(f"{LIVE_COUNTS_TABLE}_after_{event}" for event in ("insert", "delete", "update"))
# SQLite: refuses an UPDATE of memories.seq (the write order and the rowid the recall index uses).
SEQ_GUARD_TRIGGER = "memories_seq_is_write_order"
# Both backends: the live memories' vectors of the store's model, by namespace, where vector search
# runs in the database (a sqlite-vec table and its shadow tables; a pgvector table and its
# indexes); derived data kept by memstore.vectors.index, created when the extension is there.
VECTOR_INDEX_TABLE = "memory_vector_index"


def managed_outside_models(name: str | None) -> bool:
    return bool(name) and name.startswith((FTS_TABLE, LIVE_COUNTS_TABLE, VECTOR_INDEX_TABLE, f"ix_{VECTOR_INDEX_TABLE}"))


# The two orders of the rules, defined once: the job's SQL and the indexes below both use them.
# Stage 1, inside a (namespace, norm_key) group: a pinned memory wins, then the newest, then the
# more important, then the smallest id.
STAGE1_ORDER = (
    memories.c.pinned.desc(),
    memories.c.timestamp.desc(),
    memories.c.importance.desc(),
    memories.c.id,
)
def rank_order(columns) -> tuple:
    """Stage 2 ranking, importance DESC, timestamp DESC, id ASC, over any rows with a memory's
    columns (`memories.c`, or a subquery's `.c`)."""
    return (columns.importance.desc(), columns.timestamp.desc(), columns.id)


RANK_ORDER = rank_order(memories.c)
# The same ranking read from the bottom: the incremental job evicts the last rows first.
RANK_ORDER_FROM_BOTTOM = (memories.c.importance, memories.c.timestamp, memories.c.id.desc())

def unexpired(table: Table, now: int):
    """The rule of lifetimes, in SQL: a memory is visible until the moment it expires."""
    return or_(table.c.expires_at.is_(None), table.c.expires_at > now)


def is_unexpired(row, now: int) -> bool:
    """The same rule for a row already read."""
    return row["expires_at"] is None or row["expires_at"] > now


# Stage 1 walks each (namespace, norm_key) group in window order straight off this index.
Index("ix_memories_stage1", memories.c.namespace, memories.c.norm_key, *STAGE1_ORDER)
# Stage 2 reads the top `capacity` unpinned rows of a namespace without sorting the table.
Index("ix_memories_rank", memories.c.namespace, memories.c.pinned, *RANK_ORDER)
# A fact found by its key (the LangGraph store's item key) without a scan.
Index("ix_memories_fact_key", memories.c.namespace, memories.c.fact_key)
# What left a namespace after a moment, without reading the rest of the archive (`list --as-of`).
Index("ix_memory_archive_as_of", memory_archive.c.namespace, memory_archive.c.archived_at)
# The memories with a lifetime, by when it ends: the expire step reads the expired ones off it.
# Partial (WHERE expires_at IS NOT NULL) on both backends, as revision 0009 creates it. Only SQLite's
# predicate is declared, for `check`'s index comparison: declaring `postgresql_where` makes
# SQLAlchemy import the whole PostgreSQL dialect package, 25 ms of every `memstore add`.
Index("ix_memories_expires_at", memories.c.expires_at, sqlite_where=memories.c.expires_at.is_not(None))
# The same memories by namespace first (revision 0015): the overview counts one namespace's memories
# that expire within a week off it, reading those rows only (partial on both backends, as above).
Index(
    "ix_memories_namespace_expires_at", memories.c.namespace, memories.c.expires_at,
    sqlite_where=memories.c.expires_at.is_not(None),
)  # fmt: skip

MEMORY_COLUMNS = tuple(c.name for c in memories.columns)

__all__ = [
    "ARCHIVE_REASONS", "CodePointText", "INT64_INTEGER", "FTS_TABLE", "LIVE_COUNTS_TABLE", "LIVE_COUNTS_TRIGGERS", "MEMORY_COLUMNS",
    "NAMING_CONVENTION", "RANK_ORDER", "RANK_ORDER_FROM_BOTTOM", "rank_order", "RUN_KINDS", "RUN_STATUSES",
    "SEQ_GUARD_TRIGGER", "STAGE1_ORDER", "FLAG_STATUSES", "FLAG_VERDICTS", "VECTOR_INDEX_TABLE", "consolidation_runs", "contradiction_flags",
    "TIME_COLUMNS", "is_unexpired", "unexpired", "managed_outside_models", "memories", "memory_archive", "memory_gaps", "memory_merges", "memory_vectors",
    "memstore_settings",
    "metadata",
]  # fmt: skip
