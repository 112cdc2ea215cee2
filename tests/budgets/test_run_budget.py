"""`eval --max-cost` (issue 31, item 6): a call that would pass the run's cap is not sent;
its criterion is unable_to_evaluate with the reason "budget" and the target fails closed.
Judged over HTTP by the scripted server, whose answers report 100 input and 20 output
tokens."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from llm.fixtures import clean_llm_env, server
from llm.scripted import Recorded, Reply, ScriptedServer, openai_reply
from typer.testing import CliRunner

from rubricflow.cli import app

__all__ = ["clean_llm_env", "server"]


def met(request: Recorded) -> Reply:
    return openai_reply({"reasoning": "fine", "verdict": "MET"})


@pytest.fixture
def files(tmp_path: Path) -> tuple[str, str]:
    rubric = {
        "id": "five",
        "criteria": [{"id": f"c{n}", "scoring": {"method": "llm_verdict"}} for n in range(5)],
    }
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(rubric))
    (tmp_path / "t.json").write_text(json.dumps({"id": "t1", "content": "hello"}))
    return str(tmp_path / "r.yaml"), str(tmp_path / "t.json")


def run(server: ScriptedServer, files: tuple[str, str], *more: str) -> tuple[int, dict]:
    result = CliRunner().invoke(
        app,
        ["eval", *files, "--json", "--no-cache", "--llm", f"openai:judge@{server.url}/v1", *more],
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    return result.exit_code, (json.loads(lines[0]) if lines else {"output": result.output})


def test_the_run_stops_judging_at_its_cap_and_fails_closed(
    server: ScriptedServer, files: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # output tokens only, 0.01 each: a call costs 0.2 (20 tokens), and the first call is
    # expected at max_tokens (20) too, so exactly two calls fit in 0.5
    monkeypatch.setenv("RUBRICFLOW_LLM_PRICE", "0,10000")
    monkeypatch.setenv("RUBRICFLOW_LLM_MAX_TOKENS", "20")
    server.responder = met
    code, line = run(server, files, "--max-cost", "0.5")
    statuses = [c["status"] for c in line["criteria"]]
    assert statuses.count("scored") == 2, line
    budget = [c for c in line["criteria"] if c["status"] == "unable_to_evaluate"]
    assert len(budget) == 3 and all(c["notes"].startswith("budget") for c in budget)
    assert (code, line["verdict"]) == (1, "incomplete")
    assert len(server.requests) == 2
    assert line["usage"]["cost"] == pytest.approx(0.4)
    code, line = run(server, files, "--max-cost", "5")
    assert (code, line["verdict"]) == (0, "pass")


def test_a_cap_needs_the_judge_s_price(server: ScriptedServer, files: tuple[str, str]) -> None:
    code, line = run(server, files, "--max-cost", "1")
    assert code == 2 and "RUBRICFLOW_LLM_PRICE" in line["output"]
    assert server.requests == []
