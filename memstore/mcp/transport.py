"""Serving the MCP tools: over stdio for a host that starts the server, or over streamable HTTP
behind a bearer token. Logs go to stderr only: on stdio, stdout is the protocol.

>>> serve(tmp_path / "agent.db", namespace="assistant")                        # doctest: +SKIP
"""

from __future__ import annotations

import copy
import logging
import os
from typing import Any

from mcp.server.transport_security import TransportSecuritySettings

from ..defaults import DEFAULT_NAMESPACE
from ..errors import MemstoreError
from ..listeners import BearerTokenGate, WithoutQueryString, checked_token, is_loopback, loopback_names, parse_address
from ..store import MemoryStore
from .tools import create_server

logger = logging.getLogger(__name__)

# Where the streamable HTTP transport answers (the SDK's default path).
HTTP_PATH = "/mcp"


def loopback_protection(host: str, port: int) -> TransportSecuritySettings:
    """The SDK's Host/Origin check (DNS-rebinding protection) for a server bound to the loopback
    `host`, for every loopback spelling: the SDK turns it on by itself only for the exact hosts
    127.0.0.1, localhost and ::1, and would leave 127.0.0.2 or 0:0:0:0:0:0:0:1 open to any page."""
    hosts = loopback_names(host, port)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=[f"http://{name}" for name in hosts]
    )


def _uvicorn_log_config() -> dict[str, Any]:
    """uvicorn's own logging, with its access log on stderr too (its default is stdout)."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config["handlers"]["access"]["stream"] = "ext://sys.stderr"
    config.setdefault("filters", {})["without_query_string"] = {"()": WithoutQueryString}
    config["handlers"]["access"]["filters"] = ["without_query_string"]
    return config


def serve(
    location: str | os.PathLike[str],
    *,
    namespace: str = DEFAULT_NAMESPACE,
    http: str | None = None,
    token: str | None = None,
) -> None:
    """Serve the store at `location` over stdio, or over streamable HTTP at `http` ('HOST:PORT').

    Binding a non-loopback address needs a `token`; with a token, every HTTP request must carry
    `Authorization: Bearer <token>`. Opens one MemoryStore for the server's lifetime (several
    servers on one SQLite store are safe: WAL and a busy timeout). Logs go to stderr only: on stdio,
    stdout is the protocol.
    """
    address = None if http is None else parse_address(http)
    token = None if address is None else checked_token(token)  # stdio has no use for one
    if address is not None and token is None and not is_loopback(address[0]):
        raise MemstoreError(
            f"refusing to serve {address[0]} without a token: give --token or MEMSTORE_MCP_TOKEN, or bind 127.0.0.1"
        )
    with MemoryStore(location) as store:
        server = create_server(store, namespace)
        if address is None:
            logger.info("memstore mcp: namespace %r of %s on stdio", namespace, store.url)
            server.run("stdio")
            return
        import uvicorn

        host, port = address
        # Host and Origin checked on every loopback bind, token or not; elsewhere the token guards
        # (a DNS-rebinding page cannot send it) and the Host a proxy passes is not memstore's to know.
        security = loopback_protection(host, port) if is_loopback(host) else None
        app = server.streamable_http_app(host=host, streamable_http_path=HTTP_PATH, transport_security=security)
        if token is not None:
            app = BearerTokenGate(app, token)
        logger.info(
            "memstore mcp: namespace %r of %s at http://%s:%d%s%s", namespace, store.url,
            f"[{host}]" if ":" in host else host, port, HTTP_PATH, " (bearer token required)" if token else "",
        )  # fmt: skip
        uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_config=_uvicorn_log_config())).run()


__all__ = ["HTTP_PATH", "loopback_protection", "serve"]
