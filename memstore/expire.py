"""The expire job: the memories whose lifetime has ended leave the live set, as `expired`.

Every job (consolidate, prune, the maintenance phases) calls `take_expired` first, in its own run,
so an expired copy never wins its key group and expired memories take no capacity; `expire` alone
is `expire_in_transaction`. As in every job, this runs on a connection the caller holds inside one
write transaction, and rows leave the live set only through `memstore.runs`.
"""

from __future__ import annotations

from sqlalchemy import Connection, Select, false, func, literal, select

from .live_counts import LiveCount, live_counts
from .runs import ConsolidationReport, copy_to_archive, finish_run, lock_jobs, remove_archived, start_run
from .schema import memories


def _expired(namespace: str | None, now: int, *columns) -> Select:
    """`columns` of the memories of `namespace` (None: all) whose lifetime has ended by `now`, read
    off ix_memories_expires_at (which holds only the memories that have a lifetime)."""
    # `expires_at IS NOT NULL` changes no answer (`<=` is never true of NULL) but spells out the
    # index's own WHERE, and SQLite reads it as a second bound of the range. With the range
    # `expires_at <= now` alone, SQLite 3.40's planner (and 3.50's, over every namespace) costed the
    # count below, grouped by (namespace, pinned), cheaper as a walk of ix_memories_rank in group
    # order than as the range plus a sort: it read every memory (1.2 s at 500k). With both bounds
    # 3.40.1 and 3.50.4 both read the range. tests/test_plans.py explains each statement of the jobs.
    query = select(*columns).where(memories.c.expires_at.is_not(None), memories.c.expires_at <= now)
    if namespace is None:
        return query
    # `namespace || ''`, not `namespace`: SQLite's planner, without statistics, prefers an index for
    # an equality and would walk every memory of the namespace (3 s at a million) to find the few
    # with a lifetime. An expression no index holds keeps it on the expiry index.
    return query.where(memories.c.namespace.concat("") == namespace)


def archive_expired(conn: Connection, namespace: str | None, run_id: int, now: int) -> dict[str, LiveCount]:
    """Archive every memory of `namespace` (None: all) whose lifetime has ended by `now`, as
    `expired`, pinned or not (its own lifetime ends a memory; pinning protects it from the rules);
    returns how many, unpinned and pinned, per namespace."""
    found = conn.execute(
        _expired(namespace, now, memories.c.namespace, memories.c.pinned == false(), func.count())
        .group_by(memories.c.namespace, memories.c.pinned)
    ).all()
    expired: dict[str, LiveCount] = {}
    for each, unpinned, count in found:
        tally = expired.setdefault(each, LiveCount())
        if unpinned:
            tally.unpinned += count
        else:
            tally.pinned += count
    for each in sorted(expired):
        rows = _expired(each, now, memories).subquery("expired")
        copy_to_archive(conn, rows, "expired", literal(None), run_id, now)
        remove_archived(conn, each, run_id, "expired")
    return expired


def take_expired(conn: Connection, counts: dict[str, LiveCount], namespace: str | None, run_id: int, now: int) -> None:
    """The first step of every job: the expired memories go, and stop counting as live."""
    for each, gone in archive_expired(conn, namespace, run_id, now).items():
        if each in counts:
            counts[each].unpinned -= gone.unpinned
            counts[each].pinned -= gone.pinned


def expire_in_transaction(conn: Connection, namespace: str | None, now: int, *, dry_run: bool = False) -> ConsolidationReport:
    """Archive the memories whose lifetime has ended (`archive_expired`), as one run of kind `expire`;
    when none has, nothing is written and the report has no run (a sweeper's empty passes leave no
    trace)."""
    lock_jobs(conn, namespace)
    report = ConsolidationReport("expire", None, namespace, None, dry_run, started_at=now, finished_at=now)
    if conn.execute(_expired(namespace, now, memories.c.id).limit(1)).first() is None:
        return report
    counts = live_counts(conn, namespace, incremental=conn.dialect.name == "sqlite")
    run_id = start_run(conn, report, counts, stage1=False)
    take_expired(conn, counts, namespace, run_id, now)
    return finish_run(conn, report, run_id, counts)


__all__ = ["archive_expired", "expire_in_transaction", "take_expired"]
