"""The rubric pages: the catalogue with every rubric's versions (keyset pages in SQL); a
rubric's page with its criteria, weights, levels, the meta-rubric's lint, and how its
criteria did over time (pass rates per day, per version, from the stored criterion
rows, drawn as SVG on the server); and a side-by-side diff of two versions.

Pass rates follow the API's rules: a reviewer's (a submitter's page has none), counting
only reviews of the reviewer's token's types (and evaluations of no artifact: runs').
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request, Response
from markupsafe import Markup

from rubricflow.application import Application, CriterionPassRate
from rubricflow.errors import NotFoundError
from rubricflow.model import Criterion, Rubric
from rubricflow.server.ui.access import Viewer, seen_types
from rubricflow.server.ui.security import UiRoute
from rubricflow.server.ui.svg import Bar, Point, Series, bar_chart, line_chart
from rubricflow.server.ui.templating import render

__all__ = ["DAY_WINDOWS", "pass_rate_plots", "router", "side_by_side"]

PAGE_SIZE = 50
#: how far back the pass-rate plots look, by the page's `days` choice
DAY_WINDOWS = {"30": 30, "90": 90, "365": 365, "all": None}

router = APIRouter(route_class=UiRoute)

_RubricId = Annotated[str, Path(min_length=1, max_length=200)]
_Version = Annotated[str, Query(max_length=100)]


@router.get("/rubrics", summary="The rubric catalogue")
async def catalogue_page(
    request: Request,
    viewer: Viewer,
    q: Annotated[str, Query(max_length=200)] = "",
    after: Annotated[str, Query(max_length=200)] = "",
) -> Response:
    application: Application = request.app.state.application
    reads = application.dashboard
    page = await reads.rubric_catalogue(limit=PAGE_SIZE, after=after or None, search=q.strip())
    return render(
        request,
        "rubrics.html",
        {
            "entries": page.items,
            "q": q,
            "next_after": page.next,
            "first": bool(after),
            "active": "rubrics",
        },
    )


@dataclass(frozen=True)
class CriterionView:
    criterion: Criterion
    share: float  # of the total weight
    method: str


def _criteria(rubric: Rubric) -> list[CriterionView]:
    total = sum(c.weight for c in rubric.criteria) or 1.0
    return [CriterionView(c, c.weight / total, c.scoring.method) for c in rubric.criteria]


def pass_rate_plots(
    rates: list[CriterionPassRate], versions: list[str], rubric_id: str, order: list[str]
) -> list[dict[str, Any]]:
    """One line chart per rubric version with data (newest version first): a line per
    criterion (in `order`, then by id: a criterion keeps its colour from chart to chart)
    through its pass rate on each day it was scored, with what each point counts, and the
    table the chart shows."""
    plots = []
    for index, version in enumerate(reversed(versions)):
        mine = [r for r in rates if r.rubric_version == version and r.bucket and r.scored]
        if not mine:
            continue
        by_criterion: dict[str, list[CriterionPassRate]] = {}
        for rate in sorted(mine, key=lambda r: r.bucket or ""):
            by_criterion.setdefault(rate.criterion_id, []).append(rate)
        known = [c for c in order if c in by_criterion]
        ranked = known + sorted(c for c in by_criterion if c not in known)
        series = [
            Series(
                criterion,
                tuple(
                    Point(
                        date.fromisoformat(r.bucket or ""),
                        r.pass_rate or 0.0,
                        f"{r.passed} of {r.scored} passed"
                        + (f", {r.unscored} unscored" if r.unscored else ""),
                    )
                    for r in points
                ),
            )
            for criterion, points in ((c, by_criterion[c]) for c in ranked)
        ]
        days = sorted({r.bucket or "" for r in mine})
        worst = min(
            by_criterion.items(),
            key=lambda item: sum(r.passed for r in item[1]) / sum(r.scored for r in item[1]),
        )
        desc = (
            f"Daily pass rate of each of the {len(series)} criteria of {rubric_id} version "
            f"{version}, from {days[0]} to {days[-1]} ({len(days)} day"
            f"{'' if len(days) == 1 else 's'} with evaluations). Lowest overall: "
            f"{worst[0]}."
        )
        ident = f"pass-rates-{index}"
        plots.append(
            {
                "version": version,
                "ident": ident,
                "svg": line_chart(
                    series,
                    title=f"Criterion pass rates per day, version {version}",
                    desc=desc,
                    ident=ident,
                ),
                "days": days,
                "table": {c: {r.bucket: r for r in points} for c, points in by_criterion.items()},
            }
        )
    return plots


def _overall_bars(rates: list[CriterionPassRate], version: str, rubric: Rubric) -> Markup | None:
    """Each criterion's pass rate over the window, for the version shown."""
    totals: dict[str, list[int]] = {}
    for rate in rates:
        if rate.rubric_version == version:
            entry = totals.setdefault(rate.criterion_id, [0, 0, 0])
            entry[0] += rate.passed
            entry[1] += rate.scored
            entry[2] += rate.unscored
    if not totals:
        return None
    order = [c.id for c in rubric.criteria if c.id in totals] + [
        c for c in totals if c not in {x.id for x in rubric.criteria}
    ]
    bars = []
    for criterion in order:
        passed, scored, unscored = totals[criterion]
        value = passed / scored if scored else None
        note = f"{passed} of {scored} passed" + (f", {unscored} unscored" if unscored else "")
        tone = "" if value is None or value >= rubric.pass_threshold else "bad"
        bars.append(Bar(criterion, value, note=note, tone=tone))
    return bar_chart(
        bars,
        title=f"Pass rate per criterion, version {version}",
        desc=(
            f"How often each criterion of {rubric.id} version {version} passed over the "
            f"chosen window; bars under the rubric's pass threshold "
            f"({rubric.pass_threshold:.0%}) are drawn in red."
        ),
        ident="criterion-pass-rates",
    )


@router.get("/rubrics/{rubric_id}", summary="A rubric")
async def rubric_page(
    request: Request,
    viewer: Viewer,
    rubric_id: _RubricId,
    version: _Version = "",
    days: Annotated[str, Query(max_length=10)] = "90",
) -> Response:
    application: Application = request.app.state.application
    history = await application.rubrics.history(rubric_id)
    versions = [info.version for info in history]
    if version and version not in versions:
        raise NotFoundError(
            f"rubric {rubric_id!r} has no version {version}; stored versions: {', '.join(versions)}"
        )
    chosen = version or versions[-1]
    rubric = await application.rubrics.get(rubric_id, chosen)
    lint = await application.lint_rubric_text(
        json.dumps(rubric.to_dict()), source=f"{rubric_id}@{chosen}", suffix=".json"
    )
    window = DAY_WINDOWS.get(days, 90)
    since = datetime.now(timezone.utc) - timedelta(days=window) if window else None
    principal = viewer.principal
    # pass rates are a reviewer's, of its types (the API's /v1/rubrics/ID/pass-rates)
    rates_shown = principal.allows_role("reviewer")
    rates = (
        await application.evaluations.criterion_pass_rates(
            rubric_id, since=since, bucket="day", artifact_types=seen_types(principal)
        )
        if rates_shown
        else []
    )
    meta = lint.rubrics[0].meta if lint.rubrics else None
    latest = (
        rubric if chosen == versions[-1] else await application.rubrics.get(rubric_id, versions[-1])
    )
    order = list(dict.fromkeys([c.id for c in latest.criteria] + [c.id for c in rubric.criteria]))
    return render(
        request,
        "rubric.html",
        {
            "rubric": rubric,
            "history": list(reversed(history)),
            "version": chosen,
            "latest": versions[-1],
            "criteria": _criteria(rubric),
            "lint": lint,
            "meta": meta,
            "plots": pass_rate_plots(rates, versions, rubric_id, order),
            "overall": _overall_bars(rates, chosen, rubric),
            "rates_shown": rates_shown,
            "days": days if days in DAY_WINDOWS else "90",
            "windows": DAY_WINDOWS,
            "active": "rubrics",
        },
    )


@dataclass(frozen=True)
class SideBySide:
    """One row of a side-by-side diff: the line on each side (None: no line there)."""

    kind: str  # "same", "changed", "added", "removed"
    left_number: int | None
    left: str | None
    right_number: int | None
    right: str | None


def side_by_side(before: list[str], after: list[str], *, context: int = 3) -> list[SideBySide]:
    """Two texts' lines side by side, changed lines paired, unchanged runs cut to
    `context` lines around each change (a cut is a row of kind "skip")."""
    rows: list[SideBySide] = []
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for group in matcher.get_grouped_opcodes(context):
        if rows:
            rows.append(SideBySide("skip", None, "…", None, "…"))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                for k in range(i2 - i1):
                    rows.append(
                        SideBySide("same", i1 + k + 1, before[i1 + k], j1 + k + 1, after[j1 + k])
                    )
                continue
            left, right = before[i1:i2], after[j1:j2]
            for k in range(max(len(left), len(right))):
                has_left, has_right = k < len(left), k < len(right)
                kind = "changed" if has_left and has_right else ("removed" if has_left else "added")
                rows.append(
                    SideBySide(
                        kind,
                        i1 + k + 1 if has_left else None,
                        left[k] if has_left else None,
                        j1 + k + 1 if has_right else None,
                        right[k] if has_right else None,
                    )
                )
    return rows


def _document_lines(rubric: Rubric) -> list[str]:
    return json.dumps(rubric.to_dict(), indent=2, ensure_ascii=False).splitlines()


@router.get("/rubrics/{rubric_id}/diff", summary="Two versions of a rubric, side by side")
async def diff_page(
    request: Request,
    viewer: Viewer,
    rubric_id: _RubricId,
    before: _Version = "",
    after: _Version = "",
) -> Response:
    application: Application = request.app.state.application
    history = await application.rubrics.history(rubric_id)
    versions = [info.version for info in history]
    diff = await application.diff_rubric(rubric_id, before or None, after or None)
    old = await application.rubrics.get(rubric_id, diff.before_version)
    new = await application.rubrics.get(rubric_id, diff.after_version)
    return render(
        request,
        "rubric_diff.html",
        {
            "rubric_id": rubric_id,
            "versions": list(reversed(versions)),
            "diff": diff,
            "rows": side_by_side(_document_lines(old), _document_lines(new)),
            "active": "rubrics",
        },
    )
