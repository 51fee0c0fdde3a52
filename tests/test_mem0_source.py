"""The plumbing for the mem0 importer's tests: the real mem0 (mem0ai, offline: fastembed on the local
model directory, Qdrant in local path mode, add(..., infer=False)) writes the get_all / search dumps
we ask for (tests/mem0_source.py)."""

from __future__ import annotations

import hashlib
import json
import sys
import urllib.request
import uuid
from datetime import datetime, timedelta

import pytest

from .mem0_source import Mem0SourceError, open_mem0, write_mem0_dump

MEMORIES = [
    {"text": "I prefer dark roast coffee, no sugar.", "metadata": {"source": "chat", "importance": 3}},
    {"text": "Works on the billing service."},
    {"text": "Allergic to peanuts"},
    {"text": "Mein Lieblingsort ist der Bodensee — im Frühling.", "agent_id": "planner", "run_id": "run-42"},
    {"text": "Noted: the trip is planned for May.", "role": "assistant", "actor": "planner-bot", "agent_id": "planner", "expiration_date": "2099-01-31"},
    {"text": "Keeps the spare key under the blue pot.", "expiration_date": "2020-01-31"},
    {"text": "Bob's memory, not Alice's.", "user_id": "bob"},
]


@pytest.fixture(scope="module")
def get_all_dump(model_dir, tmp_path_factory):
    """One Memory for the module: the get_all dump, as saved, and as mem0 returned it."""
    path = tmp_path_factory.mktemp("mem0") / "get_all.json"
    document = write_mem0_dump(
        path,
        model_dir,
        MEMORIES,
        updates=[(1, "Works on the billing and invoicing services.", {"team": "payments"})],
        deletes=[2],
    )
    return path, document


def by_text(document):
    return {record["memory"]: record for record in document["results"]}


def test_get_all_is_saved_as_mem0_returns_it(get_all_dump):
    path, document = get_all_dump
    assert path.read_text(encoding="utf-8") == json.dumps(document)  # json.dump's defaults, as a user saves it
    assert list(document) == ["results"]
    records = by_text(document)
    # The deleted memory, the expired one and bob's are not there.
    assert sorted(records) == sorted(
        [
            "I prefer dark roast coffee, no sugar.",
            "Works on the billing and invoicing services.",
            "Mein Lieblingsort ist der Bodensee — im Frühling.",
            "Noted: the trip is planned for May.",
        ]
    )
    for record in document["results"]:
        assert {"id", "memory", "hash", "metadata", "created_at", "updated_at", "user_id", "role"} <= set(record)
        assert "score" not in record
        assert str(uuid.UUID(record["id"])) == record["id"]
        assert record["hash"] == hashlib.md5(record["memory"].encode()).hexdigest()
        assert record["user_id"] == "alice"
        for key in ("created_at", "updated_at"):
            moment = datetime.fromisoformat(record[key])
            assert moment.utcoffset() == timedelta(0), record[key]  # e.g. 2026-12-03T07:49:04.237474+00:00
            assert record[key].endswith("+00:00")


def test_updates_deletes_metadata_and_ids_come_through(get_all_dump):
    _, document = get_all_dump
    records = by_text(document)

    coffee = records["I prefer dark roast coffee, no sugar."]
    assert coffee["metadata"] == {"source": "chat", "importance": 3}
    assert coffee["updated_at"] == coffee["created_at"]
    assert coffee["role"] == "user"
    assert not {"agent_id", "run_id", "actor_id", "expiration_date"} & set(coffee)

    updated = records["Works on the billing and invoicing services."]
    assert datetime.fromisoformat(updated["updated_at"]) > datetime.fromisoformat(updated["created_at"])
    assert updated["metadata"] == {"team": "payments"}  # update(metadata=...) merged into the payload

    lake = records["Mein Lieblingsort ist der Bodensee — im Frühling."]
    assert (lake["agent_id"], lake["run_id"], lake["metadata"]) == ("planner", "run-42", None)

    trip = records["Noted: the trip is planned for May."]
    assert (trip["role"], trip["actor_id"], trip["agent_id"], trip["expiration_date"]) == ("assistant", "planner-bot", "planner", "2099-01-31")


def test_search_is_saved_with_scores_best_first_and_can_be_a_bare_list(model_dir, tmp_path):
    path = tmp_path / "search.json"
    results = write_mem0_dump(
        path,
        model_dir,
        [{"text": "I prefer dark roast coffee."}, {"text": "Lives in Lisbon."}],
        shape="search",
        query="coffee",
        bare=True,
    )
    assert json.loads(path.read_text(encoding="utf-8")) == results
    assert isinstance(results, list)
    assert results[0]["memory"] == "I prefer dark roast coffee."
    scores = [record["score"] for record in results]
    assert scores == sorted(scores, reverse=True) and all(isinstance(score, float) for score in scores)


def test_a_network_attempt_while_mem0_is_open_fails_the_dump(model_dir):
    with pytest.raises(Mem0SourceError, match="tried to reach the network"):
        with open_mem0(model_dir):
            with pytest.raises(OSError):
                urllib.request.urlopen("http://mem0.invalid/", timeout=5)


def test_without_mem0_it_fails_rather_than_skips(model_dir, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "mem0", None)  # import mem0 now raises ImportError
    with pytest.raises(Mem0SourceError, match="mem0ai"):
        write_mem0_dump(tmp_path / "get_all.json", model_dir, [{"text": "x"}])
