"""The LLM judge scorers: `llm_verdict`, `llm_oneshot`, `llm_decode` and `llm_score`.

They take the judge from the evaluation's LLM session (`evaluate(..., options={"llm":
SPEC})`, `--llm SPEC` or RUBRICFLOW_LLM). A judge that gives no usable answer after its
retries makes the criterion `unable_to_evaluate` with the reason; a missing or unusable
configuration makes it an `error`. Neither ever becomes a score, MET or UNMET.

`llm_oneshot` is a *group* scorer: it has `score_group(criteria, target, context)`, and
the executor hands it all of a rubric's `llm_oneshot` criteria at once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from rubricflow.errors import RubricflowError
from rubricflow.llm import judges
from rubricflow.llm.session import LLMSession, session_of
from rubricflow.model import Criterion
from rubricflow.results import CriterionResult, Target
from rubricflow.scoring import ScoringContext, error_result

__all__ = [
    "LLM_SCORER_NAMES",
    "LLMDecodeScorer",
    "LLMOneShotScorer",
    "LLMScoreScorer",
    "LLMVerdictScorer",
]

LLM_SCORER_NAMES = ("llm_verdict", "llm_oneshot", "llm_decode", "llm_score")

Strategy = Callable[
    [LLMSession, Criterion, Target, ScoringContext, str], Awaitable[CriterionResult]
]


def _configured(context: ScoringContext) -> tuple[LLMSession, str | None]:
    session = session_of(context)
    try:
        session.provider_now()
    except RubricflowError as error:
        return session, str(error)
    return session, None


class _SingleScorer:
    name = ""
    description = ""
    strategy: Strategy

    async def score(
        self, criterion: Criterion, target: Target, context: ScoringContext
    ) -> CriterionResult:
        session, problem = _configured(context)
        if problem is not None:
            return error_result(criterion, self.name, problem)
        return await type(self).strategy(session, criterion, target, context, self.name)


class LLMVerdictScorer(_SingleScorer):
    name = "llm_verdict"
    description = (
        "an LLM judge answers MET or UNMET for the criterion (one call each, concurrently)"
    )
    strategy = staticmethod(judges.judge_verdict)


class LLMDecodeScorer(_SingleScorer):
    name = "llm_decode"
    description = "an LLM judge classifies the content into one of the criterion's levels"
    strategy = staticmethod(judges.judge_level)


class LLMScoreScorer(_SingleScorer):
    name = "llm_score"
    description = (
        "an LLM judge scores the content: AgentV bands 0..10, a min..max range, "
        "RubricJudgeSpec tags or a 0..100 rubric-as-judge score"
    )
    strategy = staticmethod(judges.judge_score)


class LLMOneShotScorer:
    name = "llm_oneshot"
    description = "one LLM call judges all of the rubric's llm_oneshot criteria (MET/UNMET)"

    async def score(
        self, criterion: Criterion, target: Target, context: ScoringContext
    ) -> CriterionResult:
        return (await self.score_group([criterion], target, context))[0]

    async def score_group(
        self, criteria: Sequence[Criterion], target: Target, context: ScoringContext
    ) -> list[CriterionResult]:
        session, problem = _configured(context)
        if problem is not None:
            return [error_result(c, self.name, problem) for c in criteria]
        return await judges.judge_oneshot(session, criteria, target, context, self.name)
