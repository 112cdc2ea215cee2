"""rubricflow as an MCP server (the `mcp` extra: `pip install 'rubricflow[mcp]'`).

Tools `evaluate_text`, `submit_for_review`, `get_review`, `revise_artifact`,
`list_rubrics` and `explain_rubric` (the operations of `rubricflow.tools`, with typed
input and output schemas) and the registered rubrics as resources (`rubric://ID`,
`rubric://ID@VERSION`). Served over stdio by `rubricflow mcp` and over streamable HTTP at
`/mcp` by `rubricflow serve`, behind the API's tokens and roles. Importing this package
without the extra raises `ImportError` for `mcp`.
"""

from __future__ import annotations

from rubricflow.mcp.callers import CALLER_SCOPE_KEY, Caller, LocalCaller
from rubricflow.mcp.http import McpHttpEndpoint, bind_caller
from rubricflow.mcp.server import build_server
from rubricflow.mcp.stdio import serve_stdio

__all__ = [
    "CALLER_SCOPE_KEY",
    "Caller",
    "LocalCaller",
    "McpHttpEndpoint",
    "bind_caller",
    "build_server",
    "serve_stdio",
]
