"""`memstore mcp`: the store as an MCP server. `tools` holds the tools the model sees; `transport`
serves them over stdio, or over HTTP behind a bearer token.

This package needs the `mcp` extra (`pip install 'memstore-agents[mcp]'`); `import memstore` never loads it.
"""

from __future__ import annotations

from .transport import HTTP_PATH, serve
from .tools import create_server, tool_errors

__all__ = ["HTTP_PATH", "create_server", "serve", "tool_errors"]
