"""`rubricflow convert` and `rubricflow schema`.

Every source format converts to the native format; the output validates, matches the
published JSON Schema, and loads back to the same rubrics (equal content hashes).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner, Result

from rubricflow import load_rubric
from rubricflow.cli import app
from rubricflow.formats.loader import load_file
from rubricflow.schema import published_schema, rubric_json_schema

BAD = Path(__file__).parent.parent / "fixtures" / "bad"


def invoke(cli: CliRunner, *args: str) -> Result:
    result = cli.invoke(app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"rubricflow raised {result.exception!r}") from result.exception
    assert "Traceback" not in result.stdout + result.stderr
    return result


# Source documents, one or more per format: (file name, format, rubric count, text).
SOURCES: list[tuple[str, str, int, str]] = [
    (
        "native.yaml",
        "native",
        1,
        """\
id: support-reply
name: Support reply
version: 2.1.0
description: Grades a customer support reply
pass_threshold: 0.75
scale: {min: 0, max: 10, type: discrete}
criteria:
  - id: resolves
    description: Resolves the customer's problem
    weight: 0.5
    required: true
  - id: tone
    description: Friendly and professional
    weight: 0.3
    levels:
      - {id: rude, label: Rude, score: 0.0, indicators: [insults]}
      - {id: flat, score: 0.5}
      - {id: warm, score: 1.0}
  - id: facts
    description: Facts check out
    weight: 0.2
    score_ranges:
      "0": Wrong
      "5": Partly right
      "9": Right
metadata: {owner: support-team}
""",
    ),
    (
        "native.json",
        "native",
        2,
        json.dumps(
            {
                "rubrics": [
                    {"id": "a", "criteria": [{"id": "x", "description": "first"}]},
                    {
                        "id": "b",
                        "version": "1.0.0-beta.1",
                        "criteria": [
                            {
                                "id": "shape",
                                "levels": [{"id": "bad", "score": 0}, {"id": "ok", "score": 1}],
                                "scoring": {
                                    "method": "schema",
                                    "schema": {"type": "object", "required": ["title"]},
                                },
                            }
                        ],
                    },
                ]
            },
            indent=2,
        ),
    ),
    (
        "openrubricrl.json",
        "openrubricrl",
        1,
        json.dumps(
            {
                "name": "code_quality",
                "version": "1.0.0",
                "description": "Python function quality",
                "domain": "code",
                "scale": {"min": 0.0, "max": 10.0, "type": "continuous"},
                "criteria": [
                    {
                        "name": "correctness",
                        "description": "Solves the task and handles edge cases",
                        "weight": 0.6,
                        "examples": {
                            "good": [
                                {
                                    "input": "reverse a string",
                                    "output": "def r(s): return s[::-1]",
                                    "score": 8.0,
                                    "explanation": "correct, no validation",
                                }
                            ]
                        },
                    },
                    {
                        "name": "readability",
                        "description": "Clean and well named",
                        "weight": 0.4,
                        "subcriteria": [{"name": "naming", "description": "Good names"}],
                    },
                ],
                "hybrid_metrics": [{"name": "exact", "type": "accuracy", "weight": 0.2}],
            }
        ),
    ),
    (
        "openrubricrl_no_scale.yaml",
        "openrubricrl",
        1,
        """\
name: dialogue
version: 0.3.1
domain: dialogue
criteria:
  - {name: empathy, description: Acknowledges feelings, weight: 0.5}
  - {name: helpfulness, description: Moves the user forward, weight: 0.5}
""",
    ),
    (
        "agentv_v2.yaml",
        "agentv",
        3,
        """\
description: v2 eval cases
evalcases:
  - id: quicksort
    expected_outcome: Explain quicksort
    input:
      - {role: user, content: Explain quicksort}
    rubrics:
      - Mentions divide-and-conquer
      - Explains the partition step
  - id: http-guide
    expected_outcome: Write a guide to HTTP status codes
    input: Write a guide to HTTP status codes
    rubrics:
      - {id: structure, expected_outcome: Has clear headings, weight: 1.0, required: true}
      - {id: errors, expected_outcome: Explains 4xx codes, weight: 2.0, required: false}
  - id: summary
    expected_outcome: Summarise accurately
    input: Summarise the article
    rubrics:
      - id: accuracy
        weight: 2.0
        required_min_score: 8
        score_ranges:
          0: Major errors
          3: Some errors
          6: Mostly accurate
          8: Accurate
          10: Perfect
""",
    ),
    (
        "agentv_v4.yaml",
        "agentv",
        2,
        """\
description: v4 suite
tests:
  - id: quicksort
    vars: {input: Explain quicksort}
    assert:
      - Mentions divide-and-conquer
      - States the time complexity
  - id: summary
    vars: {input: Summarise in under 50 words}
    assert:
      - type: llm-rubric
        value:
          - id: brevity
            outcome: Under 50 words
            weight: 1
            min_score: 0.8
            score_ranges:
              - {score_range: [0, 4], outcome: Too long}
              - {score_range: [5, 10], outcome: Short}
      - type: javascript
        value: output.length < 400
""",
    ),
    (
        "rubric_pkg_flat.json",
        "rubric-pkg",
        1,
        json.dumps(
            [
                {"weight": 10.0, "requirement": "States the Q4 margin as 17.2%"},
                {"weight": 8.0, "requirement": "Uses Shapley attribution"},
                {"weight": -15.0, "requirement": "Uses total deliveries"},
            ]
        ),
    ),
    (
        "rubric_pkg_sections.json",
        "rubric-pkg",
        1,
        json.dumps(
            {
                "rubric": {
                    "id": "finance-review",
                    "sections": [
                        {
                            "id": "s1",
                            "title": "Figures",
                            "criteria": [
                                {"id": "margin", "weight": 15, "requirement": "States margin"},
                                {"id": "volume", "weight": 8, "requirement": "States volume"},
                            ],
                        },
                        {
                            "id": "s2",
                            "title": "Method",
                            "criteria": [
                                {"id": "method", "weight": 10, "requirement": "Names method"}
                            ],
                        },
                    ],
                }
            }
        ),
    ),
    (
        "rubric_pkg_negative.yaml",
        "rubric-pkg",
        1,
        """\
- weight: -2.0
  requirement: Contains major factual errors
- weight: -1.0
  requirement: Contains typos
""",
    ),
    (
        "dataknobs.json",
        "dataknobs",
        1,
        json.dumps(
            {
                "rubrics": [
                    {
                        "id": "quiz_quality",
                        "name": "Quiz Quality",
                        "description": "Validates quiz content",
                        "version": "1.0.0",
                        "target_type": "content",
                        "pass_threshold": 0.7,
                        "criteria": [
                            {
                                "id": "count",
                                "name": "Question Count",
                                "description": "Enough questions",
                                "weight": 0.5,
                                "levels": [
                                    {"id": "fail", "label": "Fail", "score": 0.0},
                                    {"id": "pass", "label": "Pass", "score": 1.0},
                                ],
                                "scoring_method": {
                                    "type": "deterministic",
                                    "function_ref": "scoring:check_question_count",
                                },
                                "required": True,
                            },
                            {
                                "id": "structure",
                                "name": "Structure",
                                "description": "Has a questions array",
                                "weight": 0.3,
                                "levels": [
                                    {"id": "fail", "label": "Fail", "score": 0.0},
                                    {"id": "pass", "label": "Pass", "score": 1.0},
                                ],
                                "scoring_method": {
                                    "type": "schema",
                                    "schema": {"type": "object", "required": ["questions"]},
                                },
                            },
                            {
                                "id": "tone",
                                "name": "Tone",
                                "description": "Encouraging tone",
                                "weight": 0.2,
                                "levels": [
                                    {"id": "harsh", "label": "Harsh", "score": 0.0},
                                    {"id": "neutral", "label": "Neutral", "score": 0.6},
                                    {"id": "kind", "label": "Kind", "score": 1.0},
                                ],
                                "scoring_method": {
                                    "type": "llm_decode",
                                    "decode_prompt": "Classify the tone of {{ target.text }}",
                                },
                            },
                        ],
                        "metadata": {"source": "hand-written test"},
                    }
                ]
            }
        ),
    ),
    (
        "judgespec.json",
        "rubricjudgespec",
        1,
        json.dumps(
            {
                "model_type": "rubric_judge",
                "rubric": "Is the restaurant recommendation good?\n- 1: no\n- 5: perfect",
                "model": "openai/gpt-4o",
                "min_score": 1,
                "max_score": 5,
            }
        ),
    ),
]
SOURCES += [
    (
        "rar.jsonl",
        "rar",
        2,
        "\n".join(
            json.dumps(row)
            for row in [
                {
                    "question": "What causes scurvy?",
                    "reference_answer": "Vitamin C deficiency.",
                    "rubric": [
                        {"title": "Vitamin C", "description": "Names vitamin C.", "weight": 5},
                        {"title": "Myth", "description": "Blames sunlight.", "weight": -2},
                    ],
                },
                {"rubric": [{"title": "Short", "description": "Is short.", "weight": 1}]},
            ]
        ),
    ),
    (
        "healthbench.jsonl",
        "healthbench",
        1,
        json.dumps(
            {
                "prompt": [{"role": "user", "content": "Fever of 39C in a child?"}],
                "rubrics": [
                    {"criterion": "Advises fluids", "points": 5, "tags": ["axis:completeness"]},
                    {"criterion": "Recommends aspirin", "points": -8, "tags": []},
                ],
                "prompt_id": "hb-1",
            }
        )
        + "\n",
    ),
]
SOURCE_IDS = [name for name, *_ in SOURCES]


@pytest.fixture(params=SOURCES, ids=SOURCE_IDS)
def source(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, str, int]:
    name, fmt, count, text = request.param
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path, fmt, count


def hashes(path: Path, fmt: str | None = None) -> list[str]:
    return [rubric.content_hash for rubric in load_file(path, format=fmt).rubrics]


def test_sources_cover_every_format() -> None:
    formats = {fmt for _, fmt, _, _ in SOURCES}
    assert formats == {
        "native",
        "openrubricrl",
        "agentv",
        "rubric-pkg",
        "dataknobs",
        "rubricjudgespec",
        "rar",
        "healthbench",
    }


def test_source_validates(cli: CliRunner, source: tuple[Path, str, int]) -> None:
    path, fmt, count = source
    result = invoke(cli, "validate", "--json", str(path))
    assert result.exit_code == 0, result.stdout
    (file,) = json.loads(result.stdout)["files"]
    assert file["format"] == fmt
    assert len(file["rubrics"]) == count


def test_convert_to_file_round_trips(
    cli: CliRunner, source: tuple[Path, str, int], tmp_path: Path
) -> None:
    path, _fmt, count = source
    out = tmp_path / "out" / "converted.yaml"
    out.parent.mkdir()
    result = invoke(cli, "convert", str(path), "--to", "native", "-o", str(out))
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert f"wrote {count} rubric(s) to {out}" in result.stderr
    document = yaml.safe_load(out.read_text("utf-8"))
    assert ("rubrics" in document) == (count > 1)

    validated = invoke(cli, "validate", "--json", str(out))
    assert validated.exit_code == 0, validated.stdout
    (file,) = json.loads(validated.stdout)["files"]
    assert file["format"] == "native"
    assert file["errors"] == []

    assert hashes(out) == hashes(path)
    assert load_file(out).rubrics == load_file(path).rubrics


def test_convert_to_stdout_yaml_and_json(
    cli: CliRunner, source: tuple[Path, str, int], tmp_path: Path
) -> None:
    path, _fmt, _count = source
    as_yaml = invoke(cli, "convert", str(path))
    assert as_yaml.exit_code == 0, as_yaml.output
    as_json = invoke(cli, "convert", str(path), "--to", "native", "--json")
    assert as_json.exit_code == 0, as_json.output
    assert yaml.safe_load(as_yaml.stdout) == json.loads(as_json.stdout)
    (tmp_path / "back.json").write_text(as_json.stdout, encoding="utf-8")
    (tmp_path / "back.yaml").write_text(as_yaml.stdout, encoding="utf-8")
    assert hashes(tmp_path / "back.json") == hashes(path)
    assert hashes(tmp_path / "back.yaml") == hashes(path)


def test_converted_output_matches_the_published_schema(
    cli: CliRunner, source: tuple[Path, str, int]
) -> None:
    path, _fmt, _count = source
    result = invoke(cli, "convert", str(path), "--json")
    document = json.loads(result.stdout)
    validator = jsonschema.Draft202012Validator(rubric_json_schema())
    for item in document.get("rubrics", [document]):
        validator.validate(item)


def test_converting_native_output_again_changes_nothing(
    cli: CliRunner, source: tuple[Path, str, int], tmp_path: Path
) -> None:
    path, _fmt, _count = source
    first = tmp_path / "first.yaml"
    second = tmp_path / "second.yaml"
    assert invoke(cli, "convert", str(path), "-o", str(first)).exit_code == 0
    assert invoke(cli, "convert", str(first), "-o", str(second)).exit_code == 0
    assert second.read_text("utf-8") == first.read_text("utf-8")


def test_json_output_file_is_json(cli: CliRunner, tmp_path: Path) -> None:
    name, _fmt, _count, text = SOURCES[0]
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    out = tmp_path / "out.json"
    result = invoke(cli, "convert", str(path), "-o", str(out))
    assert result.exit_code == 0
    document = json.loads(out.read_text("utf-8"))
    assert document["id"] == "support-reply"
    assert hashes(out) == hashes(path)


def test_import_warnings_go_to_stderr(cli: CliRunner, tmp_path: Path) -> None:
    name, _fmt, _count, text = next(s for s in SOURCES if s[0] == "openrubricrl_no_scale.yaml")
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    result = invoke(cli, "convert", str(path))
    assert result.exit_code == 0
    assert f"{path}: warning: scale: no scale given" in result.stderr
    assert "warning" not in result.stdout
    assert yaml.safe_load(result.stdout)["scale"] == {"max": 10.0}


def test_format_option_overrides_detection(cli: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text("rubric: Is it polite?\nmodel: m\nmin_score: 0\nmax_score: 3\n")
    result = invoke(cli, "convert", "--format", "rubricjudgespec", str(path))
    assert result.exit_code == 0, result.output
    assert yaml.safe_load(result.stdout)["scale"]["max"] == 3.0


# --- convert: bad input and usage errors ----------------------------------------------


def test_convert_to_an_unknown_target_is_a_usage_error(cli: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text("id: r\ncriteria: [{id: c}]\n")
    result = invoke(cli, "convert", str(path), "--to", "openrubricrl")
    assert result.exit_code == 2
    assert "cannot convert to 'openrubricrl'; the only target format is native" in result.stderr


@pytest.mark.parametrize(
    ("name", "field", "fragment"),
    [
        ("native_bands_gap.yaml", "criteria[0].score_ranges", "nothing covers 4-5"),
        ("agentv_v2_duplicate_item_ids.yaml", "evalcases[0].rubrics[1].id", "duplicate"),
        ("judgespec_max_not_above_min.json", "max_score", "must be greater than min_score"),
        ("native_malformed.yaml", "", "malformed YAML at line 5, column 7"),
        ("no_format.yaml", "", "matches no known rubric format"),
    ],
)
def test_convert_reports_bad_input(cli: CliRunner, name: str, field: str, fragment: str) -> None:
    path = BAD / name
    result = invoke(cli, "convert", str(path))
    assert result.exit_code in (1, 2), result.output  # never 0, never an internal error (3)
    assert result.stdout == ""
    assert str(path) in result.stderr
    assert field in result.stderr
    assert fragment in result.stderr


def test_convert_missing_file(cli: CliRunner, tmp_path: Path) -> None:
    result = invoke(cli, "convert", str(tmp_path / "nope.yaml"))
    assert result.exit_code == 2
    assert "nope.yaml: no such file; check the path" in result.stderr


def test_convert_into_a_missing_folder(cli: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text("id: r\ncriteria: [{id: c}]\n")
    out = tmp_path / "no" / "such" / "folder.yaml"
    result = invoke(cli, "convert", str(path), "-o", str(out))
    assert result.exit_code == 0
    assert load_rubric(out).id == "r"


# --- schema ---------------------------------------------------------------------------


def test_schema_prints_the_published_json_schema(cli: CliRunner) -> None:
    result = invoke(cli, "schema")
    assert result.exit_code == 0
    printed: dict[str, Any] = json.loads(result.stdout)
    assert printed == rubric_json_schema()
    assert printed == published_schema()
    jsonschema.Draft202012Validator.check_schema(printed)
    assert printed["title"] == "rubricflow rubric"
    assert {"id", "criteria"} <= set(printed["required"])


def test_schema_rejects_what_the_model_rejects() -> None:
    validator = jsonschema.Draft202012Validator(rubric_json_schema())
    assert not validator.is_valid({"id": "r", "criteria": []})
    assert not validator.is_valid({"id": "r", "criteria": [{"id": "c", "wieght": 1}]})
    assert not validator.is_valid(
        {"id": "r", "criteria": [{"id": "c", "levels": [{"id": "l", "score": 1.5}]}]}
    )
    assert validator.is_valid({"id": "r", "criteria": [{"id": "c"}]})
