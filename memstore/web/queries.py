"""What the web page reads besides the `MemoryStore` calls the CLI makes: the overview's counts (from
the live counts, indexes and run records, never a scan of the memories), a page of memories in rank
order after a keyset cursor, and one run whole. Reads only; every action goes through MemoryStore.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, and_, func, or_, select

from ..hygiene import staleness
from ..live_counts import live_counts
from ..runs import archived_entries
from ..schema import RANK_ORDER, contradiction_flags, memories, unexpired
from ..schema import consolidation_runs as runs
from ..schema import memory_archive as archive

DAY_MS = 86_400_000
# The staleness histogram's bins (seed 002's score runs from 0 to 1).
STALENESS_BINS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
# The run chart shows at most this many of the newest runs.
CHART_RUNS = 60


@dataclass
class NamespaceFigures:
    namespace: str
    live: int = 0
    pinned: int = 0
    expiring_week: int = 0
    open_flags: int = 0
    archived: dict[str, int] = field(default_factory=dict)


def namespace_figures(conn: Connection, namespace: str | None, now: int) -> list[NamespaceFigures]:
    """Per namespace (one, or every one): live and pinned (SQLite's trigger-kept counts, else one
    pass over the rank index), expiring within a week (the expiry index), open flags and archived
    memories by reason (the archive's namespace index), in namespace order."""
    figures: dict[str, NamespaceFigures] = {}

    def of(name: str) -> NamespaceFigures:
        return figures.setdefault(name, NamespaceFigures(name))

    # SQLite keeps the counts by trigger; PostgreSQL counts them in one pass over the rank index.
    for name, count in live_counts(conn, namespace, incremental=conn.dialect.name == "sqlite").items():
        of(name).live, of(name).pinned = count.unpinned + count.pinned, count.pinned
    soon = (
        select(memories.c.namespace, func.count())
        .where(memories.c.expires_at.is_not(None), memories.c.expires_at > now, memories.c.expires_at <= now + 7 * DAY_MS)
        .group_by(memories.c.namespace)
    )
    flags = select(contradiction_flags.c.namespace, func.count()).where(contradiction_flags.c.status == "open").group_by(contradiction_flags.c.namespace)
    archived = select(archive.c.namespace, archive.c.reason, func.count()).group_by(archive.c.namespace, archive.c.reason)
    if namespace is not None:
        soon = soon.where(memories.c.namespace == namespace)
        flags = flags.where(contradiction_flags.c.namespace == namespace)
        archived = archived.where(archive.c.namespace == namespace)
    for name, count in conn.execute(soon):
        of(name).expiring_week = count
    for name, count in conn.execute(flags):
        of(name).open_flags = count
    for name, reason, count in conn.execute(archived):
        of(name).archived[reason] = count
    return [figures[name] for name in sorted(figures)]


def namespace_names(conn: Connection) -> list[str]:
    """The namespaces that hold live memories, from the live counts (SQLite's trigger-kept table, or
    one pass over PostgreSQL's rank index), not from a scan for distinct values, which at 1M rows
    costs seconds."""
    return sorted(live_counts(conn, None, incremental=conn.dialect.name == "sqlite"))


def run_series(conn: Connection, namespace: str | None) -> list[dict[str, Any]]:
    """The newest CHART_RUNS runs that changed something, oldest first, for the health charts (a
    namespace's page: its own runs only)."""
    query = select(runs).order_by(runs.c.id.desc()).limit(CHART_RUNS)
    if namespace is not None:
        query = query.where(runs.c.namespace == namespace)
    return [dict(row) for row in reversed(conn.execute(query).mappings().all())]


def staleness_histogram(conn: Connection, namespace: str, now: int) -> list[int]:
    """How many live memories of `namespace` fall in each STALENESS_BINS bin (the last bin holds
    1.0). Reads the namespace's rows: shown for one namespace at a time."""
    counts = [0] * (len(STALENESS_BINS) - 1)
    columns = (memories.c.id, memories.c.last_recalled_at, memories.c.updated_at, memories.c.created_at, memories.c.recall_count)
    query = select(*columns).where(memories.c.namespace == namespace, unexpired(memories, now))
    for row in conn.execute(query).mappings():
        score = staleness(row, now)
        counts[min(int(score / 0.2), len(counts) - 1)] += 1
    return counts


def memory_page(
    conn: Connection, namespace: str, now: int, *, after: tuple[int, int, str] | None, limit: int,
    pinned: bool | None = None, expiring_days: int | None = None,
) -> list[dict[str, Any]]:
    """Up to `limit` live memories of `namespace` in rank order (importance, newest, id), starting
    after the cursor `after` = (importance, timestamp, id) of the last row shown: a keyset page,
    as fast on page 1,000 as on page 1."""
    query = select(memories).where(memories.c.namespace == namespace, unexpired(memories, now))
    if pinned is not None:
        query = query.where(memories.c.pinned == pinned)
    if expiring_days is not None:
        query = query.where(memories.c.expires_at.is_not(None), memories.c.expires_at <= now + expiring_days * DAY_MS)
    if after is not None:
        importance, timestamp, last_id = after
        query = query.where(or_(
            memories.c.importance < importance,
            and_(memories.c.importance == importance, memories.c.timestamp < timestamp),
            and_(memories.c.importance == importance, memories.c.timestamp == timestamp, memories.c.id > last_id),
        ))  # fmt: skip
    return [dict(row) for row in conn.execute(query.order_by(*RANK_ORDER).limit(limit)).mappings()]


def run_whole(conn: Connection, run_id: int, namespace: str | None) -> dict[str, Any] | None:
    """One run: its row, what it archived (for a page kept to `namespace`, that namespace's only) and
    the flags it raised; None if there is no such run."""
    row = conn.execute(select(runs).where(runs.c.id == run_id)).mappings().first()
    if row is None or (namespace is not None and row["namespace"] not in (None, namespace)):
        return None
    entries = [entry for entry in archived_entries(conn, run_id) if namespace is None or entry.namespace == namespace]
    raised = select(contradiction_flags).where(contradiction_flags.c.run_id == run_id).order_by(contradiction_flags.c.id)
    if namespace is not None:
        raised = raised.where(contradiction_flags.c.namespace == namespace)
    return {**dict(row), "archived": entries, "flags": [dict(flag) for flag in conn.execute(raised).mappings()]}


__all__ = ["NamespaceFigures", "STALENESS_BINS", "memory_page", "namespace_figures", "namespace_names", "run_series", "run_whole", "staleness_histogram"]
