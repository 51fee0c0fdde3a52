"""The store itself: path, init, add, import, export, list, show, runs, restore, backup, check, copy."""

from __future__ import annotations

import sys

import click

from ..errors import NotFoundError
from ..db import database_url, refuse_store_file, shown_location
from ..defaults import DEFAULT_IMPORTANCE, DEFAULT_NAMESPACE
from ..files import replaced_privately
from ..importers import FORMATS
from ..migrate import SCHEMA_HEAD
from ..records import memory_state, now_ms
from .options import (
    INTEGER, as_of_option, chosen_namespace, explain_empty, int64, json_option, lifetime_options, namespace_options, open_store, parse_meta,
)  # fmt: skip
from .render import FIRST_ARCHIVED, echo, plural, print_check, print_import, print_json, print_memories, print_restore, print_row, print_run_whole, print_runs


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
@click.argument("text")
@click.option("--id", "memory_id", default=None, help="Id (default: a generated one).")
@click.option("--namespace", "-n", default=DEFAULT_NAMESPACE, show_default=True)
@click.option("--timestamp", type=INTEGER, default=None, help="Unix milliseconds (default: now).")
@click.option("--importance", "-i", type=INTEGER, default=DEFAULT_IMPORTANCE, show_default=True, help="1 (low) .. 5 (high).")
@click.option("--pinned", is_flag=True, help="Never archive this memory.")
@click.option("--fact-key", default=None, help="Records sharing a fact key claim the same fact.")
@click.option("--meta", default=None, help="A JSON object stored with the memory.")
@lifetime_options
@json_option
@click.pass_context
def add(ctx, text, memory_id, namespace, timestamp, importance, pinned, fact_key, meta, ttl, expires_at, as_json) -> None:
    """Add one memory.

    Adding the same record with the same id again changes nothing (an agent's retry);
    a different record under a stored id is an error. With --ttl or --expires-at the
    memory stops being visible at that moment, and the next job archives it as expired.

    \b
    Example:
        memstore add "User prefers dark mode." --id m1 --importance 4
        memstore add "The door code today is 4512." --ttl 1d
    """
    row = open_store(ctx, create=True).add(
        text, id=memory_id, namespace=namespace, timestamp=timestamp, importance=importance,
        pinned=pinned, fact_key=fact_key, meta=parse_meta(meta), ttl=ttl, expires_at=expires_at,
    )  # fmt: skip
    print_json(row) if as_json else echo(row["id"])


@click.command("import")
@click.argument("source")
@click.option(
    "--from", "source_format", type=click.Choice(list(FORMATS)), default="memstore", show_default=True,
    help="What SOURCE is: memstore's own JSON/JSONL, or another tool's store or export (docs/import.md).",
)
@click.option("--namespace", "-n", default=None, help="Namespace for records that name none (docs/import.md: per format).")
@click.option("--skip-invalid", is_flag=True, help="Write the valid records; report the invalid ones on stderr.")
@click.option("--dry-run", is_flag=True, help="Say what would arrive, per kind; write nothing.")
@json_option
@click.pass_context
def import_(ctx, source, source_format, namespace, skip_invalid, dry_run, as_json) -> None:
    """Import memories from memstore's JSON/JSONL or from another tool.

    SOURCE is a file ('-' for stdin, memstore's format only), a folder (basic-memory), a zip
    (OpenMemory's export) or a URL (a LangGraph PostgresStore). The source is only read.

    Every record is validated before anything is written; one bad record stops the import,
    naming its file, record and field, and nothing is written. With --skip-invalid, exactly
    the valid records are written and each skipped one is named on stderr. Importing the
    same source again adds nothing.

    \b
    Example:
        memstore import memories.jsonl
        memstore import --from langgraph langgraph.db
        memstore import --from mcp-memory memory.jsonl -n alice --dry-run
    """
    if source == "-" and source_format != "memstore":
        raise click.UsageError(f"--from {source_format} reads a file, a folder or a URL, not stdin")
    stream = sys.stdin.buffer if source == "-" else source
    store = open_store(ctx, create=not dry_run)  # a dry run writes nothing, not even a new store
    # A progress bar only on a terminal and not for stdin: piped output and logs stay quiet.
    if source != "-" and sys.stderr.isatty():
        with click.progressbar(length=1, label="checking", file=sys.stderr) as bar:

            def advance(done: int, total: int) -> None:
                bar.length = total
                bar.update(done - bar.pos)

            report = store.import_from(source_format, stream, namespace, skip_invalid=skip_invalid, dry_run=dry_run, progress=advance)
    else:
        report = store.import_from(source_format, stream, namespace, skip_invalid=skip_invalid, dry_run=dry_run)
    print_import(report, as_json, skip_invalid)


@click.command()
@click.option("--archived", is_flag=True, help="Export the archive instead of the live set.")
@namespace_options
@click.option("--output", "-o", type=click.Path(dir_okay=False, allow_dash=True), default="-", help="File (default: stdout); a new one is created 0600.")
@click.option("--with-vectors", is_flag=True, help="Write each memory's vector of the store's model with it.")
@click.pass_context
def export(ctx, archived, namespace, all_namespaces, output, with_vectors) -> None:
    """Export memories as JSON Lines.

    The live set is written in rank order; the archive (--archived) in archive order. With
    --with-vectors each record carries its vector ("embedding": {"model", "vector"}), so an
    import into a store with the same model needs no re-embedding.

    \b
    Example:
        memstore export --all-namespaces -o backup.jsonl
        memstore export --all-namespaces --with-vectors -o move.jsonl
    """
    namespace = chosen_namespace(namespace, all_namespaces)
    store = open_store(ctx)
    # A file is written whole or not at all (a failure halfway leaves the old one as it was); a
    # device or a FIFO is written into, a symlink followed (memstore.files).
    if output != "-":
        refuse_store_file(store.engine, output, "export")
    with click.open_file("-", "w", encoding="utf-8") if output == "-" else replaced_privately(output) as file:
        store.export(file, namespace, archived=archived, with_vectors=with_vectors)


@click.command("list")
@namespace_options
@click.option("--archived", is_flag=True, help="List the archive instead of the live set.")
@click.option("--limit", type=int64(0), default=None, help="At most N rows.")
@as_of_option
@json_option
@click.pass_context
def list_(ctx, namespace, all_namespaces, archived, limit, as_of, as_json) -> None:
    """List memories in rank order.

    Rank order is importance, then newest, then id. Expired memories are not listed. With
    --as-of, the memories that were live at that moment, as they were then.

    \b
    Example:
        memstore list --limit 20
        memstore list --as-of 2026-11-24T18:00:00Z
    """
    given, namespace = namespace is not None, chosen_namespace(namespace, all_namespaces)
    store = open_store(ctx)
    rows = store.list(namespace, archived=archived, limit=limit, as_of=as_of)
    if not rows:
        explain_empty(store, namespace, given)
    print_json(rows) if as_json else print_memories(rows, archived=archived)


@click.command()
@click.argument("memory_id", metavar="ID")
@json_option
@click.pass_context
def show(ctx, memory_id, as_json) -> None:
    """Show one memory, live, expired or archived.

    \b
    Example:
        memstore show m2
    """
    row = open_store(ctx).get(memory_id)
    row = dict(row, state=memory_state(row, now_ms()))
    print_json(row) if as_json else print_row(row)


# Runs `memstore runs` lists unless told otherwise: a person looks at the latest.
RUNS_SHOWN = 20


@click.command()
@click.argument("run_id", metavar="[N]", type=int64(1), required=False)
@click.option("--limit", type=int64(0), default=RUNS_SHOWN, show_default=True, help="At most N runs (run N: N archived memories).")
@click.option("--offset", type=int64(0), default=0, help="Skip the newest N runs (run N: its first N archived memories).")
@click.option("--all", "show_all", is_flag=True, help="Every run (run N: every memory it archived).")
@json_option
@click.pass_context
def runs(ctx, run_id, limit, offset, show_all, as_json) -> None:
    """List runs, newest first, with what each did; `runs N` shows run N whole.

    Every job, maintain invocation and phase that changed something, correction,
    dismissal and memory restored alone is a run; a maintain's phase runs name it
    ("evict (maintain 12)"), and `restore --run 12` undoes them all. Run N whole: what it
    archived, each with its text (the first 10 unless --all or --limit), what a restore of
    it brought back, the flags it raised and settled, a maintain run's phase runs.

    \b
    Example:
        memstore runs
        memstore runs 3
    """
    store = open_store(ctx)
    if run_id is not None:
        limit_given = ctx.get_parameter_source("limit") == click.core.ParameterSource.COMMANDLINE
        shown = None if show_all or as_json else (limit if limit_given else FIRST_ARCHIVED)
        run = store.run(run_id, limit=shown, offset=offset)
        return print_json(run) if as_json else print_run_whole(ctx, run)
    rows = store.runs(None if show_all else limit + 1, offset=offset)  # one more: says whether older ones were left out
    more = not show_all and len(rows) > limit
    rows = rows[:limit] if more else rows
    print_json(rows) if as_json else print_runs(rows, more, offset)


@click.command()
@click.argument("memory_id", metavar="[ID]", required=False)
@click.option("--run", "run_id", type=int64(1), default=None, help="The run to undo (see `memstore runs`).")
@click.option("--dry-run", is_flag=True, help="Show what the undo would bring back; write nothing.")
@click.option("--all", "show_all", is_flag=True, help="Name every memory and flag, not only the first ones.")
@json_option
@click.pass_context
def restore(ctx, memory_id, run_id, dry_run, show_all, as_json) -> None:
    """Undo a run, or bring one archived memory back.

    --run N: every memory run N archived goes back to the live set, whole; the flags it
    settled open again, those it raised go. A maintain run's phases are undone together,
    newest first. ID: that one archived memory comes back alone, as a run of its own
    (`restore --run` of that run sends it back); `memstore recall --archived` finds it.
    --dry-run shows exactly what would happen and writes nothing.

    \b
    Example:
        memstore restore --run 3 --dry-run
        memstore restore --run 3
        memstore restore m7
    """
    if (memory_id is None) == (run_id is None):
        raise click.UsageError("give one archived memory's ID or --run N")
    store = open_store(ctx)
    if run_id is not None:
        report = store.restore(run_id, dry_run=dry_run)
    else:
        try:
            report = store.restore_memory(memory_id, dry_run=dry_run)
        except NotFoundError:
            if memory_id.isascii() and memory_id.isdigit():
                raise click.ClickException(f"no archived memory {memory_id!r}; did you mean `memstore restore --run {memory_id}`?") from None
            raise
    print_json(report.to_dict()) if as_json else print_restore(ctx, report, show_all)


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
    print_json(report.to_dict()) if as_json else print_check(report)
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
    from ..transfer import copy_into

    ctx.obj["location"] = source
    with MemoryStore(source, create=False) as store:
        ctx.obj["location"] = target  # a database error from here on is the target's
        report = copy_into(store.engine, target)
    if as_json:
        return print_json(report.to_dict())
    rows = report.rows
    search = f"; vector search: {report.vector_search}" if report.vector_search else ""
    click.echo(
        f"copied {rows['memories']} memories, {rows['memory_archive']} archived, {rows['consolidation_runs']} runs, "
        f"{rows['memory_vectors']} vectors and {rows['contradiction_flags']} flags to {report.target}{search}"
    )
