"""Scores reach the evaluation's score, scaled_score and verdict exactly (issue 15, exact
scales): a check's exact value, or a number on its own scale, is never rounded to a float
before the bar; floats appear only in the stored and printed figures."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from fractions import Fraction
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from rubricflow import hookimpl, parse_rubric
from rubricflow.engine import evaluate
from rubricflow.model import Scale
from rubricflow.plugins import PluginRegistry, create_plugin_manager
from rubricflow.results import Target
from rubricflow.scoring import CheckResult

from .conftest import crit


def rubric(criteria: list[dict[str, Any]], **fields: Any) -> Any:
    return parse_rubric({"id": "r", "criteria": criteria, **fields})


def exact_value(target: Target, value: str, kind: str = "fraction", scale: Any = None) -> Any:
    """A check returning `value` (written as text in the rubric) as a Fraction or a
    Decimal, on `scale` (low, high) when one is given."""
    number = Fraction(value) if kind == "fraction" else Decimal(value)
    return CheckResult(number, scale=tuple(scale)) if scale is not None else number


class ExactChecks:
    @hookimpl
    def rubricflow_check_functions(self) -> dict[str, Any]:
        return {"exact_value": exact_value}


PLUGINS = create_plugin_manager(plugins=[ExactChecks()], load_entry_points=False)


def check(cid: str, value: Any, **config: Any) -> dict[str, Any]:
    return {
        "id": cid,
        "scoring": {
            "method": "deterministic",
            "function": "exact_value",
            "config": {"value": str(value), **config},
        },
    }


def test_0_29_on_a_0_to_100_scale_is_29(scripted: PluginRegistry) -> None:
    subject = rubric([crit("a", 0.29)], scale={"min": 0, "max": 100})
    evaluation = asyncio.run(evaluate(subject, "x", plugins=scripted))
    assert (evaluation.score, evaluation.scaled_score) == (0.29, 29.0)
    assert evaluation.to_dict()["scaled_score"] == 29.0


def test_a_discrete_scale_rounds_the_exact_value_half_up() -> None:
    assert Scale(min=0, max=5, type="discrete").from_unit(0.5) == 3.0
    assert Scale(min=0, max=100, type="discrete").from_unit(0.285) == 29.0  # 28.5 up
    assert Scale(min=0, max=10, type="discrete").from_unit(Fraction(1, 3)) == 3.0


def test_exact_check_values_add_up_exactly() -> None:
    """5/6 and 1/6 have no exact float; their mean is exactly 1/2, which meets a 0.5 bar."""
    subject = rubric([check("a", "5/6"), check("b", "1/6")], pass_threshold=0.5)
    evaluation = asyncio.run(evaluate(subject, "x", plugins=PLUGINS))
    assert (evaluation.score, evaluation.verdict) == (0.5, "pass")
    assert [r.score for r in evaluation.criteria] == [5 / 6, 1 / 6]


def test_decimal_check_values_are_exact() -> None:
    subject = rubric([check("a", "0.87", kind="decimal")], pass_threshold=0.87)
    evaluation = asyncio.run(evaluate(subject, "x", plugins=PLUGINS))
    assert (evaluation.score, evaluation.verdict) == (0.87, "pass")


def test_a_check_score_on_its_own_scale_is_normalised_exactly() -> None:
    """A check may return a number on its own scale: 8.7 on 0..10 meets a 0.87 bar."""
    subject = rubric([check("a", "8.7", kind="decimal", scale=[0, 10])], pass_threshold=0.87)
    evaluation = asyncio.run(evaluate(subject, "x", plugins=PLUGINS))
    [result] = evaluation.criteria
    assert (result.score, result.passed, evaluation.verdict) == (0.87, True, "pass")


def test_a_check_score_outside_its_scale_is_an_error() -> None:
    subject = rubric([check("a", "11", scale=[0, 10])])
    evaluation = asyncio.run(evaluate(subject, "x", plugins=PLUGINS))
    [result] = evaluation.criteria
    assert result.status == "error" and "outside its scale 0..10" in result.notes


@st.composite
def scale_and_value(draw: st.DrawFn) -> tuple[Fraction, Fraction, Fraction]:
    """(low, high, value) with up to three decimal places, low < high, value in between."""
    low = draw(st.integers(-100_000, 99_999))
    high = draw(st.integers(low + 1, 100_000))
    value = draw(st.integers(low, high))
    return Fraction(low, 1000), Fraction(high, 1000), Fraction(value, 1000)


@settings(max_examples=300, deadline=None)
@given(scale_and_value())
def test_scaled_score_round_trips_to_the_decimal(drawn: tuple[Fraction, ...]) -> None:
    low, high, value = drawn
    scale = Scale(min=float(low), max=float(high))
    assert scale.from_unit((value - low) / (high - low)) == float(value)


@settings(max_examples=60, deadline=None)
@given(scale_and_value())
def test_an_exact_score_meets_a_bar_equal_to_it(drawn: tuple[Fraction, ...]) -> None:
    low, high, value = drawn
    exact = (value - low) / (high - low)
    scale = {"min": float(low), "max": float(high)}
    bounds = [float(low), float(high)]
    subject = rubric([check("a", value, scale=bounds), check("b", 1 - exact)], scale=scale)
    evaluation = asyncio.run(evaluate(subject, "x", plugins=PLUGINS, threshold=Fraction(1, 2)))
    assert (evaluation.score, evaluation.verdict) == (0.5, "pass")
    assert evaluation.scaled_score == float((low + high) / 2)
    written = str(Decimal(value.numerator) / Decimal(value.denominator))  # e.g. "-12.345"
    one = rubric([check("a", written, kind="decimal", scale=bounds)], scale=scale)
    alone = asyncio.run(evaluate(one, "x", plugins=PLUGINS, threshold=exact))
    assert alone.verdict == "pass"
    if exact > 0:  # a 0 on a MET/UNMET criterion is UNMET, whatever the bar
        assert alone.criteria[0].passed is True
    assert alone.scaled_score == float(value)
