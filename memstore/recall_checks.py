"""Recall checks: queries whose memory must still come back, run before a cleanup is kept.

A check passes when its `expect_id`, or the live memory that now stands for it (followed along
`superseded_by`), is among the top k of recall. Inside a job the checks see the job's would-be
state, so a cleanup that would lose what the checks name is rolled back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import Connection

from .defaults import DEFAULT_NAMESPACE
from .fulltext import recall_rows
from .runs import superseded_chain


@dataclass
class CheckResult:
    """One recall check: did `expect_id` (or what superseded it) come back in the top k?"""

    query: str
    expect_id: str
    namespace: str
    resolved_id: str | None  # expect_id, or the live memory that superseded it; None if gone
    top_ids: list[str]
    passed: bool


def resolve_live_id(conn: Connection, memory_id: str) -> str | None:
    """The live memory that now stands for `memory_id`: itself, or its survivor via superseded_by."""
    chain = superseded_chain(conn, memory_id)
    return chain[-1]["id"] if chain and chain[-1].get("archived_at") is None else None


def run_checks(conn: Connection, checks: Sequence[Mapping[str, str]], k: int) -> list[CheckResult]:
    """Evaluate recall checks against the state `conn` sees (inside a job: the would-be state)."""
    results = []
    for check in checks:
        namespace = check.get("namespace", DEFAULT_NAMESPACE)
        top_ids = [row["id"] for row in recall_rows(conn, check["query"], k, namespace)]
        resolved = resolve_live_id(conn, check["expect_id"])
        results.append(
            CheckResult(check["query"], check["expect_id"], namespace, resolved, top_ids, resolved in top_ids)
        )
    return results
