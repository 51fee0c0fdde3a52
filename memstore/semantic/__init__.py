"""Meaning, not only spelling: the pair classifier and the phases that read meaning.

* `pairs`: the pair classifier, `classify(text_a, text_b, similarity)` -> `Verdict` (duplicate,
  contradiction, related, unrelated), pure Python.
* `statements`: what two statements say of the same subject, and where they differ.
* `phases`: the `semantic` and `contradict` maintenance phases; `flags`: contradiction flags for a person.

The model, the vectors, their storage and their search are the vectors wing, `memstore.vectors`;
hybrid recall's fusion is `memstore.recall.fusion`. This package exports `classify` and `Verdict`,
and the embedder's names (`memstore.vectors.embedder`) lazily: importing it loads neither fastembed
nor NumPy; they load when a model first runs, and a missing ``semantic`` extra raises
`memstore.errors.MemstoreError` saying what to install.
"""

from __future__ import annotations

from typing import Any

from .pairs import Verdict, classify

_EMBEDDER = ("DEFAULT_MODEL", "Embedder", "to_blob", "from_blob", "from_blobs")


def __getattr__(name: str) -> Any:
    if name in _EMBEDDER:
        from ..vectors import embedder

        return getattr(embedder, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_MODEL", "Embedder", "Verdict", "classify", "from_blob", "from_blobs", "to_blob",
]  # fmt: skip
