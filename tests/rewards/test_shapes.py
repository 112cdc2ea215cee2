"""verl, verifiers and OpenRubricRL shapes, each called the way its own code calls it."""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from llm.scripted import Reply, ScriptedServer

from rubricflow import ConfigurationError
from rubricflow.rewards import create_trl_reward_function, verifiers_reward, verl_compute_score

from .judge import FAST, keyword_judge, spec

RUBRIC = {
    "id": "capitals",
    "criteria": [
        {"id": "paris", "description": "mentions paris", "weight": 3},
        {"id": "seine", "description": "mentions seine", "weight": 1},
    ],
}
ORL = Path(__file__).parent.parent / "fixtures" / "formats" / "openrubricrl"
ORL_RUBRIC = {
    "name": "Code answer",
    "version": "1.0.0",
    "domain": "code",
    "scale": {"min": 0, "max": 10},
    "criteria": [
        {"name": "defines", "description": "mentions def", "weight": 0.7},
        {"name": "documents", "description": "mentions docstring", "weight": 0.3},
    ],
}


def test_verl_compute_score_is_a_number_and_falls_back_on_failure(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """verl (verl/workers/reward_manager/naive.py) calls
    `score = self.compute_score(data_source=data_source, solution_str=response_str,
    ground_truth=ground_truth, extra_info=extra_info)` per sample; a dict must hold
    `score`."""

    def judge(request: Any) -> Reply:
        if "broken" in request.text:
            return Reply(500, {"error": {"message": "down"}})
        return keyword_judge(request)

    with ScriptedServer(judge) as server:
        compute_score = verl_compute_score(
            RUBRIC, judge=spec(server), judge_settings=FAST, cache=None
        )
        good = compute_score(
            data_source="capitals",
            solution_str="Paris.",
            ground_truth="Paris",
            extra_info={"question": "Capital of France?"},
        )
        with caplog.at_level(logging.WARNING, logger="rubricflow.rewards"):
            broken = compute_score(
                data_source="capitals", solution_str="broken", ground_truth="Paris"
            )
        own = compute_score(
            data_source="x",
            solution_str="Lyon",
            ground_truth=None,
            extra_info={"rubric": [{"requirement": "mentions lyon", "weight": 1}]},
        )
        detailed = verl_compute_score(
            RUBRIC, judge=spec(server), cache=None, fallback=-1.0, details=True
        )(data_source="capitals", solution_str="broken", ground_truth="Paris")
    assert good == 0.75 and broken == 0.0 and own == 1.0
    assert any("fallback 0.0" in m and "capitals" in m for m in caplog.messages)
    assert detailed == {"score": -1.0, "coverage": 0.0, "incomplete": True}


def test_verifiers_reward_under_its_rubric_call() -> None:
    """verifiers' Rubric calls each function with the arguments it declares among
    `prompt, completion, answer, state, task, info` (all of them with **kwargs):
    `ans = float(await maybe_await(func, **merged))`."""
    reward = verifiers_reward(RUBRIC, judge="unused", cache=None)
    assert inspect.iscoroutinefunction(reward) and reward.__name__ == "rubric_reward"

    async def rubric_call(func: Any, **merged: Any) -> float:
        sig = inspect.signature(func)
        if not any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values()):
            merged = {k: v for k, v in merged.items() if k in sig.parameters}
        result = func(**merged)
        return float(await result if inspect.isawaitable(result) else result)

    with ScriptedServer(keyword_judge) as server:
        reward = verifiers_reward(RUBRIC, judge=spec(server), cache=None)
        common = {
            "prompt": [{"role": "user", "content": "Capital of France?"}],
            "answer": "Paris",
            "state": {},
            "task": "default",
            "parser": object(),
        }
        chat = asyncio.run(
            rubric_call(
                reward,
                completion=[{"role": "assistant", "content": "Paris, on the Seine"}],
                info={},
                **common,
            )
        )
        own = asyncio.run(
            rubric_call(
                reward,
                completion="rome",
                info={"rubric": [{"requirement": "mentions rome", "weight": 1}]},
                **common,
            )
        )
    assert chat == 1.0 and own == 1.0


def test_openrubricrl_factory_keeps_its_call_shape_and_answers_trl(tmp_path: Path) -> None:
    """OpenRubricRL 0.1.0: `create_trl_reward_function(rubric_path: str, provider: str =
    "openai", model: Optional[str] = None, api_key: Optional[str] = None, **kwargs)`; the
    result is called as `reward(query, response) -> float` and
    `await reward.async_call(query, response)`."""
    path = tmp_path / "rubric.json"
    path.write_text(json.dumps(ORL_RUBRIC), encoding="utf-8")
    with ScriptedServer(keyword_judge) as server:
        reward = create_trl_reward_function(
            rubric_path=str(path),
            provider="openai",
            model="judge",
            base_url=f"{server.url}/v1",
            judge_settings=FAST,
            cache=None,
        )
        one = reward("Write a function", "def f(): return 1")
        again = asyncio.run(reward.async_call("Write a function", "def f(): return 1"))
        batch = reward(prompts=["Write a function"] * 2, completions=["def f(): return 1", "pass"])
    assert one == again == 0.7
    assert batch == [0.7, 0.0]
    assert server.requests and server.requests[0].json["model"] == "judge"


def test_openrubricrl_factory_refuses_a_key_in_code() -> None:
    path = ORL / "essay_feedback.json"
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        create_trl_reward_function(rubric_path=str(path), api_key="sk-in-code")
