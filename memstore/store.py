"""`MemoryStore`: the Python API, a facade. Each method opens its transaction and calls the one
function of the module that owns the work; SQL does the set work there.

Mixed in, each from a module of its own: the methods for a person reviewing the store
(store_review.py), for its files and model (store_files.py) and for LangGraph's items
(store_items.py). `scoped(namespace)` gives the store seen through one namespace (store_scoped.py).
The modules of the job, recall, hygiene, the integrity check and backup are imported by the
methods that use them, so a per-turn `memstore add` loads none of them.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from functools import cached_property
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any, TypeVar

from .db import BUSY_TIMEOUT_MS, BackgroundCheckpoints, default_location, is_sqlite, make_engine, read_transaction, shown_location, sqlite_file_missing, write_transaction
from .defaults import RECALL_CHECK_K, DEFAULT_IMPORTANCE, DEFAULT_NAMESPACE, MIN_AGE_DAYS, NEAR_DUPLICATE_THRESHOLD, RECALL_K, STALE_THRESHOLD
from .errors import NotFoundError
from .io import write_jsonl
from .migrate import upgrade
from .reads import count_rows, find_fact, get_row, iter_rows, namespace_names, rows_at, run_rows, run_whole, with_vectors as add_vectors
from .records import PreparedRow, now_ms, one_memory, prepare_row, update_changes
from .schema import MEMORY_COLUMNS
from .store_files import FileMethods
from .store_items import ItemMethods
from .store_review import ReviewMethods
from .validate import require_capacity, require_limit, require_moment
from .writes import AddResult, add_in_transaction, same_key_ids

if TYPE_CHECKING:
    from sqlalchemy import Connection, Engine

    from .vectors.embeddings import Embeddings
    from .importers.apply import ImportReport
    from .lifecycle import LifecycleReport
    from .maintain import MaintainReport
    from .recall.recaller import Recall
    from .recall_checks import RecallCheckResult
    from .restore import RestoreReport
    from .runs import ConsolidationReport
    from .store_scoped import ScopedStore


T = TypeVar("T")


class MemoryStore(ReviewMethods, FileMethods, ItemMethods):
    """A memory store in a SQLite file (a path) or any SQLAlchemy URL; opening it migrates it to head.

    >>> store = MemoryStore(tmp_path / "demo.db")              # doctest: +SKIP
    >>> store.add("User prefers dark mode.", id="m1")          # doctest: +SKIP
    """

    def __init__(
        self, path_or_url: str | os.PathLike[str] | None = None, *, create: bool = True,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
    ) -> None:
        """Open the store (`create=False`: a SQLite file that does not exist yet is an error);
        `busy_timeout_ms` is how long a SQLite write waits for another writer's lock."""
        self.location = os.fspath(path_or_url) if path_or_url is not None else default_location()
        missing = sqlite_file_missing(self.location)
        if missing and not create:
            raise NotFoundError(f"no memstore database at {missing}; create it with `memstore init`")
        self._engine = make_engine(self.location, busy_timeout_ms)
        self.checkpoints = BackgroundCheckpoints(self._engine)
        try:
            upgrade(self._engine)
        except BaseException:
            self._engine.dispose()
            raise

    @property
    def engine(self) -> Engine:
        """The store's SQLAlchemy engine. A recall answers from a read snapshot and counts itself
        later (it never waits for a writer): the recalls answered so far are written before the engine
        is handed out, so every read and write that follows a recall sees it counted."""
        self.count_recalls()
        return self._engine

    def count_recalls(self) -> None:
        """Write the recalls this store answered and has not counted yet (recall_count,
        last_recalled_at), in one short write transaction; `close` does it too."""
        recaller = self.__dict__.get("recaller")  # no recall yet: nothing to count, nothing to import
        if recaller is None or not recaller.pending:
            return
        from .recall.touch import write_touches

        groups = recaller.pending.take()
        try:
            with write_transaction(self._engine) as conn:
                write_touches(conn, groups)
        except BaseException:
            recaller.pending.give_back(groups)
            raise

    @property
    def url(self) -> str:
        return shown_location(self.engine.url)

    @property
    def is_sqlite(self) -> bool:
        return is_sqlite(self.engine)

    @cached_property
    def embeddings(self) -> Embeddings:
        """The store's embedding model at work (memstore.vectors.embeddings): it keeps the loaded models."""
        from .vectors.embeddings import Embeddings

        return Embeddings(self.engine)

    @cached_property
    def recaller(self) -> Recall:
        """Recall over this store (memstore.recall): it keeps the in-process vector index."""
        from .recall.recaller import Recall

        return Recall(self._recall_snapshot, self.embeddings.query_vector)

    @contextmanager
    def _recall_snapshot(self, write: bool = False) -> Iterator[tuple[Connection, int]]:
        """`_snapshot` for recall, which leaves the recalls it has counted to be written after."""
        with (write_transaction if write else read_transaction)(self._engine) as conn:
            yield conn, now_ms()

    @contextmanager
    def _snapshot(self, write: bool = False) -> Iterator[tuple[Connection, int]]:
        """A transaction and the one `now` its reads see, read once it holds the store (a write: the lock)."""
        with (write_transaction if write else read_transaction)(self.engine) as conn:
            yield conn, now_ms()

    def _read(self, work: Callable[[Connection, int], T]) -> T:
        with self._snapshot() as (conn, now):
            return work(conn, now)

    def _write(self, work: Callable[[Connection, int], T]) -> T:
        with self._snapshot(write=True) as (conn, now):
            return work(conn, now)

    def close(self) -> None:
        try:
            self.count_recalls()
        finally:
            self.checkpoints.wait()
            self._engine.dispose()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- writes -------------------------------------------------------------------------------

    def add(
        self, text: str, *, id: str | None = None, namespace: str = DEFAULT_NAMESPACE, timestamp: int | None = None,
        importance: int = DEFAULT_IMPORTANCE, pinned: bool = False, fact_key: str | None = None,
        meta: Mapping[str, Any] | None = None, ttl: float | None = None, expires_at: int | None = None,
    ) -> dict[str, Any]:
        """Store one memory and return its row (re-adding an identical record is a no-op). With `ttl`
        (seconds from now) or `expires_at` (Unix ms) it is invisible from then on (docs/time.md)."""
        return self._write_one(one_memory(text, id, namespace, timestamp, importance, pinned, fact_key, meta, ttl, expires_at))[0]

    def remember(
        self, text: str, *, id: str | None = None, namespace: str = DEFAULT_NAMESPACE,
        importance: int = DEFAULT_IMPORTANCE, pinned: bool = False, fact_key: str | None = None,
        meta: Mapping[str, Any] | None = None, timestamp: int | None = None, ttl: float | None = None,
        expires_at: int | None = None,
    ) -> dict[str, Any]:
        """Store one memory as `add` does and say what happened, for an agent's tool call: {"id", "norm_key",
        "status": "created" or "unchanged" (a retry), "same_key_ids": the other live memories of the
        namespace with its key, which the next consolidation run merges with it}."""
        row, added, same_key = self._write_one(one_memory(text, id, namespace, timestamp, importance, pinned, fact_key, meta, ttl, expires_at), True)
        return {"id": row["id"], "norm_key": row["norm_key"], "status": "created" if added else "unchanged", "same_key_ids": same_key}

    def _write_one(self, prepared: PreparedRow, with_same_key: bool = False) -> tuple[dict[str, Any], bool, list[str]]:
        """Write one row: the stored row (columns in table order, written now or found stored by a
        retry), whether it was written now, and (if asked) the other live ids of its key."""
        with self._snapshot(write=True) as (conn, now):  # now: once the transaction holds the store
            result, stored = add_in_transaction(conn, [prepared], now, skip_invalid=False)
            same_key = same_key_ids(conn, prepared.row, now) if with_same_key else []
        row = stored[prepared.row["id"]]
        return {**{name: row[name] for name in MEMORY_COLUMNS}, **row}, bool(result.added), same_key

    def add_many(self, records: Iterable[Mapping[str, Any]]) -> AddResult:
        """Store many memories in one transaction; every record is validated before anything is written."""
        now = now_ms()
        prepared = [prepare_row(record, f"record {index}", now) for index, record in enumerate(records)]
        return self._write(lambda conn, now: add_in_transaction(conn, prepared, now, skip_invalid=False)[0])

    def import_from(
        self, source_format: str, source: str | os.PathLike[str] | IO[bytes] | IO[str], namespace: str | None = None, *,
        name: str | None = None, skip_invalid: bool = False, dry_run: bool = False, progress: Callable[[int, int], None] | None = None,
    ) -> ImportReport:
        """Import another tool's memories (docs/import.md) or memstore's own JSON/JSONL ("memstore"): all read
        and checked, then one transaction (rolled back if `dry_run`); `progress(done, total)` while checking."""
        from .importers.apply import import_source

        options = {"name": name, "skip_invalid": skip_invalid, "dry_run": dry_run, "progress": progress}
        return import_source(self.engine, source_format, source, namespace, store_model=lambda: self.embeddings.shape(), **options)

    # -- reads --------------------------------------------------------------------------------

    def get(self, id: str, *, namespace: str | None = None) -> dict[str, Any]:
        """The memory with this id, live (expired or not) or archived (with `archived_at`, `reason`,
        ...); with `namespace`, one of another namespace is not found, exactly as an unknown id."""
        return self._read(lambda conn, now: get_row(conn, id, namespace))

    def find_fact(self, namespace: str, fact_key: str) -> dict[str, Any] | None:
        """The live memory of `namespace` holding `fact_key` (the newest, then smallest id, if several)."""
        return self._read(lambda conn, now: find_fact(conn, namespace, fact_key, now))

    def history(self, id: str, *, namespace: str | None = None) -> list[dict[str, Any]]:
        """Every version of a memory, oldest to newest: the ones it replaced and the ones that
        replaced it (superseded_by, followed both ways), live or archived. Each is the row plus
        `state` ("live" or "archived") and `archived_at`, `reason`, `superseded_by`, `run_id`."""
        from .lifecycle import history_rows

        return self._read(lambda conn, now: history_rows(conn, id, namespace, now))

    def list(
        self, namespace: str | None = DEFAULT_NAMESPACE, *, archived: bool = False, limit: int | None = None, as_of: int | None = None
    ) -> list[dict[str, Any]]:
        """Memories of one namespace (None: all), live in rank order, or archived by archive time;
        `as_of` (Unix ms): the memories that were live at that moment instead (memstore.reads.rows_at)."""
        limit = require_limit(limit, "list")
        if as_of is None:
            return list(self.iter_rows(namespace, archived=archived, limit=limit))
        return self._read(lambda conn, now: rows_at(conn, namespace, require_moment(as_of, "list"), limit=limit, archived=archived))

    def iter_rows(
        self, namespace: str | None = None, *, archived: bool = False, limit: int | None = None, namespace_prefix: str | None = None
    ) -> Iterator[dict[str, Any]]:
        """Rows of one namespace (None: all), live in (namespace, rank) order or archived by archive
        time. `namespace_prefix="a.b"` takes the namespaces "a.b" and "a.b.*" instead."""
        limit = require_limit(limit, "iter_rows")
        with read_transaction(self.engine) as conn:
            yield from iter_rows(conn, namespace, now_ms(), archived=archived, limit=limit, namespace_prefix=namespace_prefix)

    def export(
        self, stream: IO[str], namespace: str | None = None, *, archived: bool = False, with_vectors: bool = False
    ) -> int:
        """Write the memories of one namespace (None: all) as JSON Lines to `stream`: live in rank
        order (the expired ones not yet archived too), or archived by archive time; with
        `with_vectors` each with its `embedding`, which `import_from` stores. Returns how many."""
        with read_transaction(self.engine) as conn:
            rows = iter_rows(conn, namespace, now_ms(), archived=archived, with_expired=True)
            return write_jsonl(add_vectors(conn, rows) if with_vectors else rows, stream)

    def count(self, namespace: str | None = None, *, archived: bool = False) -> int:
        return self._read(lambda conn, now: count_rows(conn, namespace, now, archived=archived))

    def runs(self, limit: int | None = None, *, offset: int = 0, namespace: str | None = None) -> list[dict[str, Any]]:
        """Runs, newest first (`limit` from `offset`; with `namespace`, that namespace's own), each with
        `did`: what it changed, the counts that are not zero; `status` and `restored_at` say whether
        and when it was undone, and `parent_run_id` the maintain run whose phase it was."""
        limit = require_limit(limit, "runs")
        offset = require_limit(offset, "runs") or 0
        return self._read(lambda conn, now: run_rows(conn, limit, offset, namespace))

    def run(self, run_id: int, *, limit: int | None = None, offset: int = 0) -> dict[str, Any]:
        """One run whole: its row (with `did`), what it archived (`archived`: id, namespace, reason,
        superseded_by, similarity, text; `limit` of them from `offset`, `archived_total` in all), what
        a restore brought back (`restored`, `restored_memories` with texts, `restored_total`), the
        flags it raised (`flags_raised`) and settled (`flags_settled`), each with both texts, and a
        maintain run's phase runs (`phases`)."""
        limit = require_limit(limit, "run")
        offset = require_limit(offset, "run") or 0
        return self._read(lambda conn, now: run_whole(conn, run_id, limit=limit, offset=offset))

    def namespaces(self) -> list[str]:
        return self._read(lambda conn, now: namespace_names(conn, now))

    def scoped(self, namespace: str | None) -> ScopedStore:
        """This store seen through one namespace (None: every one), as a person's page sees it
        (memstore.store_scoped): it reads and changes nothing of another namespace."""
        from .store_scoped import ScopedStore

        return ScopedStore(self, namespace)

    # -- recall ------------------------------------------------------------------------------

    def recall(
        self, query: str, k: int = RECALL_K, namespace: str = DEFAULT_NAMESPACE, *, touch: bool = True,
        mode: str | None = None, as_of: int | None = None,
    ) -> list[dict[str, Any]]:
        """The k live memories that best match `query`, best first, each with `score` and `found_by` (the
        rankings that found it) and recall_count + 1 unless touch=False. `mode`: "lexical", "semantic" or
        "hybrid" (default: hybrid when the store has vectors, else lexical). `as_of` (Unix ms): among the
        memories live at that moment instead (memstore.recall.as_of), touching nothing."""
        at = None if as_of is None else require_moment(as_of, "recall")
        return self.recaller.recall(query, k, namespace, touch=touch, mode=mode, at=at)

    def semantic_search(self, query: str, k: int = RECALL_K, namespace: str = DEFAULT_NAMESPACE) -> list[tuple[str, float]]:
        """The k live memories of `namespace` nearest to `query` by meaning: (id, cosine), best first."""
        return self.recaller.semantic_search(query, k, namespace)

    def verify(self, checks: Sequence[Mapping[str, str]], k: int = RECALL_CHECK_K, *, mode: str | None = None) -> list[RecallCheckResult]:
        """Run recall checks against the live set, ranked as `recall` ranks by default (hybrid when
        the store has vectors) unless `mode` says otherwise; recall counts are not touched."""
        from .recall_checks import run_recall_checks

        ranking = self.recaller.for_checks([check["query"] for check in checks], mode)
        return self._read(lambda conn, now: run_recall_checks(conn, checks, k, now, ranking))

    def report(self, namespace: str | None = DEFAULT_NAMESPACE, *, now: int | None = None, near_threshold: float | None = None) -> dict[str, Any]:
        """The hygiene inventory of the live set (see memstore.hygiene for every definition), ages counted
        to `now`, and the open contradiction flags; `near_threshold` defaults to NEAR_DUPLICATE_THRESHOLD."""
        from .inventory import inventory

        return self._read(lambda conn, read_at: inventory(conn, namespace, read_at, near_threshold or NEAR_DUPLICATE_THRESHOLD, ages_at=now))

    # -- the jobs -----------------------------------------------------------------------------

    def consolidate(
        self, capacity: int, namespace: str | None = DEFAULT_NAMESPACE, dry_run: bool = False, *, full: bool = False,
        list_kept: bool = False, checks: Sequence[Mapping[str, str]] | None = None, k: int = RECALL_CHECK_K,
        check_mode: str | None = None,
    ) -> ConsolidationReport:
        """Archive the expired, deduplicate, then evict to `capacity`, in one transaction (`namespace=None`:
        every namespace). Incremental after a first run, with a full run's result (`full=True` forces
        one); `list_kept=True` lists every kept id (reads the whole live set); a dry run rolls back;
        with `checks`, the run commits only if every recall check passes against its result."""
        from .consolidate import consolidate_in_transaction

        require_capacity(capacity)
        return self._run_job(
            lambda conn, now: consolidate_in_transaction(
                conn, capacity, namespace, now, dry_run=dry_run, full=full, list_kept=list_kept
            ),
            dry_run, checks, k, check_mode,
        )  # fmt: skip

    def prune(
        self, namespace: str | None = DEFAULT_NAMESPACE, *, now: int | None = None,
        stale_threshold: float = STALE_THRESHOLD, min_age_days: int = MIN_AGE_DAYS, dry_run: bool = False,
        list_kept: bool = False, checks: Sequence[Mapping[str, str]] | None = None, k: int = RECALL_CHECK_K,
        check_mode: str | None = None,
    ) -> ConsolidationReport:
        """Archive exact duplicates (Stage 1 rule: newest wins) and stale memories; pinned ones stay."""
        from .prune import prune_in_transaction

        return self._run_job(
            lambda conn, read_at: prune_in_transaction(
                conn, namespace, read_at, ages_at=read_at if now is None else now, stale_threshold=stale_threshold,
                min_age_days=min_age_days, dry_run=dry_run, list_kept=list_kept,
            ),
            dry_run, checks, k, check_mode,
        )  # fmt: skip

    def _run_job(self, apply, dry_run: bool, checks, k: int, check_mode: str | None) -> ConsolidationReport:
        """Apply a job in one write transaction; keep it only if it is real and every check passes."""
        from .recall_checks import job_under_recall_checks

        ranking = self.recaller.for_checks([check["query"] for check in checks], check_mode) if checks else None
        report = job_under_recall_checks(self.engine, apply, now_ms, dry_run, checks, k, ranking)
        if not dry_run:
            self.checkpoints.start()
        return report

    def expire(self, namespace: str | None = None, *, dry_run: bool = False) -> ConsolidationReport:
        """Archive the memories whose lifetime has ended, as `expired`, in one run of kind `expire`
        (every job does this first; this is it alone). `restore` brings them back as they were."""
        from .expire import expire_in_transaction

        return self._run_job(lambda conn, now: expire_in_transaction(conn, namespace, now, dry_run=dry_run), dry_run, None, RECALL_CHECK_K, None)

    def restore(self, run_id: int, *, dry_run: bool = False) -> RestoreReport:
        """Undo a run: its archived rows go back to the live set, whole, and the flags it settled
        open again; a maintain run: each of its phase runs still applied, newest first; a restore
        of one memory: that memory goes back to the archive. The report names each memory back
        (`memories`, with texts) and each flag that changed (`flags`). A dry run says what would
        come back and writes nothing."""
        from .restore import restore_in_transaction

        return self._write(lambda conn, now: restore_in_transaction(conn, run_id, now, dry_run=dry_run))

    def maintain(
        self, phases: Sequence[str] | None = None, *, namespace: str | None = DEFAULT_NAMESPACE,
        capacity: int | None = None, checks: Sequence[Mapping[str, str]] | None = None, k: int = RECALL_CHECK_K,
        dry_run: bool = False, duplicate_at: float | None = None, related_at: float | None = None,
        stale_threshold: float = STALE_THRESHOLD, min_age_days: int = MIN_AGE_DAYS, check_mode: str | None = None,
        stale: bool = False, resolve_updates: bool = False,
    ) -> MaintainReport:
        """Run the maintenance phases (default: all of check, expire, dedup, semantic, contradict, stale,
        evict, verify) in that order, each one transaction and one run if it changed something; the
        stale phase archives only with `stale=True` (else it is skipped); with `resolve_updates` the
        contradict phase supersedes the older side of its surest flags; see memstore.maintain."""
        from .maintain import Options, maintain, parse_phases

        options = Options(namespace, capacity, checks, k, dry_run, duplicate_at, related_at, stale_threshold, min_age_days, check_mode, stale,
                          resolve_updates=resolve_updates)  # fmt: skip
        return maintain(self.engine, self.embeddings, self.recaller, parse_phases(phases), options, now_ms)

    def maintain_preview(self, phases: Sequence[str] | None = None, *, namespace: str = DEFAULT_NAMESPACE, stale: bool = False) -> MaintainReport:
        """What `maintain` would do to one namespace, from one read transaction: locks nothing for writing, embeds nothing."""
        from .maintain_preview import preview

        return preview(self.engine, phases, namespace, stale=stale, clock=now_ms)

    # -- forget, update, supersede ---------------------------------------------------------------

    def forget(self, ids: Sequence[str], *, reason: str | None = None, namespace: str | None = None) -> LifecycleReport:
        """Archive live memories as `forgotten`, in one run `restore` undoes; every id must be live (and in
        `namespace`, when given), else nothing is written; `reason` goes in the run's params."""
        from .lifecycle import forget_in_transaction

        return self._write(lambda conn, now: forget_in_transaction(conn, [ids] if isinstance(ids, str) else list(ids), reason, namespace, now))

    def update(
        self, id: str, *, text: str | None = None, importance: int | None = None, pinned: bool | None = None,
        meta: Mapping[str, Any] | None = None, fact_key: str | None = None, timestamp: int | None = None, namespace: str | None = None,
        new_id: str | None = None, ttl: float | None = None, expires_at: int | None = None, no_expiry: bool = False,
    ) -> dict[str, Any]:
        """Correct a live memory: a new version (id `new_id` or a generated one; timestamp now unless
        given) carries every field not changed (the lifetime too, unless `ttl`, `expires_at` or
        `no_expiry`), created_at and recall history; the old one is archived as `superseded` by it.
        Returns the new row plus `supersedes` and `run_id` (`restore(run_id)` undoes it)."""
        from .lifecycle import update_in_transaction

        fields = {"text": text, "importance": importance, "pinned": pinned, "meta": meta, "fact_key": fact_key, "timestamp": timestamp}
        with write_transaction(self.engine) as conn:
            now = now_ms()
            changes = update_changes(now, f"update {id}", ttl=ttl, expires_at=expires_at, no_expiry=no_expiry, **fields)
            row, report = update_in_transaction(conn, id, changes, namespace, now, version_id=new_id)
        return {**row, "supersedes": id, "run_id": report.run_id}

    def supersede(self, old: str, *, by: str, namespace: str | None = None) -> LifecycleReport:
        """Archive the live memory `old` as `superseded` by the live memory `by`: how a person says
        which of two conflicting facts is current. One run; `restore` undoes it."""
        from .lifecycle import supersede_in_transaction

        return self._write(lambda conn, now: supersede_in_transaction(conn, old, by, namespace, now))


__all__ = ["AddResult", "MemoryStore", "MEMORY_COLUMNS"]
