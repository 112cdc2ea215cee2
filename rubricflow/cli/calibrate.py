"""`rubricflow calibrate RUBRIC LABELS --llm SPEC`: does the judge agree with humans?

Judges human-labelled examples with the rubric (the way `rubricflow eval` does) and
prints accuracy, Cohen's kappa, weighted kappa, confusion matrices and bootstrap
intervals per criterion and overall. Exit 0 when done (and every criterion's kappa is
at least --min-kappa, if given), 1 when a criterion's kappa is below --min-kappa, 2 on
usage or input errors.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from rubricflow.cli.eval import sized_windows
from rubricflow.cli.shared import (
    EXIT_FAILED,
    EXIT_OK,
    AllowImportOption,
    ConcurrencyOption,
    FormatOption,
    JudgeConcurrencyOption,
    LLMOption,
    NoCacheOption,
    RubricIdOption,
    SamplesOption,
    fail,
    judge_session,
    out,
    pick_rubric,
    plugin_manager,
    refuse_unregistered_imports,
    table,
    usage_text,
    user_errors,
)

if TYPE_CHECKING:
    from rubricflow.calibration import CalibrationReport, CriterionAgreement, Estimate

__all__ = ["calibrate_command"]


def calibrate_command(
    rubric_path: Annotated[
        Path, typer.Argument(metavar="RUBRIC", help="Rubric file (any format).")
    ],
    labels: Annotated[
        Path,
        typer.Argument(
            metavar="LABELS",
            help='JSONL file: one target per line plus "labels": {criterion-id: label}.',
        ),
    ],
    llm: LLMOption = None,
    no_cache: NoCacheOption = False,
    samples: SamplesOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print every figure as JSON.")] = False,
    resamples: Annotated[
        int,
        typer.Option("--resamples", min=0, help="Bootstrap resamples for the intervals (0: none)."),
    ] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the bootstrap resampling.")] = 0,
    confidence: Annotated[
        float, typer.Option("--confidence", help="Confidence level of the intervals (0..1).")
    ] = 0.95,
    min_kappa: Annotated[
        float | None,
        typer.Option(
            "--min-kappa",
            min=-1.0,
            max=1.0,
            help="Exit 1 when any criterion's Cohen's kappa is below this (a CI gate).",
        ),
    ] = None,
    concurrency: ConcurrencyOption = None,
    judge_concurrency: JudgeConcurrencyOption = None,
    targets_in_flight: Annotated[
        int | None,
        typer.Option(
            "--targets-in-flight",
            min=1,
            help="Examples evaluated at once (default: enough to keep --judge-concurrency "
            "requests busy, at least 8).",
        ),
    ] = None,
    allow_import: AllowImportOption = False,
    format: FormatOption = None,
    rubric_id: RubricIdOption = None,
) -> None:
    """Measure how well the judge agrees with human labels, per criterion and overall.

    Exit 0 when done, 1 when --min-kappa is given and a criterion's kappa is below it,
    2 on usage or input errors.
    """
    import asyncio

    from rubricflow.calibration import calibrate, read_labels

    if not 0.0 < confidence < 1.0:
        fail(f"--confidence must be between 0 and 1 (exclusive), got {confidence:g}")
    plugins = plugin_manager()
    rubric, _source_format = pick_rubric(rubric_path, format, rubric_id, plugins)
    refuse_unregistered_imports(rubric, plugins, allow_import)
    with user_errors():
        examples = read_labels(labels, rubric)
    judge = judge_session(
        rubric,
        plugins,
        llm,
        allow_import=allow_import,
        no_cache=no_cache,
        feedback=False,
        judge_concurrency=judge_concurrency,
    )
    concurrency, in_flight = sized_windows(concurrency, targets_in_flight, rubric, plugins, judge)

    async def run() -> CalibrationReport:
        try:
            return await calibrate(
                rubric,
                examples,
                plugins=plugins,
                options={"llm": judge, "samples": samples},
                bootstrap=resamples,
                seed=seed,
                confidence=confidence,
                concurrency=concurrency,
                target_concurrency=in_flight,
                allow_import=allow_import,
            )
        finally:
            await judge.aclose()

    with user_errors():
        report = asyncio.run(run())
    below = report.kappa_below(min_kappa) if min_kappa is not None else []
    if as_json:
        payload = report.to_dict()
        if min_kappa is not None:
            payload["gate"] = {
                "min_kappa": min_kappa,
                "passed": not below,
                "below": below,
                "unchecked": report.kappa_undefined(),
            }
        sys.stdout.write(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    else:
        _print_report(report)
        if min_kappa is not None:
            _print_gate(report, min_kappa, below)
    raise typer.Exit(EXIT_FAILED if below else EXIT_OK)


def _figure(estimate: Estimate | None, confidence: bool = True) -> str:
    if estimate is None:
        return ""
    if estimate.value is None:
        return "n/a"
    text = f"{estimate.value:.3f}"
    if confidence and estimate.interval is not None:
        text += f"\n[{estimate.interval.low:.3f}, {estimate.interval.high:.3f}]"
    return text


def _print_report(report: CalibrationReport) -> None:
    out.print(
        f"[bold]Calibration[/bold] of {escape(report.rubric_id)}@{escape(report.rubric_version)} "
        f"on {report.examples} labelled example(s)"
    )
    level = f"{report.confidence:.0%}"
    grid = table(
        "criterion",
        "n",
        "unscored",
        f"accuracy [{level} CI]",
        f"kappa [{level} CI]",
        "weighted kappa linear",
        "weighted kappa quadratic",
    )
    for agreement in report.criteria:
        grid.add_row(
            f"{escape(agreement.criterion_id)}\n({agreement.scale.kind})",
            str(agreement.n),
            str(agreement.unscored),
            _figure(agreement.accuracy),
            _figure(agreement.kappa),
            _figure(agreement.weighted_kappa_linear),
            _figure(agreement.weighted_kappa_quadratic),
        )
    overall = report.overall
    grid.add_section()
    grid.add_row(
        "[bold]overall[/bold]\n(pooled)",
        str(overall.n),
        str(overall.unscored),
        _figure(overall.accuracy),
        _figure(overall.kappa),
        "",
        "",
    )
    out.print(grid)
    if report.resamples:
        out.print(
            f"Intervals: percentile bootstrap, {report.resamples} resamples of the examples, "
            f"seed {report.seed}."
        )
    else:
        out.print("Intervals: off (--resamples 0).")
    for agreement in report.criteria:
        for label, estimate in (
            ("accuracy", agreement.accuracy),
            ("kappa", agreement.kappa),
            ("weighted kappa", agreement.weighted_kappa_linear),
        ):
            if estimate is not None and estimate.reason:
                out.print(
                    f"{escape(agreement.criterion_id)}: {label} n/a: {escape(estimate.reason)}"
                )
    if overall.kappa.reason:
        out.print(f"overall: kappa n/a: {escape(overall.kappa.reason)}")
    for agreement in report.criteria:
        _print_matrix(agreement)
    if report.unscored:
        out.print(
            f"{len(report.unscored)} labelled decision(s) the judge did not score "
            "(not counted as disagreements):"
        )
        for decision in report.unscored[:20]:
            out.print(
                f"  {escape(decision.example_id)} / {escape(decision.criterion_id)}: "
                f"{decision.status}: {escape(decision.notes)}"
            )
        if len(report.unscored) > 20:
            out.print(f"  ... and {len(report.unscored) - 20} more (see --json)")
    usage = report.usage
    if usage.get("llm_calls") or usage.get("cache_hits"):
        out.print(f"LLM usage: {escape(usage_text(dict(usage)))}")


def _print_matrix(agreement: CriterionAgreement) -> None:
    from rich.table import Table

    matrix = agreement.confusion
    grid = Table(
        title=f"{agreement.criterion_id}: rows human, columns judge (n={matrix.n})",
        title_justify="left",
    )
    grid.add_column("human \\ judge", overflow="fold")
    for label in matrix.labels:
        grid.add_column(escape(label), justify="right", overflow="fold")
    grid.add_column("total", justify="right")
    for label, row in zip(matrix.labels, matrix.counts, strict=True):
        grid.add_row(escape(label), *map(str, row), str(sum(row)))
    grid.add_section()
    grid.add_row("total", *map(str, matrix.column_totals), str(matrix.n))
    out.print(grid)


def _print_gate(report: CalibrationReport, minimum: float, below: list[str]) -> None:
    unchecked = report.kappa_undefined()
    if unchecked:
        out.print(
            f"gate: kappa of {escape(', '.join(unchecked))} is undefined, so not checked "
            f"against --min-kappa {minimum:g}"
        )
    if below:
        shown = ", ".join(
            f"{c.criterion_id} ({c.kappa.value:.3f})"
            for c in report.criteria
            if c.criterion_id in below and c.kappa.value is not None
        )
        out.print(f"[red]gate FAILED[/red]: kappa below {minimum:g} for {escape(shown)}")
    else:
        out.print(f"[green]gate passed[/green]: every defined kappa is at least {minimum:g}")
