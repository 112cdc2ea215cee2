"""Shared fixtures for the rubricflow-metrics tests: the plugin registered next to the
built-ins and a scripted judge, and a one-criterion scoring helper."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from rubricflow import CriterionResult, evaluate, parse_rubric
from rubricflow.plugins import BLOCK_ENV, PluginRegistry
from rubricflow.testing import make_plugins, make_target

try:
    import rubricflow_metrics
except ImportError as error:  # pragma: no cover - a setup problem, reported clearly
    raise ImportError(
        "rubricflow-metrics is not installed; install it like any third-party plugin: "
        "python -m pip install ./plugins/rubricflow-metrics"
    ) from error

FIXTURES = Path(__file__).parent / "fixtures"

ScoreOf = Callable[..., Awaitable[CriterionResult]]


@pytest.fixture(autouse=True)
def _no_blocking_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BLOCK_ENV, raising=False)


@pytest.fixture
def metric_plugins() -> PluginRegistry:
    """The built-ins plus this plugin, registered directly (no other installed plugins)."""
    return make_plugins(rubricflow_metrics)


@pytest.fixture
def score_of(metric_plugins: PluginRegistry) -> ScoreOf:
    """Score `content` with one metric criterion through a real evaluation."""

    async def run(
        metric: str,
        content: Any,
        reference: Any = None,
        config: Mapping[str, Any] | None = None,
        **target_fields: Any,
    ) -> CriterionResult:
        scoring: dict[str, Any] = {"method": "metric", "metric": metric}
        if config:
            scoring["config"] = dict(config)
        rubric = parse_rubric({"id": "one-metric", "criteria": [{"id": "m", "scoring": scoring}]})
        target = make_target(content, reference=reference, **target_fields)
        evaluation = await evaluate(rubric, target, plugins=metric_plugins)
        (result,) = evaluation.criteria
        return result

    return run
