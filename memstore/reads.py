"""Reads for the faces: one memory, a fact by its key, listings (a keyset page in rank order among
them), counts, the live set at a past moment, runs (of one namespace or all), namespaces. Each runs on a connection inside the caller's read transaction, and what
is live is live at the caller's `now` (the facade reads the clock once per operation); every query
that returns rows has a total order ending in id. Light on purpose: a per-turn `memstore list` or
`show` loads only this."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlalchemy import Connection, Select, Table, and_, exists, func, not_, or_, select, text, union_all

from .defaults import DAY_MS

from .errors import NotFoundError, ValidationError, memory_not_found
from .lookups import stored_rows, texts_of
from .schema import MEMORY_COLUMNS, RANK_ORDER, memories, rank_order, unexpired
from .schema import consolidation_runs as runs
from .schema import contradiction_flags as flags
from .schema import memory_archive as archive
from .schema import memory_gaps as gaps


def get_row(conn: Connection, memory_id: str, namespace: str | None) -> dict[str, Any]:
    """The memory with this id, live or archived; in another namespace it is not found."""
    found = stored_rows(conn, [memory_id]).get(memory_id)
    if found is None or (namespace is not None and found["namespace"] != namespace):
        raise memory_not_found(memory_id, namespace)
    return found


def find_fact(conn: Connection, namespace: str, fact_key: str, now: int) -> dict[str, Any] | None:
    """The live memory of `namespace` holding `fact_key`, not expired at `now` (the newest, then
    smallest id, if several)."""
    query = (
        select(memories)
        .where(memories.c.namespace == namespace, memories.c.fact_key == fact_key, unexpired(memories, now))
        .order_by(memories.c.timestamp.desc(), memories.c.id)
        .limit(1)
    )
    row = conn.execute(query).mappings().first()
    return None if row is None else dict(row)


def iter_rows(
    conn: Connection,
    namespace: str | None,
    now: int,
    *,
    archived: bool = False,
    limit: int | None = None,
    namespace_prefix: str | None = None,
    with_expired: bool = False,
) -> Iterator[dict[str, Any]]:
    """Rows of one namespace (None: all), live (not expired at `now`) in (namespace, rank) order or
    archived by archive time. `namespace_prefix="a.b"` takes the namespaces "a.b" and "a.b.*"
    instead. `with_expired` also gives the live rows that have expired (export writes them)."""
    table = archive if archived else memories
    order = (table.c.archived_at, table.c.id) if archived else (table.c.namespace, *RANK_ORDER)
    query = select(table).order_by(*order).limit(limit)
    if not archived and not with_expired:
        query = query.where(unexpired(memories, now))
    if namespace is not None:
        query = query.where(table.c.namespace == namespace)
    if namespace_prefix is not None:
        # A range, not LIKE: SQLite's LIKE ignores ASCII case, which let prefix "bob" take "Bob.x".
        # Namespaces compare by code point on both backends, and "/" follows ".".
        below = (table.c.namespace >= namespace_prefix + ".") & (table.c.namespace < namespace_prefix + "/")
        query = query.where((table.c.namespace == namespace_prefix) | below)
    for row in conn.execute(query).mappings():
        yield dict(row)


def count_rows(conn: Connection, namespace: str | None, now: int, *, archived: bool = False) -> int:
    """How many memories of one namespace (None: all) are live and not expired at `now`, or archived."""
    table = archive if archived else memories
    query = select(func.count()).select_from(table)
    if not archived:
        query = query.where(unexpired(memories, now))
    if namespace is not None:
        query = query.where(table.c.namespace == namespace)
    return conn.execute(query).scalar_one()


# The columns of a row as it was at a past moment: a memory's, less its place in the write order
# (which a restore renumbers).
AS_OF_COLUMNS = tuple(name for name in MEMORY_COLUMNS if name != "seq")


def rank_page(
    conn: Connection, namespace: str, now: int, *, after: tuple[int, int, str] | None, limit: int,
    pinned: bool | None = None, expiring_days: int | None = None,
) -> list[dict[str, Any]]:
    """Up to `limit` live memories of `namespace` in rank order (importance, newest, id), starting
    after the cursor `after` = (importance, timestamp, id) of the last row shown: a keyset page,
    as fast on page 1,000 as on page 1; `pinned` and `expiring_days` (expiring within) narrow it."""
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


def present_rows(table: Table, at: int, namespace: str | None) -> Select:
    """The rows of `table` (memories or the archive) that the live table held at the moment `at`.

    Nothing leaves the store: a memory is a row of `memories` or, once it left the live set, of
    `memory_archive` with when (`archived_at`) and why. So the live table held a row at T when:

    * it had entered the store by T: `stored_at <= T` (`created_at` for a row written before
      revision 0009 or in the sqlite3 shell);
    * and had not left it by T: live now, or archived after T;
    * and was not out for a while at T: no `memory_gaps` row (a restore's record of the time a
      memory spent archived) has `archived_at <= T < restored_at`.

    Which of them reads showed at T: those not expired by then (`unexpired(table, T)`).
    """
    out_then = exists().where(gaps.c.memory_id == table.c.id, gaps.c.archived_at <= at, gaps.c.restored_at > at)
    conditions = [func.coalesce(table.c.stored_at, table.c.created_at) <= at, not_(out_then)]
    if table is archive:
        conditions.append(archive.c.archived_at > at)  # read off ix_memory_archive_as_of
    if namespace is not None:
        conditions.append(table.c.namespace == namespace)
    return select(*(table.c[name] for name in AS_OF_COLUMNS)).where(*conditions)


def rows_at(
    conn: Connection, namespace: str | None, at: int, *, limit: int | None = None, expired: bool = False,
    archived: bool = False,
) -> list[dict[str, Any]]:
    """The memories of `namespace` (None: all) live at the moment `at`, as they were then, in
    (namespace, rank) order as `list` gives the live set; with `expired`, also those the live
    table held then but whose lifetime had ended. (`archived` is refused: a past moment's live set
    is what this answers.)"""
    if archived:
        raise ValidationError("list", "as_of", "lists what was live at a moment; it cannot be combined with archived")
    parts = [present_rows(table, at, namespace) for table in (memories, archive)]
    if not expired:
        parts = [part.where(unexpired(table, at)) for part, table in zip(parts, (memories, archive))]
    both = union_all(*parts).subquery("as_of")
    query = select(both).order_by(both.c.namespace, *rank_order(both.c)).limit(limit)
    return [dict(row) for row in conn.execute(query).mappings()]


def run_rows(conn: Connection, limit: int | None, offset: int = 0, namespace: str | None = None) -> list[dict[str, Any]]:
    """Runs, newest first (`limit` of them from `offset`), each with `did` (what_it_did); with
    `namespace`, the runs of that namespace only (not those over every namespace)."""
    query = select(runs).order_by(runs.c.id.desc()).limit(limit).offset(offset)
    if namespace is not None:
        query = query.where(runs.c.namespace == namespace)
    rows = [dict(row) for row in conn.execute(query).mappings()]
    ids = [row["id"] for row in rows]
    raised, settled = ({}, {}) if not ids else (
        dict(conn.execute(select(column, func.count()).where(column.in_(ids)).group_by(column)).all())
        for column in (flags.c.run_id, flags.c.closed_by_run)
    )  # fmt: skip
    for row in rows:
        row["did"] = what_it_did(row, raised.get(row["id"], 0), settled.get(row["id"], 0))
    return rows


def what_it_did(run: dict[str, Any], raised: int, settled: int) -> dict[str, int]:
    """What a run changed, the counts that are not zero, from its row and the flags it raised and
    settled: expired, duplicates (merged for a semantic run), evicted, stale, forgotten, updated,
    superseded, dismissed, restored (one memory brought back), phases (a maintain run's phase
    runs), flagged, flags_settled."""
    kind, params = run["kind"], run["params"] or {}
    did = {"expired": run["expired"], "merged" if kind == "semantic" else "duplicates": run["duplicates"],
           "evicted": run["evicted"], "stale": run["stale"]}  # fmt: skip
    if kind in ("forget", "update", "supersede"):
        did = {"forget": {"forgotten": run["live_before"]}, "update": {"updated": 1}, "supersede": {"superseded": 1}}[kind]
    if kind == "dismiss":
        return {"dismissed": params.get("dismissed", 1)}
    if kind == "restore":
        return {"restored": 1}
    if kind == "maintain":
        did["phases"] = len(params.get("runs", []))
    # A restored contradict run's flags are gone; its params still count them.
    did.update(flagged=max(raised, params.get("flagged", 0)), flags_settled=settled)
    return {name: count for name, count in did.items() if count}


def run_whole(conn: Connection, run_id: int, *, limit: int | None = None, offset: int = 0) -> dict[str, Any]:
    """One run: its row with `did`; what it archived, by namespace, reason and id, each with its text
    (`archived`: `limit` of them from `offset`, `archived_total` in all); after a restore, what went
    back (`restored`: ids, and `restored_memories` with their texts, as paged); the flags it raised
    and settled, with both texts; for a maintain run, its phase runs (`phases`, with `did`)."""
    row = conn.execute(select(runs).where(runs.c.id == run_id)).mappings().first()
    if row is None:
        raise NotFoundError(f"no run {run_id}; `memstore runs` lists them")
    columns = (archive.c.id, archive.c.namespace, archive.c.reason, archive.c.superseded_by, archive.c.similarity, archive.c.text)
    in_run = archive.c.run_id == run_id
    archived_total = conn.execute(select(func.count()).select_from(archive).where(in_run)).scalar_one()
    archived = conn.execute(
        select(*columns).where(in_run).order_by(archive.c.namespace, archive.c.reason, archive.c.id).limit(limit).offset(offset)
    )  # fmt: skip
    went_back = select(gaps.c.memory_id).where(gaps.c.run_id == run_id).distinct()
    restored_total = conn.execute(select(func.count()).select_from(went_back.subquery())).scalar_one()
    restored = list(conn.execute(went_back.order_by(gaps.c.memory_id).limit(limit).offset(offset)).scalars())
    raised, settled = (
        [dict(flag) for flag in conn.execute(select(flags).where(column == run_id).order_by(flags.c.id)).mappings()]
        for column in (flags.c.run_id, flags.c.closed_by_run)
    )  # fmt: skip
    texts = texts_of(conn, [*restored, *(flag[side] for flag in raised + settled for side in ("older_id", "newer_id"))])
    for flag in raised + settled:
        for side in ("older", "newer"):
            flag[f"{side}_text"] = texts.get(flag[f"{side}_id"], {}).get("text")
    run = dict(row)
    run["did"] = what_it_did(run, len(raised), len(settled))
    phases = [] if run["kind"] != "maintain" else [
        dict(phase) for phase in conn.execute(select(runs).where(runs.c.parent_run_id == run_id).order_by(runs.c.id)).mappings()
    ]  # fmt: skip
    for phase in phases:
        phase["did"] = what_it_did(phase, 0, 0)
    return {**run, "archived": [dict(entry._mapping) for entry in archived], "archived_total": archived_total,
            "restored": restored, "restored_total": restored_total,
            "restored_memories": [texts.get(memory_id) or {"id": memory_id, "text": None} for memory_id in restored],
            "flags_raised": raised, "flags_settled": settled, "phases": phases, "offset": offset, "limit": limit}  # fmt: skip


def namespace_names(conn: Connection, now: int) -> list[str]:
    """The namespaces that hold a live memory not expired at `now`."""
    query = select(memories.c.namespace).where(unexpired(memories, now)).distinct().order_by(memories.c.namespace)
    return list(conn.execute(query).scalars())


# How many near names a mistyped namespace is answered with.
NEAREST_NAMESPACES = 3


def namespace_known(conn: Connection, namespace: str, now: int) -> dict[str, Any]:
    """Whether `namespace` holds anything (a memory, live or archived, or a flag), and if not, the
    namespaces that do whose names are nearest to it (difflib, best first, at most
    NEAREST_NAMESPACES), and every one that does: {"namespace", "exists", "nearest", "namespaces"}."""
    import difflib

    if any(conn.execute(select(exists().where(table.c.namespace == namespace))).scalar() for table in (memories, archive, flags)):
        return {"namespace": namespace, "exists": True, "nearest": [], "namespaces": []}
    held = (_namespaces_of(conn, table) for table in (memories, archive))
    every = sorted(set().union(*held, conn.execute(select(flags.c.namespace).distinct()).scalars()))
    nearest = difflib.get_close_matches(namespace, every, n=NEAREST_NAMESPACES, cutoff=0.5)
    return {"namespace": namespace, "exists": False, "nearest": nearest, "namespaces": every}


def _namespaces_of(conn: Connection, table: Table) -> list[str]:
    """Every namespace `table` (memories or the archive) holds, one seek of its namespace-first
    index per namespace (a loose index scan), not a read of every row as DISTINCT is."""
    name = table.name  # one of the schema's own tables, never a caller's string
    return list(conn.execute(text(
        f"WITH RECURSIVE held(namespace) AS (SELECT min(namespace) FROM {name} UNION ALL "
        f"SELECT (SELECT min(namespace) FROM {name} WHERE namespace > held.namespace) FROM held WHERE held.namespace IS NOT NULL) "
        "SELECT namespace FROM held WHERE namespace IS NOT NULL"
    )).scalars())  # fmt: skip


# Rows per round trip when an export carries vectors.
EXPORT_BATCH = 500


def with_vectors(conn: Connection, rows: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """`rows`, each with `embedding` {"model", "vector"} when it has a usable vector of the store's
    model (the numbers are the stored float32 values, exactly). One a hand edit broke is left out:
    an importing store embeds that memory again, as `check --fix` has this one do."""
    import struct
    from itertools import islice

    from .db import rows_in
    from .schema import memory_vectors
    from .vectors.storage import model_of
    from .vectors.index import usable

    model = model_of(conn)
    while batch := list(islice(rows, EXPORT_BATCH)):
        vectors: dict[str, bytes] = {}
        if model is not None:
            # The model compared here: with it in SQL, SQLite walks the model's index over every vector.
            query = select(memory_vectors.c.memory_id, memory_vectors.c.model, memory_vectors.c.vector)
            found = rows_in(conn, query, memory_vectors.c.memory_id, [row["id"] for row in batch])
            vectors = {
                found_row.memory_id: found_row.vector
                for found_row in found
                if found_row.model == model.name and usable(found_row.vector, model.dim)
            }
        for row in batch:
            blob = vectors.get(row["id"])
            if blob is not None:
                row["embedding"] = {"model": model.name, "vector": list(struct.unpack(f"<{len(blob) // 4}f", blob))}
            yield row
