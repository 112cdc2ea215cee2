"""The `rubric` package 2.x: a `generate_fn` returns a validated Pydantic model (not text)
for each of its three graders, and rubricflow reads it as the judge's answer."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel

from rubricflow import evaluate, load_document
from rubricflow.llm.judges import apply_strategy


# the package's 2.x output models, as it defines them (rubric.autograders.schemas)
class PerCriterionOutput(BaseModel):
    criterion_status: Literal["MET", "UNMET"]
    explanation: str


class CriterionEvaluation(BaseModel):
    criterion_number: int
    criterion_status: Literal["MET", "UNMET"]
    explanation: str


class OneShotOutput(BaseModel):
    criteria_evaluations: list[CriterionEvaluation]


class RubricAsJudgeOutput(BaseModel):
    overall_score: float
    explanation: str


PACKAGE_RUBRIC = [
    {"weight": 3, "requirement": "Names the capital of France"},
    {"weight": 1, "requirement": "Cites a source"},
    {"weight": -2, "requirement": "Contains a factual error"},
]
ANSWER = {"id": "a1", "content": "Paris is the capital of France."}


def _rubric():  # type: ignore[no-untyped-def]
    (rubric,) = load_document(PACKAGE_RUBRIC, format="rubric-pkg").rubrics
    return rubric


async def test_a_per_criterion_generate_fn_returning_models_is_a_judge() -> None:
    async def generate_fn(
        system_prompt: str, user_prompt: str, **kwargs: object
    ) -> PerCriterionOutput:
        return PerCriterionOutput(criterion_status="MET", explanation="read the answer")

    evaluation = await evaluate(_rubric(), ANSWER, options={"llm": generate_fn, "llm_cache": None})
    assert [r.verdict for r in evaluation.criteria] == ["MET", "MET", "MET"]
    assert {r.reasoning for r in evaluation.criteria} == {"read the answer"}
    # the package's formula: (3 + 1 - 2) / 4, the penalty incurred
    assert evaluation.score == pytest.approx(0.5)


async def test_a_one_shot_generate_fn_numbers_the_criteria_from_one() -> None:
    async def generate_fn(system_prompt: str, user_prompt: str, **kwargs: object) -> OneShotOutput:
        return OneShotOutput(
            criteria_evaluations=[
                CriterionEvaluation(criterion_number=1, criterion_status="MET", explanation="yes"),
                CriterionEvaluation(criterion_number=2, criterion_status="UNMET", explanation="no"),
                CriterionEvaluation(
                    criterion_number=3, criterion_status="UNMET", explanation="none found"
                ),
            ]
        )

    rubric = apply_strategy(_rubric(), "oneshot")
    evaluation = await evaluate(rubric, ANSWER, options={"llm": generate_fn, "llm_cache": None})
    assert [(r.verdict, r.reasoning) for r in evaluation.criteria] == [
        ("MET", "yes"),
        ("UNMET", "no"),
        ("UNMET", "none found"),
    ]
    # the package's formula: (3*1 + 1*0 - 2*0) / 4
    assert evaluation.score == pytest.approx(0.75)


async def test_a_rubric_as_judge_generate_fn_gives_the_holistic_score() -> None:
    def generate_fn(system_prompt: str, user_prompt: str) -> RubricAsJudgeOutput:
        return RubricAsJudgeOutput(overall_score=85.0, explanation="mostly there")

    rubric = apply_strategy(_rubric(), "rubric-as-judge")
    evaluation = await evaluate(rubric, ANSWER, options={"llm": generate_fn, "llm_cache": None})
    assert evaluation.score == pytest.approx(0.85)
    assert evaluation.criteria[0].reasoning == "mostly there"


async def test_a_plain_dict_answer_works_and_another_object_is_named() -> None:
    def as_dict(system_prompt: str, user_prompt: str) -> dict[str, str]:
        return {"criterion_status": "UNMET", "explanation": "a dict"}

    evaluation = await evaluate(_rubric(), ANSWER, options={"llm": as_dict, "llm_cache": None})
    assert {r.verdict for r in evaluation.criteria} == {"UNMET"}

    def as_number(system_prompt: str, user_prompt: str) -> int:
        return 7

    evaluation = await evaluate(_rubric(), ANSWER, options={"llm": as_number, "llm_cache": None})
    result = evaluation.criteria[0]
    assert result.status == "unable_to_evaluate"
    assert "returned int" in (result.notes or "") and "PerCriterionOutput" in (result.notes or "")
