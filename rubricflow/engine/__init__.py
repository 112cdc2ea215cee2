"""The scoring engine: executor, aggregation, feedback and the meta-rubric."""

from rubricflow.engine.aggregate import Aggregate, aggregate, criterion_passed, weighted_score
from rubricflow.engine.executor import as_target, evaluate, evaluate_many, evaluate_sync

__all__ = [
    "Aggregate",
    "aggregate",
    "as_target",
    "criterion_passed",
    "evaluate",
    "evaluate_many",
    "evaluate_sync",
    "weighted_score",
]
