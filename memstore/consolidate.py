"""The jobs in SQL: consolidation (Stage 1 window query, Stage 2 ORDER BY ... LIMIT), prune, restore.

Everything here runs on a connection the caller holds inside one write transaction, so a run is
applied whole or not at all, and a dry run is the same statements rolled back. Rows leave the live
set only by being copied whole into `memory_archive` first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Float, bindparam, case, delete, false, func, insert, literal, or_, select, text, true, update

from .errors import MemstoreError, NotFoundError
from .hygiene import stale_ids
from .schema import (
    LIVE_COUNTS_TABLE,
    LIVE_COUNTS_TRIGGERS,
    MEMORY_COLUMNS,
    RANK_ORDER,
    RANK_ORDER_FROM_BOTTOM,
    STAGE1_ORDER,
    consolidation_runs as runs,
    contradiction_flags as flags,
    memories,
    memory_archive as archive,
    memory_merges as merges,
)
from .records import now_ms
from .search import CheckResult

# Bound parameters per statement stay well under SQLite's limit.
CHUNK = 500


@dataclass
class ArchivedEntry:
    id: str
    namespace: str
    reason: str
    superseded_by: str | None
    similarity: float | None = None  # the cosine behind a semantic_duplicate merge


@dataclass
class ConsolidationReport:
    """What a run did (or, for a dry run, would do)."""

    kind: str  # "consolidate" or "prune"
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
    checks: list[CheckResult] = field(default_factory=list)

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
            **({} if self.kept_ids is None else {"kept_ids": self.kept_ids}),
            "archived": [entry.__dict__ for entry in self.archived],
            "checks": [check.__dict__ for check in self.checks],
        }


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


def _remove_archived(conn: Connection, namespace: str, run_id: int, reason: str) -> None:
    """Delete from the live set what this run has just copied to the archive for `reason`."""
    moved = select(archive.c.id).where(archive.c.run_id == run_id, archive.c.reason == reason, archive.c.namespace == namespace)
    conn.execute(delete(memories).where(memories.c.id.in_(moved)))


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
    before: dict[str, int | None] = {}
    survivor_ids = [row[0] for row in absorbed]
    for start in range(0, len(survivor_ids), CHUNK):
        chunk = survivor_ids[start : start + CHUNK]
        before.update(conn.execute(select(memories.c.id, memories.c.last_recalled_at).where(memories.c.id.in_(chunk))).all())
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


def _undo_merges(conn: Connection, run_id: int) -> None:
    """Take back recall history the run moved onto survivors, keeping any recall made since."""
    params = [
        {"b_id": m.survivor_id, "b_count": m.absorbed_recall_count, "b_before": m.last_recalled_at_before, "b_after": m.last_recalled_at_after}
        for m in conn.execute(select(merges).where(merges.c.run_id == run_id).order_by(merges.c.survivor_id))
    ]
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


# The run kinds whose Stage 1 covers their namespaces whole; only their marks say "every key written
# up to here was deduplicated".
STAGE1_KINDS = ("consolidate", "prune", "dedup")


def _high_water_mark(conn: Connection, namespace: str) -> int | None:
    """The high-water mark of the last run whose Stage 1 covered `namespace`; None if there was none."""
    return conn.execute(
        select(func.max(runs.c.high_water_seq)).where(
            or_(runs.c.namespace == namespace, runs.c.namespace.is_(None)),
            runs.c.high_water_seq.is_not(None),
            runs.c.kind.in_(STAGE1_KINDS),
        )
    ).scalar_one()


# -- the stages ---------------------------------------------------------------------------------


def _stage1_deduplicate(conn: Connection, namespace: str, run_id: int, now: int, since: int | None = None) -> int:
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
        scopes = [[in_namespace, memories.c.norm_key.in_(keys[i : i + CHUNK])] for i in range(0, len(keys), CHUNK)]
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
    _remove_archived(conn, namespace, run_id, "duplicate")
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
    _remove_archived(conn, namespace, run_id, "evicted")


def _archive_stale(
    conn: Connection, namespace: str, run_id: int, now: int, as_of: int, stale_threshold: float, min_age_days: int
) -> None:
    columns = ("id", "pinned", "created_at", "updated_at", "last_recalled_at", "recall_count")
    candidates = conn.execute(
        select(*(memories.c[name] for name in columns)).where(memories.c.namespace == namespace, memories.c.pinned == false())
    ).mappings()
    doomed = stale_ids(candidates, as_of, stale_threshold, min_age_days)
    for start in range(0, len(doomed), CHUNK):
        rows = select(memories).where(memories.c.id.in_(doomed[start : start + CHUNK])).subquery("stale")
        copy_to_archive(conn, rows, "stale", literal(None), run_id, now)
    _remove_archived(conn, namespace, run_id, "stale")


# -- runs ---------------------------------------------------------------------------------------


# PostgreSQL advisory-lock key held by jobs over every namespace (shared by per-namespace jobs).
ALL_NAMESPACES_LOCK = 0x6D656D73746F7265  # "memstore"


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


@dataclass
class LiveCount:
    unpinned: int = 0
    pinned: int = 0


def _live_counts(conn: Connection, namespace: str | None, *, incremental: bool) -> dict[str, LiveCount]:
    """Live memories per namespace, unpinned and pinned ("unpinned" is the stages' own SQL
    predicate, `pinned = 0`, so a value a shell edit stored, 2 or '', is classed as they class it).

    An incremental run reads them from `memory_live_counts` (kept by triggers) instead of counting
    the live set; a full run, or a store whose counts cannot be trusted, counts in one pass.
    """
    rows = _counts_kept_by_triggers(conn) if incremental else None
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
    return {each: (count.unpinned, count.pinned) for each, count in _live_counts(conn, None, incremental=False).items()}


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
_LIVE_COUNTS_READ = text(f"SELECT namespace, unpinned, pinned FROM {LIVE_COUNTS_TABLE}")


def _counts_kept_by_triggers(conn: Connection) -> list[tuple[str, int, int]] | None:
    """The trigger-kept counts (SQLite), recounted first if they drifted; None without their triggers.

    The triggers see every insert, delete and namespace/pinned update, except one SQLite rule: the
    rows `INSERT OR REPLACE` (or `UPDATE OR REPLACE`) deletes to make room fire no DELETE trigger.
    Such a silent delete only ever leaves the counts above count(*), so equal totals mean exact counts.
    """
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


def _start_run(conn: Connection, report: ConsolidationReport, counts: dict[str, LiveCount], *, stage1: bool = True) -> int:
    """Record the run; a run that deduplicates records the high-water mark the next one reads past."""
    report.live_before = sum(count.unpinned + count.pinned for count in counts.values())
    return conn.execute(
        insert(runs).values(
            kind=report.kind, namespace=report.namespace, capacity=report.capacity, params=report.params or None,
            status="applied", started_at=report.started_at, finished_at=report.started_at,
            live_before=report.live_before, kept=0, duplicates=0, evicted=0, stale=0,
            high_water_seq=max_seq(conn) if stage1 else None,
        ).returning(runs.c.id)
    ).scalar_one()  # fmt: skip


def _finish_run(
    conn: Connection, report: ConsolidationReport, run_id: int, counts: dict[str, LiveCount], *, list_kept: bool = False
) -> ConsolidationReport:
    scope = [] if report.namespace is None else [memories.c.namespace == report.namespace]
    report.archived = [
        ArchivedEntry(*row)
        for row in conn.execute(
            select(archive.c.id, archive.c.namespace, archive.c.reason, archive.c.superseded_by, archive.c.similarity)
            .where(archive.c.run_id == run_id)
            .order_by(archive.c.namespace, archive.c.reason, archive.c.id)
        )
    ]
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
            stale=report.stale, finished_at=report.finished_at,
        )
    )  # fmt: skip
    return report


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
    counts = _live_counts(conn, namespace, incremental=incremental)
    marks = {each: _high_water_mark(conn, each) if incremental and dedup else None for each in sorted(counts)}
    run_id = _start_run(conn, report, counts, stage1=dedup)
    report.incremental = any(mark is not None for mark in marks.values()) or (incremental and not dedup)
    for each, since in marks.items():
        archived = _stage1_deduplicate(conn, each, run_id, now, since) if dedup else 0
        if evict:
            # Stage 1 archives unpinned rows only, and nothing else writes meanwhile (SQLite's lock);
            # the trigger-kept counts are exact, so without Stage 1 they are the count itself.
            exact = since is not None or (incremental and not dedup)
            unpinned_left = counts[each].unpinned - archived if exact else None
            _stage2_evict(conn, each, capacity, run_id, now, unpinned_count=unpinned_left)
    return _finish_run(conn, report, run_id, counts, list_kept=list_kept)


def prune_in_transaction(
    conn: Connection,
    namespace: str | None,
    now: int,
    *,
    as_of: int,
    stale_threshold: float,
    min_age_days: int,
    dry_run: bool = False,
    list_kept: bool = False,
    stages: tuple[str, ...] = ("dedup", "stale"),
) -> ConsolidationReport:
    """The hygiene prune: exact duplicates by the Stage 1 rule, then stale memories; pinned kept.
    With `stages=("stale",)` only the stale ones, as a run of kind "stale"."""
    params = {"stale_threshold": stale_threshold, "min_age_days": min_age_days, "as_of": as_of}
    lock_jobs(conn, namespace)
    dedup = "dedup" in stages
    report = ConsolidationReport("prune" if dedup else "stale", None, namespace, None, dry_run, params=params, started_at=now)
    counts = _live_counts(conn, namespace, incremental=False)
    run_id = _start_run(conn, report, counts, stage1=dedup)
    for each in sorted(counts):
        if dedup:
            _stage1_deduplicate(conn, each, run_id, now)
        _archive_stale(conn, each, run_id, now, as_of, stale_threshold, min_age_days)
    return _finish_run(conn, report, run_id, counts, list_kept=list_kept)


@dataclass
class RestoreReport:
    run_id: int
    restored_ids: list[str]


def restore_in_transaction(conn: Connection, run_id: int, now: int) -> RestoreReport:
    """Put every row a run archived back into the live set, whole, and take back merged recall history
    (and, for an update, the version it wrote)."""
    lock_jobs(conn, None)
    run = conn.execute(select(runs.c.status, runs.c.kind, runs.c.params).where(runs.c.id == run_id)).first()
    if run is None:
        raise NotFoundError(f"no run {run_id}; `memstore runs` lists them")
    if run.status == "restored":
        raise MemstoreError(f"run {run_id} was already restored")
    carried = None
    if run.kind == "update":
        from .lifecycle import undo_update

        carried = undo_update(conn, run_id, run.params)
    restored_ids = list(
        conn.execute(select(archive.c.id).where(archive.c.run_id == run_id).order_by(archive.c.id)).scalars()
    )
    # Restored rows count as written now: the database gives them new seqs (in id order), so the
    # next incremental run looks at their keys.
    copied = [archive.c[name] for name in MEMORY_COLUMNS if name != "seq"]
    conn.execute(
        insert(memories).from_select(
            [c.name for c in copied], select(*copied).where(archive.c.run_id == run_id).order_by(archive.c.id)
        )
    )
    conn.execute(delete(archive).where(archive.c.run_id == run_id))
    if carried is not None:
        conn.execute(update(memories).where(memories.c.id.in_(restored_ids)).values(**carried))
    _undo_merges(conn, run_id)
    # A contradict run's flags go; a flag a supersede run resolved is open again.
    conn.execute(delete(flags).where(flags.c.run_id == run_id))
    conn.execute(
        update(flags).where(flags.c.closed_by_run == run_id).values(status="open", closed_at=None, closed_by_run=None)
    )
    conn.execute(update(runs).where(runs.c.id == run_id).values(status="restored", restored_at=now))
    return RestoreReport(run_id=run_id, restored_ids=restored_ids)
