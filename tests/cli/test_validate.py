"""`rubricflow validate`: exit codes, human and JSON output, and the meta-rubric findings.

Malformed files are covered by test_bad_input.py; this module checks valid rubrics, the
five meta-rubric checks (reported as warnings with the score), lint warnings and usage
errors.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner, Result

from rubricflow.cli import app


def invoke(cli: CliRunner, *args: str) -> Result:
    result = cli.invoke(app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"rubricflow raised {result.exception!r}") from result.exception
    assert "Traceback" not in result.stdout + result.stderr
    return result


def write(folder: Path, name: str, document: Any) -> Path:
    path = folder / name
    if name.endswith(".json"):
        path.write_text(json.dumps(document), encoding="utf-8")
    else:
        path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return path


def levels(*scores: float) -> list[dict[str, Any]]:
    return [{"id": f"l{index}", "score": score} for index, score in enumerate(scores)]


GOOD = {
    "id": "answer-quality",
    "version": "1.2.0",
    "pass_threshold": 0.6,
    "criteria": [
        {"id": "correct", "name": "Correct", "description": "The answer is right", "weight": 0.6},
        {
            "id": "clear",
            "name": "Clear",
            "description": "The answer is easy to follow",
            "weight": 0.4,
            "levels": levels(0.0, 0.5, 1.0),
        },
    ],
}


def rubric(**changes: Any) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(json.dumps(GOOD))
    document.update(changes)
    return document


def json_report(cli: CliRunner, *paths: Path, code: int = 0) -> list[dict[str, Any]]:
    result = invoke(cli, "validate", "--json", *map(str, paths))
    assert result.exit_code == code, result.output
    files: list[dict[str, Any]] = json.loads(result.stdout)["files"]
    return files


# --- valid files ----------------------------------------------------------------------


def test_valid_rubric_exits_0_with_one_line(cli: CliRunner, tmp_path: Path) -> None:
    path = write(tmp_path, "good.yaml", GOOD)
    result = invoke(cli, "validate", str(path))
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [
        f"valid {path} (native: answer-quality@1.2.0; meta-rubric 1.00 pass)"
    ]
    assert result.stderr == ""


def test_valid_rubric_json_report(cli: CliRunner, tmp_path: Path) -> None:
    path = write(tmp_path, "good.json", GOOD)
    (file,) = json_report(cli, path)
    assert {"path", "format", "valid", "errors", "warnings", "meta_rubric"} <= set(file)
    assert file["path"] == str(path)
    assert file["format"] == "native"
    assert file["valid"] is True
    assert file["errors"] == []
    assert file["warnings"] == []
    assert file["meta_rubric"] == {"score": 1.0, "passed": True}
    (entry,) = file["rubrics"]
    assert entry["id"] == "answer-quality"
    assert entry["version"] == "1.2.0"
    assert len(entry["content_hash"]) == 64
    findings = entry["meta_rubric"]["findings"]
    assert [f["check"] for f in findings] == [
        "criteria_coverage",
        "criteria_independence",
        "weight_distribution",
        "threshold_reasonableness",
        "level_ordering",
    ]
    assert {f["level"] for f in findings} == {"pass"}


def test_several_files_one_invalid_exits_1_with_summary(cli: CliRunner, tmp_path: Path) -> None:
    good = write(tmp_path, "good.yaml", GOOD)
    bad = write(tmp_path, "bad.yaml", rubric(version="one"))
    result = invoke(cli, "validate", str(good), str(bad))
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"valid {good} ")
    assert lines[1] == f"invalid {bad}"
    assert lines[2].startswith(f"{bad}: version: version 'one' is not semantic versioning")
    assert lines[-1] == "1 valid, 1 invalid"


def test_several_valid_files_exit_0(cli: CliRunner, tmp_path: Path) -> None:
    paths = [write(tmp_path, f"r{i}.yaml", rubric(id=f"r{i}")) for i in range(3)]
    result = invoke(cli, "validate", *map(str, paths))
    assert result.exit_code == 0
    assert result.stdout.splitlines()[-1] == "3 valid, 0 invalid"


def test_every_problem_of_a_file_is_listed(cli: CliRunner, tmp_path: Path) -> None:
    document = rubric(version="1", pass_threshold="high")
    document["criteria"][0]["weight"] = "heavy"
    path = write(tmp_path, "many.yaml", document)
    result = invoke(cli, "validate", str(path))
    assert result.exit_code == 1
    fields = {line.split(": ")[1] for line in result.stdout.splitlines()[1:]}
    assert fields == {"version", "pass_threshold", "criteria[0].weight"}


# --- the meta-rubric ------------------------------------------------------------------


def meta_of(cli: CliRunner, tmp_path: Path, document: dict[str, Any]) -> dict[str, Any]:
    (file,) = json_report(cli, write(tmp_path, "r.yaml", document))
    assert file["valid"] is True, file["errors"]
    (entry,) = file["rubrics"]
    return {
        "score": file["meta_rubric"]["score"],
        "passed": file["meta_rubric"]["passed"],
        "levels": {f["check"]: f["level"] for f in entry["meta_rubric"]["findings"]},
        "warnings": [w["message"] for w in file["warnings"] if w["path"] == "meta_rubric"],
    }


def test_weights_summing_to_3_score_0_8(cli: CliRunner, tmp_path: Path) -> None:
    criteria = [
        {"id": name, "description": f"checks {name}", "weight": 1.0}
        for name in ("accuracy", "tone", "brevity")
    ]
    meta = meta_of(cli, tmp_path, {"id": "r", "criteria": criteria})
    assert meta["score"] == pytest.approx(0.8)
    assert meta["passed"] is False  # every meta check is required
    assert meta["levels"]["weight_distribution"] == "fail"
    (warning,) = meta["warnings"]
    assert warning.startswith("weight_distribution: fail: positive weights sum to 3, not 1;")


def test_penalty_weights_do_not_count_towards_the_sum(cli: CliRunner, tmp_path: Path) -> None:
    document = rubric()
    document["criteria"].append({"id": "typos", "description": "Has typos", "weight": -0.5})
    meta = meta_of(cli, tmp_path, document)
    assert meta["levels"]["weight_distribution"] == "pass"
    assert meta["score"] == 1.0


def test_weights_within_tolerance_pass(cli: CliRunner, tmp_path: Path) -> None:
    criteria = [
        {"id": "a", "description": "first", "weight": 0.333},
        {"id": "b", "description": "second", "weight": 0.333},
        {"id": "c", "description": "third", "weight": 0.333},
    ]
    meta = meta_of(cli, tmp_path, {"id": "r", "criteria": criteria})
    assert meta["levels"]["weight_distribution"] == "pass"
    assert meta["score"] == 1.0


def test_unreachable_threshold_is_too_high(cli: CliRunner, tmp_path: Path) -> None:
    document = {
        "id": "r",
        "pass_threshold": 0.9,
        "criteria": [{"id": "depth", "weight": 1.0, "levels": levels(0.0, 0.25, 0.5)}],
    }
    meta = meta_of(cli, tmp_path, document)
    assert meta["levels"]["threshold_reasonableness"] == "too_high"
    assert meta["score"] == pytest.approx(0.8)
    (warning,) = meta["warnings"]
    assert warning.startswith("threshold_reasonableness: too high: pass_threshold 0.9 is above")
    assert "best achievable score 0.5" in warning


def test_threshold_at_worst_score_is_too_low(cli: CliRunner, tmp_path: Path) -> None:
    meta = meta_of(cli, tmp_path, rubric(pass_threshold=0.0))
    assert meta["levels"]["threshold_reasonableness"] == "too_low"
    assert meta["score"] == pytest.approx(0.8)
    (warning,) = meta["warnings"]
    assert warning.startswith("threshold_reasonableness: too low: pass_threshold 0 is at or below")


def test_threshold_equal_to_best_score_is_reasonable(cli: CliRunner, tmp_path: Path) -> None:
    document = {
        "id": "r",
        "pass_threshold": 0.5,
        "criteria": [{"id": "depth", "weight": 1.0, "levels": levels(0.0, 0.5)}],
    }
    assert meta_of(cli, tmp_path, document)["levels"]["threshold_reasonableness"] == "pass"


def test_duplicate_names_fail_independence(cli: CliRunner, tmp_path: Path) -> None:
    document = rubric()
    document["criteria"][1]["name"] = "correct"  # names compare case-insensitively
    meta = meta_of(cli, tmp_path, document)
    assert meta["levels"]["criteria_independence"] == "fail"
    assert meta["score"] == pytest.approx(0.8)
    (warning,) = meta["warnings"]
    assert warning.startswith("criteria_independence: fail: criteria 'correct' and 'clear'")


def test_duplicate_descriptions_are_partial(cli: CliRunner, tmp_path: Path) -> None:
    document = rubric()
    document["criteria"][1]["description"] = "The answer is right"
    meta = meta_of(cli, tmp_path, document)
    assert meta["levels"]["criteria_independence"] == "partial"
    assert meta["score"] == pytest.approx(0.9)
    assert meta["passed"] is True  # partial is not a failed check
    (warning,) = meta["warnings"]
    assert warning.startswith("criteria_independence: partial: criteria 'correct' and 'clear'")


def test_levels_out_of_order_fail(cli: CliRunner, tmp_path: Path) -> None:
    document = rubric()
    document["criteria"][1]["levels"] = levels(0.0, 1.0, 0.5)
    meta = meta_of(cli, tmp_path, document)
    assert meta["levels"]["level_ordering"] == "fail"
    assert meta["score"] == pytest.approx(0.8)
    (warning,) = meta["warnings"]
    assert "criteria[1] (clear) lists its levels out of score order (0, 1, 0.5)" in warning


def test_descending_levels_are_ordered(cli: CliRunner, tmp_path: Path) -> None:
    document = rubric()
    document["criteria"][1]["levels"] = levels(1.0, 0.5, 0.0)
    assert meta_of(cli, tmp_path, document)["levels"]["level_ordering"] == "pass"


def test_failing_meta_rubric_is_a_warning_not_an_error(cli: CliRunner, tmp_path: Path) -> None:
    document = {
        "id": "sloppy",
        "pass_threshold": 0.9,
        "criteria": [
            {"id": "a", "name": "Same", "weight": 2.0, "levels": levels(0.0, 0.5, 0.25)},
            {"id": "b", "name": "same", "weight": 2.0, "levels": levels(0.0, 0.5)},
        ],
    }
    path = write(tmp_path, "sloppy.yaml", document)
    result = invoke(cli, "validate", str(path))
    assert result.exit_code == 0  # the file is valid; the meta-rubric only warns
    lines = result.stdout.splitlines()
    assert lines[0] == f"valid {path} (native: sloppy@1.0.0; meta-rubric 0.20 FAIL)"
    warnings = lines[1:]
    assert len(warnings) == 4
    assert all(line.startswith(f"{path}: warning: meta_rubric: ") for line in warnings)
    checks = [line.split(": ")[3] for line in warnings]
    assert checks == [
        "criteria_independence",
        "weight_distribution",
        "threshold_reasonableness",
        "level_ordering",
    ]
    (file,) = json_report(cli, path)
    assert file["meta_rubric"] == {"score": pytest.approx(0.2), "passed": False}


def test_meta_rubric_of_a_file_with_several_rubrics(cli: CliRunner, tmp_path: Path) -> None:
    good = rubric(id="good")
    heavy = rubric(id="heavy")
    heavy["criteria"][0]["weight"] = 5.0
    path = write(tmp_path, "two.yaml", {"rubrics": [good, heavy]})
    (file,) = json_report(cli, path)
    assert file["valid"] is True
    assert [r["id"] for r in file["rubrics"]] == ["good", "heavy"]
    assert file["meta_rubric"] == {"score": pytest.approx(0.8), "passed": False}
    good_meta, heavy_meta = (r["meta_rubric"] for r in file["rubrics"])
    assert (good_meta["score"], good_meta["passed"]) == (1.0, True)
    assert (heavy_meta["score"], heavy_meta["passed"]) == (pytest.approx(0.8), False)
    (warning,) = file["warnings"]
    assert warning["path"] == "heavy: meta_rubric"
    assert warning["message"].startswith("weight_distribution: fail: positive weights sum to 5.4")
    result = invoke(cli, "validate", str(path))
    assert result.exit_code == 0
    assert f"{path}: warning: heavy: meta_rubric: weight_distribution: fail" in result.stdout
    assert "(native: good@1.2.0, heavy@1.2.0; meta-rubric 0.80 FAIL)" in result.stdout


# --- lint warnings --------------------------------------------------------------------


def test_zero_weight_optional_criterion_warns(cli: CliRunner, tmp_path: Path) -> None:
    document = rubric()
    document["criteria"].append({"id": "style", "description": "Nice style", "weight": 0})
    (file,) = json_report(cli, write(tmp_path, "r.yaml", document))
    assert {
        "path": "criteria[2].weight",
        "message": "weight 0 and not required: it cannot affect the verdict",
    } in file["warnings"]


def test_unregistered_import_path_check_warns(cli: CliRunner, tmp_path: Path) -> None:
    document = rubric()
    document["criteria"][0]["scoring"] = {"method": "deterministic", "function": "mymod:check"}
    (file,) = json_report(cli, write(tmp_path, "r.yaml", document))
    (warning,) = [w for w in file["warnings"] if w["path"] == "criteria[0].scoring.function"]
    assert "'mymod:check' is not a registered check" in warning["message"]
    assert "--allow-import" in warning["message"]


def test_unknown_scorer_warns(cli: CliRunner, tmp_path: Path) -> None:
    document = rubric()
    document["criteria"][0]["scoring"] = {"method": "telepathy"}
    (file,) = json_report(cli, write(tmp_path, "r.yaml", document))
    (warning,) = [w for w in file["warnings"] if w["path"] == "criteria[0].scoring.method"]
    assert "no installed plugin provides scorer 'telepathy'" in warning["message"]


def test_a_misspelt_check_gets_a_suggestion_and_fails_under_strict(
    cli: CliRunner, tmp_path: Path
) -> None:
    """Issue 31: a misspelt check function was "valid", exit 0, even with --strict."""
    document = rubric()
    document["criteria"][0]["scoring"] = {
        "method": "deterministic",
        "function": "word_count_betwen",
        "config": {"max": 5},
    }
    path = write(tmp_path, "r.yaml", document)
    (file,) = json_report(cli, path)
    (warning,) = [w for w in file["warnings"] if w["path"] == "criteria[0].scoring.function"]
    assert "(did you mean 'word_count_between'?)" in warning["message"]
    assert invoke(cli, "validate", str(path)).exit_code == 0
    strict = invoke(cli, "validate", "--strict", str(path))
    assert strict.exit_code == 1
    assert "not installed (criteria[0].scoring.function)" in strict.stderr
    document["criteria"][0]["scoring"] = {"method": "deterministic", "function": "mentions_x"}
    (file,) = json_report(cli, write(tmp_path, "far.yaml", document))
    (warning,) = [w for w in file["warnings"] if w["path"] == "criteria[0].scoring.function"]
    assert "did you mean" not in warning["message"]  # nothing close: no wild guess


# --- usage errors ---------------------------------------------------------------------


def test_no_path_is_a_usage_error(cli: CliRunner) -> None:
    result = invoke(cli, "validate")
    assert result.exit_code == 2
    assert "Missing argument" in result.stderr


def test_unknown_option_is_a_usage_error(cli: CliRunner, tmp_path: Path) -> None:
    path = write(tmp_path, "good.yaml", GOOD)
    result = invoke(cli, "validate", "--lenient", str(path))
    assert result.exit_code == 2
    assert "No such option: --lenient" in result.stderr


def test_unknown_format_is_a_usage_error(cli: CliRunner, tmp_path: Path) -> None:
    path = write(tmp_path, "good.yaml", GOOD)
    result = invoke(cli, "validate", "--format", "toml", str(path))
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.strip() == (
        "error: unknown format 'toml'; known formats: agentv, dataknobs, healthbench, "
        "native, openai-graders, openrubricrl, promptfoo, rar, rubric-pkg, rubricjudgespec"
    )


def test_format_option_short_form(cli: CliRunner, tmp_path: Path) -> None:
    path = write(tmp_path, "good.yaml", GOOD)
    result = invoke(cli, "validate", "-f", "native", str(path))
    assert result.exit_code == 0
