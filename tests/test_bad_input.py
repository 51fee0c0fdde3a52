"""Bad input for `memstore import` and `memstore add`: a corpus, the valid oddities, and fuzzing.

Every bad record must give exactly one line on stderr, "Error: <file> line <n>: field '<f>': ...",
exit code 1 and nothing written; with --skip-invalid exactly the valid records are written and each
skipped one is named on stderr. No traceback ever reaches a user. Oddities that are valid (a BOM,
CRLF, U+2028 inside a string, SQL-looking strings, ...) must import and round-trip verbatim.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
from .conftest import import_counts
from .sqlitelib import sqlite3
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from memstore import MemoryStore, ValidationError
from memstore.cli import cli
from memstore.normalize import REMOVED_CHARACTERS, normalize_key

from .strategies import examples

MEMSTORE_BIN = str(Path(sys.executable).with_name("memstore"))
RUNNER = CliRunner()

# The store every corpus test starts from: s1 is archived (a duplicate of s2), s2 and s3 are live.
SEEDS = [
    {"id": "s1", "text": "Seed fact one.", "timestamp": 10, "importance": 3},
    {"id": "s2", "text": "seed fact one", "timestamp": 20, "importance": 3},
    {"id": "s3", "text": "Another seed fact", "timestamp": 5, "importance": 4},
]
TABLES = ("memories", "memory_archive", "consolidation_runs")


@pytest.fixture(scope="module")
def seeded_template(tmp_path_factory):
    path = tmp_path_factory.mktemp("seed") / "seed.db"
    with MemoryStore(path) as store:
        store.add_many(SEEDS)
        store.consolidate(10)
        assert store.get("s1")["reason"] == "duplicate"
        assert store.count() == 2
    return path


def copy_store(template: Path, directory: Path) -> Path:
    """A fresh copy of the seeded store (with its -wal/-shm files, if any) in `directory`."""
    target = Path(directory) / "store.db"
    for source in template.parent.glob(template.name + "*"):
        shutil.copy(source, Path(directory) / (target.name + source.name[len(template.name) :]))
    return target


@pytest.fixture
def db(seeded_template, tmp_path):
    return copy_store(seeded_template, tmp_path)


def snapshot(db_path: Path) -> dict[str, list[tuple]]:
    """Every row of the tables an import could touch, read with the plain sqlite3 driver."""
    con = sqlite3.connect(db_path)
    try:
        return {table: con.execute(f"SELECT * FROM {table} ORDER BY id").fetchall() for table in TABLES}
    finally:
        con.close()


def counts(db_path: Path) -> tuple[int, int]:
    con = sqlite3.connect(db_path)
    try:
        return tuple(con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("memories", "memory_archive"))
    finally:
        con.close()


def stored_ids(db_path: Path) -> set[str]:
    con = sqlite3.connect(db_path)
    try:
        return {r[0] for r in con.execute("SELECT id FROM memories UNION ALL SELECT id FROM memory_archive")}
    finally:
        con.close()


def schema(db_path: Path) -> list[tuple]:
    con = sqlite3.connect(db_path)
    try:
        return con.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name").fetchall()
    finally:
        con.close()


def invoke(db_path: Path, *args: str, input: bytes | str | None = None):
    """Run the CLI in-process; anything but a clean exit (an exception escaping `cli`) fails the test."""
    result = RUNNER.invoke(cli, ["--db", str(db_path), *args], input=input)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"unhandled {type(result.exception).__name__} escaped the CLI: {result.exception!r:.300}")
    assert "Traceback" not in result.output
    return result


def run_bin(db_path: Path, *args: str, input: bytes | None = None) -> subprocess.CompletedProcess:
    """The installed `memstore` in a real subprocess, with MEMSTORE_DB naming the store."""
    env = dict(os.environ, MEMSTORE_DB=str(db_path))
    done = subprocess.run([MEMSTORE_BIN, *args], env=env, input=input, capture_output=True, timeout=120)
    done.stdout_text = done.stdout.decode("utf-8", "replace")
    done.stderr_text = done.stderr.decode("utf-8", "replace")
    assert b"Traceback" not in done.stdout + done.stderr
    return done


def assert_one_error_line(exit_code: int, stdout: str, stderr: str, prefix: str, fragment: str | None = None) -> None:
    assert exit_code == 1, (stdout, stderr)
    assert stdout == ""
    assert "Traceback" not in stderr
    assert stderr.endswith("\n") and stderr.count("\n") == 1 and "\r" not in stderr, repr(stderr[:500])
    assert stderr.startswith(prefix), repr(stderr[:500])
    if fragment is not None:
        assert fragment in stderr, repr(stderr[:500])


def location_prefix(path, line: int, field: str | None) -> str:
    return f"Error: {path} line {line}: " + (f"field '{field}': " if field else "")


# ---------------------------------------------------------------------------------------------
# 1. The corpus: one bad record among good ones, on line 4 of a JSONL file.
# ---------------------------------------------------------------------------------------------

GOOD_BEFORE = [b'{"id": "g1", "text": "Good one", "importance": 2}', b"", b'{"id": "g2", "text": "Good two", "timestamp": 1000}']
GOOD_AFTER = [b'{"id": "g3", "text": "Good three", "namespace": "work"}']
BAD_LINE = 4  # line 2 is blank: blank lines count in the numbering
GOOD_IDS = {"g1", "g2", "g3"}


@functools.cache
def ten_megabyte_text_line() -> bytes:
    return json.dumps({"id": "b1", "text": "x" * 10_000_000}).encode()


@dataclass(frozen=True)
class Case:
    name: str
    line: bytes | None  # None: built by `build`
    field: str | None
    fragment: str  # part of the message; "{path}" stands for the file's name
    build: object = None

    def bad_bytes(self) -> bytes:
        return self.build() if self.build is not None else self.line

    def expected_fragment(self, path) -> str:
        return self.fragment.replace("{path}", str(path))


def rec(**fields) -> bytes:
    return json.dumps({"id": "b1", "text": "bad one", **fields}).encode()


def raw(text: str) -> bytes:
    return text.encode()


CASES = [
    # malformed JSON lines
    Case("truncated-json", b'{"id": "b1", "text": "cut off', None, "invalid JSON"),
    Case("trailing-garbage", b'{"id": "b1", "text": "x"} extra', None, "invalid JSON: Extra data"),
    Case("single-quotes", b"{'id': 'b1', 'text': 'x'}", None, "invalid JSON"),
    Case("trailing-comma", b'{"id": "b1", "text": "x",}', None, "invalid JSON"),
    Case("two-records-on-one-line", b'{"id": "b1", "text": "x"}{"id": "b2", "text": "y"}', None, "invalid JSON"),
    Case("raw-nul-in-string", b'{"id": "b1", "text": "a\x00b"}', None, "invalid JSON"),
    Case("raw-nul-outside-string", b'\x00{"id": "b1", "text": "x"}', None, "invalid JSON"),
    Case("bom-in-mid-file", b'\xef\xbb\xbf{"id": "b1", "text": "x"}', None, "invalid JSON"),
    Case("deeply-nested", b'{"id": "b1", "text": "x", "meta": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", None, "invalid JSON"),
    # invalid UTF-8
    Case("invalid-utf8-latin1", b'{"id": "b1", "text": "caf\xe9"}', None, "not valid UTF-8"),
    Case("invalid-utf8-truncated", b'{"id": "b1", "text": "\xe2\x82"}', None, "not valid UTF-8"),
    Case("invalid-utf8-encoded-surrogate", b'{"id": "b1", "text": "\xed\xa0\x80"}', None, "not valid UTF-8"),
    Case("invalid-utf8-overlong", b'{"id": "b1", "text": "\xc0\xaf"}', None, "not valid UTF-8"),
    # not a record
    Case("array-line", b'[{"id": "b1", "text": "x"}]', None, "must be a JSON object"),
    Case("string-line", b'"just some text"', None, "must be a JSON object"),
    Case("null-line", b"null", None, "must be a JSON object"),
    Case("number-line", b"42", None, "must be a JSON object"),
    # missing fields
    Case("missing-text", b'{"id": "b1"}', "text", "is missing"),
    Case("null-text", b'{"id": "b1", "text": null}', "text", "is missing"),
    Case("empty-object", b"{}", "text", "is missing"),
    # unknown fields and wrong types
    Case("unknown-field", rec(colour="red"), "colour", "is not a memstore field"),
    Case("id-number", b'{"id": 7, "text": "x"}', "id", "must be a string, got 7"),
    Case("id-empty", rec(id=""), "id", "must not be empty"),
    Case("id-list", rec(id=["b1"]), "id", "must be a string"),
    Case("text-list", rec(text=["x"]), "text", "must be a string"),
    Case("text-object", rec(text={"x": 1}), "text", "must be a string"),
    Case("text-number", rec(text=12), "text", "must be a string, got 12"),
    Case("namespace-number", rec(namespace=1), "namespace", "must be a string"),
    Case("namespace-empty", rec(namespace=""), "namespace", "must not be empty"),
    Case("pinned-string", rec(pinned="yes"), "pinned", "must be true or false"),
    Case("pinned-number", rec(pinned=1), "pinned", "must be true or false, got 1"),
    Case("recall-count-negative", rec(recall_count=-1), "recall_count", "must be an integer"),
    Case("recall-count-string", rec(recall_count="3"), "recall_count", "must be an integer"),
    Case("recall-count-bool", rec(recall_count=True), "recall_count", "must be an integer"),
    Case("fact-key-number", rec(fact_key=5), "fact_key", "must be a string"),
    Case("key-and-fact-key", rec(key="a", fact_key="b"), "key", "not both"),
    Case("meta-list", rec(meta=[1, 2]), "meta", "must be a JSON object"),
    Case("meta-string", rec(meta="{}"), "meta", "must be a JSON object"),
    # importance: 0, 6, "high", true and friends
    Case("importance-0", rec(importance=0), "importance", "must be an integer in 1..5, got 0"),
    Case("importance-6", rec(importance=6), "importance", "must be an integer in 1..5, got 6"),
    Case("importance-negative", rec(importance=-1), "importance", "must be an integer in 1..5"),
    Case("importance-high", rec(importance="high"), "importance", "must be an integer in 1..5, got 'high'"),
    Case("importance-true", rec(importance=True), "importance", "must be an integer in 1..5, got True"),
    Case("importance-false", rec(importance=False), "importance", "must be an integer in 1..5, got False"),
    Case("importance-float", rec(importance=3.0), "importance", "must be an integer in 1..5, got 3.0"),
    Case("importance-digit-string", rec(importance="3"), "importance", "must be an integer in 1..5"),
    Case("importance-infinity", b'{"id": "b1", "text": "x", "importance": 1e400}', "importance", "must be an integer"),
    # timestamps: floats, beyond signed 64-bit, not dates
    Case("timestamp-float", rec(timestamp=1.5), "timestamp", "must be an integer (Unix ms) or an ISO date"),
    Case("timestamp-exponent", b'{"id": "b1", "text": "x", "timestamp": 1e3}', "timestamp", "must be an integer"),
    Case("timestamp-integral-float", rec(timestamp=1000.0), "timestamp", "must be an integer"),
    Case("timestamp-2^63", rec(timestamp=2**63), "timestamp", "signed 64-bit"),
    Case("timestamp-2^64", rec(timestamp=2**64), "timestamp", "signed 64-bit"),
    Case("timestamp-huge", rec(timestamp=10**40), "timestamp", "signed 64-bit"),
    Case("timestamp-below-int64", rec(timestamp=-(2**63) - 1), "timestamp", "signed 64-bit"),
    Case("timestamp-bool", rec(timestamp=True), "timestamp", "must be an integer (Unix ms) or an ISO date"),
    Case("timestamp-nan", b'{"id": "b1", "text": "x", "timestamp": NaN}', None, "invalid JSON: NaN is not JSON"),
    Case("key-twice", b'{"id": "b1", "text": "x", "text": "y"}', None, "invalid JSON: the key 'text' appears twice in one object"),
    Case("meta-key-twice", b'{"id": "b1", "text": "x", "meta": {"a": 1, "a": 2}}', None, "the key 'a' appears twice"),
    Case("timestamp-not-a-date", rec(timestamp="yesterday"), "timestamp", "is not an ISO date: 'yesterday'"),
    Case("timestamp-month-13", rec(timestamp="2026-13-01"), "timestamp", "is not an ISO date"),
    Case("timestamp-list", rec(timestamp=[1]), "timestamp", "must be an integer"),
    Case("created-at-float", rec(created_at=1.25), "created_at", "must be an integer"),
    Case("updated-at-2^64", rec(updated_at=2**64), "updated_at", "signed 64-bit"),
    Case("last-recalled-at-not-a-date", rec(last_recalled_at="last week"), "last_recalled_at", "is not an ISO date"),
    # size, NUL and surrogates
    Case("text-10-megabytes", None, "text", "is longer than 1,000,000 characters (10,000,000)", ten_megabyte_text_line),
    Case("text-1000001-chars", rec(text="y" * 1_000_001), "text", "is longer than 1,000,000 characters"),
    Case("text-nul", rec(text="a\x00b"), "text", "must not contain a NUL character"),
    Case("id-nul", rec(id="b\x001"), "id", "must not contain a NUL character"),
    Case("namespace-nul", rec(namespace="work\x00"), "namespace", "must not contain a NUL character"),
    Case("fact-key-nul", rec(fact_key="\x00"), "fact_key", "must not contain a NUL character"),
    Case("text-lone-surrogate", raw('{"id": "b1", "text": "a\\ud800b"}'), "text", "lone surrogate"),
    Case("id-lone-surrogate", raw('{"id": "\\udc80", "text": "x"}'), "id", "lone surrogate"),
    # duplicate ids within the file (the later line is named) and against the store
    Case("duplicate-id-in-file", b'{"id": "g1", "text": "Something else"}', "id", "repeats the id 'g1' of {path} line 1"),
    Case("duplicate-id-identical-record", GOOD_BEFORE[0], "id", "repeats the id 'g1' of {path} line 1"),
    Case("conflict-with-live", b'{"id": "s2", "text": "A different fact"}', "id", "'s2' already holds a different memory"),
    Case("conflict-with-live-other-field", b'{"id": "s2", "text": "seed fact one", "importance": 5}', "id",
         "already holds a different memory"),  # fmt: skip
    Case("conflict-with-archived", b'{"id": "s1", "text": "A different fact"}', "id",
         "'s1' already holds a different memory (archived)"),  # fmt: skip
]
CASE_IDS = [case.name for case in CASES]
SUBPROCESS_CASES = [
    "truncated-json", "invalid-utf8-latin1", "importance-true", "timestamp-2^63",
    "text-10-megabytes", "duplicate-id-in-file", "conflict-with-archived",
]  # fmt: skip


def test_the_corpus_names_are_unique():
    assert len(set(CASE_IDS)) == len(CASE_IDS)


def write_case(directory: Path, case: Case) -> Path:
    path = Path(directory) / f"{case.name}.jsonl"
    path.write_bytes(b"\n".join([*GOOD_BEFORE, case.bad_bytes(), *GOOD_AFTER]) + b"\n")
    return path


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_bad_record_stops_the_import_naming_file_line_and_field(case, db, tmp_path):
    path = write_case(tmp_path, case)
    before = snapshot(db)
    result = invoke(db, "import", str(path))
    assert_one_error_line(
        result.exit_code, result.stdout, result.stderr,
        location_prefix(path, BAD_LINE, case.field), case.expected_fragment(path),
    )  # fmt: skip
    assert snapshot(db) == before


@pytest.mark.parametrize("name", SUBPROCESS_CASES)
def test_bad_record_in_a_real_subprocess(name, db, tmp_path):
    case = CASES[CASE_IDS.index(name)]
    path = write_case(tmp_path, case)
    before = snapshot(db)
    done = run_bin(db, "import", str(path))
    assert_one_error_line(
        done.returncode, done.stdout_text, done.stderr_text,
        location_prefix(path, BAD_LINE, case.field), case.expected_fragment(path),
    )  # fmt: skip
    assert snapshot(db) == before


def test_a_whole_file_in_utf16_is_named_as_line_1(db, tmp_path):
    path = tmp_path / "utf16.jsonl"
    path.write_bytes('{"id": "u1", "text": "x"}\n'.encode("utf-16"))
    before = snapshot(db)
    result = invoke(db, "import", str(path))
    assert_one_error_line(result.exit_code, result.stdout, result.stderr, location_prefix(path, 1, None), "not valid UTF-8")
    assert snapshot(db) == before


# ---------------------------------------------------------------------------------------------
# 2. The same corpus with --skip-invalid: exactly the valid records are written.
# ---------------------------------------------------------------------------------------------


def parse_skipped_lines(stderr: str, path) -> list[int]:
    """The line number of every `skipped: <path> line <n>: ...` line; any other stderr line fails."""
    numbers = []
    for text in stderr.splitlines():
        match = re.match(re.escape(f"skipped: {path} line ") + r"(\d+): ", text)
        assert match, repr(text[:300])
        numbers.append(int(match.group(1)))
    return numbers


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_skip_invalid_writes_exactly_the_valid_records(case, db, tmp_path):
    path = write_case(tmp_path, case)
    before = snapshot(db)
    ids_before = stored_ids(db)
    result = invoke(db, "import", str(path), "--skip-invalid", "--json")
    assert result.exit_code == 0, result.output
    assert import_counts(result.stdout) == {"added": 3, "unchanged": 0, "skipped": 1}
    assert parse_skipped_lines(result.stderr, path) == [BAD_LINE]
    field = f"field '{case.field}': " if case.field else ""
    assert result.stderr.startswith(f"skipped: {path} line {BAD_LINE}: {field}")
    assert stored_ids(db) - ids_before == GOOD_IDS
    after = snapshot(db)
    assert set(before["memories"]) <= set(after["memories"])
    assert after["memory_archive"] == before["memory_archive"]


def test_skip_invalid_in_a_real_subprocess_reports_the_count_in_words(db, tmp_path):
    path = write_case(tmp_path, CASES[CASE_IDS.index("importance-6")])
    done = run_bin(db, "import", str(path), "--skip-invalid")
    assert done.returncode == 0, done.stderr_text
    assert done.stdout_text == "imported 3 memories (0 already stored); skipped 1 invalid records\n"
    assert done.stderr_text.startswith(f"skipped: {path} line {BAD_LINE}: field 'importance': ")
    assert done.stderr_text.count("\n") == 1
    assert GOOD_IDS <= stored_ids(db)


def test_skip_invalid_with_every_bad_record_in_one_file(db, seeded_template, tmp_path):
    """All of the corpus interleaved with good records: each bad line is skipped and named once."""
    lines = [GOOD_BEFORE[0]]  # g1 on line 1, which the duplicate cases repeat
    bad_lines, good_ids = [], {"g1"}
    for index, case in enumerate(CASES):
        lines.append(case.bad_bytes())
        bad_lines.append(len(lines))
        lines.append(json.dumps({"id": f"v{index}", "text": f"valid {index}"}).encode())
        good_ids.add(f"v{index}")
    path = tmp_path / "everything.jsonl"
    path.write_bytes(b"\r\n".join(lines) + b"\r\n")
    ids_before = stored_ids(db)
    result = invoke(db, "import", str(path), "--skip-invalid", "--json")
    assert result.exit_code == 0, result.output[:2000]
    assert import_counts(result.stdout) == {"added": len(good_ids), "unchanged": 0, "skipped": len(CASES)}
    assert sorted(parse_skipped_lines(result.stderr, path)) == bad_lines
    assert stored_ids(db) - ids_before == good_ids
    # ... and without the flag the first bad line (by line order of validation) stops it all.
    (tmp_path / "again").mkdir()
    fresh = copy_store(seeded_template, tmp_path / "again")
    before = snapshot(fresh)
    result = invoke(fresh, "import", str(path))
    assert_one_error_line(result.exit_code, result.stdout, result.stderr, location_prefix(path, bad_lines[0], None))
    assert snapshot(fresh) == before


# ---------------------------------------------------------------------------------------------
# 3. JSON arrays: a bad element is named by the line it starts on; a syntax error is fatal.
# ---------------------------------------------------------------------------------------------


def array_file(tmp_path: Path, bad: bytes, name: str = "array.json") -> Path:
    path = tmp_path / name
    path.write_bytes(
        b"[\n"
        b'  {"id": "a1", "text": "first"},\n'
        b'  {"id": "a2", "text": "second", "importance": 4},\n'
        b"  " + bad + b",\n"
        b'  {"id": "a3", "text": "third"}\n'
        b"]\n"
    )
    return path


ARRAY_BAD_ELEMENTS = [
    ("importance-6", rec(importance=6), "importance"),
    ("importance-true", rec(importance=True), "importance"),
    ("timestamp-float", rec(timestamp=0.5), "timestamp"),
    ("missing-text", b'{"id": "b1"}', "text"),
    ("nul-id", rec(id="\x00"), "id"),
    ("not-an-object", b"5", None),
    ("nested-array", b'[{"id": "b1", "text": "x"}]', None),
    ("duplicate-id", b'{"id": "a1", "text": "again"}', "id"),
    ("conflict-with-live", b'{"id": "s3", "text": "changed"}', "id"),
    ("multi-line-element", b'{"id": "b1",\n   "text": "x",\n   "importance": "high"}', "importance"),
]


@pytest.mark.parametrize("bad,field", [c[1:] for c in ARRAY_BAD_ELEMENTS], ids=[c[0] for c in ARRAY_BAD_ELEMENTS])
def test_array_bad_element_is_named_by_its_line(bad, field, db, tmp_path):
    path = array_file(tmp_path, bad)
    before = snapshot(db)
    result = invoke(db, "import", str(path))
    assert_one_error_line(result.exit_code, result.stdout, result.stderr, location_prefix(path, 4, field))
    assert snapshot(db) == before
    ids_before = stored_ids(db)
    result = invoke(db, "import", str(path), "--skip-invalid", "--json")
    assert result.exit_code == 0, result.output
    assert import_counts(result.stdout) == {"added": 3, "unchanged": 0, "skipped": 1}
    assert parse_skipped_lines(result.stderr, path) == [4]
    assert stored_ids(db) - ids_before == {"a1", "a2", "a3"}


GOOD_ARRAY_HEAD = b'[\n  {"id": "a1", "text": "first"},\n  {"id": "a2", "text": "second"}'
ARRAY_SYNTAX_ERRORS = [
    ("missing-comma", GOOD_ARRAY_HEAD + b'\n  {"id": "a3", "text": "x"}\n]\n', 4, "expected ',' or ']'"),
    ("trailing-comma", GOOD_ARRAY_HEAD + b",\n]\n", 4, "trailing comma"),
    ("missing-value", GOOD_ARRAY_HEAD + b',\n  {"id": "a3", "text": }\n]\n', 4, "Expecting value"),
    ("raw-newline-in-string", GOOD_ARRAY_HEAD + b',\n  {"id": "a3", "text": "x}\n]\n', 4, "Invalid control character"),
    ("unterminated-string", GOOD_ARRAY_HEAD + b',\n  {"id": "a3", "text": "x', 4, "Unterminated string"),
    ("no-closing-bracket", GOOD_ARRAY_HEAD + b',\n  {"id": "a3", "text": "x"}', 4, "expected ',' or ']'"),
    ("text-after-array-same-line", GOOD_ARRAY_HEAD + b"\n] junk\n", 4, "text after the array"),
    ("invalid-utf8", GOOD_ARRAY_HEAD + b',\n  {"id": "a3", "text": "\xff"}\n]\n', 4, "not valid UTF-8"),
    ("nul-byte", GOOD_ARRAY_HEAD + b',\n  {"id": "a3", "text": "\x00"}\n]\n', 4, "invalid JSON"),
    ("only-open-bracket", b"[\n", 2, "Expecting value"),
    ("nested-too-deeply", b"[\n" + b"[" * 100_000, 2, "nested too deeply"),
]


@pytest.mark.parametrize("skip", [False, True], ids=["strict", "skip-invalid"])
@pytest.mark.parametrize(
    "data,line,fragment", [c[1:] for c in ARRAY_SYNTAX_ERRORS], ids=[c[0] for c in ARRAY_SYNTAX_ERRORS]
)
def test_array_syntax_error_is_fatal_even_with_skip_invalid(data, line, fragment, skip, db, tmp_path):
    path = tmp_path / "broken.json"
    path.write_bytes(data)
    before = snapshot(db)
    result = invoke(db, "import", str(path), *(["--skip-invalid"] if skip else []))
    assert_one_error_line(result.exit_code, result.stdout, result.stderr, location_prefix(path, line, None), fragment)
    assert snapshot(db) == before


def test_array_syntax_error_in_a_real_subprocess(db, tmp_path):
    path = tmp_path / "broken.json"
    path.write_bytes(GOOD_ARRAY_HEAD + b",\n]\n")
    before = snapshot(db)
    done = run_bin(db, "import", "--skip-invalid", str(path))
    assert_one_error_line(
        done.returncode, done.stdout_text, done.stderr_text, location_prefix(path, 4, None), "trailing comma"
    )
    assert snapshot(db) == before


def test_text_after_the_array_is_named_by_its_own_line(db, tmp_path):
    path = tmp_path / "broken.json"
    path.write_bytes(GOOD_ARRAY_HEAD + b'\n]\n{"id": "a3", "text": "x"}\n')
    result = invoke(db, "import", str(path))
    assert_one_error_line(result.exit_code, result.stdout, result.stderr, location_prefix(path, 5, None), "text after the array")


# ---------------------------------------------------------------------------------------------
# `memstore add` with the same bad values.
# ---------------------------------------------------------------------------------------------

ADD_BAD = [
    ("importance-0", ["x", "--importance", "0"], "importance"),
    ("importance-6", ["x", "-i", "6"], "importance"),
    ("importance-negative", ["x", "-i", "-1"], "importance"),
    ("meta-list", ["x", "--meta", "[1]"], "meta"),
    ("meta-string", ["x", "--meta", '"text"'], "meta"),
    ("meta-number", ["x", "--meta", "42"], "meta"),
    ("timestamp-2^63", ["x", "--timestamp", str(2**63)], "timestamp"),
    ("timestamp-below-int64", ["x", "--timestamp", str(-(2**63) - 1)], "timestamp"),
    ("text-nul", ["a\x00b"], "text"),
    ("id-nul", ["x", "--id", "a\x00b"], "id"),
    ("namespace-nul", ["x", "-n", "a\x00b"], "namespace"),
    ("fact-key-nul", ["x", "--fact-key", "\x00"], "fact_key"),
    ("text-lone-surrogate", ["x\ud800"], "text"),
    ("text-too-long", ["x" * 1_000_001], "text"),
    ("id-empty", ["x", "--id", ""], "id"),
    ("namespace-empty", ["x", "-n", ""], "namespace"),
    ("conflict-with-live", ["A different fact", "--id", "s2"], "id"),
    ("conflict-with-archived", ["A different fact", "--id", "s1"], "id"),
]


@pytest.mark.parametrize("args,field", [c[1:] for c in ADD_BAD], ids=[c[0] for c in ADD_BAD])
def test_add_rejects_bad_values_with_one_line(args, field, db):
    before = snapshot(db)
    result = invoke(db, "add", *args)
    assert_one_error_line(result.exit_code, result.stdout, result.stderr, f"Error: memory: field '{field}': ")
    assert snapshot(db) == before


ADD_USAGE = [
    ("importance-high", ["x", "-i", "high"]),
    ("importance-true", ["x", "-i", "true"]),
    ("importance-float", ["x", "-i", "1.5"]),
    ("timestamp-float", ["x", "--timestamp", "1.5"]),
    ("timestamp-iso", ["x", "--timestamp", "2026-01-01"]),
    ("meta-not-json", ["x", "--meta", "{bad"]),
    ("meta-huge-number", ["x", "--meta", '{"a": ' + "1" * 5000 + "}"]),
    ("meta-too-deep", ["x", "--meta", '{"a":' * 3000 + "1" + "}" * 3000]),
    ("meta-key-twice", ["x", "--meta", '{"a": 1, "a": 2}']),
]


@pytest.mark.parametrize("args", [c[1] for c in ADD_USAGE], ids=[c[0] for c in ADD_USAGE])
def test_add_rejects_non_integers_as_usage_errors(args, db):
    before = snapshot(db)
    result = invoke(db, "add", *args)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.splitlines()[-1].startswith("Error: Invalid value for ")
    assert snapshot(db) == before


@pytest.mark.parametrize(
    "args,expected",
    [
        (["x", "--importance", "0"], "Error: memory: field 'importance': must be an integer in 1..5, got 0\n"),
        (["x", "--importance", "6"], "Error: memory: field 'importance': must be an integer in 1..5, got 6\n"),
        (["x", "--meta", "[1]"], "Error: memory: field 'meta': must be a JSON object\n"),
        (["x", "--id", "s1"], "Error: memory: field 'id': 's1' already holds a different memory (archived)\n"),
    ],
    ids=["importance-0", "importance-6", "meta-list", "conflict-with-archived"],
)
def test_add_bad_values_in_a_real_subprocess(args, expected, db):
    before = snapshot(db)
    done = run_bin(db, "add", *args)
    assert (done.returncode, done.stdout_text, done.stderr_text) == (1, "", expected)
    assert snapshot(db) == before


def test_add_usage_error_in_a_real_subprocess(db):
    done = run_bin(db, "add", "x", "--importance", "high")
    assert done.returncode == 2
    assert done.stdout_text == "" and done.stderr_text.startswith("Usage: memstore add ")
    assert done.stderr_text.splitlines()[-1].startswith("Error: Invalid value for '--importance'")


SQL_ID = "' OR 1=1 --"
SQL_NAMESPACE = "x'); DROP TABLE memories;--"
SQL_TEXT = 'Robert"); DROP TABLE memory_archive; DELETE FROM memories WHERE 1=1;--'


def test_add_stores_sql_looking_strings_verbatim(db):
    tables = schema(db)
    result = invoke(db, "add", SQL_TEXT, "--id", SQL_ID, "-n", SQL_NAMESPACE, "--fact-key", "'; --", "--json")
    assert result.exit_code == 0, result.output
    shown = json.loads(invoke(db, "show", SQL_ID, "--json").stdout)
    assert (shown["id"], shown["namespace"], shown["text"], shown["fact_key"]) == (SQL_ID, SQL_NAMESPACE, SQL_TEXT, "'; --")
    listed = json.loads(invoke(db, "list", "-n", SQL_NAMESPACE, "--json").stdout)
    assert [row["id"] for row in listed] == [SQL_ID]
    assert schema(db) == tables
    assert stored_ids(db) == {"s1", "s2", "s3", SQL_ID}
    done = run_bin(db, "show", SQL_ID)
    assert done.returncode == 0, done.stderr_text
    assert re.search(r"^text +" + re.escape(SQL_TEXT) + "$", done.stdout_text, re.MULTILINE), done.stdout_text


# ---------------------------------------------------------------------------------------------
# 4. Valid oddities: all import and round-trip.
# ---------------------------------------------------------------------------------------------


def iso_ms(text: str) -> int:
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000)


# (input record, the fields the export must show for it)
ODDITIES = [
    ({"id": "line-sep", "text": "before\u2028after\u2029end\x85nel"}, {}),
    ({"id": "é-nfc", "text": "NFC id"}, {}),
    ({"id": "e\u0301-nfd", "text": "NFD id, a different id"}, {}),
    ({"id": "😀", "text": "emoji id 𝄞", "namespace": "Ω-名前"}, {}),
    ({"id": "rtl-\u05e9\u05dc\u05d5\u05dd", "text": "\u202eright to left"}, {}),
    ({"id": "empty-text", "text": ""}, {}),
    ({"id": "negative", "text": "before 1970", "timestamp": -86_400_000}, {}),
    ({"id": "int64-min", "text": "min", "timestamp": -(2**63)}, {}),
    ({"id": "int64-max", "text": "max", "timestamp": 2**63 - 1, "created_at": 2**63 - 1}, {}),
    ({"id": "iso-date", "text": "iso", "timestamp": "2026-10-01"}, {"timestamp": iso_ms("2026-10-01")}),
    ({"id": "iso-z", "text": "iso z", "created_at": "2026-10-01T12:30:00Z"},
     {"timestamp": iso_ms("2026-10-01T12:30:00Z"), "created_at": iso_ms("2026-10-01T12:30:00Z")}),
    ({"id": "iso-offset", "text": "iso offset", "updated_at": "2026-10-01T12:30:00+02:00",
      "last_recalled_at": "1969-07-20"},
     {"timestamp": iso_ms("2026-10-01T10:30:00Z"), "updated_at": iso_ms("2026-10-01T10:30:00Z"),
      "last_recalled_at": iso_ms("1969-07-20")}),
    ({"id": SQL_ID, "text": SQL_TEXT, "namespace": SQL_NAMESPACE}, {}),
    ({"id": "x'); DROP TABLE memories;--", "text": "' OR 1=1 --", "namespace": "memories"}, {}),
    ({"id": "sql-meta", "text": "meta", "meta": {"q": "'; DROP TABLE consolidation_runs; --", "nul": "a\x00b"},
      "fact_key": "\"; DELETE FROM memories; --"}, {}),
    ({"id": "nulls-mean-defaults", "text": "defaults", "importance": None, "namespace": None, "pinned": None},
     {"importance": 3, "namespace": "default", "pinned": False}),
    ({"id": "norm-key-ignored", "text": "Hello, World!", "norm_key": "forged"}, {}),
    ({"id": "hygiene-shape", "text": "hygiene", "key": "fact-1", "recall_count": 7, "pinned": True},
     {"fact_key": "fact-1", "key": None}),
    ({"id": "a" * 1000, "text": "z" * 1_000_000, "importance": 5}, {}),  # the longest text allowed
]  # fmt: skip
UNCHANGED = [
    {"id": "s2", "text": "seed fact one", "timestamp": 20},  # identical to a live record
    {"id": "s1", "text": "Seed fact one."},  # identical to an archived record
]


def expected_export(record: dict, overrides: dict) -> dict:
    expected = {k: v for k, v in record.items() if v is not None and k not in ("norm_key", "key")}
    expected.update({k: v for k, v in overrides.items() if v is not None})
    for field in ("timestamp", "created_at", "updated_at", "last_recalled_at"):
        if isinstance(expected.get(field), str):
            expected[field] = iso_ms(expected[field])
    return expected


def oddities_bytes(*, bom: bool, crlf: bool, array: bool) -> bytes:
    records = [record for record, _ in ODDITIES] + UNCHANGED
    lines = [json.dumps(r, ensure_ascii=False).encode() for r in records]
    eol = b"\r\n" if crlf else b"\n"
    if array:
        body = b"[" + eol + (b"," + eol).join(b"  " + line for line in lines) + eol + b"]" + eol
    else:
        # blank and whitespace-only lines between records are allowed
        body = eol.join(line + eol + (b" \t" if i % 3 == 0 else b"") for i, line in enumerate(lines)) + eol
    return (b"\xef\xbb\xbf" if bom else b"") + body


def exported(db_path: Path) -> list[dict]:
    result = invoke(db_path, "export", "--all-namespaces")
    assert result.exit_code == 0, result.output[:500]
    assert result.stderr == ""
    return [json.loads(line) for line in result.stdout.split("\n") if line]


@pytest.mark.parametrize("array", [False, True], ids=["jsonl", "array"])
@pytest.mark.parametrize("crlf", [False, True], ids=["lf", "crlf"])
@pytest.mark.parametrize("bom", [False, True], ids=["no-bom", "bom"])
def test_valid_oddities_import_and_round_trip(bom, crlf, array, db, tmp_path):
    tables = schema(db)
    path = tmp_path / ("odd.json" if array else "odd.jsonl")
    path.write_bytes(oddities_bytes(bom=bom, crlf=crlf, array=array))
    result = invoke(db, "import", str(path), "--json")
    assert result.exit_code == 0, result.output[:1000]
    assert import_counts(result.stdout) == {"added": len(ODDITIES), "unchanged": len(UNCHANGED), "skipped": 0}
    assert result.stderr == ""

    rows = {row["id"]: row for row in exported(db)}
    for record, overrides in ODDITIES:
        row = rows[record["id"]]
        for field, value in expected_export(record, overrides).items():
            assert row[field] == value, (record["id"][:40], field)
        assert "norm_key" not in row and "key" not in row
    for seed in SEEDS[1:]:
        assert rows[seed["id"]]["text"] == seed["text"]
    assert "s1" not in rows  # still archived, untouched

    # Each stored row's key is computed from its text, never taken from the input.
    con = sqlite3.connect(db)
    keys = dict(con.execute("SELECT id, norm_key FROM memories"))
    con.close()
    assert keys["norm-key-ignored"] == "hello world"
    assert keys["empty-text"] == ""
    assert keys["line-sep"] == normalize_key("before\u2028after\u2029end\x85nel") == "before after end nel"

    for record in (ODDITIES[12][0], ODDITIES[13][0]):  # the SQL-looking ones, through `show`
        shown = json.loads(invoke(db, "show", record["id"], "--json").stdout)
        assert (shown["id"], shown["text"], shown["namespace"]) == (record["id"], record["text"], record["namespace"])
    assert schema(db) == tables
    assert invoke(db, "check").exit_code == 0

    # The export imports into a fresh store unchanged, and into this one as nothing but retries.
    export_path = tmp_path / "export.jsonl"
    export_path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows.values()), encoding="utf-8")
    result = invoke(db, "import", str(export_path), "--json")
    assert import_counts(result.stdout) == {"added": 0, "unchanged": len(rows), "skipped": 0}
    fresh = tmp_path / "fresh.db"
    assert invoke(fresh, "import", str(export_path)).exit_code == 0
    assert {r["id"]: r for r in exported(fresh)} == rows


def test_valid_oddities_in_a_real_subprocess(db, tmp_path):
    path = tmp_path / "odd.jsonl"
    path.write_bytes(oddities_bytes(bom=True, crlf=True, array=False))
    done = run_bin(db, "import", str(path))
    assert done.returncode == 0, done.stderr_text
    assert done.stdout_text == f"imported {len(ODDITIES)} memories ({len(UNCHANGED)} already stored)\n"
    done = run_bin(db, "export", "--all-namespaces")
    assert done.returncode == 0, done.stderr_text
    rows = {r["id"]: r for r in map(json.loads, done.stdout.decode("utf-8").split("\n")[:-1])}
    assert rows["line-sep"]["text"] == "before\u2028after\u2029end\x85nel"
    assert rows[SQL_ID]["namespace"] == SQL_NAMESPACE
    done = run_bin(db, "show", "x'); DROP TABLE memories;--", "--json")
    assert json.loads(done.stdout)["text"] == "' OR 1=1 --"


def test_a_line_separator_inside_a_string_does_not_shift_line_numbers(db, tmp_path):
    path = tmp_path / "u2028.jsonl"
    lines = [
        json.dumps({"id": "u1", "text": "a\u2028b\u2029c\x85d\x0be\x0cf\x1cg"}, ensure_ascii=False).encode(),
        b'{"id": "u2", "text": "fine"}',
        rec(importance=0),
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    result = invoke(db, "import", str(path))
    assert_one_error_line(result.exit_code, result.stdout, result.stderr, location_prefix(path, 3, "importance"))


def test_a_file_of_blank_lines_imports_nothing(db, tmp_path):
    path = tmp_path / "blank.jsonl"
    path.write_bytes(b"\xef\xbb\xbf\r\n\n   \n\t\r\n")
    result = invoke(db, "import", str(path), "--json")
    assert (result.exit_code, import_counts(result.stdout)) == (0, {"added": 0, "unchanged": 0, "skipped": 0})


def test_the_same_bad_values_from_stdin_name_stdin(db):
    result = invoke(db, "import", "-", input=b'{"id": "x", "text": "ok"}\r\n{"id": "y", "text": "ok", "importance": 6}\r\n')
    assert_one_error_line(result.exit_code, result.stdout, result.stderr, "Error: <stdin> line 2: field 'importance': ")


# ---------------------------------------------------------------------------------------------
# Library bugs this corpus found, now fixed: each stays as a regression test.
# ---------------------------------------------------------------------------------------------

HUGE_INT_LINE = b'{"id": "b1", "text": "x", "timestamp": ' + b"9" * 5000 + b"}"


def test_a_huge_integer_literal_never_shows_a_traceback(db, tmp_path):
    """One line, exit 1, nothing written, naming the line (see the tests below)."""
    path = write_case(tmp_path, Case("huge-int", HUGE_INT_LINE, "timestamp", ""))
    before = snapshot(db)
    done = run_bin(db, "import", str(path))
    assert done.returncode == 1
    assert done.stdout_text == "" and done.stderr_text.startswith("Error: ") and done.stderr_text.count("\n") == 1
    assert snapshot(db) == before


@pytest.mark.parametrize("form", ["jsonl", "array"])
def test_a_huge_integer_literal_is_a_line_error(form, db, tmp_path):
    if form == "jsonl":
        path = write_case(tmp_path, Case("huge-int", HUGE_INT_LINE, "timestamp", ""))
        line = BAD_LINE
    else:
        path = array_file(tmp_path, HUGE_INT_LINE)
        line = 4
    before = snapshot(db)
    result = invoke(db, "import", str(path))
    assert_one_error_line(result.exit_code, result.stdout, result.stderr, location_prefix(path, line, None))
    assert snapshot(db) == before


def test_skip_invalid_skips_a_huge_integer_literal(db, tmp_path):
    path = write_case(tmp_path, Case("huge-int", HUGE_INT_LINE, "timestamp", ""))
    result = invoke(db, "import", str(path), "--skip-invalid", "--json")
    assert result.exit_code == 0
    assert import_counts(result.stdout) == {"added": 3, "unchanged": 0, "skipped": 1}


def test_an_unknown_field_name_with_a_newline_gives_one_line(db, tmp_path):
    path = write_case(tmp_path, Case("newline-key", b'{"id": "b1", "text": "x", "bad\\nfield": 1}', None, ""))
    result = invoke(db, "import", str(path))
    assert_one_error_line(result.exit_code, result.stdout, result.stderr, f"Error: {path} line {BAD_LINE}: ")


def test_a_file_name_with_a_newline_gives_one_line(db, tmp_path):
    directory = tmp_path / "new\nline"
    directory.mkdir()
    path = write_case(directory, CASES[CASE_IDS.index("importance-6")])
    result = invoke(db, "import", str(path))
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1


def test_meta_with_a_lone_surrogate_is_rejected_or_round_trips(db, tmp_path):
    path = tmp_path / "meta.jsonl"
    path.write_bytes(b'{"id": "m1", "text": "x", "meta": {"k": "\\ud800"}}\n')
    result = RUNNER.invoke(cli, ["--db", str(db), "import", str(path)])
    if result.exit_code == 1:
        assert result.stderr.startswith(f"Error: {path} line 1: field 'meta': ")
    else:
        exported_result = RUNNER.invoke(cli, ["--db", str(db), "export"])
        assert exported_result.exception is None
        assert exported_result.exit_code == 0


def test_export_is_strict_json_after_importing_nan_in_meta(db, tmp_path):
    path = tmp_path / "nan.jsonl"
    path.write_bytes(b'{"id": "m1", "text": "x", "meta": {"a": NaN, "b": Infinity}}\n')
    result = invoke(db, "import", str(path))
    if result.exit_code == 1:
        assert result.stderr.startswith(f"Error: {path} line 1: ")
        return

    def strict(token):
        raise ValueError(f"non-JSON constant {token}")

    for line in invoke(db, "export").stdout.splitlines():
        json.loads(line, parse_constant=strict)


# ---------------------------------------------------------------------------------------------
# 5. Fuzzing: normalize_key and the importer.
# ---------------------------------------------------------------------------------------------

ANY_CHARACTER = st.one_of(
    st.characters(exclude_categories=()),
    st.characters(categories=["Cs"]),  # lone surrogates: normalize_key is pure str work
    st.sampled_from(list(REMOVED_CHARACTERS) + [" ", "\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x85", "\u00a0",
                                                "\u1680", "\u2003", "\u2028", "\u2029", "\u3000", "İ", "ẞ", "Σ"]),
)  # fmt: skip


def spec_key(text: str) -> str:
    """The rule spelt out character by character: lower, strip, remove the eight, collapse whitespace."""
    kept = [c for c in text.lower().strip() if c not in ".,!?;:'\""]
    out: list[str] = []
    for c in kept:
        if c.isspace():
            if not (out and out[-1] == " "):
                out.append(" ")
        else:
            out.append(c)
    return "".join(out)


@settings(max_examples=examples(500), deadline=None)
@given(st.text(alphabet=ANY_CHARACTER, max_size=40))
def test_fuzz_normalize_key_is_total_and_follows_the_rule(text):
    key = normalize_key(text)
    assert isinstance(key, str)
    assert key == spec_key(text)
    assert not set(key) & set(REMOVED_CHARACTERS)
    assert not any(a.isspace() and b.isspace() for a, b in zip(key, key[1:]))
    assert all(c == " " or not c.isspace() for c in key)
    assert len(key) <= len(text.lower())
    # widening any whitespace run changes nothing
    assert normalize_key(re.sub(r"\s+", lambda m: m.group() + "\u3000", text)) == key


def test_normalize_key_on_surrogates_and_edge_strings():
    assert normalize_key("\ud800 A.") == "\ud800 a"
    assert normalize_key("") == ""
    assert normalize_key("\u2028\u2029\x85") == ""
    assert normalize_key("a \u2028 b") == "a b"


def jsonl_record_count(data: bytes) -> int | None:
    """Records in a JSONL stream (None for a JSON array): every line that is not blank counts once."""
    data = data.removeprefix(b"\xef\xbb\xbf")
    if data.lstrip().startswith(b"["):
        return None
    total = 0
    for line in data.split(b"\n"):
        try:
            total += bool(line.decode("utf-8").strip())
        except UnicodeDecodeError:
            total += 1
    return total


def check_import(db_path: Path, data: bytes, skip: bool) -> None:
    """The importer's contract for any input; `memstore import -` through CliRunner."""
    before = counts(db_path)
    result = invoke(db_path, "import", "-", "--json", *(["--skip-invalid"] if skip else []), input=data)
    assert result.exit_code in (0, 1), result.output[:500]
    records = jsonl_record_count(data)
    event(f"exit {result.exit_code}, {'skip-invalid' if skip else 'strict'}, {'jsonl' if records is not None else 'array'}")
    if result.exit_code == 1:
        assert result.stdout == ""
        assert result.stderr.endswith("\n") and result.stderr.count("\n") == 1, repr(result.stderr[:500])
        match = re.match(r"Error: <stdin> line (\d+): ", result.stderr)
        assert match, repr(result.stderr[:500])
        assert 1 <= int(match.group(1)) <= data.count(b"\n") + 1
        assert counts(db_path) == before
        # With --skip-invalid a JSONL stream never fails as a whole.
        assert not (skip and records is not None), repr(result.stderr[:500])
        if records is not None:  # the same stream with --skip-invalid skips at least the named record
            again = invoke(db_path, "import", "-", "--json", "--skip-invalid", input=data)
            assert again.exit_code == 0, again.output[:500]
            report = json.loads(again.stdout)
            assert report["skipped"] >= 1
            assert report["added"] + report["unchanged"] + report["skipped"] == records
            assert counts(db_path)[0] == before[0] + report["added"]
        return
    report = json.loads(result.stdout)
    assert set(report) == {"format", "source", "dry_run", "added", "unchanged", "archived", "repeated", "skipped", "kinds", "run_id"}
    assert report["kinds"] == ({"memory": {"added": report["added"], "unchanged": report["unchanged"], "archived": 0}} if report["added"] + report["unchanged"] else {})
    event("added some" if report["added"] else "added none")
    assert counts(db_path) == (before[0] + report["added"], before[1])
    assert len(result.stderr.splitlines()) == report["skipped"]
    assert all(re.match(r"skipped: <stdin> line \d+: ", text) for text in result.stderr.splitlines())
    if not skip:
        assert report["skipped"] == 0
    if records is not None:
        assert report["added"] + report["unchanged"] + report["skipped"] == records


def fuzz_store() -> tuple[tempfile.TemporaryDirectory, Path]:
    directory = tempfile.TemporaryDirectory()
    path = Path(directory.name) / "fuzz.db"
    with MemoryStore(path) as store:
        store.add_many(SEEDS)
        store.consolidate(10)
    return directory, path


FUZZ_SETTINGS = settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_fuzz_importer_with_random_bytes():
    directory, db_path = fuzz_store()
    with directory:
        chunks = st.one_of(
            st.binary(max_size=40),
            st.sampled_from([b"\n", b"\r\n", b"{", b"}", b"[", b"]", b",", b'"', b"\xef\xbb\xbf", b"\x00", b"\xff",
                             b'{"id": "s2", "text": "seed fact one"}', b'{"text": "t"}', b'"text": ', b'"id": ']),
        )  # fmt: skip

        @FUZZ_SETTINGS
        @given(data=st.one_of(st.binary(max_size=300), st.lists(chunks, max_size=12).map(b"".join)), skip=st.booleans())
        def check(data, skip):
            check_import(db_path, data, skip)

        check()


SAFE_KEYS = st.text(st.characters(exclude_categories=("Cc", "Cs", "Zl", "Zp")), max_size=6)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=10))
JSON_VALUES = st.recursive(
    SCALARS, lambda children: st.lists(children, max_size=3) | st.dictionaries(SAFE_KEYS, children, max_size=3),
    max_leaves=8,
)  # fmt: skip
IDS = st.one_of(st.sampled_from(["s1", "s2", "s3", "' OR 1=1 --"]), st.text("ab1é'\";- ", min_size=1, max_size=3))
DATES = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.sampled_from(["2026-10-01", "2026-10-01T12:00:00Z", "1969-07-20T00:00:00+05:00"]),
)
BAD_DATES = st.one_of(
    st.integers(), st.floats(), st.booleans(), st.sampled_from(["nope", "2026-13-01", "", "\ud800", "2026-10-01\x00"])
)
VALID_RECORDS = st.fixed_dictionaries(
    {"text": st.text(max_size=12)},
    optional={
        "id": IDS, "importance": st.integers(1, 5), "timestamp": DATES, "created_at": DATES,
        "namespace": st.sampled_from(["default", "work", "Ω", "x'); DROP TABLE memories;--"]),
        "pinned": st.booleans(), "recall_count": st.integers(0, 2**63 - 1), "fact_key": st.text(max_size=4),
        "meta": st.dictionaries(SAFE_KEYS, JSON_VALUES, max_size=2), "norm_key": st.text(max_size=3),
    },
)  # fmt: skip
WILD_RECORDS = st.fixed_dictionaries(
    {},
    optional={
        "id": IDS | JSON_VALUES, "text": st.text(max_size=8) | st.sampled_from(["a\x00", "\ud800", "x" * 1_000_001]) | JSON_VALUES,
        "importance": st.sampled_from([0, 6, -1, True, False, "high", 3.0, None, 2**64]) | JSON_VALUES,
        "timestamp": BAD_DATES | JSON_VALUES, "updated_at": BAD_DATES, "last_recalled_at": BAD_DATES,
        "namespace": st.sampled_from(["", "a\x00", None]) | JSON_VALUES, "pinned": JSON_VALUES,
        "recall_count": st.integers() | JSON_VALUES, "key": JSON_VALUES, "fact_key": JSON_VALUES,
        "meta": JSON_VALUES, "bogus": JSON_VALUES,
    },
)  # fmt: skip


@st.composite
def json_ish_streams(draw) -> bytes:
    values = draw(st.lists(st.one_of(VALID_RECORDS, VALID_RECORDS, WILD_RECORDS, JSON_VALUES), max_size=6))
    lines = []
    for value in values:
        line = json.dumps(value, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass")
        for _ in range(draw(st.integers(0, 2)) if draw(st.integers(0, 3)) == 0 else 0):
            at = draw(st.integers(0, len(line)))
            kind = draw(st.sampled_from(["delete", "insert", "truncate", "replace"]))
            byte = draw(st.sampled_from([b"\n", b"\r", b"\x00", b"\xff", b"\xc3", b'"', b",", b"}", b"[", b" "]))
            if kind == "delete":
                line = line[:at] + line[at + 1 :]
            elif kind == "insert":
                line = line[:at] + byte + line[at:]
            elif kind == "truncate":
                line = line[:at]
            else:
                line = line[:at] + byte + line[at + 1 :]
        lines.append(line)
    eol = draw(st.sampled_from([b"\n", b"\r\n"]))
    if draw(st.integers(0, 3)) == 0:
        body = b"[" + (b"," + eol).join(lines) + b"]" + eol
    else:
        body = eol.join(lines) + draw(st.sampled_from([b"", eol, eol + b"  " + eol]))
    return (b"\xef\xbb\xbf" if draw(st.booleans()) else b"") + body


def test_fuzz_importer_with_json_ish_records():
    directory, db_path = fuzz_store()
    with directory:

        @FUZZ_SETTINGS
        @given(data=json_ish_streams(), skip=st.booleans())
        def check(data, skip):
            check_import(db_path, data, skip)

        check()
        # Whatever got in, the store is still whole and follows the rules.
        assert invoke(db_path, "check").exit_code == 0


OUT_OF_RANGE = [
    ("restore-run", ["restore", "--run", "99999999999999999999"]),
    ("consolidate-capacity", ["consolidate", "--capacity", "99999999999999999999"]),
    ("list-limit", ["list", "--limit", "99999999999999999999"]),
    ("prune-nan", ["prune", "--stale-threshold", "nan", "--min-age-days", "0"]),
    ("maintain-nan", ["maintain", "--stale-threshold", "nan"]),
    ("report-nan", ["report", "--near-threshold", "nan"]),
]


@pytest.mark.parametrize("args", [c[1] for c in OUT_OF_RANGE], ids=[c[0] for c in OUT_OF_RANGE])
def test_numbers_no_database_can_hold_and_nan_thresholds_are_usage_errors(args, db):
    # Past 64 bits a query cannot even bind the value; NaN passes every range check by comparing false.
    before = snapshot(db)
    result = invoke(db, *args)
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.splitlines()[-1].startswith("Error: Invalid value for ")
    assert snapshot(db) == before


def test_the_api_refuses_nan_thresholds_and_capacities_past_64_bits_before_writing(db):
    with MemoryStore(db) as store:
        runs = store.runs()
        for call in (
            lambda: store.prune(None, stale_threshold=float("nan")),
            lambda: store.consolidate(2**63),
            lambda: store.maintain(stale_threshold=float("nan")),
            lambda: store.maintain(["check", "expire", "dedup"], related_at=float("nan")),
            lambda: store.maintain(min_age_days=-1),
        ):
            with pytest.raises(ValidationError):
                call()
        assert store.runs() == runs


def test_capacities_and_limits_take_the_same_range_on_both_backends(store):
    """PostgreSQL records a run's capacity in 32 bits and refuses a negative LIMIT, where SQLite took
    both: each is refused before anything runs, on either backend, naming its field."""
    store.add_many([{"id": f"m{n}", "text": f"fact {n}"} for n in range(3)])
    with pytest.raises(ValidationError, match="capacity.*at most 2,147,483,647"):
        store.consolidate(2**31)
    assert store.consolidate(2**31 - 1).run_id is not None  # the largest capacity is recorded
    for read in (lambda: store.list(limit=-1), lambda: store.list(limit=-1, as_of=2**40), lambda: store.runs(limit=-1)):
        with pytest.raises(ValidationError, match="'limit'"):
            read()
    assert len(store.list(limit=2)) == 2


def test_import_namespace_option_fills_a_null_namespace_too(tmp_path):
    path = tmp_path / "n.jsonl"
    path.write_text('{"id": "n1", "text": "a", "namespace": null}\n{"id": "n2", "text": "b", "namespace": "kept"}\n')
    db = tmp_path / "store.db"
    assert CliRunner().invoke(cli, ["--db", str(db), "import", str(path), "-n", "foo"]).exit_code == 0
    with MemoryStore(db) as store:
        assert {row["id"]: row["namespace"] for row in store.list(None)} == {"n1": "foo", "n2": "kept"}


def test_a_forget_reason_that_is_not_unicode_is_refused_and_runs_json_stays_json(tmp_path):
    db = tmp_path / "store.db"
    runner = CliRunner()
    assert runner.invoke(cli, ["--db", str(db), "add", "x", "--id", "g"]).exit_code == 0
    bad = runner.invoke(cli, ["--db", str(db), "forget", "g", "--reason", "\udcff"])  # argv's undecodable byte 0xff
    assert bad.exit_code == 1 and "reason" in bad.output and bad.output.count("\n") == 1
    assert json.loads(runner.invoke(cli, ["--db", str(db), "runs", "--json"]).output) == []


def test_both_backends_split_addresses_urls_and_dates_into_words(store):
    """FTS5 splits an e-mail address, a URL or a date at its punctuation; PostgreSQL's parser kept
    each whole, so no query word found it there (until revision 0011)."""
    store.add_many([
        {"id": "mail", "text": "Contact alice@example.com for access."},
        {"id": "url", "text": "See https://x.org/guide/intro first."},
        {"id": "date", "text": "Release v1.2.3 on 2024-01-15."},
        {"id": "temp", "text": "It dropped to -5 degrees."},
    ])  # fmt: skip
    queries = ("example", "alice@example.com", "guide", "01", "v1", "5")
    found = {query: [row["id"] for row in store.recall(query, 5, mode="lexical", touch=False)] for query in queries}
    assert found == {"example": ["mail"], "alice@example.com": ["mail"], "guide": ["url"], "01": ["date"], "v1": ["date"], "5": ["temp"]}
