"""`memstore import --from mcp-memory`: a memory.jsonl written by the real reference MCP memory server
(tests/mcp_memory_source.py drives it with the MCP SDK's client) becomes memories that recall finds
with their entity named."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from memstore import MemoryStore
from memstore.cli import cli

from .mcp_memory_source import write_memory_file

ENTITIES = [
    {"name": "Alice_Smith", "entityType": "person", "observations": ["Works as a nurse", "Speaks Dutch and Portuguese"]},
    {"name": "Project_Falcon", "entityType": "project", "observations": ["Ships in March"]},
    {"name": "Zoë", "entityType": "person", "observations": ["Prefers tea over coffee ☕"]},
    {"name": "Acme", "entityType": "organization", "observations": []},
]
OBSERVATIONS = [{"entityName": "Alice_Smith", "contents": ["Night shifts on weekends"]}]
RELATIONS = [
    {"from": "Alice_Smith", "to": "Project_Falcon", "relationType": "leads"},
    {"from": "Zoë", "to": "Acme", "relationType": "works_at"},
]


@pytest.fixture(scope="module")
def memory_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("mcp") / "memory.jsonl"
    write_memory_file(path, ENTITIES, RELATIONS, OBSERVATIONS)
    return path


def invoke(db, *args: str):
    return CliRunner().invoke(cli, ["--db", str(db), *args])


def test_the_servers_graph_becomes_one_memory_per_observation_and_relation(memory_file, store_url):
    before = memory_file.read_bytes()
    result = invoke(store_url, "import", "--from", "mcp-memory", str(memory_file), "-n", "alice")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "imported 8 memories (0 already stored)",
        "  entity: 1 new, 0 already stored",
        "  observation: 5 new, 0 already stored",
        "  relation: 2 new, 0 already stored",
    ]
    assert memory_file.read_bytes() == before
    with MemoryStore(store_url) as store:
        rows = {row["text"]: row for row in store.iter_rows("alice")}
    assert sorted(rows) == sorted([
        "Alice_Smith (person): Works as a nurse",
        "Alice_Smith (person): Speaks Dutch and Portuguese",
        "Alice_Smith (person): Night shifts on weekends",
        "Project_Falcon (project): Ships in March",
        "Zoë (person): Prefers tea over coffee ☕",
        "Acme (organization)",
        "Alice_Smith leads Project_Falcon",
        "Zoë works_at Acme",
    ])  # fmt: skip
    assert rows["Alice_Smith (person): Works as a nurse"]["meta"] == {"imported_from": "mcp-memory", "entity": "Alice_Smith", "entity_type": "person"}
    assert rows["Zoë works_at Acme"]["meta"] == {"imported_from": "mcp-memory", "relation": {"from": "Zoë", "type": "works_at", "to": "Acme"}}


def test_recall_finds_an_observation_with_its_entity_named(memory_file, db_path):
    assert invoke(db_path, "import", "--from", "mcp-memory", str(memory_file)).exit_code == 0
    result = invoke(db_path, "recall", "who works as a nurse", "--json", "-k", "1")
    assert result.exit_code == 0, result.output
    [best] = json.loads(result.stdout)
    assert best["text"] == "Alice_Smith (person): Works as a nurse"
    result = invoke(db_path, "recall", "Alice_Smith", "--json", "-k", "10")
    found = [row["text"] for row in json.loads(result.stdout)]
    assert "Alice_Smith leads Project_Falcon" in found and len([t for t in found if t.startswith("Alice_Smith")]) == 4


def test_importing_again_adds_nothing_and_later_observations_arrive(memory_file, tmp_path, db_path):
    copy = tmp_path / "memory.jsonl"
    copy.write_bytes(memory_file.read_bytes())
    assert invoke(db_path, "import", "--from", "mcp-memory", str(copy)).exit_code == 0
    again = invoke(db_path, "import", "--from", "mcp-memory", str(copy), "--json")
    assert (json.loads(again.stdout)["added"], json.loads(again.stdout)["unchanged"]) == (0, 8)
    # The agent keeps using the server; a second import brings only what is new.
    write_memory_file(copy, [], [{"from": "Acme", "to": "Project_Falcon", "relationType": "funds"}], [{"entityName": "Zoë", "contents": ["Lives in Porto"]}])
    later = invoke(db_path, "import", "--from", "mcp-memory", str(copy))
    assert later.stdout.splitlines()[0] == "imported 2 memories (8 already stored)"


def test_the_legacy_memory_json_is_read_the_same_way(memory_file, tmp_path, db_path):
    # Versions before 2025.11.25 wrote the same JSON Lines under the name memory.json.
    legacy = tmp_path / "memory.json"
    legacy.write_bytes(memory_file.read_bytes())
    assert invoke(db_path, "init").exit_code == 0  # a dry run writes nothing, not even a new store
    result = invoke(db_path, "import", "--from", "mcp-memory", str(legacy), "--dry-run")
    assert result.stdout.splitlines()[0] == "would import 8 memories (0 already stored)"


def test_a_bad_line_is_one_error_naming_file_line_and_field(memory_file, tmp_path, db_path):
    bad = tmp_path / "memory.jsonl"
    lines = memory_file.read_text(encoding="utf-8").splitlines()
    lines.insert(2, json.dumps({"type": "entity", "name": "Bob", "entityType": "person", "observations": ["ok", 7]}))
    bad.write_text("\n".join(lines), encoding="utf-8")
    result = invoke(db_path, "import", "--from", "mcp-memory", str(bad))
    assert (result.exit_code, result.stderr) == (1, f"Error: {bad} line 3: field 'observations[1]': must be a string, got 7\n")
    with MemoryStore(db_path) as store:
        assert store.count(None) == 0
    skipped = invoke(db_path, "import", "--from", "mcp-memory", str(bad), "--skip-invalid")
    assert skipped.stdout.splitlines()[0] == "imported 8 memories (0 already stored); skipped 1 invalid records"


def test_fields_the_importer_does_not_map_are_kept_in_meta(tmp_path, db_path):
    # Versions up to 2025.8.4 wrote every field a client sent along with an entity.
    path = tmp_path / "memory.json"
    path.write_text(json.dumps({"type": "entity", "name": "Bob", "entityType": "person", "observations": ["Likes jazz"], "aliases": ["Bobby"]}), encoding="utf-8")
    assert invoke(db_path, "import", "--from", "mcp-memory", str(path)).exit_code == 0
    with MemoryStore(db_path) as store:
        [row] = store.list()
    assert row["meta"] == {"imported_from": "mcp-memory", "entity": "Bob", "entity_type": "person", "extra": {"aliases": ["Bobby"]}}
