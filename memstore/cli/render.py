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


# The fields of a memory that hold a moment (Unix ms), shown to people as UTC date-times.
TIME_FIELDS = ("timestamp", "created_at", "updated_at", "last_recalled_at", "expires_at", "stored_at", "archived_at")


def when(ms: int | None) -> str:
    """A moment for people: its UTC date-time, or the ms themselves when no calendar holds it."""
    return "" if ms is None else iso(ms) or str(ms)


def print_import(report: Any, as_json: bool, skip_invalid: bool = False) -> None:
    """What an import wrote (or, dry, would write): totals, then per kind of source record."""
    for reason in report.rejected:
        echo(f"skipped: {reason}", err=True)
    if as_json:
        return print_json(report.to_dict())
    verb = "would import" if report.dry_run else "imported"
    skipped = f"; skipped {report.skipped} invalid records" if skip_invalid or report.skipped else ""
    echo(f"{verb} {report.added} memories ({report.unchanged} already stored){skipped}")
    if report.source_format != "memstore":
        for kind, counts in sorted(report.kinds.items()):
            archived = f", {counts['archived']} to the archive" if counts["archived"] else ""
            echo(f"  {kind}: {counts['added']} new, {counts['unchanged']} already stored{archived}")
    if report.repeated:
        echo(f"  {report.repeated} records the source holds twice were imported once")
    if report.run_id is not None:
        echo(f"archived {report.archived}, not live in the source (run {report.run_id}; `memstore restore --run {report.run_id}` brings them back)")


def print_row(row: dict[str, Any]) -> None:
    """One memory as `field  value` lines, times as UTC date-times (`--json` keeps the ms)."""
    row = dict(row, pinned="yes" if row["pinned"] else "no")
    for field in TIME_FIELDS:
        if row.get(field) is not None:
            row[field] = f"{when(row[field])} UTC" if iso(row[field]) else str(row[field])
    width = max(len(k) for k in row)
    for key, value in row.items():
        echo(f"{key.ljust(width)}  {'' if value is None else value}")


# Archived rows a consolidate or prune run prints before "... and N more" (--all: every one).
FIRST_ARCHIVED = 10


def print_run(ctx: click.Context, report, show_all: bool = False) -> None:
    """The human summary of a consolidate or prune run, and the first archived rows (`show_all`: every one)."""
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
    shown = report.archived if show_all else report.archived[:FIRST_ARCHIVED]
    if shown:
        print_table(["archived", "namespace", "reason", "superseded_by"],
                    [[a.id, a.namespace, a.reason, a.superseded_by] for a in shown])  # fmt: skip
    if len(shown) < len(report.archived):
        echo(f"... and {len(report.archived) - len(shown)} more (--all lists every one, --json too)")
    if report.kept_ids is not None:
        echo(f"kept: {' '.join(report.kept_ids)}")
    if report.checks:
        echo(f"recall checks ranked by {report.checks[0].mode} recall")
    for check in report.checks:
        echo(f"check {'pass' if check.passed else 'FAIL'}: {check.query!r} expects {check.expect_id}")
    if not report.dry_run and report.archived:
        print_undo(ctx, report.run_id)


def command(ctx: click.Context, arguments: str) -> str:
    """A memstore command line to run next, with the --db this one was given (if on the command line)."""
    db_option = ""
    if ctx.find_root().get_parameter_source("db") == click.core.ParameterSource.COMMANDLINE:
        # A password stays masked even here: this line lands in cron mail and logs.
        db_option = f"--db {shlex.quote(shown_location(ctx.find_root().params['db']))} "
    return f"memstore {db_option}{arguments}"


def print_undo(ctx: click.Context, run_id: int) -> None:
    echo(f"undo with: {command(ctx, f'restore --run {run_id}')}")


def print_maintain(ctx: click.Context, report) -> None:
    """Each phase of a maintain run on a line, then what it archived and flagged; the new flags end
    it with the two commands that settle each one."""
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
            number = "" if flag["id"] is None else f"flag {flag['id']}: "
            echo(f"    {number}flagged {flag['a']} vs {flag['b']} (newer) cosine {flag['similarity']:.3f}: {flag['reason']}")
    new = report.new_flags
    if new and not report.dry_run:
        echo(f"{len(new)} new contradiction {'flag' if len(new) == 1 else 'flags'} to settle ({command(ctx, 'flags')} shows both texts):")
        for flag in new:
            keep = command(ctx, f"supersede {shlex.quote(flag['a'])} --by {shlex.quote(flag['b'])}")
            dismiss = command(ctx, f"flags dismiss {flag['id']}")
            echo(f"  flag {flag['id']}: keep {flag['b']} (newer) with `{keep}`, or keep both with `{dismiss}`")


def print_inventory(result: dict[str, Any]) -> None:
    """The hygiene report: counts, then each finding (the stalest ten)."""
    echo(
        f"{result['total_records']} memories, {result['total_text_chars']} characters; "
        f"{result['pinned']} pinned, {result['never_recalled']} never recalled"
    )
    echo(f"days idle: oldest {result['oldest_days_idle']}, median {result['median_days_idle']}")
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
        echo(f"  {entry['id']}  {entry['staleness']}  ({entry['days_idle']} days idle, {entry['recall_count']} recalls{pin})")


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


def flag_mark(mark: dict[str, Any] | None) -> str:
    """A recalled memory's open flag, as the recall table shows it: "#3 vs r2"."""
    return "" if mark is None else f"#{mark['id']} vs {mark['other_id']}"


def print_recalled(rows: list[dict[str, Any]]) -> None:
    print_table(
        ["id", "importance", "recalls", "found by", "open flag", "text"],
        [[r["id"], r["importance"], r["recall_count"], "+".join(r["found_by"]), flag_mark(r.get("open_flag")), r["text"]] for r in rows],
    )


def print_flags(rows: list[dict[str, Any]], *, settled: bool = False) -> None:
    """Flags side by side; with `settled`, also each one's status, when it was raised and by which
    run, and how, when and by which run it was settled."""
    def side(r: dict[str, Any], which: str) -> str:
        gone = " (archived)" if r[f"{which}_state"] == "archived" else ""
        return f"{r[f'{which}_id']}{gone}: {r[f'{which}_text']}"

    headers = ["flag", "older", "newer (probably current)", "cosine", "reason"]
    cells = [[r["id"], side(r, "older"), side(r, "newer"), f"{r['similarity']:.3f}", r["reason"]] for r in rows]
    if settled:
        headers[1:1] = ["status", "raised (UTC)", "by run", "settled", "settled (UTC)", "by run"]
        for r, row in zip(rows, cells):
            row[1:1] = [r["status"], iso(r["flagged_at"]), r["run_id"], r["verdict"] or "", iso(r["closed_at"]), r["closed_by_run"]]
    print_table(headers, cells)


def print_memories(rows: list[dict[str, Any]], *, archived: bool) -> None:
    if archived:
        print_table(
            ["id", "namespace", "reason", "superseded_by", "run", "archived (UTC)", "text"],
            [[r["id"], r["namespace"], r["reason"], r["superseded_by"], r["run_id"], when(r["archived_at"]), r["text"]] for r in rows],
        )
    else:
        print_table(
            ["id", "namespace", "importance", "written (UTC)", "expires (UTC)", "pinned", "text"],
            [[r["id"], r["namespace"], r["importance"], when(r["timestamp"]), when(r["expires_at"]), "yes" if r["pinned"] else "", r["text"]]
             for r in rows],
        )  # fmt: skip


# How `did` (memstore.reads.what_it_did) reads: count, then the word for one and for several.
DID_WORDS = {
    "expired": ("expired", "expired"), "duplicates": ("duplicate", "duplicates"), "merged": ("merged", "merged"),
    "evicted": ("evicted", "evicted"), "stale": ("stale", "stale"), "forgotten": ("forgotten", "forgotten"),
    "updated": ("updated", "updated"), "superseded": ("superseded", "superseded"), "dismissed": ("flag dismissed", "flags dismissed"),
    "flagged": ("flag raised", "flags raised"), "flags_settled": ("flag settled", "flags settled"),
}  # fmt: skip


def did_text(did: dict[str, int]) -> str:
    """What a run did, for people: "2 duplicates, 1 evicted, 1 flag settled"."""
    return ", ".join(f"{count} {DID_WORDS[name][count != 1]}" for name, count in did.items()) or "nothing"


def run_status(run: dict[str, Any]) -> str:
    return f"restored {when(run['restored_at'])}" if run["status"] == "restored" else run["status"]


def print_runs(rows: list[dict[str, Any]], more: bool = False) -> None:
    """Runs newest first with what each did; `more`: older runs were left out."""
    print_table(
        ["run", "kind", "namespace", "started (UTC)", "status", "did"],
        [[r["id"], r["kind"], r["namespace"] or "(all)", iso(r["started_at"]), run_status(r), did_text(r["did"])] for r in rows],
    )
    if more:
        echo(f"(the newest {len(rows)} runs; --limit N or --all shows more)")


def print_run_whole(ctx: click.Context, run: dict[str, Any]) -> None:
    """One run: what it was, what it did, every memory it archived, the flags it raised and settled."""
    scope = run["namespace"] or "every namespace"
    echo(f"run {run['id']}: {run['kind']} in {scope}, started {when(run['started_at'])} UTC, {run_status(run)}")
    echo(f"did: {did_text(run['did'])}")
    if run["params"]:
        echo(f"params: {json.dumps(run['params'], ensure_ascii=False, sort_keys=True)}")
    if run["archived"]:
        echo(f"archived ({len(run['archived'])}):")
        print_table(["id", "namespace", "reason", "superseded_by", "cosine"],
                    [[a["id"], a["namespace"], a["reason"], a["superseded_by"], "" if a["similarity"] is None else f"{a['similarity']:.3f}"]
                     for a in run["archived"]])  # fmt: skip
    if run["restored"]:
        echo(f"restored ({len(run['restored'])}): {' '.join(run['restored'])}")
    for title, flags in (("flags raised", run["flags_raised"]), ("flags settled", run["flags_settled"])):
        if flags:
            echo(f"{title} ({len(flags)}):")
            print_table(["flag", "older", "newer", "status", "verdict"],
                        [[f["id"], f["older_id"], f["newer_id"], f["status"], f["verdict"]] for f in flags])  # fmt: skip
    if run["status"] == "applied":
        undo = command(ctx, f"restore --run {run['id']}")
        echo(f"undo with: {undo} (--dry-run shows what it would bring back)")


def print_restore(ctx: click.Context, report) -> None:
    """What undoing a run did, or (a dry run) would do."""
    count = len(report.restored_ids)
    back = f"{count} {'memory' if count == 1 else 'memories'} back in the live set"
    if report.dry_run:
        echo(f"dry run, nothing written: restoring run {report.run_id} ({report.kind}) would bring {back}")
    else:
        echo(f"run {report.run_id} restored: {back}")
    if report.restored_ids:
        echo(f"  back: {' '.join(report.restored_ids)}")
    if report.retired:
        echo(f"  archived again: {report.retired} (the version the update wrote)")
    if report.reopened_flags:
        echo(f"  flags open again: {' '.join(str(flag) for flag in report.reopened_flags)}")
    if report.removed_flags:
        echo(f"  flags removed (the run raised them): {' '.join(str(flag) for flag in report.removed_flags)}")
    if report.dry_run:
        echo(f"restore with: {command(ctx, f'restore --run {report.run_id}')}")


def print_history(rows: list[dict[str, Any]]) -> None:
    print_table(
        ["id", "state", "reason", "superseded_by", "run", "written (UTC)", "archived (UTC)", "text"],
        [[r["id"], r["state"], r["reason"], r["superseded_by"], r["run_id"], when(r["timestamp"]), when(r["archived_at"]), r["text"]]
         for r in rows],
    )  # fmt: skip


def print_check(report) -> None:
    """Each integrity finding (fixed or FOUND), then the verdict."""
    for finding in report.findings:
        echo(f"{'fixed' if finding.fixed else 'FOUND'}  {finding.check}: {finding.detail}")
    echo(f"{'ok' if report.ok else 'problems found'}: {len(report.checks_run)} checks, {len(report.findings)} findings")
