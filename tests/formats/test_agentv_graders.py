"""AgentV graders as criterion groups: an imported case scores as AgentV scores it (each
grader on its own, the case the mean of its graders), with AgentV's thresholds, grader
weights and gates, score-range `required` per source version, and all-zero weights."""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import pytest

from rubricflow import RubricValidationError, load_document
from rubricflow.engine.aggregate import aggregate, criterion_passed
from rubricflow.model import Rubric, parse_rubric
from rubricflow.results import CriterionResult
from rubricflow.validation import lint_rubric


def one(document: dict[str, Any]) -> Rubric:
    (rubric,) = load_document(document, format="agentv").rubrics
    return rubric


def judge(rubric: Rubric, scores: Mapping[str, float]) -> Any:
    """The case's outcome when the judge gives each criterion (qualified id) this score."""
    results = []
    for criterion in rubric.criteria:
        score = scores[criterion.id]
        verdict = None if criterion.kind == "bands" else ("MET" if score == 1 else "UNMET")
        passed = criterion_passed(criterion, score, None, rubric.pass_threshold)
        results.append(
            CriterionResult(
                criterion_id=criterion.id,
                status="scored",
                score=score,
                verdict=verdict if criterion.scoring.method != "llm_score" else None,
                passed=passed,
            )
        )
    return aggregate(rubric, results)


def v4(*assertions: Any, **test: Any) -> dict[str, Any]:
    return {"tests": [{"id": "case", "assertions": list(assertions), **test}]}


GRADER_A = {
    "type": "rubrics",
    "name": "A",
    "criteria": [{"id": f"i{n}", "outcome": f"item {n}", "required": False} for n in range(5)],
}


def test_issue_figure_graders_are_averaged_as_agentv_does() -> None:
    rubric = one(v4(GRADER_A, "Plain one", "Plain two"))
    outcome = judge(
        rubric,
        {"a.i0": 1, "a.i1": 1, "a.i2": 1, "a.i3": 0, "a.i4": 0}
        | {"rubrics.rubric-1": 1, "rubrics.rubric-2": 1},
    )
    # the plain strings weigh 2, as many as they are (AgentV's `weight: strings.length`):
    # (3/5 + 2 * 1) / 3, not 5/7 over one weighted sum
    assert outcome.score == Fraction(13, 15)
    assert outcome.verdict == "pass"
    assert dict(outcome.group_scores) == {"a": Fraction(3, 5), "rubrics": 1}


def test_plain_strings_weigh_as_many_as_they_are() -> None:
    """The issue's figure: a 2-item rubrics grader (one MET, one UNMET) beside 3 MET
    strings scores (1/2 + 3 * 1) / 4 = 0.875 and passes in AgentV 4.42.4."""
    grader = {
        "type": "rubrics",
        "name": "A",
        "criteria": [
            {"id": "x", "outcome": "x", "required": False},
            {"id": "y", "outcome": "y", "required": False},
        ],
    }
    rubric = one(v4(grader, "One", "Two", "Three"))
    scores = {"a.x": 1, "a.y": 0} | {f"rubrics.rubric-{n}": 1 for n in (1, 2, 3)}
    outcome = judge(rubric, scores)
    assert (outcome.score, outcome.verdict) == (Fraction(7, 8), "pass")


def test_a_required_grader_below_its_min_score_makes_the_case_score_0() -> None:
    """AgentV 4.42.4: `required: true` + `min_score: 0.9` on a grader scoring 0.85 fails
    the case with score 0 (rubricflow used to pass it at 0.85)."""
    items = [
        {"id": f"i{n}", "outcome": f"item {n}", "weight": w, "required": False}
        for n, w in enumerate((17, 3))
    ]
    gate = {"type": "rubrics", "name": "A", "criteria": items, "required": True, "min_score": 0.9}
    rubric = one(v4(gate))
    assert (rubric.groups[0].min_score, rubric.groups[0].on_failure) == (0.9, "zero")
    outcome = judge(rubric, {"a.i0": 1, "a.i1": 0})
    assert (outcome.score, outcome.verdict, outcome.gating_failures) == (0, "fail", ("a",))
    assert judge(rubric, {"a.i0": 1, "a.i1": 1}).score == 1


def test_a_numeric_required_is_read_as_agentv_4_42_reads_it_with_a_warning() -> None:
    gate = {**GRADER_A, "required": 0.9}
    loaded = load_document(v4(gate, "Plain"), format="agentv")
    (rubric,) = loaded.rubrics
    group = rubric.groups[0]
    assert (group.required, group.min_score, group.on_failure) == (True, 0.9, "zero")
    (warning,) = loaded.warnings
    assert warning.path == "tests[0].assertions[0].required"
    assert "deprecated" in warning.message and "min_score: 0.9" in warning.message


def test_the_same_item_id_in_two_graders_is_valid() -> None:
    grader = {"type": "rubrics", "criteria": [{"id": "tone", "outcome": "Polite"}]}
    rubric = one(v4(grader, {**grader, "name": "second"}))
    assert [c.id for c in rubric.criteria] == ["grader-1.tone", "second.tone"]


def test_a_plain_string_next_to_a_score_range_grader_stays_met_or_unmet() -> None:
    bands = {"type": "rubrics", "criteria": [{"id": "acc", "score_ranges": {0: "bad", 7: "ok"}}]}
    rubric = one(v4(bands, "Under 50 words"))
    methods = {c.id: (c.kind, c.scoring.method) for c in rubric.criteria}
    assert methods == {
        "grader-1.acc": ("bands", "llm_score"),
        "rubrics.rubric-1": ("binary", "llm"),  # not a 0..10 score
    }


def test_execution_threshold_of_the_suite_and_the_case_is_the_pass_bar() -> None:
    suite = {**v4("Plain"), "execution": {"threshold": 0.6}}
    assert one(suite).pass_threshold == 0.6
    case = v4("Plain", execution={"threshold": 0.9})
    case["execution"] = {"threshold": 0.6}
    assert one(case).pass_threshold == 0.9
    v2 = {
        "execution": {"threshold": 0.7},
        "evalcases": [{"id": "c", "expected_outcome": "x", "rubrics": ["Plain"]}],
    }
    assert one(v2).pass_threshold == 0.7


def test_execution_threshold_out_of_range_is_refused() -> None:
    with pytest.raises(RubricValidationError) as caught:
        one(v4("Plain", execution={"threshold": 80}))
    (problem,) = caught.value.problems
    assert problem.path == "tests[0].execution.threshold"
    assert "from 0 to 1" in problem.message


def test_a_graders_weight_and_required_are_honoured() -> None:
    heavy = {**GRADER_A, "weight": 3}
    rubric = one(v4(heavy, "Plain"))
    scores = {f"a.i{n}": 1 for n in range(5)} | {"rubrics.rubric-1": 0}
    assert judge(rubric, scores).score == Fraction(3, 4)  # (3 * 1 + 1 * 0) / 4
    gate = {**GRADER_A, "required": 0.8}
    rubric = one(v4(gate, "Plain"))
    assert (rubric.groups[0].required, rubric.groups[0].min_score) == (True, 0.8)
    outcome = judge(
        rubric, {"a.i0": 1, "a.i1": 1, "a.i2": 1, "a.i3": 0, "a.i4": 0, "rubrics.rubric-1": 1}
    )
    assert outcome.verdict == "fail" and outcome.gating_failures == ("a",)
    assert outcome.score == 0  # a required grader's failure zeroes the case (AgentV)


def test_a_graders_bad_required_is_refused() -> None:
    with pytest.raises(RubricValidationError) as caught:
        one(v4({**GRADER_A, "required": 8}))
    (problem,) = caught.value.problems
    assert problem.path == "tests[0].assertions[0].required"
    assert "from 0 to 1" in problem.message


BANDS = {0: "wrong", 5: "partly", 9: "nearly", 10: "fully"}


def test_score_range_required_needs_10_of_10_in_v2() -> None:
    rubric = one(
        {
            "evalcases": [
                {
                    "id": "c",
                    "expected_outcome": "x",
                    "rubrics": [{"id": "acc", "outcome": "Accurate", "score_ranges": BANDS}],
                }
            ]
        }
    )
    assert judge(rubric, {"acc": 0.9}).verdict == "fail"  # 9/10 misses requiredMinScore 10
    assert judge(rubric, {"acc": 1.0}).verdict == "pass"


def test_score_range_required_gates_only_through_min_score_in_v4() -> None:
    item = {"id": "acc", "outcome": "Accurate", "score_ranges": BANDS, "required": True}
    other = {"id": "rest", "outcome": "Complete", "score_ranges": BANDS, "weight": 9}
    rubric = one(v4({"type": "rubrics", "criteria": [item, other]}))
    outcome = judge(rubric, {"acc": 0.7, "rest": 1.0})
    assert outcome.score == Fraction(97, 100)
    assert outcome.verdict == "pass"  # 7/10 on a required item: no gate (was 8/10)
    gated = one(v4({"type": "rubrics", "criteria": [{**item, "min_score": 0.8}, other]}))
    assert judge(gated, {"acc": 0.7, "rest": 1.0}).verdict == "fail"


def test_a_grader_whose_items_all_weigh_zero_scores_zero() -> None:
    zero = {"type": "rubrics", "criteria": [{"id": "a", "outcome": "x", "weight": 0}]}
    rubric = one(v4(zero))
    assert judge(rubric, {"a": 1}).score == 0  # AgentV: 0 satisfied of 0 total weight
    assert any("scores 0 whatever the verdicts" in p.message for p in lint_rubric(rubric))


def test_a_required_min_score_of_8_7_is_exactly_0_87() -> None:
    from rubricflow.formats.loader import load_document

    document = {
        "tests": [
            {
                "id": "c1",
                "assert": [
                    {
                        "type": "llm-rubric",
                        "value": [
                            {
                                "id": "x",
                                "outcome": "good",
                                "score_ranges": [{"score_range": [0, 10], "outcome": "o"}],
                                "required_min_score": 8.7,
                            }
                        ],
                    }
                ],
            }
        ]
    }
    rubric = load_document(document, format="agentv", source="suite.yaml").rubrics[0]
    assert [c.min_score for c in rubric.criteria] == [0.87]


def test_a_numeric_required_beside_a_min_score_is_refused() -> None:
    """Two minimum scores for one grader: AgentV would silently take one."""
    with pytest.raises(RubricValidationError) as caught:
        one(v4({**GRADER_A, "required": 0.6, "min_score": 0.8}))
    (problem,) = caught.value.problems
    assert problem.path == "tests[0].assertions[0].required"
    assert "one min_score" in problem.message


def test_on_failure_zero_needs_a_required_group() -> None:
    document = {
        "id": "r",
        "groups": [{"id": "g", "on_failure": "zero"}],
        "criteria": [{"id": "c", "group": "g"}],
    }
    with pytest.raises(RubricValidationError, match="applies to a required group"):
        parse_rubric(document)
