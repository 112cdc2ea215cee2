"""The answer contracts of rubric generation and group ranking: the JSON Schemas sent to
the judge's structured output, and the readers that validate an answer into a native
value (a `Rubric`, a ranking). A reader raises `AnswerError` with a message fit to send
back to the judge, so the session re-asks once before giving up."""

from __future__ import annotations

import re
from typing import Any

from rubricflow.errors import RubricValidationError
from rubricflow.llm.answers import AnswerError, extract_json, validate_answer
from rubricflow.llm.session import Reading
from rubricflow.model import Rubric, parse_rubric

__all__ = [
    "DRAFT_SCHEMA",
    "draft_document",
    "ranking_schema",
    "read_draft",
    "read_ranking",
]


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


_CRITERION = _object(
    {
        "id": {"type": "string", "description": "snake_case identifier, unique in the rubric"},
        "name": {"type": "string", "description": "a short distinct name"},
        "description": {
            "type": "string",
            "description": "one checkable requirement, judged MET or UNMET from the output alone",
        },
        "weight": {
            "type": "number",
            "description": "importance; negative for a pitfall the output must avoid",
        },
        "required": {"type": "boolean", "description": "true: failing it fails the output"},
    }
)

#: a draft rubric: binary (MET/UNMET) criteria, RaR style, weights that may be negative
DRAFT_SCHEMA: dict[str, Any] = _object(
    {
        "id": {"type": "string", "description": "snake_case identifier of the rubric"},
        "name": {"type": "string"},
        "description": {"type": "string", "description": "what the rubric judges"},
        "pass_threshold": {"type": "number", "minimum": 0, "maximum": 1},
        "criteria": {"type": "array", "items": _CRITERION, "minItems": 1},
    }
)

_ID_CHARS = re.compile(r"[^a-z0-9_]+")


def _identifier(text: str, fallback: str) -> str:
    cleaned = _ID_CHARS.sub("_", text.strip().lower()).strip("_")
    return cleaned[:64] or fallback


def draft_document(value: dict[str, Any], rubric_id: str | None = None) -> dict[str, Any]:
    """The native document of a schema-valid draft: ids made safe, every criterion judged
    MET/UNMET by the LLM (`llm_verdict`)."""
    criteria = []
    for index, item in enumerate(value["criteria"]):
        criteria.append(
            {
                "id": _identifier(str(item["id"]), f"c{index + 1}"),
                "name": item["name"],
                "description": item["description"],
                "weight": item["weight"],
                "required": item["required"],
                "scoring": {"method": "llm_verdict"},
            }
        )
    return {
        "id": rubric_id or _identifier(str(value["id"]), "generated"),
        "name": value["name"],
        "description": value["description"],
        "pass_threshold": value["pass_threshold"],
        "criteria": criteria,
        "metadata": {"generated_by": "rubricflow generate"},
    }


def read_draft(text: str, rubric_id: str | None = None) -> Reading:
    """A judge's draft as a validated `Rubric` (raises `AnswerError` naming each problem,
    the model's own among them, so the judge can fix them)."""
    value = extract_json(text)
    validate_answer(value, DRAFT_SCHEMA)
    try:
        rubric: Rubric = parse_rubric(draft_document(value, rubric_id), source="generated draft")
    except RubricValidationError as error:
        shown = "; ".join(str(problem) for problem in error.problems[:5])
        raise AnswerError(f"the draft is not a valid rubric: {shown}") from None
    return Reading(rubric)


def ranking_schema(size: int) -> dict[str, Any]:
    """One entry per completion: its index, its rank (1 is best; equal ranks are ties)
    and the reasoning that is its evidence."""
    item = _object(
        {
            "index": {"type": "integer", "minimum": 0, "maximum": size - 1},
            "reasoning": {
                "type": "string",
                "description": "Why this rank, citing the completion. Write it first.",
            },
            "rank": {"type": "integer", "minimum": 1, "maximum": size},
        }
    )
    return _object(
        {"ranking": {"type": "array", "items": item, "minItems": size, "maxItems": size}}
    )


def read_ranking(text: str, size: int) -> Reading:
    """A ranking that names each completion exactly once, as `{index: (rank, reasoning)}`."""
    value = extract_json(text)
    validate_answer(value, ranking_schema(size))
    seen: dict[int, tuple[int, str]] = {}
    for entry in value["ranking"]:
        index = entry["index"]
        if index in seen:
            raise AnswerError(
                f"completion {index} is ranked twice; rank each of the {size} completions once"
            )
        seen[index] = (entry["rank"], entry["reasoning"])
    missing = [i for i in range(size) if i not in seen]
    if missing:
        raise AnswerError(f"completions {missing} are not ranked; rank every completion")
    return Reading(seen)
