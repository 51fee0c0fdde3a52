"""What every HTTP listener of memstore's shares (the MCP server over HTTP, the web page): where it
binds, which addresses count as loopback and which Host names reach them, and the bearer token.

Memories are personal data: a listener off loopback needs a token, and on loopback the Host header
must name the address bound, so a DNS-rebinding page cannot use a browser to reach it.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import os
from pathlib import Path
from typing import Any

from .errors import MemstoreError


def parse_address(address: str) -> tuple[str, int]:
    """'HOST:PORT' (IPv6 as '[::1]:PORT') -> (host, port)."""
    host, colon, port = address.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    # ASCII digits only: str.isdigit and int() also take other scripts' digits ("٨٠").
    if not colon or not host or not (port.isascii() and port.isdigit()) or not 0 < int(port) < 65536:
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


class WithoutQueryString(logging.Filter):
    """Drops the query string from uvicorn's access log lines: a client that puts a token or a
    search in the address (`?token=...`) must not have it written to a log file. The path stays."""

    def filter(self, record: logging.LogRecord) -> bool:
        # uvicorn's access record: (client, method, path with query string, HTTP version, status).
        if isinstance(record.args, tuple) and len(record.args) == 5 and isinstance(record.args[2], str):
            client, method, path, version, status = record.args
            record.args = (client, method, path.partition("?")[0] + ("?…" if "?" in path else ""), version, status)
        return True


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


def token_from_file(path: str | os.PathLike[str], option: str = "--token-file") -> str:
    """The token on the first line of the file at `path`, as `checked_token` takes it. A file that
    cannot be read, is empty or starts with a blank line is one line naming `option`: a token given
    and not found must never leave the door to a random one."""
    shown = f"{option} {os.fspath(path)}"
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError:
        raise MemstoreError(f"{shown}: not UTF-8 text; write the token on its first line") from None
    except OSError as exc:
        raise MemstoreError(f"{shown}: cannot read it ({exc.strerror or exc})") from None
    if not lines or not lines[0].strip():
        raise MemstoreError(f"{shown}: {'the file is empty' if not lines else 'its first line is blank'}; write the token on its first line")
    try:
        return checked_token(lines[0]) or ""  # never "": the line has a character
    except MemstoreError as exc:
        raise MemstoreError(f"{shown}: {exc}") from None


__all__ = ["BearerTokenGate", "WithoutQueryString", "checked_token", "is_loopback", "loopback_names", "parse_address", "token_from_file"]
