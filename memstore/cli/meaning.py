"""Meaning: recall, embeddings, and the contradiction flags a person resolves."""

from __future__ import annotations

import sys

import click

from ..defaults import RECALL_K
from ..flag_review import FLAG_PAGE_MAX
from ..records import now_ms
from ..semantic.flags import FLAG_FILTERS
from ..validate import parse_ttl
from .options import as_of_option, chosen_namespace, explain_empty, int64, json_option, mode_option, namespace_options, open_store
from .render import plural, print_dismissed, print_flags, print_found_archived, print_json, print_recalled


@click.command()
@click.argument("query")
@click.option("-k", "k", type=int64(1), default=RECALL_K, show_default=True, help="How many memories.")
@namespace_options
@click.option("--archived", is_flag=True, help="Search the archive instead (full text; with --all-namespaces, every namespace's).")
@click.option("--no-touch", is_flag=True, help="Do not count this as a recall.")
@mode_option("Full-text, vectors, or both fused (default: hybrid when the store has vectors, else lexical).")
@as_of_option
@json_option
@click.pass_context
def recall(ctx, query, k, namespace, all_namespaces, archived, no_touch, mode, as_of, as_json) -> None:
    """Find the memories that best match QUERY.

    Full-text search over the live set, and with embeddings (memstore embeddings) search
    by meaning, the two rankings fused; best match first (ties by id). Each memory
    returned gets recall_count + 1 and last_recalled_at = now, unless --no-touch. With
    --as-of, among the memories live at that moment (nothing is counted). With
    --archived, full-text search over what left the live set, to bring one back with
    `memstore restore ID`.

    \b
    Example:
        memstore recall "office wifi guests" -k 3
        memstore recall "office wifi" --as-of 2026-11-24T18:00:00Z
        memstore recall "japanese" --archived --all-namespaces
    """
    given, namespace = namespace is not None, chosen_namespace(namespace, all_namespaces)
    store = open_store(ctx)
    if archived:
        if mode is not None or as_of is not None:
            raise click.UsageError("--archived searches the archive's texts: it takes no --mode or --as-of")
        rows = store.search_archive(query, k, namespace)
    elif namespace is None:
        raise click.UsageError("--all-namespaces goes with --archived; recall reads one namespace")
    else:
        rows = store.recall(query, k, namespace, touch=not no_touch, mode=mode, as_of=as_of)
    if not rows:
        explain_empty(store, namespace, given, refuse=False)  # an agent may recall before its first write
    if as_json:
        return print_json(rows)
    print_found_archived(rows) if archived else print_recalled(rows)


@click.group()
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
    click.echo(f"embeddings enabled: {chosen['model']} ({chosen['dim']} dimensions, from {chosen['source']}); vector search: {chosen['search']}")
    if chosen["notice"]:
        click.echo(f"notice: {chosen['notice']}")


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
    click.echo(f"embedded {plural(result['embedded'], 'memory', 'memories')} with {result['model']}")


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
        click.echo(f"model {status['model']} ({status['dim']} dimensions, from {status['source']}); {plural(status['pending'], 'memory', 'memories')} pending; vector search: {status['search']}")
        if status["notice"]:
            click.echo(f"notice: {status['notice']}")


# Flags a page of `memstore flags` shows unless told otherwise.
FLAGS_SHOWN = 20


def _ago(value: str | None, option: str) -> int | None:
    """A duration (30d, 12h) as the moment that long before now (Unix ms)."""
    return None if value is None else now_ms() - int(parse_ttl(value, option) * 1000)


def flag_filter_options(fn):
    fn = click.option("--newer-than", default=None, metavar="DURATION", help="Only flags raised within this long (30d, 12h).")(fn)
    fn = click.option("--older-than", default=None, metavar="DURATION", help="Only flags raised at least this long ago (7d, 12h).")(fn)
    fn = click.option("--reason", default=None, metavar="TEXT", help="Only flags whose reason holds TEXT (number, value, negation, swapped).")(fn)
    return namespace_options(fn)


@click.group(invoke_without_command=True)
@flag_filter_options
@click.option("--status", type=click.Choice(FLAG_FILTERS), default="open", show_default=True, help="Which flags: by status, or all.")
@click.option("--sort", type=click.Choice(["newest", "strongest", "oldest"]), default="newest", show_default=True,
              help="Raised last first, strongest first (the contradict phase's confidence, then the cosine), or raised first first (ties by flag id).")  # fmt: skip
@click.option("--limit", type=int64(1, FLAG_PAGE_MAX), default=FLAGS_SHOWN, show_default=True, help="Flags per page.")
@click.option("--offset", type=int64(0), default=0, help="Skip the first N flags (the next page).")
@json_option
@click.pass_context
def flags(ctx, namespace, all_namespaces, reason, older_than, newer_than, status, sort, limit, offset, as_json) -> None:
    """List contradiction flags (the open ones by default), a page at a time.

    Each flag is a pair the contradict phase found may contradict each other, with both
    texts, their dates, what differs and why it was raised; the newer side is marked as
    probably current. `memstore supersede OLD --by NEW` resolves it, `memstore flags
    dismiss N` says the pair is fine, `memstore flags dismiss --reason ... --expect N`
    dismisses every flag a filter picks, as one run one restore undoes. A flag follows its
    memories: it closes when a side is forgotten, superseded, merged or expires (that is
    its verdict) and moves to the new version when a side is updated. --status
    resolved|dismissed|all lists the settled ones with how, when and by which run. When
    the namespace holds none, the namespaces that do are named.

    \b
    Example:
        memstore flags
        memstore flags --all-namespaces --sort strongest --reason number
        memstore flags --status all
        memstore flags dismiss 3
    """
    if ctx.invoked_subcommand is not None:
        return
    given, chosen = namespace is not None, chosen_namespace(namespace, all_namespaces)
    store = open_store(ctx)
    page = store.flag_page(
        chosen, status=status, reason=reason, flagged_before=_ago(older_than, "--older-than"),
        flagged_after=_ago(newer_than, "--newer-than"), sort=sort, limit=limit, offset=offset,
    )  # fmt: skip
    if not page["flags"] and (given or not page["elsewhere"]):
        explain_empty(store, chosen, given)
    print_json(page) if as_json else print_flags(ctx, page, settled=status != "open")


@flags.command("dismiss")
@click.argument("flag_ids", metavar="[N]...", type=int64(1), nargs=-1)
@flag_filter_options
@click.option("--expect", type=int64(1), default=None, help="With a filter: how many flags it picks (what `memstore flags` said); required.")
@json_option
@click.pass_context
def flags_dismiss(ctx, flag_ids, namespace, all_namespaces, reason, older_than, newer_than, expect, as_json) -> None:
    """Dismiss flags: the pairs do not contradict each other; they are not flagged again.

    Name the flags (N...), or give the filter `memstore flags` was given and --expect with
    the number it listed: every open flag it picks is dismissed (if the number differs,
    nothing is). One run either way: `memstore restore --run R` opens them all again.

    \b
    Example:
        memstore flags dismiss 3
        memstore flags dismiss -n assistant --reason number --older-than 7d --expect 20
    """
    store = open_store(ctx)
    filtered = any(value is not None for value in (namespace, reason, older_than, newer_than, expect)) or all_namespaces
    if flag_ids and filtered:
        raise click.UsageError("name flags, or give a filter with --expect, not both")
    if flag_ids:
        done = store.dismiss_flags(list(flag_ids))
    elif not filtered:
        raise click.UsageError("name the flags to dismiss, or give a filter (-n, --all-namespaces, --reason, --older-than, --newer-than) with --expect N")
    else:
        if expect is None:
            raise click.UsageError("--expect N: say how many flags the filter picks (what `memstore flags` listed with it)")
        done = store.dismiss_flags(
            namespace=chosen_namespace(namespace, all_namespaces), reason=reason, flagged_before=_ago(older_than, "--older-than"),
            flagged_after=_ago(newer_than, "--newer-than"), expect=expect,
        )  # fmt: skip
    print_json(done) if as_json else print_dismissed(ctx, done)
