"""Batch runs and what they cost: the newest runs with their figures, one run's summary,
its evaluations a page at a time, two runs compared, and the judge's usage.

Runs hold every judged output of an evaluation batch, so reading them takes the reviewer
role (reviewers and admins); submitters see only their own artifacts' evaluations,
through the artifacts' routes. A run's options never show a credential (masked by the
core).
"""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime

from fastapi import APIRouter, Query

from rubricflow.application import Application, EvaluationFilter
from rubricflow.runs import summarize
from rubricflow.server.auth import AppDep, Reviewer
from rubricflow.server.params import INT4_MAX
from rubricflow.server.problems import PROBLEM_RESPONSES
from rubricflow.server.scoring import PRINTABLE, IdPath
from rubricflow.wire.runs import (
    EvaluationPage,
    JudgeUsageList,
    JudgeUsageOut,
    RunComparisonOut,
    RunInfoOut,
    RunList,
    RunOut,
    RunSummaryOut,
    SpendList,
    SpendOut,
)
from rubricflow.wire.trust import PassRateEstimateOut

__all__ = ["router"]

router = APIRouter(
    prefix="/v1",
    tags=["runs"],
    responses={k: PROBLEM_RESPONSES[k] for k in (403, 404)},
)

MAX_PAGE = 1000
LATEST = "latest"


# --- routes ---------------------------------------------------------------------------------
async def _run_id(application: Application, run_id: str) -> str:
    """`run_id`, or the newest run's for `latest`; 404 for a run that is not stored."""
    if run_id == LATEST:
        return (await application.run(LATEST)).info.id
    await application.runs.get(run_id)
    return run_id


@router.get("/runs", response_model=RunList, summary="The newest runs with their figures")
async def list_runs(
    principal: Reviewer,
    application: AppDep,
    limit: int = Query(default=20, ge=1, le=MAX_PAGE, description="How many runs"),
) -> RunList:
    overviews = await application.run_overviews(limit=limit)
    return RunList(
        runs=[
            RunOut(**RunInfoOut.of(o.info).model_dump(), summary=RunSummaryOut.of(o.summary))
            for o in overviews
        ]
    )


@router.get(
    "/runs/compare",
    response_model=RunComparisonOut,
    summary="Compare two runs: flips, pass rates and scores (B - A)",
)
async def compare_runs(
    principal: Reviewer,
    application: AppDep,
    a: str = Query(
        min_length=1, max_length=200, pattern=PRINTABLE, description="Run A's id, or latest"
    ),
    b: str = Query(
        min_length=1, max_length=200, pattern=PRINTABLE, description="Run B's id, or latest"
    ),
    threshold: float | None = Query(
        default=None,
        ge=0.0,
        le=1.0,
        description="List the pass rates that fell by more than this fraction",
    ),
) -> RunComparisonOut:
    comparison = await application.compare_runs(a, b)
    return RunComparisonOut.of(comparison, threshold)


@router.get(
    "/runs/{run_id:path}/evaluations",
    response_model=EvaluationPage,
    summary="A run's stored evaluations, a page at a time",
)
async def run_evaluations(
    run_id: IdPath,
    principal: Reviewer,
    application: AppDep,
    limit: int = Query(default=50, ge=1, le=MAX_PAGE),
    offset: int = Query(default=0, ge=0, le=INT4_MAX),
) -> EvaluationPage:
    chosen = EvaluationFilter(run_id=await _run_id(application, run_id))
    total = await application.evaluations.count(chosen)
    found = await application.evaluations.query(chosen, limit=limit, offset=offset)
    following = offset + len(found)
    return EvaluationPage(
        run_id=str(chosen.run_id),
        total=total,
        offset=offset,
        limit=limit,
        next_offset=following if following < total and found else None,
        evaluations=found,
    )


@router.get(
    "/runs/{run_id:path}",
    response_model=RunOut,
    summary="One run (or `latest`) with its figures and per-criterion pass rates",
)
async def get_run(run_id: IdPath, principal: Reviewer, application: AppDep) -> RunOut:
    run = await application.run(run_id)
    summary = RunSummaryOut.of(summarize(run.evaluations))
    estimate = await application.run_pass_rate_estimate(run)
    return RunOut(
        **RunInfoOut.of(run.info).model_dump(),
        summary=summary,
        pass_rate_estimate=None if estimate is None else PassRateEstimateOut.of(estimate),
    )


@router.get(
    "/judge-usage",
    response_model=JudgeUsageList,
    summary="Judge calls, cache hits, tokens and cost, per run and model",
)
async def judge_usage(
    principal: Reviewer,
    application: AppDep,
    run: str | None = Query(
        default=None, pattern=PRINTABLE, max_length=200, description="Only this run"
    ),
    rubric: str | None = Query(
        default=None, pattern=PRINTABLE, max_length=200, description="Only this rubric id"
    ),
    since: datetime | None = Query(default=None, description="Inclusive"),
    until: datetime | None = Query(default=None, description="Exclusive"),
    by_model: bool = Query(default=True, description="Per provider and model, or totals"),
) -> JudgeUsageList:
    usage = await application.evaluations.judge_usage(
        run_id=run, rubric_id=rubric, since=since, until=until, by_model=by_model
    )
    return JudgeUsageList(usage=[JudgeUsageOut.of(u) for u in usage])


@router.get(
    "/judge-spend",
    response_model=SpendList,
    summary="Judge spend per run, artifact type or day",
)
async def judge_spend(
    principal: Reviewer,
    application: AppDep,
    by: str = Query(default="type", pattern="^(run|type|day)$", description="run, type or day"),
    since: datetime | None = Query(default=None, description="Inclusive"),
    until: datetime | None = Query(default=None, description="Exclusive"),
) -> SpendList:
    # a token restricted to some types sees only their spend, in every total
    types = principal.types or None
    rows = await application.judge_spend(by, since=since, until=until, types=types)
    return SpendList(by=by, spend=[SpendOut.model_validate(asdict(row)) for row in rows])
