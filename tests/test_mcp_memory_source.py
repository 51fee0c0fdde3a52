"""The plumbing for the mcp-memory importer's tests: the real reference MCP memory server, driven
by the MCP Python SDK (tests/mcp_memory_source.py), writes the memory.jsonl we ask for."""

from __future__ import annotations

import json

import pytest

from .mcp_memory_source import ENV_VAR, McpMemoryServerError, call_memory_server, write_memory_file


def test_the_reference_server_writes_entities_then_relations_one_json_object_a_line(tmp_path):
    path = tmp_path / "agent" / "memory.jsonl"
    write_memory_file(
        path,
        entities=[
            {"name": "Alice", "entityType": "person", "observations": ["Prefers dark mode", "Speaks Dutch"]},
            {"name": "Acme", "entityType": "organization", "observations": []},
        ],
        relations=[{"from": "Alice", "to": "Acme", "relationType": "works_at"}],
        # "Speaks Dutch" is there already: the server keeps one.
        observations=[{"entityName": "Alice", "contents": ["Deploys on Fridays", "Speaks Dutch"]}],
    )

    text = path.read_text(encoding="utf-8")
    assert text.split("\n") == [
        '{"type":"entity","name":"Alice","entityType":"person","observations":["Prefers dark mode","Speaks Dutch","Deploys on Fridays"]}',
        '{"type":"entity","name":"Acme","entityType":"organization","observations":[]}',
        '{"type":"relation","from":"Alice","to":"Acme","relationType":"works_at"}',
    ]  # and no newline after the last line
    assert sorted(p.name for p in path.parent.iterdir()) == ["memory.jsonl"]  # no temp file left


def test_later_sessions_rewrite_the_whole_file_entities_first_and_keep_unicode(tmp_path):
    path = tmp_path / "memory.jsonl"
    write_memory_file(path, [{"name": "Zoë", "entityType": "person", "observations": ["Likes \"quotes\" and ✓"]}], [])
    call_memory_server(
        path,
        [
            ("create_relations", {"relations": [{"from": "Zoë", "to": "Bob", "relationType": "knows"}]}),
            ("create_entities", {"entities": [{"name": "Bob", "entityType": "person", "observations": []}]}),
        ],
    )

    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n")]
    assert lines == [
        {"type": "entity", "name": "Zoë", "entityType": "person", "observations": ['Likes "quotes" and ✓']},
        {"type": "entity", "name": "Bob", "entityType": "person", "observations": []},
        {"type": "relation", "from": "Zoë", "to": "Bob", "relationType": "knows"},
    ]
    assert "Zoë" in path.read_text(encoding="utf-8")  # written as UTF-8, not \\u escapes


def test_a_tool_error_raises_with_the_servers_message(tmp_path):
    with pytest.raises(McpMemoryServerError, match="Entity with name Nobody not found"):
        call_memory_server(tmp_path / "memory.jsonl", [("add_observations", {"observations": [{"entityName": "Nobody", "contents": ["x"]}]})])


def test_without_the_server_it_fails_rather_than_skips(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    with pytest.raises(McpMemoryServerError, match=ENV_VAR):
        write_memory_file(tmp_path / "memory.jsonl", [], [])
