"""OpenRubricRL import: ids from names, weights and blending with hybrid metrics, scale,
examples, subcriteria, metadata, warnings, and errors at source paths."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from rubricflow import RubricValidationError, load_document, load_file
from rubricflow.formats.loader import LoadedFile, load_text

FOLDER = Path(__file__).resolve().parent.parent / "fixtures" / "formats" / "openrubricrl"


def load(name: str) -> LoadedFile:
    loaded = load_file(FOLDER / name)
    assert loaded.format == "openrubricrl"
    return loaded


def warning_paths(loaded: LoadedFile) -> list[str]:
    return [w.path for w in loaded.warnings]


def test_rubric_fields_come_from_the_document() -> None:
    loaded = load("essay_feedback.json")
    (rubric,) = loaded.rubrics
    assert rubric.id == "essay_feedback"
    assert rubric.name == "Essay Feedback"
    assert rubric.version == "0.4.2"
    assert rubric.description == "Feedback quality on undergraduate history essays"
    assert (rubric.scale.min, rubric.scale.max, rubric.scale.type) == (1, 5, "discrete")
    assert rubric.metadata == {
        "author": "History Dept.",
        "course": "HIST-210",
        "reviewers": ["ak", "mb"],
        "domain": "creative_writing",
        "imported_from": "openrubricrl",
    }
    assert loaded.warnings == []


def test_criteria_keep_names_descriptions_and_weights() -> None:
    rubric = load("essay_feedback.json").rubrics[0]
    assert [(c.id, c.name) for c in rubric.criteria] == [
        ("actionability", "Actionability"),
        ("accuracy", "Accuracy"),
        ("encouragement", "Encouragement"),
    ]
    weights = [c.weight for c in rubric.criteria]
    assert weights == [0.5, 0.3333333, 0.1666667]
    assert abs(sum(weights) - 1) <= 1e-6
    assert rubric.criteria[1].description == "Historical claims in the feedback are correct"
    # OpenRubricRL's judge scores every criterion on the rubric's scale
    assert all(c.scoring.method == "llm_score" for c in rubric.criteria)
    assert all(
        (c.scoring.config["min_score"], c.scoring.config["max_score"])
        == (rubric.scale.min, rubric.scale.max)
        for c in rubric.criteria
    )


def test_examples_keep_grade_scores_and_explanations() -> None:
    criterion = load("essay_feedback.json").rubrics[0].criteria[0]
    assert [(e.label, e.score) for e in criterion.examples] == [("excellent", 4.8), ("poor", 1.2)]
    excellent, poor = criterion.examples
    assert excellent.input == "Essay on the causes of the 1848 revolutions"
    assert excellent.output.startswith("Your second paragraph")
    assert excellent.explanation == "Specific, points at a paragraph, names the missing evidence"
    assert poor.input is None and poor.explanation is None
    assert poor.output == "Good effort, needs more work."


def test_subcriteria_are_kept() -> None:
    rubric = load("essay_feedback.json").rubrics[0]
    actionability, accuracy, encouragement = rubric.criteria
    assert [(s.name, s.description) for s in actionability.subcriteria] == [
        ("specificity", "Refers to concrete passages"),
        ("next steps", "Ends with a prioritised to-do list"),
    ]
    assert [(s.name, s.description) for s in accuracy.subcriteria] == [("dates", "")]
    assert encouragement.subcriteria == ()


def test_hybrid_metrics_become_metric_criteria_and_scale_llm_weights() -> None:
    loaded = load("summarizer_hybrid.yaml")
    rubric = loaded.rubrics[0]
    assert [c.id for c in rubric.criteria] == [
        "faithfulness",
        "coverage",
        "concision",
        "bleu",
        "rouge-l",
    ]
    # LLM share = 1 - (0.3 + 0.2) = 0.5, so 0.4/0.3/0.3 become 0.2/0.15/0.15
    expected = [0.2, 0.15, 0.15, 0.3, 0.2]
    assert [c.weight for c in rubric.criteria] == pytest.approx(expected, abs=1e-12)
    assert sum(c.weight for c in rubric.criteria) == pytest.approx(1.0)
    bleu, rouge = rubric.criteria[3:]
    assert (bleu.scoring.method, bleu.scoring.metric, bleu.scoring.config) == (
        "metric",
        "bleu",
        {"max_order": 4},
    )
    assert rouge.name == "ROUGE-L"
    assert (rouge.scoring.metric, rouge.scoring.config) == ("rouge", {"variant": "rougeL"})
    assert rouge.description == "rouge metric"
    assert all(c.scoring.method == "llm_score" for c in rubric.criteria[:3])
    assert loaded.warnings == []


def test_yaml_timestamps_in_metadata_stay_text() -> None:
    metadata = load("summarizer_hybrid.yaml").rubrics[0].metadata
    assert metadata["created_at"] == "2024-03-05T10:00:00Z"
    assert metadata["updated"] == "2024-06-30"
    assert metadata["domain"] == "general"


def test_missing_scale_is_a_warning_and_zero_to_ten() -> None:
    loaded = load("loose_weights.yaml")
    scale = loaded.rubrics[0].scale
    assert (scale.min, scale.max, scale.type) == (0, 10, "continuous")
    warning = next(w for w in loaded.warnings if w.path == "scale")
    assert "no scale given" in warning.message and "0..10" in warning.message


def test_weights_not_summing_to_one_warn_but_load() -> None:
    loaded = load("loose_weights.yaml")
    assert [c.weight for c in loaded.rubrics[0].criteria] == [0.5, 0.4]
    warning = next(w for w in loaded.warnings if w.path == "criteria")
    assert "sum to 0.9" in warning.message
    assert sorted(warning_paths(loaded)) == ["criteria", "scale"]


def test_custom_metric_warns_and_takes_its_name_from_config() -> None:
    loaded = load("custom_metric.json")
    rubric = loaded.rubrics[0]
    readability, execution, exact = rubric.criteria
    assert execution.id == "execution_match"
    assert execution.scoring.metric == "sql_exec_match"
    assert execution.scoring.config == {"metric": "sql_exec_match", "timeout_s": 5}
    assert exact.scoring.metric == "accuracy" and exact.scoring.config == {}
    # metric weights 0.6 + 0.6 leave the LLM criteria no share
    assert readability.weight == 0.0
    assert (rubric.scale.min, rubric.scale.max, rubric.scale.type) == (0, 100, "continuous")
    custom = next(w for w in loaded.warnings if w.path == "hybrid_metrics[0]")
    assert "custom" in custom.message and "plugin" in custom.message
    over = next(w for w in loaded.warnings if w.path == "hybrid_metrics")
    assert "sum to 1.2" in over.message


BASE: dict[str, Any] = {
    "name": "Code Review",
    "version": "1.0.0",
    "domain": "code",
    "scale": {"min": 0, "max": 10},
    "criteria": [
        {"name": "correctness", "description": "Works", "weight": 0.6},
        {"name": "style", "description": "Readable", "weight": 0.4},
    ],
}


def with_change(change: Any) -> dict[str, Any]:
    document = copy.deepcopy(BASE)
    change(document)
    return document


@pytest.mark.parametrize(
    ("metric_weights", "llm_share"),
    [([0.1], 0.9), ([0.25, 0.25], 0.5), ([0.5, 0.5], 0.0)],
)
def test_llm_share_is_one_minus_metric_weights(
    metric_weights: list[float], llm_share: float
) -> None:
    document = with_change(
        lambda d: d.update(
            hybrid_metrics=[
                {"name": f"m{i}", "type": "rouge", "weight": w}
                for i, w in enumerate(metric_weights)
            ]
        )
    )
    rubric = load_document(document).rubrics[0]
    assert [c.weight for c in rubric.criteria[:2]] == pytest.approx(
        [0.6 * llm_share, 0.4 * llm_share]
    )
    assert [c.weight for c in rubric.criteria[2:]] == pytest.approx(metric_weights)


def test_base_document_loads_without_warnings() -> None:
    loaded = load_document(BASE)
    assert loaded.format == "openrubricrl"
    assert loaded.warnings == []
    assert loaded.rubrics[0].id == "code_review"


@pytest.mark.parametrize(
    ("change", "path", "words"),
    [
        (lambda d: d["criteria"][1].update(weight=1.5), "criteria[1].weight", "within 0..1"),
        (
            lambda d: d["criteria"][1].update(weight="most"),
            "criteria[1].weight",
            "expected a number",
        ),
        (lambda d: d["criteria"][0].pop("description"), "criteria[0].description", "missing"),
        (
            lambda d: d["criteria"][1].update(name="Correctness"),
            "criteria[1].name",
            "duplicate criterion id 'correctness'",
        ),
        (lambda d: d.pop("version"), "version", "missing"),
        (lambda d: d.update(version="1.0"), "version", "not semantic versioning"),
        (
            lambda d: d.update(scale={"min": 0, "max": 10, "type": "stepwise"}),
            "scale.type",
            "continuous or discrete",
        ),
        (lambda d: d.update(scale={"min": 5, "max": 1}), "scale.max", "greater than min"),
        (lambda d: d.update(metadata=["x"]), "metadata", "mapping"),
        (
            lambda d: d.update(hybrid_metrics=[{"name": "m", "type": "meteor", "weight": 0.1}]),
            "hybrid_metrics[0].type",
            "unknown metric type 'meteor'",
        ),
        (
            lambda d: d.update(hybrid_metrics=[{"name": "m", "type": "bleu", "weight": 2}]),
            "hybrid_metrics[0].weight",
            "within 0..1",
        ),
        (
            lambda d: d["criteria"][0].update(examples={"good": [{"input": "x", "score": 7}]}),
            "criteria[0].examples.good[0].output",
            "missing",
        ),
        (
            lambda d: d["criteria"][0].update(subcriteria=[{"description": "no name"}]),
            "criteria[0].subcriteria[0].name",
            "missing",
        ),
        (lambda d: d.update(criteria=[]), "criteria", "at least one criterion"),
    ],
)
def test_errors_are_reported_at_the_source_path(change: Any, path: str, words: str) -> None:
    with pytest.raises(RubricValidationError) as caught:
        load_document(with_change(change), format="openrubricrl")
    matching = [p for p in caught.value.problems if p.path == path]
    assert matching, [str(p) for p in caught.value.problems]
    assert words in matching[0].message


def test_yaml_text_with_timestamps_and_a_date_keeps_them_as_text() -> None:
    text = """
name: dated
version: 1.0.0
domain: general
scale: {min: 0, max: 10}
criteria:
  - {name: a, description: b, weight: 1}
metadata:
  created_at: 2024-01-01T00:00:00Z
  release: 2024-01-15
"""
    rubric = load_text(text).rubrics[0]
    assert rubric.metadata["created_at"] == "2024-01-01T00:00:00Z"
    assert rubric.metadata["release"] == "2024-01-15"
