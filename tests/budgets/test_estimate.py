"""`eval --estimate` (issue 31, item 7): expected calls, cache hits, tokens and cost, with
nothing judged, within 10% of the real run on the repo's examples. The scripted judge
reports token counts as a tokenizer would roughly count them (4 characters a token) and
writes about 240 characters of reasoning, the estimate's assumption (60 tokens)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from llm.fixtures import clean_llm_env, server
from llm.scripted import Recorded, Reply, ScriptedServer, openai_reply
from typer.testing import CliRunner

from rubricflow.cli import app
from rubricflow.llm.estimate import smallest_answer

__all__ = ["clean_llm_env", "server"]

ROOT = Path(__file__).resolve().parents[2]
REASONING = "The reply addresses the customer's question directly and politely. " * 4


def judge(request: Recorded) -> Reply:
    schema = request.json["response_format"]["json_schema"]["schema"]
    answer = smallest_answer(schema)
    if isinstance(answer, dict) and "reasoning" in answer:
        answer["reasoning"] = REASONING[:240]
    text = json.dumps(answer)
    prompt = sum(len(str(m.get("content", ""))) for m in request.messages)
    return openai_reply(
        text,
        prompt_tokens=math.ceil(prompt / 4),
        completion_tokens=math.ceil(len(text) / 4),
    )


NUMBERS = re.compile(
    r"(\d[\d,]*) judge call\(s\), (\d[\d,]*) cache hit\(s\), (\d[\d,]*) input "
    r"and (\d[\d,]*) output tokens, cost ([\d.e-]+)"
)


def numbers(text: str) -> tuple[float, ...]:
    found = NUMBERS.search(text)
    assert found, text
    return tuple(float(group.replace(",", "")) for group in found.groups())


@pytest.mark.parametrize(
    "files",
    [
        ["rubrics/support-reply-tone.yaml", "examples/targets/support-replies.jsonl"],
        ["rubrics/answer-quality.yaml", "examples/targets/support-replies.jsonl"],
    ],
)
def test_the_estimate_is_within_ten_percent_of_the_run(
    server: ScriptedServer, files: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RUBRICFLOW_LLM_PRICE", "0.15,0.60")
    server.responder = judge
    llm = ["--llm", f"openai:judge@{server.url}/v1"]
    paths = [str(ROOT / f) for f in files]
    runner = CliRunner()
    estimated = runner.invoke(app, ["eval", *paths, "--estimate", *llm])
    assert estimated.exit_code == 0, estimated.output
    assert server.requests == []  # nothing was judged
    calls, hits, input_tokens, output_tokens, cost = numbers(estimated.stdout)
    assert calls > 0 and hits == 0
    ran = runner.invoke(app, ["eval", *paths, "--json", *llm])
    assert ran.exit_code in (0, 1), ran.output
    usage = [json.loads(line)["usage"] for line in ran.stdout.splitlines() if line.startswith("{")]
    real_calls = sum(u["llm_calls"] for u in usage)
    real_in = sum(u["input_tokens"] for u in usage)
    real_out = sum(u["output_tokens"] for u in usage)
    real_cost = sum(u["cost"] for u in usage)
    assert calls == real_calls == len(server.requests)
    assert input_tokens == pytest.approx(real_in, rel=0.10)
    assert output_tokens == pytest.approx(real_out, rel=0.10)
    assert cost == pytest.approx(real_cost, rel=0.10)
    # answered from the cache now: the estimate counts hits, and no calls
    again = runner.invoke(app, ["eval", *paths, "--estimate", *llm])
    assert numbers(again.stdout)[:2] == (0, real_calls)
