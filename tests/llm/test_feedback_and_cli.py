"""The optional LLM feedback summary, and the CLI: `eval --llm/--no-cache/--samples/
--llm-feedback`, usage in the JSON lines and the summary, `llm check`, `llm cache`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rubricflow import evaluate
from rubricflow.cli import app

from .fixtures import rubric, session_for
from .scripted import Recorded, Reply, ScriptedServer, openai_reply, schema_of, verdict

RUBRIC = rubric(
    {"id": "polite", "description": "The reply is polite."},
    {"id": "refund", "description": "The reply gives the 30-day refund window."},
)


def judge(request: Recorded) -> Reply:
    schema = schema_of(request) or {}
    if "summary" in schema.get("properties", {}):
        return openai_reply(
            {"summary": "Add the refund window. Keep the friendly tone. Then resubmit."}
        )
    return openai_reply(verdict("UNMET" if "refund" in request.messages[-1]["content"] else "MET"))


async def test_llm_feedback_goes_to_metadata_and_its_call_is_counted() -> None:
    with ScriptedServer(judge) as server:
        async with session_for(server) as session:
            evaluation = await evaluate(
                RUBRIC, "Hi!", options={"llm": session, "llm_feedback": True}
            )
        feedback_request = server.requests[-1]
    assert evaluation.metadata["llm_feedback"] == {
        "source": "llm",
        "text": "Add the refund window. Keep the friendly tone. Then resubmit.",
    }
    assert evaluation.feedback.startswith("Evaluation FAILED")  # the deterministic text stays
    assert "What to fix:" in feedback_request.messages[-1]["content"]
    assert len(evaluation.feedback_llm_calls) == 1
    assert evaluation.usage()["llm_calls"] == 3
    assert evaluation.llm_calls[-1] is evaluation.feedback_llm_calls[0]


async def test_llm_feedback_falls_back_to_the_deterministic_summary() -> None:
    def no_feedback(request: Recorded) -> Reply:
        if "summary" in (schema_of(request) or {}).get("properties", {}):
            return Reply(500, "down")
        return openai_reply(verdict())

    with ScriptedServer(no_feedback) as server:
        async with session_for(server, max_attempts=1) as session:
            evaluation = await evaluate(
                RUBRIC, "Hi!", options={"llm": session, "llm_feedback": True}
            )
    summary = evaluation.metadata["llm_feedback"]
    assert summary["source"] == "deterministic" and summary["text"] == evaluation.feedback
    assert "HTTP 500" in summary["error"]
    assert evaluation.verdict == "pass"  # feedback never changes the verdict


async def test_a_summary_of_the_wrong_length_is_asked_again() -> None:
    answers = iter(
        [
            "Fix it.",
            "Add the refund window. Say how long it takes. Keep the friendly tone. Resubmit.",
        ]
    )

    def wordy_then_right(request: Recorded) -> Reply:
        if "summary" in (schema_of(request) or {}).get("properties", {}):
            return openai_reply({"summary": next(answers)})
        return openai_reply(verdict("UNMET"))

    with ScriptedServer(wordy_then_right) as server:
        async with session_for(server) as session:
            evaluation = await evaluate(
                RUBRIC, "Hi!", options={"llm": session, "llm_feedback": True}
            )
        reask = server.requests[-1].messages[-1]["content"]
    assert "the summary has 1 sentence; write 3 to 5" in reask
    assert evaluation.metadata["llm_feedback"]["source"] == "llm"
    assert evaluation.metadata["llm_feedback"]["text"].startswith("Add the refund window.")


async def test_a_summary_that_stays_too_long_falls_back() -> None:
    def rambling(request: Recorded) -> Reply:
        if "summary" in (schema_of(request) or {}).get("properties", {}):
            return openai_reply({"summary": " ".join(f"Point {i}." for i in range(9))})
        return openai_reply(verdict())

    with ScriptedServer(rambling) as server:
        async with session_for(server) as session:
            evaluation = await evaluate(
                RUBRIC, "Hi!", options={"llm": session, "llm_feedback": True}
            )
    summary = evaluation.metadata["llm_feedback"]
    assert summary["source"] == "deterministic" and summary["text"] == evaluation.feedback
    assert "9 sentences; write 3 to 5" in summary["error"]


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    rubric_file = tmp_path / "rubric.yaml"
    rubric_file.write_text(
        "id: support\ncriteria:\n"
        "  - id: polite\n    description: The reply is polite.\n"
        "  - id: refund\n    description: The reply gives the 30-day refund window.\n"
    )
    targets = tmp_path / "targets.jsonl"
    targets.write_text('{"id": "a", "content": "Hi!"}\n{"id": "b", "content": "Hello there"}\n')
    return rubric_file, targets


def run(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def test_eval_json_lines_carry_usage_and_a_rerun_is_served_from_the_cache(
    files: tuple[Path, Path],
) -> None:
    rubric_file, targets = files
    with ScriptedServer(judge) as server:
        spec = f"openai:judge@{server.url}/v1"
        first = run("eval", str(rubric_file), str(targets), "--llm", spec, "--json")
        sent = len(server.requests)
        second = run("eval", str(rubric_file), str(targets), "--llm", spec, "--json")
        assert len(server.requests) == sent == 4  # the re-run made no request at all
        fresh = run("eval", str(rubric_file), str(targets), "--llm", spec, "--json", "--no-cache")
        assert len(server.requests) == 8
    assert first.exit_code == second.exit_code == fresh.exit_code == 1  # refund is UNMET
    lines = [json.loads(line) for line in first.stdout.splitlines()]
    assert [line["usage"]["llm_calls"] for line in lines] == [2, 2]
    assert lines[0]["usage"]["input_tokens"] == 200
    again = [json.loads(line) for line in second.stdout.splitlines()]
    assert [line["usage"] for line in again] == [
        {"llm_calls": 0, "cache_hits": 2, "input_tokens": 0, "output_tokens": 0, "cost": None}
    ] * 2
    assert [line["criteria"][1]["verdict"] for line in again] == ["UNMET", "UNMET"]


def test_eval_human_output_shows_usage_samples_and_feedback(files: tuple[Path, Path]) -> None:
    rubric_file, targets = files
    with ScriptedServer(judge) as server:
        result = run(
            "eval",
            str(rubric_file),
            str(targets),
            "--llm",
            f"openai:judge@{server.url}/v1",
            "--samples",
            "3",
            "--llm-feedback",
            "--no-cache",
        )
        assert len(server.requests) == 2 * (2 * 3 + 1)
    out = result.stdout
    assert "LLM: 7 LLM calls, 700 input + 140 output tokens" in out
    assert "LLM usage: 14 LLM calls, 1,400 input + 280 output tokens" in out
    assert "Feedback: Add the refund window." in out
    assert "3 of 3 usable answers agree on UNMET" in out


def test_eval_without_a_judge_for_llm_criteria_exits_2(files: tuple[Path, Path]) -> None:
    rubric_file, targets = files
    result = run("eval", str(rubric_file), str(targets))
    assert result.exit_code == 2
    assert "criteria polite, refund are judged by an LLM" in result.output
    assert "--llm SPEC" in result.output
    bad = run("eval", str(rubric_file), str(targets), "--llm", "nope:x")
    assert bad.exit_code == 2 and "unknown LLM provider 'nope'" in bad.output


def test_llm_check_reports_model_latency_and_structured_output() -> None:
    with ScriptedServer(lambda request: openai_reply(verdict())) as server:
        human = run("llm", "check", f"openai:judge@{server.url}/v1")
        as_json = run("llm", "check", f"openai:judge@{server.url}/v1", "--json")
    assert human.exit_code == 0, human.output
    assert "ok openai:judge@" in human.stdout
    assert "model: scripted-judge" in human.stdout
    assert "structured output: response_format json_schema" in human.stdout
    assert "schema-valid answer: yes (verdict MET)" in human.stdout
    report = json.loads(as_json.stdout)
    assert report["ok"] is True and report["latency_ms"] > 0
    assert report["input_tokens"] == 100


def test_llm_check_fails_cleanly() -> None:
    with ScriptedServer(lambda request: openai_reply("I cannot answer in JSON")) as server:
        garbage = run("llm", "check", f"openai:judge@{server.url}/v1")
    assert garbage.exit_code == 1 and "schema-valid answer: no" in garbage.stdout
    unknown = run("llm", "check", "nope:x")
    assert unknown.exit_code == 2 and "unknown LLM provider" in unknown.output
    with ScriptedServer() as gone:
        url = gone.url
    down = run("llm", "check", f"openai:judge@{url}/v1", "--timeout", "2")
    assert down.exit_code == 1 and "FAILED" in down.stdout


def test_llm_cache_shows_and_clears_entries(files: tuple[Path, Path], clean_llm_env: Path) -> None:
    rubric_file, targets = files
    with ScriptedServer(judge) as server:
        run("eval", str(rubric_file), str(targets), "--llm", f"openai:judge@{server.url}/v1")
    shown = run("llm", "cache", "--json")
    stats = json.loads(shown.stdout)
    assert stats["entries"] == 4 and stats["path"] == str(clean_llm_env / "judge-cache.sqlite")
    cleared = run("llm", "cache", "--clear")
    assert "removed 4 cached answer(s)" in cleared.stdout
    assert json.loads(run("llm", "cache", "--json").stdout)["entries"] == 0
