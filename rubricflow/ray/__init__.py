"""rubricflow on Ray (the `ray` extra): evaluating a Ray Dataset of targets
(`evaluate_dataset`), `rubricflow eval --ray` (`RayEvaluator`), and one judge budget for
the whole cluster (a named actor); the evaluation actors outlive a Dataset
(`release_pools` stops them). See docs/scale.md.

The names below are loaded when first used: the budget actor's process imports
`rubricflow.ray.budget` only, and Ray Data (with pandas) would add half a second to its
start, beside the evaluation actors' own."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rubricflow.ray.driver import RayEvaluator, connect, evaluate_dataset
    from rubricflow.ray.pool import release_pools

__all__ = ["RayEvaluator", "connect", "evaluate_dataset", "release_pools"]


def __getattr__(name: str) -> Any:
    if name == "release_pools":
        from rubricflow.ray import pool

        return pool.release_pools
    if name in __all__:
        from rubricflow.ray import driver

        return getattr(driver, name)
    raise AttributeError(f"module 'rubricflow.ray' has no attribute {name!r}")
