"""The one generator of synthetic memories and stores, for every program in scripts/.

Deterministic from a seed, dated relative to one fixed instant (``NOW_MS``), so a store built twice
is the same store. Two kinds of text, for two purposes:

* **prose** (``generate_records``, ``TextMaker``): ~100-character texts drawn from a vocabulary of
  a few thousand words with Zipf weights (common words such as "the" and "user" are very frequent),
  ~30 % near-duplicate variants of earlier memories (a word dropped, replaced or added, case or
  punctuation changed), some exact copies, a few pinned, recall counts and dates over two years,
  fact_keys shared by 2-3 records. What the benchmarks measure on (search, the near-duplicate join,
  the hygiene report, the importers' sources, the web pages); ``make_queries`` draws recall queries
  from the same vocabulary.
* **spellings** (``spelled_records``, ``build_store``): a fixed set of facts, each written in
  several spellings that normalize to the same key (and one that does not), over namespaces. What
  the torture suite and the probe need: how many duplicates the job must archive is set by
  ``fact_ratio``, and a writer process can add yet another spelling of a fact the store holds
  (``spelling``) knowing only its index.

``add_random_vectors`` gives a store's memories random unit vectors filed under the real model's
name and width: what a search or a copy costs does not depend on the vectors' values, and embedding
a million texts would take hours on two cores.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path

from memstore.defaults import DAY_MS
from scripts.stores import finalize_file, remove_store, table_counts

YEAR_MS = 365 * DAY_MS
# A fixed "now" keeps every generated store (and so what is measured on it) identical from run to run.
NOW_MS = int(datetime(2025, 1, 1, tzinfo=timezone.utc).timestamp() * 1000)
SPAN_MS = 730 * DAY_MS  # two years

# The head of the vocabulary, most frequent first: what agent memories are mostly made of.
COMMON_WORDS = """
the user to a and of is in for prefers on with likes uses wants their project at from that
this be it as should when always by team code file has use an are or works meeting about
we asked not prefer dark mode python data api test new default config server build run
time week no before after email repo branch review deploy never report settings language
""".split()

VOCABULARY_SIZE = 4000
ZIPF_EXPONENT = 1.0
VARIANT_SHARE = 0.30
EXACT_DUPLICATE_SHARE = 0.03
PINNED_SHARE = 0.01
FACT_KEY_SHARE = 0.02  # of the memories, in groups of 2-3 sharing one fact_key


# -- prose ----------------------------------------------------------------------------------------


def make_vocabulary(rng: random.Random) -> list[str]:
    """COMMON_WORDS followed by pronounceable made-up words, VOCABULARY_SIZE in all, unique."""
    onsets = "b c d f g h j k l m n p r s t v w z br cl dr fl gr pl st tr sh ch".split()
    vowels = "a e i o u ai ea io ou".split()
    codas = ["", "", "n", "r", "s", "t", "l", "m", "x", "nd", "st"]
    words = list(COMMON_WORDS)
    seen = set(words)
    while len(words) < VOCABULARY_SIZE:
        word = "".join(rng.choice(onsets) + rng.choice(vowels) for _ in range(rng.randint(1, 3)))
        word += rng.choice(codas)
        if rng.random() < 0.05:
            word += str(rng.randint(2, 99))  # version numbers, ports, counts: "py311", "v2"
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


class TextMaker:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.words = make_vocabulary(rng)
        weights = [1.0 / (rank + 1) ** ZIPF_EXPONENT for rank in range(len(self.words))]
        total = 0.0
        self.cum_weights = []
        for weight in weights:
            total += weight
            self.cum_weights.append(total)

    def word(self) -> str:
        return self.rng.choices(self.words, cum_weights=self.cum_weights)[0]

    def fresh(self) -> str:
        """A new memory of ~100 characters (Gaussian length, clipped to 25..250)."""
        rng = self.rng
        target = min(max(int(rng.gauss(100, 30)), 25), 250)
        words: list[str] = []
        length = -1
        while length < target:
            word = self.word()
            words.append(word)
            length += len(word) + 1
        if rng.random() < 0.2 and len(words) > 6:  # a clause: "..., and ..."
            cut = rng.randrange(3, len(words) - 2)
            words[cut] += ","
        text = " ".join(words)
        text = text[0].upper() + text[1:]
        return text + rng.choice([".", ".", ".", ".", "!", ""])

    def variant(self, text: str) -> str:
        """One or two small edits: drop / replace / add a word, change case or punctuation."""
        rng = self.rng
        words = text.split()
        for _ in range(rng.choice((1, 1, 2))):
            edit = rng.choice(("drop", "replace", "add", "add", "case", "punct"))
            if edit == "drop" and len(words) > 2:
                del words[rng.randrange(len(words))]
            elif edit == "replace" and words:
                words[rng.randrange(len(words))] = self.word()
            elif edit == "add":
                # Now and then the added word is a negation: a candidate contradiction.
                new = rng.choice(("not", "never", "no")) if rng.random() < 0.15 else self.word()
                words.insert(rng.randrange(len(words) + 1), new)
            elif edit == "case" and words:
                i = rng.randrange(len(words))
                words[i] = rng.choice((str.upper, str.lower, str.capitalize))(words[i])
            else:
                body = " ".join(words).rstrip(".!?")
                words = (body + rng.choice((".", "!", "?", "", " ."))).split()
        return " ".join(words) if words else text


def generate_records(size: int, seed: int) -> tuple[list[dict], dict[str, int]]:
    """`size` prose memories (ids m0000000, ...) (no namespace: they go to the default one), and how many of each kind."""
    rng = random.Random(seed)
    maker = TextMaker(rng)
    texts: list[str] = []
    kinds = {"fresh": 0, "variant": 0, "exact_duplicate": 0}
    for _ in range(size):
        roll = rng.random()
        if texts and roll < EXACT_DUPLICATE_SHARE:
            texts.append(texts[rng.randrange(len(texts))])
            kinds["exact_duplicate"] += 1
        elif texts and roll < EXACT_DUPLICATE_SHARE + VARIANT_SHARE:
            texts.append(maker.variant(texts[rng.randrange(len(texts))]))
            kinds["variant"] += 1
        else:
            texts.append(maker.fresh())
            kinds["fresh"] += 1

    # fact_keys: groups of 2-3 records (chosen anywhere in the store) share one key.
    fact_keys: dict[int, str] = {}
    wanted = int(size * FACT_KEY_SHARE)
    candidates = list(range(size))
    rng.shuffle(candidates)
    group = 0
    while len(fact_keys) < wanted and candidates:
        group += 1
        for _ in range(rng.choice((2, 2, 3))):
            if candidates:
                fact_keys[candidates.pop()] = f"fact.{group:05d}"

    records = []
    for index, text in enumerate(texts):
        created = NOW_MS - rng.randrange(SPAN_MS)
        updated = created if rng.random() < 0.8 else created + rng.randrange(NOW_MS - created + 1)
        recalls = 0 if rng.random() < 0.5 else min(int(rng.expovariate(0.3)) + 1, 500)
        last_recalled = None if recalls == 0 else updated + rng.randrange(NOW_MS - updated + 1)
        records.append(
            {
                "id": f"m{index:07d}",
                "text": text,
                "importance": rng.randint(1, 5),
                "pinned": rng.random() < PINNED_SHARE,
                "created_at": created,
                "updated_at": updated,
                "last_recalled_at": last_recalled,
                "recall_count": recalls,
                "fact_key": fact_keys.get(index),
            }
        )
    kinds["fact_key_groups"] = group
    kinds["with_fact_key"] = len(fact_keys)
    kinds["pinned"] = sum(r["pinned"] for r in records)
    kinds["avg_text_chars"] = round(sum(len(t) for t in texts) / max(size, 1), 1)
    return records, kinds


def make_queries(seed: int, count: int, zipf: bool) -> list[str]:
    """`count` recall queries of 2-3 words from the vocabulary `generate_records(_, seed)` uses: drawn
    uniformly, or with the texts' own Zipf weights (so common words such as "the" appear)."""
    words = make_vocabulary(random.Random(seed))
    rng = random.Random(seed + (23 if zipf else 29))
    cum = None
    if zipf:
        total, cum = 0.0, []
        for rank in range(len(words)):
            total += 1.0 / (rank + 1) ** ZIPF_EXPONENT
            cum.append(total)
    queries = []
    for _ in range(count):
        n = rng.choice((2, 3))
        picked = rng.choices(words, cum_weights=cum, k=n) if zipf else rng.sample(words, n)
        queries.append(" ".join(picked))
    return queries


# -- spellings ------------------------------------------------------------------------------------

_SUBJECTS = ("user", "the agent", "project atlas", "the build", "our team", "the customer", "café owner", "the CI runner")
_VERBS = ("prefers", "uses", "deploys", "avoids", "mentions", "schedules", "reviews", "asks about")
_OBJECTS = ("dark mode", "tabs over spaces", "python 3 12", "friday releases", "long lunches", "unit tests",
            "the blue theme", "résumé templates")  # fmt: skip

# Ways people write the same fact. All but the last collide under normalize_key; the last (" ?")
# keeps a trailing space after the removal, so it is a near-duplicate that is *not* a duplicate.
_VARIANTS: tuple[Callable[[str], str], ...] = (
    lambda s: s,
    lambda s: s.upper(),
    lambda s: s[0].upper() + s[1:] + ".",
    lambda s: s + "!",
    lambda s: "  " + s + "\t",
    lambda s: s.replace(" ", "   "),
    lambda s: '"' + s + '"',
    lambda s: s + " ?",
)


def fact_text(i: int) -> str:
    """The i-th distinct fact (no character of it is removed by normalize_key)."""
    return f"{_SUBJECTS[i % 8]} {_VERBS[(i // 8) % 8]} {_OBJECTS[(i // 64) % 8]} (note {i})"


def spelling(rng: random.Random, fact_count: int) -> str:
    """A spelling, chosen by `rng`, of one of the first `fact_count` facts."""
    return rng.choice(_VARIANTS)(fact_text(rng.randrange(fact_count)))


def spelled_records(n: int, rng: random.Random, fact_count: int, namespaces: tuple[str, ...], prefix: str) -> Iterator[dict]:
    """`n` memories (ids `prefix`0000000, ...), each a spelling of one of `fact_count` facts, in a
    namespace drawn from `namespaces`, dated over the year before NOW_MS."""
    for i in range(n):
        recall_count = rng.choice((0, 0, 0, 0, 1, 2, 5))
        created = NOW_MS - rng.randrange(YEAR_MS)
        yield {
            "id": f"{prefix}{i:07d}",
            "namespace": rng.choice(namespaces),
            "text": spelling(rng, fact_count),
            "timestamp": NOW_MS - rng.randrange(YEAR_MS),
            "importance": rng.randint(1, 5),
            "pinned": rng.random() < 0.002,
            "created_at": created,
            "recall_count": recall_count,
            "last_recalled_at": created + rng.randrange(YEAR_MS) if recall_count else None,
            "fact_key": f"fact-{i % 97}" if rng.random() < 0.05 else None,
            "meta": {"source": "torture", "i": i} if rng.random() < 0.1 else None,
        }


def _add_in_chunks(store, records: Iterator[dict], chunk: int = 10_000) -> None:
    batch: list[dict] = []
    for record in records:
        batch.append(record)
        if len(batch) == chunk:
            store.add_many(batch)
            batch = []
    if batch:
        store.add_many(batch)


def build_store(
    path: Path,
    memories: int,
    *,
    fact_ratio: float = 0.5,
    namespaces: tuple[str, ...] = ("default",),
    prior: int = 0,
    seed: int = 0,
) -> dict[str, int]:
    """A store with `memories` live rows drawn from `memories * fact_ratio` facts in many spellings.

    With `prior`, `prior` older rows go in first and one consolidation run archives part of them, so the
    store already has an archive, a run and merges (the job must leave those alone). The file is
    checkpointed and closed: it can be copied on its own.
    """
    from memstore import MemoryStore

    rng = random.Random(seed)
    fact_count = max(1, int(memories * fact_ratio))
    remove_store(path)
    with MemoryStore(path) as store:
        if prior:
            _add_in_chunks(store, spelled_records(prior, rng, fact_count, namespaces, "p"))
            store.consolidate(max(1, prior * 2 // 5 // len(namespaces)), namespace=None)
        _add_in_chunks(store, spelled_records(memories, rng, fact_count, namespaces, "m"))
    finalize_file(path)
    return table_counts(path)


# -- vectors --------------------------------------------------------------------------------------

VECTOR_BATCH = 5_000


def add_random_vectors(store, ids: list[str], model_dir: Path, seed: int, *, rebuild_index: bool = True) -> None:
    """Enable the real model (`model_dir`) on `store` and file a random unit vector under it for each
    of `ids`, in batches; the vector index is dropped first and, with `rebuild_index`, built once
    over all of them at the end (quicker than row by row)."""
    from memstore.db import write_transaction
    from memstore.vectors import index as vector_index
    from memstore.vectors.storage import model_of

    store.enable_embeddings(model_dir)
    with write_transaction(store.engine) as conn:
        vector_index.drop(conn)
    file_random_vectors(store, ids, seed)
    if rebuild_index:
        with write_transaction(store.engine) as conn:
            model = model_of(conn)
            vector_index.rebuild(conn, model.name, model.dim)


def file_random_vectors(store, ids: list[str], seed: int) -> None:
    """A random unit vector for each of `ids`, filed under the store's model (set already), in batches."""
    import numpy as np

    from memstore.db import write_transaction
    from memstore.records import now_ms
    from memstore.vectors.storage import model_of, store_vectors

    rng = np.random.default_rng(seed)
    with write_transaction(store.engine) as conn:
        model = model_of(conn)
    for start in range(0, len(ids), VECTOR_BATCH):
        batch = ids[start : start + VECTOR_BATCH]
        vectors = rng.standard_normal((len(batch), model.dim)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        with write_transaction(store.engine) as conn:
            store_vectors(conn, model, batch, [v.astype("<f4").tobytes() for v in vectors], now_ms())
