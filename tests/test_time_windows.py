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
