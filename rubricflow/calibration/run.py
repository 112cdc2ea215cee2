"""Judge labelled examples with the engine and report the judge's agreement with humans."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rubricflow.calibration.labels import LabelledExample, parse_examples
from rubricflow.calibration.report import CalibrationReport, build_report
from rubricflow.engine.executor import DEFAULT_CONCURRENCY, evaluate_many
from rubricflow.model import Rubric
from rubricflow.plugins import PluginRegistry

__all__ = ["calibrate"]


async def calibrate(
    rubric: Rubric,
    examples: Iterable[LabelledExample | Mapping[str, Any]],
    *,
    plugins: PluginRegistry | None = None,
    options: Mapping[str, Any] | None = None,
    bootstrap: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    concurrency: int = DEFAULT_CONCURRENCY,
    target_concurrency: int = DEFAULT_CONCURRENCY,
    allow_import: bool = False,
) -> CalibrationReport:
    """Evaluate every example with `rubric` (as `evaluate` would: `plugins`, `options`
    such as `{"llm": session, "samples": 3}`, `concurrency`, `allow_import`) and compare
    the decisions with the human labels.

    `examples` are `LabelledExample`s (see `read_labels`) or mappings with `content`,
    optional `id`/`query`/`reference`/`metadata` and `labels`; bad ones raise
    `CalibrationError`. `bootstrap` resamples (0: no intervals) with `seed` give the
    `confidence` intervals.
    """
    if bootstrap < 0:
        raise ValueError(f"bootstrap must be 0 (off) or more resamples, got {bootstrap}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1 (exclusive), got {confidence}")
    checked = parse_examples(examples, rubric)
    evaluations = [
        evaluation
        async for evaluation in evaluate_many(
            rubric,
            [example.target for example in checked],
            target_concurrency=target_concurrency,
            plugins=plugins,
            concurrency=concurrency,
            allow_import=allow_import,
            options=dict(options or {}),
        )
    ]
    return build_report(
        rubric, checked, evaluations, resamples=bootstrap, confidence=confidence, seed=seed
    )
