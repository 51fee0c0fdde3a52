"""`memstore report`: the hygiene inventory of the live set (memstore.hygiene defines every figure)
and the contradiction flags still open, read in one snapshot."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection

from .hygiene import build_report
from .reads import iter_rows
from .semantic.flags import list_flags


def inventory(conn: Connection, namespace: str | None, as_of: int, near_threshold: float) -> dict[str, Any]:
    report = build_report(list(iter_rows(conn, namespace)), as_of, near_threshold=near_threshold)
    return {
        "namespace": namespace, "now": as_of, "near_duplicate_threshold": near_threshold, **report,
        "open_flags": list_flags(conn, namespace),
    }  # fmt: skip
