"""Contradiction flags as a person works through them: a page of flags (filtered by namespace,
status, reason and age; sorted newest, strongest or oldest; a total order ending in id), each with
both texts, their dates and the words that differ; and a bulk dismissal of many flags as one run,
which one `restore` undoes. One flag dismissed alone is memstore.semantic.flags.dismiss.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, func, or_, select, update

from .db import chunked, rows_in
from .errors import MemstoreError, NotFoundError, ValidationError
from .lookups import texts_of
from .runs import insert_run, lock_jobs
from .schema import FLAG_STATUSES
from .schema import contradiction_flags as flags
from .validate import require_int, require_moment

# How a page of flags is ordered, each ending in id: the newest raised first, the surest first (the
# contradict phase's confidence, then the cosine; a flag raised before revision 0014 has none and
# comes last), or the oldest first.
FLAG_SORTS = {
    "newest": (flags.c.flagged_at.desc(), flags.c.id.desc()),
    "strongest": (flags.c.confidence.desc().nulls_last(), flags.c.similarity.desc(), flags.c.flagged_at.desc(), flags.c.id.desc()),
    "oldest": (flags.c.flagged_at, flags.c.id),
}
# Flags on a page unless asked otherwise, and at most.
FLAG_PAGE_SIZE = 50
FLAG_PAGE_MAX = 1_000


@dataclass(frozen=True)
class FlagFilter:
    """Which flags: of one namespace (None: all), with `status` ("all": any), whose reason ("Dana's
    manager: Priya Raman → Tom Becker") or signal ("a number differs: 100 vs 500") holds `reason`
    (ignoring ASCII case), raised before `flagged_before` and at or after `flagged_after`
    (Unix ms)."""

    namespace: str | None = None
    status: str = "open"
    reason: str | None = None
    flagged_before: int | None = None
    flagged_after: int | None = None

    def __post_init__(self) -> None:
        if self.status not in (*FLAG_STATUSES, "all"):
            raise ValidationError("flags", "status", f"must be one of {', '.join((*FLAG_STATUSES, 'all'))}, not {self.status!r}")
        for name in ("flagged_before", "flagged_after"):
            if getattr(self, name) is not None:
                require_moment(getattr(self, name), "flags", name)

    def conditions(self, *, with_namespace: bool = True) -> list[Any]:
        found = []
        if self.status != "all":
            found.append(flags.c.status == self.status)
        if self.reason:
            wanted = self.reason.lower()
            found.append(or_(func.lower(flags.c.reason).contains(wanted, autoescape=True), func.lower(flags.c.signal).contains(wanted, autoescape=True)))
        if self.flagged_before is not None:
            found.append(flags.c.flagged_at < self.flagged_before)
        if self.flagged_after is not None:
            found.append(flags.c.flagged_at >= self.flagged_after)
        if with_namespace and self.namespace is not None:
            found.append(flags.c.namespace == self.namespace)
        return found

    def to_dict(self) -> dict[str, Any]:
        return {name: value for name, value in self.__dict__.items() if value is not None}


def differing_words(older: str | None, newer: str | None) -> dict[str, list[str]]:
    """The words of each text that the other does not have where it has them (a word diff):
    {"older": [...], "newer": [...]}.

    >>> differing_words("The API limit is 100 rpm.", "The API limit is 500 rpm.")
    {'older': ['100'], 'newer': ['500']}
    """
    a, b = (older or "").split(), (newer or "").split()
    only: dict[str, list[str]] = {"older": [], "newer": []}
    for tag, a0, a1, b0, b1 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag != "equal":
            only["older"] += a[a0:a1]
            only["newer"] += b[b0:b1]
    return only


def described(conn: Connection, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Flag rows with what a person reads beside them: each side's `*_text`, `*_state` ("live" or
    "archived"), `*_namespace` and `*_timestamp` (when it was written), and `differs`."""
    sides = texts_of(conn, [row[f"{side}_id"] for row in rows for side in ("older", "newer")])
    out = []
    for row in rows:
        flag = dict(row)
        for side in ("older", "newer"):
            found = sides.get(row[f"{side}_id"], {})
            for name in ("text", "state", "timestamp"):
                flag[f"{side}_{name}"] = found.get(name)
        flag["differs"] = differing_words(flag["older_text"], flag["newer_text"])
        out.append(flag)
    return out


def flag_page(conn: Connection, chosen: FlagFilter, *, sort: str = "newest", limit: int | None = None, offset: int = 0) -> dict[str, Any]:
    """One page of the flags `chosen` picks: {"flags", "total", "offset", "limit", "sort",
    "next_offset" (None on the last page), "filter", "elsewhere" ({namespace: how many flags the
    same filter picks there}, when one namespace was asked for)}."""
    if sort not in FLAG_SORTS:
        raise ValidationError("flags", "sort", f"must be one of {', '.join(FLAG_SORTS)}, not {sort!r}")
    limit = FLAG_PAGE_SIZE if limit is None else require_int(limit, "flags", "limit", 1, FLAG_PAGE_MAX)
    require_int(offset, "flags", "offset", 0, 2**63 - 1)
    where = chosen.conditions()
    total = conn.execute(select(func.count()).select_from(flags).where(*where)).scalar_one()
    rows = [dict(row) for row in conn.execute(select(flags).where(*where).order_by(*FLAG_SORTS[sort]).limit(limit).offset(offset)).mappings()]
    elsewhere: dict[str, int] = {}
    if chosen.namespace is not None:
        counted = select(flags.c.namespace, func.count()).where(*chosen.conditions(with_namespace=False), flags.c.namespace != chosen.namespace)
        elsewhere = dict(conn.execute(counted.group_by(flags.c.namespace).order_by(flags.c.namespace)).all())
    return {
        "flags": described(conn, rows), "total": total, "offset": offset, "limit": limit, "sort": sort,
        "next_offset": offset + limit if offset + limit < total else None, "filter": chosen.to_dict(), "elsewhere": elsewhere,
    }  # fmt: skip


def dismiss_flags(
    conn: Connection, now: int, *, ids: Sequence[int] | None = None, chosen: FlagFilter | None = None, expect: int | None = None
) -> dict[str, Any]:
    """Dismiss many open flags as one run of kind `dismiss` (one `restore` opens them all again): the
    flags `ids`, every one open, or every open flag `chosen` picks, whose number must be `expect`
    (what the person saw; a flag raised or settled since makes it differ, and nothing is written).
    Returns {"run_id", "namespace" (None: several), "dismissed": [flag ids], "flags": [described]}."""
    if ids is not None:
        wanted = sorted({require_int(flag_id, "dismiss", "ids", 1, 2**63 - 1) for flag_id in ids})
        if not wanted:
            raise ValidationError("dismiss", "ids", "name at least one flag")
        found = {row["id"]: row for row in (dict(r._mapping) for r in rows_in(conn, select(flags), flags.c.id, wanted))}
        for flag_id in wanted:
            if flag_id not in found:
                raise NotFoundError(f"no flag {flag_id}; `memstore flags` lists the open ones")
            if found[flag_id]["status"] != "open":
                raise MemstoreError(f"flag {flag_id} is already {found[flag_id]['status']}")
        rows = [found[flag_id] for flag_id in wanted]
    else:
        if expect is None:
            raise ValidationError("dismiss", "expect", "say how many flags the filter picks (what you saw), so flags raised since stay open")
        chosen = FlagFilter(**{**(chosen or FlagFilter()).__dict__, "status": "open"})
        rows = [dict(row) for row in conn.execute(select(flags).where(*chosen.conditions()).order_by(flags.c.id)).mappings()]
    if expect is not None and len(rows) != expect:
        raise MemstoreError(f"{len(rows)} open flags match now, not {expect}; list them again (nothing was dismissed)")
    if not rows:
        raise MemstoreError("no open flag matches; nothing was dismissed")
    namespaces = sorted({row["namespace"] for row in rows})
    namespace = namespaces[0] if len(namespaces) == 1 else None
    lock_jobs(conn, namespace)
    dismissed = [row["id"] for row in rows]
    params: dict[str, Any] = {"dismissed": len(dismissed), "flags": dismissed}  # which, still known once restored
    if chosen is not None:
        params["filter"] = chosen.to_dict()
    run_id = insert_run(conn, "dismiss", namespace, now, 0, params=params)
    for chunk in chunked(dismissed):
        conn.execute(
            update(flags).where(flags.c.id.in_(chunk), flags.c.status == "open")
            .values(status="dismissed", verdict="dismissed", closed_at=now, closed_by_run=run_id)
        )  # fmt: skip
    settled = [dict(row, status="dismissed", verdict="dismissed", closed_at=now, closed_by_run=run_id) for row in rows]
    return {"run_id": run_id, "namespace": namespace, "dismissed": dismissed, "flags": described(conn, settled)}
