"""Restore: undo any run, whole. Above the job and the corrections, since it undoes both.

Every row a run archived goes back to the live set, whole (with a new seq, so the next incremental
run looks at its key) and the time it was out recorded in `memory_gaps`; recall history the run
merged onto survivors is taken back; an update's new version is archived as superseded by the old
one it replaced (the flags it took over move back); a contradict run's flags go, and a flag the run
settled opens again (memstore.flag_lifecycle).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, delete, insert, literal, select, update

from . import vector_index
from .db import chunked
from .errors import MemstoreError, NotFoundError
from .flag_lifecycle import reopen_flags
from .lifecycle import retire_update, undo_update
from .runs import forget_saved_marks, lock_jobs, undo_merges
from .schema import MEMORY_COLUMNS, memories
from .schema import consolidation_runs as runs
from .schema import contradiction_flags as flags
from .schema import memory_archive as archive
from .schema import memory_gaps as gaps


@dataclass
class RestoreReport:
    """What undoing a run did (or, for a dry run, would do)."""

    run_id: int
    kind: str
    restored_ids: list[str]  # back in the live set
    reopened_flags: list[int] = field(default_factory=list)  # flags the run had settled
    removed_flags: list[int] = field(default_factory=list)  # flags the run had raised
    retired: str | None = None  # the version an update wrote, archived again
    dry_run: bool = False

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def restore_in_transaction(conn: Connection, run_id: int, now: int, *, dry_run: bool = False) -> RestoreReport:
    """Put every row a run archived back into the live set, whole, and take back merged recall history
    (and, for an update, the version it wrote). A dry run does all of it and rolls it back: the
    report is exactly what the restore would do, or the error it would stop with."""
    lock_jobs(conn, None)
    run = conn.execute(select(runs.c.status, runs.c.kind, runs.c.params).where(runs.c.id == run_id)).first()
    if run is None:
        raise NotFoundError(f"no run {run_id}; `memstore runs` lists them")
    if run.status == "restored":
        raise MemstoreError(f"run {run_id} was already restored")
    written, carried = undo_update(conn, run_id, run.params) if run.kind == "update" else (None, None)
    restored_ids = list(
        conn.execute(select(archive.c.id).where(archive.c.run_id == run_id).order_by(archive.c.id)).scalars()
    )
    # The time each was out of the live set, for what was live at any past moment.
    conn.execute(
        insert(gaps).from_select(
            ["memory_id", "archived_at", "restored_at", "run_id"],
            select(archive.c.id, archive.c.archived_at, literal(now), archive.c.run_id).where(archive.c.run_id == run_id),
        )
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
    vector_index.add(conn, restored_ids)  # they kept their vectors while archived
    if carried is not None:
        for chunk in chunked(restored_ids):
            conn.execute(update(memories).where(memories.c.id.in_(chunk)).values(**carried))
        retire_update(conn, run_id, run.params or {}, written, restored_ids[0], now)
    undo_merges(conn, run_id)
    # A contradict run's flags go (and the next such run compares their pairs again); a flag the
    # run settled (a supersede, a forget, a merge, a dismissal) is open again.
    removed = list(conn.execute(select(flags.c.id).where(flags.c.run_id == run_id).order_by(flags.c.id)).scalars())
    conn.execute(delete(flags).where(flags.c.run_id == run_id))
    reopened = list(conn.execute(select(flags.c.id).where(flags.c.closed_by_run == run_id).order_by(flags.c.id)).scalars())
    reopen_flags(conn, run_id)
    if run.kind in ("semantic", "contradict"):
        forget_saved_marks(conn, run.kind)
    conn.execute(update(runs).where(runs.c.id == run_id).values(status="restored", restored_at=now))
    if dry_run:
        conn.get_transaction().rollback()
    return RestoreReport(run_id, run.kind, restored_ids, reopened, removed, written, dry_run)
