"""`ScopedStore`: a `MemoryStore` seen through one namespace, or through every one (the facade a
person's page calls; `MemoryStore.scoped(namespace)` makes it).

The scope rule is written once, in `within`: a view kept to one namespace answers for that
namespace whatever namespace it is asked about, and an id, a run or a flag of another namespace
reads exactly as one that does not exist; an open view (`namespace=None`) answers for the
namespace asked (None: every one). What reads or changes every namespace at once (the store's
integrity check, its embedding counts, maintain's store-wide phases, undoing a run over every
namespace) a kept view refuses (`OutOfScopeError`), or leaves out. Each method calls the store's own
public methods (one, but for a run read before it is shown or undone); the view opens no
transaction and holds no SQL.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .defaults import DEFAULT_NAMESPACE, RECALL_K
from .errors import NotFoundError, OutOfScopeError

if TYPE_CHECKING:
    from .integrity import IntegrityReport
    from .lifecycle import LifecycleReport
    from .maintain import MaintainReport
    from .overview import Overview
    from .restore import RestoreReport

# maintain's phases that read, and name, every namespace's rows: a kept view runs none of them.
STORE_WIDE_PHASES = ("check", "verify")
# A run over every namespace lists what came back of every namespace: not a kept view's to show.
_EVERY_NAMESPACES_PARTS = ("archived", "flags_raised", "flags_settled")


class ScopedStore:
    """`store` (a `MemoryStore`, which makes the view: not imported here, below it) through
    `namespace` (None: every namespace)."""

    def __init__(self, store: Any, namespace: str | None) -> None:
        self._store = store
        self.namespace = namespace

    def within(self, asked: str | None) -> str | None:
        """The namespace a call answers for: the view's own, else the one asked (None: every one)."""
        return self.namespace if self.namespace is not None else asked

    def _whole_store(self, what: str) -> None:
        if self.namespace is not None:
            raise OutOfScopeError(f"a page kept to one namespace does not {what}")

    @property
    def url(self) -> str:
        return self._store.url

    # -- reads ------------------------------------------------------------------------------------

    def overview(self, chosen: str | None, *, show_all: bool = False) -> Overview:
        """The namespaces in view with their counts and open flags, the detail of
        `chosen` (None: the largest in view) and the chart's runs, in one read (memstore.overview)."""
        return self._store.overview(self.namespace, chosen=self.within(chosen), show_all=show_all)

    def suggested_namespaces(self) -> list[str]:
        """The namespaces a search form offers: the view's own, or the largest."""
        return [self.namespace] if self.namespace is not None else self._store.suggested_namespaces()

    def rank_page(
        self, namespace: str, *, after: tuple[int, int, str] | None, limit: int, pinned: bool | None = None, expiring_days: int | None = None
    ) -> list[dict[str, Any]]:
        """A keyset page of live memories in rank order (memstore.reads.rank_page)."""
        namespace = self.within(namespace) or DEFAULT_NAMESPACE
        return self._store.rank_page(namespace, after=after, limit=limit, pinned=pinned, expiring_days=expiring_days)

    def list(self, namespace: str | None, *, as_of: int | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        return self._store.list(self.within(namespace), as_of=as_of, limit=limit)

    def get(self, id: str) -> dict[str, Any]:
        return self._store.get(id, namespace=self.namespace)

    def history(self, id: str) -> list[dict[str, Any]]:
        return self._store.history(id, namespace=self.namespace)

    def count(self, namespace: str | None) -> int:
        return self._store.count(self.within(namespace))

    def namespaces(self) -> list[str]:
        return [self.namespace] if self.namespace is not None else self._store.namespaces()

    def recall(self, query: str, k: int, namespace: str | None, *, as_of: int | None = None) -> list[dict[str, Any]]:
        """Recall as a person searches: counting nothing."""
        return self._store.recall(query, k, self.within(namespace) or DEFAULT_NAMESPACE, touch=False, as_of=as_of)

    def search_archive(self, query: str, k: int = RECALL_K, namespace: str | None = None) -> list[dict[str, Any]]:
        return self._store.search_archive(query, k, self.within(namespace))

    def namespace_known(self, namespace: str | None) -> dict[str, Any]:
        """`MemoryStore.namespace_known` in view: whether it holds anything; a kept view names no other."""
        known = self._store.namespace_known(self.within(namespace) or DEFAULT_NAMESPACE)
        return known if self.namespace is None else dict(known, nearest=[], namespaces=[])

    def namespaces_matching(self, query: str, besides: str, *, limit: int) -> dict[str, int]:
        """The other namespaces holding a word of `query` (memstore.fulltext): a kept view names none."""
        return {} if self.namespace is not None else self._store.namespaces_matching(query, besides, limit=limit)

    def report(self, namespace: str | None) -> dict[str, Any]:
        return self._store.report(self.within(namespace) or DEFAULT_NAMESPACE)

    def embedding_status(self) -> dict[str, Any] | None:
        """The store's model and how many of every namespace's memories wait for a vector."""
        self._whole_store("show the store's embedding counts")
        return self._store.embedding_status()

    # -- runs ---------------------------------------------------------------------------------------

    def runs(self, limit: int | None, *, offset: int = 0) -> list[dict[str, Any]]:
        """Runs in view, newest first: a kept view's are its namespace's own, picked in SQL."""
        return self._store.runs(limit, offset=offset, namespace=self.namespace)

    def run(self, run_id: int, *, limit: int | None = None, offset: int = 0) -> dict[str, Any]:
        """`MemoryStore.run` in view: a kept view reads a run of another namespace as no run, and of
        a run over every namespace only its own namespace's part (what came back: none of it)."""
        try:
            run = self._store.run(run_id, limit=limit, offset=offset)
        except NotFoundError:
            run = None
        if run is None or (self.namespace is not None and run["namespace"] not in (None, self.namespace)):
            raise NotFoundError(f"no run {run_id}")
        if self.namespace is not None:
            for part in _EVERY_NAMESPACES_PARTS:
                run[part] = [entry for entry in run[part] if entry["namespace"] == self.namespace]
            run["restored"], run["restored_memories"], run["restored_total"] = [], [], 0
        return run

    def restore(self, run_id: int) -> RestoreReport:
        """Undo a run in view; a kept view may not undo a run over every namespace (it would change the others)."""
        run = self.run(run_id, limit=0)
        if self.namespace is not None and run["namespace"] != self.namespace:
            raise NotFoundError(f"no run {run_id}")
        return self._store.restore(run_id)

    # -- corrections --------------------------------------------------------------------------------

    def update(self, id: str, **changes: Any) -> dict[str, Any]:
        return self._store.update(id, namespace=self.namespace, **changes)

    def forget(self, ids: Sequence[str], *, reason: str | None = None) -> LifecycleReport:
        return self._store.forget(ids, reason=reason, namespace=self.namespace)

    def supersede(self, old: str, *, by: str) -> LifecycleReport:
        return self._store.supersede(old, by=by, namespace=self.namespace)

    def restore_memory(self, id: str) -> RestoreReport:
        return self._store.restore_memory(id, namespace=self.namespace)

    # -- flags --------------------------------------------------------------------------------------

    def open_flag(self, flag_id: int) -> dict[str, Any]:
        """The open flag `flag_id`, if in view."""
        for flag in self._store.flags(self.namespace):
            if flag["id"] == flag_id:
                return flag
        raise NotFoundError(f"no open flag {flag_id}")

    def dismiss_flag(self, flag_id: int) -> dict[str, Any]:
        return self._store.dismiss_flag(self.open_flag(flag_id)["id"])

    def flag_page(self, namespace: str | None = None, **chosen: Any) -> dict[str, Any]:
        """`MemoryStore.flag_page` in view: a kept view names no other namespace (`elsewhere` empty)."""
        page = self._store.flag_page(self.within(namespace), **chosen)
        if self.namespace is not None:
            page["elsewhere"] = {}
        return page

    def dismiss_flags(self, namespace: str | None = None, **chosen: Any) -> dict[str, Any]:
        return self._store.dismiss_flags(namespace=self.within(namespace), **chosen)

    # -- maintain and the check ---------------------------------------------------------------------

    def maintain_phases(self) -> list[str] | None:
        """maintain's phases in view: all (None), or for a kept view none of the store-wide ones."""
        from .maintain import PHASES

        return None if self.namespace is None else [name for name in PHASES if name not in STORE_WIDE_PHASES]

    def maintain(self, namespace: str | None, *, stale: bool = False) -> MaintainReport:
        return self._store.maintain(self.maintain_phases(), namespace=self.within(namespace) or DEFAULT_NAMESPACE, stale=stale)

    def maintain_preview(self, namespace: str | None, *, stale: bool = False) -> MaintainReport:
        return self._store.maintain_preview(self.maintain_phases(), namespace=self.within(namespace) or DEFAULT_NAMESPACE, stale=stale)

    def check(self) -> IntegrityReport:
        """The store's integrity check: it reads, and names, every namespace's rows."""
        self._whole_store("run the store's check")
        return self._store.check()


__all__ = ["STORE_WIDE_PHASES", "ScopedStore"]
