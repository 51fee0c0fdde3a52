"""The prune job (the hygiene pass): exact duplicates by the Stage 1 rule, then stale memories,
pinned ones kept; after the expired ones leave, as in every job (`memstore.expire`).

Staleness is the hygiene report's figure (`memstore.hygiene.stale_ids`). Like every job this runs on
a connection the caller holds inside one write transaction; rows leave the live set only through
`memstore.runs`.
"""

from __future__ import annotations

from sqlalchemy import Connection, false, literal, select

from .consolidate import stage1_deduplicate
from .db import chunked
from .expire import take_expired
from .hygiene import stale_ids
from .live_counts import live_counts
from .runs import ConsolidationReport, copy_to_archive, finish_run, lock_jobs, remove_archived, start_run
from .schema import memories
from .validate import require_days, require_fraction


def _archive_stale(
    conn: Connection, namespace: str, run_id: int, now: int, ages_at: int, stale_threshold: float, min_age_days: int
) -> None:
    columns = ("id", "pinned", "created_at", "updated_at", "last_recalled_at", "recall_count")
    candidates = conn.execute(
        select(*(memories.c[name] for name in columns)).where(memories.c.namespace == namespace, memories.c.pinned == false())
    ).mappings()
    doomed = stale_ids(candidates, ages_at, stale_threshold, min_age_days)
    for chunk in chunked(doomed):
        rows = select(memories).where(memories.c.id.in_(chunk)).subquery("stale")
        copy_to_archive(conn, rows, "stale", literal(None), run_id, now)
    remove_archived(conn, namespace, run_id, "stale")


def prune_in_transaction(
    conn: Connection,
    namespace: str | None,
    now: int,
    *,
    ages_at: int,
    stale_threshold: float,
    min_age_days: int,
    dry_run: bool = False,
    list_kept: bool = False,
    stages: tuple[str, ...] = ("dedup", "stale"),
) -> ConsolidationReport:
    """The hygiene prune: exact duplicates by the Stage 1 rule, then stale memories; pinned kept.
    With `stages=("stale",)` only the stale ones, as a run of kind "stale"."""
    stale_threshold, min_age_days = require_fraction(stale_threshold, "stale_threshold"), require_days(min_age_days, "min_age_days")
    params = {"stale_threshold": stale_threshold, "min_age_days": min_age_days, "as_of": ages_at}  # the stored key, as runs before kept it
    lock_jobs(conn, namespace)
    dedup = "dedup" in stages
    report = ConsolidationReport("prune" if dedup else "stale", None, namespace, None, dry_run, params=params, started_at=now)
    counts = live_counts(conn, namespace, incremental=False)
    run_id = start_run(conn, report, counts, stage1=dedup)
    take_expired(conn, counts, namespace, run_id, now)
    for each in sorted(counts):
        if dedup:
            stage1_deduplicate(conn, each, run_id, now)
        _archive_stale(conn, each, run_id, now, ages_at, stale_threshold, min_age_days)
    return finish_run(conn, report, run_id, counts, list_kept=list_kept)


__all__ = ["prune_in_transaction"]
