"""Alembic's head, read from the migration scripts: what the tests compare `SCHEMA_HEAD` and every
migrated store with (memstore itself knows its head as `memstore.migrate.SCHEMA_HEAD`, without Alembic)."""

from __future__ import annotations

from functools import lru_cache

from alembic.script import ScriptDirectory

from memstore.migrate import alembic_config


@lru_cache(maxsize=1)
def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None, "memstore ships at least one migration"
    return head
