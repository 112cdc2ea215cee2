"""Trajectory assertions of promptfoo and AgentV as rubricflow criteria.

promptfoo (and AgentV, which reads the same names): `trajectory:tool-used`,
`not-trajectory:tool-used`, `trajectory:tool-sequence`, `trajectory:tool-args-match`,
`trajectory:step-count`, `trajectory:goal-success`; AgentV's older `tool-trajectory`
(`mode: any_order` with `minimums`, `in_order`, `exact` with `expected`). Each becomes
one or more criteria scored by the built-in trajectory checks (`trajectory.*`), or an LLM
criterion for goal success. What cannot be mapped (a tool name pattern, a step type other
than tool calls) is a problem naming the field; what is dropped (latency bounds) a warning.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rubricflow.formats.base import SourceReader, shown, slugify

__all__ = ["is_trajectory_assert", "trajectory_criteria"]

_KINDS = (
    "trajectory:tool-used",
    "not-trajectory:tool-used",
    "trajectory:tool-sequence",
    "trajectory:tool-args-match",
    "trajectory:step-count",
    "trajectory:goal-success",
    "tool-trajectory",
)
_SEQUENCE_MODES = {"in_order": "in_order", "exact": "strict", "any_order": "superset"}
_HUGE = 1_000_000  # "no upper bound" for a step count


def is_trajectory_assert(kind: Any) -> bool:
    """Whether an assertion `type` is a trajectory assertion this module maps."""
    return isinstance(kind, str) and (
        kind in _KINDS or kind.startswith(("trajectory:", "not-trajectory:"))
    )


def _check(cid: str, description: str, function: str, config: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": cid,
        "description": description,
        "required": False,
        "scoring": {"method": "deterministic", "function": function, "config": config},
    }


def _names(reader: SourceReader, value: Any, where: str) -> list[str] | None:
    if isinstance(value, str) and value:
        return [value]
    if isinstance(value, list) and value and all(isinstance(v, str) and v for v in value):
        return list(value)
    reader.problem(where, f"expected a tool name or a list of tool names, got {shown(value)}")
    return None


def _tool_used(
    reader: SourceReader, value: Any, where: str, cid: str, negated: bool
) -> list[dict[str, Any]]:
    if isinstance(value, Mapping):
        if "pattern" in value:
            reader.problem(
                f"{where}.pattern",
                "a tool name pattern is not supported; name the tool (`name`), or list the names",
            )
            return []
        name = value.get("name")
        if not isinstance(name, str) or not name:
            reader.problem(f"{where}.name", "the tool's name is required")
            return []
        if negated:
            return [
                _check(cid, f"{name} is not called", "trajectory.tool_not_used", {"names": [name]})
            ]
        config: dict[str, Any] = {"name": name, "min": value.get("min", 1)}
        if value.get("max") is not None:
            config["max"] = value["max"]
        return [_check(cid, f"{name} is called", "trajectory.tool_used", config)]
    names = _names(reader, value, where)
    if names is None:
        return []
    if negated:
        shown_names = ", ".join(names)
        return [
            _check(
                cid,
                f"none of {shown_names} is called",
                "trajectory.tool_not_used",
                {"names": names},
            )
        ]
    if len(names) == 1:
        return [_check(cid, f"{names[0]} is called", "trajectory.tool_used", {"name": names[0]})]
    return [
        _check(
            cid,
            f"every one of {', '.join(names)} is called",
            "trajectory.tool_sequence",
            {"expected": names, "mode": "superset"},
        )
    ]


def _steps(reader: SourceReader, steps: Any, where: str) -> list[Any] | None:
    if not isinstance(steps, list) or not steps:
        reader.problem(where, f"expected a list of tools, got {shown(steps)}")
        return None
    expected: list[Any] = []
    for index, step in enumerate(steps):
        here = f"{where}[{index}]"
        if isinstance(step, str) and step:
            expected.append(step)
            continue
        item = reader.mapping(step, here)
        if item is None:
            continue
        name = item.get("tool", item.get("name"))
        if not isinstance(name, str) or not name:
            reader.problem(f"{here}.tool", "each step names its tool")
            continue
        arguments = item.get("args", item.get("arguments"))
        if "max_duration_ms" in item:
            reader.warn(f"{here}.max_duration_ms", "latency bounds are not checked; dropped")
        if isinstance(arguments, Mapping):
            expected.append({"name": name, "arguments": dict(arguments)})
        else:  # `args: any` or none: the name alone
            expected.append(name)
    return expected


def _sequence(reader: SourceReader, value: Any, where: str, cid: str) -> list[dict[str, Any]]:
    item = reader.mapping(value, where)
    if item is None:
        return []
    mode = item.get("mode", "exact")
    if mode not in ("in_order", "exact"):
        reader.problem(f"{where}.mode", f"mode is in_order or exact, got {shown(mode)}")
        return []
    expected = _steps(reader, item.get("steps"), f"{where}.steps")
    if expected is None:
        return []
    return [
        _check(
            cid,
            f"the tools are called {'in this order' if mode == 'in_order' else 'exactly so'}",
            "trajectory.tool_sequence",
            {"expected": expected, "mode": _SEQUENCE_MODES[mode]},
        )
    ]


def _args_match(reader: SourceReader, value: Any, where: str, cid: str) -> list[dict[str, Any]]:
    item = reader.mapping(value, where)
    if item is None:
        return []
    name = item.get("name", item.get("tool"))
    arguments = item.get("args", item.get("arguments"))
    if not isinstance(name, str) or not name:
        reader.problem(f"{where}.name", "the tool's name is required")
        return []
    if not isinstance(arguments, Mapping):
        reader.problem(
            f"{where}.args", f"expected the arguments (an object), got {shown(arguments)}"
        )
        return []
    mode = item.get("mode", "partial")
    if mode == "partial":
        config: dict[str, Any] = {"name": name, "partial": dict(arguments)}
    elif mode == "exact":
        if item.get("defaults") or item.get("ignore"):
            reader.problem(
                f"{where}.ignore",
                "exact argument matching with `defaults` or `ignore` is not supported; use "
                "mode: partial with the arguments that matter",
            )
            return []
        config = {"name": name, "schema": {"const": dict(arguments)}}
    else:
        reader.problem(f"{where}.mode", f"mode is partial or exact, got {shown(mode)}")
        return []
    return [_check(cid, f"{name} is called with these arguments", "trajectory.tool_args", config)]


def _step_count(reader: SourceReader, value: Any, where: str, cid: str) -> list[dict[str, Any]]:
    item = reader.mapping(value, where)
    if item is None:
        return []
    kind = item.get("type", "tool")
    if kind != "tool":
        reader.problem(
            f"{where}.type",
            f"only tool-call steps are counted (type: tool), got {shown(kind)}",
        )
        return []
    low, high = item.get("min", 0), item.get("max", _HUGE)
    return [
        _check(
            cid,
            f"between {low} and {high if high != _HUGE else 'any number of'} tool calls",
            "trajectory.step_count",
            {"min": low, "max": high},
        )
    ]


def _goal(reader: SourceReader, value: Any, where: str, cid: str) -> list[dict[str, Any]]:
    goal = value.get("goal") if isinstance(value, Mapping) else value
    if not isinstance(goal, str) or not goal.strip():
        reader.problem(f"{where}.goal", "the goal is required (text)")
        return []
    return [
        {
            "id": cid,
            "description": "Judging the whole run (its tool calls and results and the final "
            f"answer), the agent achieves this goal: {goal.strip()}",
            "required": False,
            "scoring": {"method": "llm"},
        }
    ]


def _legacy(
    reader: SourceReader, entry: Mapping[str, Any], where: str, cid: str
) -> list[dict[str, Any]]:
    """AgentV's `type: tool-trajectory` grader."""
    mode = entry.get("mode", "any_order")
    if mode == "any_order":
        minimums = reader.mapping(entry.get("minimums"), f"{where}.minimums")
        if minimums is None:
            return []
        return [
            _check(
                f"{cid}.{slugify(str(tool), 'tool')}",
                f"{tool} is called at least {count} times",
                "trajectory.tool_used",
                {"name": str(tool), "min": count},
            )
            for tool, count in minimums.items()
        ]
    if mode not in ("in_order", "exact"):
        reader.problem(f"{where}.mode", f"mode is any_order, in_order or exact, got {shown(mode)}")
        return []
    return _sequence(reader, {"mode": mode, "steps": entry.get("expected")}, where, cid)


def trajectory_criteria(
    reader: SourceReader, entry: Mapping[str, Any], where: str, number: int
) -> list[dict[str, Any]]:
    """The criteria one trajectory assertion becomes (its problems go to `reader`)."""
    kind = str(entry.get("type"))
    name = entry.get("name")
    cid = slugify(name, "") if isinstance(name, str) else ""
    cid = cid or f"{slugify(kind.split(':')[-1], 'trajectory')}-{number}"
    value = entry.get("value")
    here = f"{where}.value"
    if kind == "tool-trajectory":
        return _legacy(reader, entry, where, cid)
    if kind in ("trajectory:tool-used", "not-trajectory:tool-used"):
        return _tool_used(reader, value, here, cid, kind.startswith("not-"))
    if kind.startswith("not-"):
        reader.problem(
            f"{where}.type",
            f"{kind}: only tool-used can be negated; check the opposite with another assertion",
        )
        return []
    handlers = {
        "trajectory:tool-sequence": _sequence,
        "trajectory:tool-args-match": _args_match,
        "trajectory:step-count": _step_count,
        "trajectory:goal-success": _goal,
    }
    handler = handlers.get(kind)
    if handler is None:
        reader.problem(
            f"{where}.type",
            f"unknown trajectory assertion {kind}; rubricflow reads "
            + ", ".join(k for k in _KINDS if k != "tool-trajectory"),
        )
        return []
    return handler(reader, value, here, cid)
