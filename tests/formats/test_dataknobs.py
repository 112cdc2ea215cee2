"""dataknobs_bots import: single rubric and `{rubrics: [...]}` configs, levels, the three
scoring methods (deterministic, schema incl. schema_ref, llm_decode), meta function names,
and errors at source paths."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from rubricflow import RubricValidationError, load_document, load_file
from rubricflow.formats.dataknobs import META_FUNCTIONS
from rubricflow.formats.loader import LoadedFile

FOLDER = Path(__file__).resolve().parent.parent / "fixtures" / "formats" / "dataknobs"


def load(name: str) -> LoadedFile:
    loaded = load_file(FOLDER / name)
    assert loaded.format == "dataknobs"
    assert loaded.warnings == []
    return loaded


def test_single_rubric_keeps_its_fields() -> None:
    (rubric,) = load("lesson_plan.json").rubrics
    assert rubric.id == "lesson_plan_quality"
    assert rubric.name == "Lesson Plan Quality"
    assert rubric.description == "Checks generated lesson plans before teachers see them"
    assert rubric.version == "1.4.0"
    assert rubric.target_type == "lesson_plan"
    assert rubric.pass_threshold == 0.75
    assert rubric.metadata == {
        "author": "curriculum-team",
        "grade_band": "6-8",
        "imported_from": "dataknobs",
    }
    assert [(c.id, c.name, c.weight, c.required) for c in rubric.criteria] == [
        ("objectives", "Learning Objectives", 0.4, False),  # dataknobs' required never gates
        ("structure", "Structure", 0.2, False),
        ("differentiation", "Differentiation", 0.4, False),
    ]


def test_levels_keep_labels_descriptions_scores_and_indicators() -> None:
    objectives = load("lesson_plan.json").rubrics[0].criteria[0]
    assert objectives.kind == "levels"
    assert [(lv.id, lv.label, lv.score) for lv in objectives.levels] == [
        ("missing", "Missing", 0.0),
        ("vague", "Vague", 0.4),
        ("measurable", "Measurable", 1.0),
    ]
    assert objectives.levels[1].description == "Objectives are not measurable"
    assert objectives.levels[2].indicators == ("identify", "compare", "explain")


def test_deterministic_function_ref_is_kept_as_the_function_name() -> None:
    scoring = load("lesson_plan.json").rubrics[0].criteria[0].scoring
    assert scoring.method == "deterministic"
    assert scoring.function == "lessons.checks:objective_verbs"


def test_schema_ref_is_read_relative_to_the_file_at_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the ref is resolved against the rubric file, not the cwd
    scoring = load("lesson_plan.json").rubrics[0].criteria[1].scoring
    assert scoring.method == "schema"
    assert scoring.schema_ref == "schemas/lesson_plan.schema.json"
    expected = json.loads((FOLDER / "schemas" / "lesson_plan.schema.json").read_text())
    assert scoring.schema_ == expected


def test_llm_decode_maps_prompt_output_schema_and_model() -> None:
    scoring = load("lesson_plan.json").rubrics[0].criteria[2].scoring
    assert scoring.method == "llm_decode"
    assert scoring.template is not None
    assert scoring.template.startswith("Read this lesson plan:\n{{ plan.title }}")
    assert "{% for a in plan.activities %}" in scoring.template
    assert scoring.output_schema == {
        "type": "object",
        "properties": {"level_id": {"enum": ["none", "some", "full"]}},
        "required": ["level_id"],
    }
    assert scoring.model == "classifier-mini"


def test_config_with_several_rubrics() -> None:
    loaded = load("review_config.yaml")
    assert [(r.id, r.version, r.pass_threshold, r.target_type) for r in loaded.rubrics] == [
        ("flashcards", "0.3.1", 0.6, "flashcards"),
        ("rubric_lint", "1.0.0", 0.7, "rubric"),
    ]
    flashcards = loaded.rubrics[0]
    assert flashcards.metadata == {"created": "2024-02-11", "imported_from": "dataknobs"}
    count, shape = flashcards.criteria
    assert count.scoring.function == "cards.checks:count_cards"
    assert [lv.id for lv in count.levels] == ["too_few", "ok", "too_many"]
    assert shape.scoring.method == "schema"
    assert shape.scoring.schema_ == {
        "type": "array",
        "items": {"type": "object", "required": ["front", "back"]},
    }
    assert shape.scoring.schema_ref is None


def test_meta_rubric_function_refs_map_to_builtin_names() -> None:
    lint = load("review_config.yaml").rubrics[1]
    assert [c.scoring.function for c in lint.criteria] == [
        "meta.criteria_coverage",
        "meta.threshold_reasonableness",
    ]
    assert set(META_FUNCTIONS.values()) == {
        "meta.criteria_coverage",
        "meta.criteria_independence",
        "meta.weight_distribution",
        "meta.threshold_reasonableness",
        "meta.level_ordering",
    }


BASE: dict[str, Any] = {
    "id": "quiz",
    "name": "Quiz",
    "description": "Quiz content",
    "version": "1.0.0",
    "target_type": "content",
    "pass_threshold": 0.7,
    "criteria": [
        {
            "id": "count",
            "name": "Count",
            "description": "Enough questions",
            "weight": 0.5,
            "levels": [{"id": "fail", "score": 0.0}, {"id": "pass", "score": 1.0}],
            "scoring_method": {"type": "deterministic", "function_ref": "quiz:count"},
        },
        {
            "id": "clarity",
            "name": "Clarity",
            "description": "Clear wording",
            "weight": 0.5,
            "levels": [{"id": "unclear", "score": 0.0}, {"id": "clear", "score": 1.0}],
            "scoring_method": {"type": "llm_decode", "decode_prompt": "Rate {{ questions }}"},
        },
    ],
}


def with_change(change: Any, document: dict[str, Any] = BASE) -> dict[str, Any]:
    changed = copy.deepcopy(document)
    change(changed)
    return changed


def test_base_document_is_detected_and_loads() -> None:
    loaded = load_document(BASE)
    assert loaded.format == "dataknobs"
    assert [c.scoring.method for c in loaded.rubrics[0].criteria] == ["deterministic", "llm_decode"]


def test_unknown_fields_are_ignored_with_a_warning() -> None:
    def change(d: dict[str, Any]) -> None:
        d["owner"] = "x"
        d["criteria"][0]["wieght"] = 2

    loaded = load_document(with_change(change))
    assert sorted(w.path for w in loaded.warnings) == ["criteria[0].wieght", "owner"]


@pytest.mark.parametrize(
    ("change", "path", "words"),
    [
        (
            lambda d: d["criteria"][1]["scoring_method"].update(decode_prompt="{% if x %}open"),
            "criteria[1].scoring_method.decode_prompt",
            "Jinja2 template syntax error",
        ),
        (
            lambda d: d["criteria"][1]["scoring_method"].update(
                decode_output_schema={"type": "word"}
            ),
            "criteria[1].scoring_method.decode_output_schema",
            "not a valid JSON Schema",
        ),
        (
            lambda d: d["criteria"][0]["scoring_method"].pop("function_ref"),
            "criteria[0].scoring_method.function_ref",
            "missing",
        ),
        (
            lambda d: d["criteria"][0].update(
                scoring_method={"type": "schema", "schema": {"type": 4}}
            ),
            "criteria[0].scoring_method.schema",
            "not a valid JSON Schema",
        ),
        (
            lambda d: d["criteria"][0].update(scoring_method={"type": "schema"}),
            "criteria[0].scoring_method.schema",
            "needs `schema`",
        ),
        (
            lambda d: d["criteria"][0].update(
                scoring_method={"type": "schema", "schema_ref": "nope.json"}
            ),
            "criteria[0].scoring_method.schema_ref",
            "not read from a file",  # a document has no folder: its schema_ref reads nothing
        ),
        (
            lambda d: d["criteria"][0].update(scoring_method={"type": "magic"}),
            "criteria[0].scoring_method.type",
            "unknown scoring method 'magic'; use one of deterministic, schema, llm_decode",
        ),
        (
            lambda d: d["criteria"][0]["levels"][1].update(score=1.2),
            "criteria[0].levels[1].score",
            "less than or equal to 1",
        ),
        (
            lambda d: d["criteria"][0]["levels"][1].update(id="fail"),
            "criteria[0].levels[1].id",
            "duplicate level id 'fail'",
        ),
        (lambda d: d["criteria"][1].update(id="count"), "criteria[1].id", "duplicate criterion id"),
        (lambda d: d.update(version="1.0"), "version", "not semantic versioning"),
        (lambda d: d.update(pass_threshold=70), "pass_threshold", "less than or equal to 1"),
        (lambda d: d.update(criteria=[]), "criteria", "at least one criterion"),
        (lambda d: d.update(criteria={"id": "x"}), "criteria", "expected a list"),
        (lambda d: d.update(metadata=["tag"]), "metadata", "expected a mapping"),
    ],
)
def test_errors_name_the_source_path(change: Any, path: str, words: str) -> None:
    with pytest.raises(RubricValidationError) as caught:
        load_document(with_change(change), format="dataknobs")
    matching = [p.message for p in caught.value.problems if p.path == path]
    assert matching, [str(p) for p in caught.value.problems]
    assert words in matching[0]


def test_errors_in_a_config_carry_the_rubric_index() -> None:
    second = with_change(lambda d: d["criteria"][0].update(weight="half"))
    second["id"] = "quiz2"
    with pytest.raises(RubricValidationError) as caught:
        load_document({"rubrics": [BASE, second]})
    assert [p.path for p in caught.value.problems] == ["rubrics[1].criteria[0].weight"]


def test_config_with_the_same_rubric_version_twice_is_rejected() -> None:
    with pytest.raises(RubricValidationError) as caught:
        load_document({"rubrics": [BASE, BASE]}, format="dataknobs")
    (problem,) = caught.value.problems
    assert problem.path == "rubrics[1].id"
    assert "appears twice (also rubrics[0])" in problem.message
