"""rubricflow-metrics: the `metric` scorer for rubricflow.

Installed, it is found through the `rubricflow` entry-point group (entry point
`metrics`); rubricflow itself never names it. A criterion uses it with
`scoring: {method: metric, metric: bleu, config: {...}}`.
"""

from __future__ import annotations

from collections.abc import Sequence

from rubricflow import Scorer, hookimpl
from rubricflow_metrics.metrics import (
    METRICS,
    Metric,
    MetricError,
    MetricInput,
    MetricValue,
    known_metric_names,
    register_metric,
    resolve_metric,
)
from rubricflow_metrics.scorer import MetricScorer, compute_metric

__version__ = "0.1.0"

__all__ = [
    "METRICS",
    "Metric",
    "MetricError",
    "MetricInput",
    "MetricScorer",
    "MetricValue",
    "__version__",
    "compute_metric",
    "known_metric_names",
    "register_metric",
    "resolve_metric",
    "rubricflow_scorers",
]


@hookimpl
def rubricflow_scorers() -> Sequence[Scorer]:
    """The one scorer this plugin adds: `metric`."""
    return [MetricScorer()]
