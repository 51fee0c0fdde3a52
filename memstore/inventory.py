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
    rows = list(iter_rows(conn, namespace, now))
    report = build_report(rows, ages_at, near_threshold=near_threshold)
    return {
        "namespace": namespace, "now": ages_at, "near_duplicate_threshold": near_threshold, **report,
        "open_flags": list_flags(conn, namespace), "texts": _texts(rows, report),
    }  # fmt: skip


# The stalest memories whose texts the report carries (what `memstore report` lists).
STALEST_WITH_TEXT = 10


def _texts(rows: list[dict[str, Any]], report: dict[str, Any]) -> dict[str, str]:
    """{id: text} of every memory the report names in a group, a pair or a contradiction, and of
    the STALEST_WITH_TEXT stalest: a person reads texts, not ids."""
    named = {memory_id for group in report["exact_duplicate_groups"] for memory_id in group}
    named |= {memory_id for pair in (*report["near_duplicate_pairs"], *report["contradiction_flags"]) for memory_id in pair["ids"]}
    named |= {entry["id"] for entry in [s for s in report["staleness"] if s["staleness"] > 0][:STALEST_WITH_TEXT]}
    return {row["id"]: row["text"] for row in rows if row["id"] in named}
