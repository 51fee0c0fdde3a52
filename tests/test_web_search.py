"""The search page's hint, the report page's staleness chart and the flags page's sort words, in
process (the ASGI app `memstore web` serves, alone, through Starlette's TestClient) on real SQLite
files and a real PostgreSQL.

A search that finds nothing in its namespace names the others that hold matches, whichever they are
(one bounded full-text read, `MemoryStore.namespaces_matching`: the namespaces it names are those
where recall finds something); the overview draws no chart that reads a namespace's rows, and the
report page's staleness chart counts what the pure-Python rule (memstore.hygiene.staleness) gives.
"""

from __future__ import annotations

import re

import pytest
from starlette.testclient import TestClient

from memstore.defaults import DAY_MS
from memstore.hygiene import staleness
from memstore.records import now_ms
from memstore.web.pages import create_app

# Twelve namespaces larger than the one that holds the word: more than the page's hint used to look in.
BIG = 12


def client(store, **options) -> TestClient:
    return TestClient(create_app(store, token="t0ken", **options), base_url="http://127.0.0.1")


def notices(html: str) -> list[str]:
    """The page's notices as a person reads them (tags dropped, spaces joined)."""
    return [re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", notice)) for notice in re.findall(r'<p class="notice">(.*?)</p>', html, re.S)]


@pytest.fixture
def spread(store):
    """BIG namespaces big0 (largest) .. big11 of plain facts; "zeppelin" held twice in big5, once
    in big7 and in the smallest namespace, "tiny"; once in big9 by a memory that has expired."""
    now = now_ms()
    store.add_many({"id": f"b{n}-{i}", "text": f"Plain fact {i} of shelf {n}.", "namespace": f"big{n}"}
                   for n in range(BIG) for i in range(BIG + 3 - n))  # fmt: skip
    store.add_many([
        {"id": "z1", "text": "The zeppelin lands at noon.", "namespace": "big5"},
        {"id": "z2", "text": "A zeppelin is a rigid airship.", "namespace": "big5"},
        {"id": "z3", "text": "Zeppelin tickets are sold out.", "namespace": "big7"},
        {"id": "z4", "text": "Her zeppelin model is painted red.", "namespace": "tiny"},
    ])  # fmt: skip
    store.add("The old zeppelin timetable.", id="z5", namespace="big9", expires_at=now - 1)
    return store


def test_an_empty_answer_names_every_namespace_where_recall_finds_the_words(spread):
    every = spread.namespaces_matching("zeppelin timetable", "big0", limit=None)
    assert every == {"big5": 2, "big7": 1, "tiny": 1}
    found = {name for name in spread.namespaces() if name != "big0" and spread.recall("zeppelin timetable", 20, name, touch=False)}
    assert set(every) == found
    assert spread.namespaces_matching("zeppelin", "big5", limit=2) == {"big7": 1, "tiny": 1}
    # Words held by every namespace: the one with the most of the newest matches, ties by name.
    assert spread.namespaces_matching("plain shelf", "big0", limit=1) == {"big1": BIG + 2}
    assert spread.namespaces_matching("", "big0") == {} and spread.namespaces_matching("zeppelin", "big0", limit=0) == {}


def test_the_search_page_hints_at_a_small_namespace_behind_many_larger_ones(spread):
    with client(spread) as opened:
        html = opened.get("/memories", params={"q": "zeppelin", "namespace": "big0"}).text
    with client(spread, namespace="big0") as opened:
        kept = opened.get("/memories", params={"q": "zeppelin"}).text
    assert notices(html) == ["Nothing in big0, but 2 in big5, 1 in big7, 1 in tiny (or search every namespace)."]
    assert 'href="/memories?q=zeppelin&amp;namespace=tiny"' in html
    assert "Nothing found." in kept
    assert not re.search(r"big5|big7|tiny", kept)  # a page kept to one namespace names no other


def test_a_namespace_is_missing_only_when_it_holds_nothing_live_or_archived(spread):
    spread.add("Boxes of old letters.", id="attic1", namespace="attic")
    spread.forget(["attic1"])
    with client(spread) as opened:
        archived_only = opened.get("/memories", params={"q": "zeppelin", "namespace": "attic"}).text
        mistyped = opened.get("/memories", params={"q": "zeppelin", "namespace": "tiyn"}).text
    assert notices(archived_only) == ["Nothing in attic, but 2 in big5, 1 in big7, 1 in tiny (or search every namespace)."]
    assert notices(mistyped)[0] == "There is no namespace tiyn: did you mean tiny?"


def test_the_staleness_chart_is_the_reports_and_counts_what_the_rule_gives(store):
    now = now_ms()
    store.add_many({"id": f"s{n}", "text": f"Fact {n} written {n * 9} days ago.", "created_at": now - n * 9 * DAY_MS} for n in range(25))
    expected = [0] * 5
    for row in store.list("default"):
        expected[min(int(staleness(row, now) / 0.2), 4)] += 1
    assert sum(1 for count in expected if count) >= 4  # the rows spread over the bins
    with client(store) as opened:
        overview, report = opened.get("/").text, opened.get("/report", params={"namespace": "default"}).text
    assert "Staleness of the live memories" not in overview
    chart = report[report.index("Staleness of the live memories of default") :]
    chart = chart[: chart.index("</svg>")]
    drawn = [int(value) for value in re.findall(r'<text x="[\d.]+" y="\d+" font-size="11">(\d+)</text>', chart)]
    assert drawn == expected


def test_the_flags_page_names_the_sort_as_the_command_line_does(store):
    with client(store) as opened:
        html = opened.get("/flags", params={"sort": "strongest"}).text
    assert re.search(r'<option value="strongest" selected>strongest first</option>', html)
    assert "most alike" not in html
