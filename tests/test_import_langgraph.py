"""`memstore import --from langgraph`: stores written by LangGraph's own SqliteStore and PostgresStore
become memstore stores that `MemstoreStore` reads back value for value, with the same times and the
same remaining lifetime."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner
from langgraph.store.postgres import PostgresStore
from langgraph.store.sqlite import SqliteStore
from sqlalchemy.engine import make_url

from memstore import MemoryStore
from memstore.cli import cli
from memstore.integrations.langgraph import MemstoreStore

# Values of every JSON type, nested, and keys and labels that are not ASCII.
ITEMS = [
    (("users", "u1", "memories"), "tea", {"content": "User likes green tea.", "confidence": 0.9}),
    (("users", "u1", "memories"), "pets", {"content": "Has a cat named Ωmega.", "tags": ["pet", "cat"], "n": 1}),
    (("users", "u1", "memories"), "floats", {"content": "A float stays a float.", "whole": 1.0, "big": 12345678901234567890, "none": None}),
    (("users", "u1", "profile"), "prefs", {"theme": "dark", "font": {"size": 14, "mono": True}}),
    (("users", "u2", "memories"), "tea", {"content": "Prefers coffee to tea."}),
    (("agents", "planner", "notes"), "naïve-key ✓", {"text": "Plans on Mondays."}),
    (("users", "u1", "memories"), "structured", {"kind": "Preference", "content": {"what": "tea", "likes": True}}),
]
# Items with a lifetime: (namespace, key, value, ttl minutes).
LIVING = [
    (("users", "u1", "session"), "draft", {"content": "Half-written reply."}, 90),
    (("users", "u1", "session"), "mood", {"content": "Seems tired today."}, 0.5),
]


def fill(store) -> None:
    for namespace, key, value in ITEMS:
        store.put(namespace, key, value)
    for namespace, key, value, ttl in LIVING:
        store.put(namespace, key, value, ttl=ttl)
    # A key put twice: the second value is the item.
    store.put(("users", "u1", "memories"), "tea", {"content": "User likes oolong tea.", "confidence": 0.95})


@pytest.fixture
def sqlite_source(tmp_path):
    path = tmp_path / "langgraph.db"
    with SqliteStore.from_conn_string(str(path)) as source:
        source.setup()
        fill(source)
    return path


@pytest.fixture
def postgres_source(postgres):
    name = postgres.new_database(migrated=False)
    url = make_url(postgres.url(name)).set(drivername="postgresql").render_as_string(hide_password=False)
    with PostgresStore.from_conn_string(url) as source:
        source.setup()
        fill(source)
    yield url
    postgres.drop_database(name)


def invoke(db, *args: str, input: str | None = None):
    return CliRunner().invoke(cli, ["--db", str(db), *args], input=input)


def source_items(store) -> dict[tuple[tuple[str, ...], str], object]:
    """Every item of a LangGraph store, by (namespace, key)."""
    found = {}
    for namespace in store.list_namespaces(limit=1000):
        for item in store.search(namespace, limit=1000):
            if item.namespace == namespace:
                found[(namespace, item.key)] = item
    return found


def as_utc_ms(moment: datetime) -> int:
    """An item's time as UTC ms: SqliteStore hands back naive UTC times, PostgresStore aware ones."""
    moment = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)


def check_round_trip(source, target_url: str) -> None:
    """MemstoreStore over the imported store gives back every item of `source` as it was."""
    expected = source_items(source)
    assert len(expected) == len(ITEMS) + len(LIVING)
    with MemstoreStore(target_url, ttl={"refresh_on_read": False}) as imported:
        for (namespace, key), item in expected.items():
            got = imported.get(namespace, key)
            assert got is not None, (namespace, key)
            # The same value, with the same types: 1.0 stays a float, True a bool, big ints exact.
            assert json.dumps(got.value, sort_keys=True) == json.dumps(item.value, sort_keys=True)
            assert as_utc_ms(got.created_at) == as_utc_ms(item.created_at)
            assert as_utc_ms(got.updated_at) == as_utc_ms(item.updated_at)
        # Search by prefix lists the same keys, namespace by namespace and under a prefix.
        for prefix in [("users",), ("users", "u1"), ("users", "u1", "memories"), ("agents",)]:
            want = sorted(key for (namespace, key) in expected if namespace[: len(prefix)] == prefix)
            assert sorted(item.key for item in imported.search(prefix, limit=1000)) == want, prefix
            assert sorted(source_keys(source, prefix)) == want
        assert sorted(imported.list_namespaces(limit=1000)) == sorted(source.list_namespaces(limit=1000))


def source_keys(source, prefix):
    return [item.key for item in source.search(prefix, limit=1000)]


@pytest.mark.every_python
def test_a_sqlite_store_file_becomes_a_memstore_that_memstore_store_reads_back(sqlite_source, store_url):
    before = sqlite_source.read_bytes()
    result = invoke(store_url, "import", "--from", "langgraph", str(sqlite_source))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == f"imported {len(ITEMS) + len(LIVING)} memories (0 already stored)"
    assert sqlite_source.read_bytes() == before  # read, never written
    with SqliteStore.from_conn_string(str(sqlite_source)) as source:
        check_round_trip(source, store_url)
    # The same remaining lifetime: the same end, to the millisecond (SqliteStore keeps microseconds).
    with sqlite3.connect(sqlite_source) as conn:
        ends = {(prefix, key): as_utc_ms(datetime.fromisoformat(end)) for prefix, key, end in conn.execute("SELECT prefix, key, expires_at FROM store WHERE expires_at IS NOT NULL")}
    with MemoryStore(store_url) as store:
        imported_ends = {(row["namespace"], row["fact_key"]): row["expires_at"] for row in store.iter_rows() if row["expires_at"] is not None}
        ttls = {row["fact_key"]: row["meta"]["ttl_minutes"] for row in store.iter_rows() if "ttl_minutes" in row["meta"]}
    assert imported_ends == ends and set(ends) == {("users.u1.session", "draft"), ("users.u1.session", "mood")}
    assert ttls == {"draft": 90, "mood": 0.5}  # so a read starts the same lifetime again


def test_a_postgres_store_becomes_a_memstore_that_memstore_store_reads_back(postgres_source, tmp_path):
    target = tmp_path / "imported.db"
    result = invoke(target, "import", "--from", "langgraph", postgres_source, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert (report["added"], report["kinds"]) == (len(ITEMS) + len(LIVING), {"item": {"added": 9, "unchanged": 0, "archived": 0}})
    with PostgresStore.from_conn_string(postgres_source) as source:
        check_round_trip(source, str(target))


def test_importing_the_same_store_again_adds_nothing_and_a_dry_run_writes_nothing(sqlite_source, db_path):
    assert invoke(db_path, "init").exit_code == 0  # a dry run writes nothing, not even a new store
    dry = invoke(db_path, "import", "--from", "langgraph", str(sqlite_source), "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert dry.stdout.splitlines() == ["would import 9 memories (0 already stored)", "  item: 9 new, 0 already stored"]
    with MemoryStore(db_path) as store:
        assert store.count() == 0
    first = invoke(db_path, "import", "--from", "langgraph", str(sqlite_source))
    again = invoke(db_path, "import", "--from", "langgraph", str(sqlite_source))
    assert again.stdout.splitlines() == ["imported 0 memories (9 already stored)", "  item: 0 new, 9 already stored"], first.output
    with MemoryStore(db_path) as store:
        assert store.count() == 9


def test_items_the_app_changed_after_the_import_keep_their_key_and_history(sqlite_source, db_path):
    assert invoke(db_path, "import", "--from", "langgraph", str(sqlite_source)).exit_code == 0
    with MemstoreStore(str(db_path)) as imported:
        imported.put(("users", "u1", "memories"), "tea", {"content": "User now drinks coffee."})
        assert imported.get(("users", "u1", "memories"), "tea").value == {"content": "User now drinks coffee."}
        history = imported.store.history(imported.store.find_fact("users.u1.memories", "tea")["id"])
    assert [version["text"] for version in history] == ["User likes oolong tea.", "User now drinks coffee."]
    # The source's own version stays imported: importing again changes nothing.
    again = invoke(db_path, "import", "--from", "langgraph", str(sqlite_source))
    assert again.stdout.splitlines()[0] == "imported 0 memories (9 already stored)"


def test_a_store_the_app_has_open_and_is_writing_to_imports_what_it_has_committed(sqlite_source, db_path):
    with SqliteStore.from_conn_string(str(sqlite_source)) as app:
        app.put(("users", "u9"), "late", {"content": "Written while the import ran."})
        progress: list[tuple[int, int]] = []
        with MemoryStore(db_path) as store:
            report = store.import_from("langgraph", sqlite_source, progress=lambda done, total: progress.append((done, total)))
        app.put(("users", "u9"), "later", {"content": "Written after it."})
    assert (report.added, report.kinds) == (10, {"item": {"added": 10, "unchanged": 0, "archived": 0}})
    assert progress == [(n, 10) for n in range(1, 11)]  # the terminal's progress bar follows every record checked


def test_namespace_option_puts_every_item_under_it(sqlite_source, db_path):
    assert invoke(db_path, "import", "--from", "langgraph", str(sqlite_source), "-n", "app").exit_code == 0
    with MemstoreStore(str(db_path)) as imported:
        assert imported.get(("app", "users", "u1", "profile"), "prefs").value == {"theme": "dark", "font": {"size": 14, "mono": True}}
        assert imported.get(("users", "u1", "profile"), "prefs") is None


def test_a_bad_item_is_one_line_naming_it_and_nothing_is_written(sqlite_source, db_path):
    with sqlite3.connect(sqlite_source) as conn:
        conn.execute("INSERT INTO store (prefix, key, value) VALUES ('users.u3', 'broken', '[1, 2]')")
    result = invoke(db_path, "import", "--from", "langgraph", str(sqlite_source))
    assert result.exit_code == 1
    assert result.stderr == f"Error: {sqlite_source} item 10 ('users.u3', 'broken'): field 'value': must be a JSON object, got list\n"
    with MemoryStore(db_path) as store:
        assert store.count() == 0
    skipped = invoke(db_path, "import", "--from", "langgraph", str(sqlite_source), "--skip-invalid")
    assert skipped.exit_code == 0
    assert skipped.stdout.splitlines()[0] == "imported 9 memories (0 already stored); skipped 1 invalid records"


def test_what_is_not_a_langgraph_store_is_refused_in_one_line(tmp_path, db_path):
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
    result = invoke(db_path, "import", "--from", "langgraph", str(other))
    assert (result.exit_code, result.stderr) == (1, f"Error: {other}: not a LangGraph store (its table 'store' has no 'prefix')\n")
    text_file = tmp_path / "notes.txt"
    text_file.write_text("not a database\n" * 100)
    result = invoke(db_path, "import", "--from", "langgraph", str(text_file))
    assert (result.exit_code, result.stderr) == (1, f"Error: {text_file}: cannot read it as a LangGraph store: file is not a database\n")
    missing = invoke(db_path, "import", "--from", "langgraph", str(tmp_path / "nope.db"))
    assert missing.exit_code == 1 and missing.stderr.count("\n") == 1 and "no such file" in missing.stderr
    assert not (tmp_path / "nope.db").exists()  # not created by trying to read it
