"""`rubricflow eval --junit` and `rubricflow compare --format markdown` from the command
line: alongside the other outputs, resumed runs, exit codes and clear errors."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from cli_assertions import assert_error
from report.conftest import write_results
from typer.testing import CliRunner

from rubricflow.cli import app
from rubricflow.runs import RunData

from .conftest import junit_schema

FIXTURES = Path(__file__).parent.parent / "fixtures" / "eval"
RUBRIC = str(FIXTURES / "rubric.yaml")
MIXED = str(FIXTURES / "mixed.jsonl")  # "good" passes, the line without an id fails


def junit_cases(path: Path) -> list[ET.Element]:
    from lxml import etree

    junit_schema().assertValid(etree.parse(str(path)))
    return list(ET.parse(path).getroot().iter("testcase"))


def test_eval_junit_alongside_results_store_and_json(cli: CliRunner, tmp_path: Path) -> None:
    junit, results, db = tmp_path / "out" / "junit.xml", tmp_path / "r.jsonl", tmp_path / "s.db"
    result = cli.invoke(
        app,
        [
            "eval",
            RUBRIC,
            MIXED,
            "--json",
            "-o",
            str(results),
            "--db",
            str(db),
            "--format",
            "native",
            "--junit",
            str(junit),
        ],
    )
    assert result.exit_code == 1, result.output  # one target failed
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["verdict"] for line in lines] == ["pass", "fail"]
    assert f"junit: {junit}" in result.stderr
    cases = junit_cases(junit)
    assert [(c.attrib["classname"], c.attrib["name"]) for c in cases] == [
        ("reply-check@1.2.0", "good"),
        ("reply-check@1.2.0", "line-3"),
    ]
    (failure,) = cases[1].findall("failure")
    assert failure.attrib["message"] == "short: meet the requirement: At most five words"
    assert "evidence: 9 words (allowed 0..5)" in (failure.text or "")
    assert len(results.read_text().splitlines()) == 4  # header, two evaluations, closing line
    assert db.exists()
    # the whole run, the file says, is what the store holds too
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.attrib["tests"] == "2"


def test_a_resumed_run_writes_every_target(cli: CliRunner, tmp_path: Path) -> None:
    results, junit = tmp_path / "r.jsonl", tmp_path / "junit.xml"
    first = tmp_path / "first.jsonl"
    first.write_text('{"id": "a", "content": "hello there"}\n', encoding="utf-8")
    assert cli.invoke(app, ["eval", RUBRIC, str(first), "-q", "-o", str(results)]).exit_code == 0
    both = tmp_path / "both.jsonl"
    both.write_text(
        '{"id": "a", "content": "hello there"}\n{"id": "b", "content": "hi"}\n', encoding="utf-8"
    )
    result = cli.invoke(
        app,
        ["eval", RUBRIC, str(both), "-q", "-o", str(results), "--resume", "--junit", str(junit)],
    )
    assert result.exit_code == 0, result.output
    assert "1 finished earlier" in result.stdout
    assert [c.attrib["name"] for c in junit_cases(junit)] == ["a", "b"]


def test_an_unwritable_junit_path_fails_before_judging(cli: CliRunner, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    results = tmp_path / "r.jsonl"
    for path in (blocker / "junit.xml", tmp_path):
        result = cli.invoke(app, ["eval", RUBRIC, MIXED, "-o", str(results), "--junit", str(path)])
        assert_error(result, str(path), "give a")
        assert not results.exists()  # refused before the run started


def write_run(cli: CliRunner, path: Path, replies: dict[str, str]) -> Path:
    targets = path.with_suffix(".targets.jsonl")
    targets.write_text(
        "".join(json.dumps({"id": k, "content": v}) + "\n" for k, v in replies.items()),
        encoding="utf-8",
    )
    cli.invoke(app, ["eval", RUBRIC, str(targets), "-q", "-o", str(path)])
    return path


def test_compare_format_markdown_exit_codes_and_errors(cli: CliRunner, tmp_path: Path) -> None:
    base = write_run(cli, tmp_path / "base.jsonl", {"a": "hello", "b": "hello there"})
    head = write_run(
        cli, tmp_path / "head.jsonl", {"a": "hello", "b": "one two three four five six"}
    )
    result = cli.invoke(
        app,
        [
            "compare",
            str(base),
            str(head),
            "--format",
            "markdown",
            "--link",
            "CI=https://ci.example/9",
        ],
    )
    assert result.exit_code == 1, result.output  # the pass rate fell
    assert result.stdout.startswith("<!-- rubricflow-compare -->\n### ❌ rubricflow: pass rate")
    assert "100.0% → 50.0% (-50.0 pts)" in result.stdout
    assert "| `b` | ✅ pass | ❌ fail |" in result.stdout
    assert result.stdout.rstrip().endswith("[CI](https://ci.example/9)")
    same = cli.invoke(app, ["compare", str(base), str(base), "--format", "markdown"])
    assert same.exit_code == 0 and "No target changed verdict." in same.stdout
    as_json = cli.invoke(app, ["compare", str(base), str(head), "--format", "json"])
    assert json.loads(as_json.stdout)["pass_rate"]["delta"] == -0.5
    assert_error(
        cli.invoke(app, ["compare", str(base), str(head), "--json", "--format", "markdown"]),
        "--json and --format markdown disagree",
    )
    assert_error(
        cli.invoke(app, ["compare", str(base), str(head), "--link", "CI=https://ci.example"]),
        "--link goes with --format markdown",
    )
    assert_error(
        cli.invoke(
            app, ["compare", str(base), str(head), "--format", "markdown", "--link", "javascript:x"]
        ),
        "TEXT=URL",
    )


def test_compare_markdown_of_the_report_runs_from_files(
    cli: CliRunner, tmp_path: Path, run_a: RunData, run_b: RunData
) -> None:
    a = write_results(tmp_path / "a.jsonl", run_a.info, run_a.evaluations)
    b = write_results(tmp_path / "b.jsonl", run_b.info, run_b.evaluations)
    result = cli.invoke(app, ["compare", str(a), str(b), "--format", "markdown"])
    assert result.exit_code == 0, result.output
    assert "37.5% → 50.0% (+12.5 pts)" in result.stdout
