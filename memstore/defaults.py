"""The defaults every face shares, named once: the CLI, the Python API, the MCP server and the
LangGraph store use these names, never the numbers.

A threshold tuned with its rule stays beside the rule, and a face that offers it takes it from
there: the classifier's `DUPLICATE_AT` and `RELATED_AT` (memstore.semantic.pairs), the report's
`CONTRADICTION_THRESHOLD` and `STALE_AFTER_DAYS` (memstore.hygiene), hybrid recall's `LEXICAL_WEIGHT`
(memstore.recall.fusion). The one unit of time the rules count in days is here too (`DAY_MS`)."""

from __future__ import annotations

# Where a memory goes when nobody names a namespace.
DEFAULT_NAMESPACE = "default"
# A memory's importance when nobody gives one (1 .. 5).
DEFAULT_IMPORTANCE = 3
# How many memories recall returns.
RECALL_K = 5
# Full text, vectors, or both fused; without a mode, recall is hybrid when the store has vectors.
RECALL_MODES = ("lexical", "semantic", "hybrid")
# How deep a recall check looks for its memory.
RECALL_CHECK_K = 3
# Stale memories (the hygiene procedure): archived when staleness reaches the threshold and the
# memory has been idle at least this many days.
STALE_THRESHOLD = 0.8
MIN_AGE_DAYS = 90
# Jaccard similarity at which the report calls two memories near-duplicates.
NEAR_DUPLICATE_THRESHOLD = 0.8

# A day in Unix milliseconds, the unit every stored instant is in (ages in days, a week ahead, ...).
DAY_MS = 86_400_000
