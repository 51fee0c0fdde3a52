"""`memstore web`: serve the pages on a local address, behind the token.

The first line printed is the address to open, token included (as Jupyter prints its own), so a
person can click it; everything else goes to stderr.
"""

from __future__ import annotations

import os
import secrets
import sys

from ..errors import MemstoreError
from ..listeners import checked_token, is_loopback, loopback_names, parse_address, token_from_file
from ..store import MemoryStore
from .guard import Guard
from .pages import create_app

DEFAULT_LISTEN = "127.0.0.1:8767"
TOKEN_ENV = "MEMSTORE_WEB_TOKEN"


def read_token(token_file: str | os.PathLike[str] | None) -> str | None:
    """The token given (a file's first line, else MEMSTORE_WEB_TOKEN), or None when none is."""
    return token_from_file(token_file) if token_file is not None else checked_token(os.environ.get(TOKEN_ENV))


def page_address(host: str, port: int, token: str) -> str:
    return f"http://{f'[{host}]' if ':' in host else host}:{port}/?token={token}"


def serve(
    location: str | os.PathLike[str], *, listen: str = DEFAULT_LISTEN, token_file: str | os.PathLike[str] | None = None,
    namespace: str | None = None, read_only: bool = False,
) -> None:
    """Serve the store at `location` at `listen` ('HOST:PORT') until interrupted."""
    host, port = parse_address(listen)
    token = read_token(token_file)
    if token is None:
        if not is_loopback(host):
            raise MemstoreError(f"refusing to serve {host} without a token of your own: give --token-file or {TOKEN_ENV}, or listen on 127.0.0.1")
        token = secrets.token_urlsafe(24)  # even on loopback: every local user can reach it
    import uvicorn

    with MemoryStore(location, create=False) as store:  # a mistyped --db is an error, not a new empty store
        app = create_app(store, token=token, namespace=namespace, read_only=read_only)
        guarded = Guard(app, token=token, allowed_hosts=loopback_names(host, port) if is_loopback(host) else None, cookie_port=port)
        print(page_address(host, port, token), flush=True)
        print(f"memstore web: {store.url}{f' (namespace {namespace})' if namespace else ''}{' (read-only)' if read_only else ''}", file=sys.stderr, flush=True)
        uvicorn.Server(uvicorn.Config(guarded, host=host, port=port, log_level="warning")).run()


__all__ = ["DEFAULT_LISTEN", "TOKEN_ENV", "page_address", "read_token", "serve"]
