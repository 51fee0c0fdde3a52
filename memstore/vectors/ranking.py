"""The exact ranking every search path ends with: candidates' cosines in float64, best first, ties by id.

A path finds candidates its own way (the index's distances, a float32 product over vectors held in
memory or mapped from a file, or over the rows read from SQL: `coarse_cosines`) and hands them here: `top` and
`top_of` keep every candidate whose float32 cosine reaches the k-th's, less `FLOAT32_SLACK`
(`candidates`), and `exact_ranking` orders them on their vectors in float64, so every path gives the
same answer. A vector holding a NaN or an infinity has no cosine: never a neighbour. Pure NumPy,
imported on first use.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

# Candidates checked for liveness in a first round, as a multiple of k (a round with too few live
# ones among them looks four times deeper).
CANDIDATES_PER_RESULT = 2
# How far a cosine computed in float32 (sqlite-vec's and pgvector's distances, the NumPy coarse
# pass) may stray from the exact one over 384 dimensions: measured up to about 1.3e-6; a margin
# well above that, so a candidate is never judged sure, or left out, on float noise.
FLOAT32_SLACK = 1e-5
# Values per block when looking for the k-th largest of many (`kth_largest`).
TOP_BLOCK = 64


def coarse_cosines(rows: np.ndarray, query_vector: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """The float32 cosine of each row of `rows` (unit vectors, one per row) with the query, on the
    calling thread. Not `rows @ query`: NumPy hands that to its BLAS, which (OpenBLAS) splits it over
    a worker thread per core, and the worker then spins for tens of milliseconds after each product
    (measured 41-65 ms of CPU per product, at 10,000 and 100,000 x 384): a hybrid recall cost twice
    its CPU, and recalls back to back kept a second core of two busy, taken from every other process
    (recall beside 4 writers, docs/performance.md).
    NumPy's own loop over contiguous rows takes one thread and about the time of a single BLAS thread."""
    import numpy as np

    return np.einsum("ij,j->i", rows, np.asarray(query_vector, dtype=np.float32), out=out)


def exact_ranking(ids: Sequence[str], vectors: np.ndarray, query_vector: np.ndarray) -> list[tuple[str, float]]:
    """(id, cosine) best first, ties by id; cosines in float64, the same whichever way the
    candidates were found."""
    import numpy as np

    if not len(ids):
        return []
    similarity = np.asarray(vectors, dtype=np.float64) @ np.asarray(query_vector, dtype=np.float64)
    hits = [(memory_id, float(value)) for memory_id, value in zip(ids, similarity)]
    # A vector holding a NaN or an infinity has no cosine: never a hit (a NaN would also break the sort).
    return sorted((hit for hit in hits if math.isfinite(hit[1])), key=lambda hit: (-hit[1], hit[0]))


def top(ids: Sequence[str], vectors: np.ndarray, query_vector: np.ndarray, k: int) -> list[tuple[str, float]]:
    """The top k of `ids` by cosine, ties by id (`vectors`: their rows): see `top_of`."""
    if not len(ids):
        return []
    return top_of(ids, coarse_cosines(vectors, query_vector), lambda chosen: vectors[chosen], query_vector, k)


def top_of(ids: Sequence[str], coarse: np.ndarray, rows: Callable[[Any], np.ndarray], query_vector: np.ndarray, k: int) -> list[tuple[str, float]]:
    """The top k of `ids` by cosine, ties by id: `coarse`, their float32 cosines, picks the
    candidates (`candidates`), then `exact_ranking` orders them on their vectors (`rows(indices)`)."""
    chosen = candidates(coarse, k)
    return exact_ranking([ids[i] for i in chosen], rows(chosen), query_vector)[:k]


def candidates(coarse: np.ndarray, k: int) -> np.ndarray:
    """The positions of the candidates for the top k by `coarse` (float32 cosines): every finite one
    that reaches the k-th largest, less FLOAT32_SLACK."""
    import numpy as np

    # A vector holding a NaN or an infinity is never a neighbour (NumPy would sort a NaN above every
    # cosine, and an infinite one would make the k-th largest infinite and leave no candidate).
    coarse = np.where(np.isfinite(coarse), coarse, -np.inf)
    if len(coarse) > k:
        return np.flatnonzero((coarse >= kth_largest(coarse, k) - FLOAT32_SLACK) & np.isfinite(coarse))
    return np.flatnonzero(np.isfinite(coarse))


def kth_largest(values: np.ndarray, k: int) -> float:
    """The k-th largest of `values` (1 <= k <= len(values)). The k-th largest of the blocks' maxima
    is a floor under it (k blocks hold a value at least that large each), so only the values that
    reach the floor, a few per block at most, are partitioned: a quarter of the time of
    partitioning all of them at 100,000."""
    import numpy as np

    blocks = len(values) // TOP_BLOCK
    if blocks >= k:
        maxima = values[: blocks * TOP_BLOCK].reshape(blocks, TOP_BLOCK).max(axis=1)
        values = values[values >= np.partition(maxima, blocks - k)[blocks - k]]
    return float(np.partition(values, len(values) - k)[len(values) - k])
