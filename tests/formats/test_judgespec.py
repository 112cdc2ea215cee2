"""RubricJudgeSpec import: one holistic `llm_score` criterion on a min..max scale, with the
prompt parts kept verbatim and the documented defaults when they are absent."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from rubricflow import RubricValidationError, load_document, load_file
from rubricflow.formats.judgespec import DEFAULT_POSTSCRIPT, DEFAULT_PRESCRIPT
from rubricflow.formats.loader import LoadedFile

FOLDER = Path(__file__).resolve().parent.parent / "fixtures" / "formats" / "rubricjudgespec"


def load(name: str) -> LoadedFile:
    loaded = load_file(FOLDER / name)
    assert loaded.format == "rubricjudgespec"
    assert loaded.warnings == []
    return loaded


def test_spec_becomes_one_llm_score_criterion_named_judgement() -> None:
    (rubric,) = load("recipe_helpfulness.json").rubrics
    assert rubric.id == "recipe_helpfulness"
    assert rubric.version == "1.0.0"
    assert rubric.description == "Judge whether the recipe answer is usable in a home kitchen."
    assert rubric.metadata == {"imported_from": "rubricjudgespec"}
    assert (rubric.scale.min, rubric.scale.max, rubric.scale.type) == (0, 10, "continuous")
    (criterion,) = rubric.criteria
    assert criterion.id == "judgement"
    assert criterion.kind == "binary"
    assert criterion.description.startswith("Judge whether the recipe answer")
    assert criterion.description.endswith("complete quantities, times and temperatures")
    assert criterion.scoring.method == "llm_score"
    assert criterion.scoring.model == "openai/gpt-4o-mini"


def test_prompt_parts_and_placeholders_are_kept_verbatim() -> None:
    config = load("recipe_helpfulness.json").rubrics[0].criteria[0].scoring.config
    assert config["prescript"] == (
        "You grade recipe answers from ${min_score} to ${max_score}. Dietary context: ${diet}.\n"
    )
    assert config["postscript"] == (
        "Answer under review:\n${content}\n\n"
        "Give <rationale>...</rationale> then <score>...</score>."
    )
    assert (config["min_score"], config["max_score"]) == (0, 10)
    assert config["response_format"] == "tags"
    assert config["extract_variables"]["extraction_fields"][0]["name"] == "diet"
    assert config["extract_judgement"]["extraction_fields"][0]["extraction_pattern"] == (
        "<score>(.*?)</score>"
    )


def test_absent_prescript_and_postscript_get_the_documented_defaults() -> None:
    rubric = load("tutor_tone.yaml").rubrics[0]
    assert rubric.id == "tutor_tone"
    assert (rubric.scale.min, rubric.scale.max) == (1, 4)
    config = rubric.criteria[0].scoring.config
    assert config["prescript"] == DEFAULT_PRESCRIPT
    assert config["postscript"] == DEFAULT_POSTSCRIPT
    for placeholder in ("${min_score}", "${max_score}"):
        assert placeholder in DEFAULT_PRESCRIPT
    assert "${content}" in DEFAULT_POSTSCRIPT
    assert "<score>...</score>" in DEFAULT_POSTSCRIPT
    assert "extract_variables" not in config
    assert rubric.criteria[0].scoring.model == "anthropic/claude-3-haiku"


BASE: dict[str, Any] = {
    "model_type": "rubric_judge",
    "rubric": "Is the answer kind?",
    "model": "judge",
    "min_score": 1,
    "max_score": 5,
}


def test_document_without_a_file_gets_a_generic_id_and_detection_without_model_type() -> None:
    spec = {key: value for key, value in BASE.items() if key != "model_type"}
    loaded = load_document(spec)
    assert loaded.format == "rubricjudgespec"
    assert loaded.rubrics[0].id == "rubric-judge"


def test_postscript_without_content_placeholder_warns() -> None:
    loaded = load_document({**BASE, "postscript": "Score it from ${min_score} to ${max_score}."})
    assert [w.path for w in loaded.warnings] == ["postscript"]
    assert "${content}" in loaded.warnings[0].message


def test_content_in_the_prescript_is_enough() -> None:
    loaded = load_document({**BASE, "prescript": "Judge ${content}", "postscript": "Now score."})
    assert loaded.warnings == []


@pytest.mark.parametrize(
    ("change", "path", "words"),
    [
        (lambda d: d.update(model_type="classifier"), "model_type", "must be rubric_judge"),
        (lambda d: d.update(rubric="   "), "rubric", "empty"),
        (lambda d: d.pop("rubric"), "rubric", "missing"),
        (lambda d: d.pop("model"), "model", "missing"),
        (lambda d: d.update(max_score=1), "max_score", "must be greater than min_score"),
        (lambda d: d.update(min_score="low"), "min_score", "expected a number"),
        (lambda d: d.update(max_score=float("nan")), "max_score", "finite number"),
        (lambda d: d.update(extract_judgement="regex"), "extract_judgement", "expected a mapping"),
        (lambda d: d.update(prescript=["a"]), "prescript", "expected text"),
    ],
)
def test_errors_name_the_source_field(change: Any, path: str, words: str) -> None:
    document = copy.deepcopy(BASE)
    change(document)
    with pytest.raises(RubricValidationError) as caught:
        load_document(document, format="rubricjudgespec")
    matching = [p.message for p in caught.value.problems if p.path == path]
    assert matching, [str(p) for p in caught.value.problems]
    assert words in matching[0]
