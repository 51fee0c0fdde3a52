"""Embeddings at work for one store object: the model in use, syncing vectors, embedding queries.

`Embeddings` is owned by a `MemoryStore` and handed to whatever needs a model (recall, `maintain`):
loading a model costs seconds, so each is created once per store object and kept here. Vectors are
derived data: a sync embeds a batch per transaction, and an interrupted sync keeps what it finished.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from sqlalchemy import Connection, Engine

from .db import read_transaction, write_transaction
from .errors import MemstoreError
from .records import now_ms
from .semantic.embed import BATCH_SIZE, DEFAULT_MODEL, Embedder, to_blob
from .semantic.vectors import EmbeddingModel, count_pending, model_of, pending, require_model, set_model, store_vectors


class Embeddings:
    """The store's embedding model: enable it, report on it, sync vectors, embed queries."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        # Memories are embedded in batches on two threads; queries on one thread of their own
        # (ONNX Runtime's workers spin for a while after each run, and on two cores that slowed
        # the vector search following each query by half).
        self.batch_embedder: Embedder | None = None
        self.query_embedder: Embedder | None = None

    def enable(self, model: str | os.PathLike[str] | None = None) -> dict[str, Any]:
        """Record the embedding model of this store: a fastembed model name (default
        sentence-transformers/all-MiniLM-L6-v2) or a local model directory. Nothing is embedded
        yet (see `sync`); a new model makes every memory pending again."""
        embedder = Embedder(DEFAULT_MODEL if model is None else model)
        chosen = EmbeddingModel(embedder.model_name, embedder.source, embedder.dim)
        with write_transaction(self.engine) as conn:
            set_model(conn, chosen)
        self.batch_embedder = embedder
        return {"model": chosen.name, "source": chosen.source, "dim": chosen.dim}

    def status(self) -> dict[str, Any] | None:
        """The store's model and how many live memories still need a vector; None if not enabled."""
        with read_transaction(self.engine) as conn:
            model = model_of(conn)
            if model is None:
                return None
            return {"model": model.name, "source": model.source, "dim": model.dim, "pending": count_pending(conn, model)}

    def sync(
        self,
        *,
        batch_size: int = BATCH_SIZE,
        progress: Callable[[int, int], None] | None = None,
        conn: Connection | None = None,
    ) -> dict[str, Any]:
        """Embed every live memory that has no vector from the store's model, a batch per
        transaction, or all in the caller's transaction `conn`. `progress(done, total)` is called
        after each batch."""

        def reading() -> AbstractContextManager[Connection]:
            return nullcontext(conn) if conn is not None else read_transaction(self.engine)

        def writing() -> AbstractContextManager[Connection]:
            return nullcontext(conn) if conn is not None else write_transaction(self.engine)

        with reading() as reader:
            model = require_model(reader)
            total = count_pending(reader, model)
        embedder = self._embedder(model, for_queries=False) if total else None
        done, after_seq = 0, 0
        while done < total and embedder is not None:
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

    def query_vector(self, query: str) -> Any:
        """`query` embedded with the store's model (a unit float32 vector)."""
        with read_transaction(self.engine) as conn:
            model = require_model(conn)
        return self._embedder(model, for_queries=True).embed([query])[0]

    def _embedder(self, model: EmbeddingModel, *, for_queries: bool) -> Embedder:
        """The embedder for the store's model, created once per store object."""
        embedder = self.query_embedder if for_queries else self.batch_embedder
        if embedder is None or embedder.model_name != model.name:
            embedder = Embedder(model.source, threads=1 if for_queries else 2)
            if embedder.model_name != model.name:
                raise MemstoreError(
                    f"the store's model is {model.name}, but {model.source} now holds {embedder.model_name}; "
                    "run `memstore embeddings enable` again"
                )
            if for_queries:
                self.query_embedder = embedder
            else:
                self.batch_embedder = embedder
        return embedder
