"""`memstore maintain`: the maintenance phases in dependency order, each one transaction and one run.

    check -> expire -> dedup -> semantic -> contradict -> stale -> evict -> verify

A phase that fails is reported and the others still run, except the phases that need its result,
which are skipped (a failed `check` skips every phase that writes: a damaged store is not one to
change). A phase that changes nothing (archives nothing, flags nothing) records no run, so `memstore
runs` lists only what changed the store; how far it compared is kept for the next run of its kind
(memstore.runs.drop_empty_run). The stale phase archives only when asked (`stale=True`, `maintain
--stale`); otherwise it is skipped: maintenance never takes idle memories away unasked. `expire` archives the memories whose lifetime has ended before any rule ranks the rest
(the phases that rank need it; every job also does so first, so a phase run alone never ranks an
expired memory). `verify` always runs. A dry run executes every phase in one write transaction
and rolls the whole back (`db.roll_back`, how every dry run writes nothing): it shows exactly what
the real run, phase after phase, would do. Inside it each phase runs in a savepoint, only so that
a failed phase is undone alone, as its own transaction is in a real run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError

from .consolidate import consolidate_in_transaction
from .db import checkpoint, database_error, read_transaction, roll_back, shown_location, write_transaction
from .errors import MemstoreError, ValidationError
from .expire import expire_in_transaction
from .integrity import check_integrity
from .lookups import texts_of
from .prune import prune_in_transaction
from .recall import CheckRanking, Recall
from .recall_checks import run_recall_checks
from .runs import drop_empty_run, group_finish, group_phase, insert_run
from .semantic.phases import contradict_in_transaction, semantic_in_transaction
from .semantic.statements import RESOLVE_AT
from .validate import require_capacity, require_days, require_fraction
from .vectors.embeddings import Embeddings
from .vectors.storage import model_of

PHASES = ("check", "expire", "dedup", "semantic", "contradict", "stale", "evict", "verify")
# What each phase needs to have succeeded first (if it was asked for).
NEEDS = {
    "check": (),
    "expire": ("check",),
    # The rules rank only memories still in their lifetime.
    "dedup": ("check", "expire"),
    "semantic": ("check", "dedup"),
    "contradict": ("check", "semantic"),
    "stale": ("check", "expire"),
    "evict": ("check", "dedup"),
    "verify": (),
}


@dataclass
class PhaseResult:
    name: str
    status: str = "ok"  # ok | failed | skipped
    run_id: int | None = None
    error: str | None = None
    archived: list[dict[str, Any]] = field(default_factory=list)
    flags: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "run_id": self.run_id, "error": self.error,
                "archived": self.archived, "flags": self.flags, **self.counts}  # fmt: skip


@dataclass
class MaintainReport:
    phases: list[PhaseResult]
    dry_run: bool
    run_id: int | None = None  # the run grouping the phases' runs (None: none changed anything, or a dry run)

    @property
    def ok(self) -> bool:
        return all(phase.status != "failed" for phase in self.phases)

    @property
    def new_flags(self) -> list[dict[str, Any]]:
        """The contradiction flags this run raised (a dry run: would raise), for a person to settle."""
        return [flag for phase in self.phases for flag in phase.flags]

    def to_dict(self) -> dict[str, Any]:
        return {"dry_run": self.dry_run, "ok": self.ok, "run_id": self.run_id, "phases": [phase.to_dict() for phase in self.phases]}


def parse_phases(names: Sequence[str] | None) -> list[str]:
    """The phases asked for (None: all), in dependency order whatever order they were given in."""
    if names is None:
        return list(PHASES)
    if not names:
        raise ValidationError("--phases", None, f"name at least one phase of {', '.join(PHASES)}")
    unknown = [name for name in names if name not in PHASES]
    if unknown:
        raise ValidationError("--phases", None, f"no phase {unknown[0]!r}; the phases are {', '.join(PHASES)}")
    return [name for name in PHASES if name in names]


@dataclass
class Options:
    """What `memstore maintain` was asked to do (see MemoryStore.maintain)."""

    namespace: str | None
    capacity: int | None
    checks: Sequence[Mapping[str, str]] | None
    k: int
    dry_run: bool
    duplicate_at: float | None
    related_at: float | None
    stale_threshold: float
    min_age_days: int
    check_mode: str | None = None  # how recall checks rank (None: as recall does by default)
    stale: bool = False  # whether the stale phase archives (else it is skipped)
    # Whether the semantic phases embed what waits for a vector first (a preview does not: it only
    # reads, memstore.maintain_preview; the waiting memories are left out of its comparisons).
    embed: bool = True
    # Whether the contradict phase supersedes the older side of each flag it raises at confidence
    # RESOLVE_AT or above (`maintain --resolve-updates`; off by default: nothing is removed unasked).
    resolve_updates: bool = False

    def __post_init__(self) -> None:
        # Checked before any phase runs: each phase commits on its own.
        if self.capacity is not None:
            require_capacity(self.capacity)
        for name in ("duplicate_at", "related_at", "stale_threshold"):
            if getattr(self, name) is not None:
                require_fraction(getattr(self, name), name)
        require_days(self.min_age_days, "min_age_days")


def _job_result(conn: Connection, result: PhaseResult, report) -> None:
    drop_empty_run(conn, report)  # a phase that changed nothing records no run
    result.run_id = report.run_id
    result.archived = [entry.__dict__ for entry in report.archived]
    result.counts = {"live_before": report.live_before, "kept": report.kept_count}
    for attribute in ("compared", "pairs"):
        if hasattr(report, attribute):
            result.counts[attribute] = getattr(report, attribute)
    result.flags = [flag.to_dict() for flag in getattr(report, "flags", [])]
    texts = texts_of(conn, [flag[side] for flag in result.flags for side in ("a", "b")])
    for flag in result.flags:  # what a person reads beside the ids
        flag["a_text"], flag["b_text"] = (texts.get(flag[side], {}).get("text") for side in ("a", "b"))


def _thresholds(options: Options) -> dict[str, float]:
    chosen = {"duplicate_at": options.duplicate_at, "related_at": options.related_at}
    return {name: value for name, value in chosen.items() if value is not None}


# Findings that say nothing about the store's contents: reported, but the phases still run (a store
# made by an older memstore under umask 022 is readable by others until `check --fix`; a vector a
# hand edit broke is derived data, which search and the semantic phases skip). `verify` reports
# them again, so the run still fails until `check --fix`.
NOT_BLOCKING = ("permissions", "vectors")


@dataclass
class Context:
    """What every phase works with: the store's engine, its embeddings and recall, and the options."""

    engine: Engine
    embeddings: Embeddings
    recall: Recall
    options: Options
    recall_check_ranking: CheckRanking | None = None  # set before verify runs, when there are checks


def _phase_integrity(context: Context, conn: Connection | None, result: PhaseResult, now: int) -> None:
    report = check_integrity(context.engine)
    result.counts = {"checks": len(report.checks_run), "findings": len(report.findings)}
    warnings = [f"{f.check}: {f.detail}" for f in report.findings if f.check in NOT_BLOCKING]
    if warnings:
        result.counts["warnings"] = warnings
    problems = [f"{f.check}: {f.detail}" for f in report.findings if not f.fixed and f.check not in NOT_BLOCKING]
    if problems:
        raise MemstoreError(f"the store has problems (`memstore check --fix` repairs some): {'; '.join(problems)}")


def _phase_expire(context: Context, conn: Connection, result: PhaseResult, now: int) -> None:
    options = context.options
    _job_result(conn, result, expire_in_transaction(conn, options.namespace, now, dry_run=options.dry_run))


def _phase_dedup(context: Context, conn: Connection, result: PhaseResult, now: int) -> None:
    options = context.options
    report = consolidate_in_transaction(conn, 0, options.namespace, now, dry_run=options.dry_run, stages=("dedup",))
    _job_result(conn, result, report)


def _phase_evict(context: Context, conn: Connection, result: PhaseResult, now: int) -> None:
    options = context.options
    if options.capacity is None:
        raise _Skip("no --capacity given")
    report = consolidate_in_transaction(conn, options.capacity, options.namespace, now, dry_run=options.dry_run, stages=("evict",))
    _job_result(conn, result, report)


def _phase_stale(context: Context, conn: Connection, result: PhaseResult, now: int) -> None:
    options = context.options
    report = prune_in_transaction(
        conn, options.namespace, now, ages_at=now, stale_threshold=options.stale_threshold,
        min_age_days=options.min_age_days, dry_run=options.dry_run, stages=("stale",),
    )  # fmt: skip
    _job_result(conn, result, report)


def _embeddings_ready(context: Context) -> None:
    """Before a semantic phase's transaction: embed what is pending, in transactions of its own
    (vectors are derived data). A dry run embeds inside its own transaction instead (see below)."""
    with read_transaction(context.engine) as reader:
        if model_of(reader) is None:
            raise _Skip("embeddings are not enabled (memstore embeddings enable)")
    if not context.options.dry_run and context.options.embed:
        context.embeddings.sync()


def _stale_asked(context: Context) -> None:
    """Before the stale phase's transaction: it archives idle memories only when asked."""
    if not context.options.stale:
        raise _Skip("archives nothing unless asked (--stale)")


def _phase_semantic(context: Context, conn: Connection, result: PhaseResult, now: int) -> None:
    options = context.options
    if options.dry_run and options.embed:
        context.embeddings.sync(conn=conn)  # rolled back with the dry run
    report = semantic_in_transaction(conn, options.namespace, now, dry_run=options.dry_run, **_thresholds(options))
    _job_result(conn, result, report)


def _phase_contradict(context: Context, conn: Connection, result: PhaseResult, now: int) -> None:
    options = context.options
    if options.dry_run and options.embed:
        context.embeddings.sync(conn=conn)
    resolve_at = RESOLVE_AT if options.resolve_updates else None
    report = contradict_in_transaction(conn, options.namespace, now, dry_run=options.dry_run, resolve_at=resolve_at, **_thresholds(options))
    _job_result(conn, result, report)


def _phase_verify(context: Context, conn: Connection | None, result: PhaseResult, now: int) -> None:
    options = context.options
    failures = []
    if conn is None:
        report = check_integrity(context.engine)
        result.counts = {"findings": len(report.findings)}
        failures += [f"{f.check}: {f.detail}" for f in report.findings if not f.fixed]
    if options.checks:
        if conn is None:
            with read_transaction(context.engine) as reader:
                checks = run_recall_checks(reader, options.checks, options.k, now, context.recall_check_ranking)
        else:
            checks = run_recall_checks(conn, options.checks, options.k, now, context.recall_check_ranking)
        result.counts["checks_passed"] = sum(1 for c in checks if c.passed)
        result.counts["checks"] = len(checks)
        result.counts["checks_mode"] = context.recall_check_ranking.mode
        failures += [f"recall check {c.query!r} expects {c.expect_id!r} (top {', '.join(c.top_ids) or 'none'})" for c in checks if not c.passed]
    if failures:
        raise MemstoreError("; ".join(failures))


def _recall_checks_ready(context: Context) -> None:
    """Before verify: how its recall checks rank, with their queries embedded (outside the phase's
    transaction, like every model call)."""
    if context.options.checks:
        context.recall_check_ranking = context.recall.for_checks([c["query"] for c in context.options.checks], context.options.check_mode)


class _Skip(Exception):
    """A phase that cannot run here (no capacity given, no embeddings): skipped, not failed."""


RUNNERS: dict[str, Callable] = {
    "check": _phase_integrity, "expire": _phase_expire, "dedup": _phase_dedup, "semantic": _phase_semantic, "contradict": _phase_contradict,
    "stale": _phase_stale, "evict": _phase_evict, "verify": _phase_verify,
}  # fmt: skip
# What runs before a phase's transaction (and may skip it).
PREPARE: dict[str, Callable] = {"semantic": _embeddings_ready, "contradict": _embeddings_ready, "stale": _stale_asked, "verify": _recall_checks_ready}
# Phases that only read: in a real run they hold no write transaction.
READ_ONLY = ("check", "verify")


def _failure(exc: Exception, location: str) -> str:
    if isinstance(exc, MemstoreError):
        return str(exc)
    if isinstance(exc, SQLAlchemyError):
        return database_error(exc, location)
    return f"unexpected {type(exc).__name__}: {exc}"


def maintain(
    engine: Engine, embeddings: Embeddings, recall: Recall, phases: Sequence[str], options: Options, clock: Callable[[], int]
) -> MaintainReport:
    """Run `phases` (in PHASES order) and report each; see the module's docstring. Each phase reads
    `clock()` once, when its transaction holds the store, and sees that one moment throughout.

    The phases' commits leave the WAL alone (a checkpoint inside a commit would hold the write
    lock meanwhile); one checkpoint at the end copies it back into the database.
    """
    context = Context(engine, embeddings, recall, options)
    location = shown_location(engine.url)
    results: list[PhaseResult] = []
    status: dict[str, str] = {}
    parent: int | None = None  # the run grouping a real invocation's phase runs

    def run_phase(name: str, dry_conn: Connection | None) -> PhaseResult:
        result = PhaseResult(name)
        blocked = [need for need in NEEDS[name] if status.get(need) in ("failed", "skipped")]
        if blocked:
            result.status, result.error = "skipped", f"needs {blocked[0]}, which {status[blocked[0]]}"
            return result
        try:
            if name in PREPARE:
                PREPARE[name](context)
            if name in READ_ONLY and dry_conn is None:
                RUNNERS[name](context, None, result, clock())
            elif dry_conn is not None:
                with dry_conn.begin_nested():  # a failed phase rolls back alone
                    RUNNERS[name](context, dry_conn, result, clock())
            else:
                with write_transaction(engine, defer_checkpoint=True) as conn:
                    RUNNERS[name](context, conn, result, clock())
                    if result.run_id is not None and parent is not None:
                        group_phase(conn, parent, result.run_id)  # with the phase: one undo takes back the invocation
        except _Skip as skip:
            result.status, result.error = "skipped", str(skip)
        except Exception as exc:  # one phase's failure is reported; the others still run
            result.status, result.error = "failed", _failure(exc, location)
            result.run_id, result.archived, result.flags = None, [], []
        return result

    if options.dry_run:
        # check reads through a connection of its own (its full-text test is a write statement,
        # which would wait for this dry run's lock): it runs before that lock is taken.
        remaining = list(phases)
        if remaining and remaining[0] == "check":
            results.append(run_phase("check", None))
            status["check"] = results[-1].status
            remaining.pop(0)
        with write_transaction(engine, defer_checkpoint=True) as conn:
            for name in remaining:
                results.append(run_phase(name, conn))
                status[name] = results[-1].status
            roll_back(conn)
    else:
        parent = _group_start(engine, phases, options, clock())
        for name in phases:
            results.append(run_phase(name, None))
            status[name] = results[-1].status
        report = MaintainReport(results, options.dry_run)
        with write_transaction(engine, defer_checkpoint=True) as conn:
            report.run_id = group_finish(conn, parent, clock())
        checkpoint(engine)
        return report
    return MaintainReport(results, options.dry_run)


def _group_start(engine: Engine, phases: Sequence[str], options: Options, now: int) -> int:
    """The run of kind `maintain` this invocation's phase runs are grouped under (memstore.runs.group_phase)."""
    with write_transaction(engine, defer_checkpoint=True) as conn:
        return insert_run(conn, "maintain", options.namespace, now, 0, capacity=options.capacity, params={"phases": list(phases)})
