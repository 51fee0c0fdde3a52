"""Recall checks: queries whose memory must still come back, run before a cleanup is kept.

A check passes when its `expect_id`, or the live memory that now stands for it (followed along
`superseded_by`), is among the top k of recall: the recall agents get, hybrid when the store has
vectors (`memstore.recall.Recall.for_checks`), unless another mode is asked for. Inside a job the
checks see the job's would-be state, so a cleanup that would lose what the checks name is rolled
back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import Connection, Engine

from .db import roll_back, write_transaction
from .defaults import DEFAULT_NAMESPACE
from .errors import RecallCheckError
from .fulltext import recall_rows
from .runs import superseded_chain


@dataclass
class RecallCheckResult:
    """One recall check: did `expect_id` (or what superseded it) come back in the top k?"""

    query: str
    expect_id: str
    namespace: str
    resolved_id: str | None  # expect_id, or the live memory that superseded it; None if gone
    top_ids: list[str]
    passed: bool
    mode: str = "lexical"  # the recall mode that ranked


class Ranking(Protocol):
    """What ranks for the checks: a recall mode and its top ids."""

    mode: str

    def top_ids(self, conn: Connection, query: str, k: int, namespace: str, now: int) -> list[str]: ...


class FullTextRanking:
    """Full-text recall alone: for a store without vectors, or when asked for."""

    mode = "lexical"

    def top_ids(self, conn: Connection, query: str, k: int, namespace: str, now: int) -> list[str]:
        return [row["id"] for row in recall_rows(conn, query, k, namespace, now=now)]


def resolve_live_id(conn: Connection, memory_id: str) -> str | None:
    """The live memory that now stands for `memory_id`: itself, or its survivor via superseded_by."""
    chain = superseded_chain(conn, memory_id)
    return chain[-1]["id"] if chain and chain[-1].get("archived_at") is None else None


def run_recall_checks(
    conn: Connection, checks: Sequence[Mapping[str, str]], k: int, now: int, ranking: Ranking | None = None
) -> list[RecallCheckResult]:
    """Evaluate recall checks against the state `conn` sees at `now` (inside a job: the would-be
    state), ranked by `ranking` (default: full text)."""
    ranking = ranking or FullTextRanking()
    results = []
    for check in checks:
        namespace = check.get("namespace", DEFAULT_NAMESPACE)
        top_ids = ranking.top_ids(conn, check["query"], k, namespace, now)
        resolved = resolve_live_id(conn, check["expect_id"])
        results.append(
            RecallCheckResult(check["query"], check["expect_id"], namespace, resolved, top_ids, resolved in top_ids, ranking.mode)
        )
    return results


def job_under_recall_checks(
    engine: Engine, apply: Callable[[Connection, int], Any], clock: Callable[[], int], dry_run: bool, checks, k: int,
    ranking: Ranking | None,
) -> Any:
    """Apply a job (`apply(conn, now)` returns its report) in one write transaction, run the recall
    checks against its result, and keep it only if it is real and every check passes (a failed
    check raises RecallCheckError, with the report). The job and its checks see one moment: the
    caller's `clock()`, read once the transaction holds the store."""
    with write_transaction(engine, defer_checkpoint=True) as conn:
        now = clock()
        report = apply(conn, now)
        if checks:
            report.checks = run_recall_checks(conn, checks, k, now, ranking)
        failed = any(not check.passed for check in report.checks)
        if dry_run or failed:
            roll_back(conn)
    if failed and not dry_run:
        raise RecallCheckError(report)
    return report


# The name this class had before "check" named one thing each (memstore.CheckResult still works).
CheckResult = RecallCheckResult
