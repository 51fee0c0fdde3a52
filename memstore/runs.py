"""Runs and the archive: the layer under every operation that takes memories out of the live set.

A run is a row of `consolidation_runs`; every job, correction and merge is one. Rows leave the live
set only by being copied whole into `memory_archive` first, tagged with the run, and a run's
recall-history merges are recorded in `memory_merges`, so `restore` can undo any run exactly.
Everything here runs on a connection the caller holds inside one write transaction.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Float, bindparam, case, delete, false, func, insert, literal, or_, select, text, true, update

from .db import chunked, rows_in
from .flag_lifecycle import close_flags
from .lookups import stored_rows
from .live_counts import LiveCount
from .records import now_ms
from .schema import MEMORY_COLUMNS, RANK_ORDER, memories, memstore_settings
from .schema import consolidation_runs as runs
from .schema import memory_archive as archive
from .schema import memory_merges as merges
from .vectors import index as vector_index

# PostgreSQL advisory-lock key held by jobs over every namespace (shared by per-namespace jobs).
ALL_NAMESPACES_LOCK = 0x6D656D73746F7265  # "memstore"
# The archive's own columns, beside the memory's.
ARCHIVE_FIELDS = ("archived_at", "reason", "superseded_by", "run_id")
# The run kinds whose Stage 1 covers their namespaces whole; only their marks say "every key written
# up to here was deduplicated".
STAGE1_KINDS = ("consolidate", "prune", "dedup")


def lock_jobs(conn: Connection, namespace: str | None) -> None:
    """Serialise jobs on the same namespace. SQLite's BEGIN IMMEDIATE already serialises all writers;
    on PostgreSQL two jobs started at once would otherwise both plan from the same snapshot."""
    if conn.dialect.name != "postgresql":
        return
    if namespace is None:
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": ALL_NAMESPACES_LOCK})
    else:
        conn.execute(text("SELECT pg_advisory_xact_lock_shared(:key)"), {"key": ALL_NAMESPACES_LOCK})
        conn.execute(text("SELECT pg_advisory_xact_lock(hashtextextended(:namespace, 0))"), {"namespace": namespace})


def lock_key(conn: Connection, namespace: str, key: str) -> None:
    """Serialise writers of one (namespace, key) that read before they write (a LangGraph put). On
    SQLite BEGIN IMMEDIATE already does; on PostgreSQL two would read the same snapshot."""
    if conn.dialect.name == "postgresql":
        # Seed 1, so a key never takes the lock lock_jobs takes for a namespace of the same text.
        conn.execute(text("SELECT pg_advisory_xact_lock(hashtextextended(:name, 1))"), {"name": f"{namespace}\x1f{key}"})


@dataclass
class ArchivedEntry:
    id: str
    namespace: str
    reason: str
    superseded_by: str | None
    similarity: float | None = None  # the cosine behind a semantic_duplicate merge
    text: str | None = None  # what a person reads beside the id


@dataclass
class ConsolidationReport:
    """What a job run did (or, for a dry run, would do): consolidate, prune, or one maintain phase."""

    kind: str  # a RUN_KINDS value
    run_id: int | None  # None for a dry run
    namespace: str | None  # None: every namespace
    capacity: int | None
    dry_run: bool
    params: dict[str, Any] = field(default_factory=dict)
    live_before: int = 0
    started_at: int = 0
    finished_at: int = 0
    pinned_kept: int = 0
    # Every kept id, by namespace then rank order, only when asked for (list_kept=True): a report
    # grows with what a run changed, not with the size of the store.
    kept_ids: list[str] | None = None
    kept_count: int = 0
    incremental: bool = False
    archived: list[ArchivedEntry] = field(default_factory=list)
    checks: list[Any] = field(default_factory=list)  # recall_checks.RecallCheckResult, when the run had checks

    def _count(self, reason: str) -> int:
        return sum(1 for entry in self.archived if entry.reason == reason)

    @property
    def duplicates(self) -> int:
        return self._count("duplicate")

    @property
    def evicted(self) -> int:
        return self._count("evicted")

    @property
    def stale(self) -> int:
        return self._count("stale")

    @property
    def expired(self) -> int:
        return self._count("expired")

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "run_id": self.run_id,
            "namespace": self.namespace,
            "capacity": self.capacity,
            "params": self.params,
            "dry_run": self.dry_run,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "live_before": self.live_before,
            "incremental": self.incremental,
            "kept": self.kept_count,
            "pinned_kept": self.pinned_kept,
            "duplicates": self.duplicates,
            "evicted": self.evicted,
            "stale": self.stale,
            "expired": self.expired,
            **({} if self.kept_ids is None else {"kept_ids": self.kept_ids}),
            "archived": [entry.__dict__ for entry in self.archived],
            "checks": [check.__dict__ for check in self.checks],
        }


# -- recording a run ----------------------------------------------------------------------------


def insert_run(
    conn: Connection,
    kind: str,
    namespace: str | None,
    started_at: int,
    live_before: int,
    *,
    kept: int = 0,
    capacity: int | None = None,
    params: Mapping[str, Any] | None = None,
    high_water_seq: int | None = None,
) -> int:
    """Record a run as applied; returns its id."""
    return conn.execute(
        insert(runs).values(
            kind=kind, namespace=namespace, capacity=capacity, params=dict(params) if params else None,
            status="applied", started_at=started_at, finished_at=started_at, live_before=live_before,
            kept=kept, duplicates=0, evicted=0, stale=0, high_water_seq=high_water_seq,
        ).returning(runs.c.id)
    ).scalar_one()  # fmt: skip


def start_run(conn: Connection, report: ConsolidationReport, counts: dict[str, LiveCount], *, stage1: bool = True) -> int:
    """Record a job's run; a run that deduplicates records the high-water mark the next one reads past."""
    report.live_before = sum(count.unpinned + count.pinned for count in counts.values())
    return insert_run(
        conn, report.kind, report.namespace, report.started_at, report.live_before, capacity=report.capacity,
        params=report.params, high_water_seq=max_seq(conn) if stage1 else None,
    )  # fmt: skip


def finish_run(
    conn: Connection, report: ConsolidationReport, run_id: int, counts: dict[str, LiveCount], *, list_kept: bool = False
) -> ConsolidationReport:
    """Fill the report from what the run archived and what is left, and record its counts."""
    scope = [] if report.namespace is None else [memories.c.namespace == report.namespace]
    report.archived = archived_entries(conn, run_id)
    close_flags(conn, run_id, report.started_at)  # a flag follows its memories out of the live set
    if list_kept:
        # Pinned as the stages class it (not `pinned = 0`), not by the value's Python truth: a
        # shell '' is pinned to the stages but False once read back as a bool.
        is_unpinned = (memories.c.pinned == false()).label("is_unpinned")
        kept_rows = conn.execute(
            select(memories.c.id, is_unpinned).where(*scope).order_by(memories.c.namespace, *RANK_ORDER)
        ).all()
        report.kept_ids = [row.id for row in kept_rows]
        report.kept_count = len(kept_rows)
        report.pinned_kept = sum(1 for row in kept_rows if not row.is_unpinned)
    elif conn.dialect.name == "sqlite":
        # No one else writes while the job holds SQLite's write lock, and jobs never archive a
        # pinned memory: kept = before - archived, and every pinned memory is still there.
        report.kept_count = report.live_before - len(report.archived)
        report.pinned_kept = sum(count.pinned for count in counts.values())
    else:
        report.kept_count = conn.execute(select(func.count()).select_from(memories).where(*scope)).scalar_one()
        report.pinned_kept = conn.execute(
            select(func.count()).select_from(memories).where(*scope, memories.c.pinned == true())
        ).scalar_one()
    report.finished_at = now_ms()
    report.run_id = None if report.dry_run else run_id
    conn.execute(
        update(runs)
        .where(runs.c.id == run_id)
        .values(
            kept=report.kept_count, duplicates=report.duplicates, evicted=report.evicted,
            stale=report.stale, expired=report.expired, finished_at=report.finished_at,
        )
    )  # fmt: skip
    return report


# -- one maintain invocation's runs -------------------------------------------------------------


def group_phase(conn: Connection, parent_id: int, run_id: int) -> None:
    """Record run `run_id` as a phase of the maintain run `parent_id`."""
    conn.execute(update(runs).where(runs.c.id == run_id).values(parent_run_id=parent_id))


def group_finish(conn: Connection, parent_id: int, now: int) -> int | None:
    """Close a maintain run: its counts are its phases' (live before the first, kept after the last,
    what each archived and flagged); with no phase that changed anything it is taken back (None)."""
    phases = conn.execute(select(runs).where(runs.c.parent_run_id == parent_id).order_by(runs.c.id)).mappings().all()
    if not phases:
        conn.execute(delete(runs).where(runs.c.id == parent_id))
        return None
    params = dict(conn.execute(select(runs.c.params).where(runs.c.id == parent_id)).scalar_one() or {})
    params["runs"] = [phase["id"] for phase in phases]
    params["flagged"] = sum((phase["params"] or {}).get("flagged", 0) for phase in phases)
    totals = {name: sum(phase[name] for phase in phases) for name in ("duplicates", "evicted", "stale", "expired")}
    conn.execute(
        update(runs).where(runs.c.id == parent_id)
        .values(params=params, finished_at=now, live_before=phases[0]["live_before"], kept=phases[-1]["kept"], **totals)
    )  # fmt: skip
    return parent_id


# -- a maintain phase that changed nothing ------------------------------------------------------

# memstore_settings keys under which such a phase keeps how far it compared (its marks), which the
# next run of its kind reads past: "compared:KIND" for every namespace, "compared:KIND:NAMESPACE".
MARKS_PREFIX = "compared:"


def _marks_key(kind: str, namespace: str | None) -> str:
    return f"{MARKS_PREFIX}{kind}" if namespace is None else f"{MARKS_PREFIX}{kind}:{namespace}"


def drop_empty_run(conn: Connection, report: ConsolidationReport) -> bool:
    """Take back the run of a maintain phase that archived nothing and flagged nothing, so `memstore
    runs` lists only runs that changed something. What the next run of its kind reads past (a
    Stage 1 high-water mark; how far the semantic phases compared) is kept in memstore_settings."""
    if report.run_id is None or report.archived or getattr(report, "flags", None):
        return False
    row = conn.execute(select(runs.c.kind, runs.c.namespace, runs.c.params, runs.c.high_water_seq).where(runs.c.id == report.run_id)).one()
    params = row.params or {}
    marks = {name: params[name] for name in ("seq_through", "vectors_through") if name in params}
    if row.high_water_seq is not None:
        marks["high_water_seq"] = row.high_water_seq
    if marks:
        key = _marks_key(row.kind, row.namespace)
        conn.execute(delete(memstore_settings).where(memstore_settings.c.key == key))
        conn.execute(insert(memstore_settings).values(key=key, value=json.dumps(marks, sort_keys=True)))
    conn.execute(delete(runs).where(runs.c.id == report.run_id))
    report.run_id = None
    return True


def saved_marks(conn: Connection, kind: str, namespace: str) -> list[dict[str, Any]]:
    """The marks phases of `kind` that changed nothing kept for `namespace` (run over it, or over
    every namespace)."""
    keys = [_marks_key(kind, namespace), _marks_key(kind, None)]
    values = conn.execute(select(memstore_settings.c.value).where(memstore_settings.c.key.in_(keys))).scalars()
    return [json.loads(value) for value in values]


def forget_saved_marks(conn: Connection, kind: str) -> None:
    """Restoring a run of `kind` makes the next one compare from the last run still applied."""
    conn.execute(delete(memstore_settings).where(memstore_settings.c.key.startswith(f"{MARKS_PREFIX}{kind}", autoescape=True)))


# -- moving rows --------------------------------------------------------------------------------


def copy_to_archive(
    conn: Connection, rows, reason: str, superseded_by, run_id: int, now: int, *, similarity: float | None = None
) -> int:
    """Copy whole memory rows from the subquery `rows` into the archive; returns how many."""
    return conn.execute(
        insert(archive).from_select(
            [*MEMORY_COLUMNS, "archived_at", "reason", "superseded_by", "run_id", "similarity"],
            select(
                *(rows.c[name] for name in MEMORY_COLUMNS), literal(now), literal(reason), superseded_by,
                literal(run_id), literal(similarity, Float),
            ),
        )
    ).rowcount


def remove_archived(conn: Connection, namespace: str, run_id: int, reason: str) -> None:
    """Delete from the live set what this run has just copied to the archive for `reason`."""
    moved = select(archive.c.id).where(archive.c.run_id == run_id, archive.c.reason == reason, archive.c.namespace == namespace)
    # The rows first: their delete waits for a vector write holding them (FOR SHARE), whose index
    # entry the removal then sees; removed the other way round, that entry outlived its memory.
    conn.execute(delete(memories).where(memories.c.id.in_(moved)))
    vector_index.remove(conn, moved)


def archive_ids(
    conn: Connection, ids: Sequence[str], reason: str, superseded_by: str | None, run_id: int, now: int,
    *, similarity: float | None = None,
) -> None:
    """Copy the live rows of `ids` into the archive, whole, then take them out of the live set."""
    for chunk in chunked(ids):
        leaving = select(memories).where(memories.c.id.in_(chunk)).subquery("leaving")
        copy_to_archive(conn, leaving, reason, literal(superseded_by), run_id, now, similarity=similarity)
        conn.execute(delete(memories).where(memories.c.id.in_(chunk)))  # first: see remove_archived
        vector_index.remove(conn, chunk)


def archived_entries(conn: Connection, run_id: int) -> list[ArchivedEntry]:
    """What a run archived, by namespace, reason, then id."""
    return [
        ArchivedEntry(*row)
        for row in conn.execute(
            select(archive.c.id, archive.c.namespace, archive.c.reason, archive.c.superseded_by, archive.c.similarity, archive.c.text)
            .where(archive.c.run_id == run_id)
            .order_by(archive.c.namespace, archive.c.reason, archive.c.id)
        )
    ]


# -- recall history -----------------------------------------------------------------------------


def merge_recall_history(conn: Connection, namespace: str, run_id: int, reason: str = "duplicate") -> None:
    """Survivors inherit their archived duplicates' recall history; memory_merges records it for restore."""
    absorbed = conn.execute(
        select(archive.c.superseded_by, func.sum(archive.c.recall_count), func.max(archive.c.last_recalled_at))
        .where(
            archive.c.run_id == run_id,
            archive.c.reason == reason,
            archive.c.namespace == namespace,
            or_(archive.c.recall_count > 0, archive.c.last_recalled_at.is_not(None)),
        )
        .group_by(archive.c.superseded_by)
        .order_by(archive.c.superseded_by)
    ).all()
    if not absorbed:
        return
    survivor_ids = [row[0] for row in absorbed]
    before: dict[str, int | None] = dict(
        rows_in(conn, select(memories.c.id, memories.c.last_recalled_at), memories.c.id, survivor_ids)  # type: ignore[arg-type]
    )
    rows = []
    for survivor_id, count, latest in absorbed:
        known = [t for t in (before[survivor_id], latest) if t is not None]
        rows.append(
            {
                "run_id": run_id,
                "survivor_id": survivor_id,
                "absorbed_recall_count": count,
                "last_recalled_at_before": before[survivor_id],
                "last_recalled_at_after": max(known) if known else None,
            }
        )
    conn.execute(insert(merges), rows)
    conn.execute(
        update(memories)
        .where(memories.c.id == bindparam("b_id"))
        .values(recall_count=memories.c.recall_count + bindparam("b_count"), last_recalled_at=bindparam("b_after")),
        [{"b_id": r["survivor_id"], "b_count": r["absorbed_recall_count"], "b_after": r["last_recalled_at_after"]} for r in rows],
    )


def recall_carrier(conn: Connection, memory_id: str) -> str:
    """The version that holds `memory_id`'s recall history now: the memory itself, or, when an
    update replaced it, the version the update wrote (which took its counts), and so on."""
    chain = superseded_chain(conn, memory_id)
    carrier = memory_id
    for row, successor in zip(chain, chain[1:]):
        by_update = row["reason"] == "superseded" and conn.execute(select(runs.c.kind).where(runs.c.id == row["run_id"])).scalar() == "update"
        if not by_update:
            break
        carrier = successor["id"]
    return carrier


def undo_merges(conn: Connection, run_id: int) -> None:
    """Take back recall history the run moved onto survivors (from the version that carries it now),
    keeping any recall made since."""
    params = [
        {"b_id": recall_carrier(conn, m.survivor_id), "b_count": m.absorbed_recall_count,
         "b_before": m.last_recalled_at_before, "b_after": m.last_recalled_at_after}
        for m in conn.execute(select(merges).where(merges.c.run_id == run_id).order_by(merges.c.survivor_id))
    ]  # fmt: skip
    if not params:
        return
    for table in (memories, archive):
        remaining = table.c.recall_count - bindparam("b_count")
        conn.execute(
            update(table)
            .where(table.c.id == bindparam("b_id"))
            .values(
                recall_count=case((remaining < 0, 0), else_=remaining),
                last_recalled_at=case(
                    (table.c.last_recalled_at == bindparam("b_after"), bindparam("b_before")),
                    else_=table.c.last_recalled_at,
                ),
            ),
            params,
        )


# -- write order --------------------------------------------------------------------------------


def max_seq(conn: Connection) -> int:
    """The largest seq in the live set: a run's high-water mark. Every later write gets a larger
    one (SQLite's AUTOINCREMENT numbers each insert above every seq ever given, and a trigger
    refuses UPDATEs of seq), and archived rows need not count: a restored row is written again,
    with a new seq."""
    return conn.execute(select(func.coalesce(func.max(memories.c.seq), 0))).scalar_one()


def high_water_mark(conn: Connection, namespace: str) -> int | None:
    """The high-water mark of the last run whose Stage 1 covered `namespace` (or of a dedup phase
    that found nothing, which recorded no run); None if there was none."""
    recorded = conn.execute(
        select(func.max(runs.c.high_water_seq)).where(
            or_(runs.c.namespace == namespace, runs.c.namespace.is_(None)),
            runs.c.high_water_seq.is_not(None),
            runs.c.kind.in_(STAGE1_KINDS),
        )
    ).scalar_one()
    marks = [recorded, *(marks.get("high_water_seq") for marks in saved_marks(conn, "dedup", namespace))]
    known = [mark for mark in marks if mark is not None]
    return max(known) if known else None


# -- versions -----------------------------------------------------------------------------------


def superseded_chain(conn: Connection, memory_id: str) -> list[dict[str, Any]]:
    """`memory_id`'s row (live or archived), then each row that replaced it by `superseded_by`,
    up to a live row, an id no longer stored or a loop; [] when the id is unknown. The one walk of
    that chain: recall checks, corrections and histories all follow it here."""
    chain: list[dict[str, Any]] = []
    seen: set[str] = set()
    current: str | None = memory_id
    while current is not None and current not in seen:
        row = stored_rows(conn, [current]).get(current)
        if row is None:
            break
        chain.append(row)
        seen.add(current)
        if row.get("archived_at") is None:  # live: the end of the chain
            break
        current = row["superseded_by"]
    return chain
