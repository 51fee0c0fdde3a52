"""An import as one write: every record checked first, then one transaction.

The records an importer read are checked by `prepare_row`, as every write path's are; with
`skip_invalid` the bad ones are set aside and named, else the first stops the import before anything
is written. The rest are written by the write path of `memstore add` (a record already stored under
its id is a retry, a different one a conflict), and the records the source kept but not as live go
to the archive in the same transaction, as one `forget` run that `memstore restore` undoes. A dry
run does all of it and rolls it back, so it reports exactly what the import would do.
"""

from __future__ import annotations

import os
from pathlib import Path
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any, NamedTuple

from sqlalchemy import Connection, Engine

from ..db import roll_back, shown_location, write_transaction
from ..errors import MemstoreError, ValidationError
from ..io import read_memories
from ..lifecycle import forget_in_transaction
from ..records import PreparedRow, now_ms, prepare_row, require_embedding_fits
from ..writes import add_in_transaction
from . import FORMATS, reader
from .common import Read, require_shallow


# The fields a record read again is compared on: the rest of what its source says may have changed
# since the first import without making it another memory.
COMPARED_ON_REIMPORT = frozenset({"id", "namespace", "text"})


class Plan(NamedTuple):
    """What an import would write: checked rows, each row's kind, and the source state of those
    the source kept but not as live (by id)."""

    prepared: list[PreparedRow]
    kinds: list[str]
    source_states: dict[str, str]
    rejected: list[str]
    repeated: int  # records the source holds twice, identical (written once)


@dataclass
class ImportReport:
    source_format: str
    source: str
    dry_run: bool
    added: int = 0
    unchanged: int = 0
    archived: int = 0  # of those added, how many went to the archive (the source kept them not live)
    repeated: int = 0
    kinds: dict[str, dict[str, int]] = field(default_factory=dict)  # kind -> {"added", "unchanged", "archived"}
    rejected: list[str] = field(default_factory=list)
    run_id: int | None = None  # the forget run that archived them, when any did

    @property
    def skipped(self) -> int:
        return len(self.rejected)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": self.source_format, "source": self.source, "dry_run": self.dry_run, "added": self.added,
            "unchanged": self.unchanged, "archived": self.archived, "repeated": self.repeated, "skipped": self.skipped,
            "kinds": {kind: dict(counts) for kind, counts in sorted(self.kinds.items())}, "run_id": self.run_id,
        }  # fmt: skip


def plan(
    records: list[Read],
    *,
    skip_invalid: bool,
    progress: Callable[[int, int], None] | None = None,
    store_model: Callable[[], tuple[str, int] | None] | None = None,
    now: int,
) -> Plan:
    """Check every record read; the first bad one raises unless `skip_invalid`."""
    prepared: list[PreparedRow] = []
    kinds: list[str] = []
    states: dict[str, str] = {}
    rejected: list[str] = []
    seen: dict[str, dict[str, Any]] = {}
    repeated = 0
    models: list[tuple[str, int] | None] = []
    for number, read in enumerate(records, start=1):
        if progress is not None:
            progress(number, len(records))
        try:
            if isinstance(read, ValidationError):
                raise read
            require_shallow(read.record.get("meta"), read.location, "meta")
            # Stored already is the same memory (same source identity, so same id; same text), even if
            # the source changed its meta or times since (a note's file touched, its tags edited).
            row = prepare_row(read.record, read.location, now)
            row = row._replace(given=row.given & COMPARED_ON_REIMPORT)
            if row.embedding is not None and store_model is not None:
                if not models:
                    models.append(store_model())
                require_embedding_fits(row.embedding, models[0], read.location)
        except ValidationError as error:
            if not skip_invalid:
                raise
            rejected.append(str(error))
            continue
        if seen.get(row.row["id"]) == row.row:
            repeated += 1  # the same record twice (a file appended to twice): one memory
            continue
        seen[row.row["id"]] = row.row
        prepared.append(row)
        kinds.append(read.kind)
        if read.source_state is not None:
            states[row.row["id"]] = read.source_state
    return Plan(prepared, kinds, states, rejected, repeated)


def import_in_transaction(
    conn: Connection, planned: Plan, report: ImportReport, now: int, *, skip_invalid: bool, forget_reason: str
) -> ImportReport:
    """Write `planned` in the caller's transaction and fill `report` with what happened."""
    result, _ = add_in_transaction(conn, planned.prepared, now, skip_invalid=skip_invalid)
    added = set(result.added_ids)
    kept = set(result.ids)
    to_archive = [row_id for row_id in result.added_ids if row_id in planned.source_states]
    if to_archive:
        report.run_id = forget_in_transaction(conn, to_archive, forget_reason, None, now).run_id
    archived = set(to_archive)
    counted: set[str] = set()
    for item, kind in zip(planned.prepared, planned.kinds):
        row_id = item.row["id"]
        # A later record of an id already written is a repeat or a conflict (skipped with
        # --skip-invalid): the id's first record is what was kept.
        if row_id not in kept or row_id in counted:
            continue
        counted.add(row_id)
        counts = report.kinds.setdefault(kind, {"added": 0, "unchanged": 0, "archived": 0})
        counts["added" if row_id in added else "unchanged"] += 1
        counts["archived"] += row_id in archived
    report.added, report.unchanged, report.archived = result.added, result.unchanged, len(to_archive)
    report.repeated = planned.repeated
    report.rejected = planned.rejected + result.rejected
    return report


def is_same_file(source: str, database: str | None) -> bool:
    """Whether `source` is the store's file `database` under any name: a symlink, another path, a
    hard link (the same device and inode)."""
    try:
        return bool(database) and os.path.samefile(Path(source).expanduser(), database)
    except (OSError, ValueError):  # either is missing (or not a path at all): not the same file
        return False


def import_source(
    engine: Engine,
    source_format: str,
    source: str | os.PathLike[str] | IO[bytes] | IO[str],
    namespace: str | None = None,
    *,
    name: str | None = None,
    skip_invalid: bool = False,
    dry_run: bool = False,
    progress: Callable[[int, int], None] | None = None,
    store_model: Callable[[], tuple[str, int] | None] | None = None,
) -> ImportReport:
    """Import `source` (a path, a URL, or for memstore's own format an open stream) read as
    `source_format`: all of it read and checked first, then one transaction (rolled back if
    `dry_run`). `name` names a stream in errors (default: its file name, or "<stdin>").
    `progress(done, total)` is called as records are checked."""
    if source_format not in FORMATS:
        raise MemstoreError(f"unknown format {source_format!r}; one of: {', '.join(FORMATS)}")
    if name is None:  # a URL's password never reaches output
        name = getattr(source, "name", "<stdin>") if hasattr(source, "read") else shown_location(os.fspath(source))
    if not hasattr(source, "read") and engine.dialect.name == "sqlite" and is_same_file(os.fspath(source), engine.url.database):
        raise MemstoreError(f"{name} is the store itself: import it into another store (--db)")
    now = now_ms()
    if source_format == "memstore":
        if not hasattr(source, "read"):
            with open(source, "rb") as stream:
                return import_source(
                    engine, source_format, stream, namespace, name=name, skip_invalid=skip_invalid, dry_run=dry_run,
                    progress=progress, store_model=store_model,
                )
        read = read_memories(source, name, namespace, skip_invalid=skip_invalid, progress=progress, store_model=store_model)
        planned = Plan(read.prepared, ["memory"] * len(read.prepared), {}, [str(error) for error in read.rejected], 0)
    else:
        records = reader(source_format)(source, namespace)
        planned = plan(records, skip_invalid=skip_invalid, progress=progress, store_model=store_model, now=now)
    report = ImportReport(source_format, name, dry_run)
    reason = f"the {source_format} source kept it as {' or '.join(sorted(set(planned.source_states.values())))}"
    with write_transaction(engine) as conn:
        import_in_transaction(conn, planned, report, now_ms(), skip_invalid=skip_invalid, forget_reason=reason)
        if dry_run:
            roll_back(conn)
            report.run_id = None  # the run was rolled back with the rest
    return report


__all__ = ["ImportReport", "Plan", "import_in_transaction", "import_source", "plan"]
