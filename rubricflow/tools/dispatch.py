"""Run a model's tool call and answer with the provider's tool result message.

Accepted tool calls (as dicts, or SDK objects with `model_dump()`):

- OpenAI Chat Completions: `{"id", "type": "function", "function": {"name",
  "arguments": "<JSON text>"}}` -> `{"role": "tool", "tool_call_id", "content"}`;
- OpenAI Responses: `{"type": "function_call", "call_id", "name", "arguments"}` ->
  `{"type": "function_call_output", "call_id", "output"}`;
- Anthropic: `{"type": "tool_use", "id", "name", "input": {...}}` -> `{"type":
  "tool_result", "tool_use_id", "content", "is_error"}`.

The content is JSON text: the result model, or `{"error": {"type", "message",
"problems": [{"field", "message"}]}}`. Whatever the model wrote (JSON that does not
parse, arguments the schema refuses, an unknown tool, a rubric or artifact that does not
exist, a transition the lifecycle refuses) becomes an error result naming the field and
the fix, never an exception in the bot loop; a tool call of no known shape is the host's
mistake and raises `ToolCallError`.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ValidationError

from rubricflow.errors import (
    ConfigurationError,
    IllegalTransitionError,
    NotFoundError,
    PermissionDeniedError,
    PreconditionFailedError,
    RubricflowError,
    RubricVersionConflictError,
    StoreError,
)
from rubricflow.sync_bridge import run_sync
from rubricflow.tools import operations
from rubricflow.tools.callers import Caller, LocalCaller
from rubricflow.tools.schemas import anthropic_tools, openai_responses_tools, openai_tools
from rubricflow.tools.specs import HostSettings, ToolSpec, select_tools

if TYPE_CHECKING:
    from rubricflow.application import Application
    from rubricflow.llm.session import LLMSession

__all__ = [
    "Provider",
    "ToolCallError",
    "ToolDispatcher",
    "ToolOutcome",
    "dispatch",
    "run_tool_sync",
]

logger = logging.getLogger(__name__)

Provider = Literal["openai", "openai_responses", "anthropic"]

#: the longest arguments text read (the largest field is a 1,000,000-character content)
MAX_ARGUMENTS_CHARS = 4_000_000


class ToolCallError(ConfigurationError):
    """A tool call of no shape the dispatcher knows (the host passed something else)."""


@dataclass(frozen=True)
class ToolOutcome:
    """What a tool call came to: the JSON payload, and whether it is an error."""

    payload: dict[str, Any]
    is_error: bool = False
    problems: list[dict[str, str]] = field(default_factory=list)

    @property
    def content(self) -> str:
        return json.dumps(self.payload, ensure_ascii=False)


def _error(kind: str, message: str, problems: Sequence[Mapping[str, str]] = ()) -> ToolOutcome:
    payload: dict[str, Any] = {"error": {"type": kind, "message": message}}
    if problems:
        payload["error"]["problems"] = [dict(p) for p in problems]
    return ToolOutcome(payload, is_error=True, problems=[dict(p) for p in problems])


def _fix_for(error: Mapping[str, Any], spec: ToolSpec) -> str:
    """What to do about one pydantic error, in the words a model can act on."""
    kind = error.get("type", "")
    fields = ", ".join(spec.params.model_fields)
    if kind == "missing":
        return "add it"
    if kind == "string_unicode":
        return "send valid Unicode text (it holds a lone surrogate)"
    if kind == "extra_forbidden":
        return f"remove it; {spec.name} takes: {fields}"
    if kind.startswith(("string_", "int_", "bool_", "float_", "literal_", "list_", "model_")):
        return "send the type the tool's schema gives"
    return ""  # a value error's message says what to do


def _validation_problems(error: ValidationError, spec: ToolSpec) -> list[dict[str, str]]:
    problems = []
    for item in error.errors(include_url=False, include_input=False):
        where = ".".join(str(part) for part in item["loc"]) or "arguments"
        message = str(item["msg"]).removeprefix("Value error, ")
        fix = _fix_for(item, spec)
        problems.append({"field": where, "message": f"{message}: {fix}" if fix else message})
    return problems


def _refusal_kind(error: RubricflowError) -> str:
    if isinstance(error, NotFoundError):
        return "not_found"
    if isinstance(error, PermissionDeniedError):
        return "not_allowed"
    if isinstance(error, PreconditionFailedError):
        return "version_conflict"
    if isinstance(error, IllegalTransitionError):
        return "not_allowed"
    if isinstance(error, StoreError) and not isinstance(error, RubricVersionConflictError):
        return "store_error"
    return "refused"


def _parse_arguments(arguments: Any) -> tuple[dict[str, Any] | None, ToolOutcome | None]:
    """The arguments as a JSON object, or the error result saying why they are not."""
    if arguments is None or arguments == "":
        return {}, None
    if isinstance(arguments, str | bytes | bytearray):
        if len(arguments) > MAX_ARGUMENTS_CHARS:
            return None, _error(
                "invalid_arguments",
                f"the arguments are {len(arguments)} characters long; at most "
                f"{MAX_ARGUMENTS_CHARS} are read: send shorter content",
            )
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError) as error:
            return None, _error(
                "invalid_json",
                f"the arguments are not valid JSON ({error}); send one JSON object with "
                "the fields the tool's schema gives",
            )
    if not isinstance(arguments, Mapping):
        return None, _error(
            "invalid_arguments",
            f"the arguments are a JSON {type(arguments).__name__}, not an object; send one "
            "JSON object with the fields the tool's schema gives",
        )
    return {str(k): v for k, v in arguments.items()}, None


class ToolDispatcher:
    """Runs tool calls against one `Application`.

    `actor` is who the artifact operations act as (recorded on every transition) and
    `judge` the judge that scores LLM-judged criteria in `evaluate_text` (a spec or an
    open `LLMSession`); both are the host's choice, never the tool call's. Without
    `caller` the dispatcher acts as the store's owner (`LocalCaller(actor)`: every
    artifact, every type); a host serving several users gives each user's `caller`
    (`rubricflow.tools.Caller`: a name, a role, `allows_type`, `can_read`, as the HTTP
    API's principals have), and the tools then reach only that caller's artifacts. `tools` limits
    the tools offered and run (default: all); `openai_tools()` and `anthropic_tools()`
    give the definitions of those tools.
    """

    def __init__(
        self,
        application: Application,
        *,
        actor: str | None = None,
        judge: str | LLMSession | None = None,
        tools: Sequence[str] | None = None,
        caller: Caller | None = None,
    ) -> None:
        if caller is not None and actor is not None and actor != caller.name:
            raise ToolCallError(
                f"actor {actor!r} and caller {caller.name!r} disagree: give one of them "
                "(a caller acts under its own name)"
            )
        self.application = application
        chosen = caller or LocalCaller(actor or operations.DEFAULT_ACTOR)
        self.host = HostSettings(chosen, judge)
        self.specs = {spec.name: spec for spec in select_tools(tools)}

    # --- definitions -----------------------------------------------------------------------
    def openai_tools(self, *, strict: bool = True) -> list[dict[str, Any]]:
        return openai_tools(list(self.specs), strict=strict)

    def openai_responses_tools(self, *, strict: bool = True) -> list[dict[str, Any]]:
        return openai_responses_tools(list(self.specs), strict=strict)

    def anthropic_tools(self) -> list[dict[str, Any]]:
        return anthropic_tools(list(self.specs))

    # --- running ---------------------------------------------------------------------------
    async def run(self, name: Any, arguments: Any) -> ToolOutcome:
        """Run tool `name` with `arguments` (a JSON object, as text or a mapping). Never
        raises for what a model wrote: every refusal is an error outcome."""
        spec = self.specs.get(name) if isinstance(name, str) else None
        if spec is None:
            return _error(
                "unknown_tool",
                f"there is no tool {name!r}; call one of: {', '.join(self.specs)}",
                [{"field": "name", "message": f"use one of: {', '.join(self.specs)}"}],
            )
        parsed, refusal = _parse_arguments(arguments)
        if refusal is not None:
            return refusal
        try:
            params = spec.params.model_validate(parsed)
        except ValidationError as error:
            problems = _validation_problems(error, spec)
            shown = "; ".join(f"{p['field']}: {p['message']}" for p in problems)
            return _error(
                "invalid_arguments", f"{spec.name} refused its arguments: {shown}", problems
            )
        try:
            result: BaseModel = await spec.run(self.application, params, self.host)
        except IllegalTransitionError as error:
            message = await self.application.artifacts.explain_refusal(error)
            return _error(_refusal_kind(error), message)
        except RubricflowError as error:
            kind = _refusal_kind(error)
            if kind == "store_error":  # the host's to fix: its details (the database) stay here
                logger.warning("tool %s: %s", spec.name, error)
                return _error(
                    kind, f"{spec.name} failed: the review store is unavailable; retry later"
                )
            return _error(kind, str(error))
        except asyncio.CancelledError:
            raise
        except Exception as error:  # a fault of the host's, not the model's: log it whole
            logger.exception("tool %s failed", spec.name)
            return _error(
                "internal_error",
                f"{spec.name} failed on the host ({type(error).__name__}); the call may "
                "be retried later",
            )
        return ToolOutcome(result.model_dump(mode="json"))

    async def dispatch(self, tool_call: Any, *, provider: Provider | None = None) -> dict[str, Any]:
        """Run a provider's tool call and return its tool result message (see the
        module's docstring for the shapes)."""
        call = _as_mapping(tool_call)
        shape = provider or _shape_of(call)
        if shape == "openai":
            function = _as_mapping(call.get("function") or {})
            outcome = await self.run(function.get("name"), function.get("arguments"))
            return {"role": "tool", "tool_call_id": call.get("id"), "content": outcome.content}
        if shape == "openai_responses":
            outcome = await self.run(call.get("name"), call.get("arguments"))
            return {
                "type": "function_call_output",
                "call_id": call.get("call_id"),
                "output": outcome.content,
            }
        outcome = await self.run(call.get("name"), call.get("input"))
        return {
            "type": "tool_result",
            "tool_use_id": call.get("id"),
            "content": outcome.content,
            "is_error": outcome.is_error,
        }

    async def dispatch_all(
        self, tool_calls: Sequence[Any], *, provider: Provider | None = None
    ) -> list[dict[str, Any]]:
        """Every tool call of one model turn, one after another, in order (a revision
        may depend on the submission before it)."""
        return [await self.dispatch(call, provider=provider) for call in tool_calls]


def _as_mapping(value: Any) -> Mapping[str, Any]:
    if isinstance(value, Mapping):
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        dumped = dump()
        if isinstance(dumped, Mapping):
            return dumped
    raise ToolCallError(
        f"a tool call must be a mapping (or an SDK object with model_dump()), not "
        f"{type(value).__name__}: pass the tool call the provider's response holds"
    )


def _shape_of(call: Mapping[str, Any]) -> Provider:
    if "function" in call:
        return "openai"
    if call.get("type") == "function_call" or "call_id" in call:
        return "openai_responses"
    if call.get("type") == "tool_use" or "input" in call:
        return "anthropic"
    raise ToolCallError(
        "a tool call of no known shape: expected an OpenAI tool call ({id, function: {name, "
        "arguments}}), a Responses function_call ({call_id, name, arguments}) or an "
        f"Anthropic tool_use block ({{id, name, input}}); got the keys {sorted(call)}"
    )


async def dispatch(
    application: Application,
    tool_call: Any,
    *,
    actor: str | None = None,
    judge: str | LLMSession | None = None,
    caller: Caller | None = None,
) -> dict[str, Any]:
    """Run one tool call with a dispatcher made for it (see `ToolDispatcher`)."""
    dispatcher = ToolDispatcher(application, actor=actor, judge=judge, caller=caller)
    return await dispatcher.dispatch(tool_call)


def run_tool_sync(
    db: str | None,
    tool_call: Any,
    *,
    actor: str | None = None,
    judge: str | None = None,
) -> dict[str, Any]:
    """`dispatch` from synchronous code: opens the store at `db`, runs the call, closes."""
    from rubricflow.application import Application

    async def run() -> dict[str, Any]:
        async with await Application.open(db) as application:
            return await dispatch(application, tool_call, actor=actor, judge=judge)

    return run_sync(run())
