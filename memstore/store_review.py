"""The facade's methods for a person reviewing the store (mixed into `MemoryStore`, memstore.store):
the overview of the namespaces, a keyset page of memories, contradiction flags listed, paged and
dismissed, one archived memory restored alone, the archive searched, the namespaces holding a
query's words, a namespace checked. Each opens its transaction through the store's `_read` / `_write`
and calls the one function of the module that owns the work.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .defaults import DEFAULT_NAMESPACE, RECALL_K
from .reads import namespace_known, rank_page
from .validate import require_limit

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from .overview import Overview
    from .restore import RestoreReport


class ReviewMethods:
    """What `MemoryStore` answers a person working through flags, runs and the archive."""

    # The store's own (memstore.store.MemoryStore): `work(conn, now)` in one read or write transaction.
    _read: Callable[[Callable[[Connection, int], Any]], Any]
    _write: Callable[[Callable[[Connection, int], Any]], Any]

    # -- the overview and a page of memories -------------------------------------------------------

    def overview(self, namespace: str | None = None, *, chosen: str | None = None, show_all: bool = False) -> Overview:
        """The namespaces (`namespace` alone, or every one: the largest 50 unless `show_all`) with
        their live, pinned and open-flag counts, the detail of `chosen` (None: the
        largest), and the newest runs for the health charts, in one read (memstore.overview)."""
        from .overview import overview

        return self._read(lambda conn, now: overview(conn, namespace, chosen, now, show_all=show_all))

    def suggested_namespaces(self) -> list[str]:
        """The largest namespaces, for a form to suggest (SQLite's live counts; none on PostgreSQL)."""
        from .overview import suggested_namespaces

        return self._read(lambda conn, now: suggested_namespaces(conn))

    def rank_page(
        self, namespace: str = DEFAULT_NAMESPACE, *, after: tuple[int, int, str] | None = None, limit: int = 50,
        pinned: bool | None = None, expiring_days: int | None = None,
    ) -> list[dict[str, Any]]:
        """Up to `limit` live memories of `namespace` in rank order after the keyset cursor `after`
        (importance, timestamp, id of the last row shown); `pinned`, `expiring_days` narrow it."""
        return self._read(lambda conn, now: rank_page(conn, namespace, now, after=after, limit=limit, pinned=pinned, expiring_days=expiring_days))

    # -- contradiction flags ---------------------------------------------------------------------

    def flags(self, namespace: str | None = DEFAULT_NAMESPACE, *, status: str = "open") -> list[dict[str, Any]]:
        """Contradiction flags of one namespace (None: all) with `status` (open, resolved, dismissed or all), newest
        first, with both texts and `newer_id`, `verdict`, `closed_at`, `closed_by_run` (memstore.semantic.flags)."""
        from .semantic.flags import list_flags

        return self._read(lambda conn, now: list_flags(conn, namespace, status))

    def dismiss_flag(self, flag_id: int) -> dict[str, Any]:
        """Dismiss an open flag (the pair is fine: never flagged again), a run `restore` undoes: {"flag_id", "run_id", "namespace"}."""
        from .semantic.flags import dismiss

        return self._write(lambda conn, now: dismiss(conn, flag_id, now))

    def flag_page(
        self, namespace: str | None = None, *, status: str = "open", reason: str | None = None,
        flagged_before: int | None = None, flagged_after: int | None = None, sort: str = "newest",
        limit: int | None = None, offset: int = 0,
    ) -> dict[str, Any]:
        """One page of contradiction flags for a person to work through (memstore.flag_review): of one
        namespace (None: all), `status` (open, resolved, dismissed, all), whose reason holds `reason`,
        raised before `flagged_before` / at or after `flagged_after` (Unix ms), sorted "newest",
        "strongest" or "oldest" (ties by id); `limit` per page (default FLAG_PAGE_SIZE, 50). {"flags"
        (each with both texts, states, timestamps and `differs`), "total", "offset", "limit", "sort", "next_offset", "filter", "elsewhere"}."""
        from .flag_review import FlagFilter, flag_page

        chosen = FlagFilter(namespace, status, reason, flagged_before, flagged_after)
        return self._read(lambda conn, now: flag_page(conn, chosen, sort=sort, limit=limit, offset=offset))

    def dismiss_flags(
        self, ids: Sequence[int] | None = None, *, namespace: str | None = None, reason: str | None = None,
        flagged_before: int | None = None, flagged_after: int | None = None, expect: int | None = None,
    ) -> dict[str, Any]:
        """Dismiss many open flags as ONE run of kind `dismiss` that one `restore` undoes: the flags
        `ids` (each open), or every open flag the filter picks (as `flag_page` filters), whose number
        must equal `expect`. {"run_id", "namespace", "dismissed": [ids], "flags": [with texts]}."""
        from .flag_review import FlagFilter, dismiss_flags

        chosen = None if ids is not None else FlagFilter(namespace, "open", reason, flagged_before, flagged_after)
        return self._write(lambda conn, now: dismiss_flags(conn, now, ids=ids, chosen=chosen, expect=expect))

    # -- one memory back, the archive searched, a namespace checked -------------------------------

    def restore_memory(self, id: str, *, namespace: str | None = None, dry_run: bool = False) -> RestoreReport:
        """Bring one archived memory back to the live set, whole, as a run of kind `restore` of its
        own (the rest of the run that archived it stays archived); `restore(report.run_id)` sends it
        back to the archive. The flags its leaving settled open again (`report.flags`)."""
        from .restore import restore_memory_in_transaction

        return self._write(lambda conn, now: restore_memory_in_transaction(conn, id, now, namespace=namespace, dry_run=dry_run))

    def search_archive(self, query: str, k: int = RECALL_K, namespace: str | None = DEFAULT_NAMESPACE) -> list[dict[str, Any]]:
        """Full-text search over the archive (memstore.archive_search): the k archived memories of
        `namespace` (None: all) that best match `query`, best first, ties by id, each its archived
        row (`archived_at`, `reason`, `superseded_by`, `run_id`) with `score`. Touches nothing."""
        from .archive_search import search_archive

        require_limit(k, "search_archive")
        return self._read(lambda conn, now: search_archive(conn, query, k, namespace))

    def namespaces_matching(self, query: str, besides: str, *, limit: int = 3) -> dict[str, int]:
        """The namespaces other than `besides` whose live memories hold a word of `query` (the words
        recall searches on), at most `limit` (None: every one), most matches first, ties by name: {namespace: matches}.
        One bounded statement over the newest memories holding a word (memstore.fulltext); what a
        search that found nothing in `besides` says of the others."""
        from .fulltext import namespaces_holding

        names = require_limit(limit, "namespaces_matching")
        return self._read(lambda conn, now: namespaces_holding(conn, query, besides, now=now, names=names))

    def namespace_known(self, namespace: str) -> dict[str, Any]:
        """Whether `namespace` holds anything (a live or archived memory, a flag); if not, the nearest
        names that do: {"namespace", "exists", "nearest" (best first, at most 3), "namespaces" (every
        one that holds something)}. What a face says to a mistyped namespace (memstore.reads)."""
        return self._read(lambda conn, now: namespace_known(conn, namespace, now))
