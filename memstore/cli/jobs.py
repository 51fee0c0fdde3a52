"""The jobs and the checks around them: consolidate, prune, maintain, report, verify."""

from __future__ import annotations

import click

from ..defaults import RECALL_CHECK_K, MIN_AGE_DAYS, NEAR_DUPLICATE_THRESHOLD, STALE_THRESHOLD
from ..validate import CAPACITY_MAX
from .options import (
    CHECKS_MODE_HELP, Fraction, all_archived_option, checks_options, chosen_namespace, explain_empty, int64, json_option, list_kept_option, mode_option, namespace_options,
    open_store, parse_now, read_checks_file,
)  # fmt: skip
from .render import checks_document, print_checks, print_inventory, print_json, print_maintain, print_run


@click.command()
@click.option("--capacity", "-c", type=int64(0, CAPACITY_MAX), required=True, help="Unpinned memories to keep per namespace.")
@namespace_options
@click.option("--dry-run", is_flag=True, help="Show what would happen; write nothing.")
@click.option("--full", is_flag=True, help="Deduplicate every key, not only those written since the last run.")
@checks_options()
@list_kept_option
@all_archived_option
@json_option
@click.pass_context
def consolidate(ctx, capacity, namespace, all_namespaces, dry_run, full, checks, k, mode, list_kept, show_all, as_json) -> None:
    """Deduplicate, then evict to a capacity.

    Stage 1 keeps the newest memory of each normalised key; Stage 2 keeps the CAPACITY
    highest-ranked unpinned memories per namespace. Losers are archived, never deleted,
    and `memstore restore --run N` undoes the run. With --checks, the run is applied only if
    every recall check still passes against its result. The report counts what was archived
    and kept and names the first archived memories (--all: every one; --json always names
    every one); --list-kept also names every kept id.

    \b
    Example:
        memstore consolidate --capacity 500 --dry-run
        memstore consolidate --capacity 500 --all-namespaces
    """
    namespace = chosen_namespace(namespace, all_namespaces)
    check_list = read_checks_file(checks)
    report = open_store(ctx).consolidate(
        capacity, namespace, dry_run=dry_run, full=full, list_kept=list_kept, checks=check_list, k=k, check_mode=mode
    )
    if as_json:
        return print_json(report.to_dict())
    print_run(ctx, report, show_all)


@click.command()
@namespace_options
@click.option("--stale-threshold", type=Fraction(0, 1), default=STALE_THRESHOLD, show_default=True)
@click.option("--min-age-days", type=int64(0), default=MIN_AGE_DAYS, show_default=True)
@click.option("--now", default=None, metavar="DATE", help="Reference date (ISO) for staleness; default: now.")
@click.option("--dry-run", is_flag=True, help="Show what would happen; write nothing.")
@checks_options()
@list_kept_option
@all_archived_option
@json_option
@click.pass_context
def prune(ctx, namespace, all_namespaces, stale_threshold, min_age_days, now, dry_run, checks, k, mode, list_kept, show_all, as_json) -> None:
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
        dry_run=dry_run, list_kept=list_kept, checks=check_list, k=k, check_mode=mode,
    )  # fmt: skip
    if as_json:
        return print_json(result.to_dict())
    print_run(ctx, result, show_all)


@click.command()
@click.option("--phases", default=None, metavar="A,B", help="Only these phases (of check, expire, dedup, semantic, contradict, stale, evict, verify).")
@namespace_options
@click.option("--capacity", "-c", type=int64(0, CAPACITY_MAX), default=None, help="Unpinned memories to keep per namespace (evict; skipped without it).")
@click.option("--dry-run", is_flag=True, help="Show what every phase would do; write nothing.")
@click.option("--duplicate-at", type=Fraction(0, 1), default=None, help="Cosine at which a pair may be one fact (default: the classifier's, see docs/semantic.md).")
@click.option("--related-at", type=Fraction(0, 1), default=None, help="Cosine below which pairs are not compared (default: the classifier's).")
@click.option("--stale-threshold", type=Fraction(0, 1), default=STALE_THRESHOLD, show_default=True)
@click.option("--min-age-days", type=int64(0), default=MIN_AGE_DAYS, show_default=True)
@click.option("--stale", is_flag=True, help="Let the stale phase archive idle memories (without it the phase is skipped).")
@checks_options("Recall checks (JSON list of {query, expect_id}) for the verify phase, which runs after the others have committed: a failure exits 1 and holds nothing back (restore --run N undoes a phase).")
@click.option("--resolve-updates", is_flag=True, help="Let contradict supersede the older side of each flag it raises at the confidence docs/semantic.md justifies (one run; restore undoes it).")
@click.option("--fail-on-new-flags", is_flag=True, help="Exit 1 when the run raised contradiction flags (for cron: a person has something to settle).")
@all_archived_option
@json_option
@click.pass_context
def maintain(ctx, phases, namespace, all_namespaces, capacity, dry_run, duplicate_at, related_at, stale_threshold,
             min_age_days, stale, checks, k, mode, resolve_updates, fail_on_new_flags, show_all, as_json) -> None:  # fmt: skip
    """Run the maintenance phases: check, expire, dedup, semantic, contradict, stale, evict, verify.

    In that order, each one transaction and one run; a phase that changes nothing records
    no run. The phase runs are grouped under one run of kind maintain: `memstore restore
    --run M` undoes the whole invocation, newest phase first (`restore --run N` one phase).
    Each phase names the first memories it archived, with their texts (--all: every one). A failed phase is reported and the others
    run, except those needing its result, which are skipped; exit 1 if any failed. semantic
    and contradict need embeddings (they embed what is pending first); stale archives only
    with --stale; evict needs --capacity; verify runs --checks if given. New contradiction
    flags end the report with the two commands that settle each one.

    \b
    Example:
        memstore maintain --dry-run --capacity 5000
        memstore maintain --capacity 5000 --checks checks.json --fail-on-new-flags
    """
    namespace = chosen_namespace(namespace, all_namespaces)
    report = open_store(ctx).maintain(
        None if phases is None else [name.strip() for name in phases.split(",") if name.strip()],
        namespace=namespace, capacity=capacity, checks=read_checks_file(checks), k=k, dry_run=dry_run,
        duplicate_at=duplicate_at, related_at=related_at, stale_threshold=stale_threshold, min_age_days=min_age_days,
        check_mode=mode, stale=stale, resolve_updates=resolve_updates,
    )  # fmt: skip
    print_json(report.to_dict()) if as_json else print_maintain(ctx, report, show_all)
    if not report.ok or (fail_on_new_flags and not dry_run and report.new_flags):
        ctx.exit(1)


@click.command()
@namespace_options
@click.option("--now", default=None, metavar="DATE", help="Reference date (ISO) for ages and staleness; default: now.")
@click.option("--near-threshold", type=Fraction(0.5, 1.0), default=NEAR_DUPLICATE_THRESHOLD, show_default=True, help="Jaccard similarity for near-duplicates.")
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
    given, namespace = namespace is not None, chosen_namespace(namespace, all_namespaces)
    store = open_store(ctx)
    result = store.report(namespace, now=parse_now(now), near_threshold=near_threshold)
    if not result["total_records"]:
        explain_empty(store, namespace, given)
    print_json(result) if as_json else print_inventory(result)


@click.command()
@click.argument("checks", type=click.File("rb"))
@click.option("-k", "k", type=int64(1), default=RECALL_CHECK_K, show_default=True, help="Recall depth.")
@mode_option(CHECKS_MODE_HELP)
@json_option
@click.pass_context
def verify(ctx, checks, k, mode, as_json) -> None:
    """Check that recall still finds what it must.

    CHECKS is a JSON list of {"query", "expect_id"} (optionally "namespace"). A check
    passes when expect_id, or the memory that superseded it, is in the top k of recall,
    ranked as `memstore recall` ranks by default (hybrid when the store has vectors) unless
    --mode says otherwise. Exit 0 when every check passes, 1 otherwise. Recall counts are
    not touched.

    \b
    Example:
        memstore verify checks.json -k 3
    """
    check_list = read_checks_file(checks)
    results = open_store(ctx).verify(check_list, k, mode=mode)
    print_json(checks_document(results)) if as_json else print_checks(results, k)
    if not all(r.passed for r in results):
        ctx.exit(1)
