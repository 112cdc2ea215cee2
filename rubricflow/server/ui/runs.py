"""The run pages: the run list (keyset pages in SQL, figures summed in SQL); one run's
page, with what the HTML report shows (the report's own data preparation:
`rubricflow.report.html.report_data`), live while the run is going (htmx polls the
page's live region until the run ends), its filter script served as a static file
(`static/run.js`; the page filters on the server without it); and two runs compared
(`Application.compare_runs`), each verdict flip linked to the target in both runs.

Every run page is a reviewer's, as the API's /v1/runs: a submitter gets 403.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request, Response
from markupsafe import Markup

from rubricflow.application import Application, RunCursor
from rubricflow.compare import RunComparison
from rubricflow.report.html import estimate_view, report_data
from rubricflow.runs import RunData
from rubricflow.server.ui.access import ReviewerViewer
from rubricflow.server.ui.security import UiRoute
from rubricflow.server.ui.svg import Bar, Column, bar_chart, column_chart
from rubricflow.server.ui.templating import render

__all__ = ["POLL_SECONDS", "router"]

PAGE_SIZE = 50
#: targets shown on one page of a run
TARGETS_PER_PAGE = 100
#: how often a running run's page refreshes its figures
POLL_SECONDS = 2
VERDICTS = ("pass", "fail", "incomplete")
#: the days of judge spend the runs page shows (by artifact type and by day, UTC)
SPEND_DAYS = 14

router = APIRouter(route_class=UiRoute)

_RunId = Annotated[str, Path(min_length=1, max_length=200)]
_Text = Annotated[str, Query(max_length=200)]


@router.get("/runs", summary="The runs")
async def runs_page(
    request: Request, viewer: ReviewerViewer, after: Annotated[str, Query(max_length=500)] = ""
) -> Response:
    application: Application = request.app.state.application
    cursor = RunCursor.decode(after) if after else None
    page = await application.dashboard.run_page(limit=PAGE_SIZE, after=cursor)
    since = datetime.now(timezone.utc) - timedelta(days=SPEND_DAYS - 1)
    since = since.replace(hour=0, minute=0, second=0, microsecond=0)
    # a token restricted to some types sees only their spend, in every total
    types = viewer.principal.types or None
    return render(
        request,
        "runs.html",
        {
            "spend_by_type": await application.judge_spend("type", since=since, types=types),
            "spend_by_day": await application.judge_spend("day", since=since, types=types),
            "spend_days": SPEND_DAYS,
            "overviews": page.items,
            "next_after": page.next.encode() if page.next else None,
            "first": cursor is not None,
            "active": "runs",
        },
    )


def _plots(data: dict[str, Any], run_id: str) -> dict[str, Markup]:
    histogram = data["histogram"]
    columns = [Column(b["label"], b["count"], b["title"]) for b in histogram["bars"]]
    criteria = [
        Bar(
            c["id"],
            c["pass_rate"],
            note=f"{c['passed']} of {c['scored']} passed"
            + (f", {c['unscored']} unscored" if c["unscored"] else ""),
        )
        for c in data["criteria"]
    ]
    return {
        "histogram": column_chart(
            columns,
            title="Scores",
            desc=(
                f"How many of run {run_id}'s {histogram['scored']} scored targets fell in each "
                "tenth of the 0 to 1 score range."
            ),
            ident="score-histogram",
        ),
        "criteria": bar_chart(
            criteria,
            title="Pass rate per criterion",
            desc=f"How often each criterion passed in run {run_id}, over its scored targets.",
            ident="run-criteria",
        ),
    }


async def _run_view(application: Application, run: RunData) -> dict[str, Any]:
    data = report_data(run)
    estimate = await application.run_pass_rate_estimate(run)
    return {
        "info": run.info,
        "estimate": estimate_view(estimate),
        "running": run.info.status == "running",
        "poll_seconds": POLL_SECONDS,
        **data,
        "plots": _plots(data, run.info.id),
    }


@router.get("/runs/compare", summary="Two runs compared")
async def compare_page(
    request: Request, viewer: ReviewerViewer, a: _Text = "", b: _Text = ""
) -> Response:
    application: Application = request.app.state.application
    comparison: RunComparison | None = None
    if a and b:
        comparison = await application.compare_runs(a, b)
    recent = await application.dashboard.run_page(limit=PAGE_SIZE)
    plot = None
    if comparison is not None and comparison.criteria:
        plot = bar_chart(
            [
                Bar(
                    c.criterion_id,
                    c.pass_rate_delta,
                    note=(
                        f"{_rate(c.pass_rate_a)} in A, {_rate(c.pass_rate_b)} in B"
                        if c.pass_rate_delta is not None
                        else "not scored in both runs"
                    ),
                    tone=""
                    if c.pass_rate_delta is None or c.pass_rate_delta == 0
                    else ("good" if c.pass_rate_delta > 0 else "bad"),
                )
                for c in comparison.criteria
            ],
            title="Pass rate change per criterion (B minus A)",
            desc=(
                f"How each criterion's pass rate moved from run {comparison.a.id} to run "
                f"{comparison.b.id} over the {len(comparison.shared)} targets both evaluated; "
                "gains in green, losses in red."
            ),
            ident="criterion-deltas",
            domain=(-1.0, 1.0),
            value_format=_points,
        )
    return render(
        request,
        "run_compare.html",
        {
            "a": a,
            "b": b,
            "comparison": comparison,
            "plot": plot,
            "runs": [o.info for o in recent.items],
            "active": "runs",
        },
    )


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


def _points(value: float) -> str:
    return f"{value * 100:+.0f} pts" if value else "0"


@router.get("/runs/{run_id}", summary="A run")
async def run_page(
    request: Request,
    viewer: ReviewerViewer,
    run_id: _RunId,
    verdict: Annotated[str, Query(max_length=20)] = "",
    criterion: _Text = "",
    target: _Text = "",
    page: Annotated[int, Query(ge=1, le=100_000)] = 1,
) -> Response:
    application: Application = request.app.state.application
    run = await application.run(run_id)
    view = await _run_view(application, run)
    verdict = verdict if verdict in VERDICTS else ""
    criteria_ids = [c["id"] for c in view["criteria"]]
    criterion = criterion if criterion in criteria_ids else ""
    chosen = [
        t
        for t in view["targets"]
        if (not verdict or t["verdict"] == verdict)
        and (not criterion or criterion in t["failed"])
        and (not target or t["id"] == target)
    ]
    start = (page - 1) * TARGETS_PER_PAGE
    return render(
        request,
        "run.html",
        {
            **view,
            "verdict": verdict,
            "criterion": criterion,
            "target": target,
            "criteria_ids": criteria_ids,
            "shown": chosen[start : start + TARGETS_PER_PAGE],
            "matching": len(chosen),
            "page": page,
            "pages": max(1, -(-len(chosen) // TARGETS_PER_PAGE)),
            "active": "runs",
        },
    )


@router.get("/runs/{run_id}/live", summary="A run's figures (htmx, while it runs)")
async def run_live(request: Request, viewer: ReviewerViewer, run_id: _RunId) -> Response:
    application: Application = request.app.state.application
    view = await _run_view(application, await application.run(run_id))
    return render(request, "run_live.html", view)
