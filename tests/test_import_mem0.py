"""`memstore import --from mem0` on dumps the real mem0 wrote (mem0ai offline, tests/mem0_source.py):
every memory arrives with its text, namespace, times and end, and a second import adds nothing."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from click.testing import CliRunner

from memstore import MemoryStore
from memstore.cli import cli

from .mem0_source import write_mem0_dump

MEMORIES = [
    {"text": "I prefer dark roast coffee, no sugar.", "metadata": {"source": "chat", "importance": 3}},
    {"text": "Works on the billing service."},
    {"text": "Allergic to peanuts"},
    {"text": "Mein Lieblingsort ist der Bodensee — im Frühling.", "agent_id": "planner", "run_id": "run-42"},
    {"text": "Noted: the trip is planned for May.", "role": "assistant", "actor": "planner-bot", "expiration_date": "2099-01-31"},
]


@pytest.fixture(scope="module")
def dumps(model_dir, tmp_path_factory):
    folder = tmp_path_factory.mktemp("mem0")
    get_all = write_mem0_dump(
        folder / "get_all.json", model_dir, MEMORIES, updates=[(1, "Works on the billing and invoicing services.")], deletes=[2]
    )
    search = write_mem0_dump(folder / "search.json", model_dir, MEMORIES[:2], shape="search", query="coffee", user_id="bob", bare=True)
    return folder, get_all, search


def invoke(db, *args: str):
    return CliRunner().invoke(cli, ["--db", str(db), *args])


def ms(iso: str) -> int:
    return (datetime.fromisoformat(iso) - datetime(1970, 1, 1, tzinfo=timezone.utc)) // timedelta(milliseconds=1)


def test_a_get_all_dump_arrives_memory_for_memory_with_its_times(dumps, store_url):
    folder, document, _ = dumps
    result = invoke(store_url, "import", "--from", "mem0", str(folder / "get_all.json"))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["imported 4 memories (0 already stored)", "  memory: 4 new, 0 already stored"]
    with MemoryStore(store_url) as store:
        rows = {row["text"]: row for row in store.iter_rows(None)}
    source = {record["memory"]: record for record in document["results"]}
    assert rows.keys() == source.keys()  # the deleted memory is not in the dump, nor here
    for text, record in source.items():
        row = rows[text]
        assert row["namespace"] == "alice"
        assert (row["timestamp"], row["created_at"], row["updated_at"]) == (ms(record["created_at"]), ms(record["created_at"]), ms(record["updated_at"]))
        assert row["meta"]["source_id"] == record["id"] and row["meta"]["hash"] == record["hash"]
    assert rows["Works on the billing and invoicing services."]["updated_at"] > rows["Works on the billing and invoicing services."]["created_at"]
    assert rows["Noted: the trip is planned for May."]["expires_at"] == ms("2099-02-01T00:00:00+00:00")
    assert rows["Noted: the trip is planned for May."]["meta"]["actor_id"] == "planner-bot"
    assert rows["I prefer dark roast coffee, no sugar."]["meta"]["metadata"] == {"source": "chat", "importance": 3}
    again = json.loads(invoke(store_url, "import", "--from", "mem0", str(folder / "get_all.json"), "--json").stdout)
    assert (again["added"], again["unchanged"]) == (0, 4)


def test_a_search_result_saved_as_a_bare_list_arrives_without_its_scores(dumps, db_path):
    folder, _, search = dumps
    results = search if isinstance(search, list) else search["results"]
    assert results and all("score" in record for record in results)
    result = invoke(db_path, "import", "--from", "mem0", str(folder / "search.json"), "--json")
    assert json.loads(result.stdout)["added"] == len(results)
    with MemoryStore(db_path) as store:
        rows = store.list("bob")
    assert sorted(row["text"] for row in rows) == sorted(record["memory"] for record in results)
    assert not any("score" in row["meta"] for row in rows)
