"""`rubricflow eval`: exit codes, JSON lines, human output, stdin, ordering, and no
tracebacks for bad input."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from rubricflow.cli import app
from rubricflow.plugins import BLOCK_ENV
from rubricflow.results import Target

FIXTURES = Path(__file__).parent.parent / "fixtures" / "eval"
RUBRIC = FIXTURES / "rubric.yaml"

LINE_KEYS = {
    "target_id",
    "usage",
    "rubric_id",
    "rubric_version",
    "verdict",
    "passed",
    "score",
    "scaled_score",
    "raw_score",
    "coverage",
    "threshold",
    "margin",
    "feedback",
    "criteria",
}
CRITERION_KEYS = {
    "id",
    "status",
    "verdict",
    "level",
    "score",
    "confidence",
    "confidence_source",
    "evidence",
    "notes",
}

FINISHED: list[str] = []


async def sleepy_check(target: Target) -> bool:
    """Imported by rubrics in these tests (`--allow-import`): sleeps as long as the target
    asks, then records that it finished."""
    await asyncio.sleep(float(target.metadata["delay"]))
    FINISHED.append(str(target.id))
    return True


@pytest.fixture(autouse=True)
def _no_blocking_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BLOCK_ENV, raising=False)


def run(cli: CliRunner, *args: Any, input: str | None = None) -> Result:
    return cli.invoke(app, ["eval", *map(str, args)], input=input)


def json_lines(result: Result) -> list[dict[str, Any]]:
    lines = result.stdout.splitlines()
    assert lines, result.output
    return [json.loads(line) for line in lines]


def assert_usage_error(result: Result, *fragments: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    assert "error" in result.stderr.lower()
    for fragment in fragments:
        assert fragment in result.output


# --- exit codes --------------------------------------------------------------------------


def test_every_target_passing_exits_0(cli: CliRunner) -> None:
    result = run(cli, RUBRIC, FIXTURES / "all_pass.jsonl", "--json")

    assert result.exit_code == 0, result.output
    assert [line["verdict"] for line in json_lines(result)] == ["pass", "pass"]


def test_a_failing_target_exits_1(cli: CliRunner) -> None:
    result = run(cli, RUBRIC, FIXTURES / "mixed.jsonl", "--json")

    assert result.exit_code == 1, result.output
    assert [(line["target_id"], line["verdict"]) for line in json_lines(result)] == [
        ("good", "pass"),
        ("line-3", "fail"),
    ]


def test_an_incomplete_target_exits_1(cli: CliRunner) -> None:
    result = run(cli, FIXTURES / "unknown_function.yaml", FIXTURES / "all_pass.jsonl", "--json")

    assert result.exit_code == 1, result.output
    lines = json_lines(result)
    assert {line["verdict"] for line in lines} == {"incomplete"}
    mystery = next(c for c in lines[0]["criteria"] if c["id"] == "mystery")
    assert mystery["status"] == "error"
    assert "no_such_check" in mystery["notes"]


def test_a_missing_rubric_file_exits_2(cli: CliRunner, tmp_path: Path) -> None:
    result = run(cli, tmp_path / "nope.yaml", FIXTURES / "all_pass.jsonl")

    assert_usage_error(result, "nope.yaml")


def test_a_missing_target_file_exits_2(cli: CliRunner, tmp_path: Path) -> None:
    result = run(cli, RUBRIC, tmp_path / "absent.jsonl")

    assert_usage_error(result, "absent.jsonl")


def test_a_malformed_target_line_exits_2_naming_the_line(cli: CliRunner) -> None:
    result = run(cli, RUBRIC, FIXTURES / "malformed.jsonl", "--json")

    assert_usage_error(result, "malformed.jsonl", "line 2")
    # nothing is lost: the target read before the broken line is still judged and printed
    assert [line["target_id"] for line in json_lines(result)] == ["good"]
    assert '"never"' not in result.stdout


def test_several_rubrics_without_rubric_id_exits_2(cli: CliRunner) -> None:
    result = run(cli, FIXTURES / "multi.yaml", FIXTURES / "all_pass.jsonl")

    assert_usage_error(result, "--rubric-id", "lenient", "strict")


def test_rubric_id_picks_one_of_several_rubrics(cli: CliRunner) -> None:
    result = run(
        cli, FIXTURES / "multi.yaml", FIXTURES / "mixed.jsonl", "--json", "--rubric-id", "strict"
    )

    assert result.exit_code == 1, result.output
    lines = json_lines(result)
    assert {(line["rubric_id"], line["rubric_version"]) for line in lines} == {("strict", "2.0.0")}
    assert [line["verdict"] for line in lines] == ["pass", "fail"]


def test_an_unknown_rubric_id_exits_2_listing_the_ids(cli: CliRunner) -> None:
    result = run(cli, FIXTURES / "multi.yaml", FIXTURES / "all_pass.jsonl", "--rubric-id", "other")

    assert_usage_error(result, "'other'", "lenient", "strict")


def test_module_function_in_the_rubric_without_allow_import_exits_2(cli: CliRunner) -> None:
    result = run(cli, FIXTURES / "imports_code.yaml", FIXTURES / "all_pass.jsonl")

    assert_usage_error(result, "os.path:isfile", "--allow-import")


def test_allow_import_runs_the_named_code(cli: CliRunner, tmp_path: Path) -> None:
    rubric = tmp_path / "rubric.yaml"
    rubric.write_text(
        "id: imports\ncriteria:\n  - id: waited\n    scoring:\n      method: deterministic\n"
        f"      function: '{__name__}:sleepy_check'\n",
        encoding="utf-8",
    )
    target = tmp_path / "t.jsonl"
    target.write_text('{"id": "a", "content": "x", "metadata": {"delay": 0}}\n', encoding="utf-8")

    refused = run(cli, rubric, target, "--json")
    allowed = run(cli, rubric, target, "--json", "--allow-import")

    assert refused.exit_code == 2
    assert allowed.exit_code == 0, allowed.output
    assert json_lines(allowed)[0]["criteria"][0]["verdict"] == "MET"


@pytest.mark.parametrize("value", ["0", "-1", "many"])
def test_a_bad_concurrency_is_a_usage_error(cli: CliRunner, value: str) -> None:
    result = run(cli, RUBRIC, FIXTURES / "all_pass.jsonl", "--concurrency", value)

    assert result.exit_code == 2
    assert "Traceback" not in result.output


def test_an_unknown_format_exits_2(cli: CliRunner) -> None:
    result = run(cli, RUBRIC, FIXTURES / "all_pass.jsonl", "--format", "no-such-format")

    assert_usage_error(result, "no-such-format", "native")


def test_an_explicit_format_is_used(cli: CliRunner) -> None:
    result = run(cli, RUBRIC, FIXTURES / "all_pass.jsonl", "--format", "native", "--json")

    assert result.exit_code == 0, result.output


# --- JSON output -------------------------------------------------------------------------


def test_json_prints_one_object_per_target_per_line(cli: CliRunner) -> None:
    result = run(cli, RUBRIC, FIXTURES / "mixed.jsonl", "--json", "--concurrency", "1")

    lines = json_lines(result)
    assert len(result.stdout.splitlines()) == 2
    assert result.stdout.endswith("\n")
    for line in lines:
        assert set(line) == LINE_KEYS
        assert line["rubric_id"] == "reply-check"
        assert line["rubric_version"] == "1.2.0"
        assert [c["id"] for c in line["criteria"]] == ["nonempty", "short"]
        for criterion in line["criteria"]:
            assert set(criterion) == CRITERION_KEYS
    good, wordy = lines
    assert good["passed"] is True and good["score"] == 1.0 and good["coverage"] == 1.0
    assert good["raw_score"] == 2.0 and good["scaled_score"] == 1.0
    assert wordy["passed"] is False and wordy["score"] == 0.5
    short = wordy["criteria"][1]
    assert short["status"] == "scored"
    assert short["verdict"] == "UNMET"
    assert short["score"] == 0.0
    assert short["level"] is None
    assert short["evidence"] == ["9 words (allowed 0..5)"]
    assert "What to fix" in wordy["feedback"]


def test_criteria_concurrency_does_not_change_the_results(cli: CliRunner) -> None:
    def verdicts(*extra: str) -> list[Any]:
        result = run(cli, RUBRIC, FIXTURES / "mixed.jsonl", "--json", *extra)
        return [
            (line["target_id"], line["verdict"], line["score"], line["criteria"])
            for line in json_lines(result)
        ]

    assert verdicts("--concurrency", "1") == verdicts("-c", "8")


def test_a_single_json_object_file(cli: CliRunner) -> None:
    result = run(cli, RUBRIC, FIXTURES / "one_target.json", "--json")

    assert result.exit_code == 0, result.output
    assert [(line["target_id"], line["verdict"]) for line in json_lines(result)] == [
        ("single", "pass")
    ]


# --- stdin -------------------------------------------------------------------------------


def test_stdin_jsonl(cli: CliRunner) -> None:
    text = (
        '{"id": "a", "content": "hi there"}\n'
        '{"id": "b", "content": "one two three four five six"}\n'
    )

    result = run(cli, RUBRIC, "-", "--json", input=text)

    assert result.exit_code == 1, result.output
    assert [(line["target_id"], line["verdict"]) for line in json_lines(result)] == [
        ("a", "pass"),
        ("b", "fail"),
    ]


def test_stdin_one_pretty_printed_json_object(cli: CliRunner) -> None:
    text = json.dumps({"id": "pretty", "content": "short and sweet"}, indent=2) + "\n"

    result = run(cli, RUBRIC, "-", "--json", input=text)

    assert result.exit_code == 0, result.output
    assert [(line["target_id"], line["verdict"]) for line in json_lines(result)] == [
        ("pretty", "pass")
    ]


def test_empty_stdin_exits_2(cli: CliRunner) -> None:
    result = run(cli, RUBRIC, "-", input="")

    assert_usage_error(result, "stdin")


# --- human output ------------------------------------------------------------------------


def test_human_output_shows_verdicts_and_what_to_fix(cli: CliRunner) -> None:
    result = run(cli, RUBRIC, FIXTURES / "mixed.jsonl")

    assert result.exit_code == 1
    out = result.stdout
    assert "good: PASS" in out
    assert "line-3: FAIL" in out
    assert "What to fix:" in out
    assert "- short: meet the requirement: At most five words" in out
    assert out.index("good: PASS") < out.index("line-3: FAIL") < out.index("What to fix:")
    assert "2 target(s): 1 passed, 1 failed, 0 incomplete" in out


def test_human_output_for_a_passing_target_has_nothing_to_fix(cli: CliRunner) -> None:
    result = run(cli, RUBRIC, FIXTURES / "all_pass.jsonl")

    assert result.exit_code == 0
    assert "hello: PASS" in result.stdout
    assert "short: PASS" in result.stdout
    assert "What to fix" not in result.stdout
    assert "2 target(s): 2 passed, 0 failed, 0 incomplete" in result.stdout


# --- ordering ----------------------------------------------------------------------------


def test_output_order_is_input_order_whatever_finishes_first(
    cli: CliRunner, tmp_path: Path
) -> None:
    rubric = tmp_path / "slow.yaml"
    rubric.write_text(
        "id: slow\ncriteria:\n  - id: waited\n    scoring:\n      method: deterministic\n"
        f"      function: '{__name__}:sleepy_check'\n",
        encoding="utf-8",
    )
    delays = [0.3, 0.0, 0.2, 0.05, 0.25, 0.0, 0.1]
    ids = [f"t{index}" for index in range(len(delays))]
    targets = tmp_path / "targets.jsonl"
    targets.write_text(
        "".join(
            json.dumps({"id": i, "content": "x", "metadata": {"delay": d}}) + "\n"
            for i, d in zip(ids, delays, strict=True)
        ),
        encoding="utf-8",
    )
    FINISHED.clear()

    result = run(cli, rubric, targets, "--json", "--allow-import", "--targets-in-flight", "4")

    assert result.exit_code == 0, result.output
    assert [line["target_id"] for line in json_lines(result)] == ids
    assert sorted(FINISHED) == sorted(ids)
    assert ids != FINISHED  # the targets really were evaluated concurrently


# --- the real console script -------------------------------------------------------------


def console_script() -> str:
    path = shutil.which("rubricflow", path=str(Path(sys.executable).parent))
    assert path is not None, "the rubricflow console script is not installed next to python"
    return path


def test_console_script_reports_bad_input_without_a_traceback() -> None:
    env = {k: v for k, v in os.environ.items() if k not in (BLOCK_ENV, "RUBRICFLOW_DEBUG")}
    done = subprocess.run(
        [console_script(), "eval", str(RUBRIC), str(FIXTURES / "malformed.jsonl")],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )

    assert done.returncode == 2
    assert "Traceback" not in done.stdout + done.stderr
    assert "malformed.jsonl line 2" in done.stderr


def test_console_script_reads_stdin_and_prints_json_lines() -> None:
    env = {k: v for k, v in os.environ.items() if k != BLOCK_ENV}
    text = '{"id": "a", "content": "hello"}\n{"id": "b", "content": "a b c d e f g"}\n'
    done = subprocess.run(
        [console_script(), "eval", str(RUBRIC), "-", "--json"],
        input=text,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )

    assert done.returncode == 1, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(line["target_id"], line["verdict"]) for line in lines] == [
        ("a", "pass"),
        ("b", "fail"),
    ]
    assert done.stderr == ""


# --- streaming -------------------------------------------------------------------------

_PEAK_PROBE = (
    "import resource, sys\n"
    "from rubricflow.cli import main\n"
    "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
    "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
)


def _peak_kib_of_eval(tmp_path: Path, count: int) -> int:
    targets = tmp_path / f"targets-{count}.jsonl"
    with targets.open("w") as out:
        for i in range(count):
            line = {"id": f"t{i}", "content": f"a reply numbered {i}, " * 4}
            out.write(json.dumps(line) + "\n")
    done = subprocess.run(
        [sys.executable, "-c", _PEAK_PROBE, "eval", str(RUBRIC), str(targets), "--json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=600,
    )
    return int(done.stderr.strip().splitlines()[-1])


def test_eval_memory_stays_flat_however_long_the_input(tmp_path: Path) -> None:
    """Fifteen times the targets, the same peak memory: evaluations are written as they
    finish, never collected (holding 14,000 more would cost tens of MB)."""
    small = _peak_kib_of_eval(tmp_path, 1_000)
    large = _peak_kib_of_eval(tmp_path, 15_000)
    assert large - small < 10 * 1024, (small, large)
