"""Runs: list them or show one whole (runs), and undo one or bring one archived memory back (restore)."""

from __future__ import annotations

import click

from ..errors import NotFoundError
from .options import int64, json_option, open_store
from .render import FIRST_ARCHIVED, print_json, print_restore, print_run_whole, print_runs


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
