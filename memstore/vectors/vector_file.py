"""Vector files: a SQLite store's vectors kept beside it, one file per namespace, for a Python whose
`sqlite3` cannot load sqlite-vec (the third of the four ways of `memstore.vectors.search`).

memstore opens a store with Python's own `sqlite3` only (`memstore.db.sqlite_driver`: a second copy
of SQLite in the process must never open the file). Where that `sqlite3` cannot load extensions
(pyenv's, macOS's system Python) the vector index cannot live in the store, and reading a
namespace's vectors out of SQL on every `memstore recall` costs more than the rest of the process.
So the vectors a search needs are also kept in a directory beside the store, `STORE-vectors/`,
opened by no SQLite at all:

    NAME.json   the namespace, the model, the store's counters it reflects, and the ids, in order
    NAME.f32    the vectors, little-endian float32, one row per id, in the same order

NAME is a hash of the namespace (`file_stem`). Like the in-memory `held.MemoryCopy`, a `FileCopy`
holds every vector of the model whose memory, live or archived, is in the namespace; liveness is
checked in SQL on the best candidates. They are derived data: the store's `embedding_epoch_id` says whether a file is this
store's, and its `vectors_version`, `embedding_epoch` and newest `embedded_at` whether it is
current; a search brings it up to date first (reading only what was embedded since), or rebuilds
it when the model changed or the file is damaged, missing or another store's. Deleting the directory loses
nothing. A rows file may run past the ids (a writer stopped before renaming the .json): those rows
are not read, and the next update overwrites them.

A file is brought up to date from the store's latest committed state, read in a transaction of its
own, also by a search inside a write transaction (a job's recall checks) when that
transaction has written no vector (its counters are the committed ones); one that has searches the
store. A file is damaged, and rebuilt by the search that finds it so, when its header is not
exactly what memstore writes (types, the model, the width, ids that are unique strings, no more
than the rows), when it is ahead of the store's counters (a forged header, a store restored from a
backup), when a row holds a NaN or an infinity (a rewrite keeps finite rows only), or when a
candidate's row differs from the store's vector though the file claims this very snapshot. Partial
files a killed writer left are removed by the next writer of that namespace. Whatever cannot be
read or written (the folder, a file) makes the search answer from the store: the same answers.

The folder is this user's own 0700 folder (`memstore.files.open_private_folder`): made so, or
removed and made again, before anything is read from it or written to it; every file in it is
opened by name under the folder's descriptor, never through a link. `memstore check` reports a
folder that is not so, and `check --fix` removes it.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import mmap
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine

from ..db import WRITE_OPTION, read_transaction
from ..files import open_in_folder, open_private_folder, remove_node, replace_in_folder
from . import index as vector_index
from .ranking import CANDIDATES_PER_RESULT, candidates, coarse_cosines, exact_ranking
from .storage import EmbeddingModel, current_counters, live_vectors, model_of, newest_embedding, vectors_to_copy

if TYPE_CHECKING:
    import numpy as np

FORMAT = 1
# Rows per block of the scan: 32,768 x 384 float32 is 50 MB, mapped one block at a time, so a
# per-turn `memstore recall` of any namespace stays within its memory budget (a whole namespace of
# 100,000 mapped at once added 154 MB to the process). Mapped, not read: reading copied 100,000
# vectors in 100-140 ms here, mapping them in 30-50.
SCAN_ROWS = 32_768
# Rows per block when a file is written whole (each block checked for values that are not finite).
WRITE_ROWS = 8_192
# Times a search goes round (read, bring up to date, read again) before it answers from the store.
ROUNDS = 3


def directory_of(store_path: str) -> Path:
    return Path(store_path + "-vectors")


def vector_file_store(conn: Connection, model: EmbeddingModel) -> str | None:
    """The store's file when searches of this connection read vector files beside it: a SQLite file
    whose connection cannot keep the vector index in it (no sqlite-vec here). Else None."""
    database = conn.engine.url.database if conn.dialect.name == "sqlite" else None
    if database in (None, "", ":memory:") or vector_index.ready(conn, model.name):
        return None
    return database


def file_stem(namespace: str) -> str:
    """The name of `namespace`'s files in the folder, before their suffix."""
    return hashlib.sha256(namespace.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class Damaged(Exception):
    """A vector file found damaged while it was read: rebuilt, then read again."""


@dataclass(frozen=True)
class Counters:
    """What the store's vectors are at, as a snapshot sees them (a header records the same)."""

    version: int
    epoch: int
    epoch_id: str | None
    newest: int

    def ahead_of(self, other: Counters) -> bool:
        return self.version > other.version or self.newest > other.newest

    def behind(self, other: Counters) -> bool:
        return self.version < other.version or self.newest < other.newest

    def same_model(self, other: Counters) -> bool:
        return (self.epoch, self.epoch_id) == (other.epoch, other.epoch_id)


def counters_of(conn: Connection, model: EmbeddingModel) -> Counters:
    version, epoch, epoch_id = current_counters(conn)
    newest = newest_embedding(conn, model)
    return Counters(version, epoch, epoch_id, -1 if newest is None else newest)


def _header_counters(meta: dict[str, Any]) -> Counters:
    return Counters(meta["version"], meta["epoch"], meta["epoch_id"], meta["newest"])


class FileCopy:
    """One namespace's vector file in the folder open as `folder` (see the module's docstring)."""

    def __init__(self, folder: int, model: EmbeddingModel, namespace: str) -> None:
        self.folder, self.model, self.namespace = folder, model, namespace
        name = file_stem(namespace)
        self.meta_name, self.rows_name, self.lock_name = f"{name}.json", f"{name}.f32", f"{name}.lock"
        self.partial_prefix = f".{name}."  # of the partial files replace_in_folder writes

    @contextmanager
    def _locked(self, kind: int) -> Iterator[None]:
        # flock, not fcntl's POSIX locks: those belong to the process, and closing any descriptor of
        # the file would drop them; flock's belong to this open file, and go with its descriptor.
        lock = open_in_folder(self.folder, self.lock_name, os.O_RDONLY | os.O_CREAT)
        try:
            fcntl.flock(lock, kind)
            yield
        finally:
            os.close(lock)

    def _read_meta(self) -> dict[str, Any] | None:
        """The file's header, or None when missing or damaged: anything but exactly what
        `_write_meta` writes for this namespace and model, naming no more rows than the file holds."""
        try:
            with os.fdopen(open_in_folder(self.folder, self.meta_name), "rb") as header:
                meta = json.loads(header.read().decode("utf-8"))
            rows = open_in_folder(self.folder, self.rows_name)
            try:
                count = os.fstat(rows).st_size // (4 * self.model.dim)
            finally:
                os.close(rows)
        except (OSError, ValueError, RecursionError):  # RecursionError: JSON nested too deep
            return None
        if not isinstance(meta, dict) or not all(type(meta.get(key)) is int for key in ("format", "dim", "epoch", "version", "newest")):
            return None
        ids = meta.get("ids")
        fits = (
            meta["format"] == FORMAT and meta["dim"] == self.model.dim and meta.get("model") == self.model.name
            and meta.get("namespace") == self.namespace and (meta.get("epoch_id") is None or type(meta["epoch_id"]) is str)
            and type(ids) is list and len(ids) <= count and set(map(type, ids)) <= {str} and len(set(ids)) == len(ids)
        )  # fmt: skip
        return meta if fits else None

    def update(self, engine: Engine, *, unless_past: Counters | None = None, force: bool = False) -> Counters | None:
        """Bring the file to the store's latest committed state, read in a transaction of its own,
        rewritten whole when `force`d (found damaged), missing, of another model or store, or ahead
        of the store; those counters. None, touching nothing, when they are not `unless_past` (a
        write transaction's: it has written vectors the file must not hold)."""
        with self._locked(fcntl.LOCK_EX), read_transaction(engine) as reader:
            latest = counters_of(reader, self.model)
            if unless_past is not None and latest != unless_past:
                return None
            for leftover in os.listdir(self.folder):  # no other writer runs: a killed one's partial files
                if leftover.startswith(self.partial_prefix) and ".partial-" in leftover:
                    remove_node(leftover, self.folder)
            meta = self._read_meta()
            held = None if meta is None else _header_counters(meta)
            if force or held is None or not held.same_model(latest) or held.ahead_of(latest):
                self._rewrite(reader, latest)
            elif held.behind(latest):
                self._append(reader, meta, latest)
            return latest

    def _rewrite(self, conn: Connection, latest: Counters) -> None:
        import numpy as np

        _, fresh = vectors_to_copy(conn, self.model, self.namespace, None)
        ids, kept = sorted(fresh), []

        def blocks() -> Iterator[bytes]:
            for start in range(0, len(ids), WRITE_ROWS):
                part = ids[start : start + WRITE_ROWS]
                block = np.frombuffer(b"".join(fresh[memory_id] for memory_id in part), dtype="<f4").reshape(len(part), self.model.dim)
                finite = np.isfinite(block).all(axis=1)  # a NaN row is never a neighbour: not kept
                kept.extend(memory_id for memory_id, ok in zip(part, finite) if ok)
                yield block[finite].tobytes()

        # The old header goes first: a header must never name the rows of another file.
        remove_node(self.meta_name, self.folder)
        replace_in_folder(self.folder, self.rows_name, blocks())
        self._write_meta(kept, latest)

    def _append(self, conn: Connection, meta: dict[str, Any], latest: Counters) -> None:
        import numpy as np

        _, fresh = vectors_to_copy(conn, self.model, self.namespace, meta["newest"])
        if fresh and not np.isfinite(np.frombuffer(b"".join(fresh.values()), dtype="<f4")).all():
            return self._rewrite(conn, latest)  # a row in place cannot be left out: the file is written whole
        ids: list[str] = meta["ids"]
        if fresh:
            position = {memory_id: at for at, memory_id in enumerate(ids)}
            size = 4 * self.model.dim
            with os.fdopen(open_in_folder(self.folder, self.rows_name, os.O_RDWR), "r+b") as rows:
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
        self._write_meta(ids, latest)

    def _write_meta(self, ids: list[str], counters: Counters) -> None:
        meta = {
            "format": FORMAT, "epoch_id": counters.epoch_id, "namespace": self.namespace, "model": self.model.name,
            "dim": self.model.dim, "epoch": counters.epoch, "version": counters.version, "newest": counters.newest, "ids": ids,
        }  # fmt: skip
        replace_in_folder(self.folder, self.meta_name, [json.dumps(meta, ensure_ascii=False, separators=(",", ":")).encode("utf-8")])

    def scan(self, conn: Connection, meta: dict[str, Any], query_vector: np.ndarray, k: int, now: int, *, verify: bool) -> list[tuple[str, float]]:
        """What `search.search` answers, from the rows of `meta` (read under a shared lock), judged
        on `conn`'s vectors. `verify`: the file claims `conn`'s snapshot, so each candidate's row
        must be the store's vector. Raises Damaged when a row is not what it should be."""
        import numpy as np

        ids: list[str] = meta["ids"]
        if not ids:
            return []
        rows = open_in_folder(self.folder, self.rows_name)
        try:
            coarse = self._cosines(rows, len(ids), query_vector)
            depth = max(CANDIDATES_PER_RESULT * k, 10)
            while True:
                chosen = candidates(coarse, min(depth, len(ids)))
                held = self._rows(rows, chosen)
                chosen_ids = [ids[i] for i in chosen]
                ranked = exact_ranking(chosen_ids, held, query_vector)[: min(depth, len(ids))]
                # Judged on the vectors this snapshot holds: the file may be newer than the snapshot.
                live, vectors = live_vectors(conn, self.model, [memory_id for memory_id, _ in ranked], self.namespace, now=now)
                if verify and live:
                    at = {memory_id: i for i, memory_id in enumerate(chosen_ids)}
                    if not np.array_equal(held[[at[memory_id] for memory_id in live]], vectors):
                        raise Damaged(f"{self.rows_name}: a row is not the store's vector")
                found = exact_ranking(live, vectors, query_vector)
                if len(found) >= k or depth >= len(ids):
                    return found[:k]
                depth *= 4
        finally:
            os.close(rows)

    def _cosines(self, rows: int, count: int, query_vector: np.ndarray) -> np.ndarray:
        """The float32 cosine of each of the first `count` rows with the query, a block at a time."""
        import numpy as np

        query = np.asarray(query_vector, dtype="<f4")
        out = np.empty(count, dtype=np.float32)
        size = 4 * self.model.dim
        for start in range(0, count, SCAN_ROWS):
            rows_here = min(SCAN_ROWS, count - start)
            # An offset of SCAN_ROWS rows of 4-byte floats is a multiple of the page size.
            with mmap.mmap(rows, rows_here * size, offset=start * size, access=mmap.ACCESS_READ) as mapped:
                block = np.frombuffer(mapped, dtype="<f4").reshape(rows_here, self.model.dim)
                coarse_cosines(block, query, out=out[start : start + rows_here])
                del block  # the mapping closes only once nothing views it
        odd = np.flatnonzero(~np.isfinite(out))
        if len(odd) and not np.isfinite(self._rows(rows, odd)).all():
            raise Damaged(f"{self.rows_name}: a row holds a value that is not finite")
        return out

    def _rows(self, rows: int, indices: Any) -> np.ndarray:
        """The vectors of rows `indices`."""
        import numpy as np

        size = 4 * self.model.dim
        chunks = [os.pread(rows, size, int(index) * size) for index in indices]
        return np.frombuffer(b"".join(chunks), dtype="<f4").reshape(-1, self.model.dim)


@contextmanager
def _folder(store_path: str) -> Iterator[int]:
    folder = open_private_folder(directory_of(store_path))
    try:
        yield folder
    finally:
        os.close(folder)


def bring_up_to_date(engine: Engine, namespaces: Iterable[str]) -> int:
    """Bring the vector files of `namespaces` up to date with the store (written where missing),
    after a commit that wrote vectors, so that the next search, often a per-turn process's only
    one, finds them current; how many files were checked. Nothing when the store's search does not
    read vector files; a file that cannot be written is left to the next search (committed
    vectors never fail for it)."""
    with read_transaction(engine) as conn:
        model = model_of(conn)
        store_path = None if model is None else vector_file_store(conn, model)
    if store_path is None:
        return 0
    wanted = sorted(set(namespaces))
    try:
        with _folder(store_path) as folder:
            for namespace in wanted:
                FileCopy(folder, model, namespace).update(engine)
    except OSError:
        return 0
    return len(wanted)


def search_file(
    conn: Connection, model: EmbeddingModel, query_vector: np.ndarray, namespace: str, k: int, *, now: int
) -> list[tuple[str, float]] | None:
    """What `search.search` answers (at `now`), from the namespace's vector file beside the store
    `vector_file_store` names; None when the file cannot answer for this snapshot or cannot be
    used (the search then reads the store's rows)."""
    store_path = vector_file_store(conn, model)
    if store_path is None or k <= 0:
        return None
    try:
        with _folder(store_path) as folder:
            return _search_file(FileCopy(folder, model, namespace), conn, query_vector, k, now)
    except OSError:
        return None


def _search_file(held: FileCopy, conn: Connection, query_vector: np.ndarray, k: int, now: int) -> list[tuple[str, float]] | None:
    """The answer from `held`'s file, brought up to date (or rebuilt) first where it must be; None
    when the file cannot answer for this snapshot (search the store instead)."""
    mine = counters_of(conn, held.model)
    writing = bool(conn.get_execution_options().get(WRITE_OPTION))
    accepted, force = {mine}, False
    for _ in range(ROUNDS):
        with held._locked(fcntl.LOCK_SH):  # no vector replaced in place while it is read
            meta = held._read_meta()
            if meta is not None and not force and _header_counters(meta) in accepted:
                try:
                    return held.scan(conn, meta, query_vector, k, now, verify=_header_counters(meta) == mine)
                except Damaged:
                    force = True
        latest = held.update(conn.engine, unless_past=mine if writing else None, force=force)
        if latest is None or not latest.same_model(mine):
            return None  # this snapshot's vectors are not the committed ones'
        # A snapshot older than the store: the file holds vectors embedded since, each candidate
        # judged on this snapshot's own.
        accepted.add(latest)
        force = False
    return None
