"""The `rubric` package's rubric-as-judge keeps the package's figures: the judge's 0..100
answer L gives the score clamp(L/100) and the raw score (L/100)·P with positive criteria,
and -N·(1 - L/100) on an all-penalty rubric (the package's 1.3.2 code)."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from llm.fixtures import clean_llm_env, server, session_for
from llm.scripted import ScriptedServer, openai_reply

from rubricflow import evaluate, load_document
from rubricflow.llm.judges import rubric_as_judge
from rubricflow.model import Rubric

__all__ = ["clean_llm_env", "server"]


def pkg_rubric(weights: list[float]) -> Rubric:
    """A rubric as the package writes it: a list of {weight, requirement}."""
    loaded = load_document(
        [{"weight": w, "requirement": f"requirement {i}"} for i, w in enumerate(weights)]
    )
    assert loaded.format == "rubric-pkg"
    (rubric,) = loaded.rubrics
    return rubric


async def holistic(server: ScriptedServer, rubric: Rubric, answer: int) -> tuple[float, float]:
    server.queue(openai_reply({"reasoning": "judged", "score": answer}))
    async with session_for(server) as session:
        evaluation = await evaluate(
            rubric_as_judge(rubric), "The answer.", options={"llm": session}
        )
    assert evaluation.criteria[0].judge_score == answer
    return evaluation.score, evaluation.raw_score


async def test_all_penalty_rubric_raw_score_is_the_packages(server: ScriptedServer) -> None:
    score, raw = await holistic(server, pkg_rubric([-1, -1, -1]), 70)
    assert score == 0.7  # 1 - (1 - 70/100)
    assert raw == -0.9  # -N (1 - L/100) = -3 * 0.3, not +0.7


async def test_a_perfect_all_penalty_answer_incurs_nothing(server: ScriptedServer) -> None:
    assert await holistic(server, pkg_rubric([-2, -0.5]), 100) == (1.0, 0.0)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    weights=st.lists(
        st.sampled_from([-15, -3, -2, -1, -0.5, -0.25, 0.5, 1, 2, 8, 10]), min_size=1, max_size=5
    ),
    answer=st.integers(0, 100),
)
async def test_score_and_raw_score_are_the_packages_for_any_weights(
    server: ScriptedServer, weights: list[float], answer: int
) -> None:
    score, raw = await holistic(server, pkg_rubric(weights), answer)

    share = Fraction(answer, 100)
    positive = sum(Fraction(repr(w)) for w in weights if w > 0)
    penalty = sum(-Fraction(repr(w)) for w in weights if w < 0)
    expected_raw = share * positive if positive else -penalty * (1 - share)
    assert score == float(share)
    assert raw == float(expected_raw)
