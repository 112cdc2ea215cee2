"""The MCP server: `build_server(...)` gives the SDK's low-level `Server` with rubricflow's
tools (`rubricflow.mcp.tools`) and its rubrics as resources (`rubricflow.mcp.resources`).

The low-level server lets the tools' schemas come straight from the operations' pydantic
models (`inputSchema` from the parameters, `outputSchema` from the result). The same
server runs over stdio (`rubricflow mcp`) and over streamable HTTP (mounted at `/mcp` by
`rubricflow serve`); only where the application and the caller come from differs.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import metadata
from typing import TYPE_CHECKING, Any

from mcp.server import Server, ServerRequestContext
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    PaginatedRequestParams,
    ReadResourceRequestParams,
    ReadResourceResult,
)

from rubricflow.mcp.callers import Caller, caller_of
from rubricflow.mcp.resources import (
    list_rubric_resources,
    read_rubric_resource,
    rubric_templates,
)
from rubricflow.mcp.tools import ToolContext, call_tool, list_tools

if TYPE_CHECKING:
    from rubricflow.application import Application

__all__ = ["INSTRUCTIONS", "build_server"]

INSTRUCTIONS = """\
rubricflow reviews content against versioned rubrics. To check a draft, call
evaluate_text (nothing is stored). To publish through the review gate, call
submit_for_review and publish only when the status is approved; on needs_revision,
change the content as `fixes` says and call revise_artifact. list_rubrics and
explain_rubric say what the rubrics check; each rubric is also a resource,
rubric://ID or rubric://ID@VERSION."""


def build_server(
    application: Callable[[], Application],
    *,
    caller: Caller | None = None,
    judge: str | None = None,
    no_judge: str | None = None,
) -> Server[Any]:
    """The MCP server over the application `application()` gives (called per request,
    so an HTTP host can open it in its own lifespan). `caller` acts for requests that
    carry none (stdio's local user); over HTTP every request carries the caller its host
    verified. `judge` (a spec) scores evaluate_text's LLM criteria; tool calls cannot
    choose one. `no_judge` tells how to give this host a judge, for a rubric that needs
    one it does not have."""

    hint = {} if no_judge is None else {"no_judge": no_judge}

    async def on_list_tools(
        ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        return ListToolsResult(tools=list_tools())

    async def on_call_tool(
        ctx: ServerRequestContext[Any], params: CallToolRequestParams
    ) -> CallToolResult:
        context = ToolContext(application(), caller_of(ctx.request, caller), judge, **hint)
        return await call_tool(context, params.name, params.arguments or {})

    async def on_list_resources(
        ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListResourcesResult:
        caller_of(ctx.request, caller)  # any verified caller may read the rubrics
        return await list_rubric_resources(application())

    async def on_list_resource_templates(
        ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListResourceTemplatesResult:
        return rubric_templates()

    async def on_read_resource(
        ctx: ServerRequestContext[Any], params: ReadResourceRequestParams
    ) -> ReadResourceResult:
        caller_of(ctx.request, caller)
        return await read_rubric_resource(application(), params.uri)

    return Server(
        "rubricflow",
        version=metadata.version("rubricflow"),
        title="rubricflow",
        description="Review machine-made content against versioned rubrics",
        instructions=INSTRUCTIONS,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        on_list_resources=on_list_resources,
        on_list_resource_templates=on_list_resource_templates,
        on_read_resource=on_read_resource,
    )
