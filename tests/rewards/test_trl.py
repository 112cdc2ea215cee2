"""The TRL `GRPOTrainer` reward function, called the way TRL calls it.

TRL (trl/trainer/grpo_trainer.py, `_calculate_rewards`) builds
    reward_kwargs = {key: [example[key] for example in inputs] for key in keys}
    reward_kwargs["trainer_state"] = self.state
    reward_kwargs["log_extra"] = self._log_completion_extra
    reward_kwargs["log_metric"] = self._log_metric
(`def _log_metric(self, name: str, value: float)`, `def _log_completion_extra(self,
column: str, values: list)`) and calls a sync function as
    output_reward_func = reward_func(
        prompts=prompts, completions=completions, completion_ids=completion_ids_list,
        **reward_kwargs,
    )
    output_reward_func = [reward if reward is not None else torch.nan for reward in ...]
while an async one (`inspect.iscoroutinefunction(reward_func)`) is awaited under
`asyncio.gather` with the same keyword arguments.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from typing import Any

import pytest
from llm.scripted import Reply, ScriptedServer

from rubricflow import RewardError
from rubricflow.engine.aggregate import aggregate
from rubricflow.llm import MemoryJudgeCache
from rubricflow.rewards import trl_reward

from .judge import FAST, keyword_judge, spec

RUBRIC = {
    "id": "capitals",
    "criteria": [
        {"id": "paris", "description": "mentions paris", "weight": 2},
        {"id": "seine", "description": "mentions seine", "weight": 1},
    ],
}


def trl_call(func: Any, prompts: list[Any], completions: list[Any], **columns: Any) -> Any:
    """Exactly TRL's call: dataset columns as per-completion lists, plus the trainer's
    own keyword arguments."""
    metrics: list[tuple[str, Any]] = []
    reward_kwargs = dict(columns)
    reward_kwargs["trainer_state"] = object()
    reward_kwargs["log_extra"] = lambda column, values: metrics.append((column, values))
    reward_kwargs["log_metric"] = lambda name, value: metrics.append((name, value))
    completion_ids = [[1, 2, 3] for _ in completions]
    if inspect.iscoroutinefunction(func):

        async def gather() -> Any:
            return (
                await asyncio.gather(
                    func(
                        prompts=prompts,
                        completions=completions,
                        completion_ids=completion_ids,
                        **reward_kwargs,
                    )
                )
            )[0]

        return asyncio.run(gather()), metrics
    out = func(
        prompts=prompts, completions=completions, completion_ids=completion_ids, **reward_kwargs
    )
    return out, metrics


def test_plain_and_chat_completions_get_the_rubric_score_and_criterion_means() -> None:
    with ScriptedServer(keyword_judge) as server:
        reward = trl_reward(RUBRIC, judge=spec(server), judge_settings=FAST, cache=None)
        assert reward.__name__ == "rubric_reward"
        rewards, metrics = trl_call(
            reward,
            ["Capital of France?", [{"role": "user", "content": "Capital of France?"}]],
            ["Paris, on the Seine.", [{"role": "assistant", "content": "Lyon."}]],
            reference=["Paris", "Paris"],
        )
    assert rewards == [1.0, 0.0]
    assert dict(metrics) == {
        "rubricflow/paris": 0.5,
        "rubricflow/seine": 0.5,
        "rubricflow/incomplete": 0.0,
    }
    # the reference column reached the judge
    assert all("<reference>\nParis\n</reference>" in r.text for r in server.requests)


def test_the_async_variant_is_gathered_by_trl() -> None:
    with ScriptedServer(keyword_judge) as server:
        reward = trl_reward(RUBRIC, judge=spec(server), cache=None, asynchronous=True)
        assert inspect.iscoroutinefunction(reward) and reward.__name__ == "rubric_reward"
        rewards, _ = trl_call(reward, ["q"], ["Paris"])
    assert rewards == [2 / 3]


async def test_the_sync_function_works_inside_a_running_event_loop() -> None:
    """Jupyter runs the notebook in an event loop; the sync reward still works there."""
    asyncio.get_running_loop()
    with ScriptedServer(keyword_judge) as server:
        reward = trl_reward(RUBRIC, judge=spec(server), cache=None)
        rewards, _ = trl_call(reward, ["q", "q"], ["the seine", "Paris and the Seine"])
    assert rewards == [1 / 3, 1.0]


def test_per_prompt_rubric_column_in_three_shapes() -> None:
    rar = [
        {"title": "Paris", "description": "mentions paris", "weight": 5},
        {"title": "Pitfall", "description": "mentions lyon", "weight": -5},
    ]
    pkg = [{"requirement": "mentions rome", "weight": 1}]
    native = "criteria:\n  - id: berlin\n    description: mentions berlin\n"
    with ScriptedServer(keyword_judge) as server:
        reward = trl_reward(judge=spec(server), cache=None)
        rewards, _ = trl_call(
            reward,
            ["q"] * 4,
            ["Paris", "Paris or Lyon", "Rome", "Munich"],
            rubric=[rar, rar, pkg, native],
        )
    # RaR: S / sum|w| -> 5/10 for Paris alone; Paris and Lyon: (5 - 5) / 10 = 0
    assert rewards == [0.5, 0.0, 1.0, 0.0]
    assert reward.scorer.rubrics.parses == 3  # the RaR cell was parsed once


def test_implicit_aggregation_is_one_judge_call_per_completion() -> None:
    rubric = {
        "id": "r",
        "criteria": [{"id": f"c{i}", "description": f"mentions w{i}"} for i in range(5)],
    }
    with ScriptedServer(keyword_judge) as server:
        reward = trl_reward(rubric, judge=spec(server), cache=None, aggregation="implicit")
        rewards, _ = trl_call(reward, ["q", "q"], ["w0 w1 w2 w3 w4", "w0 w1"])
    assert len(server.requests) == 2
    assert rewards == [1.0, 0.4]


@pytest.mark.parametrize(
    "fault",
    [
        Reply(500, {"error": {"message": "boom"}}),
        Reply(429, {"error": {"message": "slow down"}}, headers={"Retry-After": "0"}),
        Reply(200, "this is not an OpenAI answer"),
        Reply(200, None, delay=1.0),
    ],
    ids=["500", "429", "garbage", "timeout"],
)
def test_judge_faults_give_none_with_the_reason_logged(
    fault: Reply, caplog: pytest.LogCaptureFixture
) -> None:
    def judge(request: Any) -> Reply:
        return fault if "broken" in request.text else keyword_judge(request)

    settings = {**FAST, "timeout": 0.3, "deadline": 2.0}
    with ScriptedServer(judge) as server:
        reward = trl_reward(RUBRIC, judge=spec(server), judge_settings=settings, cache=None)
        with caplog.at_level(logging.WARNING, logger="rubricflow.rewards"):
            rewards, metrics = trl_call(reward, ["q", "q"], ["Paris", "broken Paris"])
    assert rewards == [2 / 3, None]
    assert any("completion 1" in m and "paris" in m for m in caplog.messages)
    assert dict(metrics)["rubricflow/incomplete"] == 0.5
    no_reward = dict(metrics)["rubricflow_no_reward"]
    assert no_reward[0] == "" and "paris" in no_reward[1]
    assert reward.last[1].evaluation is not None and reward.last[1].reason


def test_on_failure_raise_makes_a_judge_failure_an_error() -> None:
    with ScriptedServer(lambda r: Reply(500, {"error": {"message": "down"}})) as server:
        reward = trl_reward(
            RUBRIC, judge=spec(server), judge_settings=FAST, cache=None, on_failure="raise"
        )
        with pytest.raises(RewardError, match="completion 0"):
            trl_call(reward, ["q"], ["Paris"])


def test_the_same_batch_again_is_served_from_the_cache() -> None:
    cache = MemoryJudgeCache()
    with ScriptedServer(keyword_judge) as server:
        reward = trl_reward(RUBRIC, judge=spec(server), cache=cache)
        batch = (["q"] * 3, ["Paris", "Seine", "Paris by the Seine"])
        first, _ = trl_call(reward, *batch)
        calls = len(server.requests)
        again, _ = trl_call(reward, *batch)
    assert calls == 6 and len(server.requests) == calls  # no judge call the second time
    assert again == first == [2 / 3, 1 / 3, 1.0]
    # each reward is reproducible from its evidence: the stored per-criterion verdicts
    rubric = reward.scorer.rubric
    assert rubric is not None
    for outcome in reward.last:
        assert outcome.evaluation is not None
        assert outcome.evaluation.rubric_hash == rubric.content_hash
        replay = aggregate(rubric, outcome.evaluation.criteria)
        assert float(replay.score) == outcome.reward


def test_a_batch_without_any_rubric_is_a_configuration_error() -> None:
    reward = trl_reward(judge="openai:judge@http://127.0.0.1:9/v1", cache=None)
    with pytest.raises(RewardError, match="no rubric"):
        trl_call(reward, ["q"], ["x"])


def test_an_unreadable_rubric_cell_gives_none_for_its_completion_only(
    caplog: pytest.LogCaptureFixture,
) -> None:
    good = [{"requirement": "mentions paris", "weight": 1}]
    with ScriptedServer(keyword_judge) as server:
        reward = trl_reward(judge=spec(server), cache=None)
        with caplog.at_level(logging.WARNING, logger="rubricflow.rewards"):
            rewards, _ = trl_call(
                reward, ["q"] * 3, ["Paris"] * 3, rubric=[good, "criteria: [", {"x": 1}]
            )
    assert rewards == [1.0, None, None]
    assert sum("rubric cannot be read" in m for m in caplog.messages) == 2
