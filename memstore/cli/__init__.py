"""The `memstore` command line: each command is options -> one MemoryStore call -> output.

`app` holds the group and the error handling, `options` the shared options, `render` how results
look; the commands live in one module per family, imported here so the group knows them all.
"""

from __future__ import annotations

from . import corrections, jobs, meaning, serve, store_commands  # noqa: F401  (each registers its commands)
from .app import cli, main

__all__ = ["cli", "main"]
