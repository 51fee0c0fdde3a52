"""The facade's methods for LangGraph's items (mixed into `MemoryStore`, memstore.store; the
LangGraph store, memstore.integrations.langgraph, calls them): an item by its key, puts in one
transaction, lifetimes started again or moved. Each opens its transaction through the store's
`_read` / `_write` (or `write_transaction`) and calls the one function of memstore.keyed or
memstore.lifecycle that owns the work.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .db import write_transaction
from .records import now_ms

if TYPE_CHECKING:
    from sqlalchemy import Connection, Engine


class ItemMethods:
    """What `MemoryStore` answers LangGraph's store."""

    # The store's own (memstore.store.MemoryStore): `work(conn, now)` in one read or write transaction.
    engine: Engine
    _read: Callable[[Callable[[Connection, int], Any]], Any]
    _write: Callable[[Callable[[Connection, int], Any]], Any]

    def extend_lifetimes(self, ends: Mapping[str, int | None], namespace: str | None = None) -> int:
        """Move lifetimes' ends in place (id -> expires_at, None: never) for memories visible now and to
        ends after now, so no past moment's answer changes (LangGraph's refresh on read); how many."""
        from .lifecycle import extend_lifetimes

        return self._write(lambda conn, now: extend_lifetimes(conn, ends, namespace, now))

    def get_item(self, namespace: str, key: str) -> dict[str, Any] | None:
        """The live memory answering to `key` in `namespace` (its fact_key, else its id), or None."""
        from .keyed import find_item

        return self._read(lambda conn, now: find_item(conn, namespace, key, now))

    def put_items(self, puts: Sequence[tuple[str, str, dict[str, Any] | None, float | None]]) -> None:
        """LangGraph's puts (namespace, key, value or None to delete, TTL minutes or None), in order, in one
        transaction at one moment; each replaced or deleted item is its own run that `restore` undoes."""
        from .keyed import lock_keys, put_in_transaction

        with write_transaction(self.engine) as conn:
            lock_keys(conn, puts)
            put_in_transaction(conn, puts, now_ms())  # now: once the transaction holds the store and the keys

    def refresh_items(self, rows: Iterable[Mapping[str, Any]]) -> int:
        """Start again the lifetimes of items read with a TTL (LangGraph's refresh on read); how many."""
        from .keyed import refresh_in_transaction

        return self._write(lambda conn, now: refresh_in_transaction(conn, rows, now))


__all__ = ["ItemMethods"]
