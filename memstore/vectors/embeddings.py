"""Embeddings at work for one store object: the model in use, syncing vectors, embedding queries.

`Embeddings` is owned by a `MemoryStore` and handed to whatever needs a model (recall, `maintain`):
loading a model costs seconds, so each is created once per store object and kept here. Vectors are
derived data: a sync embeds a batch per transaction, and an interrupted sync keeps what it finished.
The top of the vectors wing: it uses the embedder, the query model, storage, the vector files and
search's choice of the way (`memstore embeddings status` reports it), and nothing above the wing.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from sqlalchemy import Connection, Engine, select

from ..db import read_transaction, rows_in, write_transaction
from ..errors import MemstoreError
from ..records import now_ms
from ..schema import memories
from .embedder import BATCH_SIZE, DEFAULT_MODEL, LENGTH_WINDOW, Embedder, to_blob
from .query_model import QueryModel
from .search import search_notice, search_path
from .storage import EmbeddingModel, count_pending, ensure_index, model_of, pending, require_model, set_model, store_vectors
from .vector_file import bring_up_to_date, vector_file_store


class Embeddings:
    """The store's embedding model: enable it, report on it, sync vectors, embed queries."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        # Memories are embedded in batches with fastembed, on two threads. Queries on one thread of
        # their own (ONNX Runtime's workers spin for a while after each run, and on two cores that
        # slowed the vector search following each query by half), and for a model directory by
        # the lean QueryModel, which loads no fastembed.
        self.batch_embedder: Embedder | None = None
        self.query_model: tuple[str, bool, Callable[[str], Any]] | None = None  # (model name, optimized, embed one text)
        self.queries = 0

    def enable(self, model: str | os.PathLike[str] | None = None) -> dict[str, Any]:
        """Record the embedding model of this store: a fastembed model name (default
        sentence-transformers/all-MiniLM-L6-v2) or a local model directory. Nothing is embedded
        yet (see `sync`); a new model makes every memory pending again."""
        embedder = Embedder(DEFAULT_MODEL if model is None else model)
        chosen = EmbeddingModel(embedder.model_name, embedder.source, embedder.dim)
        with write_transaction(self.engine) as conn:
            notice = set_model(conn, chosen) or search_notice(conn, chosen)
            search = search_path(conn, chosen)
        self.batch_embedder = embedder
        return {"model": chosen.name, "source": chosen.source, "dim": chosen.dim, "search": search, "notice": notice}

    def shape(self) -> tuple[str, int] | None:
        """The store's model as (name, width), None when it has none: what a vector a record
        carries into the store must be (records.require_embedding_fits)."""
        with read_transaction(self.engine) as conn:
            model = model_of(conn)
        return None if model is None else (model.name, model.dim)

    def status(self) -> dict[str, Any] | None:
        """The store's model and how many live memories still need a vector; None if not enabled."""
        with read_transaction(self.engine) as conn:
            model = model_of(conn)
            if model is None:
                return None
            return {
                "model": model.name, "source": model.source, "dim": model.dim, "pending": count_pending(conn, model),
                "search": search_path(conn, model), "notice": search_notice(conn, model),
            }  # fmt: skip

    def sync(
        self,
        *,
        batch_size: int = BATCH_SIZE,
        progress: Callable[[int, int], None] | None = None,
        conn: Connection | None = None,
    ) -> dict[str, Any]:
        """Embed every live memory that has no vector from the store's model, a window of
        LENGTH_WINDOW memories per transaction (embedded in batches of `batch_size` texts of similar
        length), or all in the caller's transaction `conn`; first build the vector index if it is
        missing or out of step and this process can. `progress(done, total)` is called after each
        window."""

        def reading() -> AbstractContextManager[Connection]:
            return nullcontext(conn) if conn is not None else read_transaction(self.engine)

        def writing() -> AbstractContextManager[Connection]:
            return nullcontext(conn) if conn is not None else write_transaction(self.engine)

        with writing() as writer:
            model = require_model(writer)
            ensure_index(writer, model)
            keeps_files = conn is None and vector_file_store(writer, model) is not None
        with reading() as reader:
            total = count_pending(reader, model)
        embedder = self._embedder(model) if total else None
        done, after_seq = 0, 0
        namespaces: set[str] = set()
        while done < total and embedder is not None:
            with reading() as reader:  # a window of texts, embedded in batches of similar length
                batch = pending(reader, model, max(batch_size, LENGTH_WINDOW), after_seq)
            if not batch:
                break
            vectors = embedder.embed([text for _, text, _ in batch], batch_size=batch_size)
            ids = [memory_id for memory_id, _, _ in batch]
            with writing() as writer:
                store_vectors(writer, model, ids, [to_blob(v) for v in vectors], now_ms())
                if keeps_files:  # which files to bring up to date after the commit
                    namespaces.update(row.namespace for row in rows_in(writer, select(memories.c.namespace), memories.c.id, ids))
            done, after_seq = done + len(batch), batch[-1][2]
            if progress is not None:
                progress(done, total)
        if namespaces:  # committed: the vector files (where search reads them) follow now, not at the next search
            bring_up_to_date(self.engine, namespaces)
        return {"model": model.name, "embedded": done}

    def query_vector(self, query: str, conn: Connection | None = None) -> Any:
        """`query` embedded with the store's model (a unit float32 vector), read in `conn` (a
        recall's snapshot) or in a read transaction of its own."""
        with nullcontext(conn) if conn is not None else read_transaction(self.engine) as reader:
            model = require_model(reader)
        self.queries += 1
        # The first query of a process loads the model lean; a process that keeps recalling
        # switches to the optimized graph (QueryModel says what each costs).
        optimized = self.queries > 1
        if self.query_model is None or self.query_model[0] != model.name or self.query_model[1] < optimized:
            self.query_model = (model.name, optimized, self._open_query_model(model, optimized))
        return self.query_model[2](query)

    def _open_query_model(self, model: EmbeddingModel, optimized: bool) -> Callable[[str], Any]:
        """A model directory opens with the lean QueryModel; a fastembed name with fastembed."""
        embedder = Embedder(model.source, threads=1)  # checks the source; loads no model yet
        _same_model(model, embedder)
        if embedder.directory is not None:
            return QueryModel(embedder.directory, threads=1, optimized=optimized).embed
        return lambda query: embedder.embed([query])[0]

    def _embedder(self, model: EmbeddingModel) -> Embedder:
        """The batch embedder for the store's model, created once per store object."""
        if self.batch_embedder is None or self.batch_embedder.model_name != model.name:
            embedder = Embedder(model.source, threads=2)
            _same_model(model, embedder)
            self.batch_embedder = embedder
        return self.batch_embedder


def _same_model(model: EmbeddingModel, embedder: Embedder) -> None:
    if embedder.model_name != model.name:
        raise MemstoreError(
            f"the store's model is {model.name}, but {model.source} now holds {embedder.model_name}; "
            "run `memstore embeddings enable` again"
        )
