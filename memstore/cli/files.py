"""The store as a file or a database: path, init, backup, check (the integrity check), copy."""

from __future__ import annotations

import click

from ..db import database_url, shown_location
from ..migrate import SCHEMA_HEAD
from .options import json_option, open_store
from .render import plural, print_integrity, print_json


@click.command()
@click.pass_context
def path(ctx: click.Context) -> None:
    """Print where the store lives.

    A file path for SQLite, or the URL for a database server.

    \b
    Example:
        sqlite3 "$(memstore path)" 'SELECT count(*) FROM memories'
    """
    location = ctx.obj["location"]
    click.echo(shown_location(location) if "://" in location else database_url(location).removeprefix("sqlite:///"))


@click.command()
@click.pass_context
def init(ctx: click.Context) -> None:
    """Create the store or upgrade its schema.

    \b
    Example:
        memstore --db agent.db init
    """
    store = open_store(ctx, create=True)
    click.echo(f"store ready at {store.url} (schema {SCHEMA_HEAD})")


@click.command()
@click.argument("destination", type=click.Path(dir_okay=False))
@click.option("--force", is_flag=True, help="Overwrite DESTINATION if it exists.")
@json_option
@click.pass_context
def backup(ctx, destination, force, as_json) -> None:
    """Copy the store to a file, safely, while agents keep writing.

    Uses SQLite's online backup API; the copy is a consistent snapshot, checked and then
    renamed into place. SQLite stores only (for PostgreSQL use pg_dump).

    \b
    Example:
        memstore backup backups/agent-$(date +%F).db
    """
    result = open_store(ctx).backup(destination, force=force)
    if as_json:
        return print_json(result)
    click.echo(
        f"backed up to {result['path']}: {plural(result['memories'], 'memory', 'memories')}, "
        f"{result['memory_archive']} archived, {plural(result['consolidation_runs'], 'run', 'runs')}"
    )


@click.command()
@click.option("--fix", is_flag=True, help="Recompute wrong norm_key values, rebuild the recall index and live counts, make the store's files 0600, "
              "remove a vectors folder that is not the owner's own.")
@json_option
@click.pass_context
def check(ctx, fix, as_json) -> None:
    """Check the store is whole and follows memstore's rules.

    integrity_check, norm_key = normalize_key(text) on every row (e.g. after edits in the
    sqlite3 shell), no id both live and archived, schema at head, indexes as the models
    define them, the recall index in step, WAL on, the store's files readable by their owner
    only, the vector files' folder beside it (STORE-vectors) the owner's own 0700 folder. Exit 1
    on any finding not fixed.

    \b
    Example:
        memstore check --fix
    """
    report = open_store(ctx).check(fix=fix)
    print_json(report.to_dict()) if as_json else print_integrity(report)
    if not report.ok:
        ctx.exit(1)


@click.command()
@click.argument("source", metavar="SOURCE")
@click.argument("target", metavar="TARGET")
@json_option
@click.pass_context
def copy(ctx, source, target, as_json) -> None:
    """Copy a whole store into a new or empty one, on either backend.

    SOURCE and TARGET are each a SQLite file path or a URL (postgresql+psycopg://...);
    --db is not used. Everything moves: the live set, the archive, the runs (restore
    and --as-of work on the copy), merges, settings, vectors and contradiction flags
    with their dismissals. The full-text index, live counts, vector index and id
    counters are rebuilt in TARGET. TARGET is created and migrated if needed, and
    written in one transaction; one that holds memories is refused.

    \b
    Example:
        memstore copy agent.db postgresql+psycopg://user@dbhost/agent_memory
    """
    from ..store import MemoryStore

    ctx.obj["location"] = source
    with MemoryStore(source, create=False) as store:
        ctx.obj["location"] = target  # a database error from here on is the target's
        report = store.copy_to(target)
    if as_json:
        return print_json(report.to_dict())
    rows = report.rows
    search = f"; vector search: {report.vector_search}" if report.vector_search else ""
    click.echo(
        f"copied {rows['memories']} memories, {rows['memory_archive']} archived, {rows['consolidation_runs']} runs, "
        f"{rows['memory_vectors']} vectors and {rows['contradiction_flags']} flags to {report.target}{search}"
    )
