"""The native format: what a native file loads into, bundles, schema_ref, dumping, and the
published JSON Schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from rubricflow import (
    Rubric,
    RubricValidationError,
    dump_rubric,
    load_document,
    load_file,
    parse_rubric,
)
from rubricflow.formats.loader import load_text
from rubricflow.formats.native import dump_rubrics
from rubricflow.schema import published_schema, rubric_json_schema

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "formats"
NATIVE = FIXTURES / "native"
RUBRIC_SUFFIXES = (".yaml", ".yml", ".json")


def rubric_files(folder: Path) -> list[Path]:
    """The rubric files of a fixture folder (schema files live in subfolders)."""
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in RUBRIC_SUFFIXES)


def raw(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    return json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)


def test_native_fixtures_exist() -> None:
    assert len(rubric_files(NATIVE)) >= 3


def test_full_native_rubric_loads_every_kind_of_criterion() -> None:
    loaded = load_file(NATIVE / "support_answer.yaml")
    assert loaded.format == "native"
    assert loaded.warnings == []
    (rubric,) = loaded.rubrics
    assert rubric.id == "support.answer-quality"
    assert rubric.name == "Support answer quality"
    assert rubric.version == "2.3.0-rc.1"
    assert rubric.target_type == "support_reply"
    assert rubric.pass_threshold == 0.75
    assert rubric.unscored_policy == "exclude"
    assert (rubric.scale.min, rubric.scale.max, rubric.scale.type) == (1, 5, "discrete")
    assert rubric.metadata == {
        "owner": "support-tooling",
        "reviewed": "2024-05-02",
        "tags": ["support", "english"],
    }
    ids = [c.id for c in rubric.criteria]
    assert ids == [
        "resolves_issue",
        "tone",
        "clarity",
        "leaks_internal_data",
        "structured_payload",
        "policy_category",
        "bleu_vs_reference",
    ]
    resolves, tone, clarity, leaks, payload, policy, bleu = rubric.criteria

    assert resolves.kind == "levels" and resolves.required and resolves.weight == 3
    assert resolves.section == "Substance"
    assert [(lv.id, lv.label, lv.score) for lv in resolves.levels] == [
        ("no", "Does not resolve", 0.0),
        ("partly", "Partly resolves", 0.5),
        ("fully", "Fully resolves", 1.0),
    ]
    assert resolves.levels[2].indicators == ("Gives working steps", "Confirms the fix")
    assert resolves.examples[0].level == "fully"
    assert resolves.examples[0].input == "My invoice shows the wrong VAT number."

    assert tone.kind == "bands" and tone.name == "tone"
    assert [(b.min, b.max) for b in tone.score_ranges] == [(0, 3), (4, 6), (7, 9), (10, 10)]
    assert [s.name for s in tone.subcriteria] == ["greeting", "closing"]
    assert tone.subcriteria[1].description == ""

    assert clarity.scoring.method == "llm_score" and clarity.scoring.model == "judge-small"
    assert [(b.min, b.max, b.description) for b in clarity.score_ranges] == [
        (0, 5, "Hard to follow"),
        (6, 10, "Easy to follow"),
    ]

    assert leaks.weight == -2 and leaks.kind == "binary"
    assert leaks.scoring.method == "deterministic"
    assert leaks.scoring.function == "regex.internal_ids"
    assert leaks.scoring.config == {"patterns": ["TCK-\\d+", "@corp\\.example"]}

    assert payload.min_score == 1.0
    assert payload.scoring.schema_ref == "schemas/reply.schema.json"
    assert payload.scoring.schema_ == raw(NATIVE / "schemas" / "reply.schema.json")

    assert policy.scoring.method == "llm_decode"
    assert policy.scoring.template is not None and "{{ content }}" in policy.scoring.template
    assert policy.scoring.output_schema == {"type": "object", "required": ["level_id"]}

    assert bleu.scoring.method == "metric" and bleu.scoring.metric == "bleu"
    assert bleu.scoring.config == {"n": 4}


def test_bundle_holds_several_versions_of_a_rubric_in_order() -> None:
    loaded = load_file(NATIVE / "release_notes_bundle.json")
    assert loaded.format == "native"
    assert [(r.id, r.version) for r in loaded.rubrics] == [
        ("release-notes", "1.0.0"),
        ("release-notes", "1.1.0"),
    ]
    first, second = loaded.rubrics
    assert first.pass_threshold == 0.7 and second.pass_threshold == 0.8
    assert [c.weight for c in first.criteria] == [2.0, 1.0, -0.5]
    assert second.metadata == {"supersedes": "1.0.0"}


def test_minimal_rubric_gets_the_defaults() -> None:
    rubric = load_file(NATIVE / "minimal.yml").rubrics[0]
    assert rubric.to_dict() == {
        "id": "haiku",
        "name": "haiku",
        "criteria": [{"id": "three_lines", "name": "three_lines"}],
    }
    assert rubric.version == "1.0.0" and rubric.scale.max == 1.0


def test_bundle_with_the_same_rubric_version_twice_is_rejected() -> None:
    document = {"rubrics": [{"id": "a", "criteria": [{"id": "x"}]}] * 2}
    with pytest.raises(RubricValidationError) as caught:
        load_document(document, format="native")
    (problem,) = caught.value.problems
    assert problem.path == "rubrics[1].id"
    assert "appears twice (also rubrics[0])" in problem.message
    assert "bump its version" in problem.message


def test_problems_in_a_bundle_carry_the_rubric_index() -> None:
    document = {
        "rubrics": [
            {"id": "a", "criteria": [{"id": "x"}]},
            {"id": "b", "criteria": [{"id": "x", "weight": "lots"}, {"id": "x"}]},
        ]
    }
    with pytest.raises(RubricValidationError) as caught:
        load_document(document)
    paths = {p.path for p in caught.value.problems}
    assert "rubrics[1].criteria[0].weight" in paths


def test_bundle_fields_other_than_rubrics_are_rejected() -> None:
    document = {
        "$schema": "https://rubricflow.dev/schema/rubric.schema.json",
        "rubrics": [{"id": "a", "criteria": [{"id": "x"}]}],
    }
    assert load_document(document).format == "native"
    with pytest.raises(RubricValidationError) as caught:
        load_document({**document, "version": "2.0.0"}, format="native")
    (problem,) = caught.value.problems
    assert problem.path == "version"
    assert "unknown field next to `rubrics`" in problem.message


def test_empty_bundle_is_rejected() -> None:
    with pytest.raises(RubricValidationError) as caught:
        load_document({"rubrics": []}, format="native")
    assert caught.value.problems[0].path == "rubrics"
    assert "non-empty list of rubrics" in caught.value.problems[0].message


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_schema_ref_is_read_relative_to_the_rubric_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "rubrics" / "shapes" / "out.yaml", "type: object\nrequired: [answer]\n")
    rubric_file = write(
        tmp_path / "rubrics" / "r.yaml",
        "id: r\ncriteria:\n  - id: shape\n"
        "    scoring: {method: schema, schema_ref: shapes/out.yaml}\n",
    )
    monkeypatch.chdir(tmp_path)  # not the rubric's folder
    scoring = load_file(rubric_file).rubrics[0].criteria[0].scoring
    assert scoring.schema_ == {"type": "object", "required": ["answer"]}
    assert scoring.schema_ref == "shapes/out.yaml"


def test_missing_schema_ref_file_is_reported_at_the_ref(tmp_path: Path) -> None:
    rubric_file = write(
        tmp_path / "r.yaml",
        "id: r\ncriteria:\n  - id: a\n  - id: shape\n"
        "    scoring: {method: schema, schema_ref: nope.json}\n",
    )
    with pytest.raises(RubricValidationError) as caught:
        load_file(rubric_file)
    (problem,) = caught.value.problems
    assert problem.path == "criteria[1].scoring.schema_ref"
    assert "cannot read schema file" in problem.message
    assert "relative to the rubric file" in problem.message
    assert caught.value.source == str(rubric_file)


@pytest.mark.parametrize(
    ("name", "content", "words"),
    [
        ("list.yaml", "- a\n- b\n", "does not hold a JSON Schema object"),
        ("broken.json", "{oops", "not valid JSON/YAML"),
    ],
)
def test_schema_ref_file_that_is_not_a_schema_is_reported(
    tmp_path: Path, name: str, content: str, words: str
) -> None:
    write(tmp_path / name, content)
    rubric_file = write(
        tmp_path / "r.yaml",
        f"id: r\ncriteria:\n  - id: s\n    scoring: {{method: schema, schema_ref: {name}}}\n",
    )
    with pytest.raises(RubricValidationError) as caught:
        load_file(rubric_file)
    assert caught.value.problems[0].path == "criteria[0].scoring.schema_ref"
    assert words in caught.value.problems[0].message


def test_inline_schema_wins_over_schema_ref() -> None:
    document = {
        "id": "r",
        "criteria": [
            {
                "id": "s",
                "scoring": {
                    "method": "schema",
                    "schema": {"type": "array"},
                    "schema_ref": "missing.json",
                },
            }
        ],
    }
    scoring = load_document(document).rubrics[0].criteria[0].scoring
    assert scoring.schema_ == {"type": "array"}


# -- dumping -------------------------------------------------------------------------


def test_dump_rubric_writes_yaml_and_json_that_load_back() -> None:
    rubric = load_file(NATIVE / "support_answer.yaml").rubrics[0]
    as_yaml = dump_rubric(rubric)
    as_json = dump_rubric(rubric, "json")
    assert yaml.safe_load(as_yaml) == rubric.to_dict()
    assert json.loads(as_json) == rubric.to_dict()
    assert list(yaml.safe_load(as_yaml))[:3] == ["id", "name", "version"]  # field order kept
    assert load_text(as_yaml).rubrics == [rubric]
    assert load_text(as_json).rubrics == [rubric]


def test_dump_rubrics_writes_one_rubric_plainly_and_several_as_a_list() -> None:
    rubrics = load_file(NATIVE / "release_notes_bundle.json").rubrics
    assert "rubrics" not in yaml.safe_load(dump_rubrics(rubrics[:1]))
    several = json.loads(dump_rubrics(rubrics, "json"))
    assert [r.get("version", "1.0.0") for r in several["rubrics"]] == ["1.0.0", "1.1.0"]
    assert load_text(dump_rubrics(rubrics)).rubrics == rubrics


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_text_with_yaml_line_breaks_and_control_characters_survives_a_dump(fmt: str) -> None:
    """PyYAML writes NEL/LS/PS raw (a reader folds them into spaces) and rejects DEL; JSON
    output is also read by YAML readers, so both dumps must escape them."""
    tricky = "a\x85b\u2028c\u2029d\x7fe\x9ff\ttab é"
    rubric = parse_rubric({"id": "r", "description": tricky, "criteria": [{"id": "c"}]})
    text = dump_rubric(rubric, fmt)
    assert yaml.safe_load(text)["description"] == tricky
    assert load_text(text).rubrics == [rubric]


def test_load_text_reads_json_as_json() -> None:
    """A YAML 1.1 reader takes JSON's `1e-06` for text; JSON text is read as JSON."""
    text = '{"id": "r", "criteria": [{"id": "c", "weight": 1e-06}], "metadata": {"x": 2E+3}}'
    rubric = load_text(text).rubrics[0]
    assert rubric.criteria[0].weight == 1e-06
    assert rubric.metadata == {"x": 2000.0}
    assert load_text("{id: r, criteria: [{id: c}]}").rubrics[0].id == "r"  # YAML flow style


def test_to_dict_leaves_defaults_out() -> None:
    rubric = parse_rubric(
        {
            "id": "r",
            "version": "1.0.0",
            "pass_threshold": 0.7,
            "criteria": [{"id": "c", "weight": 1.0, "required": False}],
        }
    )
    assert rubric.to_dict() == {"id": "r", "name": "r", "criteria": [{"id": "c", "name": "c"}]}


# -- the published JSON Schema -------------------------------------------------------


def test_published_schema_is_the_one_the_model_generates() -> None:
    """Fails when the model changes and `rubricflow/schema/rubric.schema.json` was not
    regenerated (`rubricflow schema > rubricflow/schema/rubric.schema.json`)."""
    assert published_schema() == rubric_json_schema()


def test_published_schema_is_a_valid_draft_2020_12_schema() -> None:
    schema = published_schema()
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == "https://rubricflow.dev/schema/rubric.schema.json"
    assert "criteria" in schema["required"] and "id" in schema["required"]


@pytest.mark.parametrize("path", rubric_files(NATIVE), ids=lambda p: p.name)
def test_every_native_fixture_validates_against_the_published_schema(path: Path) -> None:
    validator = Draft202012Validator(published_schema())
    document = raw(path)
    rubrics = document.get("rubrics", [document])
    for rubric in rubrics:
        errors = sorted(validator.iter_errors(rubric), key=str)
        assert not errors, [e.message for e in errors]


def test_every_imported_rubric_dumps_to_a_schema_valid_document() -> None:
    validator = Draft202012Validator(published_schema())
    count = 0
    for folder in sorted(p for p in FIXTURES.iterdir() if p.is_dir()):
        for path in rubric_files(folder):
            for rubric in load_file(path).rubrics:
                errors = [e.message for e in validator.iter_errors(rubric.to_dict())]
                assert not errors, (path.name, rubric.id, errors)
                count += 1
    assert count >= 20


@pytest.mark.parametrize(
    "document",
    [
        {"id": "r", "criteria": [{"id": "c", "wieght": 1}]},
        {"id": "r", "criteria": []},
        {"criteria": [{"id": "c"}]},
        {
            "id": "r",
            "criteria": [{"id": "c", "levels": [{"id": "x", "score": 2}, {"id": "y", "score": 0}]}],
        },
    ],
)
def test_published_schema_rejects_what_the_model_rejects(document: dict[str, Any]) -> None:
    assert list(Draft202012Validator(published_schema()).iter_errors(document))
    with pytest.raises(RubricValidationError):
        parse_rubric(document)


def test_public_api_is_importable_from_the_package() -> None:
    import rubricflow

    for name in (
        "load_file",
        "load_document",
        "parse_rubric",
        "dump_rubric",
        "Rubric",
        "RubricValidationError",
    ):
        assert hasattr(rubricflow, name), name
    assert isinstance(parse_rubric({"id": "r", "criteria": [{"id": "c"}]}), Rubric)
