"""The maintenance phases that read meaning: `semantic` merges duplicates said in other words,
`contradict` flags pairs that may contradict each other. Each is one run on a connection the caller
holds inside one write transaction, like the other jobs.

Both compare by cosine over the stored vectors, within one namespace, and let the texts decide
(`classify`): a pair is merged only when it is the same fact, never when a number, a negation or a
swapped word says the fact changed. A nightly run compares the memories that are new since the last
run of its kind (written, restored or re-embedded since) with all the others, not every pair again.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, and_, insert, or_, select, update

from ..db import rows_in
from ..live_counts import live_counts
from ..reference import stage1_order
from ..runs import ConsolidationReport, archive_ids, archived_entries, finish_run, lock_jobs, max_seq, merge_recall_history, saved_marks, start_run
from ..schema import contradiction_flags, memories, memory_vectors, unexpired
from ..schema import consolidation_runs as runs
from ..vectors import index as vector_index
from ..vectors.embedder import from_blobs
from ..vectors.ranking import FLOAT32_SLACK
from ..vectors.storage import EmbeddingModel, live_vectors, newest_embedding, require_model
from .pairs import DUPLICATE_AT, RELATED_AT, classify
from .statements import CANDIDATE_AT, FLAG_AT, conflict, merges

# Rows of new vectors compared with the whole namespace per matrix product (bounds memory).
BLOCK = 256
# Neighbours of a new memory asked of the vector index first (more while they stay similar enough).
NEIGHBOURS = 50


@dataclass(frozen=True)
class Pair:
    a: str  # a < b
    b: str
    similarity: float


@dataclass
class FlagEntry:
    older: str
    newer: str  # probably current
    similarity: float
    reason: str  # "subject: old → new"
    namespace: str
    id: int | None = None  # the flag's id (None in a dry run, which keeps none)
    confidence: float | None = None
    signal: str | None = None  # what in the texts showed the change
    resolved: bool = False  # the older side was superseded by this run (--resolve-updates)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "a": self.older, "b": self.newer, "similarity": self.similarity, "reason": self.reason,
                "namespace": self.namespace, "confidence": self.confidence, "signal": self.signal, "resolved": self.resolved}  # fmt: skip


@dataclass
class SemanticReport(ConsolidationReport):
    """A semantic or contradict run: what it merged (archived) and what it flagged."""

    compared: int = 0  # memories compared with the rest (the new ones)
    pairs: int = 0  # candidate pairs at or above related_at
    flags: list[FlagEntry] = field(default_factory=list)

    @property
    def duplicates(self) -> int:
        # `memstore runs` counts the merges by meaning in its duplicates column.
        return self._count("semantic_duplicate")

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "compared": self.compared, "pairs": self.pairs,
                "flags": [flag.to_dict() for flag in self.flags]}  # fmt: skip


def _marks(conn: Connection, kind: str, namespace: str, before_run: int) -> tuple[int, int, frozenset[str]] | None:
    """(seq, embedded_at, deferred ids) up to which the last run of `kind` over `namespace` (before
    this one, not restored) compared everything, but for the memories whose pairs it deferred; or
    how far a later run of its kind that found nothing compared (it recorded no run, only that)."""
    params = conn.execute(
        select(runs.c.params)
        .where(
            runs.c.kind == kind, runs.c.id < before_run, runs.c.status != "restored",
            or_(runs.c.namespace == namespace, runs.c.namespace.is_(None)),
        )
        .order_by(runs.c.id.desc())
        .limit(1)
    ).scalar_one_or_none()  # fmt: skip
    found = [(p["seq_through"], p["vectors_through"], frozenset(p.get("deferred", ()))) for p in [params or {}, *saved_marks(conn, kind, namespace)] if "seq_through" in p]
    return max(found, key=lambda marks: marks[:2]) if found else None


def candidate_pairs(
    conn: Connection, model: EmbeddingModel, namespace: str, since: tuple[int, int, frozenset[str]] | None, related_at: float, now: int
) -> tuple[list[Pair], int]:
    """Pairs of memories of `namespace` live at `now` at cosine >= related_at with at least one side new
    since `since` (every pair when None), best first then by ids; and how many were new.

    A nightly run with the vector index asks it for the neighbours of each new memory, so its cost
    follows the new memories, not the namespace; a first run, or a store without the index,
    compares the new memories with every vector of the namespace in blocks of BLOCK."""
    # Read off the namespace's index; the model is compared here, not in SQL, where SQLite would
    # walk the model's index over every vector of the store instead.
    of_namespace = (
        select(memories.c.id, memories.c.seq, memory_vectors.c.embedded_at, memory_vectors.c.vector, memory_vectors.c.model)
        .join(memory_vectors, memory_vectors.c.memory_id == memories.c.id)
        # An expired memory is out of sight, and never the survivor of a merge.
        .where(memories.c.namespace == namespace, unexpired(memories, now))
        .order_by(memories.c.id)
    )

    def of_model(rows) -> list:
        # A vector that is not usable (a hand edit) is left out: its memory is compared with none.
        return [row for row in rows if row.model == model.name and vector_index.usable(row.vector, model.dim)]

    if since is not None and vector_index.ready(conn, model.name):
        seq_mark, vector_mark, deferred = since
        new_rows = of_model(conn.execute(of_namespace.where(or_(memories.c.seq > seq_mark, memory_vectors.c.embedded_at > vector_mark))))
        # The deferred ones looked up apart, a chunk at a time: in one IN list they could pass the
        # databases' parameter limit.
        seen = {row.id for row in new_rows}
        deferred_rows = rows_in(conn, of_namespace, memories.c.id, sorted(deferred))
        new_rows = sorted([*new_rows, *of_model(row for row in deferred_rows if row.id not in seen)], key=lambda row: row.id)
        pairs = _pairs_by_index(conn, model, namespace, new_rows, related_at, now)
        if pairs is not None:
            return pairs, len(new_rows)
    return _pairs_by_matrix(of_model(conn.execute(of_namespace)), model, since, related_at)


def _pairs_by_index(
    conn: Connection, model: EmbeddingModel, namespace: str, new_rows, related_at: float, now: int
) -> list[Pair] | None:
    """The candidate pairs of the new memories, from their nearest neighbours in the vector index;
    None when a new memory has more neighbours at related_at than the index returns at once (the
    caller then compares with every vector of the namespace)."""
    limit = vector_index.depth_limit(conn)
    found: dict[tuple[str, str], float] = {}
    for row in new_rows:
        depth = NEIGHBOURS
        while True:
            if limit is not None:
                depth = min(depth, limit)
            nearest = vector_index.nearest(conn, row.vector, namespace, depth)
            # The furthest neighbour still at or above related_at: there may be more past the depth.
            if len(nearest) < depth or 1.0 - max(distance for _, distance in nearest) < related_at - FLOAT32_SLACK:
                break
            if depth == limit:
                return None
            depth *= 4
        # Live ones only: the index may hold a memory a shell edit deleted since.
        others, vectors = live_vectors(conn, model, [memory_id for memory_id, _ in nearest if memory_id != row.id], namespace, now=now)
        if not others:
            continue
        for other, value in zip(others, vectors @ from_blobs([row.vector], model.dim)[0]):
            if value >= related_at:
                found.setdefault(tuple(sorted((row.id, other))), float(value))  # a pair of two new ones is seen twice
    return sorted((Pair(a, b, sim) for (a, b), sim in found.items()), key=lambda p: (-p.similarity, p.a, p.b))


def _pairs_by_matrix(rows, model: EmbeddingModel, since: tuple[int, int, frozenset[str]] | None, related_at: float) -> tuple[list[Pair], int]:
    """The candidate pairs of the new memories against every vector of the namespace."""
    import numpy as np

    if len(rows) < 2:
        return [], 0
    ids = [row.id for row in rows]
    matrix = from_blobs((row.vector for row in rows), model.dim)
    if since is None:
        new = list(range(len(rows)))
    else:
        seq_mark, vector_mark, deferred = since
        new = [i for i, row in enumerate(rows) if row.seq > seq_mark or row.embedded_at > vector_mark or row.id in deferred]
    is_new = np.zeros(len(rows), dtype=bool)
    is_new[new] = True
    found: dict[tuple[str, str], float] = {}
    for start in range(0, len(new), BLOCK):
        block = new[start : start + BLOCK]
        similarity = matrix[block] @ matrix.T
        for row_in_block, j in zip(*np.nonzero(similarity >= related_at)):
            i = block[row_in_block]
            # A pair of two new memories is seen from both sides: keep it once.
            if i == j or (is_new[j] and j < i):
                continue
            a, b = sorted((ids[i], ids[j]))
            found[(a, b)] = float(similarity[row_in_block, j])
    pairs = sorted((Pair(a, b, sim) for (a, b), sim in found.items()), key=lambda p: (-p.similarity, p.a, p.b))
    return pairs, len(new)


def _live_rows(conn: Connection, ids: set[str]) -> dict[str, dict[str, Any]]:
    return {row.id: dict(row._mapping) for row in rows_in(conn, select(memories), memories.c.id, sorted(ids))}


def _candidates(
    conn: Connection, report: SemanticReport, run_id: int, model: EmbeddingModel, namespace: str, floor: float, now: int
) -> tuple[list[Pair], dict[str, dict[str, Any]]]:
    """The candidate pairs of `namespace` at cosine >= floor new since the last run of the report's
    kind, and their rows; counts them into the report."""
    since = _marks(conn, report.kind, namespace, run_id)
    pairs, compared = candidate_pairs(conn, model, namespace, since, floor, now)
    report.compared += compared
    report.pairs += len(pairs)
    return pairs, _live_rows(conn, {p.a for p in pairs} | {p.b for p in pairs})


def _classified(
    conn: Connection,
    report: SemanticReport,
    run_id: int,
    model: EmbeddingModel,
    namespace: str,
    duplicate_at: float,
    related_at: float,
    now: int,
) -> Iterator[tuple[Pair, str, str, dict, dict]]:
    """The candidate pairs of `namespace` new since the last run of the report's kind, each with the
    classifier's verdict and both rows; counts them into the report."""
    pairs, rows = _candidates(conn, report, run_id, model, namespace, related_at, now)
    for pair in pairs:
        verdict = classify(rows[pair.a]["text"], rows[pair.b]["text"], pair.similarity, duplicate_at=duplicate_at, related_at=related_at)
        yield pair, verdict.kind, verdict.reason, rows[pair.a], rows[pair.b]


def _namespaces(conn: Connection, namespace: str | None) -> list[str]:
    if namespace is not None:
        return [namespace]
    return list(conn.execute(select(memories.c.namespace).distinct().order_by(memories.c.namespace)).scalars())


def _begin(
    conn: Connection, kind: str, namespace: str | None, now: int, duplicate_at: float, related_at: float, dry_run: bool
) -> tuple[SemanticReport, int, dict, EmbeddingModel]:
    """Start a semantic or contradict run. Its params record the thresholds and how far it compared
    (the largest seq and the newest vector), which the next run of its kind reads past."""
    lock_jobs(conn, namespace)
    model = require_model(conn)
    params = {"model": model.name, "duplicate_at": duplicate_at, "related_at": related_at,
              "seq_through": max_seq(conn), "vectors_through": newest_embedding(conn, model) or 0}  # fmt: skip
    report = SemanticReport(kind, None, namespace, None, dry_run, params=params, started_at=now)
    counts = live_counts(conn, namespace, incremental=False)
    return report, start_run(conn, report, counts, stage1=False), counts, model


def semantic_in_transaction(
    conn: Connection,
    namespace: str | None,
    now: int,
    *,
    duplicate_at: float = DUPLICATE_AT,
    related_at: float = RELATED_AT,
    dry_run: bool = False,
) -> SemanticReport:
    """Merge duplicates by meaning: of each pair the classifier calls a duplicate, the memory the
    Stage 1 rule ranks lower (never a pinned one) is archived as `semantic_duplicate`, superseded_by
    the other, with the pair's similarity; the survivor inherits its recall history. Several copies
    may merge into one survivor; a survivor of the run is not archived in the same run (that pair
    waits for the next one), so no chain of merges links two memories never compared."""
    report, run_id, counts, model = _begin(conn, "semantic", namespace, now, duplicate_at, related_at, dry_run)
    deferred: set[str] = set()
    for each in _namespaces(conn, namespace):
        lost: set[str] = set()
        won: set[str] = set()
        losers: list[tuple[str, str, float]] = []
        for pair, kind, _, row_a, row_b in _classified(conn, report, run_id, model, each, duplicate_at, related_at, now):
            if kind != "duplicate" or pair.a in lost or pair.b in lost:
                continue
            if not merges(row_a["text"], row_b["text"], pair.similarity, duplicate_at, related_at):
                continue  # the same words around another value of one attribute: never merged
            winner, loser = sorted((row_a, row_b), key=stage1_order)
            if loser["pinned"]:
                continue  # pinned memories are never archived
            if loser["id"] in won:
                # Archiving a survivor of this run would chain merges through a memory never
                # compared with the others: the pair waits for the next run.
                deferred.update((pair.a, pair.b))
                continue
            losers.append((loser["id"], winner["id"], pair.similarity))
            lost.add(loser["id"])
            won.add(winner["id"])
        for loser_id, winner_id, similarity in losers:
            archive_ids(conn, [loser_id], "semantic_duplicate", winner_id, run_id, now, similarity=similarity)
        merge_recall_history(conn, each, run_id, reason="semantic_duplicate")
    if deferred:
        report.params["deferred"] = sorted(deferred - {entry.id for entry in archived_entries(conn, run_id)})
        conn.execute(update(runs).where(runs.c.id == run_id).values(params=report.params))
    return finish_run(conn, report, run_id, counts)


def contradict_in_transaction(
    conn: Connection,
    namespace: str | None,
    now: int,
    *,
    duplicate_at: float = DUPLICATE_AT,
    related_at: float = RELATED_AT,
    dry_run: bool = False,
    flag_at: float = FLAG_AT,
    resolve_at: float | None = None,
) -> SemanticReport:
    """Flag the pairs that state two values of one attribute of one subject (`statements.conflict`
    at confidence >= flag_at), for a person to resolve (`supersede`) or dismiss; each flag's reason
    reads "subject: old → new". Pairs are looked at from cosine CANDIDATE_AT (or related_at when
    lower), new since the last contradict run. A pair flagged once (whatever became of the flag,
    unless the run that raised it was restored) is not flagged again. A flag follows its memories
    (memstore.flag_lifecycle): an updated side's flag is on its new version already.

    With `resolve_at` (`maintain --resolve-updates`), the older side of each flag raised at that
    confidence or above is archived as `superseded` by the newest side that stays, in this same
    run, which one `restore` undoes (a pinned memory is never archived)."""
    report, run_id, counts, model = _begin(conn, "contradict", namespace, now, duplicate_at, related_at, dry_run)
    floor = min(related_at, CANDIDATE_AT)
    report.params.update({"candidate_at": floor, "flag_at": flag_at, **({"resolve_at": resolve_at} if resolve_at is not None else {})})
    for each in _namespaces(conn, namespace):
        pairs, rows = _candidates(conn, report, run_id, model, each, floor, now)
        raised: list[FlagEntry] = []
        for pair in pairs:
            older, newer = sorted((rows[pair.a], rows[pair.b]), key=lambda row: (row["timestamp"], row["id"]))
            found = conflict(older["text"], newer["text"])
            if found is None or found.confidence < flag_at or _known(conn, older["id"], newer["id"]):
                continue
            flag_id = conn.execute(
                insert(contradiction_flags).values(
                    namespace=each, older_id=older["id"], newer_id=newer["id"], similarity=pair.similarity,
                    reason=found.reason, confidence=found.confidence, signal=found.signal, status="open", run_id=run_id, flagged_at=now,
                ).returning(contradiction_flags.c.id)
            ).scalar_one()  # fmt: skip
            raised.append(FlagEntry(older["id"], newer["id"], pair.similarity, found.reason, each, None if dry_run else flag_id, found.confidence, found.signal))
        if resolve_at is not None:
            _resolve(conn, [entry for entry in raised if entry.confidence >= resolve_at], rows, run_id, now)
        report.flags += raised
    # Strongest first: what a person reads first, and what --resolve-updates settles.
    report.flags.sort(key=lambda entry: (-(entry.confidence or 0.0), entry.namespace, entry.older, entry.newer))
    if report.flags:  # what `memstore runs` says it did, even once restored (which takes the flags away)
        report.params["flagged"] = len(report.flags)
        resolved = sum(entry.resolved for entry in report.flags)
        if resolved:
            report.params["resolved"] = resolved
        conn.execute(update(runs).where(runs.c.id == run_id).values(params=report.params))
    return finish_run(conn, report, run_id, counts)


def _known(conn: Connection, older: str, newer: str) -> bool:
    """Was this pair flagged before? Either order: a flag moved by an update keeps its pair ordered
    by time, which an explicit timestamp may have put the other way round."""
    flags = contradiction_flags
    return (
        conn.execute(
            select(flags.c.id).where(
                or_(and_(flags.c.older_id == older, flags.c.newer_id == newer), and_(flags.c.older_id == newer, flags.c.newer_id == older))
            )
        ).first()
        is not None
    )


def _resolve(conn: Connection, chosen: list[FlagEntry], rows: dict[str, dict[str, Any]], run_id: int, now: int) -> None:
    """Archive the older side of each chosen flag as superseded by the newest memory its change
    leads to (A -> B -> C: A and B by C); a pinned side stays, and stops the walk."""
    leaving = {entry.older for entry in chosen if not rows[entry.older]["pinned"]}
    newest: dict[str, str] = {}
    for entry in sorted(chosen, key=lambda entry: (rows[entry.newer]["timestamp"], entry.newer)):
        newest[entry.older] = entry.newer
    for old in sorted(leaving):
        by = newest[old]
        while by in leaving:
            by = newest[by]
        archive_ids(conn, [old], "superseded", by, run_id, now)
    for entry in chosen:
        entry.resolved = entry.older in leaving
