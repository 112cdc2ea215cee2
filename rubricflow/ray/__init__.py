"""rubricflow on Ray (the `ray` extra): evaluating a Ray Dataset of targets
(`evaluate_dataset`), `rubricflow eval --ray` (`RayEvaluator`), and one judge budget for
the whole cluster (a named actor). See docs/scale.md."""

from __future__ import annotations

from rubricflow.ray.driver import RayEvaluator, connect, evaluate_dataset

__all__ = ["RayEvaluator", "connect", "evaluate_dataset"]
