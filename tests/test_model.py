"""The rubric model: every rule break is reported at its field path with a fix, hashes are
stable, values are frozen, versions sort as semver, and scales map scores."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from rubricflow import (
    Criterion,
    Problem,
    Rubric,
    RubricValidationError,
    Scale,
    ScoreRange,
    load_file,
    parse_rubric,
)
from rubricflow.model import semver_key


def rubric_doc(*criteria: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """A native rubric document; criteria default to three plain binary ones."""
    items = list(criteria) or [{"id": "a"}, {"id": "b"}, {"id": "c"}]
    return {"id": "answer-quality", "criteria": items, **fields}


def problems(document: Any) -> tuple[Problem, ...]:
    with pytest.raises(RubricValidationError) as caught:
        parse_rubric(document)
    assert caught.value.problems, "a rejection must name at least one problem"
    return caught.value.problems


def problem_at(document: Any, path: str) -> Problem:
    found = problems(document)
    matching = [p for p in found if p.path == path]
    assert matching, f"no problem at {path!r}; got {[str(p) for p in found]}"
    return matching[0]


LEVELS = [{"id": "low", "score": 0.0}, {"id": "mid", "score": 0.5}, {"id": "high", "score": 1.0}]


# -- ids -----------------------------------------------------------------------------


def test_duplicate_criterion_id_is_reported_at_the_second_occurrence() -> None:
    doc = rubric_doc({"id": "tone"}, {"id": "facts"}, {"id": "tone"})
    problem = problem_at(doc, "criteria[2].id")
    assert "duplicate criterion id 'tone'" in problem.message
    assert "also criteria[0]" in problem.message
    assert "give every criterion its own id" in problem.message


def test_duplicate_level_id_is_reported_with_criterion_and_level_index() -> None:
    levels = [{"id": "pass", "score": 1.0}, {"id": "pass", "score": 0.0}]
    doc = rubric_doc({"id": "a"}, {"id": "b", "levels": levels})
    problem = problem_at(doc, "criteria[1].levels[1].id")
    assert "duplicate level id 'pass'" in problem.message
    assert "give every level of a criterion its own id" in problem.message


@pytest.mark.parametrize("bad_id", ["r r", "-leading-dash", "tab\tid", "émoji✓"])
def test_ids_with_other_characters_are_rejected_with_the_allowed_set(bad_id: str) -> None:
    problem = problem_at(rubric_doc({"id": bad_id}), "criteria[0].id")
    assert "letters, digits and _ . : / -" in problem.message


def test_yaml_boolean_id_gets_a_quoting_hint() -> None:
    levels = [{"id": False, "score": 0.0}, {"id": "yes_", "score": 1.0}]
    problem = problem_at(rubric_doc({"id": "a", "levels": levels}), "criteria[0].levels[0].id")
    assert "expected text" in problem.message
    assert "quote it" in problem.message


# -- score bands ---------------------------------------------------------------------


def band_criterion(bands: Any) -> dict[str, Any]:
    return {"id": "accuracy", "score_ranges": bands}


@pytest.mark.parametrize(
    ("bands", "words"),
    [
        ({3: "partial", 10: "perfect"}, "nothing covers 0-2"),
        ({"2": "partial", "10": "perfect"}, "nothing covers 0-1"),
        (
            [{"min": 0, "max": 5, "description": "low"}, {"min": 5, "max": 10}],
            "bands 0-5 and 5-10 overlap",
        ),
        (
            [{"min": 0, "max": 6}, {"min": 3, "max": 8}, {"min": 9, "max": 10}],
            "bands 0-6 and 3-8 overlap",
        ),
        ([{"min": 0, "max": 3}, {"min": 5, "max": 10}], "nothing covers 4-4"),
        ([{"min": 0, "max": 3}, {"min": 4, "max": 8}], "nothing covers 9-10"),
        ([{"min": 1, "max": 10}], "nothing covers 0-0"),
    ],
)
def test_bands_that_overlap_or_leave_a_gap_are_rejected(bands: Any, words: str) -> None:
    doc = rubric_doc({"id": "a"}, {"id": "b"}, band_criterion(bands))
    problem = problem_at(doc, "criteria[2].score_ranges")
    assert words in problem.message
    assert any(fix in problem.message for fix in ("start", "must", "cover"))


@pytest.mark.parametrize(
    ("key", "words"),
    [("low", "is not a number"), ("2.5", "must be a whole number from 0 to 10"), (11, "0 to 10")],
)
def test_shorthand_keys_must_be_whole_numbers_in_range(key: Any, words: str) -> None:
    doc = rubric_doc(band_criterion({0: "none", key: "some"}))
    found = problems(doc)
    assert any(p.path.startswith("criteria[0].score_ranges") and words in p.message for p in found)


def test_shorthand_key_repeated_as_number_and_text_is_rejected() -> None:
    found = problems(rubric_doc(band_criterion({0: "none", 3: "a", "3": "b"})))
    assert any("repeats lower bound 3" in p.message for p in found)


def test_band_that_ends_before_it_starts_says_to_swap() -> None:
    doc = rubric_doc(band_criterion([{"min": 0, "max": 4}, {"min": 10, "max": 5}]))
    problem = problem_at(doc, "criteria[0].score_ranges[1]")
    assert "swap min and max" in problem.message


def test_shorthand_map_keys_are_lower_bounds() -> None:
    bands = {"0": "wrong", "3": "major errors", "5": "minor issues", "7": "omissions", "10": "ok"}
    rubric = parse_rubric(rubric_doc(band_criterion(bands)))
    criterion = rubric.criteria[0]
    assert criterion.kind == "bands"
    assert [(b.min, b.max, b.description) for b in criterion.score_ranges] == [
        (0, 2, "wrong"),
        (3, 4, "major errors"),
        (5, 6, "minor issues"),
        (7, 9, "omissions"),
        (10, 10, "ok"),
    ]


def test_explicit_band_list_is_kept_in_order_given() -> None:
    bands = [{"min": 6, "max": 10, "description": "good"}, {"min": 0, "max": 5}]
    criterion = parse_rubric(rubric_doc(band_criterion(bands))).criteria[0]
    assert criterion.score_ranges == (
        ScoreRange(min=6, max=10, description="good"),
        ScoreRange(min=0, max=5),
    )


def test_band_bounds_outside_0_to_10_are_rejected() -> None:
    doc = rubric_doc(band_criterion([{"min": 0, "max": 12}]))
    problem = problem_at(doc, "criteria[0].score_ranges[0].max")
    assert "less than or equal to 10" in problem.message


# -- levels, scoring and other rules -------------------------------------------------


@pytest.mark.parametrize("score", [1.5, -0.1])
def test_level_score_outside_0_to_1_is_rejected(score: float) -> None:
    levels = [{"id": "fail", "score": 0.0}, {"id": "pass", "score": score}]
    problem = problem_at(rubric_doc({"id": "a", "levels": levels}), "criteria[0].levels[1].score")
    assert "equal to" in problem.message
    assert repr(score) in problem.message


def test_a_single_level_is_rejected() -> None:
    doc = rubric_doc({"id": "a", "levels": [{"id": "only", "score": 1.0}]})
    problem = problem_at(doc, "criteria[0].levels")
    assert "at least two levels" in problem.message


def test_levels_and_score_ranges_together_are_rejected() -> None:
    doc = rubric_doc({"id": "a", "levels": LEVELS, "score_ranges": {0: "bad", 5: "good"}})
    problem = problem_at(doc, "criteria[0].score_ranges")
    assert "not both; remove one" in problem.message


@pytest.mark.parametrize("version", ["1.0", "v1.0.0", "1.0.0.0", "01.2.3", "1.0.0-", "latest"])
def test_non_semver_version_is_rejected(version: str) -> None:
    problem = problem_at(rubric_doc(version=version), "version")
    assert f"version {version!r} is not semantic versioning" in problem.message
    assert "MAJOR.MINOR.PATCH" in problem.message


@pytest.mark.parametrize("version", ["0.0.1", "1.2.3-rc.1", "2.0.0+build.7", "1.0.0-alpha-1.x"])
def test_semver_versions_are_accepted(version: str) -> None:
    assert parse_rubric(rubric_doc(version=version)).version == version


def test_empty_criteria_list_is_rejected() -> None:
    problem = problem_at({"id": "r", "criteria": []}, "criteria")
    assert problem.message == "needs at least one criterion; add one under `criteria`"


def test_missing_criteria_is_reported_as_missing() -> None:
    problem = problem_at({"id": "r"}, "criteria")
    assert problem.message == "required field is missing; add it"


@pytest.mark.parametrize(
    ("document", "path"),
    [
        (rubric_doc(treshold=0.5), "treshold"),
        (rubric_doc({"id": "a", "wieght": 2}), "criteria[0].wieght"),
        (
            rubric_doc({"id": "a", "levels": [*LEVELS[:2], {**LEVELS[2], "points": 3}]}),
            "criteria[0].levels[2].points",
        ),
        (
            rubric_doc({"id": "a", "scoring": {"method": "llm", "temperature": 0}}),
            "criteria[0].scoring.temperature",
        ),
    ],
)
def test_unknown_fields_are_rejected_at_their_path(document: dict[str, Any], path: str) -> None:
    problem = problem_at(document, path)
    assert problem.message == "unknown field; remove it or check its spelling"


def test_invalid_inline_json_schema_is_rejected() -> None:
    scoring = {
        "method": "schema",
        "schema": {"type": "object", "properties": {"n": {"type": "nope"}}},
    }
    problem = problem_at(
        rubric_doc({"id": "a"}, {"id": "s", "scoring": scoring}), "criteria[1].scoring.schema"
    )
    assert "not a valid JSON Schema" in problem.message
    assert "properties/n/type" in problem.message
    assert "fix the schema" in problem.message


def test_invalid_output_schema_is_rejected() -> None:
    scoring = {"method": "llm_decode", "output_schema": {"required": "level_id"}}
    problem = problem_at(
        rubric_doc({"id": "a", "scoring": scoring}), "criteria[0].scoring.output_schema"
    )
    assert "not a valid JSON Schema" in problem.message


def test_non_text_dialect_in_schema_is_rejected() -> None:
    scoring = {"method": "schema", "schema": {"$schema": 7, "type": "object"}}
    problem = problem_at(
        rubric_doc({"id": "a", "scoring": scoring}), "criteria[0].scoring.schema.$schema"
    )
    assert "URI of a JSON Schema dialect" in problem.message


def test_jinja_syntax_error_in_template_is_rejected() -> None:
    scoring = {"method": "llm_decode", "template": "Grade:\n{% for q in questions %}{{ q }}"}
    problem = problem_at(
        rubric_doc({"id": "a", "scoring": scoring}), "criteria[0].scoring.template"
    )
    assert "Jinja2 template syntax error at template line 2" in problem.message
    assert "fix the template" in problem.message


def test_deterministic_method_without_function_is_rejected() -> None:
    doc = rubric_doc({"id": "a"}, {"id": "b", "scoring": {"method": "deterministic"}})
    problem = problem_at(doc, "criteria[1].scoring.function")
    assert "the deterministic method needs `function`" in problem.message


@pytest.mark.parametrize(
    ("scoring", "path", "words"),
    [
        ({"method": "schema"}, "criteria[0].scoring.schema", "needs `schema`"),
        ({"method": "metric"}, "criteria[0].scoring.metric", "metric name such as bleu"),
    ],
)
def test_methods_missing_their_options_are_rejected(
    scoring: dict[str, Any], path: str, words: str
) -> None:
    assert words in problem_at(rubric_doc({"id": "a", "scoring": scoring}), path).message


def test_example_naming_an_unknown_level_is_rejected() -> None:
    criterion = {"id": "a", "levels": LEVELS, "examples": [{"output": "x", "level": "great"}]}
    problem = problem_at(rubric_doc(criterion), "criteria[0].examples[0].level")
    assert "'great' is not a level" in problem.message
    assert "low, mid, high" in problem.message


@pytest.mark.parametrize(
    ("document", "path", "words"),
    [
        (rubric_doc(pass_threshold=1.2), "pass_threshold", "less than or equal to 1"),
        (
            rubric_doc({"id": "a", "min_score": -1}),
            "criteria[0].min_score",
            "greater than or equal to 0",
        ),
        (
            rubric_doc({"id": "a", "weight": "heavy"}),
            "criteria[0].weight",
            "expected a number (got 'heavy')",
        ),
        (rubric_doc({"id": "a", "weight": float("nan")}), "criteria[0].weight", "finite number"),
        (rubric_doc(scale={"min": 5, "max": 5}), "scale.max", "must be greater than min"),
        (rubric_doc(metadata={"ratio": float("inf")}), "metadata.ratio", "not a finite number"),
        (rubric_doc({"id": ""}), "criteria[0].id", "must not be empty"),
        (
            rubric_doc(unscored_policy="skip"),
            "unscored_policy",
            "'fail_closed', 'exclude' or 'count_as_zero'",
        ),
    ],
)
def test_out_of_range_and_wrong_type_values_name_the_fix(
    document: dict[str, Any], path: str, words: str
) -> None:
    assert words in problem_at(document, path).message


def test_every_problem_in_a_document_is_reported() -> None:
    doc = {
        "id": "r",
        "version": "one",
        "pass_threshold": 2,
        "criteria": [{"id": "a", "weight": "x"}, {"id": "a"}],
    }
    paths = {p.path for p in problems(doc)}
    assert {"version", "pass_threshold", "criteria[0].weight"} <= paths


def test_a_document_that_is_not_a_mapping_is_rejected() -> None:
    found = problems(["id", "criteria"])
    assert "a rubric is a mapping of fields, got list" in found[0].message


def test_error_message_lists_each_problem_and_the_source() -> None:
    with pytest.raises(RubricValidationError) as caught:
        parse_rubric(rubric_doc({"id": "a"}, {"id": "a"}), source="rubrics/x.yaml")
    text = str(caught.value)
    assert text.startswith("rubrics/x.yaml: invalid rubric (1 problem):")
    assert "criteria[1].id: duplicate criterion id 'a'" in text


def test_schema_pointer_is_accepted_and_not_kept() -> None:
    doc = rubric_doc(**{"$schema": "https://rubricflow.dev/schema/rubric.schema.json"})
    rubric = parse_rubric(doc)
    assert "$schema" not in rubric.to_dict()
    assert rubric == parse_rubric(rubric_doc())


# -- defaults and derived values -------------------------------------------------------


def test_defaults_fill_names_labels_and_kinds() -> None:
    rubric = parse_rubric(
        rubric_doc(
            {"id": "tone"},
            {"id": "depth", "levels": LEVELS},
            {"id": "acc", "score_ranges": {0: "x"}},
        )
    )
    assert rubric.name == "answer-quality"
    assert rubric.version == "1.0.0"
    assert rubric.pass_threshold == 0.7
    assert rubric.unscored_policy == "fail_closed"
    assert [c.kind for c in rubric.criteria] == ["binary", "levels", "bands"]
    tone, depth, _ = rubric.criteria
    assert tone.name == "tone" and tone.weight == 1.0 and tone.required is False
    assert tone.scoring.method == "llm"
    assert [level.label for level in depth.levels] == ["low", "mid", "high"]
    assert depth.lowest_level is not None and depth.lowest_level.id == "low"
    assert depth.highest_level is not None and depth.highest_level.id == "high"
    assert depth.level("mid") is not None and depth.level("nope") is None
    assert rubric.criterion("depth") is depth and rubric.criterion("nope") is None


def test_negative_weights_are_penalty_criteria_not_errors() -> None:
    rubric = parse_rubric(rubric_doc({"id": "good", "weight": 2}, {"id": "leak", "weight": -1.5}))
    assert [c.weight for c in rubric.criteria] == [2.0, -1.5]


# -- content hash --------------------------------------------------------------------

HASHED = {
    "id": "summary",
    "version": "1.2.0",
    "pass_threshold": 0.8,
    "criteria": [
        {"id": "faithful", "weight": 2, "required": True, "levels": LEVELS},
        {"id": "brief", "score_ranges": {"0": "long", "6": "short"}},
    ],
    "metadata": {"team": "news", "tags": ["a", "b"]},
}


def reordered(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: reordered(value[key]) for key in reversed(list(value))}
    if isinstance(value, list):
        return [reordered(item) for item in value]
    return value


def test_content_hash_ignores_key_order() -> None:
    first = parse_rubric(HASHED)
    second = parse_rubric(reordered(HASHED))
    assert first == second
    assert first.content_hash == second.content_hash
    assert len(first.content_hash) == 64


def test_content_hash_is_the_same_from_yaml_and_json_files(tmp_path: Path) -> None:
    yaml_file = tmp_path / "summary.yaml"
    json_file = tmp_path / "summary.json"
    yaml_file.write_text(yaml.safe_dump(HASHED, sort_keys=True), encoding="utf-8")
    json_file.write_text(json.dumps(reordered(HASHED), indent=4), encoding="utf-8")
    from_yaml = load_file(yaml_file).rubrics[0]
    from_json = load_file(json_file).rubrics[0]
    assert from_yaml.content_hash == from_json.content_hash == parse_rubric(HASHED).content_hash


def test_content_hash_ignores_defaults_written_out() -> None:
    explicit = {
        **HASHED,
        "unscored_policy": "fail_closed",
        "description": "",
        "scale": {"min": 0, "max": 1},
    }
    assert parse_rubric(explicit).content_hash == parse_rubric(HASHED).content_hash


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d["criteria"][0].update(weight=2.5),
        lambda d: d["criteria"][0].update(required=False),
        lambda d: d["criteria"][0]["levels"][1].update(score=0.6),
        lambda d: d.update(pass_threshold=0.75),
        lambda d: d.update(version="1.2.1"),
        lambda d: d["metadata"]["tags"].append("c"),
        lambda d: d["criteria"].reverse(),
    ],
)
def test_content_hash_changes_when_content_changes(change: Any) -> None:
    changed = json.loads(json.dumps(HASHED))
    change(changed)
    assert parse_rubric(changed).content_hash != parse_rubric(HASHED).content_hash


def test_metadata_keys_become_text_so_dump_and_load_agree() -> None:
    rubric = parse_rubric(rubric_doc(metadata={"grades": {6: "six", True: "yes"}}))
    assert rubric.metadata == {"grades": {"6": "six", "true": "yes"}}
    assert parse_rubric(rubric.to_dict()) == rubric


# -- frozen values -------------------------------------------------------------------


def test_rubric_and_its_parts_cannot_be_changed() -> None:
    rubric = parse_rubric(HASHED)
    criterion = rubric.criteria[0]
    with pytest.raises(ValidationError, match="frozen"):
        rubric.pass_threshold = 0.1  # type: ignore[misc]
    with pytest.raises(ValidationError, match="frozen"):
        criterion.weight = 100  # type: ignore[misc]
    with pytest.raises(ValidationError, match="frozen"):
        criterion.levels[0].score = 1.0  # type: ignore[misc]
    with pytest.raises(ValidationError, match="frozen"):
        rubric.scale.max = 10  # type: ignore[misc]
    with pytest.raises(AttributeError):
        rubric.criteria.append(criterion)  # type: ignore[attr-defined]
    assert isinstance(rubric.criteria, tuple) and isinstance(criterion.levels, tuple)
    assert rubric.content_hash == parse_rubric(HASHED).content_hash


def test_mappings_inside_a_rubric_cannot_be_changed_and_the_hash_stays_true() -> None:
    rubric = parse_rubric(
        rubric_doc(
            {
                "id": "shape",
                "scoring": {
                    "method": "schema",
                    "schema": {"type": "object", "required": ["title"]},
                    "config": {"limits": {"max": 3}},
                },
            },
            metadata={"team": "news", "tags": ["a", {"b": 1}]},
        )
    )
    before = rubric.content_hash
    scoring = rubric.criteria[0].scoring
    changes = [
        lambda: rubric.metadata.__setitem__("team", "sport"),
        lambda: rubric.metadata.update(team="sport"),
        lambda: rubric.metadata.pop("team"),
        lambda: rubric.metadata["tags"].append("c"),
        lambda: rubric.metadata["tags"][1].__setitem__("b", 2),
        lambda: scoring.config["limits"].__setitem__("max", 9),
        lambda: scoring.schema_["required"].append("body"),  # type: ignore[index]
        lambda: scoring.schema_.clear(),  # type: ignore[union-attr]
    ]
    for change in changes:
        with pytest.raises(TypeError, match="cannot be changed in place"):
            change()
    assert rubric.to_dict()["metadata"] == {"team": "news", "tags": ["a", {"b": 1}]}
    assert rubric.content_hash == before == parse_rubric(rubric.to_dict()).content_hash
    # readers that expect plain JSON values still get them
    assert json.loads(json.dumps(rubric.metadata)) == {"team": "news", "tags": ["a", {"b": 1}]}
    assert isinstance(rubric.metadata, dict) and isinstance(rubric.metadata["tags"], list)


def test_a_changed_copy_is_validated_and_hashed_afresh() -> None:
    rubric = parse_rubric(HASHED)
    changed = rubric.model_copy(update={"metadata": {"team": "sport"}})
    assert changed.content_hash != rubric.content_hash
    assert changed.content_hash == parse_rubric(changed.to_dict()).content_hash
    with pytest.raises(TypeError):
        changed.metadata["team"] = "news"
    with pytest.raises(RubricValidationError, match="semantic versioning"):
        rubric.model_copy(update={"version": "two"})
    assert rubric.model_copy() is rubric


def test_the_content_hash_is_sha256_of_a_fixed_canonical_form() -> None:
    """Stored evaluations and the judge cache are keyed by this hash: a release that
    changes it would orphan them, so the canonical form is pinned here."""
    canonical = (
        '{"criteria":[{"id":"faithful","levels":[{"id":"low","label":"low","score":0.0},'
        '{"id":"mid","label":"mid","score":0.5},{"id":"high","label":"high","score":1.0}],'
        '"name":"faithful","required":true,"weight":2.0},{"id":"brief","name":"brief",'
        '"score_ranges":[{"description":"long","max":5,"min":0},'
        '{"description":"short","max":10,"min":6}]}],"id":"summary",'
        '"metadata":{"tags":["a","b"],"team":"news"},"name":"summary",'
        '"pass_threshold":0.8,"version":"1.2.0"}'
    )
    expected = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    assert parse_rubric(HASHED).content_hash == expected


def test_an_edited_dump_is_validated_again() -> None:
    rubric = parse_rubric(HASHED)
    doc = rubric.to_dict()
    doc["criteria"].append({"id": "faithful"})
    problem = problem_at(doc, "criteria[2].id")
    assert "duplicate criterion id" in problem.message


# -- semver ordering -----------------------------------------------------------------

ORDERED = [
    "0.9.9",
    "1.0.0-alpha",
    "1.0.0-alpha.1",
    "1.0.0-alpha.beta",
    "1.0.0-beta.2",
    "1.0.0-beta.11",
    "1.0.0-rc.1",
    "1.0.0",
    "1.0.1",
    "1.0.2",
    "1.0.10",
    "1.2.0",
    "1.10.0",
    "2.0.0",
]


def test_semver_key_orders_prereleases_before_releases_and_numbers_numerically() -> None:
    shuffled = ORDERED[:]
    random.Random(7).shuffle(shuffled)
    assert sorted(shuffled, key=semver_key) == ORDERED


def test_semver_key_ignores_build_metadata_and_rejects_non_semver() -> None:
    assert semver_key("1.0.0+build.9") == semver_key("1.0.0")
    assert semver_key("1.0.0-rc.1+x") < semver_key("1.0.0")
    with pytest.raises(ValueError, match="not a semantic version"):
        semver_key("1.0")


# -- scales --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("score", "expected"),
    [
        (0.0, 1.0),
        (0.1, 1.0),
        (0.125, 2.0),
        (0.3, 2.0),
        (0.375, 3.0),
        (0.5, 3.0),
        (0.66, 4.0),
        (1.0, 5.0),
    ],
)
def test_discrete_scale_rounds_half_up(score: float, expected: float) -> None:
    assert Scale(min=1, max=5, type="discrete").from_unit(score) == expected


def test_continuous_scale_does_not_round() -> None:
    assert Scale(min=1, max=5).from_unit(0.66) == pytest.approx(3.64)
    assert Scale(min=0, max=10).from_unit(0.25) == 2.5
    assert Scale().from_unit(0.42) == 0.42


def test_criterion_can_be_built_directly_and_is_validated() -> None:
    assert Criterion(id="c", weight=-1).weight == -1
    with pytest.raises(ValidationError):
        Criterion(id="c", levels=[{"id": "x", "score": 0.0}])  # type: ignore[list-item]
    assert Rubric(id="r", criteria=[Criterion(id="c")]).criteria[0].name == "c"
