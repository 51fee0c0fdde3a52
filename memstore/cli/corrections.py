"""Corrections by hand, each a run that `restore` undoes: forget, update, supersede; and history."""

from __future__ import annotations

import click

from .options import INTEGER, json_option, lifetime_options, open_store, parse_meta
from .render import FIRST_ARCHIVED, echo, print_history, print_json, print_row, print_undo, short


@click.command()
@click.argument("memory_ids", metavar="ID...", nargs=-1, required=True)
@click.option("--reason", default=None, help="Why (kept with the run).")
@json_option
@click.pass_context
def forget(ctx, memory_ids, reason, as_json) -> None:
    """Forget memories: archive them as `forgotten`, in one run.

    Recall no longer returns them; `memstore restore --run N` brings them back. Every ID
    must be live, or nothing is forgotten.

    \b
    Example:
        memstore forget m4 m9 --reason "wrong office"
    """
    report = open_store(ctx).forget(list(memory_ids), reason=reason)
    if as_json:
        return print_json(report.to_dict())
    echo(f"run {report.run_id}: forgot {', '.join(entry.id for entry in report.archived)}")
    print_archived_texts(report.archived)
    print_undo(ctx, report.run_id)


def print_archived_texts(archived) -> None:
    """Each memory a correction archived, with its text (the first FIRST_ARCHIVED)."""
    for entry in archived[:FIRST_ARCHIVED]:
        echo(f"  archived: {entry.id}  {short(entry.text)}")
    if len(archived) > FIRST_ARCHIVED:
        echo(f"  ... and {len(archived) - FIRST_ARCHIVED} more (--json lists every one)")


@click.command()
@click.argument("memory_id", metavar="ID")
@click.option("--text", default=None, help="New text.")
@click.option("--importance", "-i", type=INTEGER, default=None, help="New importance, 1 .. 5.")
@click.option("--pinned/--unpinned", default=None, help="Pin or unpin.")
@click.option("--meta", default=None, help="New JSON object (replaces the old one).")
@click.option("--timestamp", type=INTEGER, default=None, help="Unix milliseconds (default: now).")
@lifetime_options
@click.option("--no-expiry", is_flag=True, help="The new version never expires.")
@json_option
@click.pass_context
def update(ctx, memory_id, text, importance, pinned, meta, timestamp, ttl, expires_at, no_expiry, as_json) -> None:
    """Correct a memory: write a new version, archive the old one.

    The new version gets a new id and keeps every field not given, the old version's
    created_at, its lifetime (unless --ttl, --expires-at or --no-expiry) and its recall
    history; the old one is archived as `superseded` by it. The new row is printed;
    `memstore restore --run N` puts the old version back.

    \b
    Example:
        memstore update m7 --text "The API rate limit is 500 rpm."
        memstore update m9 --ttl 7d
    """
    row = open_store(ctx).update(
        memory_id, text=text, importance=importance, pinned=pinned, meta=parse_meta(meta), timestamp=timestamp,
        ttl=ttl, expires_at=expires_at, no_expiry=no_expiry,
    )  # fmt: skip
    if as_json:
        return print_json(row)
    print_row(row)
    print_undo(ctx, row["run_id"])


@click.command()
@click.argument("old", metavar="OLD")
@click.option("--by", "by", required=True, metavar="NEW", help="The memory that is current.")
@json_option
@click.pass_context
def supersede(ctx, old, by, as_json) -> None:
    """Say which of two memories is current: OLD is archived as superseded by NEW.

    Both must be live, in one namespace. This is how a person resolves two conflicting
    facts; `memstore restore --run N` undoes it.

    \b
    Example:
        memstore supersede m3 --by m8
    """
    report = open_store(ctx).supersede(old, by=by)
    if as_json:
        return print_json(report.to_dict())
    echo(f"run {report.run_id}: {old} superseded by {by}")
    print_archived_texts(report.archived)
    print_undo(ctx, report.run_id)


@click.command()
@click.argument("memory_id", metavar="ID")
@json_option
@click.pass_context
def history(ctx, memory_id, as_json) -> None:
    """Every version of a memory, oldest first.

    The versions it replaced and the ones that replaced it (updates, supersedes,
    merged duplicates), live or archived, with reason, run and time.

    \b
    Example:
        memstore history m7
    """
    rows = open_store(ctx).history(memory_id)
    print_json(rows) if as_json else print_history(rows)
