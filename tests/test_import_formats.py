"""`memstore import --from mem0|mcp-memory-service|uteke|basic-memory` on files in the shapes those tools
write (tests/data/import/README.md says which source file of which version each was read from; the
mem0 dumps marked "offline" and the mcp-memory-service export were written by the tools themselves)."""

from __future__ import annotations

import json
import os
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import text

from memstore import MemoryStore
from memstore.cli import cli
from memstore.importers.basic_memory import blocks, frontmatter, notes, observation, relation

DATA = Path(__file__).parent / "data" / "import"

# (format, source, memories it holds)
SOURCES = [
    ("mem0", DATA / "mem0" / "get_all.json", 6),
    ("mem0", DATA / "mem0" / "search_list.json", 3),
    ("mem0", DATA / "mem0" / "platform_get_all.json", 4),
    ("mem0", DATA / "mem0" / "get_all.offline-2.2.1.json", 4),
    ("mem0", DATA / "mem0" / "get_all.offline-1.0.11.json", None),
    ("mem0", DATA / "openmemory" / "export.zip", 5),
    ("mem0", DATA / "openmemory" / "memories.json", 5),
    ("mem0", DATA / "openmemory" / "memories.jsonl.gz", 5),
    ("mcp-memory-service", DATA / "mcp-memory-service" / "export.json", 4),
    ("mcp-memory-service", DATA / "mcp-memory-service" / "export_v4.6.1.json", 3),
    ("uteke", DATA / "uteke" / "export.jsonl", 5),
    ("basic-memory", DATA / "basic-memory" / "notes", 19),
]
IDS = [f"{fmt}:{path.name}" for fmt, path, _ in SOURCES]


def invoke(db, *args: str):
    return CliRunner().invoke(cli, ["--db", str(db), *args])


def ms(iso: str) -> int:
    return int(datetime.fromisoformat(iso).astimezone(timezone.utc).timestamp() * 1000 // 1)


def rows_by_text(store: MemoryStore, namespace: str | None = None, *, archived: bool = False) -> dict[str, dict]:
    """Every row of the live table (expired ones included) or of the archive, by text."""
    table = "memory_archive" if archived else "memories"
    with store.engine.connect() as conn:
        ids = conn.execute(text(f"SELECT id FROM {table} WHERE namespace = :ns OR :ns IS NULL"), {"ns": namespace}).scalars().all()
    return {row["text"]: row for row in (store.get(memory_id) for memory_id in ids)}


def snapshot(path: Path) -> dict[str, tuple[bytes, int]]:
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    return {str(p): (p.read_bytes(), p.stat().st_mtime_ns) for p in files}


@pytest.mark.parametrize(("source_format", "source", "count"), SOURCES, ids=IDS)
def test_each_source_imports_once_and_a_second_import_adds_nothing(source_format, source, count, store_url):
    before = snapshot(source)
    assert invoke(store_url, "init").exit_code == 0  # a dry run writes nothing, not even a new store
    dry = invoke(store_url, "import", "--from", source_format, str(source), "--dry-run", "--json")
    assert dry.exit_code == 0, dry.output
    expected = json.loads(dry.stdout)
    with MemoryStore(store_url) as store, store.engine.connect() as conn:
        assert conn.execute(text("SELECT (SELECT count(*) FROM memories) + (SELECT count(*) FROM memory_archive)")).scalar_one() == 0  # the dry run wrote nothing
    first = invoke(store_url, "import", "--from", source_format, str(source), "--json")
    assert first.exit_code == 0, first.output
    report = json.loads(first.stdout)
    assert {**report, "dry_run": True, "run_id": None} == expected  # the dry run said exactly what the import did
    if count is not None:
        assert report["added"] == count
    again = json.loads(invoke(store_url, "import", "--from", source_format, str(source), "--json").stdout)
    assert (again["added"], again["unchanged"], again["archived"]) == (0, report["added"], 0)
    with MemoryStore(store_url) as store, store.engine.connect() as conn:
        # Expired memories included (mem0's dump holds one past its expiration_date): every row.
        live, archived = (conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one() for table in ("memories", "memory_archive"))
    assert live + archived == report["added"] and archived == report["archived"]
    assert snapshot(source) == before  # read, never written


def test_mem0_get_all_maps_namespace_times_expiry_and_keeps_every_field(db_path):
    assert invoke(db_path, "import", "--from", "mem0", str(DATA / "mem0" / "get_all.json")).exit_code == 0
    source = {item["memory"]: item for item in json.loads((DATA / "mem0" / "get_all.json").read_text())["results"]}
    with MemoryStore(db_path) as store:
        rows = rows_by_text(store)
        assert store.namespaces() == ["alice"]
    assert rows.keys() == source.keys()
    for text, item in source.items():
        row = rows[text]
        assert row["namespace"] == "alice"
        assert row["timestamp"] == row["created_at"] == ms(item["created_at"])  # created_at is the memory's time
        assert row["updated_at"] == (ms(item["updated_at"]) if item["updated_at"] else row["created_at"])
        kept = {k: v for k, v in item.items() if k not in ("id", "memory", "created_at", "updated_at", "expiration_date") and v is not None}
        assert row["meta"] == {"imported_from": "mem0", "source_id": item["id"], **kept}
        assert row["expires_at"] == (None if item.get("expiration_date") is None else ms(item["expiration_date"] + "T00:00:00+00:00") + 86_400_000)
    # A time written in US/Pacific by mem0 <= 1.0.6 is the same moment in UTC.
    assert rows["Allergic to peanuts and tree nuts"]["created_at"] == ms("2025-01-15T02:22:41.117+00:00")
    assert any(row["expires_at"] is not None for row in rows.values())
    assert any("reviewed_by" in row["meta"] for row in rows.values())  # the hand-added unknown field is kept


def test_mem0_search_results_leave_out_only_the_score(db_path):
    assert invoke(db_path, "import", "--from", "mem0", str(DATA / "mem0" / "search_list.json"), "-n", "bob").exit_code == 0
    with MemoryStore(db_path) as store:
        rows = rows_by_text(store, "bob")
    assert len(rows) == 3 and not any("score" in row["meta"] for row in rows.values())
    assert rows["Trinkt morgens keinen Kaffee, nur grünen Tee"]["meta"]["agent_id"] == "barista"


def test_openmemory_export_archives_what_was_paused_archived_or_deleted_and_restore_brings_it_back(db_path):
    result = invoke(db_path, "import", "--from", "mem0", str(DATA / "openmemory" / "export.zip"))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[:2] == ["imported 5 memories (0 already stored)", "  memory: 5 new, 0 already stored, 3 to the archive"]
    run_id = int(lines[2].split("(run ")[1].split(";")[0])
    document = json.loads((DATA / "openmemory" / "memories.json").read_text())
    states = {memory["content"]: memory["state"] for memory in document["memories"]}
    with MemoryStore(db_path) as store:
        live, archived = rows_by_text(store, "alice"), rows_by_text(store, "alice", archived=True)
        assert {text: "active" for text in live} == {t: s for t, s in states.items() if s == "active"}
        assert {text: row["meta"]["state"] for text, row in archived.items()} == {t: s for t, s in states.items() if s != "active"}
        assert {row["reason"] for row in archived.values()} == {"forgotten"}
        typescript = live["Prefers TypeScript over JavaScript for new services"]
        assert typescript["meta"]["app"] == "claude" and typescript["meta"]["categories"] == ["preferences", "work"]
        assert any(row["meta"].get("vector_id") for row in [*live.values(), *archived.values()])  # unknown field kept
        store.restore(run_id)
        assert store.count("alice") == 5
    # The zip and the files inside it are the same memories (the jsonl.gz names no user: -n does).
    for inner in ("memories.json", "memories.jsonl.gz"):
        again = json.loads(invoke(db_path, "import", "--from", "mem0", str(DATA / "openmemory" / inner), "-n", "alice", "--json").stdout)
        assert (again["added"], again["unchanged"]) == (0, 5), inner


def test_a_record_whose_meta_or_times_changed_in_the_source_is_stored_already_and_one_whose_text_changed_is_refused(tmp_path, db_path):
    source = json.loads((DATA / "mem0" / "get_all.json").read_text())
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(source), encoding="utf-8")
    assert invoke(db_path, "import", "--from", "mem0", str(path)).exit_code == 0
    source["results"][0]["updated_at"] = "2027-01-01T00:00:00+00:00"
    source["results"][0]["metadata"] = {"edited": True}
    path.write_text(json.dumps(source), encoding="utf-8")
    assert json.loads(invoke(db_path, "import", "--from", "mem0", str(path), "--json").stdout)["unchanged"] == 6
    source["results"][1]["memory"] = "I prefer light roast now."
    path.write_text(json.dumps(source), encoding="utf-8")
    result = invoke(db_path, "import", "--from", "mem0", str(path))
    assert result.exit_code == 1 and result.stderr.startswith(f"Error: {path} memory 2: field 'id': ") and "already holds a different memory" in result.stderr


def test_mcp_memory_service_export_maps_store_epoch_seconds_and_tags(db_path):
    assert invoke(db_path, "import", "--from", "mcp-memory-service", str(DATA / "mcp-memory-service" / "export.json")).exit_code == 0
    source = json.loads((DATA / "mcp-memory-service" / "export.json").read_text())["memories"]
    with MemoryStore(db_path) as store:
        rows = rows_by_text(store)
    for memory in source:
        row = rows[memory["content"]]
        assert row["namespace"] == memory["store"]
        assert row["created_at"] == row["timestamp"] == int(memory["created_at"] * 1000)
        assert row["meta"]["tags"] == memory["tags"] and row["meta"]["content_hash"] == memory["content_hash"]
    assert sorted({row["namespace"] for row in rows.values()}) == ["default", "team"]
    assert any("quality_score" in row["meta"] for row in rows.values())


def test_uteke_export_maps_namespace_and_nanosecond_times(db_path):
    assert invoke(db_path, "import", "--from", "uteke", str(DATA / "uteke" / "export.jsonl")).exit_code == 0
    with MemoryStore(db_path) as store:
        rows = rows_by_text(store)
    staging = rows["The staging DB is reset every Sunday at 03:00 UTC"]
    assert staging["created_at"] == ms("2026-02-11T09:41:27.481+00:00") and staging["meta"]["tags"] == ["ops", "staging"]
    assert rows["Atlas pilot ends on 2026-04-30"]["namespace"] == "atlas"
    assert rows["Atlas pilot ends on 2026-04-30"]["meta"]["pinned"] is True  # not uteke's: kept, not mapped
    assert rows["legacy row from an older uteke export"]["namespace"] == "default"


def test_basic_memory_reads_observations_and_relations_as_basic_memory_itself_does():
    # expected_parse.json is basic-memory 0.24.1's own parser's output on these notes.
    expected = json.loads((DATA / "basic-memory" / "expected_parse.json").read_text())
    root = DATA / "basic-memory" / "notes"
    for path in notes(root):
        fields, body, line = frontmatter(path.read_text(encoding="utf-8"))
        parsed = expected[path.relative_to(root).as_posix()]
        found = [o for o in (observation(block.text) for block in blocks(body, line)) if o]
        assert found == parsed["observations"]
        explicit = [r for r in (relation(block.text) for block in blocks(body, line) if block.in_list) if r]
        assert explicit == [r for r in parsed["relations"] if r["type"] != "links_to"]
        assert {k: v for k, v in fields.items() if k != "created"} == {k: v for k, v in parsed["frontmatter"].items() if k != "created"}


def test_basic_memory_notes_become_memories_naming_their_note(tmp_path, db_path):
    root = tmp_path / "notes"
    shutil.copytree(DATA / "basic-memory" / "notes", root)
    coffee = root / "people" / "alice" / "Coffee Preferences.md"
    os.utime(coffee, ns=(1_767_225_600_000_000_000, 1_767_225_600_000_000_000))  # 2026-01-01: no `created` in it
    assert invoke(db_path, "import", "--from", "basic-memory", str(root)).exit_code == 0
    with MemoryStore(db_path) as store:
        rows = rows_by_text(store)
    dark = rows["Coffee Preferences: Prefers dark roast, no sugar #coffee #taste"]
    assert dark["meta"] == {
        "imported_from": "basic-memory", "note": "Coffee Preferences", "permalink": "main/people/alice/coffee-preferences",
        "file": "people/alice/Coffee Preferences.md", "note_type": "note", "note_tags": ["coffee", "preferences"],
        "category": "preference", "tags": ["coffee", "taste"], "context": "said during onboarding",
    }  # fmt: skip
    assert dark["created_at"] == dark["timestamp"] == 1_767_225_600_000
    kafka = rows["Project Atlas: Use Kafka for the event bus #architecture #streaming"]
    assert kafka["created_at"] == ms("2026-03-02T09:15:00+01:00") and kafka["meta"]["note_fields"] == {"status": "active"}
    assert rows["Project Atlas depends on Schema Registry"]["meta"]["relation"] == {"type": "depends on", "target": "Schema Registry", "context": "for Avro schemas"}
    assert not any("code block" in text or "Ask Dana" in text or "00:00:11" in text for text in rows)
    # Notes edited since (touched, retagged) hold the same observations: stored already.
    text = coffee.read_text(encoding="utf-8").replace("- preferences", "- preferences\n- mornings")
    coffee.write_text(text + "\n- [fact] Switched to oat milk in 2026 #milk\n", encoding="utf-8")
    again = json.loads(invoke(db_path, "import", "--from", "basic-memory", str(root), "--json").stdout)
    assert (again["added"], again["unchanged"]) == (1, 19)
    # One note as SOURCE reads just that note.
    single = invoke(db_path, "import", "--from", "basic-memory", str(coffee), "-n", "alice", "--json")
    assert json.loads(single.stdout)["kinds"] == {"observation": {"added": 4, "unchanged": 0, "archived": 0}, "relation": {"added": 2, "unchanged": 0, "archived": 0}}


# One bad record per format: (format, file name, its text, the error after "Error: <path> ").
BAD = [
    ("mem0", "dump.json", json.dumps({"results": [{"id": "a", "memory": "ok", "created_at": "2026-01-01T00:00:00Z"}, {"id": "b", "memory": "x", "created_at": "soon"}]}),
     "memory 2: field 'created_at': is not an ISO-8601 date: 'soon'"),
    ("mem0", "memories.json", json.dumps({"user": {"user_id": "u"}, "memories": [{"id": "a", "content": "ok", "state": "gone", "created_at": "2026-01-01T00:00:00Z"}]}),
     "memory 1: field 'state': must be one of active, archived, deleted, paused, got 'gone'"),
    ("mcp-memory-service", "export.json", json.dumps({"export_metadata": {}, "memories": [{"content": "ok", "content_hash": "h", "created_at": "yesterday"}]}),
     "memory 1: field 'created_at': must be a int or float, got 'yesterday'"),
    ("uteke", "export.jsonl", '{"content": "ok", "created_at": "2026-01-01T00:00:00Z"}\n{"content": 5, "created_at": "2026-01-01T00:00:00Z"}',
     "line 2: field 'content': must be a str, got 5"),
]


@pytest.mark.parametrize(("source_format", "name", "text", "error"), BAD, ids=[f"{b[0]}:{b[1]}" for b in BAD])
def test_a_bad_record_is_one_line_naming_file_record_and_field_and_nothing_is_written(source_format, name, text, error, tmp_path, db_path):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    result = invoke(db_path, "import", "--from", source_format, str(path))
    assert (result.exit_code, result.stdout, result.stderr) == (1, "", f"Error: {path} {error}\n")
    with MemoryStore(db_path) as store:
        assert store.count(None) == 0
    skipped = invoke(db_path, "import", "--from", source_format, str(path), "--skip-invalid")
    assert skipped.exit_code == 0 and skipped.stderr == f"skipped: {path} {error}\n"


def test_a_file_of_another_shape_is_refused_in_one_line(tmp_path, db_path):
    cases = [
        ("mem0", DATA / "mem0" / "platform_export.json", 'is not what mem0 returns: a list of memories, or {"results": [...]}'),
        ("mcp-memory-service", DATA / "uteke" / "export.jsonl", "line 2: invalid JSON: Extra data"),
        ("mem0", tmp_path / "broken.zip", "is not a whole zip file"),
    ]
    (tmp_path / "broken.zip").write_bytes(shutil.make_archive(str(tmp_path / "z"), "zip", DATA / "openmemory") and (tmp_path / "z.zip").read_bytes()[:-30])
    for source_format, path, error in cases:
        result = invoke(db_path, "import", "--from", source_format, str(path))
        assert result.exit_code == 1 and result.stderr.count("\n") == 1 and result.stderr.startswith(f"Error: {path}"), result.stderr
        assert error in result.stderr, result.stderr
    missing = invoke(db_path, "import", "--from", "basic-memory", str(tmp_path / "nowhere"))
    assert missing.exit_code == 1 and missing.stderr.count("\n") == 1 and "nowhere" in missing.stderr


def test_a_dry_run_creates_no_store_and_a_source_may_not_be_the_store_itself(tmp_path, db_path):
    result = invoke(db_path, "import", "--from", "uteke", str(DATA / "uteke" / "export.jsonl"), "--dry-run")
    assert result.exit_code == 1 and "no memstore database" in result.stderr and not db_path.exists()
    assert invoke(db_path, "init").exit_code == 0
    before = db_path.read_bytes()
    itself = invoke(db_path, "import", "--from", "langgraph", str(db_path), "--dry-run")
    assert (itself.exit_code, itself.stderr) == (1, f"Error: {db_path} is the store itself: import it into another store (--db)\n")
    assert db_path.read_bytes() == before


def test_a_url_s_password_never_reaches_the_report(db_path):
    result = invoke(db_path, "import", "--from", "langgraph", "postgresql://bob:s3cret@127.0.0.1:1/app", "--json")
    assert result.exit_code == 1 and "s3cret" not in result.stderr and "bob:***@" in result.stderr
    from memstore.importers.apply import ImportReport, import_source

    assert "s3cret" not in repr(ImportReport("langgraph", "postgresql://bob:***@h/app", False).to_dict())
    with pytest.raises(Exception) as raised, MemoryStore(db_path) as store:
        import_source(store.engine, "langgraph", "postgresql://bob:s3cret@127.0.0.1:1/app")
    assert "s3cret" not in str(raised.value)


def test_odd_files_are_one_line_errors_not_tracebacks(tmp_path, db_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    garbage = tmp_path / "bad.gz"
    garbage.write_bytes(b"\x1f\x8b" + b"not gzip at all")
    for source_format, path in (("mem0", deep), ("mem0", garbage), ("uteke", deep), ("mcp-memory-service", deep)):
        result = invoke(db_path, "import", "--from", source_format, str(path))
        assert result.exit_code == 1 and result.stderr.count("\n") == 1 and "unexpected" not in result.stderr, (source_format, result.stderr)
