"""A reward function for the `verifiers` library's rubric API.

`verifiers.Rubric(funcs=[...], weights=[...])` calls each function with the keyword
arguments it declares among `prompt`, `completion`, `answer`, `state`, `task`, `info` (all
of them when it takes `**kwargs`), awaiting it when it is async, and reads `float(...)` of
the result. A number is needed, so an incomplete evaluation gives `fallback` (default
0.0), logged with its reason. `info["rubric"]` may carry the example's own rubric.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rubricflow.model import Rubric
from rubricflow.rewards.core import RubricReward

__all__ = ["verifiers_reward"]

logger = logging.getLogger("rubricflow.rewards")


def verifiers_reward(
    rubric: Rubric | str | Path | Mapping[str, Any] | None = None,
    *,
    name: str = "rubric_reward",
    fallback: float = 0.0,
    **options: Any,
) -> Callable[..., Any]:
    """An async reward function for `verifiers.Rubric(funcs=[...])`; `options` are
    `RubricReward`'s."""
    scorer = RubricReward(rubric, **options)

    async def reward(
        prompt: Any = None,
        completion: Any = None,
        answer: Any = None,
        state: Any = None,
        info: Any = None,
        **kwargs: Any,
    ) -> float:
        details = info if isinstance(info, Mapping) else {}
        cell = details.get("rubric")
        outcome = (
            await scorer.score(
                None if prompt is None else [prompt],
                [completion],
                references=None if answer in (None, "") else [answer],
                rubrics=None if cell is None else [cell],
            )
        )[0]
        if outcome.reward is None:
            logger.warning("verifiers reward is the fallback %s: %s", fallback, outcome.reason)
            return fallback
        return outcome.reward

    reward.__name__ = name
    reward.__qualname__ = name
    return reward
