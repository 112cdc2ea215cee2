"""Render a run as one self-contained HTML file.

Everything is inline: the stylesheet, the filter script, the score histogram (SVG drawn
on the server) and the data the script reads (a `<script type="application/json">`
block serialised with Jinja's `tojson`, which escapes `<`, `>`, `&` and `'`, so content
under review can never close the block). Jinja's autoescape is on for every value, and a
Content-Security-Policy allows only this file's own stylesheet and script (by hash): the
page loads nothing from anywhere.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from rubricflow.calibration.estimates import PassRateEstimate, RateInterval
from rubricflow.llm.base import redact
from rubricflow.report.conversation import ImageBudget, conversation_view
from rubricflow.results import CriterionResult, Evaluation
from rubricflow.runs import HISTOGRAM_BINS, RunData, RunSummary, summarize

__all__ = [
    "estimate_view",
    "format_cost",
    "format_rate",
    "render_report",
    "report_data",
    "write_report",
]

# the histogram's drawing box (SVG user units)
CHART_WIDTH, CHART_HEIGHT, CHART_TOP, CHART_BOTTOM = 600, 240, 24, 40


@lru_cache(maxsize=1)
def _environment() -> Environment:
    environment = Environment(
        loader=PackageLoader("rubricflow.report", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    environment.filters["rate"] = format_rate
    environment.filters["cost"] = format_cost
    environment.filters["score"] = _format_score
    environment.filters["count"] = _format_count
    return environment


def format_rate(value: float | None) -> str:
    """A share as a percentage with one decimal (`62.5%`), or `n/a`."""
    return "n/a" if value is None else f"{value * 100:.1f}%"


def format_cost(value: float | None) -> str:
    """A cost in the price's own currency, four decimals (`0.0012`), or `n/a` unpriced."""
    return "n/a" if value is None else f"{value:.4f}"


def _format_score(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _format_count(value: int) -> str:
    return f"{value:,}"


def _outcome(result: CriterionResult) -> str:
    """What the criterion came to: its verdict or level, else its score, else nothing."""
    if result.level is not None:
        return result.level
    if result.verdict is not None:
        return result.verdict
    if result.score is not None:
        return f"{result.score:.2f}"
    return ""


def _state(result: CriterionResult) -> str:
    if not result.scored:
        return "unscored"
    if result.passed is None:
        return "scored"
    return "passed" if result.passed else "failed"


def _target_label(evaluation: Evaluation) -> str:
    return evaluation.target_id or f"(no id) {evaluation.target_hash[:12]}"


def _histogram(summary: RunSummary) -> dict[str, Any]:
    """The ten bins as SVG bars: positions, heights and labels, computed here so the
    template only places them."""
    inner = CHART_HEIGHT - CHART_TOP - CHART_BOTTOM
    slot = CHART_WIDTH / HISTOGRAM_BINS
    peak = max(summary.histogram) or 1
    bars = []
    for index, count in enumerate(summary.histogram):
        height = inner * count / peak
        low, high = index / HISTOGRAM_BINS, (index + 1) / HISTOGRAM_BINS
        bars.append(
            {
                "count": count,
                "x": round(index * slot + 4, 2),
                "width": round(slot - 8, 2),
                "y": round(CHART_TOP + inner - height, 2),
                "height": round(height, 2),
                "centre": round(index * slot + slot / 2, 2),
                "label": f"{low:.1f}\u2013{high:.1f}",
                "title": f"{count} target(s) scored {low:.1f} to {high:.1f}"
                + (" (inclusive)" if index == HISTOGRAM_BINS - 1 else ""),
            }
        )
    return {
        "width": CHART_WIDTH,
        "height": CHART_HEIGHT,
        "axis": CHART_HEIGHT - CHART_BOTTOM,
        "bars": bars,
        "scored": sum(summary.histogram),
    }


def _targets(
    evaluations: list[Evaluation], contents: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    rows = []
    images = ImageBudget()  # one budget for the whole report
    for index, evaluation in enumerate(evaluations):
        content = None
        if contents is not None and evaluation.target_id is not None:
            content = contents.get(evaluation.target_id)
        criteria = [
            {
                "id": r.criterion_id,
                "required": r.required,
                "weight": f"{r.weight:g}",
                "status": r.status,
                "state": _state(r),
                "outcome": _outcome(r),
                "score": None if r.score is None else f"{r.score:.2f}",
                "evidence": list(r.evidence),
                "notes": r.notes,
                "reasoning": r.reasoning,
                "confidence": None if r.confidence is None else f"{r.confidence:.2f}",
                "confidence_source": r.confidence_source,
            }
            for r in evaluation.criteria
        ]
        usage = evaluation.usage()
        rows.append(
            {
                "index": index,
                "id": _target_label(evaluation),
                "verdict": evaluation.verdict,
                "score": f"{evaluation.score:.3f}",
                "scaled_score": f"{evaluation.scaled_score:g}",
                "coverage": format_rate(evaluation.coverage),
                "margin": None if evaluation.margin is None else f"{evaluation.margin:+.3f}",
                "rubric": f"{evaluation.rubric_id}@{evaluation.rubric_version}",
                "gating_failures": list(evaluation.gating_failures),
                "feedback": evaluation.feedback,
                "criteria": criteria,
                "failed": [c["id"] for c in criteria if c["state"] == "failed"],
                "llm_calls": usage["llm_calls"],
                "cost": usage["cost"],
                "conversation": None if content is None else conversation_view(content, images),
            }
        )
    return rows


def _script_data(targets: list[dict[str, Any]], criteria: list[str]) -> dict[str, Any]:
    """What the filter script needs, and nothing more."""
    return {
        "criteria": criteria,
        "targets": [
            {"id": t["id"], "verdict": t["verdict"], "failed": t["failed"]} for t in targets
        ],
    }


def _hash_source(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "sha256-" + base64.b64encode(digest).decode("ascii")


def report_data(run: RunData, contents: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What the report shows of a run, ready to place: `summary`, verdict `counts`, the
    score `histogram` (bars), `criteria` (pass rates) and `targets` (each with its
    criteria, and its conversation turn by turn when `contents` holds its content by
    target id). The dashboard's run page shows the same."""
    summary = summarize(run.evaluations)
    criteria = [
        {
            "id": c.criterion_id,
            "scored": c.scored,
            "passed": c.passed,
            "failed": c.scored - c.passed,
            "unscored": c.unscored,
            "pass_rate": c.pass_rate,
            "bar": round((c.pass_rate or 0.0) * 100, 2),
            "mean_score": c.mean_score,
        }
        for c in summary.criteria
    ]
    return {
        "summary": summary,
        "counts": {
            "pass": summary.passed,
            "fail": summary.failed,
            "incomplete": summary.incomplete,
        },
        "histogram": _histogram(summary),
        "criteria": criteria,
        "targets": _targets(run.evaluations, contents),
    }


def _interval_text(interval: RateInterval) -> str:
    low, high = max(0.0, interval.low), min(1.0, interval.high)
    return f"{interval.confidence:.0%} CI {format_rate(low)} to {format_rate(high)}"


def estimate_view(estimate: PassRateEstimate | None) -> dict[str, Any] | None:
    """The naive and the corrected pass rate as the report and the dashboard show them
    (intervals clipped to 0..100% for display; the JSON keeps them as computed)."""
    if estimate is None:
        return None
    corrected = estimate.corrected
    return {
        "labelled": estimate.labelled,
        "naive": format_rate(estimate.naive.estimate),
        "naive_ci": _interval_text(estimate.naive),
        "corrected": None if corrected is None else format_rate(corrected.estimate),
        "corrected_ci": None if corrected is None else _interval_text(corrected),
    }


def render_report(
    run: RunData,
    *,
    title: str | None = None,
    estimate: PassRateEstimate | None = None,
    contents: Mapping[str, Any] | None = None,
) -> str:
    """The run as one self-contained HTML page (see the module docstring); with the pass
    rate corrected with people's labels when `estimate` is given, and each conversation
    turn by turn when `contents` holds the targets' contents by target id (a results file
    keeps no content)."""
    environment = _environment()
    data = report_data(run, contents)
    summary, targets = data["summary"], data["targets"]
    info = run.info
    rubric = f"{info.rubric_id}@{info.rubric_version}" if info.rubric_version else info.rubric_id
    style = environment.get_template("report.css.j2").render()
    script = environment.get_template("report.js.j2").render()
    policy = (
        "default-src 'none'; base-uri 'none'; form-action 'none'; img-src data:; "
        f"style-src '{_hash_source(style)}'; script-src '{_hash_source(script)}'"
    )
    return environment.get_template("report.html.j2").render(
        title=title or f"rubricflow report: {info.id}",
        info=info,
        rubric=rubric,
        # a results file written before options were redacted may hold a judge URL's
        # credentials: the header shows which judge, never its secret
        options=sorted((str(k), redact(str(v))) for k, v in info.options.items()),
        summary=summary,
        estimate=estimate_view(estimate),
        counts=data["counts"],
        histogram=data["histogram"],
        criteria=data["criteria"],
        targets=targets,
        data=_script_data(targets, [c.criterion_id for c in summary.criteria]),
        style=Markup(style),
        script=Markup(script),
        policy=policy,
    )


def write_report(
    run: RunData,
    path: str | Path,
    *,
    title: str | None = None,
    estimate: PassRateEstimate | None = None,
    contents: Mapping[str, Any] | None = None,
) -> Path:
    """Write the run's report to `path` (parent folders are created); returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    page = render_report(run, title=title, estimate=estimate, contents=contents)
    target.write_text(page, encoding="utf-8")
    return target
