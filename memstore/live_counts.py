"""Live memories per namespace, unpinned and pinned: what a run counts before it starts.

SQLite keeps them in `memory_live_counts` with triggers, so an incremental run reads a few rows
instead of counting the live set; a full run, PostgreSQL, or a store whose counts cannot be
trusted, counts in one pass over `ix_memories_rank`.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, bindparam, false, func, select, text

from .schema import LIVE_COUNTS_TABLE, LIVE_COUNTS_TRIGGERS, memories


@dataclass
class LiveCount:
    unpinned: int = 0
    pinned: int = 0


def live_counts(conn: Connection, namespace: str | None, *, incremental: bool, audit: bool = True) -> dict[str, LiveCount]:
    """Live memories per namespace, unpinned and pinned ("unpinned" is the stages' own SQL
    predicate, `pinned = 0`, so a value a shell edit stored, 2 or '', is classed as they class it).

    An incremental run reads them from `memory_live_counts` (kept by triggers) instead of counting
    the live set; a full run, or a store whose counts cannot be trusted, counts in one pass.
    `audit=False` (a page that only shows them) reads the kept counts as they are, without the
    audit's count of every memory: a shell's `INSERT OR REPLACE` may leave them high until a run
    or `check` recounts.
    """
    rows = _counts_kept_by_triggers(conn, audit=audit) if incremental else None
    if rows is None:
        rows = _count_live_rows(conn, namespace)
    counts: dict[str, LiveCount] = {}
    if namespace is not None:
        counts[namespace] = LiveCount()  # a named namespace takes part in the run even when empty
    for each, unpinned, pinned in rows:
        if (namespace is None or each == namespace) and unpinned + pinned:
            live = counts.setdefault(each, LiveCount())
            live.unpinned += unpinned
            live.pinned += pinned
    return counts


def live_counts_by_namespace(conn: Connection) -> dict[str, tuple[int, int]]:
    """{namespace: (unpinned, pinned)} counted from the rows, for every namespace with live rows."""
    return {each: (count.unpinned, count.pinned) for each, count in live_counts(conn, None, incremental=False).items()}


def _count_live_rows(conn: Connection, namespace: str | None) -> list[tuple[str, int, int]]:
    """(namespace, unpinned, pinned) by one pass over ix_memories_rank, whose leading (namespace,
    pinned) columns are the groups; each stored pinned value is its own group, hence the sums."""
    is_unpinned = memories.c.pinned == false()
    query = select(memories.c.namespace, is_unpinned, func.count()).group_by(memories.c.namespace, memories.c.pinned)
    if namespace is not None:
        query = query.where(memories.c.namespace == namespace)
    return [(each, count if unpinned else 0, 0 if unpinned else count) for each, unpinned, count in conn.execute(query)]


# Whether memory_live_counts can be believed: every live row counted once (its total against
# count(*), one pass over the smallest index: ~5 ms at 900k rows, against ~45 ms for the grouped
# count) and all its triggers in place.
_LIVE_COUNTS_AUDIT = text(
    f"SELECT (SELECT count(*) FROM memories), (SELECT coalesce(sum(unpinned + pinned), 0) FROM {LIVE_COUNTS_TABLE}), "
    "(SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name IN :triggers)"
).bindparams(bindparam("triggers", value=list(LIVE_COUNTS_TRIGGERS), expanding=True))
_LIVE_COUNTS_TRIGGERS_READ = text("SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name IN :triggers").bindparams(
    bindparam("triggers", value=list(LIVE_COUNTS_TRIGGERS), expanding=True)
)
_LIVE_COUNTS_READ = text(f"SELECT namespace, unpinned, pinned FROM {LIVE_COUNTS_TABLE}")


def _counts_kept_by_triggers(conn: Connection, *, audit: bool = True) -> list[tuple[str, int, int]] | None:
    """The trigger-kept counts (SQLite), recounted first if they drifted; None without their triggers.

    The triggers see every insert, delete and namespace/pinned update, except one SQLite rule: the
    rows `INSERT OR REPLACE` (or `UPDATE OR REPLACE`) deletes to make room fire no DELETE trigger.
    Such a silent delete only ever leaves the counts above count(*), so equal totals mean exact counts.
    """
    if not audit:
        if conn.execute(_LIVE_COUNTS_TRIGGERS_READ).scalar_one() != len(LIVE_COUNTS_TRIGGERS):
            return None
        return [tuple(row) for row in conn.execute(_LIVE_COUNTS_READ)]
    live_rows, counted, triggers = conn.execute(_LIVE_COUNTS_AUDIT).one()
    if triggers != len(LIVE_COUNTS_TRIGGERS):
        return None
    if counted != live_rows:
        recount_live(conn)
    return [tuple(row) for row in conn.execute(_LIVE_COUNTS_READ)]


def recount_live(conn: Connection) -> None:
    """Rebuild memory_live_counts from the live set (SQLite)."""
    conn.execute(text(f"DELETE FROM {LIVE_COUNTS_TABLE}"))
    conn.execute(
        text(
            f"INSERT INTO {LIVE_COUNTS_TABLE} (namespace, unpinned, pinned) SELECT namespace, "
            "sum(coalesce(pinned = 0, 0)), sum(1 - coalesce(pinned = 0, 0)) FROM memories GROUP BY namespace"
        )
    )


_NAMESPACE_SHARE_READ = text(
    f"SELECT coalesce(sum(CASE WHEN namespace = :namespace THEN unpinned + pinned ELSE 0 END), 0), "
    f"coalesce(sum(CASE WHEN namespace = :namespace THEN 0 ELSE unpinned + pinned END), 0) FROM {LIVE_COUNTS_TABLE}"
)


def namespace_share(conn: Connection, namespace: str) -> tuple[int, int]:
    """How many live memories `namespace` holds, and how many the other namespaces hold. From the
    trigger-kept counts on SQLite (a row per namespace); on PostgreSQL the namespace is counted
    off its index, and the others counted only when one probe of that index on either side of it
    finds one. For weighing words, where a count a shell edit left off by a few changes nothing
    that matters."""
    if conn.dialect.name == "sqlite":
        held, elsewhere = conn.execute(_NAMESPACE_SHARE_READ, {"namespace": namespace}).one()
        return held, elsewhere
    held = conn.execute(select(func.count()).select_from(memories).where(memories.c.namespace == namespace)).scalar_one()
    other = (memories.c.namespace < namespace) | (memories.c.namespace > namespace)
    if conn.execute(select(memories.c.id).where(other).limit(1)).first() is None:
        return held, 0
    return held, conn.execute(select(func.count()).select_from(memories).where(other)).scalar_one()
