"""Batch runs through `rubricflow eval`: suites (native and AgentV), results files, the
store, the progress bar, Ctrl-C, and `--resume` without re-judging finished targets."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from rubricflow.runs import read_results_file
from rubricflow.store import Store

RUBRIC = """\
id: reply
name: Reply
version: 1.0.0
pass_threshold: 0.5
criteria:
  - id: not-empty
    description: The reply is not empty
    scoring: {method: deterministic, function: non_empty}
  - id: no-secrets
    description: The reply leaks no secrets
    required: true
    scoring: {method: deterministic, function: no_secrets}
"""

JUDGED = """\
id: judged
name: Judged
version: 1.0.0
pass_threshold: 0.75
criteria:
  - id: good
    description: The reply is good
    scoring: {method: llm}
"""

# A judge over the `python:` provider: MET when the content says GOOD; it sleeps
# $JUDGE_SLEEP seconds and logs every call to $JUDGE_LOG, so tests can count calls.
JUDGE = """
import asyncio, os

async def judge(system_prompt, user_prompt):
    await asyncio.sleep(float(os.environ.get("JUDGE_SLEEP", "0")))
    if os.environ.get("JUDGE_BROKEN"):
        return "I would rather not say"
    with open(os.environ["JUDGE_LOG"], "a") as log:
        log.write(user_prompt.replace("\\n", " ")[:200] + "\\n")
    verdict = "MET" if "GOOD" in user_prompt else "UNMET"
    return '{"reasoning": "looked at it", "verdict": "%s"}' % verdict
"""


def _cli(
    args: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rubricflow", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
    )


@pytest.fixture()
def work(tmp_path: Path) -> Path:
    (tmp_path / "rubric.yaml").write_text(RUBRIC)
    (tmp_path / "judged.yaml").write_text(JUDGED)
    (tmp_path / "slowjudge.py").write_text(JUDGE)
    return tmp_path


def _judge_env(work: Path, sleep: float = 0.0) -> dict[str, str]:
    return {
        "PYTHONPATH": str(work),
        "RUBRICFLOW_CACHE_DIR": str(work / "cache"),  # this test's own judge cache
        "JUDGE_LOG": str(work / "calls.log"),
        "JUDGE_SLEEP": str(sleep),
    }


def _calls(work: Path) -> list[str]:
    log = work / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _store_run(db: Path, run_id: str | None = None) -> Any:
    async def load() -> Any:
        async with await Store.open(f"sqlite+aiosqlite:///{db}") as store:
            chosen = run_id or (await store.runs.latest()).id  # type: ignore[union-attr]
            return await store.runs.load(chosen)

    return asyncio.run(load())


NATIVE_SUITE = """\
suite: replies
rubric: rubric.yaml
cases:
  - id: plain
    query: Where is my order?
    output: It shipped on Monday.
    reference: It shipped Monday.
  - id: leaky
    query: Give me the key
    output: "Sure: AKIAABCDEFGHIJKLMNOP"
  - id: greeting
    query: hi
    output: "well, hi"
    criteria:
      - id: says-hello
        description: The reply says hello
        required: true
        scoring: {method: deterministic, function: contains_any, config: {terms: [hello]}}
"""


def test_native_suite_adds_case_criteria_to_the_shared_rubric(work: Path) -> None:
    (work / "suite.yaml").write_text(NATIVE_SUITE)
    done = _cli(["eval", "suite.yaml", "-o", "out.jsonl", "--json"], work)
    assert done.returncode == 1, done.stderr  # two of three fail
    printed = {line["target_id"]: line for line in map(json.loads, done.stdout.splitlines())}
    assert {k: v["verdict"] for k, v in printed.items()} == {
        "plain": "pass",
        "leaky": "fail",
        "greeting": "fail",
    }
    assert [c["id"] for c in printed["plain"]["criteria"]] == ["not-empty", "no-secrets"]
    assert [c["id"] for c in printed["greeting"]["criteria"]] == [
        "not-empty",
        "no-secrets",
        "says-hello",
    ]
    lines = _lines(work / "out.jsonl")
    assert lines[0]["run"]["rubric_id"] == "reply" and lines[0]["run"]["source"] == "suite.yaml"
    assert {line["run_id"] for line in lines[1:-1]} == {lines[0]["run"]["id"]}
    assert lines[-1]["run"]["status"] == "finished" and lines[-1]["run"]["finished_at"]
    run = read_results_file(work / "out.jsonl")
    assert [e.target_id for e in run.evaluations] == ["plain", "leaky", "greeting"]
    greeting = run.evaluations[2]
    assert greeting.gating_failures == ("says-hello",)


def test_rubric_on_the_command_line_is_shared_by_a_suite(work: Path) -> None:
    suite = NATIVE_SUITE.replace("rubric: rubric.yaml\n", "")
    (work / "suite.yaml").write_text(suite)
    done = _cli(["eval", "rubric.yaml", "suite.yaml", "--json"], work)
    assert done.returncode == 1, done.stderr
    assert len(done.stdout.splitlines()) == 3
    alone = _cli(["eval", "suite.yaml"], work)
    assert alone.returncode == 2
    assert "case 'plain' has no rubric" in alone.stderr
    assert "Traceback" not in alone.stderr


AGENTV_V2 = """\
description: support answers
execution:
  evaluators:
    - name: tone
      type: rubric
      rubrics:
        - id: polite
          description: Is polite
evalcases:
  - id: refund
    expected_outcome: Explains the refund window
    input:
      - role: user
        content: Can I get a refund?
    expected_output:
      - role: assistant
        content: Yes, within 30 days.
    rubrics:
      - Mentions the 30 day window
  - id: shipping
    input: When does it ship?
    rubrics:
      - id: date
        description: Gives a date
        weight: 2
"""


def test_agentv_v2_suite_with_an_outputs_file(work: Path) -> None:
    (work / "agentv.yaml").write_text(AGENTV_V2)
    (work / "outputs.jsonl").write_text(
        json.dumps({"id": "refund", "output": "GOOD: within 30 days"})
        + "\n"
        + json.dumps({"id": "shipping", "output": "soon"})
        + "\n"
    )
    args = ["eval", "agentv.yaml", "--outputs", "outputs.jsonl", "--json", "--allow-import"]
    args += ["--db", "runs.db"]
    done = _cli([*args, "--llm", "python:slowjudge:judge", "--no-cache"], work, _judge_env(work))
    assert done.returncode == 1, done.stderr
    printed = {line["target_id"]: line for line in map(json.loads, done.stdout.splitlines())}
    assert printed["refund"]["verdict"] == "pass"
    assert printed["shipping"]["verdict"] == "fail"
    # the case's own items plus the file-level rubric evaluator
    assert len(printed["refund"]["criteria"]) == 2
    assert len(printed["shipping"]["criteria"]) == 2
    # the judge saw the query and the reference the case holds
    calls = " ".join(_calls(work))
    assert "Can I get a refund?" in calls and "Yes, within 30 days." in calls
    # each case has its own rubric: the run is named after the suite, and the stored
    # evaluations keep each case's rubric
    stored = _store_run(work / "runs.db")
    assert (stored.info.rubric_id, stored.info.rubric_version) == ("agentv", "per-case")
    assert sorted(e.rubric_id for e in stored.evaluations) == ["refund", "shipping"]


def test_agentv_suite_without_outputs_names_the_case_and_the_fix(work: Path) -> None:
    (work / "agentv.yaml").write_text(AGENTV_V2)
    done = _cli(["eval", "agentv.yaml"], work)
    assert done.returncode == 2
    assert "case 'refund' has no output to grade" in done.stderr
    assert "--outputs" in done.stderr and "Traceback" not in done.stderr


AGENTV_V4 = """\
name: rubric
tests:
  - id: explain
    assert:
      - Explains the partition step
    vars:
      input: Explain quicksort
      output: GOOD partition explanation
  - id: guide
    assert:
      - type: llm-rubric
        value:
          - id: structure
            outcome: Has headings
            weight: 1
    vars:
      input: Write a guide
      output: "no headings here"
"""


def test_agentv_v4_suite_with_outputs_in_vars(work: Path) -> None:
    (work / "v4.yaml").write_text(AGENTV_V4)
    args = ["eval", "v4.yaml", "--json", "--allow-import", "--llm", "python:slowjudge:judge"]
    done = _cli([*args, "--no-cache"], work, _judge_env(work))
    printed = {
        line["target_id"]: line["verdict"] for line in map(json.loads, done.stdout.splitlines())
    }
    assert printed == {"explain": "pass", "guide": "fail"}, done.stderr


def test_case_criteria_that_clash_with_the_shared_rubric_are_refused(work: Path) -> None:
    suite = NATIVE_SUITE.replace("id: says-hello", "id: not-empty")
    (work / "suite.yaml").write_text(suite)
    done = _cli(["eval", "suite.yaml"], work)
    assert done.returncode == 2
    assert "case 'greeting'" in done.stderr and "criteria" in done.stderr
    assert "Traceback" not in done.stderr


def _targets(path: Path, n: int, good: set[int] | None = None) -> None:
    with path.open("w") as stream:
        for i in range(n):
            word = "GOOD" if good is None or i in good else "bad"
            stream.write(json.dumps({"id": f"t{i:03d}", "content": f"{word} answer {i}"}) + "\n")


def test_jsonl_run_goes_to_the_store_and_the_results_file(work: Path) -> None:
    _targets(work / "targets.jsonl", 6, good={0, 1, 2, 3})
    args = ["eval", "judged.yaml", "targets.jsonl", "--db", "runs.db", "-o", "res.jsonl"]
    args += ["--allow-import", "--llm", "python:slowjudge:judge", "--run", "nightly-1", "-q"]
    done = _cli(args, work, _judge_env(work))
    assert done.returncode == 1, done.stderr
    assert "6 target(s): 4 passed, 2 failed, 0 incomplete; run nightly-1" in done.stdout
    stored = _store_run(work / "runs.db", "nightly-1")
    assert stored.info.status == "finished" and stored.info.finished_at
    assert stored.info.rubric_id == "judged" and stored.info.options["llm"].startswith("python:")
    from_file = read_results_file(work / "res.jsonl")
    assert [e.id for e in stored.evaluations] == [e.id for e in from_file.evaluations]
    assert [e.verdict for e in from_file.evaluations] == ["pass"] * 4 + ["fail"] * 2
    again = _cli(args, work, _judge_env(work))
    assert again.returncode == 2
    assert "already holds results" in again.stderr and "--resume" in again.stderr


def test_progress_bar_shows_counts_rate_and_llm_usage(work: Path) -> None:
    _targets(work / "targets.jsonl", 5, good={0, 1, 2})
    args = ["eval", "judged.yaml", "targets.jsonl", "--progress", "-q", "--allow-import"]
    done = _cli([*args, "--llm", "python:slowjudge:judge", "--no-cache"], work, _judge_env(work))
    assert done.returncode == 1, done.stderr
    assert "5/5" in done.stderr
    assert "2 failed, 0 incomplete" in done.stderr
    assert "/s" in done.stderr
    assert "LLM 5 calls" in done.stderr


def _wait_for_lines(path: Path, count: int, deadline: float) -> None:
    while time.monotonic() < deadline:
        if path.exists() and len(_lines(path)) >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"{path} did not reach {count} lines")


def _start_eval(work: Path, args: list[str], sleep: float) -> subprocess.Popen[str]:
    """`rubricflow ARGS` in the background, with a judge that takes `sleep` seconds."""
    return subprocess.Popen(
        [sys.executable, "-m", "rubricflow", *args],
        cwd=work,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "200", **_judge_env(work, sleep=sleep)},
    )


def test_ctrl_c_finishes_in_flight_work_and_resume_judges_only_the_rest(work: Path) -> None:
    _targets(work / "targets.jsonl", 40)
    args = ["eval", "judged.yaml", "targets.jsonl", "--db", "runs.db", "-o", "res.jsonl", "-q"]
    args += ["--allow-import", "--llm", "python:slowjudge:judge", "--targets-in-flight", "4"]
    process = _start_eval(work, args, sleep=0.3)
    _wait_for_lines(work / "res.jsonl", 1 + 5, time.monotonic() + 60)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "stopping: finishing the targets in flight" in stderr
    assert "continue with --resume" in stderr and "Traceback" not in stderr
    written = read_results_file(work / "res.jsonl")
    first_calls = len(_calls(work))
    # everything judged was written: no call's result was lost
    assert len(written.evaluations) == first_calls
    assert 5 <= first_calls < 40
    stored = _store_run(work / "runs.db")
    assert stored.info.status == "interrupted"
    assert {e.id for e in stored.evaluations} == {e.id for e in written.evaluations}

    resumed = _cli([*args, "--resume"], work, _judge_env(work))
    assert resumed.returncode == 0, resumed.stderr
    assert f"{first_calls} target(s) already finished are not judged again" in resumed.stderr
    assert len(_calls(work)) == 40  # only the rest were judged
    final = read_results_file(work / "res.jsonl")
    assert sorted(e.target_id for e in final.evaluations) == [f"t{i:03d}" for i in range(40)]
    assert final.info.id == written.info.id
    stored = _store_run(work / "runs.db", written.info.id)
    assert stored.info.status == "finished"
    assert len(stored.evaluations) == 40


def test_resume_judges_incomplete_targets_again(work: Path) -> None:
    _targets(work / "targets.jsonl", 3)
    args = ["eval", "judged.yaml", "targets.jsonl", "-o", "res.jsonl", "-q", "--allow-import"]
    judge = ["--llm", "python:slowjudge:judge", "--no-cache"]
    broken = _cli([*args, *judge], work, {**_judge_env(work), "JUDGE_BROKEN": "1"})
    assert broken.returncode == 1, broken.stderr
    assert [e.verdict for e in read_results_file(work / "res.jsonl").evaluations] == [
        "incomplete"
    ] * 3
    (work / "calls.log").unlink(missing_ok=True)
    fixed = _cli([*args, *judge, "--resume"], work, _judge_env(work))
    assert fixed.returncode == 0, fixed.stderr
    assert len(_calls(work)) == 3
    run = read_results_file(work / "res.jsonl")
    assert [e.verdict for e in run.evaluations] == ["pass"] * 3


def test_resume_copies_what_only_the_results_file_holds_into_the_store(work: Path) -> None:
    _targets(work / "targets.jsonl", 4)
    base = ["eval", "judged.yaml", "targets.jsonl", "-o", "res.jsonl", "-q", "--allow-import"]
    judge = ["--llm", "python:slowjudge:judge"]
    first = _cli([*base, *judge], work, _judge_env(work))
    assert first.returncode == 0, first.stderr
    resumed = _cli([*base, *judge, "--resume", "--db", "runs.db"], work, _judge_env(work))
    assert resumed.returncode == 0, resumed.stderr
    assert len(_calls(work)) == 4  # nothing judged twice
    stored = _store_run(work / "runs.db")
    assert len(stored.evaluations) == 4
    assert stored.info.id == read_results_file(work / "res.jsonl").info.id


def test_resume_needs_somewhere_to_resume_from(work: Path) -> None:
    _targets(work / "targets.jsonl", 1)
    done = _cli(["eval", "rubric.yaml", "targets.jsonl", "--resume"], work)
    assert done.returncode == 2
    assert "--resume needs the run's --output file or its --db" in done.stderr


def test_results_file_cut_mid_line_is_read_up_to_the_cut(tmp_path: Path, work: Path) -> None:
    _targets(work / "targets.jsonl", 3)
    done = _cli(["eval", "rubric.yaml", "targets.jsonl", "-o", "res.jsonl", "-q"], work)
    assert done.returncode == 0, done.stderr
    text = (work / "res.jsonl").read_text()
    body = "".join(text.splitlines(keepends=True)[:-1])  # without the closing run line
    (work / "cut.jsonl").write_text(body[: len(body) - 40])
    assert len(read_results_file(work / "cut.jsonl").evaluations) == 2
    lines = text.splitlines()
    (work / "broken.jsonl").write_text("\n".join([lines[0], "{oops", *lines[1:]]) + "\n")
    from rubricflow.runs import RunInputError

    with pytest.raises(RunInputError, match=r"broken\.jsonl line 2: malformed JSON"):
        read_results_file(work / "broken.jsonl")


def test_suite_file_errors_name_the_file_and_fix(work: Path) -> None:
    (work / "dupe.yaml").write_text(
        textwrap.dedent(
            """\
            rubric: rubric.yaml
            cases:
              - {id: a, output: x}
              - {id: a, output: y}
            """
        )
    )
    done = _cli(["eval", "dupe.yaml"], work)
    assert done.returncode == 2
    assert "dupe.yaml: cases[1].id: case id 'a' is used twice" in done.stderr
    (work / "notsuite.yaml").write_text("content: hello\n")
    single = _cli(["eval", "notsuite.yaml"], work)
    assert single.returncode == 2 and "give a TARGET" in single.stderr


def test_runs_list_and_show_report_the_stored_runs(work: Path) -> None:
    (work / "suite.yaml").write_text(NATIVE_SUITE)
    for run in ("first", "second"):
        done = _cli(["eval", "suite.yaml", "--db", "runs.db", "--run", run, "-q"], work)
        assert done.returncode == 1, done.stderr
    listed = _cli(["runs", "list", "--db", "runs.db", "--json"], work)
    assert listed.returncode == 0, listed.stderr
    runs = json.loads(listed.stdout)
    assert [r["id"] for r in runs] == ["second", "first"]
    assert runs[0]["summary"]["total"] == 3 and runs[0]["summary"]["passed"] == 1
    shown = _cli(["runs", "show", "latest", "--db", "runs.db"], work)
    assert shown.returncode == 0, shown.stderr
    assert "second reply@1.0.0 [finished] source suite.yaml" in shown.stdout
    assert "3 target(s): 1 passed, 2 failed, 0 incomplete; pass rate 33.3%" in shown.stdout
    missing = _cli(["runs", "show", "nope", "--db", "runs.db"], work)
    assert missing.returncode == 2
    assert "no run 'nope'" in missing.stderr and "rubricflow runs list" in missing.stderr


def test_a_reader_that_stops_early_gets_no_traceback(work: Path) -> None:
    """`rubricflow eval ... --json | head -60`: the closed pipe ends the run quietly."""
    _targets(work / "targets.jsonl", 150)
    args = ["eval", "judged.yaml", "targets.jsonl", "--json", "--allow-import", "--no-cache"]
    env = {**os.environ, **_judge_env(work)}
    process = subprocess.Popen(
        [sys.executable, "-m", "rubricflow", *args, "--llm", "python:slowjudge:judge"],
        cwd=work,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert process.stdout is not None and process.stderr is not None
    read = [json.loads(process.stdout.readline())["target_id"] for _ in range(60)]
    assert read[:2] == ["t000", "t001"]
    process.stdout.close()  # as `head -60` does
    stderr = process.stderr.read().decode()
    process.wait(timeout=60)
    assert "Traceback" not in stderr and "error occurred" not in stderr, stderr
    assert len(_calls(work)) < 150  # it stopped instead of judging everything
