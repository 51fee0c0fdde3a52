"""Hand-made vectors, for tests of plumbing (grouping, order, failures) where the cosines are chosen
and the texts still decide. Never for a claim about meaning: those run the real model."""

from __future__ import annotations

from memstore import MemoryStore

HANDMADE_MODEL = ("hand-made", "/nonexistent/model")


def store_handmade_vectors(store: MemoryStore, vectors: dict[str, list[float]], now: int = 1000) -> None:
    """Enable the store's embeddings with a model of the vectors' width (which no process can load:
    every memory must get its vector here) and store `vectors`."""
    from memstore.db import write_transaction
    from memstore.vectors.embedder import to_blob
    from memstore.vectors.storage import EmbeddingModel, set_model, store_vectors

    dim = len(next(iter(vectors.values())))
    with write_transaction(store.engine) as conn:
        model = EmbeddingModel(*HANDMADE_MODEL, dim)
        set_model(conn, model)
        store_vectors(conn, model, list(vectors), [to_blob(v) for v in vectors.values()], now)
