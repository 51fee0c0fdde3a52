"""Recall over the FTS5 index: kept in step with every write path, ranked with a total order."""

from __future__ import annotations

from .sqlitelib import sqlite3

from memstore import MemoryStore
from memstore.db import make_engine, write_transaction
from memstore.records import now_ms
from alembic import command
from memstore.migrate import alembic_config

from .conftest import SEED_SAMPLE


def ids(rows):
    return [r["id"] for r in rows]


def test_recall_finds_by_any_word_best_match_first(store):
    store.add_many(
        [
            {"id": "wifi", "text": "The office wifi password is on the fridge"},
            {"id": "dark", "text": "User prefers dark mode"},
            {"id": "both", "text": "Office dark mode lighting"},
        ]
    )
    assert ids(store.recall("office wifi", touch=False)) == ["wifi", "both"]
    assert ids(store.recall("dark mode", touch=False))[0] in {"dark", "both"}
    assert store.recall("nothing matches", touch=False) == []
    assert store.recall("!!! ???", touch=False) == []


def test_ties_are_broken_by_id_so_output_is_total(store):
    store.add_many([{"id": i, "text": "same words here"} for i in ("b", "a", "é", "B")])
    assert ids(store.recall("same words", k=10, touch=False)) == ["B", "a", "b", "é"]


def test_query_syntax_is_not_interpreted(store):
    store.add("a NEAR b OR c", id="x")
    assert ids(store.recall('NEAR( "unterminated *', touch=False)) == ["x"]


def test_recall_counts_unless_no_touch(store):
    store.add("remember the milk", id="milk")
    store.recall("milk", touch=False)
    assert store.get("milk")["recall_count"] == 0
    (row,) = store.recall("milk")
    assert row["recall_count"] == 1 and row["last_recalled_at"] is not None
    stored = store.get("milk")
    assert (stored["recall_count"], stored["last_recalled_at"]) == (1, row["last_recalled_at"])


def test_recall_is_per_namespace(store):
    store.add("deploy on fridays", id="w", namespace="work")
    store.add("deploy the garden shed", id="h", namespace="home")
    assert ids(store.recall("deploy", namespace="work", touch=False)) == ["w"]
    assert store.recall("deploy", touch=False) == []


def test_index_follows_consolidation_and_restore(store):
    store.add_many(SEED_SAMPLE)
    run = store.consolidate(5)
    assert ids(store.recall("dark mode", touch=False)) == ["m2"]  # m1 archived: no longer found
    store.restore(run.run_id)
    assert sorted(ids(store.recall("dark mode", touch=False))) == ["m1", "m2"]


def test_index_follows_edits_made_in_the_sqlite3_shell(sqlite_store, db_path):
    sqlite_store.add("old wording", id="x")
    shell = sqlite3.connect(db_path)
    shell.execute("UPDATE memories SET text = 'new phrasing' WHERE id = 'x'")
    shell.commit()
    assert sqlite_store.recall("wording", touch=False) == []
    assert ids(sqlite_store.recall("phrasing", touch=False)) == ["x"]
    shell.execute("DELETE FROM memories WHERE id = 'x'")
    shell.commit()
    assert sqlite_store.recall("phrasing", touch=False) == []
    assert shell.execute("INSERT INTO memories_fts(memories_fts) VALUES ('integrity-check')").fetchall() == []


def test_a_column_added_in_the_sqlite3_shell_changes_no_recall(sqlite_store, db_path):
    """Full-text recall reads a memory's columns by name: with `m.*` a column of the user's own
    made the deep ranking fail ("ambiguous column name 'score'")."""
    sqlite_store.add_many(SEED_SAMPLE)
    before = {k: sqlite_store.recall("dark mode", k=k, touch=False) for k in (5, 200)}
    shell = sqlite3.connect(db_path)
    shell.execute("ALTER TABLE memories ADD COLUMN my_note TEXT DEFAULT 'mine'")
    shell.commit()
    shell.close()
    for k in (5, 200):  # the shortlist, then the one-statement ranking (k past SHORTLIST_MAX_K)
        assert sqlite_store.recall("dark mode", k=k, touch=False) == before[k]


def test_upgrading_a_store_with_memories_indexes_the_existing_rows(db_path):
    engine = make_engine(db_path)
    with write_transaction(engine) as conn:
        command.upgrade(alembic_config(conn), "0001")
    with write_transaction(engine) as conn:
        conn.exec_driver_sql(
            "INSERT INTO memories (id, namespace, text, norm_key, timestamp, importance, pinned, created_at, updated_at)"
            " VALUES ('old', 'default', 'written before recall existed', 'written before recall existed', 1, 3, 0, 1, 1)"
        )
    engine.dispose()
    with MemoryStore(db_path) as store:
        assert ids(store.recall("recall existed", touch=False)) == ["old"]


def test_shortlist_answers_exactly_what_the_one_statement_ranking_answers(tmp_path):
    """SQLite recall first scores the full-text index alone (a shortlist), then reads rows; it must
    give the same rows as RECALL_SQL, including across ties at the shortlist's edge, namespaces
    that hold few of the matches, and k larger than the shortlist."""
    import random

    from sqlalchemy import text

    from memstore.db import read_transaction
    from memstore.models import Memory
    from memstore.fulltext import RECALL_SQL, _recall_from_shortlist, query_expression, recall_rows

    rng = random.Random(5)
    words = [f"w{n}" for n in range(12)]
    records = []
    for n in range(900):
        # Few distinct texts, so whole groups tie on score; ids in random order of writing.
        pool = words[: rng.choice((3, 6, 12))]
        text_ = " ".join(rng.sample(pool, rng.randint(1, len(pool) if len(pool) < 4 else 4)))
        records.append({"id": f"{rng.randrange(10**6):06d}-{n}", "text": text_, "namespace": rng.choice(("a", "a", "a", "b", "rare"))})
    store = MemoryStore(tmp_path / "ties.db")
    store.add_many(records)
    queries = [" ".join(rng.sample(words, rng.randint(1, 3))) for _ in range(60)] + ["w11", "w0 w11", "nomatch"]
    shortcuts = 0
    with read_transaction(store.engine) as conn:
        for query in queries:
            for namespace in ("a", "b", "rare", "none"):
                for k in (1, 3, 5, 40, 400):
                    expected = [
                        dict(row)
                        for row in conn.execute(
                            text(RECALL_SQL["sqlite"]).columns(*Memory.__table__.c),
                            {"expression": query_expression(query.split(), "sqlite"), "namespace": namespace, "k": k, "now": 0},
                        ).mappings()
                    ]
                    assert recall_rows(conn, query, k, namespace, now=now_ms()) == expected, (query, namespace, k)
                    expression = query_expression(query.split(), "sqlite")
                    shortcuts += _recall_from_shortlist(conn, expression, k, namespace, 0) is not None
    assert shortcuts > 100  # the shortlist answered many of them, not only the fallback
    store.close()


def test_any_k_is_accepted_and_beyond_the_matches_means_every_match(store):
    store.add_many([{"id": f"m{n}", "text": f"shared word {n}"} for n in range(7)])
    everything = ids(store.recall("shared", k=1000, touch=False))
    assert len(everything) == 7
    for k in (101, 2**61, 2**63, 2**70):  # past the shortlist, past a 64-bit LIMIT
        assert ids(store.recall("shared", k=k, touch=False)) == everything


def common_word_store(store):
    """'the' and 'filler' in more than COMMON_WORD_MEMORIES memories, 'edge' in exactly that many, a few rare words."""
    from memstore.fulltext import COMMON_WORD_MEMORIES

    records = [
        {"id": f"f{n:05d}", "text": f"the filler note {n}" + (" edge" if n < COMMON_WORD_MEMORIES else "")}
        for n in range(COMMON_WORD_MEMORIES + 1)
    ]
    records += [
        {"id": "z1", "text": "The zebra crossing is near the office"},
        {"id": "z2", "text": "zebra print mug"},
        {"id": "o1", "text": "office wifi password rotates monthly", "namespace": "work"},
    ]
    store.add_many(records)
    return COMMON_WORD_MEMORIES


def test_common_words_drop_out_when_the_query_has_a_rarer_word(store):
    """'the' (in more than COMMON_WORD_MEMORIES memories) neither matches nor ranks next to 'zebra':
    the 5,001 filler notes holding 'the' but no 'zebra' no longer fill the results, and the answer is the
    ranking of 'zebra' alone, even when that is fewer than k memories."""
    common_word_store(store)
    assert ids(store.recall("the zebra", k=5, touch=False)) == ids(store.recall("zebra", k=5, touch=False))
    assert sorted(ids(store.recall("the zebra", k=5, touch=False))) == ["z1", "z2"]


def test_common_is_counted_over_every_namespace(store):
    """'the' is in only one memory of "work" but in thousands of "default": it drops out there too."""
    common_word_store(store)
    store.add_many(
        [
            {"id": "w1", "text": "the lunch menu", "namespace": "work"},
            {"id": "w2", "text": "the office plan", "namespace": "work"},
        ]
    )
    assert sorted(ids(store.recall("the office", k=5, namespace="work", touch=False))) == ["o1", "w2"]


def test_a_word_in_exactly_the_limit_of_memories_is_not_common(store):
    limit = common_word_store(store)
    top = store.recall("edge zebra", k=limit + 10, touch=False)
    assert len(top) == limit + 2  # every 'edge' note and both zebras: 'edge' still matches


def test_a_query_of_common_words_only_keeps_them_all(store):
    common_word_store(store)
    top = store.recall("the", k=3, touch=False)
    assert len(top) == 3 and all("the" in row["text"].lower().split() for row in top)
    both = store.recall("filler note", k=10**6, touch=False)
    assert len(both) == len(store.recall("filler", k=10**6, touch=False))  # every 'filler' memory matches


def test_a_query_of_common_words_only_ranks_the_newest_memories_holding_them(store):
    """Its cost is bounded at any size: it is ranked among the namespace's newest COMMON_QUERY_WINDOW
    memories holding any of its words, those holding more of them first, then the shortest, then by id."""
    from memstore.fulltext import COMMON_QUERY_WINDOW, COMMON_WORD_MEMORIES

    common_word_store(store)
    store.add_many([{"id": "zz-both", "text": "filler note"}, {"id": "zz-one", "text": "a filler only"}])
    store.add_many([{"id": f"other{n}", "text": "filler note elsewhere", "namespace": "elsewhere"} for n in range(3)])
    top = store.recall("filler note", k=10**6, touch=False)
    assert len(top) == COMMON_QUERY_WINDOW < COMMON_WORD_MEMORIES  # the older filler notes are past the window
    assert "f00000" not in ids(top) and top[0]["id"] == "zz-both" and top[0]["score"] == 2.0
    assert ids(top)[-1] == "zz-one"  # one word of two: ranked last
    assert not [row for row in top if row["namespace"] != "default"]
    # A query with a rarer word is ranked as ever, over every memory holding its words.
    assert len(store.recall("edge zebra", k=10**6, touch=False)) == COMMON_WORD_MEMORIES + 2


def test_a_query_of_common_words_only_finds_a_small_namespaces_own_memories(store):
    """Written before thousands of others hold the same words, a small namespace's memories are
    still its answer: the window is the namespace's newest, not the store's."""
    store.add_many([
        {"id": "w1", "text": "the lunch menu", "namespace": "work"},
        {"id": "w2", "text": "the filler plan", "namespace": "work"},
        {"id": "w3", "text": "nothing shared", "namespace": "work"},
    ])  # fmt: skip
    common_word_store(store)
    assert ids(store.recall("the", k=5, namespace="work", touch=False)) == ["w1", "w2"]  # one word each, as short: by id
    store.add("The menu.", id="w0", namespace="work", expires_at=now_ms() - 1)
    assert ids(store.recall("the", k=5, namespace="work", touch=False)) == ["w1", "w2"]  # expired: not seen


def test_function_words_drop_out_when_the_query_has_another_word(store):
    """In a namespace of a few short memories no word is common by count, yet "what" and "did"
    say nothing about which memory is meant: they neither match nor rank next to "biscuit"."""
    store.add_many([
        {"id": "q1", "text": "What did you do last weekend?"},
        {"id": "q2", "text": "What did the vet say?"},
        {"id": "b1", "text": "Biscuit is a beagle."},
    ])  # fmt: skip
    assert [row["id"] for row in store.recall("What did Biscuit do?", touch=False)] == ["b1"]
    # A query made only of function words keeps them.
    assert sorted(row["id"] for row in store.recall("what did", touch=False)) == ["q1", "q2"]


def test_recall_words_agree_with_counting_the_texts(sqlite_store):
    """recall_words against a count made in Python from the texts, for queries mixing common, boundary
    and rare words, repeated words and words in no memory."""
    from memstore.db import read_transaction
    from memstore.fulltext import query_words
    from memstore.words import FUNCTION_WORDS, tokens

    def recall_words(conn, query):
        """The words recall matches and ranks on."""
        return query_words(conn, query).words

    limit = common_word_store(sqlite_store)
    holding: dict[str, int] = {}
    for row in sqlite_store.list(None):
        for word in set(tokens(row["text"])):
            holding[word] = holding.get(word, 0) + 1
    queries = ["the zebra", "The THE edge", "the filler", "edge", "filler zebra nowhere", "the nowhere", "note 17 the"]
    with read_transaction(sqlite_store.engine) as conn:
        for query in queries:
            words = list(dict.fromkeys(tokens(query)))
            words = [word for word in words if word not in FUNCTION_WORDS] or words
            rarer = [word for word in words if holding.get(word, 0) <= limit]
            expected = words if len(words) < 2 else (rarer or words)
            assert recall_words(conn, query) == expected, query


def test_words_are_weighed_in_the_namespace_searched(store):
    """A speaker's name heads half the turns of one conversation and appears in no other: in the
    store it is rare, in that conversation it is no evidence for any turn. Hybrid recall weighs
    each word by the memories of the namespace searched, counted exactly, in the same pass that
    ranks them as full-text recall ranks them."""
    from memstore.db import read_transaction
    from memstore.fulltext import recall_rows, query_words
    from memstore.recall.lexical import recall_rows_and_counts
    from memstore.records import now_ms
    from memstore.words import tokens

    turns = [{"id": f"c{n:03d}", "text": f"{'Caroline' if n % 2 else 'Mel'}: turn {n} about {'pottery' if n == 7 else 'the weekend'}", "namespace": "chat"} for n in range(40)]
    others = [{"id": f"o{n:03d}", "text": f"note {n} on the garden", "namespace": "notes"} for n in range(200)]
    store.add_many(turns + others + [{"id": "x1", "text": "Caroline from accounts called", "namespace": "notes"}])
    with read_transaction(store.engine) as conn:
        words = query_words(conn, "What did Caroline say about pottery?")
        assert words.words == ["caroline", "say", "pottery"] and words.holding == {"caroline": 21, "say": 0, "pottery": 1}
        for namespace, records in (("chat", turns), ("notes", others + [{"text": "Caroline from accounts called"}])):
            ranked, counts = recall_rows_and_counts(conn, words, 20, namespace, now_ms())
            assert ranked == recall_rows(conn, "What did Caroline say about pottery?", 20, namespace, now=now_ms())
            assert counts.memories == len(records)
            assert counts.holding == {w: sum(w in tokens(r["text"]) for r in records) for w in words.words}
            if namespace == "chat":
                assert counts.holding["caroline"] == 20 and ranked[0]["id"] == "c007"
        # An empty namespace holds none of them.
        assert recall_rows_and_counts(conn, words, 5, "missing", now_ms()) == ([], type(counts)({"caroline": 0, "say": 0, "pottery": 0}, 0))
        # Every note holds "garden", no turn does.
        assert recall_rows_and_counts(conn, query_words(conn, "garden"), 5, "notes", now_ms())[1].holding == {"garden": 200}


def test_namespace_counts_read_words_as_coverage_does_and_hold_past_the_one_pass(store, monkeypatch):
    """The one pass counts words as hybrid recall's coverage reads a text (tokens: a virama splits
    a Devanagari word, as it does in the index), expired memories included as the namespace's
    size includes them, and ranks only the unexpired. A namespace with more matches than it reads
    is ranked by recall_rows, with the same answer, and its words counted in the index, or in the
    store when it holds most of it."""
    from memstore.db import read_transaction, write_transaction
    from memstore.fulltext import recall_rows, query_words
    from memstore.recall import lexical
    from memstore.recall.lexical import recall_rows_and_counts
    from memstore.records import now_ms
    from memstore.schema import memories
    from memstore.words import tokens

    texts = ["नमस्ते dost", "namaste dost", "chai and dost", "dost again", "old dost"]
    store.add_many([{"id": f"a{n}", "text": t, "namespace": "a"} for n, t in enumerate(texts)])
    store.add_many([{"id": f"b{n}", "text": f"elsewhere dost {n}", "namespace": "b"} for n in range(10)])
    with write_transaction(store.engine) as conn:  # a4 expired a moment ago, not yet archived
        conn.execute(memories.update().where(memories.c.id == "a4").values(expires_at=1))
    query = "नमस्ते dost"
    with read_transaction(store.engine) as conn:
        words = query_words(conn, query)
        ranked, counts = recall_rows_and_counts(conn, words, 10, "a", now_ms())
        assert counts.holding == {w: sum(w in tokens(t) for t in texts) for w in words.words} and counts.memories == 5
        assert [row["id"] for row in ranked] == [row["id"] for row in recall_rows(conn, query, 10, "a", now=now_ms())] and "a4" not in [row["id"] for row in ranked]
        monkeypatch.setattr(lexical, "NAMESPACE_MATCHES_READ", 2)
        # A minority of the store: counted in the index (a4 included, as the one pass counts it).
        past = recall_rows_and_counts(conn, words, 10, "a", now_ms())
        assert past[0] == recall_rows(conn, query, 10, "a", now=now_ms()) and past[1].holding["dost"] == 5 and past[1].memories == 5
        # Most of the store: weighed as the store.
        most = recall_rows_and_counts(conn, query_words(conn, "dost"), 10, "b", now_ms())
        assert most[0] == recall_rows(conn, "dost", 10, "b", now=now_ms()) and most[1] == type(counts)({"dost": 15}, 15)


def test_hybrid_recall_of_common_words_only_in_a_small_namespace_of_a_big_store(sqlite_store):
    """A query made only of common words is counted in the whole store (more memories than the
    namespace searched holds): hybrid recall weighs its words alike and answers."""
    import numpy as np

    from memstore.db import read_transaction
    from memstore.records import now_ms

    from .handmade import store_handmade_vectors

    common_word_store(sqlite_store)
    rows = sqlite_store.list(None)
    store_handmade_vectors(sqlite_store, {row["id"]: [1.0, 0.0, 0.0, float(n % 7)] for n, row in enumerate(rows)})
    with read_transaction(sqlite_store.engine) as conn:
        found = sqlite_store.recaller.ranked_rows(conn, "the", 5, "work", "hybrid", np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32), now_ms())
    assert [row["id"] for row in found] == ["o1"] and found[0]["found_by"] == ["semantic"]


def test_a_word_no_memory_holds_still_drops_the_common_ones(store):
    common_word_store(store)
    assert store.recall("the zyzzyva", touch=False) == []
