"""A rubric's judge against people's labels: its per-criterion reliability over time
(what the dashboard draws), and a drafted next version learned from the labels.

Reading the reliability takes the reviewer role; a proposal judges with the server's
judge and may register a rubric version, so it takes the admin role.
"""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Query, Request

from rubricflow.errors import ConfigurationError
from rubricflow.server.auth import Admin, AppDep, Reviewer
from rubricflow.server.problems import PROBLEM_RESPONSES
from rubricflow.server.scoring import IdPath
from rubricflow.server.settings import ServerSettings
from rubricflow.wire.trust import (
    ProposalOut,
    ProposalRequest,
    ReliabilityOut,
    ReliabilityPointOut,
)

__all__ = ["router"]

router = APIRouter(
    prefix="/v1/rubrics",
    tags=["rubrics"],
    responses={k: PROBLEM_RESPONSES[k] for k in (403, 404, 422)},
)


@router.get(
    "/{rubric_id:path}/reliability",
    response_model=ReliabilityOut,
    summary="The judge's agreement with people per criterion, over time",
)
async def reliability(
    rubric_id: IdPath,
    principal: Reviewer,
    application: AppDep,
    period: Literal["day", "week", "month"] = Query(default="week"),
) -> ReliabilityOut:
    """Per criterion and period (its first day), how many of people's decisions on the
    rubric agreed with the judge, and Cohen's kappa. Only people's decisions count."""
    points = await application.judge_reliability(rubric_id, period=period)
    return ReliabilityOut(
        rubric_id=rubric_id, period=period, points=[ReliabilityPointOut.of(p) for p in points]
    )


@router.post(
    "/{rubric_id:path}/proposals",
    response_model=ProposalOut,
    summary="Draft the rubric's next version from the labels, measured on held-out labels",
)
async def propose(
    rubric_id: IdPath,
    body: ProposalRequest,
    request: Request,
    principal: Admin,
    application: AppDep,
) -> ProposalOut:
    """`rubricflow calibrate --propose` over HTTP, with the server's judge: few-shot
    examples and clearer descriptions from the disagreements, k-fold cross-validated;
    registered (with `register`) only when kappa improved beyond the interval."""
    from rubricflow.calibration import parse_examples
    from rubricflow.llm.session import LLMSession
    from rubricflow.server.judging import NO_JUDGE

    settings: ServerSettings = request.app.state.settings
    if not settings.judge:
        raise ConfigurationError(f"a proposal asks the judge to grade and rewrite, but {NO_JUDGE}")
    rubric = await application.rubrics.get(rubric_id, body.version)
    examples = parse_examples(body.examples, rubric) if body.examples else []
    async with LLMSession(
        settings.judge,
        plugins=application.plugins,
        allow_import=False,
        cache=application.judge_cache,
    ) as judge:
        proposal, registered = await application.propose_rubric_revision(
            rubric,
            llm=judge,
            examples=examples,
            from_store=body.from_store,
            register=body.register_draft,
            folds=body.folds,
            per_criterion=body.per_criterion,
            resamples=body.resamples,
            seed=body.seed,
            confidence=body.confidence,
        )
    from rubricflow.formats.native import stored_rubric_document

    return ProposalOut(
        proposal=proposal.to_dict(),
        draft=stored_rubric_document(proposal.draft),
        registered=registered is not None,
    )
