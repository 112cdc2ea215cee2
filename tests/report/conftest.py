"""Runs for the report and compare tests, made by really evaluating a small rubric.

The rubric has three deterministic criteria and one LLM criterion (`tone`). The judge
is a real `LLMProvider` subclass in this process (no network): it answers UNMET when the
content says "rude", garbage when it says "garble" (the criterion is then unable to be
evaluated, the target incomplete), MET otherwise; every answer reports 100 input and 20
output tokens, priced at 1.0 / 2.0 per million, so each call costs 0.00014.

RUN_A's figures, which the tests check:

    target     content                       verdict     score  failed criteria
    t1         hello, your order ...          pass        1.0
    t2         hello, you are rude ...        fail        0.75   tone
    <script>   hello there <script>... friend pass        1.0    (reasoning echoes a script)
    t4         bye                            fail        0.5    greets, length
    t5         use key sk-... now please      fail        0.5    greets, secrets
    t6         hello garble garble garble     incomplete  -      (tone not scored)
    t7         hi                             fail        0.5    greets, length
    t8         = t1's content                 pass        1.0    (judge answer cached)

pass 3, fail 4, incomplete 1: pass rate 37.5%; greets 5/8 62.5%, length 6/8 75.0%,
secrets 7/8 87.5%, tone 6/7 85.7%; mean and median score 0.750; histogram bins 5, 7, 9
hold 3, 1, 3; 8 LLM calls (t6 was asked twice), 1 cache hit, 800 + 160 tokens, cost
0.0011.

RUN_B evaluates the same ids with changed content: t1 turns rude (pass -> fail), t2 is
fixed (fail -> pass), t6 is readable (incomplete -> pass).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from rubricflow import evaluate, parse_rubric
from rubricflow.llm import LLMSession, MemoryJudgeCache, Price, ProviderSettings
from rubricflow.llm.base import LLMProvider, ProviderRequest, ProviderResponse
from rubricflow.llm.specs import ENV_VARS
from rubricflow.model import Rubric
from rubricflow.results import Evaluation
from rubricflow.runs import RunData, RunInfo, evaluation_line, write_run_header
from rubricflow.store import DB_ENV, Store, StoredEvaluation

XSS = "<script>alert(1)</script>"
BREAKOUT = "</script><script>alert('reasoning')</script>"
SECRET = "sk-abcdefghijklmnopqrstuvwxyz0123"


def deterministic_criteria() -> list[dict[str, Any]]:
    return [
        {
            "id": "greets",
            "description": "Says hello",
            "required": True,
            "scoring": {
                "method": "deterministic",
                "function": "contains_all",
                "config": {"terms": ["hello"]},
            },
        },
        {
            "id": "length",
            "description": "Three to thirty words",
            "required": True,
            "scoring": {
                "method": "deterministic",
                "function": "word_count_between",
                "config": {"min": 3, "max": 30},
            },
        },
        {
            "id": "secrets",
            "description": "No credentials",
            "required": True,
            "scoring": {"method": "deterministic", "function": "no_secrets"},
        },
    ]


REPLY: Rubric = parse_rubric(
    {
        "id": "reply",
        "name": "Reply checks",
        "version": "1.0.0",
        "criteria": [
            *deterministic_criteria(),
            {"id": "tone", "description": "The reply is polite", "required": True},
        ],
    }
)

TARGETS_A = [
    {"id": "t1", "content": "hello, your order ships today"},
    {"id": "t2", "content": "hello, you are rude and slow"},
    {"id": XSS, "content": f"hello there {XSS} friend"},
    {"id": "t4", "content": "bye"},
    {"id": "t5", "content": f"use key {SECRET} now please"},
    {"id": "t6", "content": "hello garble garble garble"},
    {"id": "t7", "content": "hi"},
    {"id": "t8", "content": "hello, your order ships today"},
]
CHANGED_IN_B = {
    "t1": "hello, you are rude",
    "t2": "hello, your order ships today",
    "t6": "hello, all good here",
}
TARGETS_B = [{**t, "content": CHANGED_IN_B.get(str(t["id"]), t["content"])} for t in TARGETS_A]


class TokenJudge(LLMProvider):
    """A judge in this process: verdicts by keyword, with token counts."""

    kind = "token-judge"
    structured_feature = "none (answers are validated)"

    async def _send(self, request: ProviderRequest, timeout: float) -> ProviderResponse:
        text = "\n".join(m["content"] for m in request.messages)
        if "garble" in text:
            answer = "this is not JSON"
        else:
            verdict = "UNMET" if "rude" in text else "MET"
            reasoning = f"the reply reads as {verdict}"
            if "<script>" in text:
                reasoning += f"; it quotes {BREAKOUT}"
            answer = json.dumps({"reasoning": reasoning, "verdict": verdict})
        return ProviderResponse(answer, model=self.model, input_tokens=100, output_tokens=20)


def judge_session() -> LLMSession:
    provider = TokenJudge("judge-1", settings=ProviderSettings(price=Price(1.0, 2.0)))
    return LLMSession(provider, cache=MemoryJudgeCache())


def evaluate_all(rubric: Rubric, targets: Sequence[dict[str, Any]]) -> list[Evaluation]:
    """Each target evaluated in order, sharing one judge session (and its answer cache)."""

    async def run() -> list[Evaluation]:
        async with judge_session() as session:
            return [await evaluate(rubric, t, options={"llm": session}) for t in targets]

    return asyncio.run(run())


def run_info(run_id: str, **fields: Any) -> RunInfo:
    defaults: dict[str, Any] = {
        "rubric_id": REPLY.id,
        "rubric_version": REPLY.version,
        "source": "replies.jsonl",
        "status": "finished",
        "started_at": "2025-03-01T10:00:00+00:00",
        "finished_at": "2025-03-01T10:05:00+00:00",
    }
    return RunInfo(id=run_id, **{**defaults, **fields})


def write_results(path: Path, info: RunInfo, evaluations: Sequence[Evaluation]) -> Path:
    """A results file as `rubricflow eval --output` writes it."""
    with path.open("w", encoding="utf-8") as stream:
        write_run_header(stream, info)
        for evaluation in evaluations:
            stream.write(evaluation_line(evaluation, info.id))
    return path


def store_runs(db: Path, *runs: RunData) -> None:
    """Record each run in the SQLite store at `db` as `rubricflow eval --db` does."""

    async def run() -> None:
        store = await Store.open(str(db))
        try:
            for data in runs:
                await store.runs.start(data.info)
                await store.evaluations.save_many(
                    StoredEvaluation(e, run_id=data.info.id) for e in data.evaluations
                )
                await store.runs.finish(data.info.id)
        finally:
            await store.close()

    asyncio.run(run())


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No store, judge or key from the developer's environment; run in tmp_path."""
    for name in (*ENV_VARS, DB_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RUBRICFLOW_CACHE_DIR", str(tmp_path / "rf-cache"))
    monkeypatch.chdir(tmp_path)


@pytest.fixture(scope="session")
def evaluations_a() -> list[Evaluation]:
    return evaluate_all(REPLY, TARGETS_A)


@pytest.fixture(scope="session")
def evaluations_b() -> list[Evaluation]:
    return evaluate_all(REPLY, TARGETS_B)


@pytest.fixture
def run_a(evaluations_a: list[Evaluation]) -> RunData:
    return RunData(run_info("run-a"), list(evaluations_a))


@pytest.fixture
def run_b(evaluations_b: list[Evaluation]) -> RunData:
    return RunData(
        run_info(
            "run-b",
            started_at="2025-03-02T10:00:00+00:00",
            finished_at="2025-03-02T10:05:00+00:00",
        ),
        list(evaluations_b),
    )
