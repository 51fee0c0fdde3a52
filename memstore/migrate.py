"""Alembic, run from code: `memstore init` and `MemoryStore` bring a database to head through here."""

from __future__ import annotations

from functools import lru_cache
from importlib.resources import files
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine

from .db import write_transaction
from .errors import SchemaError


def migrations_dir() -> Path:
    """The migrations folder: top-level `migrations/` in a checkout, `memstore/migrations` in a wheel."""
    return Path(str(files("memstore.migrations")))


def alembic_config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    config.attributes["connection"] = connection
    return config


@lru_cache(maxsize=1)
def _scripts() -> ScriptDirectory:
    return ScriptDirectory.from_config(alembic_config())


def head_revision() -> str:
    head = _scripts().get_current_head()
    assert head is not None, "memstore ships at least one migration"
    return head


def current_revision(conn: Connection) -> str | None:
    return MigrationContext.configure(conn).get_current_revision()


def _check_known(revision: str | None) -> None:
    if revision is None:
        return
    try:
        _scripts().get_revision(revision)
    except Exception:
        raise SchemaError(
            f"this database was migrated by a newer memstore (schema revision {revision}); "
            "upgrade memstore to open it"
        ) from None


def upgrade(engine: Engine) -> str:
    """Bring the database to head inside one write transaction; return the head revision."""
    head = head_revision()
    with engine.connect() as probe:
        revision = current_revision(probe)
    _check_known(revision)
    if revision == head:
        return head
    with write_transaction(engine) as conn:
        # Re-read under the write lock: another process may have migrated meanwhile.
        revision = current_revision(conn)
        _check_known(revision)
        if revision != head:
            command.upgrade(alembic_config(conn), "head")
    return head


def comparison_options(conn: Connection) -> dict:
    """How Alembic compares the models with a database: shared by env.py and the tests."""
    from .models import Base, managed_outside_models

    return {
        "target_metadata": Base.metadata,
        "render_as_batch": conn.dialect.name == "sqlite",
        "compare_type": True,
        "compare_server_default": False,
        "include_name": lambda name, type_, parent_names: not managed_outside_models(name),
    }


def index_drift(conn: Connection) -> list[str]:
    """Indexes whose definition in the database differs from the models, sort order included.

    Alembic's comparison sees SQLite's reflected index columns without ASC/DESC, so a lost DESC
    (for example after a batch-mode table rebuild) would pass `alembic check`; this compares the
    stored DDL itself.
    """
    from sqlalchemy import text
    from sqlalchemy.schema import CreateIndex

    from .models import Base

    def squash(ddl: str) -> str:
        return " ".join(ddl.replace('"', "").replace("\n", " ").split()).lower()

    if conn.dialect.name != "sqlite":
        return []
    stored = dict(conn.execute(text("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")).all())
    drift = []
    for table in Base.metadata.sorted_tables:
        for index in sorted(table.indexes, key=lambda i: i.name):
            expected = squash(str(CreateIndex(index).compile(dialect=conn.dialect)))
            actual = stored.get(index.name)
            if actual is None:
                drift.append(f"index {index.name} is missing")
            elif squash(actual) != expected:
                drift.append(f"index {index.name} is `{actual}`, expected `{expected}`")
    return drift
