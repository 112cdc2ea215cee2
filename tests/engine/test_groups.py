"""Criterion groups (AgentV graders): each group is scored by the one formula on its own and
the rubric scores the weighted mean of its groups; ids are qualified as `group.item`; a
failed required item still fails the whole evaluation; all-zero weights score the mean
(native) or 0 (`zero_weights: zero`). Checked against an independent Fraction computation."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rubricflow import RubricValidationError, parse_rubric
from rubricflow.engine import evaluate
from rubricflow.engine.aggregate import aggregate
from rubricflow.plugins import PluginRegistry
from rubricflow.results import CriterionResult
from rubricflow.validation import lint_rubric

from .conftest import crit


def grouped(groups: list[dict[str, Any]], criteria: list[dict[str, Any]], **fields: Any) -> Any:
    return parse_rubric({"id": "r", "groups": groups, "criteria": criteria, **fields})


def in_group(group: str, cid: str, value: Any, weight: float = 1.0, **extra: Any) -> Any:
    return {**crit(cid, value, weight, **extra), "group": group}


# --- the figure: grader A 3 of 5 MET, the plain strings all MET -> 0.8 ---------
async def test_each_group_scores_on_its_own_and_the_rubric_averages_them(
    scripted: PluginRegistry,
) -> None:
    criteria = [in_group("a", f"item{i}", i < 3) for i in range(5)]
    criteria += [in_group("strings", f"s{i}", True) for i in range(2)]
    rubric = grouped([{"id": "a"}, {"id": "strings"}], criteria, pass_threshold=0.8)
    evaluation = await evaluate(rubric, "text", plugins=scripted)
    assert evaluation.score == 0.8  # (3/5 + 2/2) / 2; one weighted sum would give 5/7
    assert evaluation.verdict == "pass"
    assert [r.criterion_id for r in evaluation.criteria][:2] == ["a.item0", "a.item1"]
    assert "a.item3" in {r.criterion_id for r in evaluation.criteria if r.passed is False}


async def test_group_weights_weigh_the_mean(scripted: PluginRegistry) -> None:
    rubric = grouped(
        [{"id": "a", "weight": 3}, {"id": "b"}],
        [in_group("a", "x", True), in_group("b", "x", False)],  # same item id, two groups
    )
    evaluation = await evaluate(rubric, "text", plugins=scripted)
    assert evaluation.score == 0.75
    assert {r.criterion_id for r in evaluation.criteria} == {"a.x", "b.x"}


async def test_a_failed_required_item_fails_the_whole_evaluation(scripted: PluginRegistry) -> None:
    rubric = grouped(
        [{"id": "a"}, {"id": "b"}],
        [
            in_group("a", "gate", False, 0.1, required=True),
            in_group("a", "big", True, 10),
            in_group("b", "x", True),
        ],
        pass_threshold=0.5,
    )
    evaluation = await evaluate(rubric, "text", plugins=scripted)
    assert evaluation.score > 0.9
    assert evaluation.verdict == "fail"
    assert evaluation.gating_failures == ("a.gate",)
    assert "REQUIRED" in evaluation.feedback and "gate" in evaluation.feedback


async def test_a_required_group_below_its_min_score_fails(scripted: PluginRegistry) -> None:
    groups: list[dict[str, Any]] = [{"id": "a", "required": True, "min_score": 0.6}, {"id": "b"}]
    low = [in_group("a", "x", True), in_group("a", "y", False), in_group("b", "z", True)]
    evaluation = await evaluate(grouped(groups, low, pass_threshold=0.5), "t", plugins=scripted)
    assert evaluation.score == 0.75 and evaluation.verdict == "fail"
    assert evaluation.gating_failures == ("a",)
    high = [in_group("a", "x", True), in_group("a", "y", True), in_group("b", "z", False)]
    evaluation = await evaluate(grouped(groups, high, pass_threshold=0.5), "t", plugins=scripted)
    assert evaluation.verdict == "pass"


async def test_all_weights_zero_score_the_mean_natively_and_zero_when_asked(
    scripted: PluginRegistry,
) -> None:
    criteria = [crit("a", True, 0), crit("b", False, 0), crit("c", True, 0)]
    native = parse_rubric({"id": "r", "criteria": criteria})
    assert (await evaluate(native, "t", plugins=scripted)).score == pytest.approx(2 / 3)
    agentv = parse_rubric({"id": "r", "criteria": criteria, "zero_weights": "zero"})
    assert (await evaluate(agentv, "t", plugins=scripted)).score == 0.0


# --- the model: optional groups, qualified ids, clear errors, unchanged hashes ---------
def test_a_rubric_without_groups_keeps_its_content_hash() -> None:
    rubric = parse_rubric(
        {
            "id": "support",
            "version": "1.2.0",
            "pass_threshold": 0.75,
            "criteria": [
                {"id": "a", "description": "Polite", "weight": 2},
                {
                    "id": "b",
                    "weight": 0,
                    "levels": [{"id": "lo", "score": 0}, {"id": "hi", "score": 1}],
                },
            ],
        }
    )
    assert rubric.content_hash == "749eb57c1a971a707aa8048c4660c4c5dc4f6f64614655318430ca5ee26707ac"
    assert not {"groups", "zero_weights"} & set(rubric.to_dict())


def test_grouped_rubric_round_trips_with_qualified_ids() -> None:
    rubric = grouped(
        [{"id": "a", "weight": 2}, {"id": "b", "zero_weights": "zero"}],
        [in_group("a", "x", True), in_group("b", "x", True), in_group("b", "b.y", True)],
    )
    assert [c.id for c in rubric.criteria] == ["a.x", "b.x", "b.y"]
    assert [c.name for c in rubric.criteria][:2] == ["x", "x"]
    again = parse_rubric(rubric.to_dict())
    assert again == rubric and again.content_hash == rubric.content_hash


@pytest.mark.parametrize(
    ("groups", "criteria", "path", "words"),
    [
        (
            [{"id": "a"}],
            [in_group("a", "x", True), in_group("a", "x", True)],
            "criteria[1].id",
            "duplicate criterion id 'a.x' in group 'a'",
        ),
        ([{"id": "a"}], [in_group("b", "x", True)], "criteria[0].group", "not declared"),
        (
            [{"id": "a"}],
            [in_group("a", "x", True), crit("y", True)],
            "criteria[1].group",
            "no group",
        ),
        ([{"id": "a"}, {"id": "e"}], [in_group("a", "x", True)], "groups[1]", "has no criteria"),
        ([{"id": "a"}, {"id": "a"}], [in_group("a", "x", True)], "groups[1].id", "duplicate group"),
        ([{"id": "a.b"}], [in_group("a.b", "x", True)], "groups[0].id", "id 'a.b'"),
        (
            [{"id": "a", "weight": -1}],
            [in_group("a", "x", True)],
            "groups[0].weight",
            "or equal to 0",
        ),
    ],
)
def test_group_mistakes_name_the_field_and_the_fix(
    groups: list[dict[str, Any]], criteria: list[dict[str, Any]], path: str, words: str
) -> None:
    with pytest.raises(RubricValidationError) as caught:
        grouped(groups, criteria)
    problems = {p.path: p.message for p in caught.value.problems}
    assert path in problems, problems
    assert words in problems[path]


# --- the weight-0 warning ---------------------------------------------------------------
def test_weight_zero_warning_is_true_when_those_criteria_are_the_whole_verdict() -> None:
    alone = parse_rubric({"id": "r", "criteria": [crit("a", True, 0), crit("b", True, 0)]})
    messages = [p.message for p in lint_rubric(alone)]
    assert not any("cannot affect the verdict" in m for m in messages)
    assert any("plain mean" in m and "whole verdict" in m for m in messages)
    zero = parse_rubric(
        {"id": "r", "zero_weights": "zero", "criteria": [crit("a", True, 0), crit("b", True, 0)]}
    )
    assert any("scores 0 whatever the verdicts" in p.message for p in lint_rubric(zero))
    mixed = parse_rubric({"id": "r", "criteria": [crit("a", True, 1), crit("b", True, 0)]})
    assert [(p.path, p.message) for p in lint_rubric(mixed)] == [
        ("criteria[1].weight", "weight 0 and not required: it cannot affect the verdict")
    ]


# --- the property: random groups, weights and verdicts vs an independent computation ---
def _formula(pairs: list[tuple[Fraction, Fraction]], zero: bool) -> Fraction:
    positive = sum((w for w, _ in pairs if w > 0), Fraction(0))
    negative = sum((-w for w, _ in pairs if w < 0), Fraction(0))
    total = sum((w * s for w, s in pairs), Fraction(0))
    if positive:
        value = total / positive
    elif negative:
        value = 1 + total / negative
    elif zero:
        value = Fraction(0)
    else:
        value = sum((s for _, s in pairs), Fraction(0)) / len(pairs)
    return min(Fraction(1), max(Fraction(0), value))


weights = st.sampled_from([0, 0.5, 1, 2, 3, -1, -0.5])
item = st.tuples(weights, st.integers(0, 100))  # weight, score in hundredths
group = st.tuples(st.sampled_from([0, 0.5, 1, 2]), st.lists(item, min_size=1, max_size=5))


@settings(max_examples=200, deadline=None)
@given(groups=st.lists(group, min_size=1, max_size=4), zero=st.booleans())
def test_group_aggregation_matches_an_independent_fraction_computation(
    groups: list[tuple[float, list[tuple[float, int]]]], zero: bool
) -> None:
    criteria, results, expected = [], [], []
    for g, (group_weight, items) in enumerate(groups):
        pairs = []
        for i, (weight, hundredths) in enumerate(items):
            criteria.append({"id": f"c{i}", "group": f"g{g}", "weight": weight})
            results.append(
                CriterionResult(criterion_id=f"g{g}.c{i}", status="scored", score=hundredths / 100)
            )
            pairs.append((Fraction(str(weight)), Fraction(hundredths, 100)))
        expected.append((Fraction(str(group_weight)), _formula(pairs, zero)))
    rubric = parse_rubric(
        {
            "id": "r",
            "zero_weights": "zero" if zero else "mean",
            "groups": [{"id": f"g{g}", "weight": w} for g, (w, _) in enumerate(groups)],
            "criteria": criteria,
        }
    )
    outcome = aggregate(rubric, results)
    assert outcome.score == _formula(expected, zero)
    assert [score for _, score in outcome.group_scores] == [score for _, score in expected]


def test_the_meta_rubrics_score_bounds_follow_the_groups() -> None:
    from fractions import Fraction

    from rubricflow.engine.meta import score_bounds
    from rubricflow.model import parse_rubric

    def levels(low: float) -> list[dict[str, object]]:
        return [{"id": "low", "score": low}, {"id": "high", "score": 1.0}]

    rubric = parse_rubric(
        {
            "id": "grouped",
            "name": "Grouped",
            "groups": [{"id": "g1"}, {"id": "g2"}],
            "criteria": [
                {"id": "a", "group": "g1", "description": "a", "weight": 1, "levels": levels(0)},
                {"id": "b", "group": "g2", "description": "b", "weight": 9, "levels": levels(0.5)},
            ],
        }
    )
    # one weighted sum would say (0*1 + 0.5*9)/10 = 0.45; the groups' mean is (0 + 0.5)/2
    assert score_bounds(rubric) == (Fraction(1, 4), Fraction(1))
