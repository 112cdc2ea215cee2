"""A scripted scorer for engine tests: each criterion says in `scoring.config` what it gets."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rubricflow import hookimpl
from rubricflow.plugins import PluginRegistry, create_plugin_manager
from rubricflow.scorers.base import error_result, result_from_value


class ScriptedScorer:
    """`config.value` is what a check would return; `config.status` forces a failure;
    `config.delay` sleeps first, so completion order can be shuffled."""

    name = "scripted"
    description = "returns what the criterion's config says"

    async def score(self, criterion: Any, target: Any, context: Any) -> Any:
        config = criterion.scoring.config
        await asyncio.sleep(config.get("delay", 0))
        if config.get("status") == "error":
            return error_result(criterion, self.name, "scripted failure")
        if config.get("status") == "raise":
            raise RuntimeError("scorer exploded")
        if config.get("status") == "unable":
            return error_result(criterion, self.name, "judge gave no answer").model_copy(
                update={"status": "unable_to_evaluate"}
            )
        return result_from_value(criterion, context, self.name, config["value"], what="script")


class ScriptedPlugin:
    @hookimpl
    def rubricflow_scorers(self) -> list[Any]:
        return [ScriptedScorer()]


@pytest.fixture(scope="session")
def scripted() -> PluginRegistry:
    return create_plugin_manager(plugins=[ScriptedPlugin()], load_entry_points=False)


def crit(cid: str, value: Any = None, weight: float = 1.0, **extra: Any) -> dict[str, Any]:
    """A criterion scored by the scripted scorer."""
    config = {k: extra.pop(k) for k in ("status", "delay") if k in extra}
    if value is not None:
        config["value"] = value
    return {
        "id": cid,
        "weight": weight,
        "scoring": {"method": "scripted", "config": config},
        **extra,
    }
