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
from .files import replaced_privately
from .io import iso_to_ms, read_checks, write_jsonl
from .migrate import SCHEMA_HEAD
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


def checks_options(fn: Callable) -> Callable:
    fn = click.option("-k", "k", type=click.IntRange(min=1), default=3, show_default=True, help="Recall depth for --checks.")(fn)
    return click.option(
        "--checks", type=click.File("rb"), default=None,
        help="Recall checks (JSON list of {query, expect_id}); apply only if all pass.",
    )(fn)  # fmt: skip


def read_checks_file(file) -> list[dict[str, str]] | None:
    return None if file is None else read_checks(file, getattr(file, "name", "<stdin>"))


def parse_now(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return iso_to_ms(value)
    except ValueError:
        raise click.BadParameter(f"not an ISO date: {value!r}", param_hint="--now") from None


def list_kept_option(fn: Callable) -> Callable:
    return click.option(
        "--list-kept", is_flag=True,
        help='Also list every kept id (JSON: "kept_ids"); this reads the whole live set.',
    )(fn)  # fmt: skip


def parse_meta(meta: str | None) -> Any:
    try:
        return None if meta is None else json.loads(meta)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not valid JSON: {exc.msg}", param_hint="--meta") from None


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
    click.echo(f"store ready at {store.url} (schema {SCHEMA_HEAD})")


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
    row = open_store(ctx, create=True).add(
        text, id=memory_id, namespace=namespace, timestamp=timestamp, importance=importance,
        pinned=pinned, fact_key=fact_key, meta=parse_meta(meta),
    )  # fmt: skip
    print_json(row) if as_json else click.echo(row["id"])


@cli.command("import")
@click.argument("file", type=click.File("rb"))
@click.option("--namespace", "-n", default=None, help="Namespace for records that name none.")
@click.option("--skip-invalid", is_flag=True, help="Write the valid records; report the invalid ones on stderr.")
@json_option
@click.pass_context
def import_(ctx, file, namespace, skip_invalid, as_json) -> None:
    """Import memories from JSON or JSONL.

    FILE is a JSON array or JSON Lines file, or '-' for stdin.

    Every record is validated before anything is written; one bad record stops the import,
    naming its file, line and field, and nothing is written. With --skip-invalid, exactly
    the valid records are written and each skipped one is named on stderr.

    \b
    Example:
        memstore import memories.jsonl
    """
    name = getattr(file, "name", "<stdin>")
    store = open_store(ctx, create=True)
    # A progress bar only for a real file on a terminal: piped output and logs stay quiet.
    if name != "<stdin>" and sys.stderr.isatty():
        with click.progressbar(length=1, label="validating", file=sys.stderr) as bar:

            def advance(line: int, total_lines: int) -> None:
                bar.length = total_lines
                bar.update(line - bar.pos)

            result = store.import_file(file, name, namespace, skip_invalid=skip_invalid, progress=advance)
    else:
        result = store.import_file(file, name, namespace, skip_invalid=skip_invalid)
    for reason in result.rejected:
        click.echo(f"skipped: {reason}", err=True)
    if as_json:
        return print_json({"added": result.added, "unchanged": result.unchanged, "skipped": result.skipped})
    skipped = f"; skipped {result.skipped} invalid records" if skip_invalid else ""
    click.echo(f"imported {result.added} memories ({result.unchanged} already stored){skipped}")


@cli.command()
@click.option("--archived", is_flag=True, help="Export the archive instead of the live set.")
@namespace_options
@click.option("--output", "-o", type=click.Path(dir_okay=False, allow_dash=True), default="-", help="File (default: stdout); a new one is created 0600.")
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
    # A file is written whole or not at all (a failure halfway leaves the old one as it was).
    with click.open_file("-", "w", encoding="utf-8") if output == "-" else replaced_privately(output) as file:
        write_jsonl(rows, file)


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
    print_row(dict(row, state="archived" if row.get("archived_at") is not None else "live"))


def print_row(row: dict[str, Any]) -> None:
    """One memory as `field  value` lines, times also in UTC."""
    row = dict(row, pinned="yes" if row["pinned"] else "no")
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
@click.option("--full", is_flag=True, help="Deduplicate every key, not only those written since the last run.")
@checks_options
@list_kept_option
@json_option
@click.pass_context
def consolidate(ctx, capacity, namespace, all_namespaces, dry_run, full, checks, k, list_kept, as_json) -> None:
    """Deduplicate, then evict to a capacity.

    Stage 1 keeps the newest memory of each normalised key; Stage 2 keeps the CAPACITY
    highest-ranked unpinned memories per namespace. Losers are archived, never deleted,
    and `memstore restore --run N` undoes the run. With --checks, the run is applied only if
    every recall check still passes against its result. The report names what was archived
    and counts what was kept; --list-kept also names every kept id.

    \b
    Example:
        memstore consolidate --capacity 500 --dry-run
        memstore consolidate --capacity 500 --all-namespaces
    """
    namespace = chosen_namespace(namespace, all_namespaces)
    check_list = read_checks_file(checks)
    report = open_store(ctx).consolidate(
        capacity, namespace, dry_run=dry_run, full=full, list_kept=list_kept, checks=check_list, k=k
    )
    if as_json:
        return print_json(report.to_dict())
    print_run(ctx, report)


def print_run(ctx: click.Context, report) -> None:
    """The human summary of a consolidate or prune run."""
    kept = f"{report.kept_count} ({report.pinned_kept} pinned)"
    if report.kind == "prune":
        archived = f"{report.duplicates} duplicates and {report.stale} stale"
    else:
        archived = f"{report.duplicates} duplicates and {report.evicted} evicted"
    if report.dry_run:
        click.echo(f"dry run, nothing written: {report.live_before} live; would keep {kept}, archive {archived}")
    else:
        click.echo(f"run {report.run_id}: {report.live_before} live before; kept {kept}, archived {archived}")
    if report.archived:
        print_table(["archived", "namespace", "reason", "superseded_by"],
                    [[a.id, a.namespace, a.reason, a.superseded_by] for a in report.archived])  # fmt: skip
    if report.kept_ids is not None:
        click.echo(f"kept: {' '.join(report.kept_ids)}")
    for check in report.checks:
        click.echo(f"check {'pass' if check.passed else 'FAIL'}: {check.query!r} expects {check.expect_id}")
    if not report.dry_run and report.archived:
        print_undo(ctx, report.run_id)


def print_undo(ctx: click.Context, run_id: int) -> None:
    db_option = ""
    if ctx.find_root().get_parameter_source("db") == click.core.ParameterSource.COMMANDLINE:
        db_option = f"--db {shlex.quote(ctx.find_root().params['db'])} "
    click.echo(f"undo with: memstore {db_option}restore --run {run_id}")


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
        ["run", "kind", "namespace", "capacity", "started (UTC)", "status", "before", "kept", "duplicates", "evicted", "stale"],
        [[r["id"], r["kind"], r["namespace"] or "(all)", r["capacity"], iso(r["started_at"]), r["status"],
          r["live_before"], r["kept"], r["duplicates"], r["evicted"], r["stale"]] for r in rows],
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


@cli.command()
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
    click.echo(f"run {report.run_id}: forgot {', '.join(entry.id for entry in report.archived)}")
    print_undo(ctx, report.run_id)


@cli.command()
@click.argument("memory_id", metavar="ID")
@click.option("--text", default=None, help="New text.")
@click.option("--importance", "-i", type=int, default=None, help="New importance, 1 .. 5.")
@click.option("--pinned/--unpinned", default=None, help="Pin or unpin.")
@click.option("--meta", default=None, help="New JSON object (replaces the old one).")
@click.option("--timestamp", type=int, default=None, help="Unix milliseconds (default: now).")
@json_option
@click.pass_context
def update(ctx, memory_id, text, importance, pinned, meta, timestamp, as_json) -> None:
    """Correct a memory: write a new version, archive the old one.

    The new version gets a new id and keeps every field not given, the old version's
    created_at and its recall history; the old one is archived as `superseded` by it. The
    new row is printed; `memstore restore --run N` puts the old version back.

    \b
    Example:
        memstore update m7 --text "The API rate limit is 500 rpm."
    """
    row = open_store(ctx).update(
        memory_id, text=text, importance=importance, pinned=pinned, meta=parse_meta(meta), timestamp=timestamp
    )
    if as_json:
        return print_json(row)
    print_row(row)
    print_undo(ctx, row["run_id"])


@cli.command()
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
    click.echo(f"run {report.run_id}: {old} superseded by {by}")
    print_undo(ctx, report.run_id)


@cli.command()
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
    if as_json:
        return print_json(rows)
    print_table(
        ["id", "state", "reason", "superseded_by", "run", "written (UTC)", "text"],
        [[r["id"], r["state"], r["reason"], r["superseded_by"], r["run_id"], iso(r["timestamp"]), r["text"]] for r in rows],
    )


@cli.command()
@click.option("--phases", default=None, metavar="A,B", help="Only these phases (of check, dedup, semantic, contradict, stale, evict, verify).")
@namespace_options
@click.option("--capacity", "-c", type=click.IntRange(min=0), default=None, help="Unpinned memories to keep per namespace (evict; skipped without it).")
@click.option("--dry-run", is_flag=True, help="Show what every phase would do; write nothing.")
@click.option("--duplicate-at", type=click.FloatRange(0, 1), default=None, help="Cosine at which a pair may be one fact (default: the classifier's, see docs/semantic.md).")
@click.option("--related-at", type=click.FloatRange(0, 1), default=None, help="Cosine below which pairs are not compared (default: the classifier's).")
@click.option("--stale-threshold", type=click.FloatRange(0, 1), default=0.8, show_default=True)
@click.option("--min-age-days", type=click.IntRange(min=0), default=90, show_default=True)
@checks_options
@json_option
@click.pass_context
def maintain(ctx, phases, namespace, all_namespaces, capacity, dry_run, duplicate_at, related_at, stale_threshold,
             min_age_days, checks, k, as_json) -> None:  # fmt: skip
    """Run the maintenance phases: check, dedup, semantic, contradict, stale, evict, verify.

    In that order, each one transaction and one run (`memstore restore --run N` undoes it).
    A failed phase is reported and the others run, except those needing its result, which
    are skipped; exit 1 if any failed. semantic and contradict need embeddings (they embed
    what is pending first); evict needs --capacity; verify runs --checks if given.

    \b
    Example:
        memstore maintain --dry-run --capacity 5000
        memstore maintain --capacity 5000 --checks checks.json --json
    """
    namespace = chosen_namespace(namespace, all_namespaces)
    report = open_store(ctx).maintain(
        None if phases is None else [name.strip() for name in phases.split(",") if name.strip()],
        namespace=namespace, capacity=capacity, checks=read_checks_file(checks), k=k, dry_run=dry_run,
        duplicate_at=duplicate_at, related_at=related_at, stale_threshold=stale_threshold, min_age_days=min_age_days,
    )  # fmt: skip
    if as_json:
        print_json(report.to_dict())
    else:
        if dry_run:
            click.echo("dry run, nothing written:")
        for phase in report.phases:
            run = f"run {phase.run_id}" if phase.run_id is not None else ""
            detail = phase.error or ", ".join(f"{key} {value}" for key, value in phase.counts.items())
            click.echo(f"{phase.name:<10}  {phase.status:<7}  {run:<8}  {detail}".rstrip())
            for entry in phase.archived:
                similarity = "" if entry["similarity"] is None else f" (cosine {entry['similarity']:.3f})"
                by = f" -> {entry['superseded_by']}" if entry["superseded_by"] else ""
                click.echo(f"    archived {entry['id']} as {entry['reason']}{by}{similarity}")
            for flag in phase.flags:
                click.echo(f"    flagged {flag['a']} vs {flag['b']} (newer) cosine {flag['similarity']:.3f}: {flag['reason']}")
    if not report.ok:
        ctx.exit(1)


@cli.group(invoke_without_command=True)
@namespace_options
@json_option
@click.pass_context
def flags(ctx, namespace, all_namespaces, as_json) -> None:
    """List the open contradiction flags; resolve one with `memstore supersede`.

    Each flag is a pair the contradict phase found may contradict each other; the newer
    side is marked as probably current. `memstore supersede OLD --by NEW` resolves it,
    `memstore flags dismiss N` says the pair is fine.

    \b
    Example:
        memstore flags
        memstore flags dismiss 3
    """
    if ctx.invoked_subcommand is not None:
        return
    rows = open_store(ctx).flags(chosen_namespace(namespace, all_namespaces))
    if as_json:
        return print_json(rows)
    print_table(
        ["flag", "older", "newer (probably current)", "cosine", "reason"],
        [[r["id"], f"{r['older_id']}: {r['older_text']}", f"{r['newer_id']}: {r['newer_text']}", f"{r['similarity']:.3f}", r["reason"]] for r in rows],
    )


@flags.command("dismiss")
@click.argument("flag_id", metavar="N", type=int)
@click.pass_context
def flags_dismiss(ctx, flag_id) -> None:
    """Dismiss flag N: the pair does not contradict itself; it is not flagged again.

    \b
    Example:
        memstore flags dismiss 3
    """
    open_store(ctx).dismiss_flag(flag_id)
    click.echo(f"flag {flag_id} dismissed")


@cli.group()
def embeddings() -> None:
    """Embeddings for recall by meaning (needs the semantic extra).

    \b
    Example:
        memstore embeddings enable --model /path/to/minilm
        memstore embeddings sync
    """


@embeddings.command("enable")
@click.option("--model", default=None, metavar="NAME|DIR",
              help="A fastembed model name (default: sentence-transformers/all-MiniLM-L6-v2) or a local model directory.")
@json_option
@click.pass_context
def embeddings_enable(ctx, model, as_json) -> None:
    """Record the store's embedding model.

    NAME is downloaded and cached by fastembed once, when online; DIR is a local directory
    with model.onnx and its tokenizer files (scripts/offline-model DIR assembles one). A new
    model makes every memory pending: `memstore embeddings sync` embeds them again.

    \b
    Example:
        memstore embeddings enable --model ~/models/minilm
    """
    chosen = open_store(ctx, create=True).enable_embeddings(model)
    if as_json:
        return print_json(chosen)
    click.echo(f"embeddings enabled: {chosen['model']} ({chosen['dim']} dimensions, from {chosen['source']})")


@embeddings.command("sync")
@json_option
@click.pass_context
def embeddings_sync(ctx, as_json) -> None:
    """Embed the live memories that have no vector from the store's model.

    Incremental: only memories written since the last sync are embedded (every one after a
    model change; archived and restored memories keep their vectors). A progress bar shows
    on a terminal.

    \b
    Example:
        memstore embeddings sync
    """
    store = open_store(ctx)
    if sys.stderr.isatty() and not as_json:
        with click.progressbar(length=max((store.embedding_status() or {}).get("pending", 0), 1), label="embedding", file=sys.stderr) as bar:
            result = store.sync_embeddings(progress=lambda done, total: bar.update(done - bar.pos))
    else:
        result = store.sync_embeddings()
    if as_json:
        return print_json(result)
    click.echo(f"embedded {result['embedded']} memories with {result['model']}")


@embeddings.command("status")
@json_option
@click.pass_context
def embeddings_status(ctx, as_json) -> None:
    """Show the store's embedding model and how many memories wait for a vector.

    \b
    Example:
        memstore embeddings status
    """
    status = open_store(ctx).embedding_status()
    if as_json:
        return print_json(status)
    if status is None:
        click.echo("embeddings are not enabled (memstore embeddings enable)")
    else:
        click.echo(f"model {status['model']} ({status['dim']} dimensions, from {status['source']}); {status['pending']} memories pending")


@cli.command()
@click.argument("query")
@click.option("-k", "k", type=click.IntRange(min=1), default=5, show_default=True, help="How many memories.")
@click.option("--namespace", "-n", default="default", show_default=True)
@click.option("--no-touch", is_flag=True, help="Do not count this as a recall.")
@click.option("--mode", type=click.Choice(["lexical", "semantic", "hybrid"]), default=None,
              help="Full-text, vectors, or both fused (default: hybrid when the store has vectors, else lexical).")
@json_option
@click.pass_context
def recall(ctx, query, k, namespace, no_touch, mode, as_json) -> None:
    """Find the memories that best match QUERY.

    Full-text search over the live set, and with embeddings (memstore embeddings) search
    by meaning, the two rankings fused; best match first (ties by id). Each memory
    returned gets recall_count + 1 and last_recalled_at = now, unless --no-touch.

    \b
    Example:
        memstore recall "office wifi guests" -k 3
    """
    rows = open_store(ctx).recall(query, k, namespace, touch=not no_touch, mode=mode)
    if as_json:
        return print_json(rows)
    print_table(
        ["id", "importance", "recalls", "found by", "text"],
        [[r["id"], r["importance"], r["recall_count"], "+".join(r["found_by"]), r["text"]] for r in rows],
    )


@cli.command()
@namespace_options
@click.option("--now", default=None, metavar="DATE", help="Reference date (ISO) for ages and staleness; default: now.")
@click.option("--near-threshold", type=click.FloatRange(0.5, 1.0), default=0.8, show_default=True, help="Jaccard similarity for near-duplicates.")
@json_option
@click.pass_context
def report(ctx, namespace, all_namespaces, now, near_threshold, as_json) -> None:
    """Inventory: duplicates, near-duplicates, contradictions, staleness.

    Near-duplicates and contradictions are flagged for a person to decide; nothing is
    changed.

    \b
    Example:
        memstore report --now 2026-10-12 --json
    """
    namespace = chosen_namespace(namespace, all_namespaces)
    result = open_store(ctx).report(namespace, now=parse_now(now), near_threshold=near_threshold)
    if as_json:
        return print_json(result)
    click.echo(
        f"{result['total_records']} memories, {result['total_text_chars']} characters; "
        f"{result['pinned']} pinned, {result['never_recalled']} never recalled"
    )
    click.echo(f"days idle: oldest {result['oldest_age_days']}, median {result['median_age_days']}")
    click.echo(f"exact duplicate groups: {len(result['exact_duplicate_groups'])}")
    for group in result["exact_duplicate_groups"]:
        click.echo(f"  {', '.join(group)}")
    click.echo(f"near-duplicate pairs (Jaccard >= {near_threshold}): {len(result['near_duplicate_pairs'])}")
    for pair in result["near_duplicate_pairs"]:
        click.echo(f"  {pair['ids'][0]} ~ {pair['ids'][1]}  {pair['jaccard']}")
    click.echo(f"possible contradictions (review by hand): {len(result['contradiction_flags'])}")
    for flag in result["contradiction_flags"]:
        click.echo(f"  {flag['ids'][0]} vs {flag['ids'][1]}  {flag['reason']} ({flag['jaccard']})")
    click.echo(f"open contradiction flags (memstore flags): {len(result['open_flags'])}")
    for flag in result["open_flags"]:
        click.echo(f"  flag {flag['id']}: {flag['older_id']} vs {flag['newer_id']} (newer)  {flag['reason']}")
    stalest = [s for s in result["staleness"] if s["staleness"] > 0][:10]
    click.echo(f"stalest (of {len(result['staleness'])}):")
    for entry in stalest:
        pin = ", pinned" if entry["pinned"] else ""
        click.echo(f"  {entry['id']}  {entry['staleness']}  ({entry['age_days']} days idle, {entry['recall_count']} recalls{pin})")


@cli.command()
@namespace_options
@click.option("--stale-threshold", type=click.FloatRange(0, 1), default=0.8, show_default=True)
@click.option("--min-age-days", type=click.IntRange(min=0), default=90, show_default=True)
@click.option("--now", default=None, metavar="DATE", help="Reference date (ISO) for staleness; default: now.")
@click.option("--dry-run", is_flag=True, help="Show what would happen; write nothing.")
@checks_options
@list_kept_option
@json_option
@click.pass_context
def prune(ctx, namespace, all_namespaces, stale_threshold, min_age_days, now, dry_run, checks, k, list_kept, as_json) -> None:
    """Archive exact duplicates and stale memories.

    Exact duplicates go by the consolidation rule (the newest copy survives); memories
    whose staleness and days idle reach both thresholds are archived as stale. Pinned
    memories, near-duplicates and contradictions are never archived. One run; undo it
    with `memstore restore --run N`.

    \b
    Example:
        memstore prune --now 2026-10-12 --checks checks.json
    """
    namespace = chosen_namespace(namespace, all_namespaces)
    check_list = read_checks_file(checks)
    result = open_store(ctx).prune(
        namespace, now=parse_now(now), stale_threshold=stale_threshold, min_age_days=min_age_days,
        dry_run=dry_run, list_kept=list_kept, checks=check_list, k=k,
    )  # fmt: skip
    if as_json:
        return print_json(result.to_dict())
    print_run(ctx, result)


@cli.command()
@click.argument("checks", type=click.File("rb"))
@click.option("-k", "k", type=click.IntRange(min=1), default=3, show_default=True, help="Recall depth.")
@json_option
@click.pass_context
def verify(ctx, checks, k, as_json) -> None:
    """Check that recall still finds what it must.

    CHECKS is a JSON list of {"query", "expect_id"} (optionally "namespace"). A check
    passes when expect_id, or the memory that superseded it, is in the top k. Exit 0 when
    every check passes, 1 otherwise. Recall counts are not touched.

    \b
    Example:
        memstore verify checks.json -k 3
    """
    check_list = read_checks_file(checks)
    results = open_store(ctx).verify(check_list, k)
    passed = sum(1 for r in results if r.passed)
    if as_json:
        print_json({"passed": passed, "total": len(results), "checks": [r.__dict__ for r in results]})
    else:
        for r in results:
            via = f" (now {r.resolved_id})" if r.resolved_id not in (None, r.expect_id) else ""
            click.echo(f"{'pass' if r.passed else 'FAIL'}  {r.query!r} expects {r.expect_id}{via}; top {k}: {', '.join(r.top_ids) or '-'}")
        click.echo(f"{passed}/{len(results)} checks passed")
    if passed != len(results):
        ctx.exit(1)


@cli.command()
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
        f"backed up to {result['path']}: {result['memories']} memories, "
        f"{result['memory_archive']} archived, {result['consolidation_runs']} runs"
    )


@cli.command()
@click.option("--fix", is_flag=True, help="Recompute wrong norm_key values, rebuild the recall index and live counts, make the store's files 0600.")
@json_option
@click.pass_context
def check(ctx, fix, as_json) -> None:
    """Check the store is whole and follows memstore's rules.

    integrity_check, norm_key = normalize_key(text) on every row (e.g. after edits in the
    sqlite3 shell), no id both live and archived, schema at head, indexes as the models
    define them, the recall index in step, WAL on, the store's files readable by their owner
    only. Exit 1 on any finding not fixed.

    \b
    Example:
        memstore check --fix
    """
    report = open_store(ctx).check(fix=fix)
    if as_json:
        print_json({"ok": report.ok, "checks": report.checks_run, "findings": [f.__dict__ for f in report.findings]})
    else:
        for finding in report.findings:
            click.echo(f"{'fixed' if finding.fixed else 'FOUND'}  {finding.check}: {finding.detail}")
        click.echo(f"{'ok' if report.ok else 'problems found'}: {len(report.checks_run)} checks, {len(report.findings)} findings")
    if not report.ok:
        ctx.exit(1)


@cli.command("mcp")
@click.option("--namespace", "-n", default="default", show_default=True, help="The one namespace this server reads and writes.")
@click.option("--http", "address", metavar="HOST:PORT", default=None, help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio.")
@click.option(
    "--token", envvar="MEMSTORE_MCP_TOKEN", default=None,
    help="HTTP only: every request must carry 'Authorization: Bearer TOKEN'. Required for a non-loopback HOST. Env: MEMSTORE_MCP_TOKEN.",
)  # fmt: skip
@click.pass_context
def mcp_(ctx, namespace, address, token) -> None:
    """Serve the store to an AI agent over MCP (Model Context Protocol).

    Tools: remember, recall, forget, update, show, consolidate, report, all on one
    namespace. Speaks stdio (for an MCP host that starts it) unless --http is given.
    Logs go to stderr. Needs the mcp extra: pip install 'memstore[mcp]'.

    \b
    Example:
        memstore --db ~/agent.db mcp --namespace assistant
        MEMSTORE_MCP_TOKEN=s3cret memstore --db ~/agent.db mcp --http 0.0.0.0:8765
    """
    try:
        from .mcp import serve
    except ImportError as exc:
        if (exc.name or "").partition(".")[0] == "memstore":
            raise
        raise click.ClickException("the MCP server needs the mcp extra: pip install 'memstore[mcp]'") from None
    serve(ctx.obj["location"], namespace=namespace, http=address, token=token)


def main() -> None:
    try:
        cli(prog_name="memstore")
    except Exception as exc:  # a bug of ours must still not print a traceback at a user
        click.echo(f"Error: unexpected {type(exc).__name__}: {exc}", err=True)
        sys.exit(1)
