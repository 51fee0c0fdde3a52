"""The `memstore` command line: each command is options -> one MemoryStore call -> output."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any

import click
from sqlalchemy.exc import SQLAlchemyError

from .db import database_url, default_location
from .errors import MemstoreError
from .io import write_jsonl
from .migrate import head_revision
from .store import MemoryStore


class MemstoreGroup(click.Group):
    """Turns every memstore error into one line on stderr and exit code 1: no tracebacks."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except MemstoreError as exc:
            raise click.ClickException(str(exc)) from None
        except SQLAlchemyError as exc:
            detail = str(getattr(exc, "orig", None) or exc).splitlines()[0]
            location = (ctx.obj or {}).get("location", "the store")
            raise click.ClickException(f"database error at {location}: {detail}") from None
        except OSError as exc:
            raise click.ClickException(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": ")) from None


def json_option(fn: Callable) -> Callable:
    return click.option("--json", "as_json", is_flag=True, help="Print one JSON document (one line).")(fn)


def namespace_options(fn: Callable) -> Callable:
    fn = click.option("--all-namespaces", is_flag=True, help="Every namespace.")(fn)
    return click.option("--namespace", "-n", default=None, help="Namespace (default: 'default').")(fn)


def chosen_namespace(namespace: str | None, all_namespaces: bool) -> str | None:
    if namespace is not None and all_namespaces:
        raise click.UsageError("give --namespace or --all-namespaces, not both")
    return None if all_namespaces else (namespace or "default")


def print_json(document: Any) -> None:
    # One line per document, so output appended to a log stays JSON Lines.
    click.echo(json.dumps(document, ensure_ascii=False))


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    cells = [[("" if v is None else str(v)).replace("\n", " ") for v in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    for line in (headers, ["-" * w for w in widths], *cells):
        click.echo("  ".join(v.ljust(w) for v, w in zip(line, widths)).rstrip())


def iso(ms: int | None) -> str:
    if ms is None:
        return ""
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def open_store(ctx: click.Context, *, create: bool = False) -> MemoryStore:
    """The store named by --db; only the commands that write new memories may create it."""
    return ctx.find_root().obj["open"](create)


@click.group(cls=MemstoreGroup)
@click.option(
    "--db",
    envvar="MEMSTORE_DB",
    default=None,
    metavar="PATH|URL",
    help="The store: a SQLite file path or a SQLAlchemy URL. Env: MEMSTORE_DB. Default: see `memstore path`.",
)
@click.version_option(package_name="memstore")
@click.pass_context
def cli(ctx: click.Context, db: str | None) -> None:
    """A memory store for AI agents that keeps itself free of duplicates.

    \b
    Example:
        memstore add "User prefers dark mode." --importance 4
        memstore consolidate --capacity 1000
    """
    location = db or default_location()
    stores: list[MemoryStore] = []

    def open_once(create: bool) -> MemoryStore:
        if not stores:
            stores.append(MemoryStore(location, create=create))
            ctx.call_on_close(stores[0].close)
        return stores[0]

    ctx.obj = {"location": location, "open": open_once}


@cli.command()
@click.pass_context
def path(ctx: click.Context) -> None:
    """Print where the store lives.

    A file path for SQLite, or the URL for a database server.

    \b
    Example:
        sqlite3 "$(memstore path)" 'SELECT count(*) FROM memories'
    """
    location = ctx.obj["location"]
    click.echo(location if "://" in location else database_url(location).removeprefix("sqlite:///"))


@cli.command()
@click.pass_context
def init(ctx: click.Context) -> None:
    """Create the store or upgrade its schema.

    \b
    Example:
        memstore --db agent.db init
    """
    store = open_store(ctx, create=True)
    click.echo(f"store ready at {store.url} (schema {head_revision()})")


@cli.command()
@click.argument("text")
@click.option("--id", "memory_id", default=None, help="Id (default: a generated one).")
@click.option("--namespace", "-n", default="default", show_default=True)
@click.option("--timestamp", type=int, default=None, help="Unix milliseconds (default: now).")
@click.option("--importance", "-i", type=int, default=3, show_default=True, help="1 (low) .. 5 (high).")
@click.option("--pinned", is_flag=True, help="Never archive this memory.")
@click.option("--fact-key", default=None, help="Records sharing a fact key claim the same fact.")
@click.option("--meta", default=None, help="A JSON object stored with the memory.")
@json_option
@click.pass_context
def add(ctx, text, memory_id, namespace, timestamp, importance, pinned, fact_key, meta, as_json) -> None:
    """Add one memory.

    Adding the same record with the same id again changes nothing (an agent's retry);
    a different record under a stored id is an error.

    \b
    Example:
        memstore add "User prefers dark mode." --id m1 --importance 4
    """
    try:
        meta_value = None if meta is None else json.loads(meta)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not valid JSON: {exc.msg}", param_hint="--meta") from None
    row = open_store(ctx, create=True).add(
        text, id=memory_id, namespace=namespace, timestamp=timestamp, importance=importance,
        pinned=pinned, fact_key=fact_key, meta=meta_value,
    )  # fmt: skip
    print_json(row) if as_json else click.echo(row["id"])


@cli.command("import")
@click.argument("file", type=click.File("rb"))
@click.option("--namespace", "-n", default=None, help="Namespace for records that name none.")
@json_option
@click.pass_context
def import_(ctx, file, namespace, as_json) -> None:
    """Import memories from JSON or JSONL.

    FILE is a JSON array or JSON Lines file, or '-' for stdin.

    Every record is validated before anything is written; one bad record stops the import,
    naming its file, line and field.

    \b
    Example:
        memstore import memories.jsonl
    """
    name = getattr(file, "name", "<stdin>")
    result = open_store(ctx, create=True).import_file(file, name, namespace)
    summary = {"added": result.added, "unchanged": result.unchanged}
    print_json(summary) if as_json else click.echo(f"imported {result.added} memories ({result.unchanged} already stored)")


@cli.command()
@click.option("--archived", is_flag=True, help="Export the archive instead of the live set.")
@namespace_options
@click.option("--output", "-o", type=click.File("w", encoding="utf-8"), default="-", help="File (default: stdout).")
@click.pass_context
def export(ctx, archived, namespace, all_namespaces, output) -> None:
    """Export memories as JSON Lines.

    The live set is written in rank order; the archive (--archived) in archive order.

    \b
    Example:
        memstore export --all-namespaces -o backup.jsonl
    """
    namespace = chosen_namespace(namespace, all_namespaces)
    rows = open_store(ctx).iter_rows(namespace, archived=archived)
    write_jsonl(rows, output)


@cli.command("list")
@namespace_options
@click.option("--archived", is_flag=True, help="List the archive instead of the live set.")
@click.option("--limit", type=click.IntRange(min=0), default=None, help="At most N rows.")
@json_option
@click.pass_context
def list_(ctx, namespace, all_namespaces, archived, limit, as_json) -> None:
    """List memories in rank order.

    Rank order is importance, then newest, then id.

    \b
    Example:
        memstore list --limit 20
    """
    namespace = chosen_namespace(namespace, all_namespaces)
    rows = open_store(ctx).list(namespace, archived=archived, limit=limit)
    if as_json:
        return print_json(rows)
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


@cli.command()
@click.argument("memory_id", metavar="ID")
@json_option
@click.pass_context
def show(ctx, memory_id, as_json) -> None:
    """Show one memory, live or archived.

    \b
    Example:
        memstore show m2
    """
    row = open_store(ctx).get(memory_id)
    if as_json:
        return print_json(row)
    row = dict(row, state="archived" if row.get("archived_at") is not None else "live")
    row["pinned"] = "yes" if row["pinned"] else "no"
    for field in ("timestamp", "created_at", "updated_at", "last_recalled_at", "archived_at"):
        if row.get(field) is not None:
            row[field] = f"{row[field]} ({iso(row[field])} UTC)"
    width = max(len(k) for k in row)
    for key, value in row.items():
        click.echo(f"{key.ljust(width)}  {'' if value is None else value}")


@cli.command()
@click.option("--capacity", "-c", type=click.IntRange(min=0), required=True, help="Unpinned memories to keep per namespace.")
@namespace_options
@click.option("--dry-run", is_flag=True, help="Show what would happen; write nothing.")
@json_option
@click.pass_context
def consolidate(ctx, capacity, namespace, all_namespaces, dry_run, as_json) -> None:
    """Deduplicate, then evict to a capacity.

    Stage 1 keeps the newest memory of each normalised key; Stage 2 keeps the CAPACITY
    highest-ranked unpinned memories per namespace. Losers are archived, never deleted,
    and `memstore restore --run N` undoes the run.

    \b
    Example:
        memstore consolidate --capacity 500 --dry-run
        memstore consolidate --capacity 500 --all-namespaces
    """
    namespace = chosen_namespace(namespace, all_namespaces)
    report = open_store(ctx).consolidate(capacity, namespace, dry_run=dry_run)
    if as_json:
        return print_json(report.to_dict())
    kept = f"{len(report.kept_ids)} ({report.pinned_kept} pinned)"
    archived = f"{report.duplicates} duplicates and {report.evicted} evicted"
    if dry_run:
        click.echo(f"dry run, nothing written: {report.live_before} live; would keep {kept}, archive {archived}")
    else:
        click.echo(f"run {report.run_id}: {report.live_before} live before; kept {kept}, archived {archived}")
    if report.archived:
        print_table(["archived", "namespace", "reason", "superseded_by"],
                    [[a.id, a.namespace, a.reason, a.superseded_by] for a in report.archived])  # fmt: skip
    if not dry_run and report.archived:
        db_option = ""
        if ctx.find_root().get_parameter_source("db") == click.core.ParameterSource.COMMANDLINE:
            db_option = f"--db {shlex.quote(ctx.find_root().params['db'])} "
        click.echo(f"undo with: memstore {db_option}restore --run {report.run_id}")


@cli.command()
@click.option("--limit", type=click.IntRange(min=0), default=None, help="At most N runs.")
@json_option
@click.pass_context
def runs(ctx, limit, as_json) -> None:
    """List consolidation runs, newest first.

    \b
    Example:
        memstore runs --limit 5
    """
    rows = open_store(ctx).runs(limit)
    if as_json:
        return print_json(rows)
    print_table(
        ["run", "kind", "namespace", "capacity", "started (UTC)", "status", "before", "kept", "duplicates", "evicted"],
        [[r["id"], r["kind"], r["namespace"] or "(all)", r["capacity"], iso(r["started_at"]), r["status"],
          r["live_before"], r["kept"], r["duplicates"], r["evicted"]] for r in rows],
    )  # fmt: skip


@cli.command()
@click.option("--run", "run_id", type=int, required=True, help="The run to undo (see `memstore runs`).")
@json_option
@click.pass_context
def restore(ctx, run_id, as_json) -> None:
    """Undo a run.

    Every memory the run archived goes back to the live set, whole.

    \b
    Example:
        memstore restore --run 3
    """
    report = open_store(ctx).restore(run_id)
    if as_json:
        return print_json({"run_id": report.run_id, "restored_ids": report.restored_ids})
    click.echo(f"run {report.run_id} restored: {len(report.restored_ids)} memories back in the live set")


def main() -> None:
    try:
        cli(prog_name="memstore")
    except Exception as exc:  # a bug of ours must still not print a traceback at a user
        click.echo(f"Error: unexpected {type(exc).__name__}: {exc}", err=True)
        sys.exit(1)
