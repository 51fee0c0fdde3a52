"""mem0 dumps written by the real mem0 (`mem0ai` from PyPI), for the mem0 importer's tests.

`memstore import --from mem0 FILE` reads what mem0's `Memory.get_all()` / `Memory.search()` return
(`{"results": [...]}`, or the bare list under it), saved as JSON. The functions here create a real
`mem0.Memory` in a temp dir, add memories with `add(..., infer=False)` (stored verbatim, no LLM),
make real `update()` / `delete()` calls, and `json.dump` what `get_all()` or `search()` returns,
as a user would save it. Nothing here writes or edits a record.

Written against and tested with mem0ai 2.2.1 (fastembed 0.9.1, qdrant-client 1.20.0); the test
extra admits `mem0ai>=2.2,<3`. The config (`mem0_config`):

- embedder: mem0's own `fastembed` provider, on the project's local ONNX MiniLM directory (the
  `model_dir` fixture). mem0 only calls `TextEmbedding(model_name=...)`, so the directory is
  registered once with `TextEmbedding.add_custom_model` under EMBEDDER_MODEL (a url source that is
  never fetched) and found as `FASTEMBED_CACHE_PATH/minilm`, a symlink to the directory;
- vector store: Qdrant in local path mode (`qdrant-client`, no server) inside the temp dir;
- LLM: `openai` with a dummy key; never called, since every `add` has `infer=False`;
- history: mem0's SQLite history file inside the temp dir.

Nothing is fetched from the network, and that is checked, not assumed:

- `MEM0_TELEMETRY=False` is set before mem0 is imported (mem0 reads it once, at import, in
  `mem0/memory/telemetry.py`; it also gates the notices that fetch a config from GitHub), and
  `MEM0_DIR` points into a temp dir, so mem0's `config.json` (an anonymous user id it writes at
  import) never lands in ~/.mem0;
- mem0's Qdrant store loads a BM25 sparse encoder (`fastembed` `Qdrant/bm25`, from Hugging Face)
  on the first insert: `HF_HUB_OFFLINE=1` (only while a Memory is open, after huggingface_hub was
  imported, so its own constant is left alone) makes fastembed look in its cache only, fail at
  once and mem0 go on without BM25 (it logs "Failed to load BM25 encoder"; dumps do not show it);
- spaCy (mem0's `nlp` extra, for lemmas and entities; it would download `en_core_web_sm`) is hidden
  while a Memory is open, so mem0 runs as it does without that extra, as installed here;
- while mem0 is imported and a Memory is open, every socket connection and name lookup is refused
  and recorded; any attempt makes the function raise Mem0SourceError when it is done.

Without mem0ai (or the model directory) these functions raise: a test that uses them fails, never
skips.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import importlib.metadata
import json
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

# What the helpers were written against; `installed_mem0_version()` says what actually runs.
MEM0_VERSION_TESTED = "2.2.1"
# The name the model directory is registered under in fastembed; its last part is the folder
# fastembed looks for in FASTEMBED_CACHE_PATH.
EMBEDDER_MODEL = "memstore-test/minilm"
EMBEDDING_DIMS = 384
COLLECTION = "memstore_test"
DEFAULT_USER = "alice"
DEFAULT_TOP_K = 100  # mem0's own default is 20: a dump should hold every memory we added


class Mem0SourceError(RuntimeError):
    """mem0 is missing or misbehaved (e.g. it tried to reach the network), or a call failed."""


def installed_mem0_version() -> str:
    try:
        return importlib.metadata.version("mem0ai")
    except importlib.metadata.PackageNotFoundError as error:
        raise Mem0SourceError("mem0ai is not installed: `pip install -e '.[test]'` installs it") from error


_mem0_home: str | None = None


def _import_mem0() -> tuple[Any, Any]:
    """(mem0.Memory, fastembed), mem0 imported with telemetry off and MEM0_DIR in a temp dir."""
    global _mem0_home
    if "mem0" not in sys.modules:
        os.environ["MEM0_TELEMETRY"] = "False"
        if _mem0_home is None:
            _mem0_home = tempfile.mkdtemp(prefix="memstore-mem0-home-")
            atexit.register(shutil.rmtree, _mem0_home, True)
        os.environ["MEM0_DIR"] = _mem0_home
    installed_mem0_version()
    try:
        import fastembed
        from mem0 import Memory
        from mem0.memory import telemetry
    except ImportError as error:
        raise Mem0SourceError(f"cannot import mem0 ({error}): `pip install -e '.[test]'` installs mem0ai") from error
    if telemetry.MEM0_TELEMETRY:
        raise Mem0SourceError("mem0 was imported with its telemetry on (MEM0_TELEMETRY) before tests/mem0_source.py could turn it off")
    return Memory, fastembed


def _register_model(fastembed: Any) -> None:
    """Make EMBEDDER_MODEL a fastembed model (once per process: fastembed refuses a second)."""
    from fastembed.common.model_description import ModelSource, PoolingType

    known = {entry["model"] for entry in fastembed.TextEmbedding.list_supported_models()}
    if EMBEDDER_MODEL not in known:
        fastembed.TextEmbedding.add_custom_model(
            model=EMBEDDER_MODEL,
            pooling=PoolingType.MEAN,
            normalization=True,
            # Never fetched: fastembed finds FASTEMBED_CACHE_PATH/minilm first, and HF_HUB_OFFLINE
            # forbids a download besides.
            sources=ModelSource(url="file:///nonexistent/memstore-test-never-fetched.tar.gz"),
            dim=EMBEDDING_DIMS,
            model_file="model.onnx",
        )


def mem0_config(workdir: Path) -> dict[str, Any]:
    """The `Memory.from_config` dict: everything local, inside WORKDIR."""
    return {
        "embedder": {"provider": "fastembed", "config": {"model": EMBEDDER_MODEL, "embedding_dims": EMBEDDING_DIMS}},
        "vector_store": {
            "provider": "qdrant",
            "config": {"collection_name": COLLECTION, "path": str(workdir / "qdrant"), "embedding_model_dims": EMBEDDING_DIMS},
        },
        "llm": {"provider": "openai", "config": {"api_key": "sk-memstore-test-never-used", "model": "gpt-4.1-nano"}},
        "history_db_path": str(workdir / "history.db"),
    }


@contextlib.contextmanager
def _network_refused() -> Iterator[None]:
    """Refuse (and record) every connection but a Unix socket's, and every name lookup; raise
    Mem0SourceError at the end if there was one."""
    attempts: list[str] = []
    original = (socket.socket.connect, socket.socket.connect_ex, socket.create_connection, socket.getaddrinfo)

    def refused(what: str) -> OSError:
        attempts.append(what)
        return OSError(errno.ENETUNREACH, f"tests/mem0_source.py: mem0 tried to reach the network ({what})")

    def connect(sock: socket.socket, address: Any) -> None:
        if sock.family == getattr(socket, "AF_UNIX", None):
            return original[0](sock, address)
        raise refused(f"connect to {address!r}")

    def connect_ex(sock: socket.socket, address: Any) -> int:
        if sock.family == getattr(socket, "AF_UNIX", None):
            return original[1](sock, address)
        refused(f"connect to {address!r}")
        return errno.ENETUNREACH

    def create_connection(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
        raise refused(f"connection to {address!r}")

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        raise socket.gaierror(socket.EAI_NONAME, refused(f"name lookup of {host!r}").strerror)

    socket.socket.connect, socket.socket.connect_ex = connect, connect_ex  # type: ignore[method-assign]
    socket.create_connection, socket.getaddrinfo = create_connection, getaddrinfo  # type: ignore[assignment]
    try:
        yield
    finally:
        socket.socket.connect, socket.socket.connect_ex, socket.create_connection, socket.getaddrinfo = original  # type: ignore[method-assign]
    if attempts:
        raise Mem0SourceError("mem0 tried to reach the network: " + "; ".join(attempts))


@contextlib.contextmanager
def _scoped_environment(values: Mapping[str, str]) -> Iterator[None]:
    previous = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextlib.contextmanager
def _without_spacy() -> Iterator[None]:
    """`import spacy` fails while inside (sys.modules[name] = None), as without mem0's nlp extra."""
    hidden = {name: sys.modules.pop(name) for name in list(sys.modules) if name == "spacy" or name.startswith("spacy.")}
    sys.modules["spacy"] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        del sys.modules["spacy"]
        sys.modules.update(hidden)


def _check_model_dir(model_dir: Path) -> Path:
    model_dir = Path(model_dir).resolve()
    missing = [name for name in ("model.onnx", "tokenizer.json", "config.json") if not (model_dir / name).is_file()]
    if missing:
        raise Mem0SourceError(f"{model_dir} is not the ONNX MiniLM model directory (lacks {', '.join(missing)}); see scripts/offline-model")
    return model_dir


def _close(memory: Any) -> None:
    memory.close()  # mem0's history database
    client = getattr(memory.vector_store, "client", None)
    if client is not None:
        client.close()  # Qdrant local mode holds a lock on its path


@contextlib.contextmanager
def open_mem0(model_dir: Path, workdir: Path | None = None) -> Iterator[Any]:
    """A real `mem0.Memory` (config: `mem0_config`) with its files in WORKDIR (default: a temp dir
    removed afterwards), offline as the module docstring says. For tests that want several dumps
    from one Memory; `write_mem0_dump` is this plus `add_memories` and `save_dump`."""
    model_dir = _check_model_dir(model_dir)
    with contextlib.ExitStack() as stack:
        if workdir is None:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="memstore-mem0-")))
        workdir = Path(workdir)
        cache = workdir / "fastembed-cache"
        cache.mkdir(parents=True, exist_ok=True)
        link = cache / EMBEDDER_MODEL.rsplit("/", 1)[-1]
        if not link.exists():
            link.symlink_to(model_dir, target_is_directory=True)
        stack.enter_context(_network_refused())
        Memory, fastembed = _import_mem0()  # before HF_HUB_OFFLINE is set: see the module docstring
        _register_model(fastembed)
        stack.enter_context(_scoped_environment({"FASTEMBED_CACHE_PATH": str(cache), "HF_HUB_OFFLINE": "1"}))
        stack.enter_context(_without_spacy())
        memory = Memory.from_config(mem0_config(workdir))
        stack.callback(_close, memory)
        yield memory


def add_memories(memory: Any, memories: Iterable[Mapping[str, Any]], *, user_id: str | None = DEFAULT_USER) -> list[str]:
    """`memory.add(..., infer=False)` once for each of MEMORIES, in order; their mem0 ids.

    Each is a dict with `text` (the message's content, stored verbatim) and optionally: `role`
    (default "user"; mem0 keeps it as the record's `role`), `actor` (the message's `name`; mem0 keeps
    it as `actor_id`), `user_id` (default: USER_ID; None for none), `agent_id`, `run_id`, `metadata`
    (a dict, returned as the record's `metadata`) and `expiration_date` ("YYYY-MM-DD": mem0 2.x's
    `add` takes it; get_all/search leave the memory out once that day is past, unless
    show_expired=True).
    """
    ids = []
    for number, given in enumerate(memories):
        unknown = set(given) - {"text", "role", "actor", "user_id", "agent_id", "run_id", "metadata", "expiration_date"}
        if unknown or "text" not in given:
            raise ValueError(f"memory {number}: needs `text`; unknown keys {sorted(unknown)}")
        message = {"role": given.get("role", "user"), "content": given["text"]}
        if given.get("actor"):
            message["name"] = given["actor"]
        arguments: dict[str, Any] = {"user_id": given.get("user_id", user_id), "infer": False}
        for key in ("agent_id", "run_id", "metadata", "expiration_date"):
            if given.get(key) is not None:
                arguments[key] = given[key]
        result = memory.add([message], **arguments)
        added = [item for item in result.get("results", []) if item.get("event") == "ADD"]
        if len(added) != 1:
            raise Mem0SourceError(f"memory {number}: mem0's add returned {result!r}, not one added memory")
        ids.append(added[0]["id"])
    return ids


def save_dump(
    memory: Any,
    path: Path,
    *,
    filters: Mapping[str, Any],
    shape: Literal["get_all", "search"] = "get_all",
    query: str | None = None,
    top_k: int = DEFAULT_TOP_K,
    show_expired: bool = False,
    bare: bool = False,
    indent: int | None = None,
) -> Any:
    """`json.dump` to PATH what `memory.get_all(filters=...)` (or `memory.search(query, filters=...)`)
    returns, as a user would save it (`{"results": [...]}`; with BARE the list under "results", as
    when saving `m.search(...)["results"]`); return the document read back from PATH."""
    if shape == "get_all":
        document = memory.get_all(filters=dict(filters), top_k=top_k, show_expired=show_expired)
    elif shape == "search":
        if not query:
            raise ValueError("the search shape needs a query")
        document = memory.search(query, filters=dict(filters), top_k=top_k, show_expired=show_expired)
    else:
        raise ValueError(f"unknown shape {shape!r}: get_all or search")
    if bare:
        document = document["results"]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as file:
        json.dump(document, file, indent=indent)
    return json.loads(path.read_text(encoding="utf-8"))


def write_mem0_dump(
    path: Path,
    model_dir: Path,
    memories: Sequence[Mapping[str, Any]],
    *,
    updates: Iterable[tuple[int, str] | tuple[int, str, Mapping[str, Any]]] = (),
    deletes: Iterable[int] = (),
    user_id: str | None = DEFAULT_USER,
    filters: Mapping[str, Any] | None = None,
    shape: Literal["get_all", "search"] = "get_all",
    query: str | None = None,
    top_k: int = DEFAULT_TOP_K,
    show_expired: bool = False,
    bare: bool = False,
    indent: int | None = None,
) -> Any:
    """Have a real mem0 Memory (see the module docstring) write PATH: add MEMORIES (`add_memories`:
    dicts with `text` and optionally role, actor, user_id, agent_id, run_id, metadata,
    expiration_date), then `update(id, text[, metadata=...])` for each (index into MEMORIES, text[,
    metadata]) of UPDATES (so that one's updated_at is later than its created_at), then `delete(id)`
    for each index in DELETES (gone from the dump), then save `get_all` (or, with shape="search",
    `search(QUERY)`) under FILTERS (default {"user_id": USER_ID}) to PATH with `json.dump`.
    Returns the document as written."""
    with open_mem0(model_dir) as memory:
        ids = add_memories(memory, memories, user_id=user_id)
        for update in updates:
            index, text, *rest = update
            memory.update(ids[index], text, **({"metadata": dict(rest[0])} if rest else {}))
        for index in deletes:
            memory.delete(ids[index])
        if filters is None:
            if user_id is None:
                raise ValueError("without a user_id, give the filters mem0's get_all/search need (user_id, agent_id or run_id)")
            filters = {"user_id": user_id}
        return save_dump(memory, path, filters=filters, shape=shape, query=query, top_k=top_k, show_expired=show_expired, bare=bare, indent=indent)
