"""Alembic, run from code: `memstore init` and `MemoryStore` bring a database to head through here.

Opening a store already at head is the common case (every CLI call of an agent's per-turn hook), so
it costs one read of `alembic_version` and never imports Alembic; Alembic is loaded only to create
or upgrade a store.
"""

from __future__ import annotations

from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Engine, text

from .db import write_transaction
from .errors import SchemaError

if TYPE_CHECKING:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

# The newest revision in migrations/versions, which the models describe. Known here so that opening
# a store at head needs no Alembic; a test checks it is Alembic's own head.
SCHEMA_HEAD = "0015"
VERSION_TABLE = "alembic_version"


def migrations_dir() -> Path:
    """The migrations folder: top-level `migrations/` in a checkout, `memstore/migrations` in a wheel."""
    return Path(str(files("memstore.migrations")))


def alembic_config(connection: Connection | None = None) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    config.attributes["connection"] = connection
    return config


@lru_cache(maxsize=1)
def _scripts() -> ScriptDirectory:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config())


def current_revision(conn: Connection) -> str | None:
    """The revision stored in the database; None for a database memstore never migrated."""
    if not conn.dialect.has_table(conn, VERSION_TABLE):
        return None
    stored = conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalars().all()
    if len(stored) > 1:
        raise SchemaError(f"{VERSION_TABLE} holds several revisions ({', '.join(sorted(stored))}); memstore's history is linear")
    return stored[0] if stored else None


def _require_known(revision: str | None) -> None:
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
    with engine.connect() as probe:
        revision = current_revision(probe)
    if revision == SCHEMA_HEAD:
        return SCHEMA_HEAD
    from alembic import command

    _require_known(revision)
    with write_transaction(engine) as conn:
        # Re-read under the write lock: another process may have migrated meanwhile.
        revision = current_revision(conn)
        _require_known(revision)
        if revision != SCHEMA_HEAD:
            command.upgrade(alembic_config(conn), "head")
    return SCHEMA_HEAD


def comparison_options(conn: Connection) -> dict:
    """How Alembic compares the models with a database: shared by env.py and the tests."""
    from .schema import managed_outside_models, metadata

    return {
        "target_metadata": metadata,
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

    from .schema import metadata

    def squash(ddl: str) -> str:
        return " ".join(ddl.replace('"', "").replace("\n", " ").split()).lower()

    if conn.dialect.name != "sqlite":
        return []
    stored = dict(conn.execute(text("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")).all())
    drift = []
    for table in metadata.sorted_tables:
        for index in sorted(table.indexes, key=lambda i: i.name):
            expected = squash(str(CreateIndex(index).compile(dialect=conn.dialect)))
            actual = stored.get(index.name)
            if actual is None:
                drift.append(f"index {index.name} is missing")
            elif squash(actual) != expected:
                drift.append(f"index {index.name} is `{actual}`, expected `{expected}`")
    return drift
