"""Group-aware rewards through the trainer shapes: `ranking="group"` ranks each GRPO
group (consecutive completions of one prompt) with one judge call, and ranks map to
rewards; a failed ranking gives its group None with the reason, or RewardError."""

from __future__ import annotations

import re

import pytest
from llm.scripted import Recorded, Reply, ScriptedServer, openai_reply

from rubricflow import RewardError
from rubricflow.rewards import RubricReward, trl_reward

from .judge import FAST, spec
from .test_trl import RUBRIC, trl_call

SHOWN = re.compile(r'<completion index="\d+">\n(.*?)\n</completion>', re.S)


def longer_is_better(request: Recorded) -> Reply:
    texts = SHOWN.findall(request.text)
    lengths = sorted({len(t) for t in texts}, reverse=True)
    return openai_reply(
        {
            "ranking": [
                {"index": i, "reasoning": "length", "rank": lengths.index(len(t)) + 1}
                for i, t in enumerate(texts)
            ]
        }
    )


def test_trl_groups_are_ranked_with_one_call_each_in_batch_order() -> None:
    with ScriptedServer(longer_is_better) as server:
        reward = trl_reward(
            RUBRIC, judge=spec(server), judge_settings=FAST, cache=None, ranking="group"
        )
        prompts = ["Capital of France?"] * 3 + [[{"role": "user", "content": "Of Italy?"}]] * 2
        completions = ["Paris", "Paris, on the Seine", "P", "Rome", "Rome"]
        rewards, metrics = trl_call(reward, prompts, completions)
    assert rewards == [0.5, 1.0, 0.0, 0.5, 0.5]  # the tie shares the mean
    assert len(server.requests) == 2  # one judge call per group
    # the rubric is the standard the group is ranked against
    assert all("mentions paris" in r.text for r in server.requests)
    assert dict(metrics)["rubricflow/incomplete"] == 0.0


def test_a_group_whose_ranking_fails_gets_none_with_the_reason() -> None:
    def garbage_for_italy(request: Recorded) -> Reply:
        if "Italy" in request.text:
            return openai_reply("no ranking here")
        return longer_is_better(request)

    with ScriptedServer(garbage_for_italy) as server:
        reward = trl_reward(
            RUBRIC, judge=spec(server), judge_settings=FAST, cache=None, ranking="group"
        )
        rewards, metrics = trl_call(
            reward, ["France?", "France?", "Italy?", "Italy?"], ["Paris!", "Paris", "a", "b"]
        )
        assert rewards == [1.0, 0.0, None, None]
        reasons = dict(metrics)["rubricflow_no_reward"]
        assert reasons[:2] == ["", ""] and all("group ranking failed" in r for r in reasons[2:])

        strict = trl_reward(
            RUBRIC,
            judge=spec(server),
            judge_settings=FAST,
            cache=None,
            ranking="group",
            on_failure="raise",
        )
        with pytest.raises(
            RewardError, match="completion 0: the group ranking failed: no valid judge answer"
        ):
            trl_call(strict, ["Italy?", "Italy?", "Italy?"], ["x", "y", "z"])


def test_group_ranking_options_are_checked() -> None:
    with pytest.raises(RewardError, match="ranking 'pairs' is not known"):
        RubricReward(RUBRIC, ranking="pairs")  # type: ignore[arg-type]
    with pytest.raises(RewardError, match="aggregation='implicit' does not apply"):
        RubricReward(RUBRIC, ranking="group", aggregation="implicit")
