"""A preview of `maintain` over one namespace that only reads the store: the web page's `GET /maintain`.

`maintain --dry-run` runs every phase in one write transaction on the store and rolls it back,
embedding what waits for a vector on the way: exact, but it holds the store's write lock (SQLite) or
the namespace's job lock and the rows it archives (PostgreSQL) for as long as it takes. A page that
anyone can reload must not: the preview copies the namespace, in one read snapshot, into a scratch
SQLite store of its own (a private temporary folder, removed afterwards) and runs the same dry run
there, with the same code. Nothing is embedded: memories still waiting for a vector are compared
without it and counted (`pending_embeddings` on the semantic phases); embedding is a write the
person asks for (the run itself, or `memstore embeddings sync`).

What is copied is what the phases read: the namespace's live and archived memories and their
vectors, its contradiction flags (a pair once flagged is not flagged again), the recall-history
merges and gaps of its memories, every run record (the marks the incremental phases read past, and
the runs those rows point to) and the settings (the model, how far each phase compared). The
store-wide `check` does not run in a preview (its full-text test is a write on SQLite); the run does.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from sqlalchemy import Connection, Engine, Select, insert, select, union

from .db import make_engine, read_transaction, write_transaction
from .defaults import RECALL_CHECK_K, MIN_AGE_DAYS, STALE_THRESHOLD
from .live_counts import recount_live
from .maintain import MaintainReport, Options, PhaseResult, maintain, parse_phases
from .migrate import upgrade
from .recall import Recall
from .schema import consolidation_runs, contradiction_flags, memories, memory_archive, memory_vectors, metadata
from .vectors import index as vector_index
from .vectors.embeddings import Embeddings
from .vectors.storage import count_pending, model_of

# Rows read from the store and written to the scratch store per batch.
BATCH_ROWS = 2_000
# Phases a preview does not run, and why (the report lists them as skipped).
NOT_PREVIEWED = {"check": "not run by a preview (its full-text test is a write on SQLite): the run checks first and changes nothing if the store has a problem"}


def _namespace_rows(namespace: str) -> dict[str, Select]:
    """For each table, the rows of `namespace` (or, for the runs and settings, all of them)."""
    ids = union(select(memories.c.id).where(memories.c.namespace == namespace),
                select(memory_archive.c.id).where(memory_archive.c.namespace == namespace)).subquery()  # fmt: skip
    tables = {table.name: table for table in metadata.sorted_tables}
    gaps, merges = tables["memory_gaps"], tables["memory_merges"]
    live_ids = select(memories.c.id).where(memories.c.namespace == namespace)
    return {
        "consolidation_runs": select(consolidation_runs),
        "memories": select(memories).where(memories.c.namespace == namespace),
        "memory_vectors": select(memory_vectors).where(memory_vectors.c.memory_id.in_(live_ids)),
        "memstore_settings": select(tables["memstore_settings"]),
        "contradiction_flags": select(contradiction_flags).where(contradiction_flags.c.namespace == namespace),
        "memory_archive": select(memory_archive).where(memory_archive.c.namespace == namespace),
        "memory_gaps": select(gaps).where(gaps.c.memory_id.in_(select(ids.c.id))),
        "memory_merges": select(merges).where(merges.c.survivor_id.in_(select(ids.c.id))),
    }


def _batches(conn: Connection, query: Select) -> Iterator[list[dict]]:
    result = conn.execute(query).mappings()
    while batch := result.fetchmany(BATCH_ROWS):
        yield [dict(row) for row in batch]


def copy_namespace(source: Connection, target: Connection, namespace: str) -> None:
    """The rows of `namespace` the phases read (see the module's docstring), from a read snapshot
    of the store into an empty, migrated scratch store; then its derived data."""
    queries = _namespace_rows(namespace)
    for table in metadata.sorted_tables:  # parents before children
        for batch in _batches(source, queries[table.name]):
            target.execute(insert(table), batch)
    recount_live(target)  # the full-text index was filled by its triggers as the rows arrived
    vector_index.drop(target)
    model = model_of(target)
    if model is not None:
        vector_index.rebuild(target, model.name, model.dim)


def preview(engine: Engine, phases: Sequence[str] | None, namespace: str, *, stale: bool, clock: Callable[[], int]) -> MaintainReport:
    """`maintain`'s dry run of `phases` (None: all) over `namespace`, as `MemoryStore.maintain` runs
    them with its defaults (`stale`: with the stale phase), on a scratch copy of the namespace read
    in one read transaction of the store: nothing of the store is locked for writing or written,
    and nothing is embedded."""
    options = Options(namespace, None, None, RECALL_CHECK_K, True, None, None, STALE_THRESHOLD, MIN_AGE_DAYS, stale=stale, embed=False)
    phases = parse_phases(phases)
    with tempfile.TemporaryDirectory(prefix="memstore-preview-") as folder:  # mode 0700, removed after
        scratch = make_engine(Path(folder) / "preview.db")
        try:
            upgrade(scratch)
            with read_transaction(engine) as reader, write_transaction(scratch, defer_checkpoint=True) as writer:
                copy_namespace(reader, writer, namespace)
            ran = [name for name in phases if name not in NOT_PREVIEWED]
            embeddings = Embeddings(scratch)
            recall = Recall(lambda write=False: None, lambda query: None)  # never asked: no checks
            report = maintain(scratch, embeddings, recall, ran, options, clock)
            with read_transaction(scratch) as conn:
                model = model_of(conn)
                pending = count_pending(conn, model) if model is not None else None
        finally:
            scratch.dispose()
    skipped = [PhaseResult(name, "skipped", error=NOT_PREVIEWED[name]) for name in phases if name in NOT_PREVIEWED]
    for phase in report.phases:
        if phase.name in ("semantic", "contradict") and phase.status == "ok" and pending:
            phase.counts["pending_embeddings"] = pending
    return MaintainReport(skipped + report.phases, dry_run=True)


__all__ = ["NOT_PREVIEWED", "copy_namespace", "preview"]
