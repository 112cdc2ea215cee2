"""A judge function's structured answer, as the judge's answer contract reads it.

The `rubric` package 2.x has its `generate_fn` return a validated Pydantic model instead
of text: `PerCriterionOutput` (`criterion_status`, `explanation`), `OneShotOutput`
(`criteria_evaluations`, each with a 1-based `criterion_number`) or `RubricAsJudgeOutput`
(`overall_score` from 0 to 100, `explanation`). A function written for it works as a
rubricflow judge unchanged: its model (or a plain dict) is read here into the contract's
JSON (`rubricflow.llm.contracts`), which is then validated like any other answer. An
object of another shape is sent on as its JSON, and the validation names what is wrong.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["answer_text"]


def answer_text(answer: Any, schema: Mapping[str, Any] | None) -> str | None:
    """The text of a judge function's answer: text as it is; a Pydantic model or a mapping
    as the contract's JSON (`schema` is the request's, which names the criteria of a
    one-shot question and the scale of a score); None for anything else."""
    if isinstance(answer, str):
        return answer
    dump = getattr(answer, "model_dump", None)
    if callable(dump):
        answer = dump(mode="json")
    if not isinstance(answer, Mapping):
        return None
    return json.dumps(_contract(dict(answer), schema or {}), ensure_ascii=False)


def _contract(answer: dict[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    reasoning = answer.get("explanation", answer.get("reasoning", ""))
    if "criterion_status" in answer:
        return {"reasoning": reasoning, "verdict": answer["criterion_status"]}
    if "criteria_evaluations" in answer:
        return {"criteria": _oneshot(answer["criteria_evaluations"], schema)}
    if "overall_score" in answer:
        return {"reasoning": reasoning, "score": _on_scale(answer["overall_score"], schema)}
    return answer


def _oneshot(evaluations: Any, schema: Mapping[str, Any]) -> Any:
    """`criteria_evaluations` as the one-shot contract's `criteria`: each criterion
    number is the criterion's place among the ids the question asked about."""
    if not isinstance(evaluations, list):
        return evaluations
    ids = _criterion_ids(schema)
    criteria: list[Any] = []
    for item in evaluations:
        if not isinstance(item, Mapping):
            criteria.append(item)
            continue
        number = item.get("criterion_number")
        place = number if isinstance(number, int) and 1 <= number <= len(ids) else None
        criteria.append(
            {
                "id": ids[place - 1] if place is not None else str(number),
                "reasoning": item.get("explanation", ""),
                "verdict": item.get("criterion_status"),
            }
        )
    return criteria


def _criterion_ids(schema: Mapping[str, Any]) -> list[str]:
    try:
        identifier = schema["properties"]["criteria"]["items"]["properties"]["id"]
        return [str(each) for each in identifier.get("enum") or ()]
    except (KeyError, TypeError, AttributeError):
        return []


def _on_scale(score: Any, schema: Mapping[str, Any]) -> Any:
    """`overall_score` (0 to 100) on the scale the question asked for."""
    try:
        bounds = schema["properties"]["score"]
        low, high = float(bounds["minimum"]), float(bounds["maximum"])
        value = float(score)
    except (KeyError, TypeError, ValueError):
        return score
    if (low, high) == (0.0, 100.0):
        return value
    scaled = low + (high - low) * value / 100
    return round(scaled) if bounds.get("type") == "integer" else scaled
