"""Forget, update and supersede: a person's or an agent's own changes to memories, each one run.

Like the jobs, every operation here runs on a connection the caller holds inside one write
transaction, takes memories out of the live set only by copying them whole into `memory_archive`
first, and is recorded in `consolidation_runs` (kinds `forget`, `update`, `supersede`), so
`memstore runs` lists it and `restore --run N` undoes it. Such a run's `live_before` and `kept`
count the memories it named (a forget of two: 2 and 0), not the namespace.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, insert, or_, select, union, update

from .db import rows_in
from .flag_lifecycle import close_flags, move_flags, unmove_flags
from .errors import IdConflictError, MemstoreError, ValidationError, memory_not_found
from .records import memory_state, new_id, prepare_row, same_json
from .runs import ARCHIVE_FIELDS, ArchivedEntry, archive_ids, archived_entries, insert_run, lock_jobs, superseded_chain
from .schema import MEMORY_COLUMNS, is_unexpired, memories, unexpired
from .schema import consolidation_runs as runs
from .schema import contradiction_flags as flags
from .schema import memory_archive as archive
from .schema import memory_merges as merges
from .validate import require_string

# The fields an update may change; everything else is carried from the version it replaces.
UPDATABLE = ("text", "importance", "pinned", "meta", "fact_key", "timestamp", "expires_at")


@dataclass
class LifecycleReport:
    """What a forget, update or supersede did."""

    kind: str
    run_id: int
    namespace: str | None
    archived: list[ArchivedEntry] = field(default_factory=list)
    written: list[str] = field(default_factory=list)  # ids of new versions (update)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "run_id": self.run_id,
            "namespace": self.namespace,
            "archived": [entry.__dict__ for entry in self.archived],
            "written": self.written,
        }


def archived_error(conn: Connection, row: Mapping[str, Any], action: str) -> MemstoreError:
    """Why an archived memory cannot be acted on, and what to act on instead."""
    said = f"memory {row['id']!r} is archived ({row['reason']} in run {row['run_id']})"
    latest = superseded_chain(conn, row["id"])[-1]
    latest_id = latest["id"]
    if latest.get("archived_at") is None:
        return MemstoreError(f"{said}; its live successor is {latest_id!r}: {action} that one instead")
    if latest_id != row["id"]:
        said += f"; its latest version {latest_id!r} is archived too ({latest['reason']} in run {latest['run_id']})"
    return MemstoreError(f"{said}; `memstore restore --run {latest['run_id']}` brings it back")


def live_rows(conn: Connection, ids: Sequence[str], namespace: str | None, action: str) -> dict[str, dict[str, Any]]:
    """The live rows of `ids`, or an error naming the first id that is unknown, in another
    namespace or archived; nothing is written before every id has been found."""
    found = {row.id: dict(row._mapping) for row in rows_in(conn, select(memories), memories.c.id, ids)}
    for memory_id in ids:
        row = found.get(memory_id)
        if row is not None:
            if namespace is not None and row["namespace"] != namespace:
                raise memory_not_found(memory_id, namespace)
            continue
        stored = conn.execute(select(archive).where(archive.c.id == memory_id)).mappings().first()
        if stored is None or (namespace is not None and stored["namespace"] != namespace):
            raise memory_not_found(memory_id, namespace)
        raise archived_error(conn, stored, action)
    return found


def _start_run(conn: Connection, kind: str, namespace: str | None, named: int, kept: int, params: dict, now: int) -> int:
    # No high-water mark: these runs deduplicate nothing, so the next job's incremental Stage 1
    # still reads from the last job's mark (an update's new version has a later seq anyway).
    return insert_run(conn, kind, namespace, now, named, kept=kept, params=params)


def forget_in_transaction(
    conn: Connection, ids: Sequence[str], reason: str | None, namespace: str | None, now: int
) -> LifecycleReport:
    """Archive live memories with reason `forgotten`; recall stops returning them."""
    unique = list(dict.fromkeys(ids))
    if not unique:
        raise ValidationError("forget", "ids", "name at least one memory")
    if reason is not None:
        require_string(reason, "forget", "reason")  # no NUL or lone surrogate: runs --json prints it
    lock_jobs(conn, namespace)
    rows = live_rows(conn, unique, namespace, "forget")
    scope = namespace if namespace is not None else _one_namespace(rows.values())
    run_id = _start_run(conn, "forget", scope, len(unique), 0, {"reason": reason} if reason else {}, now)
    archive_ids(conn, unique, "forgotten", None, run_id, now)
    close_flags(conn, run_id, now)
    return LifecycleReport("forget", run_id, scope, archived_entries(conn, run_id))


def _one_namespace(rows) -> str | None:
    namespaces = {row["namespace"] for row in rows}
    return namespaces.pop() if len(namespaces) == 1 else None


def update_in_transaction(
    conn: Connection,
    memory_id: str,
    changes: Mapping[str, Any],
    namespace: str | None,
    now: int,
    *,
    version_id: str | None = None,
) -> tuple[dict[str, Any], LifecycleReport]:
    """Write a new version of a live memory and archive the old one as `superseded` by it.

    The new version gets `version_id` (default: a generated id) and, unless given, the timestamp
    `now`; it carries every field not changed, the old version's created_at and its recall
    history, with updated_at = now. `changes` holds only the fields to change (`expires_at` None:
    no expiry).
    """
    unknown = sorted(set(changes) - set(UPDATABLE))
    if unknown:
        raise ValidationError(f"update {memory_id}", unknown[0], "cannot be changed by an update")
    given = dict(changes)
    lock_jobs(conn, namespace)
    old = live_rows(conn, [memory_id], namespace, "update")[memory_id]
    if not given:
        raise ValidationError(f"update {memory_id}", None, f"nothing to change: give one of {', '.join(UPDATABLE)}")
    if all(_same_value(old[name], value) for name, value in given.items()):
        raise ValidationError(f"update {memory_id}", None, "changes nothing: every value given is the stored one")
    record = {name: old[name] for name in ("namespace", "text", "importance", "pinned", "fact_key", "meta", "expires_at")}
    record.update(
        id=version_id if version_id is not None else new_id(), timestamp=now, created_at=old["created_at"], updated_at=now,
        recall_count=old["recall_count"], last_recalled_at=old["last_recalled_at"],
    )  # fmt: skip
    record.update(given)
    new_row = prepare_row(record, f"update {memory_id}", now).row
    taken = conn.execute(select(archive.c.id).where(archive.c.id == new_row["id"]).union_all(
        select(memories.c.id).where(memories.c.id == new_row["id"]))).first()
    if taken is not None:
        raise IdConflictError(f"update {memory_id}: field 'new_id': {new_row['id']!r} already names a memory")
    new_row["seq"] = conn.execute(insert(memories).returning(memories.c.seq), new_row).scalar_one()
    # The old version's flags move to the new one; the run records which, for its restore.
    moved = move_flags(conn, memory_id, new_row["id"], text_changed=new_row["text"] != old["text"])
    params = {"by": new_row["id"], "changes": given, **({"flags": moved} if moved else {})}
    run_id = _start_run(conn, "update", old["namespace"], 1, 0, params, now)
    archive_ids(conn, [memory_id], "superseded", new_row["id"], run_id, now)
    report = LifecycleReport("update", run_id, old["namespace"], archived_entries(conn, run_id), [new_row["id"]])
    return {name: new_row[name] for name in MEMORY_COLUMNS}, report


def extend_lifetimes(conn: Connection, ends: Mapping[str, int | None], namespace: str | None, now: int) -> int:
    """Set each memory's expires_at in place (id -> new end, None: never), for the memories of
    `namespace` (None: any) visible at `now`, and only to an end later than `now`. Such a change
    leaves every past moment's answer as it was (the memory was visible then, and still is until
    after now), which is why the end of a lifetime may move in place when nothing else may."""
    moved = 0
    for memory_id, end in sorted(ends.items()):
        if end is not None and end <= now:
            continue
        scope = [memories.c.id == memory_id, unexpired(memories, now)] + ([] if namespace is None else [memories.c.namespace == namespace])
        moved += conn.execute(update(memories).where(*scope).values(expires_at=end)).rowcount
    return moved


def _same_value(stored: Any, given: Any) -> bool:
    if isinstance(stored, (dict, list)) or isinstance(given, (dict, list)):
        return same_json(stored, given)
    return stored == given and type(stored) is type(given)


def supersede_in_transaction(conn: Connection, old_id: str, by: str, namespace: str | None, now: int) -> LifecycleReport:
    """Archive the live memory `old_id` as `superseded` by the live memory `by` (a person's
    resolution of two conflicting facts)."""
    if old_id == by:
        raise ValidationError(f"supersede {old_id}", "by", "a memory cannot supersede itself")
    lock_jobs(conn, namespace)
    rows = live_rows(conn, [old_id, by], namespace, "supersede")
    if rows[old_id]["namespace"] != rows[by]["namespace"]:
        raise ValidationError(
            f"supersede {old_id}", "by",
            f"{by!r} is in namespace {rows[by]['namespace']!r}, {old_id!r} in {rows[old_id]['namespace']!r}",
        )  # fmt: skip
    if not is_unexpired(rows[by], now):
        # The current fact must be one recall can return; else both facts would vanish at once.
        raise ValidationError(f"supersede {old_id}", "by", f"{by!r} has expired; the memory that is current must be visible")
    run_id = _start_run(conn, "supersede", rows[old_id]["namespace"], 2, 1, {"by": by}, now)
    archive_ids(conn, [old_id], "superseded", by, run_id, now)
    # This is how a person resolves a contradiction flag on the pair (restore opens it again); the
    # other flags of `old_id` close with it.
    close_flags(conn, run_id, now)
    return LifecycleReport("supersede", run_id, rows[old_id]["namespace"], archived_entries(conn, run_id))


def undo_update(conn: Connection, run_id: int, params: Mapping[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """What taking back the version an update run wrote needs (called by restore before the old one
    comes back): the version's id, and the recall history the restored version takes over.
    `retire_update` then archives the version.

    The new version carried the old one's recall history and may have been recalled since, so the
    restored version takes its counts; the change itself stays recorded in the run's params.
    """
    written = (params or {}).get("by")
    moved = (params or {}).get("flags", [])
    row = conn.execute(select(memories).where(memories.c.id == written)).mappings().first()
    if row is None:
        gone = conn.execute(select(archive.c.reason, archive.c.run_id).where(archive.c.id == written)).first()
        where = f" ({gone.reason} in run {gone.run_id}); restore run {gone.run_id} first" if gone else ""
        raise MemstoreError(f"run {run_id} wrote {written!r}, which is no longer live{where}")
    # Later runs may lean on that version: memories archived into it, recall history merged onto it,
    # a contradiction flagged on it. Taking it away would leave them pointing at nothing. A run
    # restored already leans on nothing (what it left behind, such as the version it retired, is
    # history that the chain of superseded_by still walks).
    leaning_runs = union(
        select(archive.c.run_id).where(archive.c.superseded_by == written, archive.c.run_id != run_id),
        select(merges.c.run_id).where(merges.c.survivor_id == written, merges.c.run_id != run_id),
        select(flags.c.run_id).where(or_(flags.c.older_id == written, flags.c.newer_id == written), flags.c.id.not_in(moved)),
    ).subquery()
    leaning = conn.execute(
        select(leaning_runs.c.run_id)
        .join(runs, runs.c.id == leaning_runs.c.run_id)
        .where(runs.c.status != "restored")
        .order_by(leaning_runs.c.run_id)
    ).scalars().all()
    if leaning:
        later = leaning[-1]
        raise MemstoreError(f"run {later} relies on {written!r}, the version run {run_id} wrote; restore run {later} first")
    return written, {"recall_count": row["recall_count"], "last_recalled_at": row["last_recalled_at"]}


def retire_update(conn: Connection, run_id: int, params: Mapping[str, Any], written: str, restored: str, now: int) -> None:
    """Archive the version an update wrote, once its restore has brought the old one back, as
    superseded by it: the version was live for a while, and what was live then stays answerable.
    The flags the update moved onto that version move back."""
    unmove_flags(conn, params.get("flags", []), written, restored)
    archive_ids(conn, [written], "superseded", restored, run_id, now)


def _version(row: Mapping[str, Any], now: int) -> dict[str, Any]:
    """A row as a history entry: the memory's columns, its state at `now`, and the archive's fields (None when live)."""
    entry = {name: row[name] for name in MEMORY_COLUMNS}
    entry["state"] = memory_state(row, now)
    entry.update({name: row.get(name) for name in ARCHIVE_FIELDS})
    return entry


def history_rows(conn: Connection, memory_id: str, namespace: str | None, now: int) -> list[dict[str, Any]]:
    """Every version linked to `memory_id` by superseded_by, oldest first (a version always before
    the one that replaced it; then by timestamp, then id), live or archived, each's state at `now`."""
    forward = [_version(row, now) for row in superseded_chain(conn, memory_id)]
    if not forward or (namespace is not None and forward[0]["namespace"] != namespace):
        raise memory_not_found(memory_id, namespace)
    versions = {row["id"]: row for row in forward}
    head = forward[-1]
    depth = {head["id"]: 0}
    frontier = [head["id"]]
    while frontier:
        replaced = [_version(row._mapping, now) for row in rows_in(conn, select(archive), archive.c.superseded_by, frontier)]
        replaced = [row for row in replaced if row["id"] not in depth]
        for row in replaced:
            depth[row["id"]] = depth[row["superseded_by"]] + 1
            versions[row["id"]] = row
        frontier = [row["id"] for row in replaced]
    # Versions on the forward walk that the backward walk from the head missed (a broken chain).
    for row_id in versions:
        depth.setdefault(row_id, len(versions))
    return sorted(versions.values(), key=lambda row: (-depth[row["id"]], row["timestamp"], row["id"]))
