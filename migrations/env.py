"""Alembic environment shared by `alembic` in the checkout and by memstore itself.

memstore passes its open connection (already inside a write transaction) through
`config.attributes["connection"]`; the `alembic` command line instead opens the database named by
MEMSTORE_DB, or memstore's default file.
"""

from __future__ import annotations

from alembic import context

from memstore.db import default_location, make_engine, write_transaction
from memstore.migrate import comparison_options

config = context.config


def configure(connection) -> None:
    context.configure(connection=connection, **comparison_options(connection))


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        configure(connection)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = make_engine(default_location())
    try:
        with write_transaction(engine) as connection:
            configure(connection)
            with context.begin_transaction():
                context.run_migrations()
    finally:
        engine.dispose()


if context.is_offline_mode():
    raise SystemExit("memstore migrations run online only: set MEMSTORE_DB and run `alembic upgrade head`")
run_migrations_online()
