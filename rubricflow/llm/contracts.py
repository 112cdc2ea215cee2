"""The judge's answer contract: JSON, reasoning first.

- verdict: `{"reasoning": str, "verdict": "MET" | "UNMET"}`
- one-shot: `{"criteria": [{"id": str, "reasoning": str, "verdict": "MET" | "UNMET"}]}`
- level: `{"reasoning": str, "level_id": str}`
- score: `{"reasoning": str, "score": number}`

Every schema is strict (all properties required, no others), which OpenAI's strict
structured outputs, Anthropic's tool input and Ollama's `format` all accept.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = [
    "FEEDBACK_SCHEMA",
    "VERDICT_SCHEMA",
    "level_schema",
    "oneshot_schema",
    "score_schema",
]

_REASONING = {
    "type": "string",
    "description": "Your reasoning, citing the content. Write it first.",
}


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


VERDICT_SCHEMA: dict[str, Any] = _object(
    {"reasoning": _REASONING, "verdict": {"type": "string", "enum": ["MET", "UNMET"]}}
)

FEEDBACK_SCHEMA: dict[str, Any] = _object(
    {"summary": {"type": "string", "description": "3 to 5 sentences of actionable feedback."}}
)


def oneshot_schema(criterion_ids: Sequence[str] | None = None) -> dict[str, Any]:
    """The one-shot contract; with `criterion_ids` the id is limited to them (sent to the
    provider), without it any text (used to validate, so unknown ids are reported)."""
    identifier: dict[str, Any] = {"type": "string"}
    if criterion_ids:
        identifier["enum"] = list(criterion_ids)
    item = _object(
        {
            "id": identifier,
            "reasoning": _REASONING,
            "verdict": {"type": "string", "enum": ["MET", "UNMET"]},
        }
    )
    return _object({"criteria": {"type": "array", "items": item}})


def level_schema(level_ids: Sequence[str]) -> dict[str, Any]:
    return _object(
        {"reasoning": _REASONING, "level_id": {"type": "string", "enum": list(level_ids)}}
    )


def score_schema(low: float, high: float, *, integer: bool = False) -> dict[str, Any]:
    number: dict[str, Any] = {"type": "integer" if integer else "number"}
    number["minimum"] = int(low) if integer else low
    number["maximum"] = int(high) if integer else high
    return _object({"reasoning": _REASONING, "score": number})
