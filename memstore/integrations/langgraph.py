"""LangGraph's `BaseStore` over memstore: a graph keeps its long-term memory in a memstore.

    graph = builder.compile(store=MemstoreStore("agent.db"))

The mapping (docs/langgraph.md says the same for users):

- a namespace ("users", "u1", "memories") is the memstore namespace "users.u1.memories" (LangGraph
  forbids "." and empty labels, so the mapping is one to one);
- an item's key is the memory's `fact_key`, "the fact this memory claims" (memstore ids change on
  update); a memory written by other means (no fact_key) shows up with its id as key;
- the value is kept whole in `meta` as {"value": value}; the memory's text, which recall searches and
  the job deduplicates on, is taken from the value (`memory_text`);
- a put to an existing key is an update (the old version archived as "superseded"), a put of None
  and a delete a forget, as `MemoryStore.update` and `.forget` do them; `restore(run_id)` undoes
  either. A put reads which memory holds the key and writes in one transaction (`MemoryStore.put_items`),
  so puts from several processes to one key make one memory, the last put winning; a batch's puts
  are one transaction. A put of the value already stored writes nothing (but its lifetime starts again);
- a TTL (minutes, LangGraph's unit) is the memory's lifetime: `expires_at`, with the TTL kept in
  `meta` as "ttl_minutes" so a read can start it again (`refresh_on_read`). From its end the item is
  invisible to every read, swept or not (LangGraph's `omit_expired`, always on); `sweep_ttl()`
  archives what has expired as `expired`, a run `restore` undoes: nothing is hard-deleted.

No SQL and no transaction here: every read and write is a `MemoryStore` call (`get_item`,
`put_items`, `refresh_items` for items by key: memstore.keyed), the mapping rules memstore.item_values.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import os
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import closing, contextmanager
from datetime import UTC, datetime, timedelta
from itertools import islice
from typing import Any, Self

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        InvalidNamespaceError,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        TTLConfig,
    )
except ImportError as exc:
    raise ImportError(
        f"memstore's LangGraph store needs LangGraph ({exc}); install it with: pip install 'memstore-agents[langgraph]'"
    ) from exc

from ..errors import ValidationError
from ..item_values import canonical_json, memory_text, value_of
from ..store import MemoryStore
from ..validate import require_string
from .filters import matches_filter

# Recall is asked for at least this many memories per namespace, so a filtered search rarely needs a
# second round.
_FIRST_RECALL_K = 10
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# After a failed sweep the sweeper tries again after this many seconds, doubling while sweeps keep
# failing, never waiting longer than its interval.
SWEEP_RETRY_SECONDS = 1.0

logger = logging.getLogger(__name__)


# -- the mapping ------------------------------------------------------------------------------


def namespace_to_text(namespace: Iterable[str]) -> str:
    """("users", "u1", "memories") -> "users.u1.memories"."""
    return ".".join(namespace)


def text_to_namespace(namespace: str) -> tuple[str, ...]:
    """"users.u1.memories" -> ("users", "u1", "memories")."""
    return tuple(namespace.split("."))


def _datetime(unix_ms: int) -> datetime:
    return _EPOCH + timedelta(milliseconds=unix_ms)


def _item_fields(row: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "namespace": text_to_namespace(row["namespace"]),
        "key": row["fact_key"] if row["fact_key"] is not None else row["id"],
        "value": value_of(row),
        "created_at": _datetime(row["created_at"]),
        "updated_at": _datetime(row["updated_at"]),
    }


def _rank(row: Mapping[str, Any]) -> tuple[float, str]:
    """Recall's order across namespaces: higher score first, ties by id."""
    return -row["score"], row["id"]


def _is_under(namespace: str, prefix: str) -> bool:
    return not prefix or namespace == prefix or namespace.startswith(prefix + ".")


# -- checks, all made before a batch reads or writes anything ------------------------------------


def _check_labels(namespace: Iterable[Any]) -> None:
    """LangGraph's rules for a namespace label, with its error type."""
    namespace = tuple(namespace)
    for label in namespace:
        if not isinstance(label, str):
            problem = f"must be strings, got {type(label).__name__}"
        elif not label:
            problem = "cannot be empty strings"
        elif "." in label:
            problem = "cannot contain periods ('.')"
        elif "\x00" in label:
            problem = "cannot contain NUL bytes"
        else:
            continue
        raise InvalidNamespaceError(f"Invalid namespace label {label!r} in {namespace}: namespace labels {problem}.")


def _check_keys(value: Any, where: str, path: str) -> None:
    """JSON object keys are strings; json.dumps would quietly turn 1 into "1" and break the round trip."""
    if isinstance(value, Mapping):
        for name, item in value.items():
            if not isinstance(name, str):
                raise ValidationError(where, path, f"has the non-string key {name!r}; JSON keys are strings")
            _check_keys(item, where, f"{path}.{name}")
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _check_keys(item, where, f"{path}[{index}]")


def _check_put(namespace: tuple[str, ...], key: Any, value: Any) -> dict[str, Any] | None:
    """The value to store (a plain dict, or None for a delete), or an error naming the put."""
    if not namespace:
        raise InvalidNamespaceError("Namespace cannot be empty.")
    where = f"put {namespace} key {key!r}"
    require_string(key, where, "key")
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ValidationError(where, "value", f"must be a mapping (a JSON object) or None, got {type(value).__name__}")
    value = dict(value)
    _check_keys(value, where, "value")
    try:
        json.dumps(value, allow_nan=False, ensure_ascii=False).encode("utf-8")
    except (TypeError, ValueError) as exc:
        raise ValidationError(where, "value", f"is not strict JSON: {exc}") from None
    require_string(memory_text(value), where, "text")
    return value


def _check_page(limit: Any, offset: Any) -> None:
    for name, number in (("limit", limit), ("offset", offset)):
        if not isinstance(number, int) or isinstance(number, bool) or number < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {number!r}")


# -- namespaces ---------------------------------------------------------------------------------


def _matches_condition(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    labels = namespace[: len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path) :]
    return all(wanted in ("*", label) for wanted, label in zip(path, labels))


# -- the store --------------------------------------------------------------------------------


class MemstoreStore(BaseStore):
    """A LangGraph store whose items are memories in a memstore (a SQLite file or a PostgreSQL URL).

    >>> store = MemstoreStore("agent.db")                                 # doctest: +SKIP
    >>> graph = builder.compile(store=store)                              # doctest: +SKIP

    Pass a path or URL (the store is opened, migrated, and closed by `close()`), or an open
    `MemoryStore` (left open). `store.store` is the `MemoryStore` underneath: `history`, `restore`,
    `consolidate` and the rest are there. `ttl` is LangGraph's TTLConfig: `default_ttl` (minutes),
    `refresh_on_read` (default True), `sweep_interval_minutes` for `start_ttl_sweeper`; expired
    items are never returned (`omit_expired: False` is refused). The `index` argument of put is
    ignored, since recall indexes every memory's text.
    """

    supports_ttl = True

    def __init__(self, path_or_url: str | os.PathLike[str] | MemoryStore, *, ttl: TTLConfig | None = None) -> None:
        if ttl is not None and ttl.get("omit_expired") is False:
            raise ValueError("MemstoreStore never returns expired items; leave omit_expired unset or True")
        self.ttl_config = ttl
        if isinstance(path_or_url, MemoryStore):
            self.store, self._owns_store = path_or_url, False
        else:
            self.store, self._owns_store = MemoryStore(path_or_url), True
        self._sweeper: threading.Thread | None = None
        self._sweeper_done: concurrent.futures.Future[None] | None = None
        self._stop_sweeping = threading.Event()

    @classmethod
    @contextmanager
    def from_conn_string(cls, conn_string: str | os.PathLike[str], *, ttl: TTLConfig | None = None) -> Iterator[MemstoreStore]:
        """Open a store for the length of a `with` block, like LangGraph's SqliteStore.from_conn_string."""
        store = cls(conn_string, ttl=ttl)
        try:
            yield store
        finally:
            store.close()

    def setup(self) -> None:
        """Nothing to do: opening the store already migrated it. Here for code written for SqliteStore."""

    def close(self) -> None:
        self.stop_ttl_sweeper()
        if self._owns_store:
            self.store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- batch ---------------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Answer the reads, then apply the puts; results come back in the order the ops came.

        Every op is checked before anything is read or written. As in LangGraph's own stores, reads
        see the store as it was before the batch's puts, and of several puts to one key the last wins.
        The puts are one memstore write transaction (a replaced or deleted item is its own run).
        """
        ops = list(ops)
        puts = self._check_ops(ops)
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                results.append(None)
        if puts:
            self.store.put_items([(namespace, key, value, ttl) for (namespace, key), (value, ttl) in puts.items()])
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        # memstore's calls wait on the database: run them off the event loop.
        return await asyncio.to_thread(self.batch, list(ops))

    @staticmethod
    def _check_ops(ops: list[Op]) -> dict[tuple[str, str], tuple[dict[str, Any] | None, float | None]]:
        """Check every op; return the puts to apply, one per key (the last), with their TTLs."""
        puts: dict[tuple[str, str], tuple[dict[str, Any] | None, float | None]] = {}
        for op in ops:
            if isinstance(op, GetOp):
                _check_labels(op.namespace)
            elif isinstance(op, SearchOp):
                _check_labels(op.namespace_prefix)
                _check_page(op.limit, op.offset)
            elif isinstance(op, ListNamespacesOp):
                _check_page(op.limit, op.offset)
                for condition in op.match_conditions or ():
                    if condition.match_type not in ("prefix", "suffix"):
                        raise ValueError(f"Unsupported match type: {condition.match_type!r}")
                    _check_labels(condition.path)
            elif isinstance(op, PutOp):
                _check_labels(op.namespace)
                # A lifetime in minutes, as many as the store takes in seconds (validate.require_ttl).
                if op.ttl is not None and (isinstance(op.ttl, bool) or not isinstance(op.ttl, (int, float)) or not 0 < op.ttl * 60 < 2**53):
                    raise ValueError(f"put {tuple(op.namespace)} key {op.key!r}: ttl must be a positive number of minutes or None, got {op.ttl!r}")
                namespace = tuple(op.namespace)
                puts[(namespace_to_text(namespace), op.key)] = (_check_put(namespace, op.key, op.value), op.ttl)
            else:
                raise TypeError(f"Unknown operation type: {type(op)}")
        return puts

    # -- reads ---------------------------------------------------------------------------------

    def _get(self, op: GetOp) -> Item | None:
        row = self.store.get_item(namespace_to_text(op.namespace), str(op.key))
        if row is None:
            return None
        if op.refresh_ttl:
            self.store.refresh_items([row])
        return Item(**_item_fields(row))

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = namespace_to_text(op.namespace_prefix)
        if op.query:
            found = self._recall(op, prefix)
        else:
            rows = self.store.iter_rows(namespace_prefix=prefix) if prefix else self.store.iter_rows(None)
            with closing(rows):
                matching = ((row, SearchItem(**_item_fields(row))) for row in rows)
                found = list(islice(((row, item) for row, item in matching if matches_filter(item.value, op.filter)), op.offset, op.offset + op.limit))
        if op.refresh_ttl and found:
            self.store.refresh_items([row for row, _ in found])
        return [item for _, item in found]

    def _recall(self, op: SearchOp, prefix: str) -> list[tuple[dict[str, Any], SearchItem]]:
        """Recall in each namespace under the prefix, merged best first, then filter, offset, limit.

        With a filter, recall is asked again for more (k x 4) until what was not fetched could only
        rank after the last item wanted.
        """
        namespaces = [name for name in self.store.namespaces() if _is_under(name, prefix)]
        wanted = op.offset + op.limit
        k = max(wanted, _FIRST_RECALL_K)
        while True:
            answers = [self.store.recall(op.query, k, name, touch=False) for name in namespaces]
            ranked = sorted((row for rows in answers for row in rows), key=_rank)
            scored = [(row, SearchItem(**_item_fields(row), score=float(row["score"]))) for row in ranked]
            matching = [(row, item) for row, item in scored if matches_filter(item.value, op.filter)]
            unfinished = [rows[-1] for rows in answers if len(rows) == k]  # namespaces that may hold more
            if wanted == 0 or not unfinished:
                break
            if len(matching) >= wanted and all(_rank(matching[wanted - 1][0]) <= _rank(last) for last in unfinished):
                break
            k *= 4
        return matching[op.offset : wanted]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        namespaces = [text_to_namespace(name) for name in self.store.namespaces()]
        chosen = {ns for ns in namespaces if all(_matches_condition(c, ns) for c in op.match_conditions or ())}
        if op.max_depth is not None:
            chosen = {ns[: op.max_depth] for ns in chosen}
        return sorted(chosen)[op.offset : op.offset + op.limit]

    # -- time to live --------------------------------------------------------------------------

    def sweep_ttl(self) -> int:
        """Archive every expired item (reason `expired`, one run `restore` undoes; nothing is
        deleted) and return how many. A sweep that finds none writes nothing."""
        return self.store.expire().expired

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> concurrent.futures.Future[None]:
        """Sweep in a background thread every `sweep_interval_minutes` (default: the TTLConfig's,
        else 5), the first sweep at once. A sweep that fails (a dropped connection, a busy store) is
        logged and tried again after SWEEP_RETRY_SECONDS, doubling, at most the interval: the sweeper
        stops only when asked. Returns a Future that resolves when the sweeper stops; with no
        TTLConfig, nothing is started and the Future is resolved already."""
        if not self.ttl_config:
            done: concurrent.futures.Future[None] = concurrent.futures.Future()
            done.set_result(None)
            return done
        if self._sweeper is not None and self._sweeper.is_alive():
            return self._sweeper_done
        interval = float(sweep_interval_minutes or self.ttl_config.get("sweep_interval_minutes") or 5) * 60
        self._stop_sweeping.clear()
        self._sweeper_done = concurrent.futures.Future()

        def sweep_until_stopped() -> None:
            failures = 0
            try:
                while not self._stop_sweeping.is_set():
                    try:
                        self.sweep_ttl()
                        failures, wait = 0, interval
                    except Exception:
                        # A long-lived service outlives a dropped connection, a busy timeout or a
                        # full disk: log, then try again sooner than the interval, backing off.
                        failures += 1
                        wait = min(interval, SWEEP_RETRY_SECONDS * 2 ** min(failures - 1, 16))
                        logger.exception("memstore TTL sweep failed (%d in a row); trying again in %.1f s", failures, wait)
                    self._stop_sweeping.wait(wait)
            except BaseException as exc:
                self._sweeper_done.set_exception(exc)
            else:
                self._sweeper_done.set_result(None)

        self._sweeper = threading.Thread(target=sweep_until_stopped, name="memstore-ttl-sweeper", daemon=True)
        self._sweeper.start()
        return self._sweeper_done

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper; True once it has stopped (or none was running)."""
        if self._sweeper is None:
            return True
        self._stop_sweeping.set()
        self._sweeper.join(timeout)
        stopped = not self._sweeper.is_alive()
        if stopped:
            self._sweeper = None
        return stopped


__all__ = ["MemstoreStore", "canonical_json", "matches_filter", "memory_text", "namespace_to_text", "text_to_namespace"]
