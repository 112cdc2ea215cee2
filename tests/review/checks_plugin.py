"""A small plugin for the review tests, importable by the test process and by worker
subprocesses alike (`from review.checks_plugin import ReviewChecks`).

Check functions (registered by name, as a third-party plugin would):
- `score_field`: the content's `score` field (a float in 0..1), so a test picks the score.
- `explodes`: always raises; the engine turns that into an `error` result.
- `slow_non_empty`: MET for non-empty content after sleeping `seconds` (scoring.config);
  when the plugin was built with a `marker` folder it first drops a file there named after
  the artifact, so a test knows a review is in flight.
- `counted_non_empty`: MET for non-empty content; counts its calls per artifact.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rubricflow.hookspecs import hookimpl
from rubricflow.results import CriterionResult, Target


class ReviewChecks:
    """The check functions above; `slow_factor` scales every `slow_non_empty` sleep."""

    def __init__(
        self,
        *,
        marker: str | Path | None = None,
        slow_factor: float = 1.0,
        name: str = "review-checks",
    ) -> None:
        self.__name__ = name
        self.marker = Path(marker) if marker is not None else None
        self.slow_factor = slow_factor
        self.calls: Counter[str] = Counter()

    @hookimpl
    def rubricflow_check_functions(self) -> Mapping[str, Callable[..., Any]]:
        return {
            "score_field": self.score_field,
            "explodes": self.explodes,
            "slow_non_empty": self.slow_non_empty,
            "counted_non_empty": self.counted_non_empty,
        }

    @staticmethod
    def score_field(target: Target) -> float:
        return float(target.content["score"])

    @staticmethod
    def explodes(target: Target) -> bool:
        raise RuntimeError("the check blew up")

    async def slow_non_empty(self, target: Target, seconds: float = 0.0) -> bool:
        if self.marker is not None:
            (self.marker / f"{target.id}.started").touch()
        await asyncio.sleep(seconds * self.slow_factor)
        return bool(target.text.strip())

    def counted_non_empty(self, target: Target) -> bool:
        self.calls[target.id or ""] += 1
        return bool(target.text.strip())


class ExplodingScorer:
    """A scorer plugin (`method: exploding`) whose scorer raises, as a broken provider would."""

    __name__ = "exploding-scorer"

    class _Scorer:
        name = "exploding"
        description = "raises on every criterion"

        async def score(self, criterion: Any, target: Target, context: Any) -> CriterionResult:
            raise ConnectionError("the judge service is down")

    @hookimpl
    def rubricflow_scorers(self) -> Sequence[Any]:
        return [self._Scorer()]
