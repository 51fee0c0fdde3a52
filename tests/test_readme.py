"""The README and docs/ tell the truth: their Python blocks run, the schema is the real one, the shell
queries work in sqlite3, every CLI command is documented, every link resolves, the README stays short."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import click
import pytest

from memstore import MemoryStore
from memstore.cli import cli

from .conftest import SEED_SAMPLE

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = sorted((REPO / "docs").glob("*.md"))
PAGES = [README, *DOCS]
README_MAX_LINES = 170


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def fenced_blocks(text: str, language: str) -> list[str]:
    """The bodies of the ```language blocks of a Markdown text, in order."""
    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.S | re.M)


def name(path: Path) -> str:
    return str(path.relative_to(REPO))


# -- the examples run -------------------------------------------------------------------------


def test_the_python_examples_are_where_they_should_be():
    assert len(fenced_blocks(read(README), "python")) == 1
    assert fenced_blocks(read(REPO / "docs" / "python-api.md"), "python")


@pytest.mark.parametrize("page", [p for p in PAGES if fenced_blocks(read(p), "python")], ids=name)
def test_python_blocks_run(page, tmp_path, monkeypatch):
    """Each page's blocks run in order in one namespace (later blocks may build on earlier ones),
    in a temp dir of its own."""
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for block in fenced_blocks(read(page), "python"):
        exec(compile(block, name(page), "exec"), namespace)


SCHEMA_DOC = read(REPO / "docs" / "schema.md")


def test_schema_block_is_the_schema_a_fresh_store_has(db_path):
    MemoryStore(db_path).close()
    shell = subprocess.run([shutil.which("sqlite3"), str(db_path), ".schema"], capture_output=True, text=True, check=True)
    real = [s for s in shell.stdout.split(";\n") if s.strip() and "alembic_version" not in s]
    schema_block = next(b for b in fenced_blocks(SCHEMA_DOC, "sql") if "CREATE TABLE memories" in b)
    documented = [s for s in schema_block.split(";\n") if s.strip()]
    assert [s.strip().rstrip(";") for s in documented] == [s.strip().rstrip(";") for s in real]


def test_documented_queries_run_in_the_sqlite3_shell(db_path):
    with MemoryStore(db_path) as store:
        store.add_many(SEED_SAMPLE)
        store.consolidate(5)
    queries = next(b for b in fenced_blocks(SCHEMA_DOC, "sql") if "SELECT" in b and "CREATE TABLE" not in b)
    done = subprocess.run([shutil.which("sqlite3"), str(db_path)], input=queries, capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == ""
    assert "m1|duplicate|m2|1|" in done.stdout  # why m1 is gone
    assert "m1|duplicate|User prefers dark mode." in done.stdout  # every copy of one fact
    assert "m2|live|  user prefers   DARK mode " in done.stdout


@pytest.mark.parametrize("command", cli.list_commands(click.Context(cli)))
def test_every_cli_command_is_documented(command):
    assert f"`memstore {command}" in read(REPO / "docs" / "cli.md")


# -- the pages hold together ------------------------------------------------------------------


def without_fences(text: str) -> str:
    """The text less its fenced blocks: a `# comment` in a shell block is no heading."""
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def anchors(text: str) -> set[str]:
    """GitHub's heading anchors: lowercased, punctuation other than '-' and '_' dropped, spaces to
    '-'; a repeated heading gets -1, -2, ..."""
    found: set[str] = set()
    for heading in re.findall(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", without_fences(text), flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        candidate, n = slug, 0
        while candidate in found:
            n += 1
            candidate = f"{slug}-{n}"
        found.add(candidate)
    return found


def relative_links(text: str) -> list[str]:
    prose = re.sub(r"`[^`\n]*`", "", without_fences(text))  # a link inside inline code is no link
    targets = re.findall(r"\[[^\]]*\]\(([^)\s]+)\)", prose)
    return [t for t in targets if not re.match(r"[a-z][a-z0-9+.-]*:", t)]  # http:, https:, mailto: ...


def test_anchors_and_links_are_read_as_github_reads_them():
    page = "# T\n## `memstore check`\n## Merge, don't forget\n## A b\n## A b\n```sh\n# not a heading\n```\n"
    assert anchors(page) == {"t", "memstore-check", "merge-dont-forget", "a-b", "a-b-1"}
    text = "[a](x.md#y) [`b`](../c.md) [web](https://e.org) `[no](link.md)`\n```\n[no](link.md)\n```\n"
    assert relative_links(text) == ["x.md#y", "../c.md"]


@pytest.mark.parametrize("page", PAGES, ids=name)
def test_relative_links_resolve(page):
    broken = []
    for link in relative_links(read(page)):
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        if not target.exists():
            broken.append(f"{link}: no such file")
        elif anchor and target.suffix == ".md" and anchor not in anchors(read(target)):
            broken.append(f"{link}: no heading #{anchor} in {name(target)}")
    assert broken == []


def test_every_doc_is_linked_from_the_readme():
    linked = {(REPO / link.partition("#")[0]).resolve() for link in relative_links(read(README))}
    assert [name(doc) for doc in DOCS if doc not in linked] == []


def test_every_doc_starts_with_a_title_and_what_it_covers():
    for doc in DOCS:
        title, blank, summary = read(doc).split("\n")[:3]
        assert title.startswith("# ") and blank == "" and summary, name(doc)


def test_the_readme_reads_in_five_minutes():
    assert len(read(README).splitlines()) <= README_MAX_LINES
