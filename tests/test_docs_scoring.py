"""docs/scoring.md's worked example: the rubric in the page, evaluated by the engine,
gives every figure the page's table states."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from rubricflow import evaluate_sync, parse_rubric

PAGE = Path(__file__).resolve().parent.parent / "docs" / "scoring.md"


def _worked_example() -> tuple[str, list[list[str]]]:
    text = PAGE.read_text()
    start = text.index("<!-- worked-example")
    block = re.search(r"```yaml\n(.*?)```", text[start:], re.S)
    assert block is not None
    rows = []
    for line in text[start:].splitlines():
        if line.startswith("| `") or line.startswith("| ` `"):
            rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return block.group(1), rows


RUBRIC_TEXT, ROWS = _worked_example()


def test_the_page_has_the_example() -> None:
    assert len(ROWS) == 4


@pytest.mark.parametrize("row", ROWS, ids=lambda row: row[0][:20])
def test_every_figure_in_the_table_is_what_the_engine_computes(row: list[str]) -> None:
    rubric = parse_rubric(yaml.safe_load(RUBRIC_TEXT))
    content = row[0].strip("`")
    if row[0] == "` ` (blank)":
        content = " "
    evaluation = evaluate_sync(rubric, {"content": content})
    verdicts = [r.verdict for r in evaluation.criteria]
    assert verdicts == row[1:5]
    assert evaluation.raw_score == float(row[5].split("=")[-1].strip())
    assert evaluation.score == float(row[6])
    assert evaluation.scaled_score == float(row[7])
    assert row[8].startswith(evaluation.verdict)
    if "required" in row[8]:
        assert evaluation.gating_failures == ("answers",)
