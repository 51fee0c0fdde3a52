"""The vectors wing: the model, the vectors it makes, where they are kept and how they are searched.

One layer, above the schema and engine and below everything that reads meaning (the semantic
phases, recall, the runs that keep the index in step); no module here imports one above the wing.

* `embedder`: `Embedder` (fastembed; a model name or a local model directory), `to_blob` /
  `from_blob` / `from_blobs`, `require_extra` (the ``semantic`` extra, or what to install).
* `query_model`: `QueryModel`, one query embedded with ONNX Runtime and `tokenizers` alone (recall's
  path, without fastembed), exactly as `Embedder` embeds it.
* `storage`: vectors in `memory_vectors`, the store's model and counters in `memstore_settings`,
  pending memories, the reads a search makes.
* `index`: the vector index inside the database (sqlite-vec's `vec0` on SQLite, pgvector on
  PostgreSQL), kept in step by whoever changes the live set.
* `ranking`: the exact ranking every search ends with (float64 cosines, ties by id).
* `held`: the vectors a process keeps in memory between searches (`HeldCopies`, `MemoryCopy`).
* `vector_file`: the vector files beside a SQLite store whose `sqlite3` cannot load sqlite-vec
  (`FileCopy`).
* `search`: `search_path`, the one choice of the way a search goes (memory, the index, the vector
  file, the rows), `search` and `cosines`; its docstring walks a recall's query to its hits.
* `embeddings`: `Embeddings`, the store's model at work for one store object (enable, status,
  sync, a query embedded), keeping the loaded models.

Importing this package loads none of its modules; NumPy, fastembed and ONNX Runtime load when a
model first runs.
"""
