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


def plural(count: int, one: str, several: str) -> str:
    """ "1 memory", "2 memories", "0 memories"."""
    return f"{count} {one if count == 1 else several}"


# How much of a memory's text a line shows beside its id (the whole text: --json, `memstore show ID`).
SHORT_TEXT = 60


def short(text: str | None, width: int = SHORT_TEXT) -> str:
    """A memory's text on one line, cut at `width` characters with "…"; "(gone)" when none is stored."""
    if text is None:
        return "(gone)"
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= width else one_line[: width - 1].rstrip() + "…"


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
    """One memory as `field  value` lines, times as UTC date-times (`--json` keeps the ms), meta as JSON."""
    row = dict(row, pinned="yes" if row["pinned"] else "no")
    if row.get("meta") is not None:
        row["meta"] = json.dumps(row["meta"], ensure_ascii=False, sort_keys=True)
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
        print_table(["archived", "namespace", "reason", "superseded_by", "text"],
                    [[a.id, a.namespace, a.reason, a.superseded_by, short(a.text)] for a in shown])  # fmt: skip
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


def more_line(shown: int, total: int) -> None:
    """The line that ends a capped list: "... and N more (--all lists every one, --json too)"."""
    if shown < total:
        echo(f"... and {total - shown} more (--all lists every one, --json too)")


def print_maintain(ctx: click.Context, report, show_all: bool = False) -> None:
    """Each phase of a maintain run on a line, then what it archived (the first FIRST_ARCHIVED of
    each phase unless `show_all`) and flagged, each with its text; the one undo of the whole
    invocation; the new flags end it with the two commands that settle each one."""
    if report.dry_run:
        echo("dry run, nothing written:")
    for phase in report.phases:
        run = f"run {phase.run_id}" if phase.run_id is not None else ""
        detail = phase.error or ", ".join(f"{key} {value}" for key, value in phase.counts.items())
        echo(f"{phase.name:<10}  {phase.status:<7}  {run:<8}  {detail}".rstrip())
        shown = phase.archived if show_all else phase.archived[:FIRST_ARCHIVED]
        for entry in shown:
            similarity = "" if entry["similarity"] is None else f" (cosine {entry['similarity']:.3f})"
            by = f" -> {entry['superseded_by']}" if entry["superseded_by"] else ""
            echo(f"    archived {entry['id']} as {entry['reason']}{by}{similarity}: {short(entry.get('text'))}")
        if len(shown) < len(phase.archived):
            echo(f"    ... and {len(phase.archived) - len(shown)} more (--all lists every one, --json too)")
        for flag in phase.flags:
            number = "" if flag["id"] is None else f"flag {flag['id']}: "
            confidence = "" if flag.get("confidence") is None else f"confidence {flag['confidence']:.2f}, "
            settled = "; resolved: the older one superseded (--resolve-updates)" if flag.get("resolved") else ""
            echo(f"    {number}{flag['reason']} ({confidence}cosine {flag['similarity']:.3f}){settled}")
            echo(f"        {flag['a']}: {short(flag.get('a_text'))}")
            echo(f"        {flag['b']}: {short(flag.get('b_text'))}")
    if getattr(report, "run_id", None) is not None:
        echo(f"undo this whole maintain with: {command(ctx, f'restore --run {report.run_id}')} (each phase's run alone: restore --run N)")
    new = [flag for flag in report.new_flags if not flag.get("resolved")]
    if new and not report.dry_run:
        echo(f"{plural(len(new), 'new contradiction flag', 'new contradiction flags')} to settle ({command(ctx, 'flags')} shows both texts):")
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
    texts = result.get("texts", {})

    def said(memory_id: str) -> str:
        return f"{memory_id} {short(texts.get(memory_id), SHORT_TEXT // 2)!r}" if memory_id in texts else memory_id

    echo(f"exact duplicate groups: {len(result['exact_duplicate_groups'])}")
    for group in result["exact_duplicate_groups"]:
        echo(f"  {', '.join(group)}: {short(texts.get(group[0]))}")
    echo(f"near-duplicate pairs (Jaccard >= {result['near_duplicate_threshold']}): {len(result['near_duplicate_pairs'])}")
    for pair in result["near_duplicate_pairs"]:
        echo(f"  {said(pair['ids'][0])} ~ {said(pair['ids'][1])}  {pair['jaccard']}")
    echo(f"possible contradictions (review by hand): {len(result['contradiction_flags'])}")
    for flag in result["contradiction_flags"]:
        echo(f"  {said(flag['ids'][0])} vs {said(flag['ids'][1])}  {flag['reason']} ({flag['jaccard']})")
    echo(f"open contradiction flags (memstore flags): {len(result['open_flags'])}")
    for flag in result["open_flags"]:
        older, newer = f"{flag['older_id']} {short(flag['older_text'], SHORT_TEXT // 2)!r}", f"{flag['newer_id']} {short(flag['newer_text'], SHORT_TEXT // 2)!r}"
        echo(f"  flag {flag['id']}: {older} vs {newer} (newer)  {flag['reason']}")
    stalest = [s for s in result["staleness"] if s["staleness"] > 0][:10]
    echo(f"stalest (of {len(result['staleness'])}):")
    for entry in stalest:
        pin = ", pinned" if entry["pinned"] else ""
        echo(f"  {said(entry['id'])}  {entry['staleness']}  ({entry['days_idle']} days idle, {entry['recall_count']} recalls{pin})")


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


def print_flags(ctx: click.Context, page: dict[str, Any], *, settled: bool = False) -> None:
    """A page of flags (MemoryStore.flag_page), each as a few lines: why it was raised, each side's
    id, date and text, what differs, and (open) the commands that settle it; then where the page
    sits in the whole and, for an empty page, which other namespaces hold such flags."""
    for flag in page["flags"]:
        scope = f" in {flag['namespace']}" if page["filter"].get("namespace") is None else ""
        state = "" if flag["status"] == "open" else f", {flag['status']}: {flag['verdict'] or ''} {when(flag['closed_at'])} UTC by run {flag['closed_by_run']}"
        confidence = "" if flag.get("confidence") is None else f"confidence {flag['confidence']:.2f}, "
        echo(f"flag {flag['id']}{scope}: {flag['reason']} ({confidence}cosine {flag['similarity']:.3f}, raised {when(flag['flagged_at'])} UTC by run {flag['run_id']}{state})")
        for side, label in (("older", "older"), ("newer", "newer, probably current")):
            gone = ", archived" if flag[f"{side}_state"] == "archived" else ""
            echo(f"  {label}: {flag[f'{side}_id']} ({when(flag[f'{side}_timestamp'])}{gone}): {short(flag[f'{side}_text'], 2 * SHORT_TEXT)}")
        differs = flag["differs"]
        if differs["older"] or differs["newer"]:
            signal = f" ({flag['signal']})" if flag.get("signal") else ""
            echo(f"  differs: {' '.join(differs['older']) or '(nothing)'} -> {' '.join(differs['newer']) or '(nothing)'}{signal}")
        if flag["status"] == "open" and not settled:
            keep_newer = command(ctx, f"supersede {shlex.quote(flag['older_id'])} --by {shlex.quote(flag['newer_id'])}")
            dismiss = command(ctx, f"flags dismiss {flag['id']}")
            echo(f"  keep the newer: {keep_newer}  |  both hold: {dismiss}")
    total, first = page["total"], page["offset"] + 1
    status = page["filter"].get("status", "open")
    what = f"{status} flags" if status != "all" else "flags"
    where = f" in {page['filter']['namespace']!r}" if page["filter"].get("namespace") is not None else ""
    if page["flags"]:
        last = page["offset"] + len(page["flags"])
        more = f"; --offset {page['next_offset']} shows the next" if page["next_offset"] is not None else ""
        echo(f"{what} {first}-{last} of {total}{where}, {page['sort']} first{more}")
    elif total:
        echo(f"no {what} past {page['offset']}{where}: there are {total}")
    else:
        echo(f"no {what}{where}")
    if page["elsewhere"] and not page["flags"]:
        counts = ", ".join(f"{namespace} ({count})" for namespace, count in page["elsewhere"].items())
        echo(f"other namespaces hold such flags: {counts}; -n NAME or --all-namespaces shows them")


def print_dismissed(ctx: click.Context, done: dict[str, Any]) -> None:
    """What a dismissal did: the run, each flag with both texts, the one undo."""
    which = f"flag {done['dismissed'][0]}" if len(done["dismissed"]) == 1 else f"{len(done['dismissed'])} flags"
    echo(f"run {done['run_id']}: {which} dismissed")
    shown = done["flags"][:FIRST_ARCHIVED]
    for flag in shown:
        echo(f"  flag {flag['id']}: {flag['older_id']} {short(flag['older_text'])!r} vs {flag['newer_id']} {short(flag['newer_text'])!r}")
    if len(shown) < len(done["flags"]):
        echo(f"  ... and {len(done['flags']) - len(shown)} more (--json lists every one)")
    print_undo(ctx, done["run_id"])


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
    "restored": ("memory restored", "memories restored"), "phases": ("phase run", "phase runs"),
}  # fmt: skip


def did_text(did: dict[str, int]) -> str:
    """What a run did, for people: "2 duplicates, 1 evicted, 1 flag settled"."""
    return ", ".join(f"{count} {DID_WORDS[name][count != 1]}" for name, count in did.items()) or "nothing"


def run_status(run: dict[str, Any]) -> str:
    return f"restored {when(run['restored_at'])}" if run["status"] == "restored" else run["status"]


def run_kind(run: dict[str, Any]) -> str:
    """A run's kind, and the maintain run it was a phase of: "evict (maintain 12)"."""
    return run["kind"] if run.get("parent_run_id") is None else f"{run['kind']} (maintain {run['parent_run_id']})"


def print_runs(rows: list[dict[str, Any]], more: bool = False, offset: int = 0) -> None:
    """Runs newest first with what each did and when it was undone; `more`: older runs were left out."""
    print_table(
        ["run", "kind", "namespace", "started (UTC)", "status", "did"],
        [[r["id"], run_kind(r), r["namespace"] or "(all)", iso(r["started_at"]), run_status(r), did_text(r["did"])] for r in rows],
    )
    if more:
        echo(f"(runs {offset + 1}-{offset + len(rows)}, newest first; --offset {offset + len(rows)} shows older ones, --all every one)")


def _flag_pair(flag: dict[str, Any]) -> str:
    return f"{flag['older_id']} {short(flag.get('older_text'), SHORT_TEXT // 2)!r} vs {flag['newer_id']} {short(flag.get('newer_text'), SHORT_TEXT // 2)!r}"


def print_run_whole(ctx: click.Context, run: dict[str, Any]) -> None:
    """One run: what it was, what it did, what it archived (each with its text; the first
    FIRST_ARCHIVED unless the whole run was read), what came back, the flags it raised and settled,
    a maintain run's phase runs."""
    scope = run["namespace"] or "every namespace"
    echo(f"run {run['id']}: {run_kind(run)} in {scope}, started {when(run['started_at'])} UTC, {run_status(run)}")
    echo(f"did: {did_text(run['did'])}")
    if run["params"]:
        echo(f"params: {json.dumps(run['params'], ensure_ascii=False, sort_keys=True)}")
    if run["phases"]:
        echo(f"phase runs ({len(run['phases'])}):")
        print_table(["run", "kind", "status", "did"], [[p["id"], p["kind"], run_status(p), did_text(p["did"])] for p in run["phases"]])
    if run["archived"]:
        echo(f"archived ({run['archived_total']}):")
        print_table(["id", "namespace", "reason", "superseded_by", "cosine", "text"],
                    [[a["id"], a["namespace"], a["reason"], a["superseded_by"], "" if a["similarity"] is None else f"{a['similarity']:.3f}",
                      short(a["text"])] for a in run["archived"]])  # fmt: skip
        more_line(len(run["archived"]), run["archived_total"])
    if run["restored"]:
        echo(f"restored ({run['restored_total']}):")
        for memory in run["restored_memories"]:
            echo(f"  {memory['id']}  {short(memory['text'])}")
        more_line(len(run["restored"]), run["restored_total"])
    for title, flags in (("flags raised", run["flags_raised"]), ("flags settled", run["flags_settled"])):
        if flags:
            echo(f"{title} ({len(flags)}):")
            print_table(["flag", "pair (older vs newer)", "status", "verdict"],
                        [[f["id"], _flag_pair(f), f["status"], f["verdict"]] for f in flags])  # fmt: skip
    if run["status"] == "applied":
        undo = command(ctx, f"restore --run {run['id']}")
        echo(f"undo with: {undo} (--dry-run shows what it would bring back)")


# How a restore report names a flag's change.
FLAG_CHANGES = {"reopened": "open again", "settled": "settled", "removed": "removed (the run had raised it)"}


def print_restore(ctx: click.Context, report, show_all: bool = False) -> None:
    """What undoing a run (or bringing one memory back) did, or (a dry run) would do: each memory
    back and each flag that changed, with their texts."""
    changed = [f"{plural(len(report.restored_ids), 'memory', 'memories')} back in the live set"] if report.restored_ids else []
    for change, words in (("reopened", "open again"), ("settled", "settled"), ("removed", "removed")):
        count = sum(1 for flag in report.flags if flag["change"] == change)
        if count:
            changed.append(f"{plural(count, 'flag', 'flags')} {words}")
    back = ", ".join(changed) or "nothing changed"
    if report.kind == "restore" and report.archived_again:
        did = f"run {report.run_id} undone: {plural(len(report.archived_again), 'memory', 'memories')} back in the archive"
    elif report.kind == "restore":
        did = f"run {report.run_id}: {back}"
    else:
        phases = f" ({plural(len(report.phases), 'phase run', 'phase runs')} undone, newest first)" if report.kind == "maintain" else ""
        did = f"run {report.run_id} restored{phases}: {back}"
    if report.dry_run:
        what = f"bringing {report.restored_ids[0]} back alone" if report.kind == "restore" and report.restored_ids else f"restoring run {report.run_id} ({report.kind})"
        did = f"dry run, nothing written: {what} would change: {back}"
    echo(did)
    for title, memories in (("back", report.memories), ("archived again", report.archived_again)):
        shown = memories if show_all else memories[:FIRST_ARCHIVED]
        for memory in shown:
            echo(f"  {title}: {memory['id']}  {short(memory['text'])}")
        if len(shown) < len(memories):
            echo(f"  ... and {len(memories) - len(shown)} more (--all lists every one, --json too)")
    if report.retired:
        echo(f"  archived again: {report.retired} (the version the update wrote)")
    shown = report.flags if show_all else report.flags[:FIRST_ARCHIVED]
    for flag in shown:
        verdict = f" as {flag['verdict']}" if flag["change"] == "settled" and flag["verdict"] else ""
        echo(f"  flag {flag['id']} {FLAG_CHANGES[flag['change']]}{verdict}: {_flag_pair(flag)}")
    if len(shown) < len(report.flags):
        echo(f"  ... and {len(report.flags) - len(shown)} more flags (--all lists every one, --json too)")
    if report.dry_run:
        again = f"restore {shlex.quote(report.restored_ids[0])}" if report.kind == "restore" and report.restored_ids else f"restore --run {report.run_id}"
        echo(f"restore with: {command(ctx, again)}")
    elif report.kind == "restore" and not report.archived_again:
        print_undo(ctx, report.run_id)  # a memory brought back alone is a run of its own


def print_found_archived(rows: list[dict[str, Any]]) -> None:
    """Archived memories found by a search, best first, with why and when each left."""
    print_table(
        ["id", "namespace", "reason", "archived (UTC)", "run", "text"],
        [[r["id"], r["namespace"], r["reason"], when(r["archived_at"]), r["run_id"], short(r["text"], 2 * SHORT_TEXT)] for r in rows],
    )
    if rows:
        echo("bring one back with: memstore restore ID")


def print_history(rows: list[dict[str, Any]]) -> None:
    print_table(
        ["id", "state", "reason", "superseded_by", "run", "written (UTC)", "archived (UTC)", "text"],
        [[r["id"], r["state"], r["reason"], r["superseded_by"], r["run_id"], when(r["timestamp"]), when(r["archived_at"]), r["text"]]
         for r in rows],
    )  # fmt: skip


def print_integrity(report) -> None:
    """Each integrity finding (fixed or FOUND), then the verdict."""
    for finding in report.findings:
        echo(f"{'fixed' if finding.fixed else 'FOUND'}  {finding.check}: {finding.detail}")
    echo(f"{'ok' if report.ok else 'problems found'}: {len(report.checks_run)} checks, {len(report.findings)} findings")
