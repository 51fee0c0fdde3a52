"""`memstore report`: the hygiene inventory of the live set (memstore.hygiene defines every figure)
and the contradiction flags still open, read in one snapshot."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection

from .hygiene import build_report
from .reads import iter_rows
from .semantic.flags import list_flags


def inventory(conn: Connection, namespace: str | None, now: int, near_threshold: float, *, ages_at: int | None = None) -> dict[str, Any]:
    """The report of the memories of `namespace` (None: all) live at `now`; days idle and staleness
    are counted to `ages_at` (`report --now`; default `now`), which the report gives as its `now`."""
    ages_at = now if ages_at is None else ages_at
    report = build_report(list(iter_rows(conn, namespace, now)), ages_at, near_threshold=near_threshold)
    return {
        "namespace": namespace, "now": ages_at, "near_duplicate_threshold": near_threshold, **report,
        "open_flags": list_flags(conn, namespace),
    }  # fmt: skip
