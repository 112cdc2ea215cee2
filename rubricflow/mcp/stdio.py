"""`rubricflow mcp`: the MCP server over stdio, for a client that starts it as a
subprocess (Claude Desktop, an IDE, an agent framework).

The application is opened over the store for the session's life and closed when the
client closes the pipe. The caller is the local user (an admin of their own store);
nothing but MCP messages goes to standard output.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp.server.stdio import stdio_server

from rubricflow.mcp.callers import LocalCaller
from rubricflow.mcp.server import build_server

if TYPE_CHECKING:
    from rubricflow.application import Application

__all__ = ["NO_JUDGE", "serve_stdio", "use_judge_for_reviews"]

NO_JUDGE = (
    "this server has no judge: start it with 'rubricflow mcp --llm SPEC' (or set "
    "RUBRICFLOW_LLM in its environment); a tool call cannot choose one"
)


def use_judge_for_reviews(application: Application, judge: str) -> None:
    """Reviews of submitted artifacts judge their LLM criteria with `judge` too."""
    options = dict(application.artifacts.evaluate_options)
    inner = dict(options.get("options") or {})
    inner["llm"] = judge
    application.artifacts.evaluate_options = {**options, "options": inner}


async def serve_stdio(application: Application, *, actor: str, judge: str | None = None) -> None:
    """Serve MCP on standard input and output until the client closes them. Tools act as
    `actor` (the audit trail's name); `judge` scores the criteria an LLM judges."""
    if judge is not None:
        use_judge_for_reviews(application, judge)
    server = build_server(
        lambda: application, caller=LocalCaller(actor), judge=judge, no_judge=NO_JUDGE
    )
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
