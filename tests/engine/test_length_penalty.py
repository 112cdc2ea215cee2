"""`Rubric.length_penalty`: the `rubric` package's LengthPenalty, computed as the package
computes it and taken off the score."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rubricflow import evaluate
from rubricflow.engine.length_penalty import counted_words, penalty_for
from rubricflow.errors import RubricValidationError
from rubricflow.formats.loader import load_document
from rubricflow.model import LengthPenalty, parse_rubric


def _rubric(**penalty: object):  # type: ignore[no-untyped-def]
    return parse_rubric(
        {
            "id": "short",
            "pass_threshold": 0.9,
            "length_penalty": {"free_budget": 10, "max_cap": 20, **penalty},
            "criteria": [
                {
                    "id": "filled",
                    "description": "not empty",
                    "scoring": {"method": "deterministic", "function": "non_empty"},
                }
            ],
        }
    )


def _words(count: int) -> str:
    return " ".join(["word"] * count)


@pytest.mark.parametrize(
    ("words", "score", "verdict"),
    [
        (10, 1.0, "pass"),  # at the budget: nothing taken
        (15, 1 - 0.5 * 0.5**1.6, "fail"),  # half way: 0.5 * 0.5 ** 1.6 = 0.165
        (20, 0.5, "fail"),  # at the cap: the whole 0.5
        (500, 0.5, "fail"),
    ],
)
async def test_the_penalty_follows_the_package_curve(
    words: int, score: float, verdict: str
) -> None:
    evaluation = await evaluate(_rubric(), _words(words))
    assert evaluation.score == pytest.approx(score)
    assert evaluation.raw_score == 1.0  # the raw score is left alone, as the package leaves it
    assert evaluation.verdict == verdict
    assert evaluation.metadata["length_penalty"]["words"] == words


async def test_the_score_never_goes_below_zero() -> None:
    evaluation = await evaluate(_rubric(penalty_at_cap=5.0), _words(40))
    assert evaluation.score == 0.0


def test_thinking_and_output_are_counted_as_the_package_splits_them() -> None:
    text = "<thinking>one two three</thinking><output>four five</output>"
    assert counted_words(text, LengthPenalty(penalty_type="all")) == 5
    assert counted_words(text, LengthPenalty(penalty_type="OUTPUT_ONLY")) == 2
    assert counted_words(text, LengthPenalty(penalty_type="thinking_only")) == 3
    # thinking without output markers: the rest is the output
    assert (
        counted_words("<thinking>a b</thinking> c d e", LengthPenalty(penalty_type="output_only"))
        == 3
    )
    # a {thinking, output} mapping, as the package takes it
    assert counted_words({"thinking": "a", "output": "b c"}, LengthPenalty()) == 3


@given(
    budget=st.integers(0, 1000),
    span=st.integers(1, 1000),
    cap_penalty=st.floats(0, 100, allow_nan=False),
    exponent=st.floats(0.1, 5, allow_nan=False),
    count=st.integers(0, 3000),
)
def test_the_penalty_is_monotone_and_bounded(
    budget: int, span: int, cap_penalty: float, exponent: float, count: int
) -> None:
    config = LengthPenalty(
        free_budget=budget, max_cap=budget + span, penalty_at_cap=cap_penalty, exponent=exponent
    )
    taken = penalty_for(count, config)
    assert 0.0 <= taken <= cap_penalty
    assert penalty_for(count + 1, config) >= taken
    if count <= budget:
        assert taken == 0.0
    if count >= budget + span:
        assert taken == cap_penalty


def test_a_cap_not_above_the_budget_is_refused_naming_the_field() -> None:
    document = {
        "id": "r",
        "length_penalty": {"free_budget": 100, "max_cap": 100},
        "criteria": [
            {
                "id": "c",
                "description": "d",
                "scoring": {"method": "deterministic", "function": "non_empty"},
            }
        ],
    }
    with pytest.raises(RubricValidationError) as raised:
        load_document(document, format="native")
    assert "length_penalty.max_cap" in str(raised.value)
    assert "above free_budget" in str(raised.value)
