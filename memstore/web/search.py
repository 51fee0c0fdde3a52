"""The search form of the memories page: recall as a person uses it.

Every read is one call of the page's view of the store (memstore.store_scoped.ScopedStore): one
namespace is one `recall` (touching nothing), or `search_archive` for what was archived. "All namespaces" asks recall in each of the largest SEARCHED_NAMESPACES (on PostgreSQL,
which keeps no live counts, the first by name) and merges the
answers by how close each comes to its namespace's best match (scores of two namespaces are not on
one scale). When one namespace finds nothing, the hint says whether that namespace exists (and
which names are near) and, searching the live set, which others (HINT_NAMES at most) hold the
query's words: one bounded full-text read (`namespaces_matching`) whatever the number of
namespaces. These extra reads run only on an empty answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .shown import relevance

if TYPE_CHECKING:
    from ..store_scoped import ScopedStore

# Recall answers this many on the page.
SEARCH_K = 20
# "All namespaces" searches at most this many of the largest namespaces; the hint of an empty
# answer names at most HINT_NAMES others that hold matches.
SEARCHED_NAMESPACES = 50
HINT_NAMES = 3


@dataclass
class Answer:
    rows: list[dict[str, Any]]  # best first, each with `relevance` (0 to 1) and `rank`
    elsewhere: dict[str, int] = field(default_factory=dict)  # namespace -> matches, when the one asked found none
    missing: bool = False  # the namespace asked for holds nothing: no memory, live or archived, no flag
    nearest: list[str] = field(default_factory=list)  # names close to a missing one


def _ranked(rows: list[dict[str, Any]], namespace: str | None = None) -> list[dict[str, Any]]:
    shares = relevance([row.get("score", 0.0) for row in rows])
    return [dict(row, relevance=share, **({"namespace": namespace} if namespace is not None and "namespace" not in row else {}))
            for row, share in zip(rows, shares)]  # fmt: skip


def search(store: ScopedStore, query: str, namespace: str | None, names: list[str], *, as_of: int | None, archived: bool) -> Answer:
    """Search `namespace` (None: the largest `names`) for `query`: the live memories (as of `as_of`),
    or with `archived` the archived ones."""
    if archived:
        rows = _ranked(store.search_archive(query, SEARCH_K, namespace))
    elif namespace is not None:
        rows = _ranked(store.recall(query, SEARCH_K, namespace, as_of=as_of), namespace)
    else:
        merged = []
        # No list of the largest (PostgreSQL keeps no live counts): every namespace, by name.
        for name in (names or store.namespaces())[:SEARCHED_NAMESPACES]:
            merged += _ranked(store.recall(query, SEARCH_K, name, as_of=as_of), name)
        rows = sorted(merged, key=lambda row: (-row["relevance"], -row.get("score", 0.0), row["id"]))[:SEARCH_K]
    for rank, row in enumerate(rows, 1):
        row["rank"] = rank
    answer = Answer(rows)
    if not rows and namespace is not None and not archived:
        if namespace not in names:
            # Whether it holds anything (a live or archived memory, a flag) is an EXISTS each, not a
            # count of its rows; the nearest names are read only when it holds nothing.
            known = store.namespace_known(namespace)
            answer.missing, answer.nearest = not known["exists"], known["nearest"]
        if as_of is None:
            # One bounded full-text read over the newest memories holding the words: the others that hold matches.
            answer.elsewhere = store.namespaces_matching(query, namespace, limit=HINT_NAMES)
    return answer


__all__ = ["Answer", "SEARCHED_NAMESPACES", "SEARCH_K", "search"]
