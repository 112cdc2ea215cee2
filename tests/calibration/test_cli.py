"""`rubricflow calibrate` end to end: a real HTTP judge (the scripted OpenAI-compatible
server of tests/llm) agreeing on some examples and not on others; the figures must be the
ones computed by hand in data.py. Plus the --min-kappa gate, --json, and bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from llm.scripted import Recorded, Reply, ScriptedServer, openai_reply, schema_of
from typer.testing import CliRunner

from rubricflow.cli import app

from .data import EXAMPLES, JUDGE, UNABLE, check_report, write_files


def judge(request: Recorded) -> Reply:
    """Answer as data.JUDGE says, for the example whose marker is in the prompt."""
    text = request.text
    example = next(key for key in JUDGE if f"[{key}]" in text)
    properties = (schema_of(request) or {}).get("properties", {})
    if "level_id" in properties:
        return openai_reply({"reasoning": "r", "level_id": JUDGE[example]["depth"]})
    if "score" in properties:
        return openai_reply({"reasoning": "r", "score": JUDGE[example]["quality"]})
    answer = JUDGE[example]["tone"]
    if answer == UNABLE:
        return openai_reply({"reasoning": "r", "verdict": "PERHAPS"})  # invalid, every time
    return openai_reply({"reasoning": "r", "verdict": answer})


@pytest.fixture
def http_judge() -> Any:
    with ScriptedServer(judge) as running:
        yield running


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    return write_files(tmp_path)


def run(*args: Any) -> Any:
    return CliRunner().invoke(app, ["calibrate", *map(str, args)])


def spec(server: ScriptedServer) -> str:
    return f"openai:judge@{server.url}/v1"


def test_json_holds_the_hand_computed_figures(
    files: tuple[Path, Path], http_judge: ScriptedServer
) -> None:
    rubric_file, labels = files
    result = run(rubric_file, labels, "--llm", spec(http_judge), "--json", "--no-cache")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    check_report(report)
    assert set(report) == {
        "rubric",
        "examples",
        "bootstrap",
        "criteria",
        "overall",
        "disagreements",
        "unscored",
        "usage",
    }
    assert report["bootstrap"] == {
        "resamples": 1000,
        "confidence": 0.95,
        "seed": 0,
        "method": "percentile, resampling examples",
    }
    tone = report["criteria"][0]
    assert set(tone["accuracy"]) == {"value", "ci", "undefined_reason"}
    assert set(tone["accuracy"]["ci"]) == {"low", "high", "confidence", "resamples", "used"}
    assert tone["accuracy"]["ci"]["low"] <= 0.6 <= tone["accuracy"]["ci"]["high"]
    # the judge was really asked: 6 examples x 3 LLM criteria, plus one re-ask for e6's tone
    assert len(http_judge.requests) == 6 * 3 + 1
    assert report["usage"]["llm_calls"] == len(http_judge.requests)
    assert "'PERHAPS' is not one of ['MET', 'UNMET']" in report["unscored"][0]["notes"]


def test_the_tables_show_figures_matrices_and_what_was_not_scored(
    files: tuple[Path, Path], http_judge: ScriptedServer
) -> None:
    rubric_file, labels = files
    result = run(rubric_file, labels, "--llm", spec(http_judge), "--seed", "3")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "Calibration of answers@2.0.0 on 6 labelled example(s)" in out
    for figure in ("0.600", "0.167", "0.400", "0.211", "0.483", "0.706", "0.720", "0.397"):
        assert figure in out, figure
    assert "n/a" in out
    assert (
        "safe: kappa n/a: both raters labelled all 4 item(s) 'MET', so chance agreement is 1" in out
    )
    assert "percentile bootstrap, 1000 resamples of the examples, seed 3" in out
    assert "tone: rows human, columns judge (n=5)" in out
    assert "depth: rows human, columns judge (n=5)" in out
    assert "human \\ judge" in out
    depth_header = next(
        line for line in out.splitlines() if "human \\ judge" in line and "shallow" in line
    )
    assert (
        depth_header.index("shallow")
        < depth_header.index("adequate")
        < depth_header.index("good")
        < depth_header.index("thorough")
    )
    assert "1 labelled decision(s) the judge did not score" in out
    assert "e6 / tone: unable_to_evaluate" in out
    assert "LLM usage: 19 LLM calls" in out
    assert "Traceback" not in result.output


def test_min_kappa_gates_on_every_criterion_with_a_defined_kappa(
    files: tuple[Path, Path], http_judge: ScriptedServer
) -> None:
    rubric_file, labels = files
    llm = spec(http_judge)
    passing = run(rubric_file, labels, "--llm", llm, "--min-kappa", "0.1")
    assert passing.exit_code == 0, passing.output
    assert "gate passed: every defined kappa is at least 0.1" in passing.stdout
    assert "kappa of safe is undefined, so not checked against --min-kappa 0.1" in passing.stdout

    failing = run(rubric_file, labels, "--llm", llm, "--min-kappa", "0.2", "--json")
    assert failing.exit_code == 1
    assert json.loads(failing.stdout)["gate"] == {
        "min_kappa": 0.2,
        "passed": False,
        "below": ["tone"],
        "unchecked": ["safe"],
    }
    strict = run(rubric_file, labels, "--llm", llm, "--min-kappa", "0.5")
    assert strict.exit_code == 1
    assert "gate FAILED: kappa below 0.5 for tone (0.167), depth (0.211), quality (0.333)" in (
        strict.stdout
    )
    # later runs are answered from the cache, except e6's tone: an unusable answer is not
    # cached, so each run asks (and re-asks) again
    assert len(http_judge.requests) == 19 + 2 + 2


def test_seed_makes_intervals_reproducible(
    files: tuple[Path, Path], http_judge: ScriptedServer
) -> None:
    rubric_file, labels = files
    llm = spec(http_judge)
    first = json.loads(run(rubric_file, labels, "--llm", llm, "--json", "--seed", "5").stdout)
    again = json.loads(run(rubric_file, labels, "--llm", llm, "--json", "--seed", "5").stdout)
    other = json.loads(run(rubric_file, labels, "--llm", llm, "--json", "--seed", "6").stdout)
    first.pop("usage"), again.pop("usage")  # the second run was answered from the cache
    assert first == again
    assert first["criteria"] != other["criteria"]
    check_report(other)
    small = run(rubric_file, labels, "--llm", llm, "--json", "--resamples", "0")
    report = json.loads(small.stdout)
    check_report(report)
    assert all(c["kappa"]["ci"] is None for c in report["criteria"])
    wide = json.loads(
        run(rubric_file, labels, "--llm", llm, "--json", "--confidence", "0.5").stdout
    )
    assert wide["criteria"][0]["accuracy"]["ci"]["confidence"] == 0.5


def test_samples_ask_the_judge_several_times(
    files: tuple[Path, Path], http_judge: ScriptedServer
) -> None:
    rubric_file, labels = files
    result = run(
        rubric_file, labels, "--llm", spec(http_judge), "--samples", "3", "--no-cache", "--json"
    )
    assert result.exit_code == 0, result.output
    levels = [r for r in http_judge.requests if "level_id" in (schema_of(r) or {})["properties"]]
    assert len(levels) == 6 * 3
    check_report(json.loads(result.stdout))


def test_a_rubric_of_checks_needs_no_judge(tmp_path: Path) -> None:
    rubric_file = tmp_path / "checks.yaml"
    rubric_file.write_text(
        "id: checks\ncriteria:\n  - id: refund\n    scoring:\n      method: deterministic\n"
        "      function: contains_all\n      config: {terms: [30 days]}\n"
    )
    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        '{"content": "30 days", "labels": {"refund": "MET"}}\n'
        '{"content": "never", "labels": {"refund": "MET"}}\n'
        "\n"
        '{"content": "no", "labels": {"refund": false}}\n'
    )
    result = run(rubric_file, labels, "--json", "--min-kappa", "0.9")
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    refund = report["criteria"][0]
    # UNMET: 1 0 / MET: 1 1 -> p_o = 2/3, r = (1, 2), c = (2, 1), p_e = (2 + 2)/9 = 4/9
    # kappa = (6/9 - 4/9) / (5/9) = 2/5
    assert refund["confusion_matrix"]["counts"] == [[1, 0], [1, 1]]
    assert refund["kappa"]["value"] == pytest.approx(0.4)
    assert report["disagreements"] == [
        {
            "example_id": "line-2",
            "criterion_id": "refund",
            "human": "MET",
            "judge": "UNMET",
            "status": "scored",
            "notes": "",
        }
    ]
    assert report["usage"]["llm_calls"] == 0


def bad_lines(name: str) -> tuple[str, str]:
    """(file text, the message it must give) for one kind of bad labels file."""
    good = json.dumps(EXAMPLES[0])
    return {
        "malformed": (
            good + '\n{"content": "x", "labels": {"tone": MET}}\n',
            "labels.jsonl line 2: malformed JSON at column 37: Expecting value; write one "
            "JSON object per line",
        ),
        "unknown criterion": (
            good + "\n\n" + '{"content": "x", "labels": {"polite": "MET"}}\n',
            "labels.jsonl line 3, field `labels.polite`: rubric 'answers' has no criterion "
            "'polite'; use one of its criterion ids: tone, depth, quality, refund, safe",
        ),
        "bad verdict": (
            '{"content": "x", "labels": {"tone": "PASS"}}\n',
            'labels.jsonl line 1, field `labels.tone`: "PASS" is not a valid label for '
            "binary criterion 'tone'; use one of: MET, UNMET, true, false (or null for no label)",
        ),
        "bad level": (
            good + '\n{"content": "x", "labels": {"depth": "excellent"}}\n',
            'labels.jsonl line 2, field `labels.depth`: "excellent" is not a valid level id '
            "for levels criterion 'depth'; use one of: shallow, adequate, good, thorough",
        ),
        "no labels": (
            '{"content": "x"}\n',
            'labels.jsonl line 1, field `labels`: missing; add the human labels, e.g. "labels": '
            '{"tone": "MET"}',
        ),
        "no content": (
            '{"id": "a", "labels": {"tone": "MET"}}\n',
            "labels.jsonl line 1: a target needs `content`",
        ),
        "not an object": (
            '["x"]\n',
            "labels.jsonl line 1: an example is a JSON object with `content` and `labels`, "
            "got list",
        ),
        "empty": (
            "\n  \n",
            "labels.jsonl: holds no labelled examples; write one JSON object per line",
        ),
    }[name]


@pytest.mark.parametrize(
    "kind",
    [
        "malformed",
        "unknown criterion",
        "bad verdict",
        "bad level",
        "no labels",
        "no content",
        "not an object",
        "empty",
    ],
)
def test_bad_labels_files_exit_2_naming_line_field_and_fix(tmp_path: Path, kind: str) -> None:
    rubric_file, labels = write_files(tmp_path)
    text, message = bad_lines(kind)
    labels.write_text(text)
    # no --llm: the labels are checked before any judge is needed
    result = run(rubric_file, labels)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert result.output.startswith("error: ")
    assert message in result.output
    assert str(labels) in result.output


def test_other_input_errors_exit_2(tmp_path: Path) -> None:
    rubric_file, labels = write_files(tmp_path)
    missing = run(rubric_file, tmp_path / "nope.jsonl")
    assert missing.exit_code == 2 and "nope.jsonl: no such file; check the path" in missing.output
    no_judge = run(rubric_file, labels)
    assert no_judge.exit_code == 2
    assert "criteria tone, depth, quality are judged by an LLM" in no_judge.output
    confidence = run(rubric_file, labels, "--confidence", "1.5")
    assert confidence.exit_code == 2
    assert "--confidence must be between 0 and 1 (exclusive), got 1.5" in confidence.output
    gate = run(rubric_file, labels, "--min-kappa", "3")
    assert gate.exit_code == 2
    bad_rubric = run(labels, labels)  # a labels file is no rubric
    assert bad_rubric.exit_code == 2
    assert "labels.jsonl: matches no known rubric format" in bad_rubric.output
    for result in (missing, no_judge, confidence, gate, bad_rubric):
        assert "Traceback" not in result.output
