"""Recall: the k memories that best match a query, by full text, by meaning, or both fused, in the
live set or as of a past moment. One path whatever the moment; each module owns one step:

* `recaller`: `Recall`, what a `MemoryStore` recalls through: the mode, the query embedded before
  any transaction, one snapshot at one `now`, the vectors kept in memory between calls;
  `CheckRanking`, recall as the recall checks rank.
* `pipeline`: `ranked`, the one path: a mode's candidates from a `Source`, judged and fused.
* `live`: the source in the live set at `now` (full-text search, vector search, live rows).
* `as_of`: the source at a past moment (the rows live then, their cosines).
* `lexical`: the full-text side: the namespace's word counts, the ranking at a past moment (BM25).
* `fusion`: how hybrid recall scores a candidate (cosine plus its weighed share of the query's words).
* `touch`: the answer as a caller gets it: recall counts touched, open contradiction flags marked.

The database's own full-text search is `memstore.fulltext`; vector search, `memstore.vectors.search`.
Importing this package loads none of its modules: `Recall`, `CheckRanking` and `fusion_depth` load
on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .pipeline import fusion_depth
    from .recaller import CheckRanking, Recall

_LAZY = {"Recall": "recaller", "CheckRanking": "recaller", "fusion_depth": "pipeline"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["CheckRanking", "Recall", "fusion_depth"]
