"""The stretches of time a query names (memstore.recall.when), and what hybrid recall does with them:
a memory written in the time asked about comes before one about the same thing written at another
time; a query that names no time ranks as before."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from memstore.recall.when import DAY_MS, WRITTEN_WITHIN_DAYS, inside, windows


def ms(*parts: int) -> int:
    return int(datetime(*parts, tzinfo=timezone.utc).timestamp() * 1000)


ASKED = ms(2023, 5, 20, 12)  # a Saturday
SLACK = WRITTEN_WITHIN_DAYS * DAY_MS


@pytest.mark.parametrize(
    "query, expected",
    [
        ("What did I buy in March?", [(ms(2023, 3, 1), ms(2023, 4, 1) + SLACK)]),
        ("Where was I in October?", [(ms(2022, 10, 1), ms(2022, 11, 1) + SLACK)]),  # not after the moment's month
        ("Which trip did I take in May?", [(ms(2023, 5, 1), ms(2023, 6, 1) + SLACK)]),
        ("may I ask what I cooked?", []),  # the verb, not the month
        ("What did I read last week?", [(ASKED - 7 * DAY_MS, ASKED + SLACK)]),
        ("How many films did I see in the past two months?", [(int(ASKED - 2 * 30.44 * DAY_MS), ASKED + SLACK)]),
        ("What did I fix a couple of days ago?", [(ASKED - 3 * DAY_MS, ASKED - DAY_MS + SLACK)]),
        ("Who called yesterday?", [(ASKED - 2 * DAY_MS, ASKED + SLACK)]),
        ("What did I do last Tuesday?", [(ms(2023, 5, 16), ms(2023, 5, 17) + SLACK)]),
        ("Where did I go last weekend?", [(ms(2023, 5, 13), ms(2023, 5, 15) + SLACK)]),
        ("How many books have I read?", []),
        ("How many days ago did I buy the plant?", []),  # a question about time, not a window
    ],
)
def test_the_windows_a_query_names(query, expected):
    assert windows(query, ASKED) == expected


def test_a_timestamp_is_inside_a_window_up_to_its_widened_end():
    (start, end), = windows("What did I buy in March?", ASKED)
    assert inside(start, [(start, end)]) and inside(ms(2023, 4, 8), [(start, end)])
    assert not inside(ms(2023, 4, 9), [(start, end)]) and not inside(start - 1, [(start, end)])


def test_hybrid_recall_puts_the_memory_of_the_time_asked_about_first(sqlite_store, model_dir):
    store = sqlite_store
    today = datetime.now(timezone.utc)
    last_week = int(today.timestamp() * 1000) - 5 * DAY_MS
    long_ago = int(today.timestamp() * 1000) - 300 * DAY_MS
    store.add("I went hiking in the hills with my sister.", id="old", timestamp=long_ago)
    store.add("My brother and I walked up a hill trail.", id="recent", timestamp=last_week)
    store.enable_embeddings(model_dir)
    store.sync_embeddings()
    asked = [row["id"] for row in store.recall("Where did I go hiking last week?", 2, touch=False, mode="hybrid")]
    plain = [row["id"] for row in store.recall("Where did I go hiking?", 2, touch=False, mode="hybrid")]
    assert asked == ["recent", "old"]
    assert plain == ["old", "recent"]  # no time named: the memory that says "hiking" ranks first


# -- odd times: every count and every moment a timestamp can hold gives windows, never an error --

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
NINES = "9" * 400
YEAR_ONE_JANUARY = ms(1, 1, 15)


@pytest.mark.parametrize(
    "query, now, expected",
    [
        # A count beyond every timestamp reaches back to the first one.
        (f"what happened in the last {NINES} days", ASKED, [(INT64_MIN, ASKED + SLACK)]),
        (f"what did I do {NINES} years ago", ASKED, [(INT64_MIN, INT64_MIN + SLACK)]),
        # A moment beyond the calendar's year 9999: the counted stretches, never a month's name
        # (a count of days is a float: at 2**63 it is exact to 2 kB of ms).
        ("what did I read last week in March", INT64_MAX, [(int(INT64_MAX - 7.0 * DAY_MS), INT64_MAX)]),
        ("who called yesterday", INT64_MIN, [(INT64_MIN, INT64_MIN + SLACK)]),
        ("where did I go last weekend", ms(9999, 12, 31, 23), [(ms(9999, 12, 25), ms(9999, 12, 27) + SLACK)]),
        # "In March" asked in January of year 1 would be March of year 0: no month of the calendar.
        ("what did I buy in March", YEAR_ONE_JANUARY, []),
        ("what did I buy in December", ms(9999, 12, 20), [(ms(9999, 12, 1), ms(9999, 12, 31) + DAY_MS + SLACK)]),
    ],
)
def test_odd_counts_and_moments_give_windows_within_a_timestamps_range(query, now, expected):
    assert windows(query, now) == expected


def test_hybrid_recall_answers_on_odd_times_on_both_backends(store_url, model_dir):
    from memstore import MemoryStore
    from memstore.integrations.langgraph import MemstoreStore

    with MemoryStore(store_url) as store:
        store.add("We went hiking in March with the dog.", id="hike", timestamp=ms(2023, 3, 10))
        store.enable_embeddings(model_dir)
        store.sync_embeddings()
        ids = lambda rows: [row["id"] for row in rows]  # noqa: E731
        assert ids(store.recall(f"what happened in the last {NINES} days hiking", 1, touch=False, mode="hybrid")) == ["hike"]
        for moment in (INT64_MAX, ms(9999, 12, 31, 23, 59), YEAR_ONE_JANUARY):
            answer = store.recall("hiking in March", 1, touch=False, mode="hybrid", as_of=moment)
            assert ids(answer) == (["hike"] if moment > ms(2023, 3, 10) else [])
        graph = MemstoreStore(store)
        graph.put(("trips",), "hike", {"content": "Went hiking up the hill in March."})
        assert [item.key for item in graph.search(("trips",), query=f"hiking in the past {NINES} years")] == ["hike"]
