"""`compare_runs` and `rubricflow compare`: flips, deltas, the regression gate, JSON, runs
from files and from the store, and the properties any comparison has."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner, Result

import rubricflow
from rubricflow import parse_rubric
from rubricflow.cli import app
from rubricflow.compare import Regression, RunComparison, VerdictFlip, compare_runs
from rubricflow.results import Evaluation
from rubricflow.runs import RunData

from .conftest import (
    REPLY,
    deterministic_criteria,
    evaluate_all,
    run_info,
    store_runs,
    write_results,
)

TONE_A, TONE_B = 6 / 7, 7 / 8

# ------------------------------------------------------------------------- the library


def test_flips_and_deltas_between_two_runs(run_a: RunData, run_b: RunData) -> None:
    comparison = compare_runs(run_a, run_b)
    assert isinstance(comparison, RunComparison)
    assert rubricflow.compare_runs is compare_runs
    assert rubricflow.RunComparison is RunComparison
    assert len(comparison.shared) == 8
    assert comparison.only_a == comparison.only_b == []
    assert comparison.warnings == []
    assert comparison.flips == [
        VerdictFlip("t1", "pass", "fail", 1.0, 0.75),
        VerdictFlip("t2", "fail", "pass", 0.75, 1.0),
        VerdictFlip("t6", "incomplete", "pass", 1.0, 1.0),
    ]
    assert comparison.summary_a.pass_rate == 0.375
    assert comparison.summary_b.pass_rate == 0.5
    assert comparison.pass_rate_delta == 0.125
    assert comparison.mean_score_delta == 0.78125 - 0.75
    deltas = {c.criterion_id: c.pass_rate_delta for c in comparison.criteria}
    assert deltas == {"greets": 0.0, "length": 0.0, "secrets": 0.0, "tone": TONE_B - TONE_A}
    tone = comparison.criteria[3]
    assert (tone.pass_rate_a, tone.pass_rate_b) == (TONE_A, TONE_B)
    assert (tone.mean_score_a, tone.mean_score_b) == (TONE_A, TONE_B)
    scores = [(d.target_id, d.delta) for d in comparison.score_deltas]
    assert scores[0] == ("t1", -0.25)  # the largest drop first
    assert scores[-1] == ("t2", 0.25)
    assert [d for _, d in scores[1:-1]] == [0.0] * 6
    assert comparison.regressions() == []


def test_regressions_beyond_a_threshold(run_a: RunData, run_b: RunData) -> None:
    backwards = compare_runs(run_b, run_a)
    overall = Regression("pass_rate", "overall", 0.5, 0.375)
    tone = Regression("criterion", "tone", TONE_B, TONE_A)
    assert backwards.regressions() == [overall, tone]
    assert backwards.regressions(0.01) == [overall, tone]
    assert backwards.regressions(0.05) == [overall]
    assert backwards.regressions(0.125) == []  # a drop must exceed the threshold
    assert str(overall) == "pass rate fell 12.5 points (50.0% -> 37.5%)"
    assert str(tone) == "criterion 'tone' pass rate fell 1.8 points (87.5% -> 85.7%)"


def test_targets_in_one_run_only_and_different_rubrics(run_a: RunData) -> None:
    checks = parse_rubric(
        {"id": "checks", "version": "2.0.0", "criteria": deterministic_criteria()}
    )
    targets = [
        {"id": "t1", "content": "hello, your order ships today"},
        {"id": "t4", "content": "hello, now it is long enough"},
        {"id": "new", "content": "hello new target here"},
    ]
    other = RunData(
        run_info("run-c", rubric_id="checks", rubric_version="2.0.0"),
        evaluate_all(checks, targets),
    )
    comparison = compare_runs(run_a, other)
    assert comparison.shared == ["t1", "t4"]
    assert comparison.only_a == ["t2", "<script>alert(1)</script>", "t5", "t6", "t7", "t8"]
    assert comparison.only_b == ["new"]
    assert comparison.flips == [VerdictFlip("t4", "fail", "pass", 0.5, 1.0)]
    assert comparison.pass_rate_delta == 0.5
    tone = next(c for c in comparison.criteria if c.criterion_id == "tone")
    assert (tone.pass_rate_a, tone.pass_rate_b, tone.pass_rate_delta) == (1.0, None, None)
    assert comparison.warnings == [
        "the runs used different rubrics (A: reply@1.0.0, B: checks@2.0.0); criteria are "
        "compared by criterion id"
    ]
    assert not comparison.same_rubric


# ----------------------------------------------------------------------------- the CLI


def invoke(*args: Any) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture
def files(run_a: RunData, run_b: RunData, tmp_path: Path) -> tuple[Path, Path]:
    return (
        write_results(tmp_path / "a.jsonl", run_a.info, run_a.evaluations),
        write_results(tmp_path / "b.jsonl", run_b.info, run_b.evaluations),
    )


def test_cli_an_improvement_exits_0(files: tuple[Path, Path]) -> None:
    a, b = files
    result = invoke("compare", a, b)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "A: run-a (reply@1.0.0)" in out and "B: run-b (reply@1.0.0)" in out
    assert "targets: 8 in both, 0 only in A, 0 only in B" in out
    assert "pass rate: 37.5% -> 50.0% (+12.5 pts)" in out
    assert "mean score: 0.750 -> 0.781 (+0.031)" in out
    assert "3 verdict flip(s)" in out
    assert "OK: no regression beyond threshold 0" in out
    assert result.stderr == ""


def test_cli_the_threshold_gate(files: tuple[Path, Path]) -> None:
    a, b = files
    result = invoke("compare", b, a)
    assert result.exit_code == 1, result.output
    last = result.stdout.strip().splitlines()[-1]
    assert last.startswith("REGRESSION beyond threshold 0: pass rate fell 12.5 points")
    assert "criterion 'tone' pass rate fell 1.8 points" in last
    result = invoke("compare", b, a, "--threshold", "0.05")
    assert result.exit_code == 1, result.output
    assert "tone" not in result.stdout.strip().splitlines()[-1]
    result = invoke("compare", b, a, "--threshold", "0.2")
    assert result.exit_code == 0, result.output
    assert "OK: no regression beyond threshold 0.2" in result.stdout
    assert invoke("compare", b, a, "--threshold", "1.5").exit_code == 2


def test_cli_json(files: tuple[Path, Path]) -> None:
    a, b = files
    result = invoke("compare", b, a, "--json", "--threshold", "0.05")
    assert result.exit_code == 1, result.output
    document = json.loads(result.stdout)
    assert set(document) == {
        "a",
        "b",
        "targets",
        "pass_rate",
        "mean_score",
        "flips",
        "criteria",
        "score_deltas",
        "warnings",
        "threshold",
        "regressions",
        "regressed",
    }
    assert document["a"]["id"] == "run-b" and document["b"]["id"] == "run-a"
    assert document["a"]["summary"]["pass_rate"] == 0.5
    assert document["targets"] == {"shared": 8, "only_a": [], "only_b": []}
    assert document["pass_rate"] == {"a": 0.5, "b": 0.375, "delta": -0.125}
    assert document["flips"][0] == {
        "target_id": "t1",
        "verdict_a": "fail",
        "verdict_b": "pass",
        "score_a": 0.75,
        "score_b": 1.0,
    }
    assert [c["id"] for c in document["criteria"]] == ["greets", "length", "secrets", "tone"]
    assert document["criteria"][3]["pass_rate_delta"] == TONE_A - TONE_B
    assert document["score_deltas"][0] == {
        "target_id": "t2",
        "score_a": 1.0,
        "score_b": 0.75,
        "delta": -0.25,
    }
    assert document["threshold"] == 0.05
    assert document["regressions"] == [
        {"kind": "pass_rate", "name": "overall", "before": 0.5, "after": 0.375, "drop": 0.125}
    ]
    assert document["regressed"] is True


def test_cli_runs_from_the_store(
    run_a: RunData, run_b: RunData, files: tuple[Path, Path], tmp_path: Path
) -> None:
    db = tmp_path / "runs.db"
    store_runs(db, run_a, run_b)
    stored = invoke("compare", "run-a", "run-b", "--db", db, "--json")
    assert stored.exit_code == 0, stored.output
    from_files = invoke("compare", *files, "--json")
    keep = ("targets", "pass_rate", "mean_score", "flips", "criteria", "score_deltas")
    expected = {k: v for k, v in json.loads(from_files.stdout).items() if k in keep}
    assert {k: v for k, v in json.loads(stored.stdout).items() if k in keep} == expected
    mixed = invoke("compare", "latest", files[0], "--db", db, "--threshold", "0.1")
    assert mixed.exit_code == 1, mixed.output  # run-b is the latest; back to A drops 12.5
    assert "REGRESSION beyond threshold 0.1: pass rate fell 12.5 points" in mixed.stdout


def test_cli_warns_when_the_rubrics_differ(run_a: RunData, tmp_path: Path) -> None:
    checks = parse_rubric(
        {"id": "checks", "version": "2.0.0", "criteria": deterministic_criteria()}
    )
    other = evaluate_all(checks, [{"id": "t1", "content": "hello, your order ships today"}])
    a = write_results(tmp_path / "a.jsonl", run_a.info, run_a.evaluations)
    c = write_results(
        tmp_path / "c.jsonl", run_info("run-c", rubric_id="checks", rubric_version="2.0.0"), other
    )
    result = invoke("compare", a, c)
    assert result.exit_code == 0, result.output
    assert "warning: the runs used different rubrics (A: reply@1.0.0, B: checks@2.0.0)" in (
        result.stderr
    )


def assert_usage_error(result: Result, *fragments: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr


def test_cli_input_errors(run_a: RunData, files: tuple[Path, Path], tmp_path: Path) -> None:
    a, _ = files
    db = tmp_path / "runs.db"
    store_runs(db, run_a)
    assert_usage_error(invoke("compare", a, "nope", "--db", db), "no run 'nope'")
    assert_usage_error(invoke("compare", "gone.jsonl", a), "gone.jsonl: no such results file")
    disjoint = evaluate_all(REPLY, [{"id": "elsewhere", "content": "hello there friend"}])
    other = write_results(tmp_path / "other.jsonl", run_info("run-x"), disjoint)
    assert_usage_error(invoke("compare", a, other), "share no target ids")
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"run": {"id": "x"}}\n[1, 2]\n', encoding="utf-8")
    assert_usage_error(invoke("compare", a, broken), "broken.jsonl line 2: expected a JSON object")


# ------------------------------------------------------------------------- properties

CONTENTS = [
    "hello, your order ships today",
    "hello, you are rude and slow",
    "bye",
    "hi",
    "hello garble garble garble",
    "use key sk-abcdefghijklmnopqrstuvwxyz0123 now please",
    "hello there friend",
]
_EVALUATED: dict[tuple[str, str], Evaluation] = {}


def evaluated(target_id: str, content: str) -> Evaluation:
    """A real evaluation of the target, evaluated once per (id, content)."""
    key = (target_id, content)
    if key not in _EVALUATED:
        _EVALUATED[key] = evaluate_all(REPLY, [{"id": target_id, "content": content}])[0]
    return _EVALUATED[key]


runs = st.lists(st.sampled_from(CONTENTS), min_size=0, max_size=6).map(
    lambda contents: [evaluated(f"t{i}", c) for i, c in enumerate(contents)]
)
PROPERTY_SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def negated(value: float | None) -> float | None:
    return None if value is None else -value


@PROPERTY_SETTINGS
@given(runs)
def test_a_run_compared_with_itself_has_no_change(evaluations: list[Evaluation]) -> None:
    run = RunData(run_info("same"), evaluations)
    comparison = compare_runs(run, run)
    assert comparison.flips == []
    assert comparison.only_a == comparison.only_b == []
    assert comparison.pass_rate_delta in ((0.0,) if evaluations else (None,))
    assert comparison.mean_score_delta in (0.0, None)
    assert all(c.pass_rate_delta in (0.0, None) for c in comparison.criteria)
    assert all(c.mean_score_delta in (0.0, None) for c in comparison.criteria)
    assert all(d.delta == 0.0 for d in comparison.score_deltas)
    assert comparison.regressions() == []


@PROPERTY_SETTINGS
@given(runs, runs)
def test_swapping_the_runs_negates_every_delta(
    first: list[Evaluation], second: list[Evaluation]
) -> None:
    a, b = RunData(run_info("a"), first), RunData(run_info("b"), second)
    ab, ba = compare_runs(a, b), compare_runs(b, a)
    assert sorted(ab.shared) == sorted(ba.shared)
    assert (ab.only_a, ab.only_b) == (ba.only_b, ba.only_a)
    assert ba.pass_rate_delta == negated(ab.pass_rate_delta)
    assert ba.mean_score_delta == negated(ab.mean_score_delta)
    forward = {c.criterion_id: c for c in ab.criteria}
    backward = {c.criterion_id: c for c in ba.criteria}
    assert set(forward) == set(backward)
    for name, criterion in forward.items():
        assert backward[name].pass_rate_delta == negated(criterion.pass_rate_delta)
        assert backward[name].mean_score_delta == negated(criterion.mean_score_delta)
    assert {d.target_id: -d.delta for d in ab.score_deltas} == {
        d.target_id: d.delta for d in ba.score_deltas
    }
    assert {(f.target_id, f.verdict_b, f.verdict_a) for f in ab.flips} == {
        (f.target_id, f.verdict_a, f.verdict_b) for f in ba.flips
    }
    for regression in ab.regressions():  # a drop one way is a rise the other way
        if regression.kind == "pass_rate":
            assert (ba.pass_rate_delta or 0.0) > 0
        else:
            assert (backward[regression.name].pass_rate_delta or 0.0) > 0
