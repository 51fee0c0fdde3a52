"""The health charts: the overview's, from the run records it reads (never the memories), and the
report page's staleness histogram, from the report's scores (which read the namespace's rows).

Which run goes on which line is decided here, once: `live_before` and `kept` count a whole
namespace's live set (or the store's, for a run over every namespace) only for the jobs; a forget,
an update, a supersede or a dismissal counts just what it touched (1 or 2), so it is left off the
lines instead of dragging them to the floor. A run over every namespace goes on the store's line,
a run of one namespace on that namespace's; undone runs are drawn hollow or faded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from markupsafe import Markup

from . import charts

# The run kinds whose `live_before`/`kept` are a namespace's (or the store's) whole live set.
JOB_KINDS = frozenset({"consolidate", "prune", "dedup", "evict", "stale", "semantic", "contradict", "expire"})
# What a run archives, by reason, as the bars stack it (the run record's own count columns).
ARCHIVED = (("duplicates", "duplicates"), ("evicted", "evicted"), ("expired", "expired"), ("stale", "stale"))
# The staleness histogram's bins (seed 002's score runs from 0 to 1; the last bin holds 1.0).
STALENESS_BINS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)


def _label(run: dict[str, Any]) -> charts.Point:
    return charts.Point(f"#{run['id']}", undone=run["status"] == "restored")


def live_chart(runs: Sequence[dict[str, Any]], namespace: str, shown: str) -> Markup:
    """Live memories before and after each job run: the whole store's (runs over every namespace)
    and `namespace`'s, each on its own line; `shown` is the namespace as the page writes it."""
    jobs = [run for run in runs if run["kind"] in JOB_KINDS and run["namespace"] in (None, namespace)]
    series: dict[str, list[float | None]] = {}
    if any(run["namespace"] is None for run in jobs):
        series["whole store, before"] = [run["live_before"] if run["namespace"] is None else None for run in jobs]
        series["whole store, kept"] = [run["kept"] if run["namespace"] is None else None for run in jobs]
    if any(run["namespace"] == namespace for run in jobs) or not series:
        series[f"{shown}, before"] = [run["live_before"] if run["namespace"] == namespace else None for run in jobs]
        series[f"{shown}, kept"] = [run["kept"] if run["namespace"] == namespace else None for run in jobs]
    return charts.line_chart(
        "Live memories before and after each job run", [_label(run) for run in jobs], series,
        x_label="job run, oldest to newest (hollow: undone)", y_label="live memories",
    )  # fmt: skip


def archived_chart(runs: Sequence[dict[str, Any]]) -> Markup:
    """What each run that archived something archived, by reason."""
    # A maintain run repeats its phases' counts: its phases are the bars.
    archiving = [run for run in runs if run["kind"] != "maintain" and any(run[column] for column, _ in ARCHIVED)]
    return charts.stacked_bars(
        "What each run archived, by reason", [_label(run) for run in archiving],
        {name: [run[column] for run in archiving] for column, name in ARCHIVED},
        x_label="run, oldest to newest (faded: undone)", y_label="memories archived",
    )  # fmt: skip


def staleness_counts(scores: Sequence[float]) -> list[int]:
    """How many of `scores` (memstore.hygiene.staleness, 0 to 1) fall in each STALENESS_BINS bin."""
    counts = [0] * (len(STALENESS_BINS) - 1)
    for score in scores:
        counts[min(int(score / 0.2), len(counts) - 1)] += 1
    return counts


def staleness_chart(scores: Sequence[float], shown: str) -> Markup:
    """The staleness of a namespace's live memories in five bins (the report page's: `scores` are the report's)."""
    labels = [f"{low:.1f} to {high:.1f}" for low, high in zip(STALENESS_BINS, STALENESS_BINS[1:])]
    return charts.bars(
        f"Staleness of the live memories of {shown}", labels, staleness_counts(scores), x_label="live memories (staleness 0: fresh, 1: stale)"
    )


def health_charts(runs: Sequence[dict[str, Any]], namespace: str, shown: str) -> dict[str, Markup]:
    """The overview's charts: from the run records alone."""
    return {"live": live_chart(runs, namespace, shown), "archived": archived_chart(runs)}


__all__ = ["JOB_KINDS", "STALENESS_BINS", "archived_chart", "health_charts", "live_chart", "staleness_chart", "staleness_counts"]
