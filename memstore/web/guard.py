"""The web page's door: every request passes here before it reaches a page.

- **Host**: on a loopback bind the `Host` header must name the address bound (or `localhost`), so a
  DNS-rebinding page cannot use a visitor's browser to reach the store.
- **Token**, always, even on loopback (every local user shares loopback): the URL `memstore web`
  prints carries it once as `?token=`; the page trades it for a session cookie and sends the
  browser on without it, to a path on its own origin. The cookie holds a random value made at this
  server's start, never the token (browsers send a cookie to every port of a host, so another local
  service receives it: it is worth nothing there, and nothing here after a restart); it is
  HttpOnly, SameSite=Strict, and named for the port. A request with neither the cookie nor
  `Authorization: Bearer TOKEN` gets 401 and no memory.
- **CSRF**: every form carries a field derived from the token; a POST without it gets 403 and
  changes nothing. (SameSite=Strict already keeps other sites' forms from sending the cookie.)
- **Headers** on every answer: a Content-Security-Policy that allows no script, no frames, no
  outside fetches; `X-Frame-Options: DENY`; no referrer (the first URL holds the token); no caching.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

COOKIE = "memstore_session"
CSRF_FIELD = "csrf"
SECURITY_HEADERS = [
    (b"content-security-policy", b"default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
                                 b"frame-ancestors 'none'; base-uri 'none'"),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]  # fmt: skip


def csrf_value(token: str) -> str:
    """The value every form carries: derived from the token, so it needs no server-side session and
    a page that cannot read the token cannot make it."""
    return hmac.new(token.encode(), b"memstore web csrf", hashlib.sha256).hexdigest()


def _header(scope: dict[str, Any], name: bytes) -> bytes:
    return next((value for key, value in scope["headers"] if key.lower() == name), b"")


def same_origin_path(path: str) -> str:
    """`path` as a Location that stays on this origin: one leading slash (a browser reads `//host`
    and `/\\host` as another site), every other character percent-encoded (no CR/LF in a header)."""
    return "/" + quote(path.lstrip("/\\"), safe="/")


def _cookie(scope: dict[str, Any], name: str) -> str:
    for part in _header(scope, b"cookie").decode("latin-1").split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return ""


class Guard:
    """ASGI middleware in front of the pages; see the module's docstring."""

    def __init__(self, app: Any, *, token: str, allowed_hosts: list[str] | None, cookie_port: int) -> None:
        self.app = app
        self._token = token.encode()
        # Cookies are kept per host, not per port: two pages on one machine keep one cookie each.
        self._cookie = f"{COOKIE}_{cookie_port}"
        # What the cookie carries instead of the token: valid until this server stops.
        self._session = secrets.token_urlsafe(32).encode()
        self._allowed_hosts = None if allowed_hosts is None else {host.encode() for host in allowed_hosts}

    def _has_token(self, scope: dict[str, Any]) -> bool:
        scheme, _, credential = _header(scope, b"authorization").partition(b" ")
        bearer = scheme.lower() == b"bearer" and hmac.compare_digest(credential.strip(), self._token)
        return bearer or hmac.compare_digest(_cookie(scope, self._cookie).encode(), self._session)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            await self.app(scope, receive, send)
            return

        async def send_secured(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *SECURITY_HEADERS]}
            await send(message)

        if self._allowed_hosts is not None and _header(scope, b"host") not in self._allowed_hosts:
            await _plain(send_secured, 421, "Invalid Host header: open the address memstore web printed.")
            return
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        given = query.pop("token", None)
        if given is not None and scope["method"] == "GET":
            if not hmac.compare_digest(given.encode(), self._token):
                await _plain(send_secured, 401, "Wrong token: open the address memstore web printed.")
                return
            # Trade the token in the address for a cookie, and drop it from the address bar.
            rest = urlencode(query)
            location = same_origin_path(scope["path"]) + (f"?{rest}" if rest else "")
            cookie = f"{self._cookie}={self._session.decode()}; HttpOnly; SameSite=Strict; Path=/"
            await send_secured({"type": "http.response.start", "status": 303, "headers": [
                (b"location", location.encode()), (b"set-cookie", cookie.encode())]})  # fmt: skip
            await send_secured({"type": "http.response.body", "body": b""})
            return
        if not self._has_token(scope):
            await _plain(send_secured, 401, "This page needs its token: open the address memstore web printed.")
            return
        await self.app(scope, receive, send_secured)


async def _plain(send: Any, status: int, text: str) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"text/plain; charset=utf-8")]})
    await send({"type": "http.response.body", "body": text.encode()})


__all__ = ["COOKIE", "CSRF_FIELD", "Guard", "SECURITY_HEADERS", "csrf_value", "same_origin_path"]
