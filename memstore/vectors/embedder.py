"""The embedder: texts to unit-length float32 vectors with fastembed (ONNX Runtime, no PyTorch).

A model is either a name fastembed knows (downloaded and cached once, when online) or a local
directory holding ``model.onnx`` and the tokenizer files (``scripts/offline-model DIR`` assembles
one), which is loaded with no network access at all.

Vectors are stored as little-endian float32 blobs (`to_blob` / `from_blob`); rows are L2-normalised,
so cosine similarity is a dot product.

fastembed and NumPy are imported on first use, never by importing this module: the core of memstore
runs without the ``semantic`` extra, and a command that needs it says which extra to install
(`require_extra`). `local_pooling` reads how a model directory pools its tokens: `Embedder` and
the lean `memstore.vectors.query_model.QueryModel` both pool as it says.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import MemstoreError

if TYPE_CHECKING:
    import numpy as np

# The one place the default model is named.
DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
# ONNX Runtime threads for one embedder: the machines memstore targets have 2 cores.
THREADS = 2
# Texts per ONNX run. A batch is padded to its longest text, so short batches waste less: on 2 cores
# batches of 16 embedded memories of ~100 characters about a fifth faster than batches of 64.
BATCH_SIZE = 16
# Texts `embed` orders by length before cutting them into batches, so a batch holds texts of similar
# length and pads little (2,000 conversation turns in arrival order took twice as long as sorted).
# Callers give at most this many at a time (embeddings.sync does), so memory stays flat.
LENGTH_WINDOW = 512
# What a local model directory must hold (fastembed reads config.json and special_tokens_map.json
# when present, and needs the other three).
MODEL_FILE = "model.onnx"
REQUIRED_FILES = (MODEL_FILE, "tokenizer.json", "tokenizer_config.json")
INSTALL_HINT = "pip install 'memstore-agents[semantic]'"
# A directory model's name in the store: its ONNX file's identity, not its path (see Embedder).
LOCAL_NAME_PREFIX = "onnx-sha256:"


def require_extra(module: str) -> Any:
    """Import an optional dependency of the semantic extra, or say how to install it."""
    from importlib import import_module

    try:
        return import_module(module)
    except ImportError as error:
        raise MemstoreError(f"embeddings need the semantic extra ({module} is missing): {INSTALL_HINT}") from error


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


_identity_cache: dict[tuple[str, int, int], str] = {}


def local_model_name(directory: Path) -> str:
    """``onnx-sha256:<first 16 hex digits of model.onnx's sha256>``: the same on every machine and
    wherever the directory lives, different as soon as the weights differ."""
    model_file = directory / MODEL_FILE
    stat = model_file.stat()
    key = (str(model_file), stat.st_size, stat.st_mtime_ns)
    if key not in _identity_cache:
        _identity_cache[key] = LOCAL_NAME_PREFIX + _file_sha256(model_file)[:16]
    return _identity_cache[key]


def _local_dim(directory: Path) -> int:
    """The output width of a local model: config.json's hidden size, else the ONNX output's shape."""
    config = directory / "config.json"
    if config.is_file():
        with open(config) as f:
            values = json.load(f)
        for key in ("hidden_size", "dim", "d_model"):
            if isinstance(values.get(key), int):
                return values[key]
    ort = require_extra("onnxruntime")
    session = ort.InferenceSession(str(directory / MODEL_FILE), providers=["CPUExecutionProvider"])
    width = session.get_outputs()[0].shape[-1]
    if not isinstance(width, int):
        raise MemstoreError(f"cannot tell the embedding size of {directory}: add config.json with hidden_size")
    return width


def local_pooling(directory: Path) -> str:
    """How a model directory pools its tokens: "MEAN" (sentence-transformers' default) unless
    1_Pooling/config.json says "CLS"."""
    pooling = directory / "1_Pooling" / "config.json"
    if pooling.is_file():
        with open(pooling) as f:
            if json.load(f).get("pooling_mode_cls_token"):
                return "CLS"
    return "MEAN"


class Embedder:
    """Embeds texts with one fastembed model; the ONNX session is created on first use.

    `model` is a fastembed model name or a local directory (``model.onnx`` + tokenizer files).

    ``model_name`` is what the store records with each vector: the fastembed name for a named
    model; for a directory ``onnx-sha256:<16 hex>`` of its ``model.onnx``, so moving the directory
    or using the same offline model on another machine does not invalidate stored vectors.
    ``source`` is what to pass to `Embedder` to open the same model again (the name, or the
    directory's absolute path).

    >>> embedder = Embedder("/path/to/minilm")                          # doctest: +SKIP
    >>> embedder.embed(["User prefers dark mode."]).shape               # doctest: +SKIP
    (1, 384)
    """

    def __init__(self, model: str | os.PathLike[str] = DEFAULT_MODEL, *, threads: int = THREADS) -> None:
        self.threads = threads
        self._embedding: Any = None  # the fastembed TextEmbedding, once created
        self._dim: int | None = None
        model = os.fspath(model)
        path = Path(model).expanduser()
        if path.is_dir():
            self.directory: Path | None = path.resolve()
            missing = [name for name in REQUIRED_FILES if not (self.directory / name).is_file()]
            if missing:
                raise MemstoreError(
                    f"{self.directory} is not a model directory: it lacks {', '.join(missing)} "
                    "(scripts/offline-model DIR assembles one)"
                )
            self.source = str(self.directory)
            self.model_name = local_model_name(self.directory)
        elif path.exists() or model.startswith(("/", ".", "~")) or model.count("/") > 1:
            # A path (a fastembed name is "org/name"), but no directory.
            raise MemstoreError(f"no model directory at {model}")
        else:
            self.directory = None
            self.source = self.model_name = model

    def __repr__(self) -> str:
        return f"Embedder({self.source!r})"

    @property
    def dim(self) -> int:
        """The vector width, known without running the model."""
        if self._dim is None:
            if self.directory is not None:
                self._dim = _local_dim(self.directory)
            else:
                fastembed = require_extra("fastembed")
                try:
                    self._dim = fastembed.TextEmbedding.get_embedding_size(self.model_name)
                except ValueError as error:
                    raise MemstoreError(f"fastembed does not know the model {self.model_name!r}") from error
        return self._dim

    def _text_embedding(self) -> Any:
        if self._embedding is None:
            self._embedding = self._create()
        return self._embedding

    def _create(self) -> Any:
        if self.directory is None:
            fastembed = require_extra("fastembed")
            require_extra("numpy")
            try:
                return fastembed.TextEmbedding(self.model_name, threads=self.threads)
            except Exception as error:  # unknown name, or the download failed (offline)
                raise MemstoreError(
                    f"fastembed cannot load the model {self.model_name!r} ({error}); "
                    "without network, use a local directory: scripts/offline-model DIR"
                ) from error
        # A local directory is never looked up online: with specific_model_path fastembed reads the
        # files in place before any hub lookup, and local_files_only forbids a download besides.
        # (HF_HUB_OFFLINE is left alone: it would also stop a named model's download later in the
        # process.) tests/test_semantic_classify.py loads a directory with every connection refused.
        fastembed = require_extra("fastembed")
        require_extra("numpy")
        from fastembed.common.model_description import ModelSource, PoolingType

        registered_name = f"memstore-local/{self.model_name}"
        known = {entry["model"] for entry in fastembed.TextEmbedding.list_supported_models()}
        if registered_name not in known:
            fastembed.TextEmbedding.add_custom_model(
                model=registered_name,
                pooling=PoolingType[local_pooling(self.directory)],
                normalization=True,
                # Never fetched: specific_model_path makes fastembed read the files in place.
                sources=ModelSource(url=self.directory.as_uri()),
                dim=self.dim,
                model_file=MODEL_FILE,
                description=f"local model directory {self.directory}",
            )
        return fastembed.TextEmbedding(
            registered_name,
            cache_dir=str(self.directory),  # fastembed creates its cache dir; this one exists
            threads=self.threads,
            specific_model_path=str(self.directory),
            local_files_only=True,
        )

    def embed_batches(self, texts: Iterable[str], batch_size: int = BATCH_SIZE) -> Iterator[np.ndarray]:
        """Embed `texts` lazily: yields one (m, dim) float32 array per batch of up to `batch_size`,
        so a caller can store each batch (and show progress) as it comes."""
        np = require_extra("numpy")
        model = self._text_embedding()
        iterator = iter(texts)
        while batch := list(islice(iterator, batch_size)):
            rows = np.vstack(list(model.embed(batch, batch_size=batch_size))).astype(np.float32, copy=False)
            if rows.shape[1] != self.dim:
                raise MemstoreError(f"{self.source} produced {rows.shape[1]}-wide vectors, expected {self.dim}")
            # fastembed already normalises this model; doing it here holds for every model.
            norms = np.linalg.norm(rows, axis=1, keepdims=True)
            yield rows / np.maximum(norms, np.float32(1e-12))

    def embed(self, texts: Iterable[str], batch_size: int = BATCH_SIZE) -> np.ndarray:
        """Embed `texts` into an (n, dim) float32 array of unit rows, in order. The texts are
        embedded shortest first (see LENGTH_WINDOW): a text's vector does not depend on its batch."""
        np = require_extra("numpy")
        texts = list(texts)
        by_length = sorted(range(len(texts)), key=lambda i: (len(texts[i]), i))
        batches = list(self.embed_batches((texts[i] for i in by_length), batch_size))
        if not batches:
            return np.zeros((0, self.dim), dtype=np.float32)
        rows = np.empty((len(texts), self.dim), dtype=np.float32)
        rows[by_length] = np.concatenate(batches)
        return rows


def to_blob(vector: Sequence[float] | np.ndarray) -> bytes:
    """A vector as the stored blob: little-endian float32, 4 bytes per dimension."""
    if hasattr(vector, "astype"):
        return vector.astype("<f4", copy=False).tobytes()
    values = list(vector)
    return struct.pack(f"<{len(values)}f", *values)


def from_blob(blob: bytes, dim: int) -> np.ndarray:
    """A stored blob back as a float32 vector of length `dim`."""
    np = require_extra("numpy")
    if len(blob) != 4 * dim:
        raise MemstoreError(f"a vector blob of {len(blob)} bytes is not {dim} float32 values")
    return np.frombuffer(blob, dtype="<f4").astype(np.float32)


def from_blobs(blobs: Iterable[bytes], dim: int) -> np.ndarray:
    """Many stored blobs as one (n, dim) float32 matrix (the NumPy search path)."""
    np = require_extra("numpy")
    joined = b"".join(blobs)
    if len(joined) % (4 * dim):
        raise MemstoreError(f"vector blobs of {len(joined)} bytes in all are not rows of {dim} float32 values")
    return np.frombuffer(joined, dtype="<f4").astype(np.float32).reshape(-1, dim)
