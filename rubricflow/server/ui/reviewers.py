"""Several reviewers: one screen per artifact type that several people decide
(`ReviewPolicy.reviewers`, or leads). It shows how far the reviewers agree (Cohen's kappa
for two, Krippendorff's alpha for more, overall and per criterion, with bootstrap 95%
intervals: `Application.reviewer_agreement`), how reliable the judge is on each of the
type's criteria against people's labels (kappa and accuracy with their intervals, the
judge agreement page's figures for this type), and every round where the reviewers
disagreed, with its resolution, or, while it is open, a form to resolve it.

Blind review holds here too: an open split's votes say who voted, not what, unless the
viewer voted in it or leads the type. Resolving is deciding: approve or reject is the
viewer's own vote (a further reviewer breaks a tie; a lead's settles it) and override
approves over the votes, each with a reason, through the same core calls as the
artifact page. A reviewer's page: a submitter gets 403; only the token's types.
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import RedirectResponse
from markupsafe import Markup

from rubricflow.application import Application
from rubricflow.calibration.human_agreement import HumanAgreement
from rubricflow.errors import (
    IllegalTransitionError,
    NotFoundError,
    PreconditionFailedError,
    ReviewError,
)
from rubricflow.server.ui.access import ReviewerViewer, posted_form, require_decider
from rubricflow.server.ui.agreement import Agreement, agreement_of
from rubricflow.server.ui.security import UiRoute
from rubricflow.server.ui.svg import Bar, bar_chart
from rubricflow.server.ui.templating import render

__all__ = ["router"]

RESAMPLES = 500
PAGE_SIZE = 50
#: the decisions that resolve an open split, and their buttons
RESOLUTIONS = {"approve": "Approve", "reject": "Reject", "override": "Override and approve"}
_DONE = {
    "approve": "Your approval is recorded.",
    "reject": "Your rejection is recorded.",
    "override": "Approved by override.",
}

router = APIRouter(route_class=UiRoute)


def _chart(rows: list[tuple[str, float | None, Any, str]], ident: str, title: str) -> Markup:
    bars = []
    for name, value, interval, note in rows:
        tone = "" if value is None else ("good" if value >= 0.6 else "bad")
        low = interval.low if interval is not None else None
        high = interval.high if interval is not None else None
        bars.append(Bar(name, value, low, high, note, tone))
    return bar_chart(
        bars,
        title=title,
        desc=(
            f"{title}, with 95% bootstrap intervals as whiskers; 1 is perfect agreement, 0 "
            "is what chance gives. Bars at 0.6 or more are green, below it red."
        ),
        ident=ident,
        domain=(-1.0, 1.0),
        value_format=lambda v: f"{v:.2f}",
    )


def _human_rows(criteria: dict[str, HumanAgreement]) -> list[tuple[str, float | None, Any, str]]:
    return [
        (name, a.value, a.interval, f"{a.agreeing} of {a.units} unanimous")
        for name, a in criteria.items()
    ]


def _judge_rows(rows: list[Agreement]) -> list[tuple[str, float | None, Any, str]]:
    return [
        (row.name, row.kappa.value, row.kappa.interval, f"{row.agreed} of {row.n} agree")
        for row in rows
    ]


async def _judge_reliability(application: Application, type_name: str) -> list[Agreement]:
    """The judge against people on each criterion of the type's rubrics (`RUBRIC:CRITERION`),
    counting decisions on this type's artifacts only."""
    artifact_type = await application.artifacts.get_type(type_name)
    labels = application.judge_labels
    rows: list[Agreement] = []
    for binding in artifact_type.rubrics:
        cells: dict[str, dict[tuple[str, str], int]] = {}
        for count in await labels.criterion_counts(binding.rubric_id, types=(type_name,)):
            key = (
                "pass" if count.human_passed else "fail",
                "pass" if count.judge_passed else "fail",
            )
            per = cells.setdefault(f"{binding.rubric_id}:{count.criterion_id}", {})
            per[key] = per.get(key, 0) + count.count
        rows += [agreement_of(name, found) for name, found in sorted(cells.items())]
    return rows


async def _types(application: Application, viewer: ReviewerViewer) -> list[Any]:
    """The types the viewer may see, those several people decide first."""
    principal = viewer.principal
    types = [t for t in await application.artifacts.list_types() if principal.allows_type(t.name)]
    return sorted(
        types,
        key=lambda t: (not (t.review_policy.reviewers > 1 or t.review_policy.leads), t.name),
    )


async def _page(
    request: Request,
    viewer: ReviewerViewer,
    chosen_name: str,
    *,
    done: str = "",
    problem: str = "",
    kept: dict[str, str] | None = None,
    status_code: int = 200,
) -> Response:
    application: Application = request.app.state.application
    principal = viewer.principal
    types = await _types(application, viewer)
    chosen = next((t for t in types if t.name == chosen_name), types[0] if types else None)
    context: dict[str, Any] = {
        "types": types,
        "chosen": chosen,
        "agreement": None,
        "human_chart": None,
        "judge_rows": [],
        "judge_chart": None,
        "disagreements": [],
        "resolutions": RESOLUTIONS,
        "done": done,
        "problem": problem,
        "kept": kept or {},
        "resamples": RESAMPLES,
        "decider": False,
        "active": "reviewers",
    }
    if chosen is not None:
        found = await application.reviewer_agreement(chosen.name, resamples=RESAMPLES)
        judge_rows = await _judge_reliability(application, chosen.name)
        leads = chosen.review_policy.leads
        rounds = await application.reviewer_disagreements(type_names=[chosen.name], limit=PAGE_SIZE)
        context.update(
            agreement=found,
            human_chart=_chart(
                _human_rows(found.criteria),
                "reviewer-agreement",
                "Agreement between reviewers, per criterion",
            )
            if found.criteria
            else None,
            judge_rows=judge_rows,
            judge_chart=_chart(
                _judge_rows(judge_rows),
                "judge-reliability",
                "Cohen's kappa, people against the judge, per criterion",
            )
            if judge_rows
            else None,
            disagreements=[d.seen_by(principal.name, leads) for d in rounds],
            decider=principal.allows_role("reviewer"),
        )
    return render(request, "reviewers.html", context, status_code=status_code)


@router.get("/reviewers", summary="Several reviewers: agreement and disagreements")
async def reviewers_page(
    request: Request,
    viewer: ReviewerViewer,
    type: Annotated[str, Query(max_length=200)] = "",
    done: Annotated[str, Query(max_length=20)] = "",
) -> Response:
    return await _page(request, viewer, type, done=_DONE.get(done, ""))


@router.post("/reviewers/resolve", summary="Resolve a split between reviewers")
async def resolve(request: Request, viewer: ReviewerViewer) -> Response:
    """Decide an open split: approve or reject as the viewer's own vote, or override."""
    form = await posted_form(request, viewer)
    application: Application = request.app.state.application
    principal = viewer.principal
    type_name = form.get("type", "")[:200]
    action = form.get("action", "")
    reason = form.get("reason", "").strip()
    version_text = form.get("version", "")
    version = int(version_text) if version_text.isdigit() else None
    kept = {"artifact": form.get("artifact", "")[:200], "reason": reason}
    try:
        artifact = await application.artifacts.get(kept["artifact"])
        if not principal.allows_type(artifact.type):
            raise NotFoundError(f"no artifact {kept['artifact']!r}")
        require_decider(principal, artifact)
        if action not in RESOLUTIONS:
            raise ReviewError(
                f"unknown resolution {action[:40]!r}; use approve, reject or override"
            )
        if not reason:
            raise ReviewError(f"{RESOLUTIONS[action]} needs a reason: write one and decide again")
        decide = getattr(application.artifacts, action)
        await decide(artifact.id, actor=principal.name, reason=reason, expected_version=version)
    except PreconditionFailedError:
        problem = (
            "Someone decided this artifact while you were reading, so nothing was recorded. "
            "Your reason is kept below: read the split again and decide on it as it is now."
        )
        return await _page(request, viewer, type_name, problem=problem, kept=kept, status_code=412)
    except (ReviewError, IllegalTransitionError, NotFoundError) as error:
        status = 404 if isinstance(error, NotFoundError) else 409
        return await _page(
            request, viewer, type_name, problem=str(error), kept=kept, status_code=status
        )
    query = urlencode({"type": type_name, "done": action})
    return RedirectResponse(f"/ui/reviewers?{query}", status_code=303)
