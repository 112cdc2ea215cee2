"""The `schema` scorer: JSON content against a JSON Schema, inline or from a file next to the
rubric, with every violation as evidence."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rubricflow import RubricValidationError, load_rubric, parse_rubric
from rubricflow.engine import evaluate
from rubricflow.plugins import PluginRegistry
from rubricflow.results import Target

QUIZ_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["title", "questions"],
    "properties": {
        "title": {"type": "string"},
        "questions": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["q", "answer"],
                "properties": {"q": {"type": "string"}, "answer": {"type": "string"}},
            },
        },
    },
}

GOOD_QUIZ = {
    "title": "Capitals",
    "questions": [{"q": "France?", "answer": "Paris"}, {"q": "Peru?", "answer": "Lima"}],
}

BAD_QUIZ = {
    "title": 7,
    "questions": [
        {"q": "France?", "answer": "Paris"},
        {"q": "Peru?", "answer": "Lima"},
        {"q": "Chad?"},
        {"q": 4, "answer": "Oslo"},
    ],
}

BAD_QUIZ_EVIDENCE = {
    "$.title: 7 is not of type 'string'",
    "$.questions[2]: 'answer' is a required property",
    "$.questions[3].q: 4 is not of type 'string'",
}

LEVELS = [
    {"id": "broken", "score": 0.0},
    {"id": "usable", "score": 0.6},
    {"id": "valid", "score": 1.0},
]


def schema_rubric(*, levels: bool = False, schema: dict[str, Any] = QUIZ_SCHEMA) -> Any:
    criterion: dict[str, Any] = {"id": "shape", "scoring": {"method": "schema", "schema": schema}}
    if levels:
        criterion["levels"] = LEVELS
    return parse_rubric({"id": "quiz", "criteria": [criterion]})


async def test_valid_content_is_met(plugins: PluginRegistry) -> None:
    evaluation = await evaluate(schema_rubric(), Target(content=GOOD_QUIZ), plugins=plugins)

    result = evaluation.criteria[0]
    assert result.status == "scored"
    assert result.verdict == "MET"
    assert result.score == 1.0
    assert result.evidence == ()
    assert evaluation.verdict == "pass"


async def test_valid_content_is_the_highest_level(plugins: PluginRegistry) -> None:
    evaluation = await evaluate(
        schema_rubric(levels=True), Target(content=GOOD_QUIZ), plugins=plugins
    )

    result = evaluation.criteria[0]
    assert result.status == "scored"
    assert result.level == "valid"
    assert result.score == 1.0


async def test_invalid_content_is_unmet_with_every_violation_as_evidence(
    plugins: PluginRegistry,
) -> None:
    evaluation = await evaluate(schema_rubric(), Target(content=BAD_QUIZ), plugins=plugins)

    result = evaluation.criteria[0]
    assert result.status == "scored"
    assert result.verdict == "UNMET"
    assert result.score == 0.0
    assert set(result.evidence) == BAD_QUIZ_EVIDENCE
    assert len(result.evidence) == len(BAD_QUIZ_EVIDENCE)
    assert evaluation.verdict == "fail"


async def test_a_long_list_of_violations_is_kept_whole(plugins: PluginRegistry) -> None:
    many = {"title": "Many", "questions": [{"q": index} for index in range(120)]}
    evaluation = await evaluate(schema_rubric(), Target(content=many), plugins=plugins)

    evidence = evaluation.criteria[0].evidence
    missing = {f"$.questions[{i}]: 'answer' is a required property" for i in range(120)}
    wrong_type = {f"$.questions[{i}].q: {i} is not of type 'string'" for i in range(120)}
    assert set(evidence) == missing | wrong_type
    assert len(evidence) == 240


async def test_invalid_content_is_the_lowest_level_with_evidence(
    plugins: PluginRegistry,
) -> None:
    evaluation = await evaluate(
        schema_rubric(levels=True), Target(content=BAD_QUIZ), plugins=plugins
    )

    result = evaluation.criteria[0]
    assert result.status == "scored"
    assert result.level == "broken"
    assert result.score == 0.0
    assert set(result.evidence) == BAD_QUIZ_EVIDENCE


async def test_a_missing_required_key_at_the_root_is_reported_at_the_root(
    plugins: PluginRegistry,
) -> None:
    evaluation = await evaluate(
        schema_rubric(), Target(content={"title": "No questions"}), plugins=plugins
    )

    assert evaluation.criteria[0].evidence == ("$: 'questions' is a required property",)


@pytest.mark.parametrize(
    ("content", "verdict"),
    [(json.dumps(GOOD_QUIZ), "MET"), (json.dumps(BAD_QUIZ, indent=2), "UNMET")],
    ids=["valid", "invalid"],
)
async def test_content_given_as_a_json_string_is_parsed(
    plugins: PluginRegistry, content: str, verdict: str
) -> None:
    evaluation = await evaluate(schema_rubric(), content, plugins=plugins)

    result = evaluation.criteria[0]
    assert result.status == "scored"
    assert result.verdict == verdict
    if verdict == "UNMET":
        assert set(result.evidence) == BAD_QUIZ_EVIDENCE


async def test_text_that_is_not_json_fails_with_evidence_saying_so(
    plugins: PluginRegistry,
) -> None:
    evaluation = await evaluate(
        schema_rubric(), "Here is your quiz: 1) France? Paris", plugins=plugins
    )

    result = evaluation.criteria[0]
    assert result.status == "scored"
    assert result.verdict == "UNMET"
    assert len(result.evidence) == 1
    assert "not JSON" in result.evidence[0]
    assert evaluation.verdict == "fail"


async def test_schema_formats_are_checked(plugins: PluginRegistry) -> None:
    rubric = schema_rubric(
        schema={"type": "object", "properties": {"contact": {"type": "string", "format": "email"}}}
    )

    good = await evaluate(rubric, Target(content={"contact": "jane@example.com"}), plugins=plugins)
    bad = await evaluate(rubric, Target(content={"contact": "not an address"}), plugins=plugins)

    assert good.criteria[0].verdict == "MET"
    assert bad.criteria[0].verdict == "UNMET"
    assert bad.criteria[0].evidence[0].startswith("$.contact: ")


# --- schema_ref and load-time checks ---------------------------------------------------


def write_rubric(folder: Path, scoring: dict[str, Any]) -> Path:
    path = folder / "quiz.rubric.json"
    document = {"id": "quiz", "version": "1.0.0", "criteria": [{"id": "shape", "scoring": scoring}]}
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


async def test_schema_ref_is_read_relative_to_the_rubric_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plugins: PluginRegistry
) -> None:
    rubric_dir = tmp_path / "rubrics"
    (rubric_dir / "schemas").mkdir(parents=True)
    (rubric_dir / "schemas" / "quiz.schema.json").write_text(
        json.dumps(QUIZ_SCHEMA), encoding="utf-8"
    )
    path = write_rubric(rubric_dir, {"method": "schema", "schema_ref": "schemas/quiz.schema.json"})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)

    rubric = load_rubric(path, plugins=plugins)
    good = await evaluate(rubric, Target(content=GOOD_QUIZ), plugins=plugins)
    bad = await evaluate(rubric, Target(content=BAD_QUIZ), plugins=plugins)

    assert rubric.criteria[0].scoring.schema_ == QUIZ_SCHEMA
    assert good.verdict == "pass"
    assert bad.verdict == "fail"
    assert set(bad.criteria[0].evidence) == BAD_QUIZ_EVIDENCE


def test_a_missing_schema_ref_file_is_rejected_at_load_time(
    tmp_path: Path, plugins: PluginRegistry
) -> None:
    path = write_rubric(tmp_path, {"method": "schema", "schema_ref": "nowhere.schema.json"})

    with pytest.raises(RubricValidationError) as caught:
        load_rubric(path, plugins=plugins)

    assert [p.path for p in caught.value.problems] == ["criteria[0].scoring.schema_ref"]
    assert "nowhere.schema.json" in str(caught.value)


def test_an_invalid_inline_schema_is_rejected_at_load_time(
    tmp_path: Path, plugins: PluginRegistry
) -> None:
    path = write_rubric(tmp_path, {"method": "schema", "schema": {"type": "text"}})

    with pytest.raises(RubricValidationError) as caught:
        load_rubric(path, plugins=plugins)

    assert [p.path for p in caught.value.problems] == ["criteria[0].scoring.schema"]
    assert str(path) in str(caught.value)


def test_an_invalid_schema_behind_schema_ref_is_rejected_at_load_time(
    tmp_path: Path, plugins: PluginRegistry
) -> None:
    (tmp_path / "bad.schema.json").write_text(
        json.dumps({"type": "object", "required": "title"}), encoding="utf-8"
    )
    path = write_rubric(tmp_path, {"method": "schema", "schema_ref": "bad.schema.json"})

    with pytest.raises(RubricValidationError) as caught:
        load_rubric(path, plugins=plugins)

    assert [p.path for p in caught.value.problems] == ["criteria[0].scoring.schema"]
