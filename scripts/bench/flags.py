"""The nightly contradict phase on an agent-like store: what it costs and how many flags it raises.

    .venv/bin/python -m scripts.bench.flags [--size 100000] [--writes 1000] [--runs 5]

A store of ``--size`` memories made of agent-like streams, one namespace each (scripts/flag_streams.py's
generators with fresh seeds: people, projects, operations, contacts; event logs, identifiers, lists,
paraphrases and real changes), embedded by the real model (the offline model, ``--model-dir``),
and one contradict run over all of it. Then ``--writes`` new memories (the last memories of streams
drawn at random, which the store did not have yet) and the nightly run that follows them, timed
(median of ``--runs``, each on a fresh copy of the same state):

* ``statements``: today's contradict phase (pairs from cosine ``CANDIDATE_AT``, a flag when
  `memstore.semantic.statements.conflict` reads one at ``FLAG_AT``);
* ``classifier``: the phase as it was before issue 41 (pairs from ``RELATED_AT``, a flag whenever the
  pair classifier's text rules see a change), in the same process on the same state.

Reported: the phase's seconds for each, their ratio (target: statements <= classifier), the pairs
each compared, and flags per 1,000 writes. Only pairs with a new memory are compared (the marks of
the first run), so both costs follow the writes, not the store.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from memstore import MemoryStore
from memstore.defaults import DAY_MS
from memstore.semantic import phases, statements
from memstore.semantic.pairs import RELATED_AT, contradiction_reason
from scripts import REPO, flag_streams
from scripts.stores import copy_store

DAY = DAY_MS
START = 1_700_000_000_000


def stream_memories(kind: str, name: str, seed: int) -> list[dict]:
    stream = flag_streams.Stream(name, kind, random.Random(f"{seed}-{name}"))
    flag_streams.MAKERS[kind](stream)
    return stream.memories


def make_records(size: int, writes: int, seed: int) -> tuple[list[dict], list[dict]]:
    """About `size` memories of agent-like streams, one namespace each (one agent's world: its
    people, its codebase, its operations, its contacts): the store before the night (each stream
    but its last memories), and `writes` new memories (the last memories of streams drawn at random,
    in time order)."""
    rng = random.Random(f"{seed}-flags")
    kinds = list(flag_streams.MAKERS)
    before: list[dict] = []
    later: list[list[dict]] = []
    n = 0
    while len(before) + sum(map(len, later)) < size:
        kind = kinds[n % len(kinds)]
        memories = stream_memories(kind, f"s{n:06d}", seed)
        rows = [{"id": m["id"], "namespace": f"{kind}-{n:06d}", "text": m["text"], "timestamp": START + m["day"] * DAY} for m in memories]
        cut = len(rows) - max(1, len(rows) // 7)
        before += rows[:cut]
        later.append(rows[cut:])
        n += 1
    rng.shuffle(later)
    new = [row for rows in later for row in rows][:writes]
    return before[: size - len(new)], new


@contextmanager
def classifier_rule():
    """The contradict phase as it was: pairs from RELATED_AT, flagged on the classifier's text rules."""

    def old(older: str, newer: str) -> statements.Conflict | None:
        reason = contradiction_reason(older, newer)
        return None if reason is None else statements.Conflict(reason, "", "", 1.0, reason)

    saved = phases.conflict, phases.CANDIDATE_AT
    phases.conflict, phases.CANDIDATE_AT = old, RELATED_AT
    try:
        yield
    finally:
        phases.conflict, phases.CANDIDATE_AT = saved


def nightly(state: Path, run: Path) -> tuple[float, dict]:
    copy_store(state, run, sync=True)
    with MemoryStore(run) as store:
        started = time.perf_counter()
        report = store.maintain(["contradict"], namespace=None)
        seconds = time.perf_counter() - started
    phase = report.phases[0]
    if phase.status != "ok":
        raise SystemExit(f"contradict {phase.status}: {phase.error}")
    return seconds, {"compared": phase.counts.get("compared"), "pairs": phase.counts.get("pairs"), "flags": len(phase.flags)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.bench.flags", description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--writes", type=int, default=1_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--model-dir", type=Path, default=REPO / ".model-cache" / "minilm")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--no-targets", action="store_true", help="print a missed speed target but do not fail on it (a run too small to judge speed)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="memstore-bench-flags-", dir=args.workdir) as tmp:
        state, run = Path(tmp) / "state.db", Path(tmp) / "run.db"
        base, new = make_records(args.size, args.writes, args.seed)
        started = time.perf_counter()
        with MemoryStore(state) as store:
            store.add_many(base)
            store.enable_embeddings(args.model_dir)
            store.sync_embeddings()
            first = store.maintain(["contradict"], namespace=None).phases[0]
            store.add_many(new)
            store.sync_embeddings()
        built = time.perf_counter() - started
        figures: dict[str, dict] = {}
        for n in range(args.runs):  # the two rules take turns: on a shared machine timings drift
            for name, rule in (("statements", contextmanager(lambda: iter([None]))), ("classifier", classifier_rule)):
                with rule():
                    seconds, counts = nightly(state, run)
                entry = figures.setdefault(name, {"seconds": [], **counts})
                entry["seconds"].append(seconds)
                print(f"  run {n + 1} {name}: {seconds:.3f} s, {counts}", file=sys.stderr)
    out = {"size": len(base) + len(new), "writes": len(new), "namespaces": len({row["namespace"] for row in base + new}), "built_seconds": round(built, 1),
           "first_run_flags": len(first.flags), "first_run_pairs": first.counts.get("pairs")}  # fmt: skip
    for name, entry in figures.items():
        out[name] = {"median_seconds": round(statistics.median(entry["seconds"]), 4), "pairs": entry["pairs"], "compared": entry["compared"],
                     "flags": entry["flags"], "flags_per_1000_writes": round(1000 * entry["flags"] / len(new), 1)}  # fmt: skip
    out["ratio"] = round(out["statements"]["median_seconds"] / out["classifier"]["median_seconds"], 3)
    if args.json:
        print(json.dumps(out))
    else:
        print(f"store: {out['size']:,} memories over {out['namespaces']:,} namespaces (built and embedded in {out['built_seconds']} s); "
              f"the nightly contradict run after {out['writes']:,} writes, median of {args.runs}:")
        print(f"| {'rule':<11} | {'seconds':>8} | {'pairs':>6} | {'flags':>5} | {'flags / 1,000 writes':>20} |")
        print(f"|{'-' * 13}|{'-' * 10}|{'-' * 8}|{'-' * 7}|{'-' * 22}|")
        for name in ("statements", "classifier"):
            f = out[name]
            print(f"| {name:<11} | {f['median_seconds']:>8.3f} | {f['pairs']:>6} | {f['flags']:>5} | {f['flags_per_1000_writes']:>20} |")
        print(f"statements / classifier: {out['ratio']} (target <= 1.0)")
    return 0 if out["ratio"] <= 1.0 or args.no_targets else 1


if __name__ == "__main__":
    sys.exit(main())
