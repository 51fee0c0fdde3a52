"""The consolidation job in SQL: Stage 1 (one window query), Stage 2 (ORDER BY ... LIMIT), archive, run row.

Everything here runs on a connection the caller holds inside one write transaction, so a run is
applied whole or not at all, and a dry run is the same statements rolled back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, delete, false, func, insert, literal, select, update

from .errors import MemstoreError, NotFoundError
from .records import now_ms
from .models import MEMORY_COLUMNS, RANK_ORDER, STAGE1_ORDER, ArchivedMemory, ConsolidationRun, Memory

memories = Memory.__table__
archive = ArchivedMemory.__table__
runs = ConsolidationRun.__table__


@dataclass
class ArchivedEntry:
    id: str
    namespace: str
    reason: str
    superseded_by: str | None


@dataclass
class ConsolidationReport:
    """What a run did (or, for a dry run, would do)."""

    run_id: int | None
    namespace: str | None  # None: every namespace
    capacity: int
    dry_run: bool
    live_before: int = 0
    started_at: int = 0
    finished_at: int = 0
    pinned_kept: int = 0
    kept_ids: list[str] = field(default_factory=list)  # by namespace, then rank order
    archived: list[ArchivedEntry] = field(default_factory=list)

    @property
    def duplicates(self) -> int:
        return sum(1 for entry in self.archived if entry.reason == "duplicate")

    @property
    def evicted(self) -> int:
        return sum(1 for entry in self.archived if entry.reason == "evicted")

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "namespace": self.namespace,
            "capacity": self.capacity,
            "dry_run": self.dry_run,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "live_before": self.live_before,
            "kept": len(self.kept_ids),
            "pinned_kept": self.pinned_kept,
            "duplicates": self.duplicates,
            "evicted": self.evicted,
            "kept_ids": self.kept_ids,
            "archived": [entry.__dict__ for entry in self.archived],
        }


def _archive_rows(conn: Connection, rows, reason: str, superseded_by, run_id: int, now: int) -> None:
    """Copy whole memory rows from the subquery `rows` into the archive, then remove them from the live set."""
    columns = [rows.c[name] for name in MEMORY_COLUMNS]
    conn.execute(
        insert(archive).from_select(
            [*MEMORY_COLUMNS, "archived_at", "reason", "superseded_by", "run_id"],
            select(*columns, literal(now), literal(reason), superseded_by, literal(run_id)),
        )
    )
    moved = select(archive.c.id).where(archive.c.run_id == run_id, archive.c.reason == reason)
    conn.execute(delete(memories).where(memories.c.id.in_(moved)))


def _stage1_deduplicate(conn: Connection, namespace: str, run_id: int, now: int) -> None:
    group = (memories.c.namespace, memories.c.norm_key)
    ranked = (
        select(
            *memories.c,
            func.row_number().over(partition_by=group, order_by=STAGE1_ORDER).label("group_rank"),
            func.first_value(memories.c.id).over(partition_by=group, order_by=STAGE1_ORDER).label("winner"),
        )
        .where(memories.c.namespace == namespace)
        .subquery("ranked")
    )
    # Pinned memories are never archived, even when a pinned twin outranks them.
    losers = select(ranked).where(ranked.c.group_rank > 1, ranked.c.pinned == false()).subquery("losers")
    _archive_rows(conn, losers, "duplicate", losers.c.winner, run_id, now)


def _stage2_evict(conn: Connection, namespace: str, capacity: int, run_id: int, now: int) -> None:
    unpinned = (memories.c.namespace == namespace, memories.c.pinned == false())
    kept = select(memories.c.id).where(*unpinned).order_by(*RANK_ORDER).limit(capacity)
    evicted = select(memories).where(*unpinned, memories.c.id.not_in(kept.scalar_subquery())).subquery("evicted")
    _archive_rows(conn, evicted, "evicted", literal(None), run_id, now)


def _count_live(conn: Connection, namespace: str | None) -> int:
    query = select(func.count()).select_from(memories)
    if namespace is not None:
        query = query.where(memories.c.namespace == namespace)
    return conn.execute(query).scalar_one()


def consolidate_in_transaction(
    conn: Connection, capacity: int, namespace: str | None, now: int, *, dry_run: bool = False
) -> ConsolidationReport:
    """Run both stages over one namespace (or all, when `namespace` is None) and record the run."""
    live_before = _count_live(conn, namespace)
    run_id = conn.execute(
        insert(runs).values(
            kind="consolidate", namespace=namespace, capacity=capacity, status="applied",
            started_at=now, finished_at=now, live_before=live_before, kept=0, duplicates=0, evicted=0,
        ).returning(runs.c.id)
    ).scalar_one()  # fmt: skip
    if namespace is None:
        namespaces = conn.execute(select(memories.c.namespace).distinct().order_by(memories.c.namespace)).scalars().all()
    else:
        namespaces = [namespace]
    for each in namespaces:
        _stage1_deduplicate(conn, each, run_id, now)
        _stage2_evict(conn, each, capacity, run_id, now)

    kept_query = select(memories.c.id, memories.c.pinned).order_by(memories.c.namespace, *RANK_ORDER)
    if namespace is not None:
        kept_query = kept_query.where(memories.c.namespace == namespace)
    kept = conn.execute(kept_query).all()
    kept_ids = [row.id for row in kept]
    archived = [
        ArchivedEntry(*row)
        for row in conn.execute(
            select(archive.c.id, archive.c.namespace, archive.c.reason, archive.c.superseded_by)
            .where(archive.c.run_id == run_id)
            .order_by(archive.c.namespace, archive.c.reason, archive.c.id)
        )
    ]
    report = ConsolidationReport(
        run_id=None if dry_run else run_id, namespace=namespace, capacity=capacity, dry_run=dry_run,
        live_before=live_before, started_at=now, finished_at=now_ms(),
        pinned_kept=sum(1 for row in kept if row.pinned), kept_ids=kept_ids, archived=archived,
    )  # fmt: skip
    conn.execute(
        update(runs)
        .where(runs.c.id == run_id)
        .values(
            kept=len(kept_ids), duplicates=report.duplicates, evicted=report.evicted, finished_at=report.finished_at
        )
    )
    return report


@dataclass
class RestoreReport:
    run_id: int
    restored_ids: list[str]


def restore_in_transaction(conn: Connection, run_id: int, now: int) -> RestoreReport:
    """Put every row a run archived back into the live set, whole, and mark the run restored."""
    status = conn.execute(select(runs.c.status).where(runs.c.id == run_id)).scalar_one_or_none()
    if status is None:
        raise NotFoundError(f"no run {run_id}; `memstore runs` lists them")
    if status == "restored":
        raise MemstoreError(f"run {run_id} was already restored")
    restored_ids = list(
        conn.execute(select(archive.c.id).where(archive.c.run_id == run_id).order_by(archive.c.id)).scalars()
    )
    conn.execute(
        insert(memories).from_select(
            list(MEMORY_COLUMNS),
            select(*(archive.c[name] for name in MEMORY_COLUMNS)).where(archive.c.run_id == run_id),
        )
    )
    conn.execute(delete(archive).where(archive.c.run_id == run_id))
    conn.execute(update(runs).where(runs.c.id == run_id).values(status="restored", restored_at=now))
    return RestoreReport(run_id=run_id, restored_ids=restored_ids)
