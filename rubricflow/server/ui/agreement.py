"""Judge agreement: how often people's decisions agree with the judge, per rubric and
per criterion, with accuracy and Cohen's kappa and their bootstrap confidence intervals
(the calibration code's statistics), and the decisions that disagree.

Every approve, override and reject of a reviewed artifact is a label (store/labels.py
reads them from the audit trail and the evaluations): approvals count as much as
rejects. An override or a reject may also tick the criteria the judge got wrong on the
artifact page; those flip the judge's pass or fail into the person's label for that
criterion. `judged_wrong` reads the ticks from a posted decision, `record_corrections`
stores them against the decision's audit event.

The page is a reviewer's (a submitter gets 403, as from the API's pass rates), and counts
and lists only decisions on artifacts of the reviewer's token's types.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Request, Response
from markupsafe import Markup

from rubricflow.application import Application
from rubricflow.calibration.report import Estimate
from rubricflow.calibration.stats import (
    UndefinedStatisticError,
    accuracy,
    bootstrap_intervals,
    confusion_matrix,
    kappa_from_matrix,
)
from rubricflow.server.params import RowIdQuery
from rubricflow.server.ui.access import ReviewerViewer, seen_types
from rubricflow.server.ui.security import UiRoute
from rubricflow.server.ui.svg import Bar, bar_chart
from rubricflow.server.ui.templating import render

__all__ = ["Agreement", "agreement_of", "judged_wrong", "record_corrections", "router"]

LABELS = ("pass", "fail")
RESAMPLES = 500
CONFIDENCE = 0.95
PAGE_SIZE = 50

router = APIRouter(route_class=UiRoute)


@dataclass(frozen=True)
class Agreement:
    """People against the judge on one thing (a rubric's verdict or one criterion)."""

    name: str
    n: int
    agreed: int
    #: (person, judge) label pairs and how many: pass/pass, pass/fail, fail/pass, fail/fail
    cells: dict[tuple[str, str], int]
    accuracy: Estimate
    kappa: Estimate


def _value(compute: Any, *args: Any) -> tuple[float | None, str | None]:
    try:
        return compute(*args), None
    except UndefinedStatisticError as error:
        return None, str(error)


def agreement_of(name: str, cells: dict[tuple[str, str], int]) -> Agreement:
    """Accuracy and Cohen's kappa of `cells` ((person, judge) -> count), each with a 95%
    percentile bootstrap interval over the labelled items (seeded: the same labels give
    the same interval)."""
    pairs = [pair for pair, count in sorted(cells.items()) for _ in range(count)]
    human = [h for h, _ in pairs]
    judge = [j for _, j in pairs]
    matrix = confusion_matrix(human, judge, LABELS)
    acc, acc_reason = _value(accuracy, matrix)
    kappa, kappa_reason = _value(kappa_from_matrix, matrix)

    def statistics(picked: Sequence[int]) -> dict[str, float | None]:
        m = confusion_matrix([human[i] for i in picked], [judge[i] for i in picked], LABELS)
        return {"accuracy": _value(accuracy, m)[0], "kappa": _value(kappa_from_matrix, m)[0]}

    intervals = bootstrap_intervals(
        len(pairs), statistics, resamples=RESAMPLES, confidence=CONFIDENCE, seed=0
    )
    return Agreement(
        name=name,
        n=matrix.n,
        agreed=matrix.agreements,
        cells=dict(cells),
        accuracy=Estimate(acc, intervals.get("accuracy") if acc is not None else None, acc_reason),
        kappa=Estimate(kappa, intervals.get("kappa") if kappa is not None else None, kappa_reason),
    )


def _label(passed: bool) -> str:
    return "pass" if passed else "fail"


def _kappa_chart(rows: list[Agreement], ident: str, what: str) -> Markup:
    bars = []
    for row in rows:
        k = row.kappa
        interval = k.interval
        note = f"{row.agreed} of {row.n} agree"
        if k.value is None:
            note += f"; {k.reason}"
        tone = "" if k.value is None else ("good" if k.value >= 0.6 else "bad")
        bars.append(
            Bar(
                row.name,
                k.value,
                interval.low if interval else None,
                interval.high if interval else None,
                note,
                tone,
            )
        )
    return bar_chart(
        bars,
        title=f"Cohen's kappa, people against the judge, per {what}",
        desc=(
            f"Chance-corrected agreement between people's decisions and the judge for each "
            f"{what}, with 95% bootstrap intervals as whiskers; 1 is perfect agreement, 0 is "
            "what chance gives. Bars at 0.6 or more are green, below it red."
        ),
        ident=ident,
        domain=(-1.0, 1.0),
        value_format=lambda v: f"{v:.2f}",
    )


@router.get("/agreement", summary="Judge agreement")
async def agreement_page(
    request: Request,
    viewer: ReviewerViewer,
    rubric: Annotated[str, Query(max_length=200)] = "",
    before: RowIdQuery = None,
) -> Response:
    application: Application = request.app.state.application
    labels = application.judge_labels
    types = seen_types(viewer.principal)  # a reviewer's page: only its types' decisions
    verdicts = await labels.verdict_counts(types=types)
    rubrics = sorted({v.rubric_id for v in verdicts})
    chosen = rubric if rubric in rubrics else ""
    per_rubric: dict[str, dict[tuple[str, str], int]] = {}
    for v in verdicts:
        cells = per_rubric.setdefault(v.rubric_id, {})
        cells[(v.human, v.judge)] = cells.get((v.human, v.judge), 0) + v.count
    rubric_rows = [agreement_of(name, cells) for name, cells in sorted(per_rubric.items())]
    criterion_rows: list[Agreement] = []
    if chosen:
        per_criterion: dict[str, dict[tuple[str, str], int]] = {}
        for c in await labels.criterion_counts(chosen, types=types):
            cells = per_criterion.setdefault(c.criterion_id, {})
            key = (_label(c.human_passed), _label(c.judge_passed))
            cells[key] = cells.get(key, 0) + c.count
        criterion_rows = [agreement_of(name, cells) for name, cells in per_criterion.items()]
    page = await labels.disagreements(
        rubric_id=chosen or None, limit=PAGE_SIZE, before=before, types=types
    )
    return render(
        request,
        "agreement.html",
        {
            "rubrics": rubrics,
            "chosen": chosen,
            "rubric_rows": rubric_rows,
            "criterion_rows": criterion_rows,
            "rubric_chart": _kappa_chart(rubric_rows, "kappa-rubrics", "rubric")
            if rubric_rows
            else None,
            "criterion_chart": _kappa_chart(criterion_rows, "kappa-criteria", "criterion")
            if criterion_rows
            else None,
            "disagreements": page.items,
            "next_before": page.next,
            "first": before is not None,
            "labels": LABELS,
            "resamples": RESAMPLES,
            "active": "agreement",
        },
    )


async def judged_wrong(
    application: Application, artifact_id: str, revision: int, form: dict[str, str]
) -> list[tuple[str, str]]:
    """The `(evaluation_id, criterion_id)` pairs a decision form ticked as judged wrong,
    each checked against the revision's stored evaluations (422 for another)."""
    ticked = [line for line in form.get("wrong", "").split("\n") if line]
    if not ticked:
        return []
    evaluations = await application.artifacts.evaluations(artifact_id, revision)
    known = {
        f"{e.id}:{r.criterion_id}": (e.id, r.criterion_id)
        for e in evaluations
        for r in e.criteria
        if r.passed is not None
    }
    unknown = [t for t in ticked if t not in known]
    if unknown:
        raise HTTPException(
            422,
            f"{unknown[0][:120]!r} is not a scored criterion of revision {revision}'s "
            "evaluations; reload the page and tick again",
        )
    return [known[t] for t in ticked]


async def record_corrections(
    application: Application,
    artifact_id: str,
    decision: str,
    actor: str,
    marks: list[tuple[str, str]],
) -> None:
    """Store `marks` against the decision `actor` just made (its audit event)."""
    history = await application.artifacts.history(artifact_id)
    made = (decision, "vote")  # one of several reviewers' decisions is a vote
    event = next((e for e in reversed(history) if e.trigger in made and e.actor == actor), None)
    if event is not None:
        await application.judge_labels.correct(artifact_id, event.seq, marks, actor=actor)
