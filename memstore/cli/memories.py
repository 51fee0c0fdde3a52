"""Memories, one or many: add, import, export, list, show."""

from __future__ import annotations

import sys

import click

from ..db import refuse_store_file
from ..defaults import DEFAULT_IMPORTANCE, DEFAULT_NAMESPACE
from ..files import replaced_privately
from ..importers import FORMATS
from ..records import memory_state, now_ms
from .options import (
    INTEGER, as_of_option, chosen_namespace, explain_empty, int64, json_option, lifetime_options, namespace_options, open_store, parse_meta,
)  # fmt: skip
from .render import echo, print_import, print_json, print_memories, print_row


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
