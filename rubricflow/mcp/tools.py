"""The MCP tools: the agent tools of `rubricflow.tools` (their parameters and result
models' JSON Schemas are the tool's `inputSchema` and `outputSchema`), run as the
request's caller, under the caller rules the agent tools apply.

A call's arguments are validated by the parameters model; a bad argument, an unknown
rubric or artifact, content the type refuses, a state that refuses the change: each is a
tool error (`isError: true`) whose text names the field and the fix, so the model can
correct itself. Artifacts follow the HTTP API's rules: a caller sees only the artifacts
its role and types allow (a submitter: the ones it created); anyone else's is "no
artifact", as if it did not exist.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcp.types import CallToolResult, TextContent, Tool, ToolAnnotations
from pydantic import BaseModel, ValidationError

from rubricflow.errors import (
    ConfigurationError,
    IllegalTransitionError,
    RubricflowError,
)
from rubricflow.tools import operations
from rubricflow.tools.specs import TOOLS as AGENT_TOOLS
from rubricflow.tools.specs import HostSettings
from rubricflow.tools.specs import ToolSpec as AgentTool

if TYPE_CHECKING:
    from rubricflow.application import Application
    from rubricflow.tools.callers import Caller

__all__ = ["TOOLS", "ToolContext", "ToolSpec", "call_tool", "list_tools"]

_log = logging.getLogger("rubricflow.mcp")


@dataclass(frozen=True)
class ToolContext:
    """What a tool runs with: the application, who calls, the host's judge, and how
    to give the host one (said when a rubric needs a judge it does not have)."""

    application: Application
    caller: Caller
    judge: str | None = None
    no_judge: str = operations.NO_JUDGE


@dataclass(frozen=True)
class ToolSpec:
    """One MCP tool over one of `rubricflow.tools`' tools (same name, description,
    parameters and result), with the title and read-only hint MCP clients show."""

    name: str
    title: str
    description: str
    params: type[BaseModel]
    result: type[BaseModel]
    run: Callable[[ToolContext, Any], Awaitable[BaseModel]]
    read_only: bool


def _runner(tool: AgentTool) -> Callable[[ToolContext, Any], Awaitable[BaseModel]]:
    """Run `tool` as the caller, with the host's judge (the caller's rules are the
    agent tools' own); a missing judge is told the MCP host's way."""

    async def run(context: ToolContext, params: Any) -> BaseModel:
        host = HostSettings(context.caller, context.judge)
        try:
            return await tool.run(context.application, params, host)
        except ConfigurationError as error:
            if operations.NO_JUDGE not in str(error):
                raise
            raise ConfigurationError(
                str(error).replace(operations.NO_JUDGE, context.no_judge)
            ) from None

    return run


#: (title, read-only) per tool
_MCP_HINTS: dict[str, tuple[str, bool]] = {
    "evaluate_text": ("Evaluate text against a rubric", True),
    "submit_for_review": ("Submit content for review", False),
    "get_review": ("Get an artifact's review", True),
    "revise_artifact": ("Revise an artifact", False),
    "list_rubrics": ("List rubrics", True),
    "explain_rubric": ("Explain a rubric", True),
}

TOOLS: tuple[ToolSpec, ...] = tuple(
    ToolSpec(
        tool.name,
        _MCP_HINTS[tool.name][0],
        tool.description,
        tool.params,
        tool.result,
        _runner(tool),
        read_only=_MCP_HINTS[tool.name][1],
    )
    for tool in AGENT_TOOLS
)
_BY_NAME = {spec.name: spec for spec in TOOLS}


def list_tools() -> list[Tool]:
    """The tools, their schemas generated from the operations' models."""
    return list(_tools())


@functools.cache
def _tools() -> tuple[Tool, ...]:
    """Built once: generating the JSON Schemas takes tens of milliseconds."""
    return tuple(
        Tool(
            name=spec.name,
            title=spec.title,
            description=spec.description,
            input_schema=spec.params.model_json_schema(mode="validation"),
            output_schema=spec.result.model_json_schema(mode="serialization"),
            annotations=ToolAnnotations(
                title=spec.title,
                read_only_hint=spec.read_only,
                destructive_hint=False,
                idempotent_hint=spec.read_only,
                open_world_hint=False,
            ),
        )
        for spec in TOOLS
    )


def _error(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def _invalid(name: str, error: ValidationError) -> str:
    problems = []
    for item in error.errors(include_url=False, include_input=False):
        where = ".".join(str(part) for part in item["loc"]) or "arguments"
        message = str(item["msg"]).removeprefix("Value error, ")
        problems.append(f"{where}: {message}")
    return f"invalid arguments for {name}: " + "; ".join(problems)


async def call_tool(context: ToolContext, name: str, arguments: dict[str, Any]) -> CallToolResult:
    """Run tool `name`: its result as structured content (and the same JSON as text), or
    a tool error naming what to fix."""
    spec = _BY_NAME.get(name)
    if spec is None:
        return _error(f"no tool {name!r}; the tools are: {', '.join(_BY_NAME)}")
    try:
        params = spec.params.model_validate(arguments)
    except ValidationError as error:
        return _error(_invalid(name, error))
    try:
        result = await spec.run(context, params)
    except IllegalTransitionError as error:  # told as the HTTP API tells it
        return _error(await context.application.artifacts.explain_refusal(error))
    except RubricflowError as error:
        return _error(str(error))
    except ValidationError as error:  # a parameter an operation reads further
        return _error(_invalid(name, error))
    except Exception as error:  # a bug: the client gets a tool error, the log the traceback
        _log.exception("MCP tool %s failed", name)
        return _error(f"internal error in {name}: {type(error).__name__}; see the server's log")
    structured = result.model_dump(mode="json")
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(structured, ensure_ascii=False))],
        structured_content=structured,
    )
