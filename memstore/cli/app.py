"""The `memstore` command group: the store it opens, and how errors reach a user (one line, exit 1)."""

from __future__ import annotations

import sys
from typing import Any

import click
from sqlalchemy.exc import SQLAlchemyError

from ..db import database_error, default_location
from ..errors import MemstoreError
from ..store import MemoryStore


class MemstoreGroup(click.Group):
    """Turns every memstore error into one line on stderr and exit code 1: no tracebacks."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except MemstoreError as exc:
            raise click.ClickException(str(exc)) from None
        except SQLAlchemyError as exc:
            raise click.ClickException(database_error(exc, (ctx.obj or {}).get("location", "the store"))) from None
        except OSError as exc:
            raise click.ClickException(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": ")) from None


def open_store(ctx: click.Context, *, create: bool = False) -> MemoryStore:
    """The store named by --db; only the commands that write new memories may create it."""
    return ctx.find_root().obj["open"](create)


@click.group(cls=MemstoreGroup)
@click.option(
    "--db",
    envvar="MEMSTORE_DB",
    default=None,
    metavar="PATH|URL",
    help="The store: a SQLite file path or a SQLAlchemy URL. Env: MEMSTORE_DB. Default: see `memstore path`.",
)
@click.version_option(package_name="memstore")
@click.pass_context
def cli(ctx: click.Context, db: str | None) -> None:
    """A memory store for AI agents that keeps itself free of duplicates.

    \b
    Example:
        memstore add "User prefers dark mode." --importance 4
        memstore consolidate --capacity 1000
    """
    location = db or default_location()
    stores: list[MemoryStore] = []

    def open_once(create: bool) -> MemoryStore:
        if not stores:
            stores.append(MemoryStore(location, create=create))
            ctx.call_on_close(stores[0].close)
        return stores[0]

    ctx.obj = {"location": location, "open": open_once}


def main() -> None:
    try:
        cli(prog_name="memstore")
    except Exception as exc:  # a bug of ours must still not print a traceback at a user
        click.echo(f"Error: unexpected {type(exc).__name__}: {exc}", err=True)
        sys.exit(1)
