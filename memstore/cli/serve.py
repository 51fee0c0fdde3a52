"""`memstore mcp`: serve the store to an agent over the Model Context Protocol."""

from __future__ import annotations

import errno
import os
import socket

import click

from ..defaults import DEFAULT_NAMESPACE
from ..listeners import parse_address


def require_free_port(address: str, option: str) -> None:
    """Refuse, in one line, an address another program listens on, before anything is printed
    (the web page's address and token would otherwise go out first, then the server's own error)."""
    host, port = parse_address(address)
    try:
        for family, kind, proto, _, bound in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
            with socket.socket(family, kind, proto) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds it
                probe.bind(bound)
            break
    except socket.gaierror:
        return  # a name that does not resolve here: the server refuses it with its own message (a token first)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise click.ClickException(f"{option} {address}: port {port} is in use (another memstore web or mcp?); give another port") from None
        if exc.errno == errno.EADDRNOTAVAIL:
            raise click.ClickException(f"{option} {address}: {host} is not an address of this machine") from None
        raise


@click.command("mcp")
@click.option("--namespace", "-n", default=DEFAULT_NAMESPACE, show_default=True, help="The one namespace this server reads and writes.")
@click.option("--http", "address", metavar="HOST:PORT", default=None, help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio.")
@click.option(
    "--token", envvar="MEMSTORE_MCP_TOKEN", default=None,
    help="HTTP only: every request must carry 'Authorization: Bearer TOKEN'. Required for a non-loopback HOST. Env: MEMSTORE_MCP_TOKEN.",
)  # fmt: skip
@click.pass_context
def mcp_(ctx, namespace, address, token) -> None:
    """Serve the store to an AI agent over MCP (Model Context Protocol).

    Tools: remember, recall, forget, update, show, consolidate, report, all on one
    namespace. Speaks stdio (for an MCP host that starts it) unless --http is given.
    Logs go to stderr. Needs the mcp extra: pip install 'memstore-agents[mcp]'.

    \b
    Example:
        memstore --db ~/agent.db mcp --namespace assistant
        MEMSTORE_MCP_TOKEN=s3cret memstore --db ~/agent.db mcp --http 0.0.0.0:8765
    """
    try:
        from ..mcp import serve
    except ImportError as exc:
        if (exc.name or "").partition(".")[0] == "memstore":
            raise
        raise click.ClickException("the MCP server needs the mcp extra: pip install 'memstore-agents[mcp]'") from None
    if address is not None:
        require_free_port(address, "--http")
    serve(ctx.obj["location"], namespace=namespace, http=address, token=token)


@click.command("web")
@click.option("--listen", metavar="HOST:PORT", default="127.0.0.1:8767", show_default=True, help="Where the page answers.")
@click.option("--token-file", type=click.Path(dir_okay=False), default=None,
              help="A file whose first line is the page's token. Env: MEMSTORE_WEB_TOKEN. Default: a new one each start (loopback only).")
@click.option("--namespace", "-n", default=None, help="Keep the page to this one namespace.")
@click.option("--read-only", is_flag=True, help="Show no actions and refuse every change.")
@click.pass_context
def web(ctx, listen, token_file, namespace, read_only) -> None:
    """Serve a local web page over the store: flags, runs to undo, search as of any moment.

    The first line printed is the address to open, token included. Needs the web extra:
    pip install 'memstore-agents[web]'.

    \b
    Example:
        memstore web
        memstore web --namespace assistant --read-only
    """
    try:
        from ..web.serve import serve
    except ImportError as exc:
        if (exc.name or "").partition(".")[0] == "memstore":
            raise
        raise click.ClickException("the web page needs the web extra: pip install 'memstore-agents[web]'") from None
    if token_file is not None and not os.path.exists(token_file):
        raise click.ClickException(f"--token-file {token_file}: no such file (write the token in it first, or leave the option out for a new token each start)")
    require_free_port(listen, "--listen")
    serve(ctx.obj["location"], listen=listen, token_file=token_file, namespace=namespace, read_only=read_only)
