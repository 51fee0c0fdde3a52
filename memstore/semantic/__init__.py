"""Meaning, not only spelling: local embeddings, the pair classifier and hybrid recall fusion.

* `embed`: `Embedder` (fastembed; a model name or a local model directory), `to_blob` / `from_blob`.
* `pairs`: the pair classifier, `classify(text_a, text_b, similarity)` -> `Verdict` (duplicate,
  contradiction, related, unrelated), pure Python.
* `fusion`: `fuse(lexical, semantic, k)` -> `Fused` results that keep what each ranking found.

Importing this package loads neither fastembed nor NumPy; they load when a model first runs, and
a missing ``semantic`` extra raises `memstore.errors.MemstoreError` saying what to install.
"""

from __future__ import annotations

from typing import Any

from .pairs import Verdict, classify
from .fusion import Fused, fuse

_LAZY = {
    "DEFAULT_MODEL": "embed", "Embedder": "embed", "to_blob": "embed", "from_blob": "embed",
    "from_blobs": "embed",
}  # fmt: skip


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_MODEL", "Embedder", "Fused", "Verdict", "classify", "from_blob", "from_blobs", "fuse", "to_blob",
]  # fmt: skip
