"""Full-text search: the live set ranked by relevance to a query, ties broken by id (`recall_rows`).

SQLite uses the FTS5 index `memories_fts` (kept in step with `memories` by triggers), PostgreSQL a GIN
index on `pg_document("text")`, the same words as FTS5's. A query is split into words; a memory matches when it
contains any of them, except the words that say nothing about which memory is meant (`query_words`):
function words ("what", "did", "the") and words held by very many memories drop out when the query
has another word. A query made only of such common words is ranked among the namespace's newest
memories holding them (`_recall_among_newest`), which bounds what it costs at any size.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Float, bindparam, column, func, select, text

from .db import rows_in
from .schema import FTS_TABLE, MEMORY_COLUMNS, is_unexpired, memories, unexpired
from .words import FUNCTION_WORDS, tokens


# FTS5 (unicode61) splits words at every character that is not a letter or a digit. PostgreSQL's
# parser keeps an e-mail address, a host, a URL, a path, a version, a date or a signed number as one
# word, which no query word then matches; with ASCII punctuation turned into spaces first it sees
# FTS5's words. ("%" is left out: a driver would read it as a placeholder. It makes no such token.)
# Revision 0011 builds the GIN index on this same expression, so the queries below use it.
PG_SEPARATORS = string.punctuation.replace("%", "")


def pg_document(column_sql: str) -> str:
    """PostgreSQL's full-text document of a text column, as the GIN index has it."""
    separators = PG_SEPARATORS.replace("'", "''")
    return f"to_tsvector('simple', translate({column_sql}, '{separators}', '{' ' * len(PG_SEPARATORS)}'))"


# A memory's columns by name, in the models' order: `m.*` would also bring a column someone added
# in the sqlite3 shell, and the result's columns are matched to `memories.c` by position.
_MEMORY_FIELDS = ", ".join(f'm."{name}"' for name in MEMORY_COLUMNS)

# One statement per backend, same contract: memories containing any of the words, best first, ties
# by id, each with its `score` (higher is better). SQLite ranks with FTS5's BM25 (lower is better,
# hence the sign); PostgreSQL with ts_rank over its GIN index.
RECALL_SQL = {
    "sqlite": (
        f"SELECT {_MEMORY_FIELDS}, -bm25({FTS_TABLE}) AS score FROM {FTS_TABLE} JOIN memories AS m ON m.rowid = {FTS_TABLE}.rowid "
        f"WHERE {FTS_TABLE} MATCH :expression AND m.namespace = :namespace AND (m.expires_at IS NULL OR m.expires_at > :now) "
        f"ORDER BY bm25({FTS_TABLE}), m.id LIMIT :k"
    ),
    "postgresql": (
        f"SELECT {_MEMORY_FIELDS}, ts_rank({pg_document('m.text')}, query) AS score "
        "FROM memories AS m, to_tsquery('simple', :expression) AS query "
        f"WHERE {pg_document('m.text')} @@ query AND m.namespace = :namespace AND (m.expires_at IS NULL OR m.expires_at > :now) "
        f"ORDER BY ts_rank({pg_document('m.text')}, query) DESC, m.id LIMIT :k"
    ),
}


def query_expression(words: Sequence[str], dialect: str) -> str | None:
    """Words as an OR search in the backend's syntax, quoted so no operator leaks in."""
    if not words:
        return None
    if dialect == "sqlite":
        return " OR ".join('"' + word.replace('"', '""') + '"' for word in words)
    # tsquery: words are letters and digits only, so quoting them as lexemes is enough.
    return " | ".join("'" + word + "'" for word in words)


# A word found in more than this many memories (any namespace) is common. Ranking a word costs one
# score per memory that holds it, and FTS5's BM25 first counts them all, so on a big store a query
# with "the" or "user" scores most of the store. BM25 weighs a word less the more memories hold it,
# and a word in half of them next to nothing; a rarer word in the query says more about which
# memory is meant. An absolute number rather than a share of the store bounds what one word costs,
# whatever the store's size.
COMMON_WORD_MEMORIES = 5_000

# Counts the memories holding one word, up to a limit. FTS5 stops reading at the limit, so on SQLite
# a common word costs about as much to recognise as a rare one; PostgreSQL's GIN scan reads the
# word's whole entry list first.
WORD_COUNT_SQL = {
    "sqlite": f"SELECT count(*) FROM (SELECT 1 FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH :word LIMIT :limit)",
    "postgresql": (
        "SELECT count(*) FROM (SELECT 1 FROM memories "
        f"WHERE {pg_document('text')} @@ to_tsquery('simple', :word) LIMIT :limit) AS holding"
    ),
}


def holding(conn: Connection, word: str) -> int:
    """How many memories (any namespace) hold `word`, counted up to COMMON_WORD_MEMORIES + 1."""
    return conn.execute(
        text(WORD_COUNT_SQL[conn.dialect.name]),
        {"word": query_expression([word], conn.dialect.name), "limit": COMMON_WORD_MEMORIES + 1},
    ).scalar_one()


@dataclass(frozen=True)
class QueryWords:
    """The words recall searches on, and how many memories hold each (counted up to
    COMMON_WORD_MEMORIES + 1: a count above it means common)."""

    words: list[str]
    holding: dict[str, int]

    @property
    def all_common(self) -> bool:
        return bool(self.words) and all(self.holding[word] > COMMON_WORD_MEMORIES for word in self.words)


def query_words(conn: Connection, query: str) -> QueryWords:
    """The query's distinct words, less those that say nothing about which memory is meant
    (`choose_words`), each counted in the store's full-text index."""
    return choose_words(query, lambda word: holding(conn, word))


def choose_words(query: str, count: Callable[[str], int]) -> QueryWords:
    """The query's distinct words, less those that say nothing about which memory is meant:

    1. function words ("the", "what", "did": `memstore.words.FUNCTION_WORDS`), when the query has
       another word;
    2. then common words (`count(word)`, how many memories hold it, above COMMON_WORD_MEMORIES),
       when a rarer word is left (a word in no memory included).

    A query made only of such words keeps them. Names, numbers and every other word are searched
    exactly as written (lowercased).
    """
    words = list(dict.fromkeys(tokens(query)))
    words = [word for word in words if word not in FUNCTION_WORDS] or words
    counts = {word: count(word) for word in words}
    rarer = [word for word in words if counts[word] <= COMMON_WORD_MEMORIES]
    kept = rarer if rarer and len(words) > 1 else words
    return QueryWords(kept, {word: counts[word] for word in kept})


# The shortlist holds max(40, 8k) scores, and its rowids go into one IN list: only for k up to 100,
# far below SQLite's limit on bound parameters; larger k goes straight to the one-statement ranking.
SHORTLIST_PER_RESULT = 8
SHORTLIST_MIN = 40
SHORTLIST_MAX_K = 100
# LIMIT takes a signed 64-bit integer on both backends; any k beyond it means "every match".
MAX_LIMIT = 2**63 - 1

# SQLite's shortcut to the same answer: the best-scoring matches from the full-text index alone,
# then only their rows. Joining every match to `memories` first (for its namespace and id) costs
# more than scoring it, so the shortcut answers most queries for about half the cost.
SHORTLIST_SQL = (
    f"SELECT rowid, bm25({FTS_TABLE}) AS score FROM {FTS_TABLE} "
    f"WHERE {FTS_TABLE} MATCH :expression ORDER BY score LIMIT :depth"
)
# What proving the shortlist needs of each memory (`whole_rows` reads the k returned).
SHORTLIST_ROWS = (
    # Namespace left out on purpose: with it SQLite may walk the namespace's index instead of
    # looking the few rowids up.
    select(memories.c.seq, memories.c.id, memories.c.namespace, memories.c.expires_at)
    .where(memories.c.seq.in_(bindparam("rowids", expanding=True)))
)


def _recall_from_shortlist(conn: Connection, expression: str, k: int, namespace: str, now: int) -> list[dict[str, Any]] | None:
    """RECALL_SQL's answer from the `depth` best scores, or None when they cannot prove it.

    Every match scoring strictly better than the last of the shortlist is in the shortlist. So if at
    least k memories of `namespace` score strictly better than that, their top k by (score, id) is
    exactly RECALL_SQL's answer; if the shortlist is not full, it holds every match.
    """
    depth = max(SHORTLIST_PER_RESULT * k, SHORTLIST_MIN)
    shortlist = conn.execute(text(SHORTLIST_SQL), {"expression": expression, "depth": depth}).all()
    if not shortlist:
        return []
    score = dict(shortlist)
    complete = len(shortlist) < depth
    cutoff = shortlist[-1].score
    found = [
        row for row in conn.execute(SHORTLIST_ROWS, {"rowids": list(score)})
        if row.namespace == namespace and is_unexpired(row._mapping, now) and (complete or score[row.seq] < cutoff)
    ]  # fmt: skip
    if not complete and len(found) < k:
        return None
    best = sorted(found, key=lambda row: (score[row.seq], row.id))[:k]
    whole = whole_rows(conn, [row.seq for row in best])
    return [dict(whole[row.seq], score=-score[row.seq]) for row in best]


def whole_rows(conn: Connection, seqs: list[int]) -> dict[int, Any]:
    """The whole rows of `seqs`, by seq: read only for the memories recall returns (their metadata
    decoded), the candidates having been judged on a few columns."""
    return {row.seq: row._mapping for row in rows_in(conn, select(memories), memories.c.seq, seqs)}


# A query made only of common words is ranked among the namespace's newest memories holding any of
# them, this many at most: one score per memory holding them would cost a tenth of a second to half a
# second at a million memories, and a query that names nothing rarer says little beyond "lately".
COMMON_QUERY_WINDOW = 1_000

# What ranking among the newest reads of each candidate (`whole_rows` reads the k chosen).
_CANDIDATE_COLUMNS = (memories.c.seq, memories.c.id, memories.c.text)

# The namespace's newest unexpired memories holding any of the words, by write order. On SQLite the
# CROSS JOIN keeps the full-text index outside, read newest first until the window is full; inside, a
# lookup by rowid. PostgreSQL plans it itself.
NEWEST_MATCHES_SQL = {
    "sqlite": (
        f"SELECT m.seq, m.id, m.text FROM {FTS_TABLE} CROSS JOIN memories AS m ON m.seq = {FTS_TABLE}.rowid "
        f"WHERE {FTS_TABLE} MATCH :expression AND m.namespace = :namespace AND (m.expires_at IS NULL OR m.expires_at > :now) "
        f"ORDER BY {FTS_TABLE}.rowid DESC LIMIT :limit"
    ),
    "postgresql": (
        f"SELECT seq, id, text FROM memories WHERE {pg_document('text')} @@ to_tsquery('simple', :expression) "
        "AND namespace = :namespace AND (expires_at IS NULL OR expires_at > :now) ORDER BY seq DESC LIMIT :limit"
    ),
}


def _recall_among_newest(conn: Connection, words: list[str], expression: str, k: int, namespace: str, now: int) -> list[dict[str, Any]]:
    """A query made only of common words: among the newest COMMON_QUERY_WINDOW memories of
    `namespace` holding any of them, those holding the most of the words, then the shortest, then
    by id; `score` is how many of the words each holds.

    A namespace of at most that many memories is read whole and its memories holding a word kept (a
    full-text search would walk every memory of the store holding the words to find its few)."""
    small = conn.execute(
        select(func.count()).select_from(
            select(memories.c.seq).where(memories.c.namespace == namespace).limit(COMMON_QUERY_WINDOW + 1).subquery()
        )
    ).scalar_one() <= COMMON_QUERY_WINDOW
    if small:
        wanted = set(words)
        rows = conn.execute(select(*_CANDIDATE_COLUMNS).where(memories.c.namespace == namespace, unexpired(memories, now)))
        candidates = [row._mapping for row in rows if wanted.intersection(tokens(row.text))]
    else:
        parameters = {"expression": expression, "namespace": namespace, "now": now, "limit": COMMON_QUERY_WINDOW}
        candidates = list(conn.execute(text(NEWEST_MATCHES_SQL[conn.dialect.name]), parameters).mappings())
    best = by_words_held(words, candidates, k)
    whole = whole_rows(conn, [row["seq"] for row in best])
    return [dict(whole[row["seq"]], score=row["score"]) for row in best]


def by_words_held(words: Sequence[str], rows: Sequence[dict[str, Any]], k: int) -> list[dict[str, Any]]:
    """The k of `rows` holding the most of `words`, then the shortest, then by id, each with
    `score`: how many of the words it holds (how a query of common words only is ranked)."""
    wanted = set(words)
    scored = []
    for row in rows:
        held = tokens(row["text"])
        scored.append((len(wanted.intersection(held)), len(held), row["id"], row))
    scored.sort(key=lambda item: (-item[0], item[1], item[2]))
    return [dict(row, score=float(matched)) for matched, _, _, row in scored[:k]]


def recall_rows(
    conn: Connection, query: str, k: int, namespace: str, *, now: int, words: QueryWords | None = None
) -> list[dict[str, Any]]:
    """The top-k live memories of `namespace` for `query` not expired at `now`, best first, each with
    its `score`; `words`, when the caller has them already, are the query's words (`query_words`)."""
    if k <= 0:
        return []
    dialect = conn.dialect.name
    words = words or query_words(conn, query)
    expression = query_expression(words.words, dialect)
    if expression is None:
        return []
    k = min(k, MAX_LIMIT)
    if words.all_common:
        return _recall_among_newest(conn, words.words, expression, k, namespace, now)
    if dialect == "sqlite" and k <= SHORTLIST_MAX_K:
        found = _recall_from_shortlist(conn, expression, k, namespace, now)
        if found is not None:
            return found
    rows = conn.execute(
        text(RECALL_SQL[dialect]).columns(*memories.c, column("score", Float)),
        {"expression": expression, "namespace": namespace, "k": k, "now": now},
    ).mappings()
    return [dict(row) for row in rows]



# Which namespaces hold a match is read from the newest memories holding a query word, this many at
# most: one rowid looked up per match, whatever the store's size (a word rarer than
# COMMON_WORD_MEMORIES is in fewer; a query of common words only is answered among the newest).
HOLDING_WINDOW = 2_000

# The newest HOLDING_WINDOW memories holding any of the words, grouped by namespace: the live ones
# outside `asked`, most matches first, ties by name. On SQLite the full-text index gives its rowids
# newest first and stops at the window; on PostgreSQL the GIN index finds every match (OFFSET 0 keeps
# the planner from walking the primary key newest first instead, reading every row's text) and the
# newest are kept: a heap visit per match, as its recall pays to rank every match.
NAMESPACES_HOLDING_SQL = {
    "sqlite": (
        f"SELECT m.namespace, count(*) AS matches FROM (SELECT rowid FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH :expression "
        "ORDER BY rowid DESC LIMIT :window) AS hit JOIN memories AS m ON m.seq = hit.rowid "
        "WHERE m.namespace <> :asked AND (m.expires_at IS NULL OR m.expires_at > :now) "
        "GROUP BY m.namespace ORDER BY matches DESC, m.namespace LIMIT :names"
    ),
    "postgresql": (
        "SELECT hit.namespace, count(*) AS matches FROM (SELECT namespace, expires_at FROM (SELECT seq, namespace, expires_at "
        f"FROM memories WHERE {pg_document('text')} @@ to_tsquery('simple', :expression) OFFSET 0) AS matching "
        "ORDER BY seq DESC LIMIT :window) AS hit "
        "WHERE hit.namespace <> :asked AND (hit.expires_at IS NULL OR hit.expires_at > :now) "
        "GROUP BY hit.namespace ORDER BY matches DESC, hit.namespace LIMIT :names"
    ),
}


def namespaces_holding(conn: Connection, query: str, asked: str, *, now: int, names: int | None) -> dict[str, int]:
    """The namespaces other than `asked` whose live memories hold a word recall would search `query`
    on (`query_words`), at most `names` (None: every one), most matches first, ties by name: {namespace: matches}.
    One statement over the newest HOLDING_WINDOW memories holding a word (a count is exact when the
    query matches fewer): what a search that found nothing in `asked` says about the others."""
    expression = query_expression(query_words(conn, query).words, conn.dialect.name)
    if expression is None or names == 0:
        return {}
    parameters = {"expression": expression, "asked": asked, "now": now, "window": HOLDING_WINDOW, "names": min(names or MAX_LIMIT, MAX_LIMIT)}
    return {name: matches for name, matches in conn.execute(text(NAMESPACES_HOLDING_SQL[conn.dialect.name]), parameters)}
