"""Registers the built-in scorers through the same hook a third party uses."""

from __future__ import annotations

from collections.abc import Sequence

from rubricflow.hookspecs import hookimpl
from rubricflow.scorers.deterministic import DeterministicScorer
from rubricflow.scorers.llm import (
    LLMDecodeScorer,
    LLMOneShotScorer,
    LLMScoreScorer,
    LLMVerdictScorer,
)
from rubricflow.scorers.schema import SchemaScorer
from rubricflow.scoring import Scorer


@hookimpl
def rubricflow_scorers() -> Sequence[Scorer]:
    return [
        DeterministicScorer(),
        SchemaScorer(),
        LLMVerdictScorer(),
        LLMOneShotScorer(),
        LLMDecodeScorer(),
        LLMScoreScorer(),
    ]
