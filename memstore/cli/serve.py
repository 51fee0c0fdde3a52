"""`memstore mcp`: serve the store to an agent over the Model Context Protocol."""

from __future__ import annotations

import click

from ..defaults import DEFAULT_NAMESPACE


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
    Logs go to stderr. Needs the mcp extra: pip install 'memstore[mcp]'.

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
        raise click.ClickException("the MCP server needs the mcp extra: pip install 'memstore[mcp]'") from None
    serve(ctx.obj["location"], namespace=namespace, http=address, token=token)
