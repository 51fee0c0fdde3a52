"""A person's overview of the store (the web page's first page): live and pinned memories and open
flags per namespace, one namespace's detail and the runs a health chart draws. Read from the live
counts, the run records and one namespace's index ranges, never a scan of the memories (the
staleness histogram, which reads every live memory of a namespace, is the report page's). Each
function runs on a connection inside the caller's read transaction (`MemoryStore.scoped(...).overview`),
at the caller's `now`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, func, select, text

from .defaults import DAY_MS, DEFAULT_NAMESPACE
from .live_counts import live_counts
from .schema import LIVE_COUNTS_TABLE, contradiction_flags, memories
from .schema import consolidation_runs as runs
from .schema import memory_archive as archive
from .vectors.storage import model_of

# The run chart shows at most this many of the newest runs.
CHART_RUNS = 60
# The overview's table shows this many namespaces, the largest first; the rest are a click away.
OVERVIEW_NAMESPACES = 50


@dataclass
class NamespaceRow:
    namespace: str
    live: int = 0
    pinned: int = 0
    open_flags: int = 0


@dataclass
class NamespaceDetail:
    """The figures of one namespace that need its rows: read for the namespace shown, not for all."""

    namespace: str
    expiring_week: int = 0
    archived: dict[str, int] = field(default_factory=dict)
    embedding_model: str | None = None  # None: the store has no embedding model


@dataclass
class Overview:
    rows: list[NamespaceRow]
    totals: NamespaceRow  # the whole store (or the page's one namespace)
    namespace_count: int
    detail: NamespaceDetail
    runs: list[dict[str, Any]]  # the chart's runs, oldest first


def namespace_rows(conn: Connection, namespace: str | None, *, limit: int | None) -> tuple[list[NamespaceRow], NamespaceRow, int]:
    """Live and pinned memories and open flags per namespace (one, or every one), the largest
    first (ties by name), at most `limit`; their totals (as a row named ""); and how many
    namespaces there are. Live counts are SQLite's trigger-kept ones, read as they are (the audit
    that counts every memory is a run's: `live_counts`); on PostgreSQL one pass over the rank index;
    flags are few."""
    rows: dict[str, NamespaceRow] = {}
    sqlite = conn.dialect.name == "sqlite"
    for name, count in live_counts(conn, namespace, incremental=sqlite, audit=False).items():
        rows[name] = NamespaceRow(name, count.unpinned + count.pinned, count.pinned)
    flags = select(contradiction_flags.c.namespace, func.count()).where(contradiction_flags.c.status == "open").group_by(contradiction_flags.c.namespace)
    if namespace is not None:
        flags = flags.where(contradiction_flags.c.namespace == namespace)
    for name, count in conn.execute(flags):
        rows.setdefault(name, NamespaceRow(name)).open_flags = count
    ordered = sorted(rows.values(), key=lambda row: (-row.live, row.namespace))
    totals = NamespaceRow("", sum(row.live for row in ordered), sum(row.pinned for row in ordered), sum(row.open_flags for row in ordered))
    return ordered[:limit], totals, len(ordered)


def namespace_detail(conn: Connection, namespace: str, now: int) -> NamespaceDetail:
    """Expiring within a week and archived by reason, for one namespace (its index ranges only)."""
    detail = NamespaceDetail(namespace)
    detail.expiring_week = conn.execute(
        select(func.count()).select_from(memories).where(
            memories.c.namespace == namespace, memories.c.expires_at.is_not(None),
            memories.c.expires_at > now, memories.c.expires_at <= now + 7 * DAY_MS,
        )
    ).scalar_one()  # fmt: skip
    archived = select(archive.c.reason, func.count()).where(archive.c.namespace == namespace).group_by(archive.c.reason)
    detail.archived = {reason: count for reason, count in conn.execute(archived)}
    # How many wait for a vector is a count over the namespace's rows: the embeddings page says it.
    model = model_of(conn)
    detail.embedding_model = None if model is None else model.name
    return detail


def suggested_namespaces(conn: Connection) -> list[str]:
    """Namespaces a search form suggests: on SQLite the largest OVERVIEW_NAMESPACES by the
    trigger-kept counts (one small table, read as it is: a suggestion may be a moment stale); on
    PostgreSQL none, since listing them means a pass over the rank index on every search."""
    if conn.dialect.name != "sqlite":
        return []
    query = text(f"SELECT namespace FROM {LIVE_COUNTS_TABLE} WHERE unpinned + pinned > 0 ORDER BY unpinned + pinned DESC, namespace LIMIT :n")
    return list(conn.execute(query, {"n": OVERVIEW_NAMESPACES}).scalars())


def run_series(conn: Connection, namespace: str | None) -> list[dict[str, Any]]:
    """The newest CHART_RUNS runs, oldest first, for the health charts (`namespace`: its own runs only)."""
    query = select(runs).order_by(runs.c.id.desc()).limit(CHART_RUNS)
    if namespace is not None:
        query = query.where(runs.c.namespace == namespace)
    return [dict(row) for row in reversed(conn.execute(query).mappings().all())]


def overview(conn: Connection, scope: str | None, chosen: str | None, now: int, *, show_all: bool) -> Overview:
    """The namespaces of `scope` (None: every one; the largest OVERVIEW_NAMESPACES unless
    `show_all`), the detail of `chosen` (None: the largest), and `scope`'s chart runs
    (scripts/bench/web.py times this as the page's baseline)."""
    rows, totals, count = namespace_rows(conn, scope, limit=None if show_all else OVERVIEW_NAMESPACES)
    if chosen is None:
        chosen = rows[0].namespace if rows else DEFAULT_NAMESPACE
    return Overview(rows, totals, count, namespace_detail(conn, chosen, now), run_series(conn, scope))


__all__ = [
    "CHART_RUNS", "NamespaceDetail", "NamespaceRow", "OVERVIEW_NAMESPACES", "Overview", "namespace_detail",
    "namespace_rows", "overview", "run_series", "suggested_namespaces",
]
