"""Rubrics as rewards: reward functions in the shapes RL trainers call.

- `trl_reward(...)`: TRL `GRPOTrainer(reward_funcs=[...])` (sync, or `asynchronous=True`).
- `verl_compute_score(...)`: verl's `compute_score(data_source, solution_str, ...)`.
- `ray_reward(...)`: verl's and OpenRLHF's calls from Ray workers, judged by a pool of
  Ray actors under one cluster-wide judge budget (the `ray` extra).
- `verifiers_reward(...)`: a function for `verifiers.Rubric(funcs=[...])`.
- `create_trl_reward_function(rubric_path=..., provider=...)`: OpenRubricRL's factory.
- `RubricReward`: the engine under them all (`await scorer.score(prompts, completions)`).

The OpenRLHF remote reward model is served by `rubricflow serve` (`POST /get_reward`).
See docs/rewards.md.
"""

from rubricflow.rewards.columns import RubricColumnCache, completion_text, prompt_text
from rubricflow.rewards.core import RewardOutcome, RubricReward, as_rubric, criterion_means
from rubricflow.rewards.holistic import holistic_rubric
from rubricflow.rewards.openrubricrl import OpenRubricRLReward, create_trl_reward_function
from rubricflow.rewards.ray import RayReward, ray_reward
from rubricflow.rewards.trl import TRLReward, trl_reward
from rubricflow.rewards.verifiers import verifiers_reward
from rubricflow.rewards.verl import VerlReward, verl_compute_score

__all__ = [
    "OpenRubricRLReward",
    "RayReward",
    "RewardOutcome",
    "RubricColumnCache",
    "RubricReward",
    "TRLReward",
    "VerlReward",
    "as_rubric",
    "completion_text",
    "create_trl_reward_function",
    "criterion_means",
    "holistic_rubric",
    "prompt_text",
    "ray_reward",
    "trl_reward",
    "verifiers_reward",
    "verl_compute_score",
]
