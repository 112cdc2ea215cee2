"""Built-in trajectory checks: deterministic check functions over an agent's tool calls.

Each takes a target whose content is a conversation (or, under `scope: trajectory`, the
list of its tool calls) and says where it failed: the call's position, its message and
its name. Registered as the plugin `builtin-trajectory`, with config schemas.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rubricflow.conversation import Conversation, conversation_of
from rubricflow.hookspecs import config_schema, hookimpl
from rubricflow.results import Target
from rubricflow.scorers.schema import bounded_validator_class
from rubricflow.scoring import CheckResult

__all__ = ["SEQUENCE_MODES", "TRAJECTORY_FUNCTIONS", "Call", "trajectory_calls"]

SEQUENCE_MODES = ("strict", "in_order", "unordered", "subset", "superset")


class Call:
    """One tool call in a trajectory: its position (1-based), message index, name, args."""

    __slots__ = ("arguments", "id", "message", "name", "position")

    def __init__(self, position: int, message: int | None, name: str, arguments: Any, id: Any):
        self.position, self.message, self.name = position, message, name
        self.arguments, self.id = arguments, id

    def where(self) -> str:
        at = f" (message {self.message})" if self.message is not None else ""
        return f"call {self.position}{at} {self.name}"


def trajectory_calls(target: Target) -> list[Call]:
    """The tool calls a target holds, in order."""
    content = target.content
    if isinstance(content, list) and all(
        isinstance(c, Mapping) and "name" in c and "role" not in c for c in content
    ):
        return [
            Call(i, c.get("message"), str(c["name"]), c.get("arguments", {}), c.get("id"))
            for i, c in enumerate(content, start=1)
        ]
    conversation = conversation_of(target)
    if conversation is None:
        raise ValueError("a trajectory check needs a conversation or a list of tool calls")
    return [
        Call(i, index, call.name, call.arguments, call.id)
        for i, (index, call) in enumerate(conversation.tool_calls(), start=1)
    ]


def tool_used(target: Target, name: str, min: int = 1, max: int | None = None) -> CheckResult:
    """MET when tool `name` was called at least `min` (and at most `max`) times."""
    calls = [c for c in trajectory_calls(target) if c.name == name]
    ok = len(calls) >= min and (max is None or len(calls) <= max)
    shown = ", ".join(c.where() for c in calls) or "never"
    bound = f"{min}..{max if max is not None else 'any'}"
    return CheckResult(ok, [f"{name} called {len(calls)} times (allowed {bound}): {shown}"])


def tool_not_used(target: Target, names: list[str]) -> CheckResult:
    """MET when none of the tools `names` was called; names each call that was."""
    found = [c for c in trajectory_calls(target) if c.name in names]
    return CheckResult(not found, [f"{c.where()} is not allowed" for c in found])


def _partial_match(expected: Any, actual: Any) -> bool:
    if isinstance(expected, Mapping):
        return isinstance(actual, Mapping) and all(
            key in actual and _partial_match(value, actual[key]) for key, value in expected.items()
        )
    return bool(expected == actual)


def tool_args(
    target: Target,
    name: str,
    schema: Mapping[str, Any] | None = None,
    partial: Mapping[str, Any] | None = None,
) -> CheckResult:
    """MET when every call of tool `name` has arguments that match `schema` (a JSON
    Schema) and hold `partial` (keys and values, nested objects compared the same way).
    UNMET when the tool was never called."""
    calls = [c for c in trajectory_calls(target) if c.name == name]
    if not calls:
        return CheckResult(False, [f"{name} was never called"])
    validator = None
    if schema is not None:
        validator = bounded_validator_class(dict(schema))(dict(schema))
    failures: list[str] = []
    for call in calls:
        if validator is not None:
            for error in validator.iter_errors(call.arguments):
                path = "".join(f"[{p!r}]" for p in error.absolute_path)
                failures.append(f"{call.where()}: arguments{path}: {error.message}")
                break
        if partial is not None and not _partial_match(partial, call.arguments):
            failures.append(f"{call.where()}: arguments do not hold {dict(partial)!r}")
    return CheckResult(not failures, failures or [f"{len(calls)} calls of {name} match"])


def _expected(item: Any) -> tuple[str, Mapping[str, Any] | None]:
    if isinstance(item, str):
        return item, None
    return str(item["name"]), item.get("arguments")


def _fits(expected: tuple[str, Mapping[str, Any] | None], call: Call) -> bool:
    name, arguments = expected
    return call.name == name and (arguments is None or _partial_match(arguments, call.arguments))


def _unmatched(
    wanted: Sequence[tuple[str, Any]], calls: Sequence[Call]
) -> tuple[list[int], list[Call]]:
    """Match wanted items with distinct calls, as many as can be (a maximum bipartite
    matching, so partial arguments cannot make the order of matching matter): the
    indexes of the wanted items left without a call, and the calls left over."""
    owner: dict[int, int] = {}  # call position -> wanted index

    def place(item: int, seen: set[int]) -> bool:
        for at, call in enumerate(calls):
            if at in seen or not _fits(wanted[item], call):
                continue
            seen.add(at)
            if at not in owner or place(owner[at], seen):
                owner[at] = item
                return True
        return False

    missing = [item for item in range(len(wanted)) if not place(item, set())]
    return missing, [call for at, call in enumerate(calls) if at not in owner]


def tool_sequence(target: Target, expected: list[Any], mode: str = "strict") -> CheckResult:
    """MET when the tool calls match `expected` (tool names, or {name, arguments} with
    partial arguments): `strict` the same calls in the same order; `unordered` the same
    calls in any order; `subset` every call is one of the expected; `superset` every
    expected call was made (others may be made too); `in_order` the expected calls were
    made in that order, other calls allowed between them."""
    calls = trajectory_calls(target)
    wanted = [_expected(item) for item in expected]
    if mode == "strict":
        return _strict(wanted, calls)
    if mode == "in_order":
        return _in_order(wanted, calls)
    missing, extra = _unmatched(wanted, calls)
    evidence = [f"expected {wanted[i][0]} (item {i + 1}) was not called" for i in missing]
    evidence += [f"{c.where()} was not expected" for c in extra]
    ok = {
        "unordered": not missing and not extra,
        "subset": not extra,
        "superset": not missing,
    }[mode]
    if mode == "subset":
        evidence = [e for e in evidence if "not expected" in e]
    elif mode == "superset":
        evidence = [e for e in evidence if "not called" in e]
    return CheckResult(ok, evidence or [f"{len(calls)} calls match ({mode})"])


def _strict(wanted: Sequence[tuple[str, Any]], calls: Sequence[Call]) -> CheckResult:
    for index, (item, call) in enumerate(zip(wanted, calls, strict=False)):
        if not _fits(item, call):
            return CheckResult(False, [f"{call.where()}: expected {item[0]} (item {index + 1})"])
    if len(calls) > len(wanted):
        return CheckResult(False, [f"{calls[len(wanted)].where()} was not expected"])
    if len(calls) < len(wanted):
        return CheckResult(
            False, [f"expected {wanted[len(calls)][0]} (item {len(calls) + 1}) was not called"]
        )
    return CheckResult(True, [f"{len(calls)} calls match (strict)"])


def _in_order(wanted: Sequence[tuple[str, Any]], calls: Sequence[Call]) -> CheckResult:
    """The expected calls as a subsequence of the calls: each matched with the earliest
    fitting call after the previous match (earliest is never worse for what follows)."""
    at = 0
    last: Call | None = None
    for index, item in enumerate(wanted):
        while at < len(calls) and not _fits(item, calls[at]):
            at += 1
        if at == len(calls):
            after = f" after {last.where()}" if last is not None else ""
            return CheckResult(
                False, [f"expected {item[0]} (item {index + 1}) was not called{after}"]
            )
        last = calls[at]
        at += 1
    return CheckResult(True, [f"the {len(wanted)} expected calls were made in order"])


def step_count(target: Target, max: int, min: int = 0) -> CheckResult:
    """MET when the number of tool calls is within min..max."""
    calls = trajectory_calls(target)
    ok = min <= len(calls) <= max
    evidence = [f"{len(calls)} tool calls (allowed {min}..{max})"]
    if len(calls) > max:
        evidence.append(f"{calls[max].where()} is over the limit")
    return CheckResult(ok, evidence)


def _conversation(target: Target) -> Conversation:
    conversation = conversation_of(target)
    if conversation is None:
        raise ValueError(
            "final_answer_follows_tools needs the conversation (not scope: trajectory)"
        )
    return conversation


def final_answer_follows_tools(target: Target) -> CheckResult:
    """MET when the conversation ends with an assistant answer (text, no further calls)
    after the last tool result, and every tool call has its result."""
    conversation = _conversation(target)
    messages = conversation.messages
    answered = {m.tool_call_id for m in messages if m.role == "tool"}
    unanswered = [
        f"call {i} (message {index}) {call.name} has no result"
        for i, (index, call) in enumerate(conversation.tool_calls(), start=1)
        if call.id is not None and call.id not in answered
    ]
    last_tool = max((i for i, m in enumerate(messages) if m.role == "tool"), default=-1)
    final = messages[-1] if messages else None
    problems = list(unanswered)
    if final is None or final.role != "assistant" or final.tool_calls or not final.text.strip():
        problems.append(f"message {len(messages) - 1} is not a final assistant answer")
    elif len(messages) - 1 < last_tool:
        problems.append(f"the last tool result (message {last_tool}) comes after the answer")
    return CheckResult(not problems, problems or [f"answer (message {len(messages) - 1})"])


TRAJECTORY_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "trajectory.tool_used": tool_used,
    "trajectory.tool_not_used": tool_not_used,
    "trajectory.tool_args": tool_args,
    "trajectory.tool_sequence": tool_sequence,
    "trajectory.step_count": step_count,
    "trajectory.final_answer_follows_tools": final_answer_follows_tools,
}

_NAME = {"type": "string", "minLength": 1, "description": "a tool's name"}
_COUNT = {"type": "integer", "minimum": 0}
_EXPECTED_ITEM = {
    "anyOf": [
        _NAME,
        {
            "type": "object",
            "properties": {"name": _NAME, "arguments": {"type": "object"}},
            "required": ["name"],
            "additionalProperties": False,
        },
    ]
}


def _options(properties: dict[str, Any], required: list[str], description: str) -> Any:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
        "description": description,
    }


def _ordered(config: Mapping[str, Any]) -> Any:
    low, high = config.get("min", 0), config.get("max")
    if high is not None and low > high:
        yield "min", f"min ({low}) is above max ({high}); nothing could pass, swap them"


def _something_to_match(config: Mapping[str, Any]) -> Any:
    if "schema" not in config and "partial" not in config:
        yield "schema", "give `schema` (a JSON Schema), `partial` (an object) or both"


_SCHEMAS: dict[str, tuple[Any, Any]] = {
    "trajectory.tool_used": (
        _options({"name": _NAME, "min": _COUNT, "max": _COUNT}, ["name"], "options name, min, max"),
        _ordered,
    ),
    "trajectory.tool_not_used": (
        _options(
            {"names": {"type": "array", "items": _NAME, "minItems": 1}},
            ["names"],
            "option names (the tools that must not be called)",
        ),
        None,
    ),
    "trajectory.tool_args": (
        _options(
            {"name": _NAME, "schema": {"type": "object"}, "partial": {"type": "object"}},
            ["name"],
            "options name, and schema (a JSON Schema) or partial (an object)",
        ),
        _something_to_match,
    ),
    "trajectory.tool_sequence": (
        _options(
            {
                "expected": {"type": "array", "items": _EXPECTED_ITEM},
                "mode": {"enum": list(SEQUENCE_MODES)},
            },
            ["expected"],
            "options expected (tool names or {name, arguments}) and mode",
        ),
        None,
    ),
    "trajectory.step_count": (
        _options({"max": _COUNT, "min": _COUNT}, ["max"], "options max and min"),
        _ordered,
    ),
    "trajectory.final_answer_follows_tools": (
        _options({}, [], "no options"),
        None,
    ),
}
for _name, (_schema, _check) in _SCHEMAS.items():
    config_schema(_schema, check=_check)(TRAJECTORY_FUNCTIONS[_name])


@hookimpl
def rubricflow_check_functions() -> Mapping[str, Callable[..., Any]]:
    return TRAJECTORY_FUNCTIONS
