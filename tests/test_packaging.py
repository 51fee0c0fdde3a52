"""What users install is what the tests test: the wheel holds every file of the package, the sdist
builds the same wheel, and an installed memstore (no checkout in sight) runs the README's tour bare
and starts each extra's face with that extra alone.

The expected contents are computed from the tree (every file under memstore/, and the top-level
migrations/ folder shipped as memstore/migrations/), never typed. The wheel is the one the test run
installed (scripts/test: MEMSTORE_TEST_DIST); a build made here runs on a copy of the source tree
so it never writes build/ or *.egg-info into the checkout.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

from .schema_head import head_revision
from .sqlitelib import sqlite3

REPO_ROOT = Path(__file__).resolve().parents[1]
# What a build may not take from the checkout: version control, venvs and build output, stores, caches.
NOT_SOURCE = shutil.ignore_patterns(
    ".git", ".venv*", ".build", "build", "dist", "*.egg-info", "__pycache__", "*.py[cod]", ".pytest_cache", ".hypothesis",
    ".model-cache", ".tools", "*.db", "*.db-wal", "*.db-shm", "bench-results",
)  # fmt: skip
EXTRAS = ("mcp", "web", "langgraph", "semantic", "postgres")


def run(args: list[str], *, cwd: Path, timeout: int = 600, env: dict | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("MEMSTORE_DB", "PYTHONPATH", "VIRTUAL_ENV")}
    result = subprocess.run(args, cwd=cwd, env={**base, **(env or {})}, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"{args} failed:\n{result.stdout}\n{result.stderr}"
    return result


def package_files_in_tree(source: Path) -> set[str]:
    """Where each file of the package's folders lands in the wheel, from the tree itself."""
    shipped = {"memstore": "memstore", "migrations": "memstore/migrations"}
    return {
        f"{target}/{path.relative_to(source / folder).as_posix()}"
        for folder, target in shipped.items()
        for path in (source / folder).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc", ".pyo")
    }


def package_files_in_wheel(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return {name for name in archive.namelist() if not name.split("/", 1)[0].endswith(".dist-info")}


def copy_of_the_source(where: Path) -> Path:
    source = where / "src"
    shutil.copytree(REPO_ROOT, source, ignore=NOT_SOURCE)
    return source


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sdist and the wheel built from that sdist (what pip builds from PyPI): the ones this test
    run installed (scripts/test builds them with `python -m build` and names their folder in
    MEMSTORE_TEST_DIST), else built here from a copy of the source."""
    given = os.environ.get("MEMSTORE_TEST_DIST")
    folder = Path(given) if given else tmp_path_factory.mktemp("build") / "dist"
    if not given:
        run([sys.executable, "-m", "build", "--outdir", str(folder)], cwd=copy_of_the_source(folder.parent))
    (sdist,) = folder.glob("memstore_agents-*.tar.gz")
    (wheel,) = folder.glob("memstore_agents-*.whl")
    return {"sdist": sdist, "wheel": wheel}


def test_the_wheel_holds_every_file_of_the_tree_and_nothing_from_outside_the_package(builds):
    expected = package_files_in_tree(REPO_ROOT)
    shipped = package_files_in_wheel(builds["wheel"])
    # A sanity floor on the tree walk itself: the subpackages and data files that once went missing.
    assert {"memstore/recall/fusion.py", "memstore/web/templates/base.html", "memstore/py.typed",
            "memstore/migrations/script.py.mako", "memstore/migrations/versions/0001_initial_schema.py"} <= expected  # fmt: skip
    assert sorted(expected - shipped) == []
    assert sorted(shipped - expected) == []
    # The top-level checkout folder must not leak into the wheel under its own name.
    assert not any(name.startswith("migrations/") for name in shipped)


def test_the_wheel_built_from_the_sdist_holds_what_the_tree_builds(builds, tmp_path):
    """`pip install .` builds the wheel straight from the tree: the same files as from the sdist."""
    source = copy_of_the_source(tmp_path)
    run([sys.executable, "-m", "build", "--wheel", "--outdir", str(tmp_path / "from-tree")], cwd=source)
    (tree_wheel,) = (tmp_path / "from-tree").glob("memstore_agents-*.whl")
    assert package_files_in_wheel(builds["wheel"]) == package_files_in_wheel(tree_wheel)
    with tarfile.open(builds["sdist"]) as archive:
        root = archive.getnames()[0].split("/", 1)[0]
        in_sdist = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert root.startswith("memstore_agents-")
    assert {"pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "memstore/web/static/style.css", "migrations/env.py"} <= in_sdist


# -- installed as users install it ---------------------------------------------------------------


def new_venv(wheel: Path, where: Path, extra: str | None = None) -> Path:
    """A fresh venv with the wheel installed (not editable), with one extra or none; its bin directory."""
    venv = where / f"venv-{extra or 'bare'}"
    # The test run's own pip installs into the venv (`--python`), as the venv's pip would: the venv
    # gets no pip of its own. (Bytecode is compiled as pip installs: PYTHONDONTWRITEBYTECODE may be
    # set, and then each process would compile every module it imports again.)
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=where)
    target = f"{wheel}[{extra}]" if extra else str(wheel)
    pip = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--quiet", "--disable-pip-version-check"]
    run([*pip, target], cwd=where)
    return venv / "bin"


@pytest.fixture(scope="module")
def bare(builds, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return new_venv(builds["wheel"], tmp_path_factory.mktemp("bare"))


def test_installed_memstore_uses_the_migrations_inside_the_package(bare: Path, tmp_path: Path) -> None:
    result = run([str(bare / "python"), "-c", "import memstore.migrate as m; print(m.migrations_dir())"], cwd=tmp_path)
    location = Path(result.stdout.strip())
    assert location.is_dir()
    assert bare.parent in location.parents
    assert REPO_ROOT not in location.parents


def test_installed_memstore_init_creates_a_store_outside_the_checkout(bare: Path, tmp_path: Path) -> None:
    assert REPO_ROOT not in tmp_path.parents
    db = tmp_path / "x.db"

    result = run([str(bare / "memstore"), "--db", str(db), "init"], cwd=tmp_path)

    assert head_revision() in result.stdout
    with sqlite3.connect(db) as conn:
        tables = {n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        versions = [v for (v,) in conn.execute("SELECT version_num FROM alembic_version")]
    assert {"memories", "memory_archive", "consolidation_runs"} <= tables
    assert versions == [head_revision()]


def test_the_readme_tour_runs_on_the_bare_wheel(bare: Path, tmp_path: Path) -> None:
    """add, recall, consolidate, maintain, report and recall --as-of, with no extra installed."""
    db = str(tmp_path / "agent.db")

    def memstore(*args: str) -> str:
        return run([str(bare / "memstore"), "--db", db, *args], cwd=tmp_path).stdout

    memstore("add", "User prefers dark mode.", "--id", "m1", "--importance", "4", "--timestamp", "10")
    memstore("add", "user prefers dark mode", "--id", "m2", "--timestamp", "20")
    memstore("add", "Deploys on Fridays", "--id", "m3", "--importance", "5", "--timestamp", "5")
    assert [row["id"] for row in json.loads(memstore("recall", "dark mode", "--no-touch", "--json"))] == ["m1", "m2"]
    before = int(time.time() * 1000)
    time.sleep(0.01)  # the moment asked about below, strictly before the run: the CLI takes no moment of ours
    consolidated = json.loads(memstore("consolidate", "--capacity", "1000", "--json"))
    assert [(a["id"], a["reason"]) for a in consolidated["archived"]] == [("m1", "duplicate")]
    assert "verify      ok" in memstore("maintain")
    assert json.loads(memstore("report", "--json"))["total_records"] == 2
    assert [row["id"] for row in json.loads(memstore("recall", "dark mode", "--json"))] == ["m2"]
    as_of = json.loads(memstore("recall", "dark mode", "--as-of", str(before), "--json"))
    assert sorted(row["id"] for row in as_of) == ["m1", "m2"]
    # No optional library came along with the bare wheel.
    missing = run([str(bare / "python"), "-c", "import importlib.util as u; print([m for m in ('mcp', 'langgraph', 'starlette', "
                   "'fastembed', 'numpy', 'psycopg') if u.find_spec(m)])"], cwd=tmp_path).stdout  # fmt: skip
    assert missing.strip() == "[]"


def test_without_an_extra_each_face_says_what_to_install(bare: Path, tmp_path: Path) -> None:
    result = subprocess.run([str(bare / "memstore"), "--db", str(tmp_path / "s.db"), "mcp"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert result.stderr == "Error: the MCP server needs the mcp extra: pip install 'memstore-agents[mcp]'\n"
    langgraph = subprocess.run(
        [str(bare / "python"), "-c", "import memstore.integrations.langgraph"], capture_output=True, text=True, timeout=120
    )
    assert langgraph.returncode == 1 and "pip install 'memstore-agents[langgraph]'" in langgraph.stderr


# -- each extra's face, from a wheel with that extra alone ---------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


MCP_CLIENT = """
import asyncio, sys
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

async def main():
    params = StdioServerParameters(command=sys.argv[1], args=["--db", sys.argv[2], "mcp", "--namespace", "tour"])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.call_tool("remember", {"text": "User prefers dark mode."})
        found = await session.call_tool("recall", {"query": "dark mode"})
        print("dark mode" in found.content[0].text)

asyncio.run(main())
"""

LANGGRAPH_GRAPH = """
import sys
from langgraph.graph import START, StateGraph
from memstore.integrations.langgraph import MemstoreStore

def remember(state, *, store):
    store.put(("users", "u1"), "theme", {"text": "User prefers dark mode."})
    return {"found": [item.key for item in store.search(("users", "u1"), query="dark mode")]}

builder = StateGraph(dict)
builder.add_node("remember", remember)
builder.add_edge(START, "remember")
with MemstoreStore(sys.argv[1]) as store:
    print(builder.compile(store=store).invoke({"found": []})["found"])
"""


def check_face(extra: str, bin_dir: Path, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    db = str(tmp_path / "agent.db")
    memstore = str(bin_dir / "memstore")
    python = str(bin_dir / "python")
    if extra == "mcp":
        assert run([python, "-c", MCP_CLIENT, memstore, db], cwd=tmp_path).stdout.strip() == "True"
    elif extra == "langgraph":
        assert run([python, "-c", LANGGRAPH_GRAPH, db], cwd=tmp_path).stdout.strip() == "['theme']"
    elif extra == "semantic":
        model_dir = request.getfixturevalue("model_dir")
        run([memstore, "--db", db, "add", "The user's cat is called Miso."], cwd=tmp_path)
        run([memstore, "--db", db, "embeddings", "enable", "--model", str(model_dir)], cwd=tmp_path)
        run([memstore, "--db", db, "embeddings", "sync"], cwd=tmp_path)
        run([memstore, "--db", db, "add", "Deploys on Fridays."], cwd=tmp_path)
        found = json.loads(run([memstore, "--db", db, "recall", "what is my pet's name", "--json"], cwd=tmp_path).stdout)
        assert [row["text"] for row in found][:1] == ["The user's cat is called Miso."]
    elif extra == "postgres":
        url = request.getfixturevalue("pg_url")
        run([memstore, "--db", url, "add", "User prefers dark mode.", "--id", "m1"], cwd=tmp_path)
        found = json.loads(run([memstore, "--db", url, "recall", "dark mode", "--json"], cwd=tmp_path).stdout)
        assert [row["id"] for row in found] == ["m1"]
    elif extra == "web":
        run([memstore, "--db", db, "add", "User prefers dark mode.", "--id", "m1"], cwd=tmp_path)
        port = free_port()
        token_file = tmp_path / "token"
        token_file.write_text("a-token-for-the-tour\n")
        token_file.chmod(0o600)
        server = subprocess.Popen([memstore, "--db", db, "web", "--listen", f"127.0.0.1:{port}", "--token-file", str(token_file)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
        try:
            server.stdout.readline()  # the page's address: printed once it is ready to listen
            page = read_page(f"http://127.0.0.1:{port}/memories", "a-token-for-the-tour", server)
            assert "User prefers dark mode." in page
        finally:
            server.terminate()
            server.wait(timeout=30)
    else:
        raise AssertionError(f"no face for the extra {extra}")


def read_page(url: str, token: str, server: subprocess.Popen, attempts: int = 300) -> str:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    for _ in range(attempts):
        assert server.poll() is None, server.stderr.read()
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                return answer.read().decode()
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"{url} never answered")


@pytest.mark.parametrize("extra", EXTRAS)
def test_each_extra_starts_its_face_from_a_wheel_with_that_extra_alone(extra, builds, tmp_path, request):
    bin_dir = new_venv(builds["wheel"], tmp_path, extra)
    check_face(extra, bin_dir, tmp_path, request)


def test_a_run_that_would_test_the_checkout_stops_at_once(tmp_path):
    """The guard in tests/conftest.py: memstore imported from the checkout's source, not an install."""
    program = (
        f"import sys; sys.path.insert(0, {str(REPO_ROOT)!r}); import memstore, pytest; "
        f"sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', '-p', 'no:xdist', {str(REPO_ROOT / 'tests' / 'test_normalize.py')!r}]))"
    )
    env = {k: v for k, v in os.environ.items() if k != "MEMSTORE_TEST_EDITABLE"}
    done = subprocess.run([sys.executable, "-c", program], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    assert f"memstore is imported from the checkout ({REPO_ROOT / 'memstore'}), not from an installed wheel" in done.stdout + done.stderr
    assert " passed" not in done.stdout
