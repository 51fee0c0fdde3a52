"""How results look on a terminal: tables, a memory's fields, a run's summary. `--json` prints the
API's own dictionaries instead, one document on one line."""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

import click

from ..db import shown_location

# What a terminal must not be handed raw: control characters (an escape sequence can move the cursor,
# retitle the window or hide what follows) and the bidirectional overrides that reorder what is
# shown. A memory's text is whatever an agent read, so each is printed as its escape (\x1b, \u202e).
_ESCAPES = {code: repr(chr(code))[1:-1] for code in [*range(0x20), *range(0x7F, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A)]}


def visible(text: str) -> str:
    r"""`text` with every character a terminal would act on written as its escape.

    >>> print(visible("dark mode\x1b[2J\u202egnp.exe"))
    dark mode\x1b[2J\u202egnp.exe
    """
    return text.translate(_ESCAPES)


def echo(line: str, *, err: bool = False) -> None:
    """One line of human output (`--json` documents go through print_json, whose JSON escapes them)."""
    click.echo(visible(line), err=err)


def print_json(document: Any) -> None:
    # One line per document, so output appended to a log stays JSON Lines.
    click.echo(json.dumps(document, ensure_ascii=False))


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    cells = [[visible(("" if v is None else str(v)).replace("\n", " ")) for v in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    for line in (headers, ["-" * w for w in widths], *cells):
        echo("  ".join(v.ljust(w) for v, w in zip(line, widths)).rstrip())


def iso(ms: int | None) -> str:
    """Unix ms as a UTC date and time; "" for None and for a moment outside years 1-9999 (a
    store takes any 64-bit ms, and the ms themselves are shown beside it)."""
    if ms is None:
        return ""
    try:
        return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    except (ValueError, OverflowError, OSError):
        return ""


def print_row(row: dict[str, Any]) -> None:
    """One memory as `field  value` lines, times also in UTC."""
    row = dict(row, pinned="yes" if row["pinned"] else "no")
    for field in ("timestamp", "created_at", "updated_at", "last_recalled_at", "expires_at", "stored_at", "archived_at"):
        if row.get(field) is not None:
            when = iso(row[field])
            row[field] = f"{row[field]} ({when} UTC)" if when else str(row[field])
    width = max(len(k) for k in row)
    for key, value in row.items():
        echo(f"{key.ljust(width)}  {'' if value is None else value}")


def print_run(ctx: click.Context, report) -> None:
    """The human summary of a consolidate or prune run."""
    kept = f"{report.kept_count} ({report.pinned_kept} pinned)"
    if report.kind == "expire":
        archived = f"{report.expired} expired"
    elif report.kind == "prune":
        archived = f"{report.duplicates} duplicates and {report.stale} stale"
    else:
        archived = f"{report.duplicates} duplicates and {report.evicted} evicted"
    if report.expired and report.kind != "expire":
        archived = f"{report.expired} expired, {archived}"
    if report.dry_run:
        echo(f"dry run, nothing written: {report.live_before} live; would keep {kept}, archive {archived}")
    else:
        echo(f"run {report.run_id}: {report.live_before} live before; kept {kept}, archived {archived}")
    if report.archived:
        print_table(["archived", "namespace", "reason", "superseded_by"],
                    [[a.id, a.namespace, a.reason, a.superseded_by] for a in report.archived])  # fmt: skip
    if report.kept_ids is not None:
        echo(f"kept: {' '.join(report.kept_ids)}")
    if report.checks:
        echo(f"recall checks ranked by {report.checks[0].mode} recall")
    for check in report.checks:
        echo(f"check {'pass' if check.passed else 'FAIL'}: {check.query!r} expects {check.expect_id}")
    if not report.dry_run and report.archived:
        print_undo(ctx, report.run_id)


def print_undo(ctx: click.Context, run_id: int) -> None:
    db_option = ""
    if ctx.find_root().get_parameter_source("db") == click.core.ParameterSource.COMMANDLINE:
        # A password stays masked even here: this line lands in cron mail and logs.
        db_option = f"--db {shlex.quote(shown_location(ctx.find_root().params['db']))} "
    echo(f"undo with: memstore {db_option}restore --run {run_id}")


def print_maintain(report) -> None:
    """Each phase of a maintain run on a line, then what it archived and flagged."""
    if report.dry_run:
        echo("dry run, nothing written:")
    for phase in report.phases:
        run = f"run {phase.run_id}" if phase.run_id is not None else ""
        detail = phase.error or ", ".join(f"{key} {value}" for key, value in phase.counts.items())
        echo(f"{phase.name:<10}  {phase.status:<7}  {run:<8}  {detail}".rstrip())
        for entry in phase.archived:
            similarity = "" if entry["similarity"] is None else f" (cosine {entry['similarity']:.3f})"
            by = f" -> {entry['superseded_by']}" if entry["superseded_by"] else ""
            echo(f"    archived {entry['id']} as {entry['reason']}{by}{similarity}")
        for flag in phase.flags:
            echo(f"    flagged {flag['a']} vs {flag['b']} (newer) cosine {flag['similarity']:.3f}: {flag['reason']}")


def print_inventory(result: dict[str, Any]) -> None:
    """The hygiene report: counts, then each finding (the stalest ten)."""
    echo(
        f"{result['total_records']} memories, {result['total_text_chars']} characters; "
        f"{result['pinned']} pinned, {result['never_recalled']} never recalled"
    )
    echo(f"days idle: oldest {result['oldest_age_days']}, median {result['median_age_days']}")
    echo(f"exact duplicate groups: {len(result['exact_duplicate_groups'])}")
    for group in result["exact_duplicate_groups"]:
        echo(f"  {', '.join(group)}")
    echo(f"near-duplicate pairs (Jaccard >= {result['near_duplicate_threshold']}): {len(result['near_duplicate_pairs'])}")
    for pair in result["near_duplicate_pairs"]:
        echo(f"  {pair['ids'][0]} ~ {pair['ids'][1]}  {pair['jaccard']}")
    echo(f"possible contradictions (review by hand): {len(result['contradiction_flags'])}")
    for flag in result["contradiction_flags"]:
        echo(f"  {flag['ids'][0]} vs {flag['ids'][1]}  {flag['reason']} ({flag['jaccard']})")
    echo(f"open contradiction flags (memstore flags): {len(result['open_flags'])}")
    for flag in result["open_flags"]:
        echo(f"  flag {flag['id']}: {flag['older_id']} vs {flag['newer_id']} (newer)  {flag['reason']}")
    stalest = [s for s in result["staleness"] if s["staleness"] > 0][:10]
    echo(f"stalest (of {len(result['staleness'])}):")
    for entry in stalest:
        pin = ", pinned" if entry["pinned"] else ""
        echo(f"  {entry['id']}  {entry['staleness']}  ({entry['age_days']} days idle, {entry['recall_count']} recalls{pin})")


def checks_document(results) -> dict[str, Any]:
    mode = results[0].mode if results else None
    return {"passed": sum(1 for r in results if r.passed), "total": len(results), "mode": mode, "checks": [r.__dict__ for r in results]}


def print_checks(results, k: int) -> None:
    """Which recall ranked, each recall check (pass or FAIL, with the top k it saw), then the tally."""
    if results:
        echo(f"recall checks ranked by {results[0].mode} recall, top {k}")
    for r in results:
        via = f" (now {r.resolved_id})" if r.resolved_id not in (None, r.expect_id) else ""
        echo(f"{'pass' if r.passed else 'FAIL'}  {r.query!r} expects {r.expect_id}{via}; top {k}: {', '.join(r.top_ids) or '-'}")
    echo(f"{sum(1 for r in results if r.passed)}/{len(results)} checks passed")


def print_recalled(rows: list[dict[str, Any]]) -> None:
    print_table(
        ["id", "importance", "recalls", "found by", "text"],
        [[r["id"], r["importance"], r["recall_count"], "+".join(r["found_by"]), r["text"]] for r in rows],
    )


def print_flags(rows: list[dict[str, Any]]) -> None:
    print_table(
        ["flag", "older", "newer (probably current)", "cosine", "reason"],
        [[r["id"], f"{r['older_id']}: {r['older_text']}", f"{r['newer_id']}: {r['newer_text']}", f"{r['similarity']:.3f}", r["reason"]] for r in rows],
    )


def print_memories(rows: list[dict[str, Any]], *, archived: bool) -> None:
    if archived:
        print_table(
            ["id", "namespace", "reason", "superseded_by", "run", "text"],
            [[r["id"], r["namespace"], r["reason"], r["superseded_by"], r["run_id"], r["text"]] for r in rows],
        )
    else:
        print_table(
            ["id", "namespace", "importance", "timestamp", "pinned", "text"],
            [[r["id"], r["namespace"], r["importance"], r["timestamp"], "yes" if r["pinned"] else "", r["text"]] for r in rows],
        )


def print_runs(rows: list[dict[str, Any]]) -> None:
    print_table(
        ["run", "kind", "namespace", "capacity", "started (UTC)", "status", "before", "kept", "expired", "duplicates", "evicted", "stale"],
        [[r["id"], r["kind"], r["namespace"] or "(all)", r["capacity"], iso(r["started_at"]), r["status"],
          r["live_before"], r["kept"], r["expired"], r["duplicates"], r["evicted"], r["stale"]] for r in rows],
    )  # fmt: skip


def print_history(rows: list[dict[str, Any]]) -> None:
    print_table(
        ["id", "state", "reason", "superseded_by", "run", "written (UTC)", "text"],
        [[r["id"], r["state"], r["reason"], r["superseded_by"], r["run_id"], iso(r["timestamp"]), r["text"]] for r in rows],
    )


def print_check(report) -> None:
    """Each integrity finding (fixed or FOUND), then the verdict."""
    for finding in report.findings:
        echo(f"{'fixed' if finding.fixed else 'FOUND'}  {finding.check}: {finding.detail}")
    echo(f"{'ok' if report.ok else 'problems found'}: {len(report.checks_run)} checks, {len(report.findings)} findings")
