"""Vector files: a SQLite store's vectors kept beside it, one file per namespace, for a Python whose
`sqlite3` cannot load sqlite-vec.

memstore opens a store with Python's own `sqlite3` only (`memstore.db.sqlite_driver`: a second copy
of SQLite in the process must never open the file). Where that `sqlite3` cannot load extensions
(pyenv's, macOS's system Python) the vector index cannot live in the store, and reading a
namespace's vectors out of SQL on every `memstore recall` costs more than the rest of the process.
So the vectors a search needs are also kept in a directory beside the store, `STORE-vectors/`,
opened by no SQLite at all:

    NAME.json   the namespace, the model, the store's counters it reflects, and the ids, in order
    NAME.f32    the vectors, little-endian float32, one row per id, in the same order

NAME is a hash of the namespace. Like the in-memory `NamespaceVectors` they hold every vector of the
model whose memory, live or archived, is in the namespace; liveness is checked in SQL on the best
candidates. They are derived data: the store's `embedding_epoch_id` says whether a file is this
store's, and its `vectors_version`, `embedding_epoch` and newest `embedded_at` whether it is
current; a search brings it up to date first (reading only what was embedded since), or rebuilds
it when the model changed or the file is damaged, missing or another store's. Deleting the directory loses
nothing. A rows file may run past the ids (a writer stopped before renaming the .json): those rows
are not read, and the next update overwrites them.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import mmap
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine

from ..files import create_private_file, make_private_dirs, replaced_privately
from ..db import WRITE_OPTION, read_transaction
from .vectors import (
    CANDIDATES_PER_RESULT, EmbeddingModel, _best, _ranked, current_counters, live_vectors, model_of,
    namespace_vectors_since, newest_embedding, vector_file_store,
)
from .vectors import search as search_in_store


if TYPE_CHECKING:
    import numpy as np

FORMAT = 1
# Rows per block of the scan: 32,768 x 384 float32 is 50 MB, mapped one block at a time, so a
# per-turn `memstore recall` of any namespace stays within its memory budget (a whole namespace of
# 100,000 mapped at once added 154 MB to the process). Mapped, not read: reading copied 100,000
# vectors in 100-140 ms here, mapping them in 30-50.
SCAN_ROWS = 32_768


def directory_of(store_path: str) -> Path:
    return Path(store_path + "-vectors")


def _name(namespace: str) -> str:
    return hashlib.sha256(namespace.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class VectorFile:
    """One namespace's vector file (see the module's docstring)."""

    def __init__(self, store_path: str, model: EmbeddingModel, namespace: str) -> None:
        self.model = model
        self.namespace = namespace
        folder = directory_of(store_path)
        self.folder = folder
        self.meta_path = folder / f"{_name(namespace)}.json"
        self.rows_path = folder / f"{_name(namespace)}.f32"
        self.lock_path = folder / f"{_name(namespace)}.lock"

    @contextmanager
    def _locked(self, kind: int) -> Iterator[None]:
        # flock, not fcntl's POSIX locks: those belong to the process, and closing any descriptor of
        # the file would drop them; flock's belong to this open file.
        make_private_dirs(self.folder)
        create_private_file(self.lock_path)
        with open(self.lock_path, "rb") as handle:
            fcntl.flock(handle, kind)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _read_meta(self, epoch_id: str | None) -> dict[str, Any] | None:
        """The file's header, or None when missing, damaged, or not this store's (`epoch_id`), this
        namespace's and this model's."""
        try:
            meta = json.loads(self.meta_path.read_text(encoding="utf-8"))
            rows = self.rows_path.stat().st_size // (4 * self.model.dim)
        except (OSError, ValueError):
            return None
        fits = (
            isinstance(meta, dict) and meta.get("format") == FORMAT and meta.get("epoch_id") == epoch_id
            and meta.get("namespace") == self.namespace
            and meta.get("model") == self.model.name and meta.get("dim") == self.model.dim
            and isinstance(meta.get("ids"), list) and len(meta["ids"]) <= rows
        )  # fmt: skip
        return meta if fits else None

    def current(self, conn: Connection) -> dict[str, Any] | None:
        """The header of a file holding every vector `conn` sees, brought up to date first when it
        is behind; None when it cannot be used (search the store instead): this snapshot is older
        than the file's model (a model set since), or the file is behind and `conn` is inside a
        write transaction, whose vectors are not committed (a dry run rolls them back)."""
        version, epoch, epoch_id = current_counters(conn)
        newest = newest_embedding(conn, self.model)
        newest = -1 if newest is None else newest

        def behind(meta: dict[str, Any]) -> bool:
            # A store restored from a backup can count versions again that the file has seen, but
            # what it embeds since is stamped after everything the file holds.
            return meta["version"] < version or meta["newest"] < newest

        with self._locked(fcntl.LOCK_SH):
            meta = self._read_meta(epoch_id)
        if meta is not None and meta["epoch"] == epoch and not behind(meta):
            return meta
        if (meta is not None and meta["epoch"] > epoch) or conn.get_execution_options().get(WRITE_OPTION):
            return None
        with self._locked(fcntl.LOCK_EX):
            meta = self._read_meta(epoch_id)  # another process may have brought it up to date meanwhile
            if meta is None or meta["epoch"] < epoch:
                meta = self._rewrite(conn, version, epoch, epoch_id)
            elif meta["epoch"] == epoch and behind(meta):
                meta = self._append(conn, meta, version)
            return meta if meta["epoch"] == epoch else None

    def _rewrite(self, conn: Connection, version: int, epoch: int, epoch_id: str | None) -> dict[str, Any]:
        newest, fresh = namespace_vectors_since(conn, self.model, self.namespace, None)
        ids = sorted(fresh)
        # The old header goes first: a header must never name the rows of another file.
        self.meta_path.unlink(missing_ok=True)
        with replaced_privately(self.rows_path, binary=True) as rows:
            rows.write(b"".join(fresh[memory_id] for memory_id in ids))
        return self._write_meta(ids, version, epoch, epoch_id, newest)

    def _append(self, conn: Connection, meta: dict[str, Any], version: int) -> dict[str, Any]:
        newest, fresh = namespace_vectors_since(conn, self.model, self.namespace, meta["newest"])
        ids: list[str] = meta["ids"]
        if fresh:
            position = {memory_id: at for at, memory_id in enumerate(ids)}
            size = 4 * self.model.dim
            with open(self.rows_path, "r+b") as rows:
                added = sorted(memory_id for memory_id in fresh if memory_id not in position)
                for memory_id in sorted(set(fresh) - set(added)):  # re-embedded: replaced in place
                    rows.seek(position[memory_id] * size)
                    rows.write(fresh[memory_id])
                rows.seek(len(ids) * size)  # past rows a stopped writer left are overwritten
                rows.write(b"".join(fresh[memory_id] for memory_id in added))
                rows.truncate()
                rows.flush()
                os.fdatasync(rows.fileno())  # the rows are on disk before the header names them
            ids = ids + added
        return self._write_meta(ids, max(meta["version"], version), meta["epoch"], meta["epoch_id"], max(meta["newest"], newest))

    def _write_meta(self, ids: list[str], version: int, epoch: int, epoch_id: str | None, newest: int) -> dict[str, Any]:
        meta = {
            "format": FORMAT, "epoch_id": epoch_id, "namespace": self.namespace, "model": self.model.name,
            "dim": self.model.dim, "epoch": epoch, "version": version, "newest": newest, "ids": ids,
        }  # fmt: skip
        with replaced_privately(self.meta_path) as header:
            json.dump(meta, header, ensure_ascii=False, separators=(",", ":"))
        return meta

    def cosines(self, count: int, query_vector: np.ndarray) -> np.ndarray:
        """The float32 cosine of each of the first `count` rows with the query, a block at a time."""
        import numpy as np

        query = np.asarray(query_vector, dtype="<f4")
        out = np.empty(count, dtype=np.float32)
        size = 4 * self.model.dim
        with open(self.rows_path, "rb") as rows:
            for start in range(0, count, SCAN_ROWS):
                rows_here = min(SCAN_ROWS, count - start)
                # An offset of SCAN_ROWS rows of 4-byte floats is a multiple of the page size.
                with mmap.mmap(rows.fileno(), rows_here * size, offset=start * size, access=mmap.ACCESS_READ) as mapped:
                    block = np.frombuffer(mapped, dtype="<f4").reshape(rows_here, self.model.dim)
                    np.dot(block, query, out=out[start : start + rows_here])
                    del block  # the mapping closes only once nothing views it
        return out

    def rows(self, indices: Any) -> np.ndarray:
        """The vectors of rows `indices`."""
        import numpy as np

        size = 4 * self.model.dim
        with open(self.rows_path, "rb") as rows:
            chunks = []
            for index in indices:
                rows.seek(int(index) * size)
                chunks.append(rows.read(size))
        return np.frombuffer(b"".join(chunks), dtype="<f4").reshape(-1, self.model.dim)


def bring_up_to_date(engine: Engine, namespaces: Iterable[str]) -> int:
    """Bring the vector files of `namespaces` up to date with the store (written where missing),
    after a commit that wrote vectors, so that the next search, often a per-turn process's only
    one, finds them current; how many files were checked. Nothing when the store's search does not
    read vector files."""
    with read_transaction(engine) as conn:
        model = model_of(conn)
        store_path = None if model is None else vector_file_store(conn, model)
        if store_path is None:
            return 0
        wanted = sorted(set(namespaces))
        for namespace in wanted:
            VectorFile(store_path, model, namespace).current(conn)
        return len(wanted)


def search(
    conn: Connection, model: EmbeddingModel, query_vector: np.ndarray, namespace: str, k: int, *, now: int
) -> list[tuple[str, float]]:
    """What `vectors.search` answers (at `now`), from the namespace's vector
    file when the store is a SQLite file whose connection cannot keep the vector index, else as
    `vectors.search` does."""
    store_path = vector_file_store(conn, model)
    if store_path is None or k <= 0:
        return search_in_store(conn, model, query_vector, namespace, k, now=now)
    held = VectorFile(store_path, model, namespace)
    meta = held.current(conn)
    if meta is None:
        return search_in_store(conn, model, query_vector, namespace, k, now=now)
    ids: list[str] = meta["ids"]
    if not ids:
        return []
    with held._locked(fcntl.LOCK_SH):  # no vector replaced in place while it is read
        coarse = held.cosines(len(ids), query_vector)
        depth = max(CANDIDATES_PER_RESULT * k, 10)
        while True:
            candidates = _best(ids, coarse, held.rows, query_vector, min(depth, len(ids)))
            # Judged on the vectors this snapshot holds: the file may be newer than the snapshot.
            found = _ranked(*live_vectors(conn, model, [memory_id for memory_id, _ in candidates], namespace, now=now), query_vector)
            if len(found) >= k or depth >= len(ids):
                return found[:k]
            depth *= 4
