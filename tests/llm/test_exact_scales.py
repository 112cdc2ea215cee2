"""Judge scores on a min..max scale are normalised and compared exactly (issue 15, exact
scales): the number the judge wrote reaches the verdict as a rational number, and floats
appear only in what is printed or stored. Every judge here answers over real HTTP from
the scripted OpenAI-compatible server."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from fractions import Fraction
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rubricflow import evaluate, load_document
from rubricflow.results import Evaluation

from .fixtures import clean_llm_env, rubric, server, session_for
from .scripted import ScriptedServer, openai_reply

__all__ = ["clean_llm_env", "server"]

ONE_TO_FOUR_SPEC = {
    "model_type": "rubric_judge",
    "rubric": "Score 1 if the answer is useless, 4 if it is perfect.",
    "model": "openai/gpt-4o",
    "min_score": 1,
    "max_score": 4,
}


def json_answer(written: str) -> str:
    """A JSON answer whose score is the number exactly as written."""
    return '{"reasoning": "r", "score": ' + written + "}"


def ranged(low: float, high: float, **fields: Any) -> Any:
    """A rubric of one `llm_score` criterion on low..high, reported on the same scale."""
    criterion = {
        "id": "quality",
        "scoring": {"method": "llm_score", "config": {"min_score": low, "max_score": high}},
    }
    return rubric(criterion, scale={"min": low, "max": high}, **fields)


async def judged(server: ScriptedServer, subject: Any, answer: str, **options: Any) -> Evaluation:
    server.responder = lambda request: openai_reply(answer)
    async with session_for(server) as session:
        return await evaluate(subject, "The answer.", options={"llm": session}, **options)


async def test_a_judge_score_of_8_7_on_0_to_10_reaches_a_0_87_bar(
    server: ScriptedServer,
) -> None:
    evaluation = await judged(
        server, ranged(0, 10, pass_threshold=0.87), '{"reasoning": "good", "score": 8.7}'
    )
    [result] = evaluation.criteria
    assert (result.judge_score, result.score, result.passed) == (8.7, 0.87, True)
    assert (evaluation.verdict, evaluation.score, evaluation.scaled_score) == ("pass", 0.87, 8.7)


async def test_a_criterion_min_score_of_0_87_is_met_by_8_7_out_of_10(
    server: ScriptedServer,
) -> None:
    subject = rubric(
        {
            "id": "quality",
            "required": True,
            "min_score": 0.87,
            "scoring": {"method": "llm_score", "config": {"min_score": 0, "max_score": 10}},
        },
        pass_threshold=0.5,
    )
    evaluation = await judged(server, subject, '{"reasoning": "good", "score": 8.7}')
    assert evaluation.criteria[0].passed is True
    assert (evaluation.verdict, evaluation.gating_failures) == ("pass", ())


async def test_rubric_judge_spec_tags_3_4_on_1_to_4_reach_a_0_8_bar(
    server: ScriptedServer,
) -> None:
    spec = load_document(ONE_TO_FOUR_SPEC, source="judge.json").rubrics[0]
    evaluation = await judged(
        server, spec, "<rationale>nearly there</rationale><score>3.4</score>", threshold=0.8
    )
    [result] = evaluation.criteria
    assert (result.judge_score, result.score, result.passed) == (3.4, 0.8, True)
    assert (evaluation.verdict, evaluation.score, evaluation.threshold) == ("pass", 0.8, 0.8)
    assert evaluation.scaled_score == 3.4


async def test_sample_means_are_exact(server: ScriptedServer) -> None:
    """Three samples of 8.6, 8.7 and 8.8 on 0..10 have the mean 8.7: a 0.87 bar is met."""
    answers = iter(["8.6", "8.7", "8.8"])
    server.responder = lambda request: openai_reply(json_answer(next(answers)))
    async with session_for(server) as session:
        evaluation = await evaluate(
            ranged(0, 10, pass_threshold=0.87), "x", options={"llm": session, "samples": 3}
        )
    [result] = evaluation.criteria
    assert (result.judge_score, result.score, evaluation.verdict) == (8.7, 0.87, "pass")


# --- random scales ---------------------------------------------------------------------


def thousandths(value: int) -> str:
    """`value` / 1000 written as a decimal with three places, as a judge would write it."""
    return str(Decimal(value).scaleb(-3))


@st.composite
def scale_and_score(draw: st.DrawFn) -> tuple[int, int, int]:
    """(low, high, score) in thousandths: low < high, low <= score <= high."""
    low = draw(st.integers(-100_000, 99_999))
    high = draw(st.integers(low + 1, 100_000))
    score = draw(st.integers(low, high))
    return low, high, score


def check_exact(evaluation: Evaluation, low: int, high: int, score: int, bar: Fraction) -> None:
    exact = Fraction(score - low, high - low)
    [result] = evaluation.criteria
    assert result.score == float(exact)
    assert result.judge_score == float(Fraction(score, 1000))
    if exact > 0:  # a 0 on a MET/UNMET criterion is UNMET, whatever the bar
        assert result.passed is True, (result.score, float(bar))
    assert evaluation.verdict == "pass"
    assert evaluation.score == float(exact)
    assert evaluation.scaled_score == float(Fraction(score, 1000))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(scale_and_score(), st.sampled_from(["json", "tags"]))
def test_a_score_on_any_scale_meets_a_bar_equal_to_its_exact_normalised_value(
    server: ScriptedServer, drawn: tuple[int, int, int], answer_format: str
) -> None:
    low, high, score = drawn
    exact = Fraction(score - low, high - low)
    written = thousandths(score)
    low_f, high_f = float(Fraction(low, 1000)), float(Fraction(high, 1000))
    if answer_format == "json":
        subject = ranged(low_f, high_f)
        answer = json_answer(written)
    else:
        spec = {**ONE_TO_FOUR_SPEC, "min_score": low_f, "max_score": high_f}
        subject = load_document(spec, source="judge.json").rubrics[0]
        answer = f"<rationale>r</rationale><score>{written}</score>"
    evaluation = asyncio.run(judged(server, subject, answer, threshold=exact))
    check_exact(evaluation, low, high, score, exact)
    assert evaluation.threshold == float(exact)
    if exact < 1:  # no tolerance: the smallest step above the exact value fails
        above = asyncio.run(judged(server, subject, answer, threshold=exact + Fraction(1, 10**12)))
        assert above.verdict == "fail" and above.criteria[0].passed is False


async def test_feedback_writes_the_judge_s_number_on_its_own_scale(server: ScriptedServer) -> None:
    """3.4 on a 1..4 scale reads "3.4 on 1..4", not "3.4/10" (issue 31, feedback text)."""
    one_to_four = await judged(server, ranged(1, 4), json_answer("3.4"))
    assert "3.4 on 1..4 (score: 0.80)" in one_to_four.feedback
    assert "/10" not in one_to_four.feedback
    out_of_ten = await judged(server, ranged(0, 10), json_answer("7"))
    assert "7/10 (score: 0.70)" in out_of_ten.feedback
    out_of_five = await judged(server, ranged(0, 5), json_answer("2"))
    assert "2/5 (score: 0.40)" in out_of_five.feedback
