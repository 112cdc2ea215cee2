"""verl's custom reward function shape.

verl loads `custom_reward_function.path` / `.name` and calls it once per sample as
`compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs)`,
wanting a number, or a dict holding `score` (other keys are logged). verl needs a number
for every sample, so an incomplete evaluation gives `fallback` (default 0.0), logged with
its reason on the `rubricflow.rewards` logger.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rubricflow.model import Rubric
from rubricflow.rewards.core import RubricReward
from rubricflow.sync_bridge import run_sync

__all__ = ["VerlReward", "verl_compute_score"]

logger = logging.getLogger("rubricflow.rewards")


class VerlReward:
    """`compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs)`.

    `ground_truth` is the judge's reference answer; `extra_info["rubric"]` (when present)
    is the sample's own rubric, `extra_info["prompt"]` or `extra_info["question"]` its
    prompt. With `details=True` it returns `{"score", "coverage", "incomplete"}`."""

    def __init__(self, scorer: RubricReward, *, fallback: float = 0.0, details: bool = False):
        self.scorer = scorer
        self.fallback = fallback
        self.details = details
        self.__name__ = "compute_score"

    def __call__(
        self,
        data_source: Any,
        solution_str: str,
        ground_truth: Any,
        extra_info: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> float | dict[str, Any]:
        info = extra_info if isinstance(extra_info, Mapping) else {}
        prompt = info.get("prompt", info.get("question"))
        rubric = info.get("rubric")
        outcome = run_sync(
            self.scorer.score(
                None if prompt is None else [prompt],
                [solution_str],
                references=None if ground_truth is None else [ground_truth],
                rubrics=None if rubric is None else [rubric],
            )
        )[0]
        score = self.fallback if outcome.reward is None else outcome.reward
        if outcome.reward is None:
            logger.warning(
                "verl reward for a %s sample is the fallback %s: %s",
                data_source,
                self.fallback,
                outcome.reason,
            )
        if not self.details:
            return score
        coverage = outcome.evaluation.coverage if outcome.evaluation else 0.0
        return {"score": score, "coverage": coverage, "incomplete": outcome.reward is None}


def verl_compute_score(
    rubric: Rubric | str | Path | Mapping[str, Any] | None = None,
    *,
    fallback: float = 0.0,
    details: bool = False,
    **options: Any,
) -> VerlReward:
    """A `compute_score` for verl; `options` are `RubricReward`'s."""
    return VerlReward(RubricReward(rubric, **options), fallback=fallback, details=details)
