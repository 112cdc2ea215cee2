"""A rubric owner reads the diff of two versions before shipping one: every change is
named, field by field, and only changes that can move a score count as scoring changes."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from rubricflow.model import Rubric
from rubricflow.rubric_diff import diff_rubrics


def _rubric(version: str = "1.0.0", **changes: Any) -> Rubric:
    document: dict[str, Any] = {
        "id": "essay",
        "name": "Essay",
        "version": version,
        "criteria": [
            {
                "id": "clarity",
                "name": "Clarity",
                "description": "Is it clear?",
                "weight": 2,
                "levels": [
                    {"id": "poor", "label": "Poor", "score": 0.0},
                    {"id": "good", "label": "Good", "score": 1.0},
                ],
            },
            {"id": "length", "description": "Long enough?", "weight": 1},
        ],
    }
    criteria = changes.pop("criteria", None)
    if criteria is not None:
        document["criteria"] = criteria
    document.update(changes)
    return Rubric.model_validate(document)


def test_the_same_rubric_has_no_changes() -> None:
    diff = diff_rubrics(_rubric(), _rubric())
    assert diff.identical
    assert not diff.scoring_changed
    assert diff.rubric_fields == () and diff.criteria == ()


def test_a_threshold_left_at_its_default_shows_its_value() -> None:
    before, after = _rubric(), _rubric("1.1.0", pass_threshold=0.9)
    diff = diff_rubrics(before, after)
    changes = {f.path: (f.before, f.after) for f in diff.rubric_fields}
    assert changes["version"] == ("1.0.0", "1.1.0")
    assert changes["pass_threshold"] == (before.pass_threshold, 0.9)
    assert diff.scoring_changed


def test_criteria_added_removed_and_changed_are_matched_by_id() -> None:
    before = _rubric()
    after = _rubric(
        "2.0.0",
        criteria=[
            {
                "id": "clarity",
                "name": "Clarity",
                "description": "Is it clear?",
                "weight": 3,
                "levels": [
                    {"id": "poor", "label": "Poor", "score": 0.0},
                    {"id": "good", "label": "Good", "score": 0.9},
                ],
            },
            {"id": "tone", "description": "Polite?", "weight": 1},
        ],
    )
    diff = diff_rubrics(before, after)
    by_id = {c.criterion_id: c for c in diff.criteria}
    assert by_id["length"].change == "removed"
    assert by_id["tone"].change == "added"
    fields = {f.path: (f.before, f.after) for f in by_id["clarity"].fields}
    assert fields == {"weight": (2, 3), "levels[1].score": (1.0, 0.9)}
    assert diff.to_dict()["criteria"][0]["criterion_id"] == "clarity"


def test_wording_alone_is_not_a_scoring_change() -> None:
    after = _rubric(
        "1.0.1",
        name="Essays",
        criteria=[
            {
                "id": "clarity",
                "name": "Clarity of writing",
                "description": "Can a reader follow it?",
                "weight": 2,
                "levels": [
                    {"id": "poor", "label": "Weak", "score": 0.0},
                    {"id": "good", "label": "Good", "score": 1.0},
                ],
            },
            {"id": "length", "description": "Long enough?", "weight": 1},
        ],
    )
    diff = diff_rubrics(_rubric(), after)
    assert not diff.identical
    assert not diff.scoring_changed
    paths = [f.path for c in diff.criteria for f in c.fields]
    assert paths == ["name", "description", "levels[0].label"]


def test_reordering_is_reported_without_field_changes() -> None:
    before = _rubric()
    after = _rubric(criteria=list(reversed(before.to_dict()["criteria"])))
    diff = diff_rubrics(before, after)
    assert diff.reordered
    assert diff.criteria == ()


@given(
    weights=st.lists(st.integers(min_value=1, max_value=9), min_size=1, max_size=6, unique=False),
    changed=st.data(),
)
def test_every_weight_change_is_reported_once(weights: list[int], changed: st.DataObject) -> None:
    criteria = [{"id": f"c{i}", "description": "x", "weight": w} for i, w in enumerate(weights)]
    new_weights = changed.draw(
        st.lists(
            st.integers(min_value=1, max_value=9), min_size=len(weights), max_size=len(weights)
        )
    )
    after = [dict(c, weight=w) for c, w in zip(criteria, new_weights, strict=True)]
    diff = diff_rubrics(_rubric(criteria=criteria), _rubric(criteria=after))
    reported = {c.criterion_id: c.fields for c in diff.criteria}
    expected = {
        f"c{i}" for i, (a, b) in enumerate(zip(weights, new_weights, strict=True)) if a != b
    }
    assert set(reported) == expected
    for fields in reported.values():
        assert [f.path for f in fields] == ["weight"]
    assert diff.identical == (not expected)
