"""Issue 15, first contact with the LLM judges: a judge answer that copies the prompt's
placeholder is not an answer (re-asked, then unable_to_evaluate); `--judge-concurrency`
bounds the requests in flight and sizes the targets and criteria in flight from it; a
host name that does not resolve is said once and not retried."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rubricflow import evaluate
from rubricflow.batch import targets_in_flight
from rubricflow.cli import app
from rubricflow.llm import LLMSession, MemoryJudgeCache

from .fixtures import FAST, rubric
from .scripted import Recorded, Reply, ScriptedServer, openai_reply, scripted, verdict

PLACEHOLDER = "<why, citing the content>"
ROOT = Path(__file__).resolve().parents[2]


def _session(server: ScriptedServer) -> LLMSession:
    return LLMSession(f"openai:judge@{server.url}/v1", settings=FAST, cache=MemoryJudgeCache())


# -- placeholder evidence ---------------------------------------------------------------


async def test_an_answer_that_copies_the_placeholder_is_asked_again_then_unable(
    server: ScriptedServer,
) -> None:
    server.responder = lambda _request: openai_reply(verdict("MET", PLACEHOLDER))
    async with _session(server) as session:
        evaluation = await evaluate(
            rubric({"id": "polite", "description": "The reply is polite."}),
            {"id": "rude", "content": "Not my problem. Read the FAQ."},
            options={"llm": session},
        )
    (result,) = evaluation.criteria
    assert result.status == "unable_to_evaluate"
    assert evaluation.verdict != "pass"
    assert "placeholder" in (result.notes or "") and PLACEHOLDER in (result.notes or "")
    assert not any(PLACEHOLDER in line for line in result.evidence)
    assert len(server.requests) == 2  # asked once more, told why
    assert "placeholder" in server.requests[1].text


async def test_a_real_reasoning_after_the_reask_is_scored(server: ScriptedServer) -> None:
    server.queue(
        openai_reply({"reasoning": "...", "verdict": "MET"}),
        openai_reply(verdict("UNMET", "It says 'Not my problem', which is dismissive.")),
    )
    async with _session(server) as session:
        evaluation = await evaluate(
            rubric({"id": "polite", "description": "The reply is polite."}),
            {"id": "rude", "content": "Not my problem. Read the FAQ."},
            options={"llm": session},
        )
    (result,) = evaluation.criteria
    assert (result.status, result.verdict) == ("scored", "UNMET")
    assert result.evidence[0].startswith("judge: It says 'Not my problem'")


@pytest.mark.parametrize(
    "reasoning",
    ["<why, citing the content>", "why, citing the content.", " ... ", "<3 to 5 sentences>"],
)
async def test_every_prompt_placeholder_spelling_is_refused(
    server: ScriptedServer, reasoning: str
) -> None:
    server.responder = lambda _request: openai_reply({"reasoning": reasoning, "level_id": "warm"})
    criterion = {
        "id": "tone",
        "description": "How friendly the content is.",
        "levels": [
            {"id": "cold", "score": 0.0, "description": "Curt or rude"},
            {"id": "warm", "score": 1.0, "description": "Friendly"},
        ],
    }
    async with _session(server) as session:
        evaluation = await evaluate(
            rubric(criterion), {"id": "t", "content": "Go away."}, options={"llm": session}
        )
    assert evaluation.criteria[0].status == "unable_to_evaluate"


async def test_a_tags_answer_whose_rationale_is_the_placeholder_is_refused(
    server: ScriptedServer,
) -> None:
    server.responder = lambda _request: openai_reply("<rationale>...</rationale>\n<score>4</score>")
    judged = rubric(
        {
            "id": "judgement",
            "description": "Does the tutor guide with questions?",
            "scoring": {
                "method": "llm_score",
                "config": {"response_format": "tags", "min_score": 1, "max_score": 4},
            },
        }
    )
    async with _session(server) as session:
        evaluation = await evaluate(
            judged, {"id": "t", "content": "The answer is 42."}, options={"llm": session}
        )
    (result,) = evaluation.criteria
    assert result.status == "unable_to_evaluate"
    assert "placeholder" in (result.notes or "")


# -- judge concurrency -----------------------------------------------------------------


class _InFlight:
    """A responder that answers MET after 50 ms and counts the requests in flight."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.most = 0

    def __call__(self, _request: Recorded) -> Reply:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        time.sleep(0.05)
        with self.lock:
            self.now -= 1
        return openai_reply(verdict("MET", "The content says so."))


def _inputs(folder: Path, criteria: int, targets: int) -> tuple[Path, Path]:
    document = {
        "id": "many",
        "criteria": [
            {"id": f"c{i}", "description": f"Requirement {i} holds."} for i in range(criteria)
        ],
    }
    rubric_file = folder / "many.json"
    rubric_file.write_text(json.dumps(document), encoding="utf-8")
    target_file = folder / "targets.jsonl"
    lines = [json.dumps({"id": f"t{i}", "content": f"reply {i}"}) for i in range(targets)]
    target_file.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return rubric_file, target_file


def test_judge_concurrency_bounds_the_requests_in_flight(tmp_path: Path) -> None:
    counter = _InFlight()
    rubric_file, targets = _inputs(tmp_path, criteria=6, targets=4)
    with scripted(counter) as judge:
        result = CliRunner().invoke(
            app,
            [
                "eval",
                str(rubric_file),
                str(targets),
                "--llm",
                f"openai:judge@{judge.url}/v1",
                "--judge-concurrency",
                "3",
                "--no-cache",
                "--json",
            ],
        )
        assert result.exit_code == 0, result.output
        assert len(judge.requests) == 24
    assert counter.most == 3
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert [line["verdict"] for line in lines] == ["pass"] * 4


def test_calibrate_takes_judge_concurrency_too() -> None:
    result = CliRunner().invoke(app, ["calibrate", "--help"])
    assert "--judge-concurrency" in result.stdout


@pytest.mark.parametrize(("limit", "per_target"), [(32, 10), (32, 8), (64, 10), (8, 10), (1, 8)])
def test_the_window_keeps_the_judge_busy(limit: int, per_target: int) -> None:
    """Enough targets that 2.5 times the judge's limit is asked at once (the benchmark
    `cli-judge` measures >= 0.9 of the limit with it); at least 8, as before."""
    targets = targets_in_flight(limit, per_target)
    assert targets >= 8
    assert targets * per_target >= 2.5 * limit
    assert (targets - 1) * per_target < 2.5 * limit or targets == 8


# -- a host name that does not resolve ---------------------------------------------------


async def test_a_host_that_does_not_resolve_fails_each_criterion_once_without_retries() -> None:
    judged = rubric(
        {"id": "a", "description": "The reply is polite."},
        {"id": "b", "description": "The reply is short."},
    )
    session = LLMSession(
        "openai:gpt-4o-mini@http://nonexistent.invalid/v1", settings=FAST, cache=None
    )
    async with session:
        evaluation = await evaluate(judged, {"id": "t", "content": "Hi."}, options={"llm": session})
    for result in evaluation.criteria:
        assert result.status == "unable_to_evaluate"
        assert "cannot resolve the host name 'nonexistent.invalid'" in (result.notes or "")
        assert len(result.llm_calls) == 1  # not retried
        assert result.llm_calls[0].outcome == "connection_error"


def test_the_cli_says_an_unresolvable_host_once(tmp_path: Path) -> None:
    rubric_file, targets = _inputs(tmp_path, criteria=3, targets=2)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("RUBRICFLOW_LLM")},
        "OPENAI_API_KEY": "sk-fake-key-for-the-test",
        "RUBRICFLOW_CACHE_DIR": str(tmp_path / "cache"),
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "rubricflow",
            "eval",
            str(rubric_file),
            str(targets),
            "--llm",
            "openai:gpt-4o-mini@https://nonexistent.invalid/v1",
            "--json",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert "retrying" not in done.stderr
    assert done.stderr.count("cannot resolve the host name 'nonexistent.invalid'") == 1
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == 2
    for line in lines:
        assert line["verdict"] == "incomplete"
        for result in line["criteria"]:
            assert result["status"] == "unable_to_evaluate"
            assert "cannot resolve the host name" in result["notes"]
