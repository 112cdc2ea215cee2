"""dataknobs rubrics keep dataknobs' verdicts: `required` means "must be evaluated" and never
gates (an evaluation passes when Σ w·score / Σ w reaches `pass_threshold`), and dataknobs'
meta-rubric grades rubrics written in dataknobs' own shape (`to_dict()`) as well as native
ones and those of the other formats rubricflow loads."""

from __future__ import annotations

import copy
import json
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rubricflow import load_document
from rubricflow.engine import evaluate
from rubricflow.model import Rubric
from rubricflow.plugins import PluginRegistry
from rubricflow.results import Target


def level(level_id: str, score: float) -> dict[str, Any]:
    """A level as dataknobs' `to_dict()` writes it."""
    return {
        "id": level_id,
        "label": level_id.title(),
        "description": f"{level_id} work",
        "score": score,
        "indicators": [],
    }


def schema_criterion(
    index: int, weight: float, low: float, high: float, *, required: bool = True
) -> dict[str, Any]:
    """A criterion valid content passes when it has the key `k<index>`."""
    return {
        "id": f"c{index}",
        "name": f"Criterion {index}",
        "description": f"Has k{index}",
        "weight": weight,
        "levels": [level("low", low), level("high", high)],
        "scoring_method": {
            "type": "schema",
            "function_ref": None,
            "schema": {"type": "object", "required": [f"k{index}"]},
            "schema_ref": None,
            "decode_prompt": None,
            "decode_output_schema": None,
        },
        "required": required,
    }


def dataknobs_rubric(criteria: list[dict[str, Any]], threshold: float) -> dict[str, Any]:
    return {
        "id": "report",
        "name": "Report",
        "description": "A report",
        "version": "1.0.0",
        "target_type": "report",
        "criteria": criteria,
        "pass_threshold": threshold,
        "metadata": {},
    }


def only(document: dict[str, Any]) -> Rubric:
    loaded = load_document(document)
    assert loaded.format == "dataknobs"
    (rubric,) = loaded.rubrics
    return rubric


# --- item 1: `required` does not gate ----------------------------------------------------


async def test_a_failed_weight_zero_required_criterion_does_not_fail_a_full_score(
    plugins: PluginRegistry,
) -> None:
    rubric = only(
        dataknobs_rubric(
            [schema_criterion(0, 1.0, 0.0, 1.0), schema_criterion(1, 0.0, 0.0, 1.0)], 0.7
        )
    )
    evaluation = await evaluate(rubric, Target(content={"k0": 1}), plugins=plugins)

    assert [r.level for r in evaluation.criteria] == ["high", "low"]
    assert evaluation.score == 1.0
    assert evaluation.verdict == "pass"
    assert evaluation.gating_failures == ()


def test_required_is_read_as_must_be_evaluated_not_as_a_gate() -> None:
    rubric = only(
        dataknobs_rubric(
            [
                schema_criterion(0, 0.5, 0.0, 1.0, required=True),
                schema_criterion(1, 0.5, 0.0, 1.0, required=False),
            ],
            0.5,
        )
    )
    assert [c.required for c in rubric.criteria] == [False, False]
    assert rubric.unscored_policy == "fail_closed"  # every criterion must be evaluated


def test_required_that_is_not_a_boolean_is_an_error_naming_the_field() -> None:
    document = dataknobs_rubric([schema_criterion(0, 1.0, 0.0, 1.0)], 0.5)
    document["criteria"][0]["required"] = "yes"
    with pytest.raises(Exception) as caught:
        load_document(document)
    assert "criteria[0].required" in str(caught.value)
    assert "expected true or false" in str(caught.value)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=st.lists(
        st.tuples(
            st.sampled_from([0.0, 0.1, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 1.0]),
            st.sampled_from([0.0, 0.1, 0.3, 0.5]),
            st.sampled_from([0.6, 0.7, 0.9, 1.0]),
            st.booleans(),
            st.booleans(),
        ),
        min_size=1,
        max_size=5,
    ).filter(lambda items: any(weight > 0 for weight, *_ in items)),
    threshold=st.sampled_from([0.3, 0.5, 0.6, 0.7, 0.75, 0.8, 0.88, 0.9, 1.0]),
)
async def test_the_verdict_is_the_weighted_score_against_the_threshold(
    plugins: PluginRegistry,
    data: list[tuple[float, float, float, bool, bool]],
    threshold: float,
) -> None:
    """dataknobs' rule, computed exactly: passed = Σ w·score / Σ w >= pass_threshold,
    whatever any single (required) criterion scored."""
    criteria = [
        schema_criterion(i, weight, low, high, required=required)
        for i, (weight, low, high, required, _) in enumerate(data)
    ]
    content = {f"k{i}": True for i, (*_, met) in enumerate(data) if met}
    evaluation = await evaluate(
        only(dataknobs_rubric(criteria, threshold)), Target(content=content), plugins=plugins
    )

    def exact(value: float) -> Fraction:
        return Fraction(repr(value))

    total = sum(exact(w) for w, *_ in data)
    score = sum(exact(w) * exact(hi if met else lo) for w, lo, hi, _, met in data) / total
    assert evaluation.verdict == ("pass" if score >= exact(threshold) else "fail")


# --- item 2: the meta-rubric reads any rubric format -------------------------------------


def meta_criterion(check_id: str, function: str, levels: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": check_id,
        "name": check_id.replace("_", " ").title(),
        "description": f"The {check_id} check",
        "weight": 0.2,
        "levels": levels,
        "scoring_method": {
            "type": "deterministic",
            "function_ref": f"dataknobs_bots.rubrics.meta:{function}",
        },
        "required": True,
    }


PASS_FAIL = [level("fail", 0.0), level("pass", 1.0)]
META = dataknobs_rubric(
    [
        meta_criterion("criteria_coverage", "check_criteria_coverage", PASS_FAIL),
        meta_criterion(
            "criteria_independence",
            "check_criteria_independence",
            [level("fail", 0.0), level("partial", 0.5), level("pass", 1.0)],
        ),
        meta_criterion("weight_distribution", "check_weight_distribution", PASS_FAIL),
        meta_criterion(
            "threshold",
            "check_threshold",
            [level("too_low", 0.0), level("too_high", 0.0), level("pass", 1.0)],
        ),
        meta_criterion("level_ordering", "check_level_ordering", PASS_FAIL),
    ],
    0.7,
) | {"id": "meta_rubric", "target_type": "rubric"}

GOOD_DATAKNOBS = dataknobs_rubric(
    [schema_criterion(0, 0.6, 0.0, 1.0), schema_criterion(1, 0.4, 0.0, 1.0)], 0.7
)
GOOD_NATIVE = {
    "id": "native",
    "pass_threshold": 0.7,
    "criteria": [
        {"id": "a", "weight": 0.5, "description": "first"},
        {"id": "b", "weight": 0.5, "description": "second"},
    ],
}
GOOD_OPENRUBRICRL = {
    "name": "answers",
    "version": "1.0.0",
    "scale": {"min": 0, "max": 10, "type": "continuous"},
    "criteria": [
        {"name": "accuracy", "description": "Is it right", "weight": 0.7},
        {"name": "clarity", "description": "Is it clear", "weight": 0.3},
    ],
}


async def meta_levels(plugins: PluginRegistry, content: Any) -> dict[str, str | None]:
    evaluation = await evaluate(only(META), Target(content=content), plugins=plugins)
    for result in evaluation.criteria:
        assert result.status == "scored", result.notes
    return {result.criterion_id: result.level for result in evaluation.criteria}


ALL_PASS = {
    "criteria_coverage": "pass",
    "criteria_independence": "pass",
    "weight_distribution": "pass",
    "threshold": "pass",
    "level_ordering": "pass",
}


@pytest.mark.parametrize(
    "document",
    [GOOD_DATAKNOBS, META, GOOD_NATIVE, GOOD_OPENRUBRICRL],
    ids=["dataknobs-to_dict", "dataknobs-meta-itself", "native", "openrubricrl"],
)
async def test_meta_rubric_grades_a_rubric_in_any_loadable_format(
    plugins: PluginRegistry, document: dict[str, Any]
) -> None:
    assert await meta_levels(plugins, document) == ALL_PASS
    assert await meta_levels(plugins, json.dumps(document)) == ALL_PASS  # as JSON text


async def test_meta_rubric_finds_the_defects_of_a_dataknobs_rubric(
    plugins: PluginRegistry,
) -> None:
    bad = copy.deepcopy(GOOD_DATAKNOBS)
    bad["criteria"][1]["name"] = bad["criteria"][0]["name"]  # duplicate names
    bad["criteria"][1]["weight"] = 0.9  # weights sum to 1.5
    bad["criteria"][0]["levels"] = [level("high", 0.9), level("mid", 0.2), level("low", 0.5)]
    bad["criteria"][1]["levels"][1]["score"] = 0.8
    bad["pass_threshold"] = 0.95  # the best achievable score is 0.84

    assert await meta_levels(plugins, bad) == {
        "criteria_coverage": "pass",
        "criteria_independence": "fail",
        "weight_distribution": "fail",
        "threshold": "too_high",
        "level_ordering": "fail",
    }


async def test_meta_rubric_on_content_that_is_no_rubric_says_so(
    plugins: PluginRegistry,
) -> None:
    evaluation = await evaluate(only(META), Target(content={"title": "hi"}), plugins=plugins)
    assert {r.status for r in evaluation.criteria} == {"error"}
    assert "matches no known rubric format" in evaluation.criteria[0].notes
