"""Caps on the size of a rubric (issue 27): criteria per rubric, levels per criterion and
bytes per document, each refused with a message naming the cap and its setting, before
the document is linted, at every door (the library, the CLI, MCP tools; the HTTP API in
tests/server/test_bounded_rubrics_api.py). Before, a 50,000-criterion rubric took 27-43 s
to lint, and nothing bounded the levels of a criterion or the size of a document below
the server's body limit."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rubricflow.cli import app
from rubricflow.errors import RubricLoadError, RubricValidationError
from rubricflow.formats.loader import load_text
from rubricflow.model import Limits, limit_setting, parse_rubric
from rubricflow.validation import validate_file, validate_text

LIMITS = Limits()


def criteria(count: int, **fields: Any) -> list[dict[str, Any]]:
    return [
        {"id": f"c{i}", "scoring": {"method": "deterministic", "function": "non_empty"}, **fields}
        for i in range(count)
    ]


def graded(levels: int) -> dict[str, Any]:
    return {
        "id": "graded",
        "criteria": [
            {
                "id": "quality",
                "levels": [{"id": f"l{i}", "score": i / levels} for i in range(levels)],
            }
        ],
    }


def refusal(document: dict[str, Any]) -> str:
    with pytest.raises(RubricValidationError) as caught:
        parse_rubric(document)
    return "; ".join(f"{p.path}: {p.message}" for p in caught.value.problems)


def test_the_defaults() -> None:
    assert (LIMITS.max_criteria, LIMITS.max_levels) == (500, 20)
    assert LIMITS.max_rubric_bytes == 2 * 1024 * 1024


def test_criteria_per_rubric_are_capped_inclusively() -> None:
    assert len(parse_rubric({"id": "r", "criteria": criteria(500)}).criteria) == 500
    message = refusal({"id": "r", "criteria": criteria(501)})
    assert "criteria: the rubric has 501 criteria; the limit is 500" in message
    assert limit_setting("max_criteria") in message and "split it" in message


def test_a_cap_is_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    """RUBRICFLOW_MAX_CRITERIA lowers (or raises) the cap, and the refusal names it."""
    monkeypatch.setenv("RUBRICFLOW_MAX_CRITERIA", "3")
    assert len(parse_rubric({"id": "r", "criteria": criteria(3)}).criteria) == 3
    message = refusal({"id": "r", "criteria": criteria(4)})
    assert "the limit is 3 (setting RUBRICFLOW_MAX_CRITERIA)" in message
    monkeypatch.setenv("RUBRICFLOW_MAX_CRITERIA", "600")
    assert len(parse_rubric({"id": "r", "criteria": criteria(501)}).criteria) == 501


def test_levels_per_criterion_are_capped_inclusively() -> None:
    assert len(parse_rubric(graded(20)).criteria[0].levels) == 20
    message = refusal(graded(21))
    assert "criteria[0].levels: the criterion has 21 levels; the limit is 20" in message
    assert limit_setting("max_levels") in message


def huge_rubric(count: int = 50_000) -> str:
    """A rubric of `count` small criteria as JSON (50,000 make about 3 MB)."""
    items = [
        {"id": f"c{i}", "description": f"criterion {i} of a huge rubric"} for i in range(count)
    ]
    return json.dumps({"id": "huge", "criteria": items})


def test_a_50000_criterion_rubric_is_refused_by_its_size_before_it_is_parsed() -> None:
    text = huge_rubric()
    assert 2.5e6 < len(text) < 5e6
    started = time.monotonic()
    report = validate_text(text, source="huge.json")
    elapsed = time.monotonic() - started
    assert not report.valid and report.rubrics == []
    (problem,) = report.errors
    assert f"is {len(text):,} bytes; the limit is 2,097,152 bytes" in problem.message
    assert limit_setting("max_rubric_bytes") in problem.message
    assert elapsed < 30, elapsed  # measured 0.02 s; it took 27-43 s before


def test_a_compact_50000_criterion_rubric_is_refused_by_the_criteria_cap() -> None:
    """Under the size cap (50,000 bare ids are under 1 MB), the count is checked before
    any criterion is validated, so nothing is linted."""
    text = json.dumps({"id": "huge", "criteria": [{"id": f"c{i}"} for i in range(50_000)]})
    assert len(text) < LIMITS.max_rubric_bytes
    report = validate_text(text, source="compact.json")
    assert not report.valid and report.rubrics == [] and report.warnings == []
    (problem,) = report.errors
    assert problem.path == "criteria"
    assert "the rubric has 50,000 criteria; the limit is 500" in problem.message


def test_the_size_cap_applies_to_files_text_and_yaml(tmp_path: Path) -> None:
    padding = "x" * (LIMITS.max_rubric_bytes + 10)
    yaml_text = f"id: padded\ndescription: {padding}\ncriteria:\n  - id: c\n"
    path = tmp_path / "padded.yaml"
    path.write_text(yaml_text)
    (problem,) = validate_file(path).errors
    assert "the limit is 2,097,152 bytes" in problem.message
    with pytest.raises(RubricLoadError, match=limit_setting("max_rubric_bytes")):
        load_text(yaml_text, source="padded.yaml")
    # a document at the cap is read as before
    at_cap = "id: padded\ncriteria:\n  - id: c\ndescription: "
    at_cap += "x" * (LIMITS.max_rubric_bytes - len(at_cap) - 1) + "\n"
    assert len(at_cap.encode()) == LIMITS.max_rubric_bytes
    assert load_text(at_cap, source="at-cap.yaml").rubrics[0].id == "padded"


def test_the_cli_refuses_over_the_caps_naming_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    cli = CliRunner()
    big = tmp_path / "big.json"
    big.write_text(huge_rubric())
    many = tmp_path / "many.json"
    many.write_text(json.dumps({"id": "many", "criteria": criteria(501)}))
    for path, expected in ((big, "the limit is 2,097,152 bytes"), (many, "the limit is 500")):
        validated = cli.invoke(app, ["validate", str(path)])
        assert validated.exit_code == 1 and expected in validated.stdout, validated.output
        assert "Traceback" not in validated.output
        registered = cli.invoke(
            app, ["rubrics", "register", str(path), "--db", str(tmp_path / "store.db")]
        )
        assert registered.exit_code == 2 and "Traceback" not in registered.output
        assert expected in registered.output, registered.output
