"""A reward that needs a judge and has none is refused when it is built, naming the
criteria and the fix (issue 31: it used to return None for every completion)."""

from __future__ import annotations

from typing import Any

import pytest

from rubricflow import RewardError
from rubricflow.rewards import trl_reward

JUDGED = {
    "id": "capitals",
    "criteria": [{"id": "paris", "description": "mentions paris"}],
}
CHECKED = {
    "id": "short",
    "criteria": [
        {
            "id": "brief",
            "scoring": {
                "method": "deterministic",
                "function": "word_count_between",
                "config": {"max": 5},
            },
        },
    ],
}


def test_a_rubric_with_llm_criteria_and_no_judge_is_refused_at_once() -> None:
    with pytest.raises(RewardError) as refused:
        trl_reward(JUDGED)
    message = str(refused.value)
    assert "paris" in message and "judge=" in message and "RUBRICFLOW_LLM" in message


@pytest.mark.parametrize("options", [{"aggregation": "implicit"}, {"ranking": "group"}])
def test_judging_modes_without_a_judge_are_refused(options: dict[str, Any]) -> None:
    with pytest.raises(RewardError, match="needs an LLM judge"):
        trl_reward(CHECKED, **options)


def test_the_default_judge_of_the_environment_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUBRICFLOW_LLM", "openai:gpt-4o-mini@http://127.0.0.1:9/v1")
    assert callable(trl_reward(JUDGED))


def test_checks_alone_need_no_judge() -> None:
    reward = trl_reward(CHECKED)
    assert reward(prompts=["q", "q"], completions=["one two", "one two three four five six"]) == [
        1.0,
        0.0,
    ]


def test_per_prompt_rubrics_that_need_a_judge_are_refused_at_the_first_call() -> None:
    reward = trl_reward()  # the rubrics come with the dataset
    with pytest.raises(RewardError, match="capitals"):
        reward(prompts=["q"], completions=["Paris"], rubric=[JUDGED])
