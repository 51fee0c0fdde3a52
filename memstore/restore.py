"""Restore: undo any run, whole, or bring one archived memory back. Above the job and the
corrections, since it undoes both.

Every row a run archived goes back to the live set, whole (with a new seq, so the next incremental
run looks at its key) and the time it was out recorded in `memory_gaps`; recall history the run
merged onto survivors is taken back; an update's new version is archived as superseded by the old
one it replaced (the flags it took over move back); a contradict run's flags go, and a flag the run
settled opens again (memstore.flag_lifecycle). A `maintain` run's phases are undone together,
newest first. One archived memory comes back alone as a run of kind `restore` of its own
(`restore_memory_in_transaction`), which this undoes too: the memory goes back to the archive.

A report names what came back with its text (`memories`) and each flag that changed with both
texts (`flags`), so a person reads what an undo did without looking ids up.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, delete, insert, literal, select, update

from .db import chunked, roll_back, rows_in
from .errors import MemstoreError, NotFoundError
from .flag_lifecycle import close_flags, reopen_flags
from .lifecycle import retire_update, undo_update
from .lookups import texts_of, with_texts
from .runs import archive_ids, forget_saved_marks, insert_run, lock_jobs, undo_merges
from .schema import MEMORY_COLUMNS, memories
from .schema import consolidation_runs as runs
from .schema import contradiction_flags as flags
from .schema import memory_archive as archive
from .schema import memory_gaps as gaps
from .vectors import index as vector_index


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
    # What a person reads: each memory back with its text ({"id", "namespace", "text", ...}), each
    # flag that changed ({"id", "change": "reopened" | "settled" | "removed", both sides' ids and
    # texts, "reason", "verdict"}), the memories that went back to the archive (undoing a restore of
    # one memory), and for a maintain run the report of each phase undone, newest first.
    memories: list[dict[str, Any]] = field(default_factory=list)
    flags: list[dict[str, Any]] = field(default_factory=list)
    archived_again: list[dict[str, Any]] = field(default_factory=list)
    phases: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _flags_read(conn: Connection, rows: list[dict[str, Any]], change: str | None) -> list[dict[str, Any]]:
    """Flag rows as a restore report names them: both sides with their texts."""
    texts = texts_of(conn, [row[side] for row in rows for side in ("older_id", "newer_id")])
    described = []
    for row in rows:
        done = change or ("reopened" if row["status"] == "open" else "settled")
        described.append({
            "id": row["id"], "change": done, "namespace": row["namespace"], "reason": row["reason"], "verdict": row["verdict"],
            "older_id": row["older_id"], "older_text": texts.get(row["older_id"], {}).get("text"),
            "newer_id": row["newer_id"], "newer_text": texts.get(row["newer_id"], {}).get("text"),
        })  # fmt: skip
    return described


def _flag_rows(conn: Connection, ids: list[int]) -> list[dict[str, Any]]:
    """The flags `ids`, by id (one statement per CHUNK of them)."""
    return sorted((dict(row._mapping) for row in rows_in(conn, select(flags), flags.c.id, ids)), key=lambda row: row["id"])


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
    if run.kind == "maintain":
        report = _restore_phases(conn, run_id, now)
    elif run.kind == "restore":
        report = _unrestore_memory(conn, run_id, run.params or {}, now)
    else:
        report = _restore_run(conn, run_id, run.kind, run.params, now)
    if dry_run:
        report.dry_run = True
        roll_back(conn)
    return report


def _restore_phases(conn: Connection, run_id: int, now: int) -> RestoreReport:
    """Undo every phase of one `maintain` still applied, newest first, then mark it restored."""
    phases = conn.execute(
        select(runs.c.id, runs.c.kind, runs.c.params)
        .where(runs.c.parent_run_id == run_id, runs.c.status == "applied")
        .order_by(runs.c.id.desc())
    ).all()
    report = RestoreReport(run_id, "maintain", [])
    for phase in phases:
        done = _restore_run(conn, phase.id, phase.kind, phase.params, now)
        report.restored_ids += done.restored_ids
        report.reopened_flags += done.reopened_flags
        report.removed_flags += done.removed_flags
        report.memories += done.memories
        report.flags += done.flags
        report.phases.append(done.to_dict())
    conn.execute(update(runs).where(runs.c.id == run_id).values(status="restored", restored_at=now))
    return report


def _restore_run(conn: Connection, run_id: int, run_kind: str, run_params: Any, now: int) -> RestoreReport:
    """Undo one run (not a maintain run, not a restore of one memory): see the module's docstring."""
    written, carried = undo_update(conn, run_id, run_params) if run_kind == "update" else (None, None)
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
        retire_update(conn, run_id, run_params or {}, written, restored_ids[0], now)
    undo_merges(conn, run_id)
    # A contradict run's flags go (and the next such run compares their pairs again); a flag the
    # run settled (a supersede, a forget, a merge, a dismissal) is open again.
    removed_rows = [dict(row) for row in conn.execute(select(flags).where(flags.c.run_id == run_id).order_by(flags.c.id)).mappings()]
    removed = [row["id"] for row in removed_rows]
    removed_read = _flags_read(conn, removed_rows, "removed")
    conn.execute(delete(flags).where(flags.c.run_id == run_id))
    reopened = list(conn.execute(select(flags.c.id).where(flags.c.closed_by_run == run_id).order_by(flags.c.id)).scalars())
    reopen_flags(conn, run_id)
    if run_kind in ("semantic", "contradict"):
        forget_saved_marks(conn, run_kind)
    conn.execute(update(runs).where(runs.c.id == run_id).values(status="restored", restored_at=now))
    report = RestoreReport(run_id, run_kind, restored_ids, reopened, removed, written)
    report.memories = with_texts(conn, restored_ids)
    report.flags = _flags_read(conn, _flag_rows(conn, reopened), None) + removed_read
    return report


def restore_memory_in_transaction(conn: Connection, memory_id: str, now: int, *, namespace: str | None = None, dry_run: bool = False) -> RestoreReport:
    """Bring one archived memory back to the live set, whole, as a run of kind `restore` of its own
    (the rest of the run that archived it stays archived); `restore` of that run sends it back.
    The flags its leaving settled open again (or are settled by the run still holding the other
    side). A memory an update replaced comes back by undoing the update instead."""
    lock_jobs(conn, None)
    row = conn.execute(select(archive).where(archive.c.id == memory_id)).mappings().first()
    if row is None or (namespace is not None and row["namespace"] != namespace):
        live = conn.execute(select(memories.c.namespace).where(memories.c.id == memory_id)).scalar()
        if live is not None and (namespace is None or live == namespace):
            raise MemstoreError(f"memory {memory_id!r} is live, not archived")
        where = "" if namespace is None else f" in namespace {namespace!r}"
        raise NotFoundError(f"no archived memory {memory_id!r}{where}; `memstore recall --archived` searches the archive")
    by_run = conn.execute(select(runs.c.kind).where(runs.c.id == row["run_id"])).scalar() if row["run_id"] is not None else None
    if by_run == "update":
        raise MemstoreError(f"memory {memory_id!r} was replaced by an update (run {row['run_id']}); `memstore restore --run {row['run_id']}` undoes the update")
    params = {"memory": memory_id, "from_run": row["run_id"], "reason": row["reason"], "superseded_by": row["superseded_by"],
              "archived_at": row["archived_at"], "similarity": row["similarity"]}  # fmt: skip
    run_id = insert_run(conn, "restore", row["namespace"], now, 0, params=params)
    conn.execute(insert(gaps).values(memory_id=memory_id, archived_at=row["archived_at"], restored_at=now, run_id=row["run_id"]))
    copied = [archive.c[name] for name in MEMORY_COLUMNS if name != "seq"]
    conn.execute(insert(memories).from_select([c.name for c in copied], select(*copied).where(archive.c.id == memory_id)))
    conn.execute(delete(archive).where(archive.c.id == memory_id))
    vector_index.add(conn, [memory_id])
    settled = []
    if row["run_id"] is not None:
        settled = list(conn.execute(
            select(flags.c.id).where(flags.c.closed_by_run == row["run_id"], (flags.c.older_id == memory_id) | (flags.c.newer_id == memory_id))
            .order_by(flags.c.id)
        ).scalars())  # fmt: skip
        reopen_flags(conn, row["run_id"], memory_id)
    report = RestoreReport(run_id, "restore", [memory_id], settled)
    report.memories = with_texts(conn, [memory_id])
    report.flags = _flags_read(conn, _flag_rows(conn, settled), None)
    if dry_run:
        report.dry_run = True
        roll_back(conn)
    return report


def _unrestore_memory(conn: Connection, run_id: int, params: dict[str, Any], now: int) -> RestoreReport:
    """Undo a restore of one memory: it goes back to the archive as it was archived (reason,
    superseded_by, the run that archived it), from now on; the flags it is a side of close again."""
    memory_id = params["memory"]
    if conn.execute(select(memories.c.id).where(memories.c.id == memory_id)).first() is None:
        gone = conn.execute(select(archive.c.reason, archive.c.run_id).where(archive.c.id == memory_id)).first()
        where = f" ({gone.reason} in run {gone.run_id}; restore run {gone.run_id} first)" if gone else ""
        raise MemstoreError(f"run {run_id} brought back {memory_id!r}, which is no longer live{where}")
    was = with_texts(conn, [memory_id])
    from_run = params.get("from_run")
    archive_ids(conn, [memory_id], params.get("reason") or "manual", params.get("superseded_by"), from_run, now, similarity=params.get("similarity"))
    closed = close_flags(conn, from_run, now) if from_run is not None else []
    conn.execute(update(runs).where(runs.c.id == run_id).values(status="restored", restored_at=now))
    report = RestoreReport(run_id, "restore", [])
    report.archived_again = [dict(memory, state="archived") for memory in was]
    report.flags = _flags_read(conn, _flag_rows(conn, closed), "settled")
    return report
