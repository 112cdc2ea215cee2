"""The one aggregation formula: every source system's worked figures, exactly, and its laws."""

from __future__ import annotations

import asyncio
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rubricflow import parse_rubric
from rubricflow.engine import evaluate
from rubricflow.engine.aggregate import aggregate, weighted_score
from rubricflow.plugins import PluginRegistry
from rubricflow.results import CriterionResult

from .conftest import crit


def rubric(criteria: list[dict[str, Any]], **fields: Any) -> Any:
    return parse_rubric({"id": "r", "criteria": criteria, **fields})


LEVELS = [
    {"id": "poor", "score": 0.0},
    {"id": "fair", "score": 0.7},
    {"id": "good", "score": 1.0},
]


# --- the `rubric` package's figures (SEMANTICS.md 3) ---------------------------------
@pytest.mark.parametrize(
    ("weights", "verdicts", "score", "raw"),
    [
        ([2, 1, 1, -0.5], [True, True, True, False], 1.0, 4.0),
        ([-1, -1, -1], [True, False, False], 2 / 3, -1.0),
        ([2, 1, -1], [False, False, True], 0.0, -1.0),
        ([-2, -1], [False, False], 1.0, 0.0),
        ([10, 8, -15], [True, True, True], 3 / 18, 3.0),
    ],
)
async def test_rubric_package_figures(
    scripted: PluginRegistry, weights: list[float], verdicts: list[bool], score: float, raw: float
) -> None:
    r = rubric(
        [crit(f"c{i}", v, w) for i, (w, v) in enumerate(zip(weights, verdicts, strict=True))]
    )
    evaluation = await evaluate(r, "text", plugins=scripted)
    assert evaluation.score == pytest.approx(score, abs=1e-12)
    assert evaluation.raw_score == pytest.approx(raw, abs=1e-12)
    assert evaluation.verdict in ("pass", "fail")


# --- dataknobs' weighted mean, with the right answer (SEMANTICS.md 4) -----------------
async def test_dataknobs_weighted_mean_is_exactly_088(scripted: PluginRegistry) -> None:
    r = rubric(
        [crit("a", "good", 0.6, levels=LEVELS), crit("b", "fair", 0.4, levels=LEVELS)],
        pass_threshold=0.88,
    )
    evaluation = await evaluate(r, "text", plugins=scripted)
    assert evaluation.score == 0.88  # their code gives 0.8799999999999999 and fails this bar
    assert evaluation.verdict == "pass"


# --- AgentV bands: 7 and 10 out of 10 with weights 2 and 1 reach the 0.8 bar ----------
async def test_agentv_band_boundary_passes_exactly(scripted: PluginRegistry) -> None:
    bands = {0: "wrong", 3: "weak", 5: "ok", 7: "good", 10: "perfect"}
    r = rubric(
        [crit("a", 0.7, 2, score_ranges=bands), crit("b", 1.0, 1, score_ranges=bands)],
        pass_threshold=0.8,
    )
    evaluation = await evaluate(r, "text", plugins=scripted)
    assert evaluation.score == 0.8
    assert evaluation.verdict == "pass"


async def test_below_the_bar_by_the_smallest_step_fails(scripted: PluginRegistry) -> None:
    r = rubric([crit("a", 0.79, 1)], pass_threshold=0.8)
    assert (await evaluate(r, "x", plugins=scripted)).verdict == "fail"


# --- OpenRubricRL's blend as imported criteria (SEMANTICS.md 1) ---------------------
async def test_openrubricrl_blend_figure(scripted: PluginRegistry) -> None:
    r = rubric([crit("llm", 0.8, 0.5), crit("accuracy", 1.0, 0.3), crit("perplexity", 0.3775, 0.2)])
    evaluation = await evaluate(r, "x", plugins=scripted)
    assert evaluation.score == 0.7755


# --- required gating and incomplete ---------------------------------------------------
async def test_required_failure_fails_whatever_the_score(scripted: PluginRegistry) -> None:
    r = rubric([crit("big", True, 10), crit("gate", False, 0.1, required=True)], pass_threshold=0.5)
    evaluation = await evaluate(r, "x", plugins=scripted)
    assert evaluation.score > 0.9
    assert evaluation.verdict == "fail"
    assert evaluation.gating_failures == ("gate",)
    assert "REQUIRED" in evaluation.feedback


async def test_required_min_score_gates(scripted: PluginRegistry) -> None:
    r = rubric([crit("a", 0.75, required=True, min_score=0.8), crit("b", 1.0)], pass_threshold=0.5)
    assert (await evaluate(r, "x", plugins=scripted)).verdict == "fail"
    r = rubric([crit("a", 0.8, required=True, min_score=0.8), crit("b", 1.0)], pass_threshold=0.5)
    assert (await evaluate(r, "x", plugins=scripted)).verdict == "pass"


async def test_lowest_level_of_required_criterion_fails(scripted: PluginRegistry) -> None:
    r = rubric(
        [crit("a", "poor", levels=LEVELS, required=True), crit("b", 1.0, 5)], pass_threshold=0.1
    )
    assert (await evaluate(r, "x", plugins=scripted)).verdict == "fail"


@pytest.mark.parametrize("status", ["error", "unable", "raise"])
async def test_unscored_criterion_makes_verdict_incomplete(
    scripted: PluginRegistry, status: str
) -> None:
    r = rubric([crit("a", True, 3), crit("b", status=status)])
    evaluation = await evaluate(r, "x", plugins=scripted)
    assert evaluation.verdict == "incomplete"
    assert not evaluation.passed
    assert evaluation.coverage == 0.75
    assert evaluation.score == 1.0  # over the scored criteria
    b = evaluation.criterion("b")
    assert b is not None and b.score is None and b.verdict is None
    assert b.status in ("error", "unable_to_evaluate")


async def test_exclude_policy_scores_what_was_scored(scripted: PluginRegistry) -> None:
    r = rubric([crit("a", True, 3), crit("b", status="error")], unscored_policy="exclude")
    evaluation = await evaluate(r, "x", plugins=scripted)
    assert evaluation.verdict == "pass" and evaluation.coverage == 0.75


async def test_exclude_policy_keeps_required_unscored_incomplete(scripted: PluginRegistry) -> None:
    r = rubric(
        [crit("a", True, 3), crit("b", status="error", required=True)], unscored_policy="exclude"
    )
    assert (await evaluate(r, "x", plugins=scripted)).verdict == "incomplete"


async def test_count_as_zero_gives_no_credit(scripted: PluginRegistry) -> None:
    r = rubric(
        [
            crit("a", True, 3),
            crit("b", status="error", weight=1),
            crit("p", status="error", weight=-1),
        ],
        unscored_policy="count_as_zero",
        pass_threshold=0.5,
    )
    evaluation = await evaluate(r, "x", plugins=scripted)
    # a: 3*1, b: 0 credit, penalty p counted as incurred: (3 - 1) / 4
    assert evaluation.score == 0.5
    assert evaluation.verdict == "pass"


async def test_policy_override_at_call_time(scripted: PluginRegistry) -> None:
    r = rubric([crit("a", True, 3), crit("b", status="error")])
    evaluation = await evaluate(r, "x", plugins=scripted, policy="exclude")
    assert evaluation.verdict == "pass"
    assert evaluation.unscored_policy == "exclude"


async def test_scaled_score_on_discrete_scale_rounds(scripted: PluginRegistry) -> None:
    r = rubric(
        [crit("a", 0.66)], scale={"min": 1, "max": 5, "type": "discrete"}, pass_threshold=0.5
    )
    evaluation = await evaluate(r, "x", plugins=scripted)
    assert evaluation.scaled_score == 4.0  # 1 + 0.66 * 4 = 3.64
    r = rubric([crit("a", 0.66)], scale={"min": 0, "max": 10}, pass_threshold=0.5)
    assert (await evaluate(r, "x", plugins=scripted)).scaled_score == pytest.approx(6.6)


# --- properties -----------------------------------------------------------------------
weights = st.floats(min_value=-10, max_value=10, allow_nan=False).map(lambda w: round(w, 3))
scores = st.floats(min_value=0, max_value=1, allow_nan=False)


def _results(
    pairs: list[tuple[float, float | None]], required: list[bool] | None = None
) -> tuple[Any, list[CriterionResult]]:
    r = parse_rubric(
        {
            "id": "p",
            "criteria": [
                {"id": f"c{i}", "weight": w, "required": bool(required and required[i])}
                for i, (w, _) in enumerate(pairs)
            ],
        }
    )
    results = [
        CriterionResult(criterion_id=f"c{i}", status="scored", score=s, passed=s >= 0.5)
        if s is not None
        else CriterionResult(criterion_id=f"c{i}", status="error")
        for i, (_, s) in enumerate(pairs)
    ]
    return r, results


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(weights, scores), min_size=1, max_size=12))
def test_score_is_always_within_0_and_1(pairs: list[tuple[float, float]]) -> None:
    score, _ = weighted_score(pairs)
    assert 0 <= score <= 1


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(weights, scores), min_size=1, max_size=12), st.data())
def test_raising_a_positive_criterion_never_lowers_the_total(
    pairs: list[tuple[float, float]], data: st.DataObject
) -> None:
    index = data.draw(st.integers(0, len(pairs) - 1))
    weight, before = pairs[index]
    after = data.draw(st.floats(min_value=before, max_value=1))
    raised = list(pairs)
    raised[index] = (weight, after)
    old, _ = weighted_score(pairs)
    new, _ = weighted_score(raised)
    if weight >= 0:
        assert new >= old
    else:
        assert new <= old  # a bigger penalty never helps


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(weights, st.one_of(st.none(), scores)), min_size=1, max_size=10),
    st.randoms(),
)
def test_permuting_criteria_changes_nothing(
    pairs: list[tuple[float, float | None]], rnd: Any
) -> None:
    r, results = _results(pairs)
    shuffled = list(results)
    rnd.shuffle(shuffled)
    a = aggregate(r, results)
    b = aggregate(r, shuffled)
    assert (a.verdict, a.score, a.raw_score, a.coverage) == (
        b.verdict,
        b.score,
        b.raw_score,
        b.coverage,
    )


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(weights, st.one_of(st.none(), scores), st.integers(0, 3)),
        min_size=1,
        max_size=8,
    ),
    st.randoms(),
)
def test_reordering_a_rubrics_criteria_changes_no_evaluation(
    scripted: PluginRegistry, items: list[tuple[float, float | None, int]], rnd: Any
) -> None:
    """End to end: the rubric's criteria in another order, finishing in another order
    (random delays), give the same verdict, scores and per-criterion results."""
    criteria = [
        crit(f"c{i}", status="error", weight=w, delay=d / 1000)
        if s is None
        else crit(f"c{i}", s, weight=w, delay=d / 1000)
        for i, (w, s, d) in enumerate(items)
    ]
    shuffled = list(criteria)
    rnd.shuffle(shuffled)

    async def both() -> tuple[Any, Any]:
        first = await evaluate(rubric(criteria), "x", plugins=scripted)
        second = await evaluate(rubric(shuffled), "x", plugins=scripted)
        return first, second

    a, b = asyncio.run(both())
    assert (a.verdict, a.score, a.raw_score, a.coverage) == (
        b.verdict,
        b.score,
        b.raw_score,
        b.coverage,
    )
    by_id = {r.criterion_id: (r.status, r.score, r.passed) for r in b.criteria}
    assert {r.criterion_id: (r.status, r.score, r.passed) for r in a.criteria} == by_id
    assert [r.criterion_id for r in b.criteria] == [c["id"] for c in shuffled]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(weights, st.one_of(st.none(), scores)), min_size=1, max_size=10),
    st.lists(st.booleans(), min_size=10, max_size=10),
)
def test_an_unscored_criterion_is_never_a_pass_under_fail_closed(
    pairs: list[tuple[float, float | None]], required: list[bool]
) -> None:
    r, results = _results(pairs, required)
    outcome = aggregate(r, results)
    if any(s is None for _, s in pairs):
        assert outcome.verdict != "pass"
    assert 0 <= outcome.coverage <= 1


def test_exactness_uses_the_printed_decimal() -> None:
    score, raw = weighted_score([(0.6, 1.0), (0.4, 0.7)])
    assert score == Fraction(88, 100)
    assert raw == Fraction(88, 100)
