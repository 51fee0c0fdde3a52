"""Meaning, not only spelling: local embeddings, their storage and search, the pair classifier and
the phases that read meaning.

* `embed`: `Embedder` (fastembed; a model name or a local model directory), `to_blob` / `from_blob`
  / `from_blobs`.
* `query_model`: `QueryModel`, one query embedded with ONNX Runtime and `tokenizers` alone (recall's
  path, without fastembed), exactly as `Embedder` embeds it.
* `vectors`: vectors in `memory_vectors`, the store's model, pending memories, nearest-neighbour
  search; `vector_file`: the vector files beside a SQLite store whose `sqlite3` cannot load sqlite-vec.
* `pairs`: the pair classifier, `classify(text_a, text_b, similarity)` -> `Verdict` (duplicate,
  contradiction, related, unrelated), pure Python.
* `phases`: the `semantic` and `contradict` maintenance phases; `flags`: contradiction flags for a person.

Hybrid recall's fusion is `memstore.recall.fusion`. This package exports `classify` and `Verdict`,
and `embed`'s names lazily: importing it loads neither fastembed nor NumPy; they load when a model first
runs, and a missing ``semantic`` extra raises `memstore.errors.MemstoreError` saying what to install.
"""

from __future__ import annotations

from typing import Any

from .pairs import Verdict, classify

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
    "DEFAULT_MODEL", "Embedder", "Verdict", "classify", "from_blob", "from_blobs", "to_blob",
]  # fmt: skip
