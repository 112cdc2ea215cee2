"""OpenRubricRL's `create_trl_reward_function(rubric_path=..., provider=...)`, so its users
switch with one import.

OpenRubricRL 0.1.0's function returns an object called as `reward(query, response)` that
gives a float (and `await reward.async_call(query, response)`); that shape is kept, and
the same object also answers TRL's current `GRPOTrainer` shape
(`reward(prompts=..., completions=..., **columns)` -> `list[float | None]`). Its rubric
files load through the OpenRubricRL importer (or any other format).
"""

from __future__ import annotations

import logging
from typing import Any

from rubricflow.errors import ConfigurationError
from rubricflow.rewards.core import RubricReward
from rubricflow.rewards.trl import TRLReward
from rubricflow.sync_bridge import run_sync

__all__ = ["OpenRubricRLReward", "create_trl_reward_function"]

logger = logging.getLogger("rubricflow.rewards")


class OpenRubricRLReward(TRLReward):
    """`reward(query, response)` -> float (OpenRubricRL's shape; an incomplete evaluation
    gives `fallback`, logged), or TRL's keyword shape -> `list[float | None]`."""

    def __init__(self, scorer: RubricReward, *, fallback: float = 0.0, **kwargs: Any) -> None:
        super().__init__(scorer, **kwargs)
        self.fallback = fallback

    async def async_call(self, query: str, response: str, **kwargs: Any) -> float:
        outcome = (await self.scorer.score([query], [response]))[0]
        if outcome.reward is None:
            logger.warning("reward is the fallback %s: %s", self.fallback, outcome.reason)
            return self.fallback
        return outcome.reward

    def __call__(  # type: ignore[override]
        self,
        query: Any = None,
        response: Any = None,
        *,
        prompts: Any = None,
        completions: Any = None,
        **kwargs: Any,
    ) -> Any:
        if completions is not None:
            return super().__call__(prompts, completions, **kwargs)
        return run_sync(self.async_call(query, response))


def create_trl_reward_function(
    rubric_path: str,
    provider: str = "openai",
    model: str | None = None,
    api_key: str | None = None,
    **kwargs: Any,
) -> OpenRubricRLReward:
    """OpenRubricRL's factory. `provider` and `model` make the judge spec
    (`openai:gpt-4o-mini`); `base_url` points it at another server. Keys come from
    `OPENAI_API_KEY` / `ANTHROPIC_API_KEY` (sent only to that provider's own URL), so
    `api_key` must be None. Other keyword arguments are `RubricReward`'s, plus `fallback`
    and `name`."""
    if api_key is not None:
        raise ConfigurationError(
            "api_key is not taken as an argument (a key in code ends up in logs and "
            "notebooks); export OPENAI_API_KEY or ANTHROPIC_API_KEY instead"
        )
    if provider not in ("openai", "anthropic", "ollama"):
        raise ConfigurationError(
            f"provider {provider!r} is not known; use openai, anthropic or ollama "
            "(or pass judge= with any rubricflow LLM spec)"
        )
    base_url = kwargs.pop("base_url", None)
    judge = kwargs.pop("judge", None)
    if judge is None:
        judge = provider + (f":{model}" if model else "") + (f"@{base_url}" if base_url else "")
    fallback = float(kwargs.pop("fallback", 0.0))
    name = str(kwargs.pop("name", "openrubricrl_reward"))
    return OpenRubricRLReward(
        RubricReward(rubric_path, judge=judge, **kwargs), fallback=fallback, name=name
    )
