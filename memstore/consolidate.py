"""The consolidation job in SQL: Stage 1 (a window query) and Stage 2 (ORDER BY ... LIMIT).

Like every job it archives the memories whose lifetime has ended first, in its own run
(`memstore.expire`), so an expired copy never wins its key group and expired memories take no
capacity; the rules then apply to the rest exactly as the reference (`memstore.reference`) says.
Prune (`memstore.prune`) reuses Stage 1.

Everything here runs on a connection the caller holds inside one write transaction, so a run is
applied whole or not at all, and a dry run is the same statements rolled back. Rows leave the live
set only through `memstore.runs`, which copies them whole into `memory_archive` first.
"""

from __future__ import annotations

from sqlalchemy import Connection, false, func, literal, select

from .db import chunked
from .expire import take_expired
from .live_counts import live_counts
from .runs import (
    ConsolidationReport,
    copy_to_archive,
    finish_run,
    high_water_mark,
    lock_jobs,
    merge_recall_history,
    remove_archived,
    start_run,
)
from .schema import RANK_ORDER, RANK_ORDER_FROM_BOTTOM, STAGE1_ORDER, memories


# -- the stages ---------------------------------------------------------------------------------


def stage1_deduplicate(conn: Connection, namespace: str, run_id: int, now: int, since: int | None = None) -> int:
    """Stage 1 over the whole namespace, or (with `since`) over the keys written after seq `since`.
    Returns how many memories it archived (all unpinned).

    Every group the last run saw ended clean (one unpinned survivor, or only pinned members), so
    only groups with a newer member can hold a duplicate.
    """
    in_namespace = memories.c.namespace == namespace
    if since is None:
        scopes = [[in_namespace]]
    else:
        # The new rows are a range of the table itself (seq is its rowid); the groups are then
        # read key by key off ix_memories_stage1.
        # No DISTINCT in SQL: it makes SQLite walk ix_memories_stage1 over the whole table to get
        # the rows in key order, instead of the short range of new rows.
        written = conn.execute(select(memories.c.namespace, memories.c.norm_key).where(memories.c.seq > since)).all()
        keys = sorted({key for key_namespace, key in written if key_namespace == namespace})
        scopes = [[in_namespace, memories.c.norm_key.in_(chunk)] for chunk in chunked(keys)]
    group = (memories.c.namespace, memories.c.norm_key)
    archived = 0
    for scope in scopes:
        # The window reads only columns ix_memories_stage1 holds, so it never touches the table;
        # whole rows are read for the losers alone.
        ranked = (
            select(
                memories.c.id,
                memories.c.pinned,
                func.row_number().over(partition_by=group, order_by=STAGE1_ORDER).label("group_rank"),
                func.first_value(memories.c.id).over(partition_by=group, order_by=STAGE1_ORDER).label("winner"),
            )
            .where(*scope)
            .subquery("ranked")
        )
        # Pinned memories are never archived, even when a pinned twin outranks them.
        losers = select(ranked.c.id, ranked.c.winner).where(ranked.c.group_rank > 1, ranked.c.pinned == false()).subquery("losers")
        doomed = select(*memories.c, losers.c.winner).join_from(losers, memories, memories.c.id == losers.c.id).subquery("doomed")
        archived += copy_to_archive(conn, doomed, "duplicate", doomed.c.winner, run_id, now)
    merge_recall_history(conn, namespace, run_id)
    remove_archived(conn, namespace, run_id, "duplicate")
    return archived


def _stage2_evict(
    conn: Connection, namespace: str, capacity: int, run_id: int, now: int, *, unpinned_count: int | None = None
) -> None:
    """Keep the first `capacity` unpinned memories in rank order, archive the rest.

    The full form reads the ranking from the top (ORDER BY ... LIMIT capacity). Given the number of
    unpinned rows, it takes the last count - capacity from the bottom of the same index instead,
    which costs the evictions rather than the store. Both archive the same rows.
    """
    unpinned = (memories.c.namespace == namespace, memories.c.pinned == false())
    if unpinned_count is not None:
        excess = unpinned_count - capacity
        if excess <= 0:
            return
        doomed = select(memories.c.id).where(*unpinned).order_by(*RANK_ORDER_FROM_BOTTOM).limit(excess)
        evicted = select(memories).where(memories.c.id.in_(doomed.scalar_subquery())).subquery("evicted")
    else:
        kept = select(memories.c.id).where(*unpinned).order_by(*RANK_ORDER).limit(capacity)
        evicted = select(memories).where(*unpinned, memories.c.id.not_in(kept.scalar_subquery())).subquery("evicted")
    copy_to_archive(conn, evicted, "evicted", literal(None), run_id, now)
    remove_archived(conn, namespace, run_id, "evicted")


def consolidate_in_transaction(
    conn: Connection,
    capacity: int,
    namespace: str | None,
    now: int,
    *,
    dry_run: bool = False,
    full: bool = False,
    list_kept: bool = False,
    stages: tuple[str, ...] = ("dedup", "evict"),
) -> ConsolidationReport:
    """Stage 1 then Stage 2 over one namespace (or all, when `namespace` is None), recorded as one run.

    Incremental unless `full` (or there is no earlier run, or the backend is PostgreSQL, where
    concurrent writers can commit a lower seq after a higher one, so a high-water mark could miss
    a write). `stages` may name one stage alone (`memstore maintain` runs each as its own run, of
    kind "dedup" or "evict"); `capacity` is unused without "evict".
    """
    lock_jobs(conn, namespace)
    dedup, evict = "dedup" in stages, "evict" in stages
    kind = "consolidate" if dedup and evict else "dedup" if dedup else "evict"
    report = ConsolidationReport(kind, None, namespace, capacity if evict else None, dry_run, started_at=now)
    incremental = not full and conn.dialect.name == "sqlite"
    counts = live_counts(conn, namespace, incremental=incremental)
    marks = {each: high_water_mark(conn, each) if incremental and dedup else None for each in sorted(counts)}
    run_id = start_run(conn, report, counts, stage1=dedup)
    # Expired copies never win a key group, and expired memories take no capacity.
    take_expired(conn, counts, namespace, run_id, now)
    report.incremental = any(mark is not None for mark in marks.values()) or (incremental and not dedup)
    for each, since in marks.items():
        archived = stage1_deduplicate(conn, each, run_id, now, since) if dedup else 0
        if evict:
            # Stage 1 archives unpinned rows only, and nothing else writes meanwhile (SQLite's lock);
            # the trigger-kept counts are exact, so without Stage 1 they are the count itself.
            exact = since is not None or (incremental and not dedup)
            unpinned_left = counts[each].unpinned - archived if exact else None
            _stage2_evict(conn, each, capacity, run_id, now, unpinned_count=unpinned_left)
    return finish_run(conn, report, run_id, counts, list_kept=list_kept)


__all__ = ["ConsolidationReport", "consolidate_in_transaction", "stage1_deduplicate"]
