"""Meaning: recall, embeddings, and the contradiction flags a person resolves."""

from __future__ import annotations

import sys

import click

from ..defaults import DEFAULT_NAMESPACE, RECALL_K
from ..semantic.flags import FLAG_FILTERS
from .options import as_of_option, chosen_namespace, int64, json_option, mode_option, namespace_options, open_store
from .render import echo, print_flags, print_json, print_recalled, print_undo


@click.command()
@click.argument("query")
@click.option("-k", "k", type=int64(1), default=RECALL_K, show_default=True, help="How many memories.")
@click.option("--namespace", "-n", default=DEFAULT_NAMESPACE, show_default=True)
@click.option("--no-touch", is_flag=True, help="Do not count this as a recall.")
@mode_option("Full-text, vectors, or both fused (default: hybrid when the store has vectors, else lexical).")
@as_of_option
@json_option
@click.pass_context
def recall(ctx, query, k, namespace, no_touch, mode, as_of, as_json) -> None:
    """Find the memories that best match QUERY.

    Full-text search over the live set, and with embeddings (memstore embeddings) search
    by meaning, the two rankings fused; best match first (ties by id). Each memory
    returned gets recall_count + 1 and last_recalled_at = now, unless --no-touch. With
    --as-of, among the memories live at that moment (nothing is counted).

    \b
    Example:
        memstore recall "office wifi guests" -k 3
        memstore recall "office wifi" --as-of 2026-11-24T18:00:00Z
    """
    rows = open_store(ctx).recall(query, k, namespace, touch=not no_touch, mode=mode, as_of=as_of)
    print_json(rows) if as_json else print_recalled(rows)


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
        click.echo(f"model {status['model']} ({status['dim']} dimensions, from {status['source']}); {status['pending']} memories pending; vector search: {status['search']}")
        if status["notice"]:
            click.echo(f"notice: {status['notice']}")


@click.group(invoke_without_command=True)
@namespace_options
@click.option("--status", type=click.Choice(FLAG_FILTERS), default="open", show_default=True, help="Which flags: by status, or all.")
@json_option
@click.pass_context
def flags(ctx, namespace, all_namespaces, status, as_json) -> None:
    """List contradiction flags (the open ones by default); settle one with `memstore supersede`.

    Each flag is a pair the contradict phase found may contradict each other; the newer
    side is marked as probably current. `memstore supersede OLD --by NEW` resolves it,
    `memstore flags dismiss N` says the pair is fine. A flag follows its memories: it
    closes when a side is forgotten, superseded, merged or expires (that is its verdict)
    and moves to the new version when a side is updated. --status resolved|dismissed|all
    lists the settled ones with how, when and by which run.

    \b
    Example:
        memstore flags
        memstore flags --status all
        memstore flags dismiss 3
    """
    if ctx.invoked_subcommand is not None:
        return
    rows = open_store(ctx).flags(chosen_namespace(namespace, all_namespaces), status=status)
    print_json(rows) if as_json else print_flags(rows, settled=status != "open")


@flags.command("dismiss")
@click.argument("flag_id", metavar="N", type=int64())
@json_option
@click.pass_context
def flags_dismiss(ctx, flag_id, as_json) -> None:
    """Dismiss flag N: the pair does not contradict itself; it is not flagged again.

    A run of its own: `memstore restore --run R` opens the flag again.

    \b
    Example:
        memstore flags dismiss 3
    """
    done = open_store(ctx).dismiss_flag(flag_id)
    if as_json:
        return print_json(done)
    echo(f"run {done['run_id']}: flag {flag_id} dismissed")
    print_undo(ctx, done["run_id"])
