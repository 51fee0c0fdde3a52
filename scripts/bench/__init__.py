"""Benchmark memstore against the raw sqlite3 module: import, add, consolidation, recall, near-duplicates.

    .venv/bin/python -m scripts.bench [--quick] [--sizes 10000 100000 1000000] [--repeats 3]
                                      [--seed 1] [--output bench-results/bench.json] [--only PART]

One process run generates a synthetic store per size (``generate_records`` of scripts/data.py:
~100-character texts, 30 % near-duplicate variants, 3 % exact copies, 1 % pinned), runs every
scenario below, and prints a table of medians and ratios against a baseline measured in the same
run with the stdlib ``sqlite3`` module on the same schema (a file made by ``MemoryStore(path)``,
so the same indexes and FTS triggers; same pragmas: WAL, synchronous FULL, foreign_keys ON) with
rows prepared beforehand (norm_key computed outside the timing; seq is assigned by SQLite on both sides). Capacity is size // 10.

Scenarios (memstore side / baseline side):

* ``bulk``: ``add_many(records)`` on a fresh store, validation and normalisation included /
  one ``BEGIN IMMEDIATE; executemany(INSERT ...); COMMIT``. Target ratio baseline/memstore >= 0.50.
* ``add``: ``MemoryStore.add`` of ``--adds`` records (default 300), one transaction each, onto a
  copy of the imported store / ``BEGIN IMMEDIATE; INSERT; COMMIT`` per record. Target >= 0.30.
* ``consolidate_full``: ``consolidate(capacity, full=True, list_kept=False)`` on a copy of the
  imported store / the bare SQL of one run (run row, Stage 1 window INSERT INTO memory_archive,
  DELETE, Stage 2 INSERT ... NOT IN (ORDER BY ... LIMIT capacity), DELETE) in one transaction on
  another copy. Target memstore/baseline <= 1.3.
* ``consolidate_incr``: after that full run, 1,000 new writes via ``add_many`` (300 exact repeats of
  live texts, 200 case/punctuation variants of live texts (same key), 300 new at importance 5 that
  push past capacity, 200 new at random importance); then ``consolidate(capacity, list_kept=False)``
  end to end (incremental) vs ``full=True`` on a copy of the same state. Targets: incremental /
  full <= 0.10 at 1,000,000, and incremental(1,000,000) / incremental(100,000) <= 1.5. For
  reference, the floor under any run with the same outcome: a run row plus one bare archive copy
  and one delete per row the incremental run archived, in one transaction (same triggers, indexes).
* ``live_store``: the same 1,000 writes and runs on a live store of about the generated size (the
  issue's "live store grows tenfold from 100,000 to 1,000,000"): a first full run at capacity = size
  archives only duplicates, then capacity = the unpinned memories left, so the store is exactly
  full and the writes push past it. With capacity size // 10 above, the live store is only ~size/10.
* ``recall``: p50 of ``recall(query, k=5, touch=False)`` over ``--queries`` queries (default 200) of
  2-3 words, on the imported (unconsolidated) store / the one-statement FTS5 ranking through sqlite3
  over the words recall searched on (``fulltext.query_words``; the answers are compared and must be
  identical for every query carrying a rarer word; a query made only of common words is ranked by
  its own rule, among its namespace's newest memories holding them). Two query mixes: ``uniform``
  (words uniformly from the vocabulary) and ``zipf`` (words with the texts' own Zipf weights, so
  common words such as "the" appear). For reference: p95, the one statement over every word of the
  query (what recall searched before common words dropped out) and in how many queries its top 5
  differs, and the p50 of the queries made only of common words. Targets at 1,000,000: p50 <= 10 ms,
  and p95 of the Zipf mix <= 100 ms.
* ``near_dup`` (sizes <= 100,000): ``hygiene.similar_pairs(sets, 0.8)`` over the store's token sets,
  checked identical to ``yardstick.exhaustive_pairs`` on a 4,000 sample whose per-pair cost is
  extrapolated to the full size. Target >= 500x at 100,000.

Operations (once per bench run, not per size; ``--only ops`` runs just these):

* ``job_report``: a live store of ``--ops-sizes`` memories (default 50,000 and 500,000) consolidated
  at capacity (as ``live_store``), then the same 1,000 writes; the nightly job's own call,
  ``consolidate(capacity)`` with the API's defaults, and ``memstore consolidate --capacity C --json``
  as a subprocess (wall time, interpreter start included), each on a fresh copy, the sizes taking
  turns run by run. Target: the larger store takes <= 2x the smaller through both. The size of the JSON line is reported.
* ``cli_add``: median wall time of ``memstore --db STORE add TEXT`` as a subprocess, on a store at
  head (the 10,000 generated store) / ``python -c "import sqlalchemy, click"`` with the same
  interpreter, interleaved, ``--cli-runs`` times each (default 21). Target memstore/baseline <= 1.3.

Vectors (once per bench run; ``--only vectors`` runs just these; needs the semantic extra and the
offline model, ``--model-dir``, default ``.model-cache/minilm``, assembled by ``scripts/offline-model``):
the scenarios of vectors.py (recall as a process, hybrid vs lexical, with its peak
memory; hybrid recall in a long-lived process at 100,000 and 1,000,000; the same on PostgreSQL with
pgvector), on stores of random unit vectors filed under the real model's name.

Copy (once per bench run; ``--only copy`` runs just this; ``--copy-size``, default 100,000): the
scenario of copy.py, ``memstore.transfer.copy_into`` of a store with history and vectors
SQLite -> PostgreSQL, PostgreSQL -> SQLite and SQLite -> SQLite, its rate in memories per second
and the time its derived data (the vector index above all) took.

Web (once per bench run; ``--only web`` runs just this; ``--web-sizes``, default 100,000 and
1,000,000, ``--quick`` 100,000; ``--web-cache DIR`` keeps the built stores): the scenario of
web.py, `memstore web`'s overview ``/`` and search page timed server-side through its
ASGI app against the ``MemoryStore`` reads each makes, in one run, over 1,000 namespaces.

Importers (once per bench run; ``--only importers`` runs just this; ``--importers-size``, default
100,000): the scenario of importers.py, ``MemoryStore.import_from(FORMAT, SOURCE)``
of a generated source of that many memories in each format memstore imports (a LangGraph
SqliteStore file written by LangGraph, the reference MCP server's memory.jsonl, a mem0 get_all dump,
an OpenMemory export zip, an mcp-memory-service export, a Uteke export, a basic-memory folder), each
into a fresh SQLite store, against memstore's own JSONL import of as many records in the same run.
Target: each importer's rate >= 0.50 x the JSONL import's; every import must add exactly the
memories its source holds.

LangGraph (once per bench run; ``--only langgraph`` runs just this; ``--langgraph-puts``, default
400): the scenario of langgraph.py, ``MemstoreStore`` against LangGraph's own
``SqliteStore`` taking turns put by put: put p50 (target <= 2x SqliteStore's) and a batch of 20 puts
against one put (target <= 5x: a batch is one transaction).

Repeats: each scenario runs ``--repeats`` times (median reported) unless one run takes more than
``--slow`` seconds (default 10), in which case it runs once. Store files are copied with
shutil.copy after every connection is closed and the WAL checkpointed, so each measured variant
starts from the same state. Results go to bench-results/bench.json (machine info included); the
exit status is 0 unless a consistency check (incremental == full result, exactness, an importer's
counts) fails or a speed target is missed (LangGraph's ratios); ``--no-targets`` prints a missed
target without failing, for runs at sizes too small to judge speed (the tests').

The modules: cli.py (the options, the run, the exit status), core.py (the per-size run: bulk, add,
near-duplicates), consolidation.py, recall.py, ops.py, vectors.py (with launcher.py), copy.py,
web.py, importers.py (with sources.py), langgraph.py, table.py (the rows), common.py. Beside the
bench, run on their own: report.py (the hygiene report over a large store), import_vectors.py
(``import`` of a file with vectors), startup.py (start-up of ``memstore add`` across commits).
"""
