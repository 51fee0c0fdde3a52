"""Every console transcript in README.md and docs/*.md is run, and what its commands print now is
compared with what the page shows.

A transcript is a fenced block with a line starting with `$ ` (indented blocks inside a list item
too). Each `$ ` line is a command (a line ending in `\\` continues it on the next); the lines up to
the next command are what it prints, stdout and stderr together as a terminal shows them. A
transcript runs in one bash process (so `export` and shell variables carry over from one command
to the next), in a fresh temp directory, with `memstore` of this checkout first on PATH, HOME in
that directory, no MEMSTORE_* variable from outside, and MEMSTORE_DB=<the directory>/agent.db. The
files a transcript uses are made by its own earlier commands or by the setup this module declares
for it (SETUPS, keyed by page and first command): a store holding the page's example memories, a
file the page shows elsewhere, a link to the offline model.

What may differ between the page and the run (the placeholders; everything else is compared
exactly, less trailing spaces):

- the run's directory is shown as `/tmp/rd` (`RUN_DIR`), the checkout's as `~/memstore` (`REPO_SHOWN`:
  the tests run in whatever clone CI made);
- a 32-hex-digit id, which memstore generates: any, but one id of the page stands for one id of the
  run throughout the transcript (and two different ones for two different ones);
- a UTC date-time (`2026-12-02 15:42:19`) or Unix milliseconds (13 digits, as `--json` prints):
  either the page's own value, or a moment while the transcript ran;
- a line `...` on its own: any lines, none included (a trimmed output).

A transcript that cannot run here (it needs a server left running, another host, the network) is
marked on the line right before its block with `<!-- transcript: not run: REASON -->`; those are
listed by `test_the_transcripts_not_run_are_marked_and_listed`, which pins them, so a new one is a
decision, never a silent skip.

Then the scripts the pages tell users to run: each is run by a test at a small size (here, or in
the test module SCRIPT_RUNS names), the pair figures of docs/semantic.md are checked against what
`python -m scripts.semantic_eval` prints, and the counts the pages give (function words, texts
embedded) against the code and data, as is what docs/scheduling.md says of `systemd-analyze verify`.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import pytest

from .test_cli import SEED_HYGIENE_FIXTURE

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
RUN_DIR = "/tmp/rd"
REPO_SHOWN = "~/memstore"
NOT_RUN = re.compile(r"<!-- transcript: not run: (?P<reason>[^>]*?) -->")
FENCE = re.compile(r"^(?P<indent>[ ]*)```(?P<info>[\w-]*)\n(?P<body>.*?)^(?P=indent)```[ ]*$", re.S | re.M)

# The placeholders: generated ids, and moments (a UTC date-time, Unix ms).
ID = r"[0-9a-f]{32}"
DATETIME = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"
MILLIS = r"1[5-9]\d{11}"
VOLATILE = re.compile(rf"(?<![0-9a-f])(?P<id>{ID})(?![0-9a-f])|(?P<datetime>{DATETIME})|(?<!\d)(?P<millis>{MILLIS})(?!\d)")
PLACEHOLDERS = {"id": ID, "datetime": DATETIME, "millis": MILLIS}
ANY_LINES = "..."


@dataclass
class Command:
    text: str  # without the "$ ", continuation lines joined as written
    expected: list[str] = field(default_factory=list)


@dataclass
class Transcript:
    page: Path
    line: int  # of the opening fence
    commands: list[Command]
    not_run: str | None  # the reason, when marked

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"

    @property
    def key(self) -> tuple[str, str]:
        return str(self.page.relative_to(REPO)), self.commands[0].text


def parse(body: str) -> list[Command]:
    commands: list[Command] = []
    lines = iter(body.splitlines())
    for line in lines:
        if line.startswith("$ "):
            text = line[2:]
            while text.endswith("\\"):
                text += "\n" + next(lines)
            commands.append(Command(text))
        elif commands:
            commands[-1].expected.append(line)
    return commands


def transcripts(page: Path) -> list[Transcript]:
    text = page.read_text(encoding="utf-8")
    found = []
    for block in FENCE.finditer(text):
        indent = len(block["indent"])
        body = "\n".join(line[indent:] for line in block["body"].splitlines())
        if not re.search(r"^\$ ", body, re.M):
            continue
        before = text[: block.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marked = NOT_RUN.search(before)
        found.append(Transcript(page, text.count("\n", 0, block.start()) + 1, parse(body), marked and marked["reason"]))
    return found


ALL = [t for page in PAGES for t in transcripts(page)]
TO_RUN = [t for t in ALL if t.not_run is None]


# -- comparing -----------------------------------------------------------------------------------


def pattern(expected: list[str]) -> re.Pattern[str]:
    """A regex for the whole output: the page's lines literally, the placeholders as groups."""
    parts = []
    for line in expected:
        if line.strip() == ANY_LINES:
            parts.append(r"(?:[^\n]*\n)*?")
            continue
        pieces, last = [], 0
        for token in VOLATILE.finditer(line):
            pieces.append(re.escape(line[last : token.start()]))
            pieces.append(f"({PLACEHOLDERS[token.lastgroup]})")
            last = token.end()
        pieces.append(re.escape(line[last:]))
        parts.append("".join(pieces) + r"\n")
    return re.compile("".join(parts))


def volatile_values(lines: list[str]) -> list[tuple[str, str]]:
    return [(m.lastgroup, m.group()) for line in lines if line.strip() != ANY_LINES for m in VOLATILE.finditer(line)]


def moment(kind: str, value: str) -> float:
    if kind == "millis":
        return int(value) / 1000
    return datetime.strptime(value, "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc).timestamp()


def mismatch(command: Command, actual: list[str], ids: dict[str, str], window: tuple[float, float]) -> str | None:
    """Why `actual` is not what the page shows (None: it is)."""
    expected = [line.rstrip() for line in command.expected]
    actual = [line.rstrip() for line in actual]
    found = pattern(expected).fullmatch("".join(line + "\n" for line in actual))
    if found is None:
        diff = difflib.unified_diff(expected, actual, "the page", "printed now", lineterm="")
        return "\n".join(diff) or "(differs)"
    page_values = volatile_values(expected)
    for (kind, shown), printed in zip(page_values, found.groups()):
        if kind == "id":
            if ids.setdefault(shown, printed) != printed or list(ids.values()).count(printed) > 1:
                return f"id {shown} of the page stands for two ids, or two of its ids for one ({printed})"
        elif printed != shown and not window[0] - 1 <= moment(kind, printed) <= window[1] + 1:
            return f"{printed} is neither the page's {shown} nor a moment of this run"
    return None


# -- running -------------------------------------------------------------------------------------


class Run:
    """The directory and environment a transcript runs in, and what its setup may use."""

    def __init__(self, directory: Path, request: pytest.FixtureRequest):
        self.directory = directory
        self.request = request
        home = directory.parent / "home"
        home.mkdir()
        bin_dir = str(Path(sys.executable).parent)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTORE_") and k != "VIRTUAL_ENV"}
        self.env.update(PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", HOME=str(home),
                        MEMSTORE_DB=str(directory / "agent.db"), LC_ALL="C.UTF-8", TZ="UTC")  # fmt: skip

    def model_dir(self) -> Path:
        return self.request.getfixturevalue("model_dir")

    def write(self, name: str, text: str) -> Path:
        path = self.directory / name
        path.write_text(text, encoding="utf-8")
        return path

    def memstore(self, *args: str, input: str | None = None) -> str:
        done = subprocess.run(["memstore", *args], cwd=self.directory, env=self.env, input=input,
                              capture_output=True, text=True, timeout=300)  # fmt: skip
        assert done.returncode == 0, f"setup: memstore {' '.join(args)}: {done.stderr}"
        return done.stdout

    def transcript(self, commands: list[Command]) -> list[list[str]]:
        """Every command in one bash, in order; what each printed (stdout and stderr interleaved)."""
        separator = "\x1e--memstore-transcript--\x1e"
        script = "exec 2>&1 </dev/null\n" + "".join(f"{c.text}\nprintf '%s' '{separator}'\n" for c in commands)
        done = subprocess.run(["bash", "-c", script], cwd=self.directory, env=self.env, stdout=subprocess.PIPE,
                              text=True, timeout=600)  # fmt: skip
        outputs = done.stdout.replace(str(self.directory), RUN_DIR).replace(str(REPO), REPO_SHOWN).split(separator)
        assert len(outputs) == len(commands) + 1, done.stdout
        return [output.splitlines() for output in outputs[:-1]]


# -- what a transcript starts from ---------------------------------------------------------------


def page_block(page: str, starts_with: str) -> str:
    """The body of the fenced block of `page` that starts with `starts_with`: a file the page shows."""
    for block in FENCE.finditer((REPO / page).read_text(encoding="utf-8")):
        if block["body"].startswith(starts_with):
            return block["body"]
    raise AssertionError(f"{page} shows no block starting with {starts_with!r}")


def quickstart_demo(run: Run) -> None:
    """The ten demo memories scripts/quickstart imports, as it imports them."""
    script = (REPO / "scripts" / "quickstart").read_text(encoding="utf-8")
    demo = re.search(r"import - <<'JSONL'\n(.*?)^JSONL$", script, re.S | re.M)[1]
    run.memstore("--db", "quickstart.db", "import", "-", input=demo)


def bad_import(run: Run) -> None:
    run.write("bad.jsonl", '{"id": "a", "text": "one"}\n{"id": "b", "text": "two"}\n{"id": "c", "text": "three", "importance": "high"}\n')


def corrections(run: Run) -> None:
    """The store the corrections start from: m7 says 100 rpm, m8 replaces m3, m4 is wrong."""
    records = [
        {"id": "m3", "text": "The API rate limit is 100 requests per minute."},
        {"id": "m4", "text": "The user works from the Berlin office."},
        {"id": "m7", "text": "The API rate limit is 100 rpm."},
        {"id": "m8", "text": "The API rate limit is 500 requests per minute."},
    ]
    run.memstore("import", "-", input="".join(json.dumps(r) + "\n" for r in records))
    time.sleep(1)  # so the update's times differ from the import's, as on the page


def hygiene_example(run: Run) -> None:
    """The specification's worked example (tests/test_cli.py::SEED_HYGIENE_FIXTURE) and its checks."""
    run.memstore("import", "-", input=SEED_HYGIENE_FIXTURE)
    run.write("checks.json", '[{"query": "office wifi guests", "expect_id": "m5"}, {"query": "alpha beta gamma", "expect_id": "m1"}]\n')
    run.write("stale-check.json", '[{"query": "vendor pricing seat", "expect_id": "m4"}]\n')


def one_memory_a(run: Run) -> None:
    run.memstore("add", "Some words.", "--id", "a")


def store_with_vectors(run: Run) -> None:
    records = [{"id": f"m{n:05d}", "text": text} for n, text in enumerate(
        ["The user prefers dark mode.", "Deploys happen on Fridays.", "The office is in Lisbon.",
         "The API rate limit is 100 rpm.", "The team standup is at 9:30."], start=1)]  # fmt: skip
    run.memstore("import", "-", input="".join(json.dumps(r) + "\n" for r in records))
    run.memstore("embeddings", "enable", "--model", str(run.model_dir()))
    run.memstore("embeddings", "sync")


def a_store(run: Run) -> None:
    run.memstore("init")


def semantic_example(run: Run) -> None:
    """The page's memories.jsonl, and the offline model where the page has it."""
    run.write("memories.jsonl", page_block("docs/semantic.md", '{"id": "d1"'))
    (run.directory / ".model-cache").mkdir()
    (run.directory / ".model-cache" / "minilm").symlink_to(run.model_dir(), target_is_directory=True)


def mcp_memory_file(run: Run) -> None:
    run.write("memory.jsonl", page_block("docs/import.md", '{"type":"entity"'))


def langgraph_file(run: Run) -> None:
    from langgraph.store.sqlite import SqliteStore

    with SqliteStore.from_conn_string(str(run.directory / "langgraph.db")) as source:
        source.setup()
        for n in range(9):
            source.put(("users", "u1", "memories"), f"k{n}", {"content": f"The user said thing number {n}."})


def mem0_file(run: Run) -> None:
    run.write("mem0.json", page_block("docs/import.md", '{"results": ['))


def openmemory_zip(run: Run) -> None:
    source = REPO / "tests" / "data" / "import" / "openmemory" / "export.zip"
    with zipfile.ZipFile(source) as archive:
        assert "memories.json" in archive.namelist()
    (run.directory / "export.zip").write_bytes(source.read_bytes())


SETUPS: dict[tuple[str, str], Callable[[Run], None]] = {
    ("README.md", "memstore --db quickstart.db consolidate --capacity 4"): quickstart_demo,
    ("docs/cli.md", "memstore import bad.jsonl"): bad_import,
    ("docs/cli.md", 'memstore update m7 --text "The API rate limit is 500 rpm."'): corrections,
    ("docs/hygiene.md", "memstore backup before-prune.db"): hygiene_example,
    ("docs/hygiene.md", "memstore prune --now 2026-10-12 --checks stale-check.json"): hygiene_example,
    ("docs/reliability.md", """sqlite3 "$MEMSTORE_DB" "UPDATE memories SET text = 'Changed Words!' WHERE id = 'a'\""""): one_memory_a,
    ("docs/reliability.md", """sqlite3 "$MEMSTORE_DB" "UPDATE memory_vectors SET vector = zeroblob(100) WHERE memory_id = 'm00004'\""""): store_with_vectors,
    ("docs/reliability.md", 'chmod 644 "$MEMSTORE_DB"'): a_store,
    ("docs/semantic.md", "memstore import memories.jsonl"): semantic_example,
    ("docs/import.md", "memstore init"): mcp_memory_file,  # then the dry run and the imports of memory.jsonl
    ("docs/import.md", "memstore import --from langgraph langgraph.db"): langgraph_file,
    ("docs/import.md", "memstore import --from mem0 mem0.json"): mem0_file,
    ("docs/import.md", "memstore import --from mem0 export.zip"): openmemory_zip,
}

# Transcripts that show sqlite-vec searching (`vector search: sqlite-vec`): run by a Python whose
# sqlite3 can load extensions (scripts/test runs the tests marked sqlite_vec under one).
SQLITE_VEC = {("docs/semantic.md", "memstore import memories.jsonl")}

# The transcripts that do not run here, and why; changing this list is a decision.
NOT_RUN_HERE = {
    ("docs/cli.md", "memstore copy agent.db postgresql+psycopg://user@dbhost/agent_memory"),
    ("docs/mcp.md", "MEMSTORE_MCP_TOKEN=s3cret memstore --db agent.db mcp --namespace assistant --http 127.0.0.1:8765"),
    ("docs/mcp.md", "curl -i http://127.0.0.1:8765/mcp"),
    ("docs/mcp.md", "curl -i -X POST http://127.0.0.1:8765/mcp -H 'Authorization: Bearer s3cret' \\"),
    ("docs/semantic.md", "scripts/offline-model .model-cache/minilm"),
    ("docs/web.md", "memstore --db q.db web"),
}


# -- the tests -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "transcript", [pytest.param(t, marks=[pytest.mark.sqlite_vec] if t.key in SQLITE_VEC else []) for t in TO_RUN], ids=lambda t: t.name
)
@pytest.mark.slow  # whole processes: about a minute for all of them on two idle cores
def test_the_transcript_prints_what_the_page_shows(transcript: Transcript, tmp_path, request):
    directory = tmp_path / "rd"
    directory.mkdir()
    run = Run(directory, request)
    started = time.time()
    if setup := SETUPS.get(transcript.key):
        setup(run)
    outputs = run.transcript(transcript.commands)
    window = (started, time.time())
    ids: dict[str, str] = {}
    problems = []
    for command, output in zip(transcript.commands, outputs):
        if (why := mismatch(command, output, ids, window)) is not None:
            problems.append(f"$ {command.text}\n{why}")
    assert not problems, f"{transcript.name}:\n" + "\n\n".join(problems)


def test_the_transcripts_not_run_are_marked_and_listed():
    not_run = {t.key[0]: [] for t in ALL}
    for t in ALL:
        if t.not_run is not None:
            not_run[t.page.relative_to(REPO).as_posix()].append(t)
    listed = [f"{t.name}: {t.not_run}" for ts in not_run.values() for t in ts]
    print(f"{len(TO_RUN)} transcripts run, {len(listed)} not run:", *listed, sep="\n  ")
    assert all(t.not_run.strip() for ts in not_run.values() for t in ts)
    assert {(t.key[0], t.commands[0].text.split("\n")[0]) for ts in not_run.values() for t in ts} == NOT_RUN_HERE


def test_every_not_run_mark_sits_on_a_transcript():
    """A mark the finder would not tie to a block (a blank line between, a typo) skips nothing."""
    marks = sum(len(NOT_RUN.findall(page.read_text(encoding="utf-8"))) for page in PAGES)
    assert marks == sum(t.not_run is not None for t in ALL)


def test_every_setup_belongs_to_a_transcript_that_runs():
    assert set(SETUPS) | SQLITE_VEC <= {t.key for t in TO_RUN}


def test_the_finder_finds_the_transcripts():
    assert len(TO_RUN) >= 15 and {t.page.name for t in TO_RUN} >= {"README.md", "cli.md", "hygiene.md", "time.md"}
    example = parse("$ memstore add x \\\n    --id a\na\n$ memstore list\n...\n")
    assert [(c.text, c.expected) for c in example] == [("memstore add x \\\n    --id a", ["a"]), ("memstore list", ["..."])]


def test_the_comparison_allows_ids_and_moments_and_nothing_else():
    now = time.time()
    window = (now, now)
    stamp = datetime.fromtimestamp(now, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    one, other = "d767db3d317f45c89e2ce58f72f22d23", "3f55aa7b501943d988d1525d7cf8441f"
    page = Command("x", [f"{one} 2026-12-02 15:42:19 2026-01-01 00:00:00", f"started_at {1796226145077}", one])
    assert mismatch(page, [f"{other} {stamp} 2026-01-01 00:00:00", f"started_at {int(now * 1000)}", other], {}, window) is None
    assert mismatch(page, [f"{other} {stamp} 2026-01-01 00:00:00", f"started_at {int(now * 1000)}", one], {}, window)
    assert mismatch(page, [f"{other} {stamp} 2025-01-01 00:00:00", f"started_at {int(now * 1000)}", other], {}, window)
    assert mismatch(page, [f"{other} {stamp} 2026-01-01 00:00:00", "started_at 1", other], {}, window)
    assert mismatch(Command("x", ["a", ANY_LINES, "z"]), ["a", "b", "c", "z"], {}, window) is None
    assert mismatch(Command("x", ["a", "b"]), ["a", "b", "c"], {}, window)
    assert mismatch(Command("x", ["a  "]), ["a"], {}, window) is None


# -- the scripts the docs tell users to run, and the figures they printed ------------------------

# Every `python -m scripts...` and every executable `scripts/NAME` the README and docs/ name, and the
# test that runs it (at a small size): here, or the other test module named, which must name it too.
SCRIPT_RUNS = {
    "scripts.bench": "test_the_bench_runs_at_a_small_size",
    "scripts.bench.report": "test_the_report_bench_runs_at_a_small_size",
    "scripts.bench.startup": "test_the_start_up_comparison_runs_at_a_small_size",
    "scripts.bench.import_vectors": "test_the_import_bench_runs_at_a_small_size",
    "scripts.semantic_eval": "test_the_pair_figures_are_what_semantic_eval_prints",
    "scripts.bench.flags": "tests/test_flags.py",  # the nightly contradict phase, tiny
    "scripts.flag_streams": "tests/test_flags.py",  # the labelled streams, written again and compared
    "scripts.eval_recall": "tests/test_eval_recall.py",  # its evaluation, the same computation (3.5 min)
    "scripts.probe": "tests/test_probe.py",
    "scripts.torture": "tests/test_torture.py",
    "scripts/offline-model": "tests/conftest.py",  # the model_dir fixture
    "scripts/quickstart": "tests/test_privacy.py",
    "scripts/test": None,  # the test command itself: it runs all of these
}


def scripts_named_in_the_docs() -> set[str]:
    named = set()
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        named |= set(re.findall(r"python -m (scripts(?:\.\w+)*)", text))
        for path in re.findall(r"(?<![\w/.-])(scripts/[\w-]+)(?![\w/.-])", text):
            if (REPO / path).is_file() and os.access(REPO / path, os.X_OK):
                named.add(path)
    return named


def run_script(module: str, *args: str, timeout: int = 600) -> str:
    env = {k: v for k, v in os.environ.items() if k != "MEMSTORE_DB"}
    done = subprocess.run([sys.executable, "-m", module, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"python -m {module} {' '.join(args)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def test_every_script_the_docs_name_is_run_by_a_test():
    assert scripts_named_in_the_docs() == set(SCRIPT_RUNS)
    here = (REPO / "tests" / "test_docs_transcripts.py").read_text(encoding="utf-8")
    for script, runner in SCRIPT_RUNS.items():
        if runner is None:
            continue
        if runner.startswith("tests/"):
            parent, _, last = script.replace("/", ".").rpartition(".")
            path = " / ".join(f'"{part}"' for part in script.split("/"))  # REPO / "scripts" / "quickstart"
            spellings = (script, path, f"from {parent} import {last}", f"import {script}", f"-m {script}")
            text = (REPO / runner).read_text(encoding="utf-8")
            assert any(s in text for s in spellings), f"{runner} does not run {script}"
        else:
            assert f"def {runner}(" in here, runner


def test_the_report_bench_runs_at_a_small_size(tmp_path):
    out = run_script("scripts.bench.report", "--size", "300", "--repeats", "1", "--exhaustive-sample", "100",
                     "--output", str(tmp_path / "report.json"))  # fmt: skip
    assert "IDENTICAL" in out and "negated_vs_plain_at_0.5  IDENTICAL" in out
    assert json.loads((tmp_path / "report.json").read_text())["store"]["records"] == 300


@pytest.mark.slow
def test_the_bench_runs_at_a_small_size(tmp_path, model_dir):
    """Every scenario, tiny: a bench that crashes at its end is caught here, not after an hour. Its
    speed targets are the bench's to judge at its documented sizes, not a test's on a busy machine
    (--no-targets): what this asserts is that it ran, checked its results and printed its table."""
    (tmp_path / "work").mkdir()
    out = run_script(
        "scripts.bench", "--sizes", "400", "--repeats", "1", "--adds", "5", "--queries", "5", "--exhaustive-sample", "50",
        "--near-dup-max", "400", "--ops-sizes", "300", "600", "--cli-runs", "2", "--copy-size", "200", "--web-sizes", "300",
        "--web-namespaces", "5", "--web-runs", "2", "--importers-size", "30", "--langgraph-puts", "10", "--process-runs", "1",
        "--vectors-size", "300", "--vectors-big", "600", "--sync-size", "40", "--writers-size", "300", "--writers", "2", "--model-dir", str(model_dir), "--workdir", str(tmp_path / "work"),
        "--output", str(tmp_path / "bench.json"), "--no-targets",
    )  # fmt: skip
    assert f"wrote {tmp_path / 'bench.json'}" in out
    document = json.loads((tmp_path / "bench.json").read_text())
    assert document["table"] and all(document[part] for part in ("operations", "semantic", "copy", "web", "importers", "langgraph"))
    assert "\nmachine: " in out  # the line printed just before the table


@pytest.mark.slow
def test_the_start_up_comparison_runs_at_a_small_size():
    out = run_script("scripts.bench.startup", "HEAD", "--runs", "2", "--size", "50")
    assert "| HEAD |" in out and "| HEAD (copy 1) |" in out


@pytest.mark.slow
def test_the_import_bench_runs_at_a_small_size(model_dir):
    out = run_script("scripts.bench.import_vectors", "--size", "60", "--model-dir", str(model_dir))
    assert re.search(r"^sqlite +60 records", out, re.M) and re.search(r"^postgresql +60 records", out, re.M)


@pytest.mark.slow
def test_the_pair_figures_are_what_semantic_eval_prints(model_dir):
    """docs/semantic.md's tables under "Pairs" are lines the script prints, and its count of texts."""
    out = run_script("scripts.semantic_eval", "--model", str(model_dir))
    page = (REPO / "docs" / "semantic.md").read_text(encoding="utf-8")
    section = page.split("### Pairs", 1)[1].split("\n### ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    assert len(rows) >= 20
    assert [row for row in rows if row not in out.splitlines()] == []
    embedded = re.search(r"^embedded (\d+) texts", out, re.M)[1]
    assert f"embeds {embedded} short texts" in page


def test_the_counts_the_docs_give_are_the_code_s():
    from memstore.words import FUNCTION_WORDS

    assert f"`memstore.words.FUNCTION_WORDS` ({len(FUNCTION_WORDS)} English words)" in (REPO / "docs" / "hygiene.md").read_text()
    pairs = [json.loads(line) for line in (REPO / "tests" / "data" / "semantic_pairs.jsonl").read_text().splitlines() if line.strip()]
    texts = len({p["a"] for p in pairs} | {p["b"] for p in pairs})
    assert f"embeds {texts} short texts" in (REPO / "docs" / "semantic.md").read_text()


def test_the_systemd_units_verify_once_the_placeholder_path_is_replaced(tmp_path):
    """What docs/scheduling.md says of `systemd-analyze verify`, both halves."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed")
    units = ["memstore-consolidate.service", "memstore-consolidate.timer"]
    for unit in units:
        shutil.copy(REPO / "scripts" / "systemd" / unit, tmp_path / unit)

    def verify() -> subprocess.CompletedProcess[str]:
        return subprocess.run([analyze, "verify", *units], cwd=tmp_path, capture_output=True, text=True, timeout=120)

    shipped = verify()
    assert shipped.returncode != 0 and "/path/to/memstore/.venv/bin/memstore is not executable" in shipped.stderr
    service = tmp_path / units[0]
    service.write_text(service.read_text().replace("/path/to/memstore/.venv/bin/memstore", str(Path(sys.executable).parent / "memstore")))
    edited = verify()
    assert edited.returncode == 0, edited.stderr


def test_every_install_line_names_this_distribution_and_a_real_extra():
    """`pip install 'memstore[...]'` fetched an unrelated PyPI package: every line with an extra, in
    the docs and in memstore's own messages, installs from a clone (`'.[EXTRA]'`, editable or not) or
    names this distribution (`'memstore-agents[EXTRA]'`, which adds the extra where memstore is installed)."""
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    sources = [*PAGES, *sorted((REPO / "memstore").rglob("*.py"))]
    lines = [(path, m) for path in sources for m in re.finditer(r"pip install (-e )?'([^'\[]*)\[([\w,]+)\]'", path.read_text(encoding="utf-8"))]
    assert len(lines) >= 10
    wrong = [f"{path.relative_to(REPO)}: {m[0]}" for path, m in lines
             if m[2] not in (".", project["name"]) or (m[1] and m[2] != ".") or not set(m[3].split(",")) <= set(project["optional-dependencies"])]  # fmt: skip
    assert wrong == []
