"""`MemoryStore`: the Python API. It owns the transactions; SQL does the set work."""

from __future__ import annotations

import os
import threading
from contextlib import nullcontext
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from sqlalchemy import Connection, bindparam, func, insert, select

from .db import BUSY_TIMEOUT_MS, checkpoint, default_location, is_sqlite, sqlite_file_missing, make_engine, read_transaction, write_transaction
from .errors import IdConflictError, MemstoreError, NotFoundError, RecallCheckError, ValidationError, memory_not_found
from .io import read_memories
from .migrate import upgrade
from .schema import MEMORY_COLUMNS, RANK_ORDER, memories
from .schema import consolidation_runs as runs
from .schema import memory_archive as archive
from .records import DEFAULT_IMPORTANCE, DEFAULT_NAMESPACE, PreparedRow, is_retry_of, now_ms, prepare_row
from .validate import check_capacity

if TYPE_CHECKING:
    from .check import CheckReport
    from .consolidate import ConsolidationReport, RestoreReport
    from .lifecycle import LifecycleReport
    from .maintain import MaintainReport
    from .search import CheckResult

# The job, recall, hygiene, check and backup modules are imported by the methods that use them, so
# a per-turn `memstore add` loads none of them.


RECALL_MODES = ("lexical", "semantic", "hybrid")


def fusion_depth(k: int) -> int:
    """How deep each ranking is read before hybrid recall fuses them into k."""
    return max(4 * k, 20)


# SQLite allows 32766 bound parameters per statement; stay well below for id look-ups.
_LOOKUP_CHUNK = 500


# The write path's first look, one round trip per chunk: how many of the ids are taken, live or
# archived; when none is, no whole row needs reading.
_ids = bindparam("ids", expanding=True)
_WRITE_PROBE = select(
    select(func.count()).select_from(memories).where(memories.c.id.in_(_ids)).scalar_subquery(),
    select(func.count()).select_from(archive).where(archive.c.id.in_(_ids)).scalar_subquery(),
)


@dataclass
class AddResult:
    added: int
    unchanged: int  # identical records already stored (retries)
    ids: list[str]  # the id of every record written or found unchanged, in input order
    rejected: list[str] = field(default_factory=list)  # with skip_invalid: why each skipped record was

    @property
    def skipped(self) -> int:
        return len(self.rejected)


class MemoryStore:
    """A memory store in a SQLite file (a path) or any SQLAlchemy URL; opening it migrates it to head.

    >>> store = MemoryStore(tmp_path / "demo.db")              # doctest: +SKIP
    >>> store.add("User prefers dark mode.", id="m1")          # doctest: +SKIP
    """

    def __init__(
        self,
        path_or_url: str | os.PathLike[str] | None = None,
        *,
        create: bool = True,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
    ) -> None:
        """Open the store; with `create=False` a SQLite file that does not exist yet is an error.

        `busy_timeout_ms` is how long a SQLite write waits for another writer's lock.
        """
        self.location = os.fspath(path_or_url) if path_or_url is not None else default_location()
        missing = sqlite_file_missing(self.location)
        if missing and not create:
            raise NotFoundError(f"no memstore database at {missing}; create it with `memstore init`")
        self.engine = make_engine(self.location, busy_timeout_ms)
        self._checkpoints: list[threading.Thread] = []
        try:
            upgrade(self.engine)
        except BaseException:
            self.engine.dispose()
            raise

    @property
    def url(self) -> str:
        return self.engine.url.render_as_string(hide_password=True)

    def close(self) -> None:
        for worker in self._checkpoints:
            worker.join()
        self.engine.dispose()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- writes -------------------------------------------------------------------------------

    def add(
        self,
        text: str,
        *,
        id: str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
        timestamp: int | None = None,
        importance: int = DEFAULT_IMPORTANCE,
        pinned: bool = False,
        fact_key: str | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Store one memory and return its row. Re-adding an identical record is a no-op."""
        record = {
            "id": id, "text": text, "namespace": namespace, "timestamp": timestamp,
            "importance": importance, "pinned": pinned, "fact_key": fact_key, "meta": meta,
        }  # fmt: skip
        prepared = prepare_row(record, "memory")
        _, stored = self._add_prepared([prepared], skip_invalid=False)
        row = stored[prepared.row["id"]]
        # Columns in table order whether the row was written now or found stored (a retry).
        return {**{name: row[name] for name in MEMORY_COLUMNS}, **row}

    def remember(
        self,
        text: str,
        *,
        id: str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
        importance: int = DEFAULT_IMPORTANCE,
        pinned: bool = False,
        fact_key: str | None = None,
        meta: Mapping[str, Any] | None = None,
        timestamp: int | None = None,
    ) -> dict[str, Any]:
        """Store one memory and say what happened, for an agent's tool call.

        Returns ``{"id", "norm_key", "status", "same_key_ids"}``: status is ``created``, or
        ``unchanged`` when `id` already holds this record (a retried call); `same_key_ids` are the
        other live memories of the namespace with the same normalised key, which the next
        consolidation run will merge with this one.
        """
        record = {
            "id": id, "text": text, "namespace": namespace, "timestamp": timestamp,
            "importance": importance, "pinned": pinned, "fact_key": fact_key, "meta": meta,
        }  # fmt: skip
        prepared = prepare_row(record, "memory")
        row = prepared.row
        with write_transaction(self.engine) as conn:
            result, _ = self._add_prepared([prepared], skip_invalid=False, conn=conn)
            same_key = conn.execute(
                select(memories.c.id)
                .where(memories.c.namespace == row["namespace"], memories.c.norm_key == row["norm_key"], memories.c.id != row["id"])
                .order_by(memories.c.id)
            ).scalars().all()
        status = "created" if result.added else "unchanged"
        return {"id": row["id"], "norm_key": row["norm_key"], "status": status, "same_key_ids": list(same_key)}

    def add_many(self, records: Iterable[Mapping[str, Any]]) -> AddResult:
        """Store many memories in one transaction; every record is validated before anything is written."""
        now = now_ms()
        prepared = [prepare_row(record, f"record {index}", now) for index, record in enumerate(records)]
        return self.add_prepared(prepared)

    def add_prepared(self, prepared: list[PreparedRow], *, skip_invalid: bool = False) -> AddResult:
        """Write rows already checked by `prepare_row` (the importer's path), in one transaction.

        A repeated id within the batch, or a different record under a stored id, raises; with
        `skip_invalid` that record is skipped instead and named in `AddResult.rejected`.
        """
        return self._add_prepared(prepared, skip_invalid=skip_invalid)[0]

    def _add_prepared(
        self, prepared: list[PreparedRow], *, skip_invalid: bool, conn: Connection | None = None
    ) -> tuple[AddResult, dict[str, dict[str, Any]]]:
        """add_prepared, also returning the stored row of every id written or found unchanged; in
        its own transaction, or in the caller's (`conn`)."""
        rejected: list[str] = []
        unique: list[PreparedRow] = []
        first_location: dict[str, str] = {}
        for item in prepared:
            row_id = item.row["id"]
            if row_id in first_location:
                error = ValidationError(item.location, "id", f"repeats the id {row_id!r} of {first_location[row_id]}")
                if not skip_invalid:
                    raise error
                rejected.append(str(error))
                continue
            first_location[row_id] = item.location
            unique.append(item)
        with nullcontext(conn) if conn is not None else write_transaction(self.engine) as conn:
            stored = self._probe_ids(conn, [item.row["id"] for item in unique])
            new_rows, kept = [], []
            for item in unique:
                existing = stored.get(item.row["id"])
                if existing is None:
                    new_rows.append(item.row)
                    stored[item.row["id"]] = item.row
                elif not is_retry_of(item, existing):
                    archived = " (archived)" if existing.get("archived_at") is not None else ""
                    error = IdConflictError(f"{item.location}: field 'id': {item.row['id']!r} already holds a different memory{archived}")
                    if not skip_invalid:
                        raise error
                    rejected.append(str(error))
                    continue
                kept.append(item.row["id"])
            # seq is the database's to assign, in this order. One row (add()): RETURNING hands its
            # seq back, so the row add() returns is the stored row, whole.
            if len(new_rows) == 1:
                new_rows[0]["seq"] = conn.execute(insert(memories).returning(memories.c.seq), new_rows[0]).scalar_one()
            elif new_rows:
                conn.execute(insert(memories), new_rows)
        result = AddResult(added=len(new_rows), unchanged=len(kept) - len(new_rows), ids=kept, rejected=rejected)
        return result, stored

    def import_file(
        self,
        source: IO[bytes] | IO[str],
        name: str,
        namespace: str | None = None,
        *,
        skip_invalid: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> AddResult:
        """Import a JSON array or JSONL stream: all records validated first, then one transaction.

        With `skip_invalid`, exactly the valid records are written and the others are reported.
        `progress(line, total_lines)` is called while records are validated.
        """
        read = read_memories(source, name, namespace, skip_invalid=skip_invalid, progress=progress)
        result = self.add_prepared(read.prepared, skip_invalid=skip_invalid)
        result.rejected[:0] = [str(error) for error in read.rejected]
        return result

    @staticmethod
    def _probe_ids(conn: Connection, ids: list[str]) -> dict[str, dict[str, Any]]:
        """The stored rows (live or archived) holding any of `ids`.

        The common case, ids never seen, costs one statement per chunk: whole rows are read only
        for chunks where an id is taken (a retry or a conflict).
        """
        found: dict[str, dict[str, Any]] = {}
        for start in range(0, len(ids), _LOOKUP_CHUNK):
            chunk = ids[start : start + _LOOKUP_CHUNK]
            live_taken, archived_taken = conn.execute(_WRITE_PROBE, {"ids": chunk}).one()
            if live_taken or archived_taken:
                found.update(MemoryStore._stored_rows(conn, chunk))
        return found

    @staticmethod
    def _stored_rows(conn: Connection, ids: list[str]) -> dict[str, dict[str, Any]]:
        """Live or archived rows holding any of `ids` (ids are unique across both tables)."""
        found: dict[str, dict[str, Any]] = {}
        for start in range(0, len(ids), _LOOKUP_CHUNK):
            chunk = ids[start : start + _LOOKUP_CHUNK]
            for table in (memories, archive):
                for row in conn.execute(select(table).where(table.c.id.in_(chunk))).mappings():
                    found[row["id"]] = dict(row)
        return found

    # -- reads --------------------------------------------------------------------------------

    def get(self, id: str, *, namespace: str | None = None) -> dict[str, Any]:
        """The memory with this id, live or archived; archived rows carry `archived_at`, `reason`, ...

        With `namespace`, a memory of another namespace is not found, exactly as an unknown id.
        """
        with read_transaction(self.engine) as conn:
            found = self._stored_rows(conn, [id]).get(id)
        if found is None or (namespace is not None and found["namespace"] != namespace):
            raise memory_not_found(id, namespace)
        return found

    def find_fact(self, namespace: str, fact_key: str) -> dict[str, Any] | None:
        """The live memory of `namespace` holding `fact_key` (the newest, then smallest id, if several)."""
        query = (
            select(memories)
            .where(memories.c.namespace == namespace, memories.c.fact_key == fact_key)
            .order_by(memories.c.timestamp.desc(), memories.c.id)
            .limit(1)
        )
        with read_transaction(self.engine) as conn:
            row = conn.execute(query).mappings().first()
        return None if row is None else dict(row)

    def history(self, id: str, *, namespace: str | None = None) -> list[dict[str, Any]]:
        """Every version of a memory, oldest to newest: the ones it replaced and the ones that
        replaced it (superseded_by, followed both ways), live or archived. Each is the row plus
        `state` ("live" or "archived") and `archived_at`, `reason`, `superseded_by`, `run_id`."""
        from .lifecycle import history_rows

        with read_transaction(self.engine) as conn:
            return history_rows(conn, id, namespace)

    def list(
        self, namespace: str | None = DEFAULT_NAMESPACE, *, archived: bool = False, limit: int | None = None
    ) -> list[dict[str, Any]]:
        """Memories of one namespace (None: all), live in rank order, or archived by archive time."""
        return list(self.iter_rows(namespace, archived=archived, limit=limit))

    def iter_rows(
        self,
        namespace: str | None = None,
        *,
        archived: bool = False,
        limit: int | None = None,
        namespace_prefix: str | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Rows of one namespace (None: all), live in (namespace, rank) order or archived by archive
        time. `namespace_prefix="a.b"` takes the namespaces "a.b" and "a.b.*" instead."""
        table = archive if archived else memories
        order = (table.c.archived_at, table.c.id) if archived else (table.c.namespace, *RANK_ORDER)
        query = select(table).order_by(*order).limit(limit)
        if namespace is not None:
            query = query.where(table.c.namespace == namespace)
        if namespace_prefix is not None:
            query = query.where(
                (table.c.namespace == namespace_prefix) | table.c.namespace.startswith(namespace_prefix + ".", autoescape=True)
            )
        with read_transaction(self.engine) as conn:
            for row in conn.execute(query).mappings():
                yield dict(row)

    def count(self, namespace: str | None = None, *, archived: bool = False) -> int:
        table = archive if archived else memories
        query = select(func.count()).select_from(table)
        if namespace is not None:
            query = query.where(table.c.namespace == namespace)
        with read_transaction(self.engine) as conn:
            return conn.execute(query).scalar_one()

    def runs(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Consolidation runs, newest first."""
        with read_transaction(self.engine) as conn:
            return [dict(r) for r in conn.execute(select(runs).order_by(runs.c.id.desc()).limit(limit)).mappings()]

    # -- recall ------------------------------------------------------------------------------

    def recall(
        self,
        query: str,
        k: int = 5,
        namespace: str = DEFAULT_NAMESPACE,
        *,
        touch: bool = True,
        mode: str | None = None,
    ) -> list[dict[str, Any]]:
        """The k live memories that best match `query`, best first; each gets recall_count + 1 unless
        touch=False. Each row carries `score` and `found_by`, the rankings that found it.

        `mode`: "lexical" (full-text), "semantic" (vectors) or "hybrid" (both, fused); by default
        hybrid when the store has vectors, else lexical.
        """
        from . import search

        if mode is not None and mode not in RECALL_MODES:
            raise ValidationError("recall", "mode", f"must be one of {', '.join(RECALL_MODES)}, not {mode!r}")
        if mode is None or mode == "lexical":
            # The common case, a store without vectors, is answered in one transaction.
            with write_transaction(self.engine) if touch else read_transaction(self.engine) as conn:
                if mode == "lexical" or not self._has_vectors(conn):
                    rows = [dict(row, found_by=["lexical"]) for row in search.recall_rows(conn, query, k, namespace)]
                    return self._touched(conn, rows) if touch else rows
        chosen = mode or "hybrid"
        # The query is embedded before the transaction (the model takes milliseconds); both rankings
        # then read one snapshot.
        query_vector = None
        if chosen != "lexical":
            try:
                query_vector = self._query_vector(query)
            except MemstoreError:
                if mode is not None:
                    raise
                # By default, recall that cannot load the model (the semantic extra missing here,
                # the model's directory moved) is still full-text recall.
                chosen = "lexical"
        with write_transaction(self.engine) if touch else read_transaction(self.engine) as conn:
            if chosen == "lexical":
                rows = [dict(row, found_by=["lexical"]) for row in search.recall_rows(conn, query, k, namespace)]
            else:
                rows = self._fused_rows(conn, query, k, namespace, query_vector, hybrid=chosen == "hybrid")
            return self._touched(conn, rows) if touch else rows

    @staticmethod
    def _touched(conn: Connection, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Count a recall of `rows`: recall_count + 1 and last_recalled_at = now."""
        from . import search

        now = now_ms()
        search.touch(conn, [row["id"] for row in rows], now)
        return [dict(row, recall_count=row["recall_count"] + 1, last_recalled_at=now) for row in rows]

    @staticmethod
    def _has_vectors(conn: Connection) -> bool:
        from .semantic.vectors import has_vectors

        return has_vectors(conn)

    def _fused_rows(self, conn: Connection, query: str, k: int, namespace: str, query_vector, *, hybrid: bool) -> list[dict[str, Any]]:
        """Rows of the semantic hits, or of their fusion with the full-text ranking, best first."""
        from . import search
        from .semantic.fusion import Fused, fuse

        if hybrid:
            # Full-text matches only earn a bounded bonus in the fusion: the first few are enough.
            lexical = [(row["id"], row["score"]) for row in search.recall_rows(conn, query, max(2 * k, 10), namespace)]
        hits = self._vector_hits(conn, query_vector, namespace, fusion_depth(k))
        if hybrid:
            ranked = fuse(lexical, hits, k)
        else:
            ranked = [Fused(memory_id, similarity, ("semantic",)) for memory_id, similarity in hits[:k]]
        # Live rows only: a hit archived since the vector search is left out.
        live = {row["id"]: dict(row) for row in conn.execute(select(memories).where(memories.c.id.in_([hit.id for hit in ranked]))).mappings()}
        return [dict(live[hit.id], score=hit.score, found_by=list(hit.found_by)) for hit in ranked if hit.id in live]

    def verify(self, checks: Sequence[Mapping[str, str]], k: int = 3) -> list[CheckResult]:
        """Run recall checks against the live set; recall counts are not touched."""
        from . import search

        with read_transaction(self.engine) as conn:
            return search.run_checks(conn, checks, k)

    def report(
        self,
        namespace: str | None = DEFAULT_NAMESPACE,
        *,
        now: int | None = None,
        near_threshold: float | None = None,
    ) -> dict[str, Any]:
        """The hygiene inventory of the live set (see memstore.hygiene for every definition);
        `near_threshold` defaults to hygiene.NEAR_DUPLICATE_THRESHOLD."""
        from . import hygiene

        if near_threshold is None:
            near_threshold = hygiene.NEAR_DUPLICATE_THRESHOLD
        as_of = now_ms() if now is None else now
        from .semantic.flags import list_flags

        report = hygiene.build_report(list(self.iter_rows(namespace)), as_of, near_threshold=near_threshold)
        with read_transaction(self.engine) as conn:
            open_flags = list_flags(conn, namespace)
        return {"namespace": namespace, "now": as_of, "near_duplicate_threshold": near_threshold, **report, "open_flags": open_flags}

    # -- the jobs -----------------------------------------------------------------------------

    def consolidate(
        self,
        capacity: int,
        namespace: str | None = DEFAULT_NAMESPACE,
        dry_run: bool = False,
        *,
        full: bool = False,
        list_kept: bool = False,
        checks: Sequence[Mapping[str, str]] | None = None,
        k: int = 3,
    ) -> ConsolidationReport:
        """Deduplicate, then evict to `capacity`, in one transaction; `namespace=None` runs every namespace.

        After a first run, a run is incremental: Stage 1 reads only the keys written since the last
        run and Stage 2 evicts from the bottom of the ranking, with the same result as a full run
        (`full=True` forces one). The report counts what was kept; `list_kept=True` also lists every
        kept id in `kept_ids`, which reads the whole live set. A dry run executes the same statements and rolls them back.
        With `checks`, the run commits only if every recall check passes against its result.
        """
        from . import consolidate as job

        check_capacity(capacity)
        return self._run_job(
            lambda conn: job.consolidate_in_transaction(
                conn, capacity, namespace, now_ms(), dry_run=dry_run, full=full, list_kept=list_kept
            ),
            dry_run, checks, k,
        )  # fmt: skip

    def prune(
        self,
        namespace: str | None = DEFAULT_NAMESPACE,
        *,
        now: int | None = None,
        stale_threshold: float = 0.8,
        min_age_days: int = 90,
        dry_run: bool = False,
        list_kept: bool = False,
        checks: Sequence[Mapping[str, str]] | None = None,
        k: int = 3,
    ) -> ConsolidationReport:
        """Archive exact duplicates (Stage 1 rule: newest wins) and stale memories; pinned ones stay."""
        from . import consolidate as job

        as_of = now_ms() if now is None else now
        return self._run_job(
            lambda conn: job.prune_in_transaction(
                conn, namespace, now_ms(), as_of=as_of, stale_threshold=stale_threshold,
                min_age_days=min_age_days, dry_run=dry_run, list_kept=list_kept,
            ),
            dry_run, checks, k,
        )  # fmt: skip

    def _run_job(self, apply, dry_run: bool, checks, k: int) -> ConsolidationReport:
        """Apply a job in one write transaction; keep it only if it is real and every check passes."""
        from . import search

        with write_transaction(self.engine, defer_checkpoint=True) as conn:
            report = apply(conn)
            if checks:
                report.checks = search.run_checks(conn, checks, k)
            failed = any(not check.passed for check in report.checks)
            if dry_run or failed:
                conn.get_transaction().rollback()
        if failed and not dry_run:
            raise RecallCheckError(report)
        if not dry_run:
            self._checkpoint_in_background()
        return report

    def _checkpoint_in_background(self) -> None:
        """Checkpoint after the job's commit, off its critical path: the write lock is already
        released, and a PASSIVE checkpoint never blocks writers. `close()` waits for it."""
        if self.is_sqlite:
            worker = threading.Thread(target=checkpoint, args=(self.engine,), name="memstore-checkpoint")
            worker.start()
            self._checkpoints.append(worker)

    def restore(self, run_id: int) -> RestoreReport:
        """Undo a run: its archived rows go back to the live set, whole."""
        from . import consolidate as job

        with write_transaction(self.engine) as conn:
            return job.restore_in_transaction(conn, run_id, now_ms())

    # -- embeddings (the semantic extra) ---------------------------------------------------------

    def enable_embeddings(self, model: str | os.PathLike[str] | None = None) -> dict[str, Any]:
        """Record the embedding model of this store: a fastembed model name (default
        sentence-transformers/all-MiniLM-L6-v2) or a local model directory. Nothing is embedded
        yet (see `sync_embeddings`); a new model makes every memory pending again."""
        from .semantic.embed import DEFAULT_MODEL, Embedder
        from .semantic.vectors import EmbeddingModel, set_model

        embedder = Embedder(DEFAULT_MODEL if model is None else model)
        chosen = EmbeddingModel(embedder.model_name, embedder.source, embedder.dim)
        with write_transaction(self.engine) as conn:
            set_model(conn, chosen)
        self._embedder = embedder
        return {"model": chosen.name, "source": chosen.source, "dim": chosen.dim}

    def embedding_status(self) -> dict[str, Any] | None:
        """The store's model and how many live memories still need a vector; None if not enabled."""
        from .semantic.vectors import count_pending, model_of

        with read_transaction(self.engine) as conn:
            model = model_of(conn)
            if model is None:
                return None
            return {"model": model.name, "source": model.source, "dim": model.dim, "pending": count_pending(conn, model)}

    def sync_embeddings(
        self,
        *,
        batch_size: int = 16,
        progress: Callable[[int, int], None] | None = None,
        conn: Connection | None = None,
    ) -> dict[str, Any]:
        """Embed every live memory that has no vector from the store's model, a batch per
        transaction (vectors are derived data: an interrupted sync keeps what it finished and the
        next one carries on), or all in the caller's transaction `conn`. `progress(done, total)` is
        called after each batch."""
        from .semantic.embed import to_blob
        from .semantic.vectors import count_pending, pending, require_model, store_vectors

        def reading():
            return nullcontext(conn) if conn is not None else read_transaction(self.engine)

        def writing():
            return nullcontext(conn) if conn is not None else write_transaction(self.engine)

        with reading() as reader:
            model = require_model(reader)
            total = count_pending(reader, model)
        embedder = self._embedder_for(model) if total else None
        done, after_seq = 0, 0
        while done < total:
            with reading() as reader:
                batch = pending(reader, model, batch_size, after_seq)
            if not batch:
                break
            vectors = embedder.embed([text for _, text, _ in batch], batch_size=batch_size)
            with writing() as writer:
                store_vectors(writer, model, [memory_id for memory_id, _, _ in batch], [to_blob(v) for v in vectors], now_ms())
            done, after_seq = done + len(batch), batch[-1][2]
            if progress is not None:
                progress(done, total)
        return {"model": model.name, "embedded": done}

    def _embedder_for(self, model, *, for_queries: bool = False) -> Any:
        """The store object's embedder for its model, created once (loading the ONNX model costs
        seconds). Queries get one of their own on a single thread: ONNX Runtime's worker threads
        spin for a while after each run, and on two cores that slowed the vector search that
        follows each query by half; batches of memories get two threads."""
        from .semantic.embed import Embedder

        attribute = "_query_embedder" if for_queries else "_embedder"
        embedder = getattr(self, attribute, None)
        if embedder is None or embedder.model_name != model.name:
            embedder = Embedder(model.source, threads=1 if for_queries else 2)
            if embedder.model_name != model.name:
                raise MemstoreError(
                    f"the store's model is {model.name}, but {model.source} now holds {embedder.model_name}; "
                    "run `memstore embeddings enable` again"
                )
            setattr(self, attribute, embedder)
        return embedder

    def semantic_search(self, query: str, k: int = 5, namespace: str = DEFAULT_NAMESPACE) -> list[tuple[str, float]]:
        """The k live memories of `namespace` nearest to `query` by meaning: (id, cosine), best first."""
        query_vector = self._query_vector(query)
        with read_transaction(self.engine) as conn:
            return self._vector_hits(conn, query_vector, namespace, k)

    def _query_vector(self, query: str) -> Any:
        from .semantic.vectors import require_model

        with read_transaction(self.engine) as conn:
            model = require_model(conn)
        return self._embedder_for(model, for_queries=True).embed([query])[0]

    def _vector_hits(self, conn: Connection, query_vector: Any, namespace: str, k: int) -> list[tuple[str, float]]:
        """Vector search in the caller's transaction, through this store object's in-memory index."""
        from .semantic.vectors import VectorIndex, require_model

        model = require_model(conn)
        index = getattr(self, "_vector_index", None)
        if index is None or index.model != model:
            index = self._vector_index = VectorIndex(model)
        return index.search(conn, query_vector, namespace, k)

    # -- contradiction flags ---------------------------------------------------------------------

    def flags(self, namespace: str | None = DEFAULT_NAMESPACE, *, status: str = "open") -> list[dict[str, Any]]:
        """Contradiction flags of one namespace (None: all) with both texts, newest flag first.
        `newer_id` is the side written later: probably the current fact."""
        from .semantic.flags import list_flags

        with read_transaction(self.engine) as conn:
            return list_flags(conn, namespace, status)

    def dismiss_flag(self, flag_id: int) -> None:
        """Mark an open flag dismissed: the pair is fine and is not flagged again."""
        from .semantic.flags import dismiss

        with write_transaction(self.engine) as conn:
            dismiss(conn, flag_id, now_ms())

    # -- maintenance -----------------------------------------------------------------------------

    def maintain(
        self,
        phases: Sequence[str] | None = None,
        *,
        namespace: str | None = DEFAULT_NAMESPACE,
        capacity: int | None = None,
        checks: Sequence[Mapping[str, str]] | None = None,
        k: int = 3,
        dry_run: bool = False,
        duplicate_at: float | None = None,
        related_at: float | None = None,
        stale_threshold: float = 0.8,
        min_age_days: int = 90,
    ) -> MaintainReport:
        """Run the maintenance phases (default: all of check, dedup, semantic, contradict, stale,
        evict, verify) in that order, each one transaction and one run; see memstore.maintain."""
        from .maintain import Options, maintain, parse_phases

        if capacity is not None:
            check_capacity(capacity)
        options = Options(namespace, capacity, checks, k, dry_run, duplicate_at, related_at, stale_threshold, min_age_days)
        return maintain(self, parse_phases(phases), options)

    # -- forget, update, supersede ---------------------------------------------------------------

    def forget(self, ids: Sequence[str], *, reason: str | None = None, namespace: str | None = None) -> LifecycleReport:
        """Archive live memories with reason `forgotten`, in one run (`restore` brings them back).

        Every id must be live (and in `namespace`, when given): otherwise nothing is written.
        `reason`, the caller's own words, is kept in the run's params.
        """
        from .lifecycle import forget_in_transaction

        if isinstance(ids, str):
            ids = [ids]
        with write_transaction(self.engine) as conn:
            return forget_in_transaction(conn, list(ids), reason, namespace, now_ms())

    def update(
        self,
        id: str,
        *,
        text: str | None = None,
        importance: int | None = None,
        pinned: bool | None = None,
        meta: Mapping[str, Any] | None = None,
        fact_key: str | None = None,
        timestamp: int | None = None,
        namespace: str | None = None,
        new_id: str | None = None,
    ) -> dict[str, Any]:
        """Correct a live memory: write a new version and archive the old one as `superseded` by it.

        The new version has a new id and the timestamp now (unless given), and carries every field
        not changed, the old version's created_at and its recall history; `new_id` names the new
        version (default: a generated id). Returns the new row plus
        `supersedes` (the old id) and `run_id`; `restore(run_id)` puts the old version back. An
        archived id is an error naming its live successor.
        """
        from .lifecycle import update_in_transaction

        changes = {"text": text, "importance": importance, "pinned": pinned, "meta": meta, "fact_key": fact_key, "timestamp": timestamp}
        with write_transaction(self.engine) as conn:
            row, report = update_in_transaction(conn, id, changes, namespace, now_ms(), version_id=new_id)
        return {**row, "supersedes": id, "run_id": report.run_id}

    def supersede(self, old: str, *, by: str, namespace: str | None = None) -> LifecycleReport:
        """Archive the live memory `old` as `superseded` by the live memory `by`: how a person says
        which of two conflicting facts is current. One run; `restore` undoes it."""
        from .lifecycle import supersede_in_transaction

        with write_transaction(self.engine) as conn:
            return supersede_in_transaction(conn, old, by, namespace, now_ms())

    def backup(self, destination: str | os.PathLike[str], *, force: bool = False) -> dict[str, Any]:
        """Copy the store to `destination` with SQLite's online backup API (consistent while others write)."""
        if not self.is_sqlite:
            raise MemstoreError("backup works on SQLite stores only; for PostgreSQL use pg_dump")
        from .backup import backup_sqlite

        return backup_sqlite(self.engine, destination, force=force)

    def check(self, *, fix: bool = False) -> CheckReport:
        """Integrity, keys, ids, schema and index checks; `fix` repairs keys and the recall index."""
        from .check import check_store

        return check_store(self.engine, fix=fix)

    def namespaces(self) -> list[str]:
        with read_transaction(self.engine) as conn:
            return list(conn.execute(select(memories.c.namespace).distinct().order_by(memories.c.namespace)).scalars())

    @property
    def is_sqlite(self) -> bool:
        return is_sqlite(self.engine)


__all__ = ["AddResult", "MemoryStore", "MEMORY_COLUMNS"]
