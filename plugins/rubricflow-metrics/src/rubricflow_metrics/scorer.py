"""The `metric` scorer: a criterion names a metric in `scoring.metric` and its options in
`scoring.config`; the value in 0..1 becomes the criterion's score.

A metric that cannot give a score (no reference, an unknown name, a bad option,
OpenRubricRL's `perplexity` or an unresolved `custom`) is an `error` result that says
why, never a score.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from rubricflow.model import Criterion
from rubricflow.results import CriterionResult, Target
from rubricflow.scorers.base import CheckResult, ScoringContext, error_result, result_from_value
from rubricflow_metrics.metrics import (
    COMMON_OPTIONS,
    METRICS,
    Metric,
    MetricError,
    MetricInput,
    MetricValue,
    resolve_metric,
)

__all__ = ["MetricScorer", "compute_metric", "find_reference"]


def find_reference(target: Target, config: Mapping[str, Any]) -> tuple[Any, str]:
    """The reference and where it came from: `config.reference` when the criterion gives
    one, else the field `config.reference_key` names (in the target's reference mapping or
    its metadata), else `target.reference`."""
    if "reference" in config:
        return config["reference"], "config.reference"
    key = config.get("reference_key")
    if key is not None:
        if not isinstance(key, str) or not key:
            raise MetricError(f"config.reference_key ({key!r}) must be a field name")
        if isinstance(target.reference, Mapping) and key in target.reference:
            return target.reference[key], f"target.reference.{key}"
        if key in target.metadata:
            return target.metadata[key], f"target.metadata.{key}"
        return None, f"target.reference.{key} or target.metadata.{key}"
    return target.reference, "target.reference"


def reference_texts(value: Any, source: str) -> tuple[str, ...]:
    """A reference as texts: one text, a list of texts (several references), or a number
    (as text). A mapping or other JSON is refused with a hint."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return (str(value),)
    if isinstance(value, list | tuple) and all(
        isinstance(item, str) or (isinstance(item, int | float) and not isinstance(item, bool))
        for item in value
    ):
        return tuple(str(item) for item in value)
    raise MetricError(
        f"{source} is {type(value).__name__} data; this metric compares text, so give a text "
        "or a list of texts (config.reference_key picks a field of a mapping)"
    )


def compute_metric(
    name: str, content: Any, reference: Any = None, config: Mapping[str, Any] | None = None
) -> MetricValue:
    """Compute one metric directly, outside an evaluation (raises `MetricError`)."""
    target = Target(content=content, reference=reference)
    metric, data = _prepare(name, target, dict(config or {}))
    return metric.compute(data)


def _prepare(name: str, target: Target, config: dict[str, Any]) -> tuple[Metric, MetricInput]:
    metric, used = resolve_metric(name, config)
    allowed = metric.options | COMMON_OPTIONS | used
    unknown = sorted(set(config) - allowed)
    if unknown:
        accepted = ", ".join(sorted(metric.options | COMMON_OPTIONS))
        raise MetricError(
            f"unknown option{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(f'config.{key}' for key in unknown)} for metric {metric.name!r}; "
            f"it accepts: {accepted}"
        )
    references: tuple[str, ...] = ()
    raw_reference: Any = None
    source = ""
    if metric.reference != "none":
        raw_reference, source = find_reference(target, config)
        if metric.reference == "text":
            references = reference_texts(raw_reference, source)
            if not references:
                raise MetricError(
                    f"metric {metric.name!r} compares the content with a reference, and there "
                    f"is none ({source} is empty): give the target a `reference` (a text, or "
                    "a list of texts for several references) or set scoring.config.reference"
                )
    data = MetricInput(
        text=target.text,
        content=target.content,
        references=references,
        reference=raw_reference,
        config={key: value for key, value in config.items() if key not in used},
        reference_source=source,
    )
    return metric, data


class MetricScorer:
    """Scores a criterion with the metric its `scoring.metric` names (see `METRICS`)."""

    name = "metric"
    description = (
        "text metrics: bleu, chrf, ter, rouge1/2/L, readability, exact/normalized match, "
        "regex, keyword coverage, length, JSON path, numeric tolerance"
    )

    @property
    def metrics(self) -> list[str]:
        """The metric names `scoring.metric` may name, listed by `rubricflow plugins`."""
        return list(METRICS)

    async def score(
        self, criterion: Criterion, target: Target, context: ScoringContext
    ) -> CriterionResult:
        """Compute the metric (in a worker thread, so a long text does not stall the other
        criteria) and turn its 0..1 value into a scored result with evidence."""
        name = criterion.scoring.metric or ""
        try:
            metric, data = _prepare(name, target, dict(criterion.scoring.config))
            value = await asyncio.to_thread(metric.compute, data)
        except MetricError as error:
            return error_result(criterion, self.name, f"metric {name!r}: {error}")
        except Exception as error:
            return error_result(
                criterion,
                self.name,
                f"metric {name!r} failed in its library: {type(error).__name__}: {error}",
            )
        evidence = list(value.evidence)
        if data.references:
            count = len(data.references)
            evidence.append(
                f"compared with {count} reference{'s' if count > 1 else ''} "
                f"from {data.reference_source}"
            )
        return result_from_value(
            criterion,
            context,
            self.name,
            CheckResult(value.score, tuple(evidence), value.notes),
            what=f"metric {name!r}",
        )
