"""TRL's `GRPOTrainer(reward_funcs=...)` shape.

TRL calls each reward function as
`reward_func(prompts=prompts, completions=completions, completion_ids=completion_ids_list,
**reward_kwargs)`, where `reward_kwargs` holds every dataset column but `prompt` (one
entry per completion) plus `trainer_state`, `log_extra` and `log_metric`; it awaits an
`async def` function (with other async ones, under `asyncio.gather`), turns a `None` reward
into NaN (the sample is left out of that function's reward) and names the function's
metrics by its `__name__`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rubricflow.model import Rubric
from rubricflow.rewards.core import RewardOutcome, RubricReward, criterion_means
from rubricflow.sync_bridge import run_sync

__all__ = ["TRLReward", "trl_reward"]


def _report(outcomes: list[RewardOutcome], kwargs: Mapping[str, Any]) -> None:
    """Per-criterion means through TRL's `log_metric(name, value)`, and why a completion
    has no reward as a completions-table column through `log_extra(column, values)`."""
    log_metric = kwargs.get("log_metric")
    if callable(log_metric):
        for name, value in criterion_means(outcomes).items():
            log_metric(name, value)
    log_extra = kwargs.get("log_extra")
    if callable(log_extra) and any(outcome.reason for outcome in outcomes):
        log_extra("rubricflow_no_reward", [outcome.reason or "" for outcome in outcomes])


class TRLReward:
    """A TRL reward function: `reward(prompts=..., completions=..., **columns)` returns
    `list[float | None]`. Columns read: `reference_column` (default `reference`) and
    `rubric_column` (default `rubric`, per-prompt rubrics); others are ignored."""

    def __init__(
        self,
        scorer: RubricReward,
        *,
        name: str = "rubric_reward",
        reference_column: str = "reference",
        rubric_column: str = "rubric",
    ) -> None:
        self.scorer = scorer
        self.__name__ = name
        self.reference_column = reference_column
        self.rubric_column = rubric_column
        self.last: list[RewardOutcome] = []
        """The last batch's outcomes (rewards with their evaluations and reasons)."""

    async def outcomes(
        self, prompts: Any = None, completions: Any = None, **kwargs: Any
    ) -> list[RewardOutcome]:
        outcomes = await self.scorer.score(
            prompts,
            list(completions or []),
            references=kwargs.get(self.reference_column),
            rubrics=kwargs.get(self.rubric_column),
        )
        self.last = outcomes
        _report(outcomes, kwargs)
        return outcomes

    def __call__(
        self, prompts: Any = None, completions: Any = None, **kwargs: Any
    ) -> list[float | None]:
        outcomes = run_sync(self.outcomes(prompts, completions, **kwargs))
        return [outcome.reward for outcome in outcomes]

    def as_async(self) -> Callable[..., Any]:
        """The `async def` variant (TRL gathers async reward functions concurrently)."""

        async def reward(
            prompts: Any = None, completions: Any = None, **kwargs: Any
        ) -> list[float | None]:
            outcomes = await self.outcomes(prompts, completions, **kwargs)
            return [outcome.reward for outcome in outcomes]

        reward.__name__ = self.__name__
        reward.__qualname__ = self.__name__
        return reward


def trl_reward(
    rubric: Rubric | str | Path | Mapping[str, Any] | None = None,
    *,
    name: str = "rubric_reward",
    asynchronous: bool = False,
    reference_column: str = "reference",
    rubric_column: str = "rubric",
    **options: Any,
) -> Any:
    """A reward function for TRL's `GRPOTrainer(reward_funcs=[...])`.

    `options` are `RubricReward`'s (`judge`, `judge_settings`, `cache`, `aggregation`,
    `concurrency`, `on_failure`). `asynchronous=True` gives the `async def` variant.
    """
    function = TRLReward(
        RubricReward(rubric, **options),
        name=name,
        reference_column=reference_column,
        rubric_column=rubric_column,
    )
    return function.as_async() if asynchronous else function
