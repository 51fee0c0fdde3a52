"""`Recall`: the k live memories that best match a query, by full text, by meaning, or both fused,
now or as of a past moment.

`Recall` belongs to one `MemoryStore` object and keeps what is worth keeping between calls: the
vectors of the namespaces it searched again, held in memory (`memstore.vectors.held.HeldCopies`),
and the recalls counted but not written yet (`PendingTouches`). A recall reads everything in one read snapshot at one moment (the store's
`snapshot(False)` opens a read transaction and reads the clock once inside it): whether the store
has vectors, the store's model to embed the query with, both rankings and the open flags. It takes
no write lock, so it never waits for a writer; the recall is counted after, by the store.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from ..defaults import RECALL_MODES
from ..errors import MemstoreError, ValidationError
from ..vectors.held import HeldCopies
from ..vectors.search import search
from ..vectors.storage import has_vectors, require_model
from .as_of import AsOfSource
from .fusion import Candidate
from .live import LiveSource
from .pipeline import Source, hybrid_candidates, ranked
from .touch import PendingTouches, answered

# `snapshot(write)`: a transaction (a write one if `write`) and the moment it reads at.
Snapshot = Callable[[bool], AbstractContextManager[tuple[Connection, int]]]
# `query_vector(text, conn)`: a query embedded with the store's model, read in `conn` (None: its own).
QueryVector = Callable[[str, Connection | None], Any]


def validate_mode(mode: str | None) -> None:
    if mode is not None and mode not in RECALL_MODES:
        raise ValidationError("recall", "mode", f"must be one of {', '.join(RECALL_MODES)}, not {mode!r}")


class Recall:
    """Recall over one store: `snapshot` opens its transactions, `query_vector(text, conn)` embeds a
    query with the store's model, `pending` keeps the recalls this store has yet to write."""

    def __init__(self, snapshot: Snapshot, query_vector: QueryVector, pending: PendingTouches | None = None) -> None:
        self.snapshot = snapshot
        self.query_vector = query_vector
        self.pending = pending if pending is not None else PendingTouches()
        self.vectors = HeldCopies()

    def recall(
        self, query: str, k: int, namespace: str, *, touch: bool, mode: str | None, at: int | None = None
    ) -> list[dict[str, Any]]:
        """The k best memories of `namespace`, best first, each with `score`, `found_by` and
        `open_flag`: the live ones, touched (recall_count + 1) if `touch`; or, with `at`, those live
        at that moment, untouched. See MemoryStore.recall for the modes."""
        validate_mode(mode)
        touch = touch and at is None
        with self.snapshot(False) as (conn, now):
            chosen, query_vector = self._mode_and_vector(conn, query, mode)
            rows = ranked(self._source(conn, namespace, now, at), query, k, chosen, query_vector)
            return answered(conn, rows, now if touch else None, self.pending)

    def _mode_and_vector(self, conn: Connection, query: str, mode: str | None) -> tuple[str, Any]:
        """The mode recall answers in (by default hybrid when the store has vectors, else lexical)
        and the query embedded for it, in the recall's own snapshot."""
        if mode == "lexical" or (mode is None and not has_vectors(conn)):
            return "lexical", None
        try:
            return mode or "hybrid", self.query_vector(query, conn)
        except MemstoreError:
            if mode is not None:
                raise
            # By default, recall that cannot load the model (the semantic extra missing here, the
            # model's directory moved) is still full-text recall.
            return "lexical", None

    def _source(self, conn: Connection, namespace: str, now: int, at: int | None) -> Source:
        return LiveSource(conn, namespace, now, self.vectors) if at is None else AsOfSource(conn, namespace, at)

    def ranked_rows(
        self, conn: Connection, query: str, k: int, namespace: str, mode: str, query_vector: Any, now: int
    ) -> list[dict[str, Any]]:
        """Recall's answer in the caller's transaction, among the live memories not expired at `now`,
        in `mode` (the query embedded already, unless lexical); nothing is touched."""
        return ranked(LiveSource(conn, namespace, now, self.vectors), query, k, mode, query_vector)

    def _embedded(self, queries: list[str], mode: str | None) -> tuple[str, dict[str, Any]]:
        """The mode recall answers in, and the queries embedded for it (before any transaction: the
        model takes milliseconds, a transaction should not wait on it)."""
        chosen = mode or "hybrid"
        if chosen == "lexical":
            return chosen, {}
        try:
            return chosen, {query: self.query_vector(query, None) for query in dict.fromkeys(queries)}
        except MemstoreError:
            if mode is not None:
                raise
            # By default, recall that cannot load the model (the semantic extra missing here, the
            # model's directory moved) is still full-text recall.
            return "lexical", {}

    def for_checks(self, queries: list[str], mode: str | None = None) -> CheckRanking:
        """How recall checks rank, ready before their transaction: the mode `recall` uses by default
        (hybrid when the store has vectors, else lexical) unless `mode` says otherwise."""
        validate_mode(mode)
        if mode is None:
            with self.snapshot(False) as (conn, _):
                mode = None if has_vectors(conn) else "lexical"
        chosen, vectors = self._embedded(queries, mode)
        # The checks rank inside the job's transaction, which may embed and then roll back (a dry
        # run): what they hold in memory belongs to a Recall of their own, gone with the job.
        return CheckRanking(Recall(self.snapshot, self.query_vector, self.pending), chosen, vectors)

    def semantic_search(self, query: str, k: int, namespace: str) -> list[tuple[str, float]]:
        """The k live memories of `namespace` nearest to `query` by meaning: (id, cosine), best first."""
        with self.snapshot(False) as (conn, now):
            return search(conn, require_model(conn), self.query_vector(query, conn), namespace, k, now=now, held=self.vectors)

    def hybrid_candidates(
        self, conn: Connection, query: str, namespace: str, query_vector: Any, depth: int, now: int
    ) -> tuple[dict[str, dict[str, Any]], list[Candidate]]:
        """What hybrid recall fuses at `now` (`memstore.recall.pipeline.hybrid_candidates`), for
        scripts/eval_recall.py's weight sweep, which calls it outside the store."""
        source = LiveSource(conn, namespace, now, self.vectors)
        return hybrid_candidates(source, query, query_vector, depth, source.nearest(query_vector, depth))


@dataclass(frozen=True)
class CheckRanking:
    """Recall as a recall check sees it: one mode, and the checks' queries embedded up front."""

    recall: Recall
    mode: str
    vectors: dict[str, Any]

    def top_ids(self, conn: Connection, query: str, k: int, namespace: str, now: int) -> list[str]:
        """The ids recall returns for `query`, best first, in the state `conn` sees at `now`."""
        return [row["id"] for row in self.recall.ranked_rows(conn, query, k, namespace, self.mode, self.vectors.get(query), now)]
