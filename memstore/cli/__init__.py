"""The `memstore` command line: each command is options -> one MemoryStore call -> output.

`app` holds the group, the error handling and which module defines each command (loaded when that
command runs); `options` the shared options, `render` how results look; the commands live in one
module per family.
"""

from __future__ import annotations

from .app import cli, main

__all__ = ["cli", "main"]
