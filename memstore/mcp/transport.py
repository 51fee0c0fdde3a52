"""Serving the MCP tools: over stdio for a host that starts the server, or over streamable HTTP
behind a bearer token. Logs go to stderr only: on stdio, stdout is the protocol.

>>> serve(tmp_path / "agent.db", namespace="assistant")                        # doctest: +SKIP
"""

from __future__ import annotations

import copy
import hmac
import ipaddress
import logging
import os
from typing import Any

from mcp.server.transport_security import TransportSecuritySettings

from ..defaults import DEFAULT_NAMESPACE
from ..errors import MemstoreError
from ..store import MemoryStore
from .tools import create_server

logger = logging.getLogger(__name__)

# Where the streamable HTTP transport answers (the SDK's default path).
HTTP_PATH = "/mcp"


def parse_address(address: str) -> tuple[str, int]:
    """'HOST:PORT' (IPv6 as '[::1]:PORT') -> (host, port)."""
    host, colon, port = address.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise MemstoreError(f"not a HOST:PORT address: {address!r}")
    return host, int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: it may resolve to anything
        return False


def loopback_names(host: str, port: int) -> list[str]:
    """The `Host` header values a browser sends for a server bound to the loopback `host`: the
    address as given and in its usual spelling, and `localhost`, each with the port (and without it
    on port 80, where browsers leave it out). A DNS-rebinding page reaches the server under its own
    host name, which is never one of these."""
    names = {"localhost", host}
    if host == "localhost":
        names |= {"127.0.0.1", "::1"}
    else:
        address = ipaddress.ip_address(host)
        names |= {address.compressed, address.exploded}
    bracketed = sorted(f"[{name}]" if ":" in name else name for name in names)
    return [f"{name}:{port}" for name in bracketed] + (bracketed if port == 80 else [])


def loopback_protection(host: str, port: int) -> TransportSecuritySettings:
    """The SDK's Host/Origin check (DNS-rebinding protection) for a server bound to the loopback
    `host`, for every loopback spelling: the SDK turns it on by itself only for the exact hosts
    127.0.0.1, localhost and ::1, and would leave 127.0.0.2 or 0:0:0:0:0:0:0:1 open to any page."""
    hosts = loopback_names(host, port)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=[f"http://{name}" for name in hosts]
    )


class BearerTokenGate:
    """ASGI middleware: a request without `Authorization: Bearer <token>` gets 401 and reaches nothing."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self._token = token.encode()

    def _authorized(self, headers: list[tuple[bytes, bytes]]) -> bool:
        value = next((v for name, v in headers if name.lower() == b"authorization"), b"")
        scheme, _, credential = value.partition(b" ")
        # compare_digest: the time taken does not tell how much of a guess was right.
        return hmac.compare_digest(credential.strip(), self._token) and scheme.lower() == b"bearer"

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not self._authorized(scope["headers"]):
            await send({
                "type": "http.response.start", "status": 401,
                "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b'Bearer realm="memstore"')],
            })  # fmt: skip
            await send({"type": "http.response.body", "body": b'{"error": "missing or wrong bearer token"}'})
            return
        if scope["type"] == "websocket" and not self._authorized(scope["headers"]):
            await send({"type": "websocket.close", "code": 1008})
            return
        await self.app(scope, receive, send)


def _uvicorn_log_config() -> dict[str, Any]:
    """uvicorn's own logging, with its access log on stderr too (its default is stdout)."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config["handlers"]["access"]["stream"] = "ext://sys.stderr"
    return config


def checked_token(token: str | None) -> str | None:
    """The bearer token as clients send it, or None when none is given (an empty MEMSTORE_MCP_TOKEN
    is unset). Surrounding whitespace goes: an HTTP header value has none, so a token read from a
    file with its newline still matches. A token of blanks, with a blank or control character
    inside, or outside ASCII (HTTP clients encode headers as ASCII) could never be sent, and is
    refused rather than locking every client out."""
    if not token:
        return None
    token = token.strip()
    if not token or not token.isascii() or any(ch.isspace() or not ch.isprintable() for ch in token):
        raise MemstoreError("the token must be one word of printable ASCII characters, without spaces")
    return token


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


__all__ = ["BearerTokenGate", "HTTP_PATH", "is_loopback", "loopback_names", "loopback_protection", "parse_address", "serve"]
