"""The `memstore` command group: the store it opens, and how errors reach a user (one line, exit 1)."""

from __future__ import annotations

import io
import json
import os
import sys
from importlib import import_module
from typing import Any

import click
from sqlalchemy.exc import SQLAlchemyError

from ..db import database_error, default_location
from ..errors import MemstoreError


# Each command and where it is defined ("module of this package:attribute"). A command's module is
# imported when the command runs or is listed, not before: an agent's per-turn `memstore add` loads
# the memories' commands only, not those of the jobs, the corrections, meaning or the MCP server.
COMMANDS = {
    "add": "memories:add", "export": "memories:export", "import": "memories:import_", "list": "memories:list_", "show": "memories:show",
    "runs": "runs:runs", "restore": "runs:restore",
    "backup": "files:backup", "check": "files:check", "copy": "files:copy", "init": "files:init", "path": "files:path",
    "forget": "corrections:forget", "history": "corrections:history", "supersede": "corrections:supersede",
    "update": "corrections:update",
    "consolidate": "jobs:consolidate", "maintain": "jobs:maintain", "prune": "jobs:prune", "report": "jobs:report",
    "verify": "jobs:verify",
    "embeddings": "meaning:embeddings", "flags": "meaning:flags", "recall": "meaning:recall",
    "mcp": "serve:mcp_", "web": "serve:web",
}  # fmt: skip


class MemstoreGroup(click.Group):
    """Loads each command from its module when asked for it (COMMANDS), and turns every
    memstore error into one line on stderr and exit code 1: no tracebacks."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module, attribute = COMMANDS[name].split(":")
        command = getattr(import_module(f"{__package__}.{module}"), attribute)
        assert isinstance(command, click.Command) and command.name == name, name
        return command

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand as exc:
            # click suggests among the commands loaded so far, which here are none.
            raise click.exceptions.NoSuchCommand(exc.command_name, possibilities=COMMANDS, ctx=ctx) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except BrokenPipeError:
            # The reader went away (`memstore list | head -1`): stop quietly, exit 0.
            raise click.exceptions.Exit(closed_pipe()) from None
        except MemstoreError as exc:
            raise click.ClickException(str(exc)) from None
        except SQLAlchemyError as exc:
            raise click.ClickException(database_error(exc, (ctx.obj or {}).get("location", "the store"))) from None
        except OSError as exc:
            raise click.ClickException(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": ")) from None
        except json.JSONDecodeError:
            # Only a stored value can fail so: input JSON is decoded by memstore's own checks.
            raise click.ClickException("a stored meta value is not JSON (edited by hand?); `memstore check` names the row") from None
        except UnicodeEncodeError as exc:
            # An argument with bytes that are not UTF-8 reaches Python as lone surrogates, which no
            # database can store; the commands that check their text say which field, the rest land here.
            undecodable = exc.object[exc.start : exc.end].encode("utf-8", "surrogateescape")
            raise click.ClickException(f"an argument is not valid UTF-8 text ({undecodable!r}); give every argument as UTF-8") from None


@click.group(cls=MemstoreGroup)
@click.option(
    "--db",
    envvar="MEMSTORE_DB",
    default=None,
    metavar="PATH|URL",
    help="The store: a SQLite file path or a SQLAlchemy URL. Env: MEMSTORE_DB. Default: see `memstore path`.",
)
@click.version_option(package_name="memstore-agents")
@click.pass_context
def cli(ctx: click.Context, db: str | None) -> None:
    """A memory store for AI agents that keeps itself free of duplicates.

    \b
    Example:
        memstore add "User prefers dark mode." --importance 4
        memstore consolidate --capacity 1000
    """
    ctx.obj = {"location": db or default_location()}  # opened by each command (options.open_store)


def closed_pipe() -> int:
    """Once stdout's reader has gone: point stdout at /dev/null, so what is still buffered (and
    Python's flush at exit) goes nowhere instead of raising again; the exit code for it, 0, as for a
    command that printed everything (a reader that stops early, like `head`, chose to)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, io.UnsupportedOperation):  # no real stdout (a test runner's)
        pass
    return 0


def main() -> None:
    try:
        cli(prog_name="memstore")
    except SystemExit:
        # Output small enough to sit in stdout's buffer is written only now: a reader gone by then
        # ends the command as quietly as one gone while it printed.
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            closed_pipe()
        raise
    except Exception as exc:  # a bug of ours must still not print a traceback at a user
        click.echo(f"Error: unexpected {type(exc).__name__}: {exc}", err=True)
        sys.exit(1)
