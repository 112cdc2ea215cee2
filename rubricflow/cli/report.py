"""`rubricflow report` (a run as one self-contained HTML file) and `rubricflow compare`
(run B against run A, with a regression gate for CI).

RUN is a results file written by `rubricflow eval --output FILE` (when the path exists),
`latest` (the newest run in the store), or a run id in the store (`--db URL`, default
$RUBRICFLOW_DB, else ./rubricflow.db).
"""

from __future__ import annotations

import json
import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from rubricflow.cli.shared import (
    EXIT_FAILED,
    EXIT_OK,
    DbOption,
    err,
    fail,
    out,
    run_async,
    table,
    user_errors,
)

if TYPE_CHECKING:
    from rubricflow.calibration import PassRateEstimate
    from rubricflow.compare import Regression, RunComparison
    from rubricflow.core import Core
    from rubricflow.runs import RunData

__all__ = ["compare_command", "report_command"]

TOP_DROPS = 10


class CompareFormat(str, Enum):
    """What `rubricflow compare` prints."""

    text = "text"
    json = "json"
    markdown = "markdown"


_RUN_HELP = "a results file from `rubricflow eval --output`, a run id in the store, or `latest`."
RunA = Annotated[
    str, typer.Argument(metavar="RUN_A", help=f"The baseline run: {_RUN_HELP}", show_default=False)
]
RunB = Annotated[
    str, typer.Argument(metavar="RUN_B", help=f"The run to check: {_RUN_HELP}", show_default=False)
]


def _rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def _points(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:+.1f} pts"


def _score(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _signed(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.3f}"


def _coloured(text: str, value: float | None) -> str:
    if value is None or value == 0:
        return text
    return f"[{'green' if value > 0 else 'red'}]{text}[/]"


async def _runs(core: Core, specs: list[str], db: str | None) -> list[RunData]:
    """The runs `specs` name, for `compare`: results files are read by the store-less
    core; stored runs (ids, `latest`) come from the store at `db`, which must exist (a
    comparison only reads)."""
    from rubricflow.application import Application
    from rubricflow.report.sources import STORED_RUN_REMEDY

    found = [await core.read_run(spec) for spec in specs]
    if all(run is not None for run in found):
        return [run for run in found if run is not None]
    async with await Application.open(
        db, existing=True, remedy=STORED_RUN_REMEDY, settings=core.settings
    ) as app:
        return [run or await app.run(spec) for run, spec in zip(found, specs, strict=True)]


async def _report_run(
    core: Core, spec: str | None, db: str | None, artifact: str | None
) -> tuple[RunData, PassRateEstimate | None]:
    """The run to report and, for a run in the store, its pass rate corrected with
    people's decisions on its rubric (None without labels, and for a results file or
    an artifact's evaluations)."""
    from rubricflow.application import Application
    from rubricflow.report.sources import STORED_RUN_REMEDY

    if spec is not None:
        found = await core.read_run(spec)
        if found is not None:
            return found, None
    async with await Application.open(
        db, existing=True, remedy=STORED_RUN_REMEDY, settings=core.settings
    ) as app:
        if spec is None:
            assert artifact is not None
            return await app.artifact_run(artifact), None
        data = await app.run(spec)
        return data, await app.run_pass_rate_estimate(data)


def report_command(
    run: Annotated[
        str | None,
        typer.Argument(
            metavar="[RUN]",
            help="A results file from `rubricflow eval --output`, a run id in the store, or "
            "`latest` (omit it with --artifact).",
            show_default=False,
        ),
    ] = None,
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Write the HTML report to this file.")
    ] = Path("report.html"),
    artifact: Annotated[
        str | None,
        typer.Option(
            "--artifact",
            metavar="ID",
            help="Report every stored evaluation of this artifact (each revision under each "
            "rubric) instead of a run.",
        ),
    ] = None,
    db: DbOption = None,
    title: Annotated[
        str | None, typer.Option("--title", help="The page title (default: the run id).")
    ] = None,
) -> None:
    """Write a run's HTML report: one self-contained file with the pass rate, verdict
    counts, score distribution, per-criterion pass rates, LLM cost and every target's
    criterion results, filterable by verdict and failed criterion.

    Exit 0 when the report was written, 2 on usage or input errors (unknown run, missing
    or malformed results file, an artifact with no evaluations).
    """
    from rubricflow.core import Core
    from rubricflow.runs import summarize

    if (run is None) == (artifact is None):
        fail("give either RUN (a results file, a run id or `latest`) or --artifact ID")
    core = Core()
    data, estimate = run_async(_report_run(core, run, db, artifact))
    written = run_async(core.write_report(data, output, title=title, estimate=estimate))
    summary = summarize(data.evaluations)
    err.print(
        f"wrote {escape(str(written))}: {escape(data.info.id)}, {summary.total} target(s), "
        f"pass rate {_rate(summary.pass_rate)}"
    )


def compare_command(
    run_a: RunA,
    run_b: RunB,
    db: DbOption = None,
    threshold: Annotated[
        float,
        typer.Option(
            "--threshold",
            min=0.0,
            max=1.0,
            help="A pass-rate drop (overall or any criterion's) larger than this fraction "
            "is a regression; 0 counts any drop.",
        ),
    ] = 0.0,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the comparison as JSON (--format json).")
    ] = False,
    output_format: Annotated[
        CompareFormat | None,
        typer.Option(
            "--format",
            help="text (default), json, or markdown: a short PR comment (pass-rate change, "
            "flipped targets, worst criteria) under 65,000 characters.",
        ),
    ] = None,
    links: Annotated[
        list[str] | None,
        typer.Option(
            "--link",
            metavar="TEXT=URL",
            help="With --format markdown: a link to show under the comment (e.g. the CI run "
            "or the HTML report); repeatable.",
        ),
    ] = None,
) -> None:
    """Compare run B against run A over the targets both evaluated (matched by target id):
    verdict flips, pass-rate and mean-score deltas, per-criterion pass-rate deltas and
    the largest score drops.

    `--format markdown` prints a PR comment for CI (see docs/ci.md). Exit 0 when nothing
    regressed beyond --threshold, 1 when the pass rate or any criterion's pass rate fell
    by more than it, 2 on usage or input errors.
    """
    from rubricflow.core import Core

    if as_json and output_format not in (None, CompareFormat.json):
        fail(f"--json and --format {output_format.value} disagree; give one of them")
    chosen = CompareFormat.json if as_json else (output_format or CompareFormat.text)
    if links and chosen is not CompareFormat.markdown:
        fail("--link goes with --format markdown")
    given_links: list[tuple[str, str]] = []
    if links:
        from rubricflow.ci.comment import parse_link

        with user_errors():
            given_links = [parse_link(link) for link in links]

    core = Core()
    a, b = run_async(_runs(core, [run_a, run_b], db))
    comparison = core.compare(a, b)
    for warning in comparison.warnings:
        err.print(f"warning: {escape(warning)}")
    if not comparison.shared:
        fail(
            f"runs {a.info.id!r} and {b.info.id!r} share no target ids; compare matches "
            "targets by target id, so give two runs over the same targets"
        )
    found = comparison.regressions(threshold)
    if chosen is CompareFormat.json:
        sys.stdout.write(
            json.dumps(comparison.to_dict(threshold), ensure_ascii=False, indent=2) + "\n"
        )
    elif chosen is CompareFormat.markdown:
        from rubricflow.ci.comment import comparison_markdown

        with user_errors():
            comment = comparison_markdown(comparison, threshold=threshold, links=given_links)
        sys.stdout.write(comment)
    else:
        _print_comparison(comparison, threshold, found)
    raise typer.Exit(EXIT_FAILED if found else EXIT_OK)


def _print_comparison(comparison: RunComparison, threshold: float, found: list[Regression]) -> None:
    a, b = comparison.a, comparison.b
    sa, sb = comparison.summary_a, comparison.summary_b
    out.print(f"A: {escape(a.id)} ({escape(a.rubric_id)}@{escape(a.rubric_version)})")
    out.print(f"B: {escape(b.id)} ({escape(b.rubric_id)}@{escape(b.rubric_version)})")
    out.print(
        f"targets: {len(comparison.shared)} in both, {len(comparison.only_a)} only in A, "
        f"{len(comparison.only_b)} only in B"
    )
    delta = comparison.pass_rate_delta
    out.print(
        f"pass rate: {_rate(sa.pass_rate)} -> {_rate(sb.pass_rate)} "
        f"({_coloured(_points(delta), delta)})"
    )
    delta = comparison.mean_score_delta
    out.print(
        f"mean score: {_score(sa.mean_score)} -> {_score(sb.mean_score)} "
        f"({_coloured(_signed(delta), delta)})"
    )
    if comparison.flips:
        grid = table("target", "verdict A", "verdict B", "score A", "score B")
        for flip in comparison.flips:
            worse = flip.verdict_a == "pass"
            colour = "red" if worse else ("green" if flip.verdict_b == "pass" else "yellow")
            grid.add_row(
                escape(flip.target_id),
                flip.verdict_a,
                f"[{colour}]{flip.verdict_b}[/]",
                f"{flip.score_a:.3f}",
                f"{flip.score_b:.3f}",
            )
        out.print(f"{len(comparison.flips)} verdict flip(s):")
        out.print(grid)
    else:
        out.print("no verdict flips")
    if comparison.criteria:
        grid = table("criterion", "pass rate A", "pass rate B", "delta", "mean A", "mean B")
        for criterion in comparison.criteria:
            change = criterion.pass_rate_delta
            grid.add_row(
                escape(criterion.criterion_id),
                _rate(criterion.pass_rate_a),
                _rate(criterion.pass_rate_b),
                _coloured(_points(change), change),
                _score(criterion.mean_score_a),
                _score(criterion.mean_score_b),
            )
        out.print(grid)
    drops = [d for d in comparison.score_deltas if d.delta < 0][:TOP_DROPS]
    if drops:
        grid = table("target", "score A", "score B", "delta")
        for drop in drops:
            grid.add_row(
                escape(drop.target_id),
                f"{drop.score_a:.3f}",
                f"{drop.score_b:.3f}",
                f"[red]{drop.delta:+.3f}[/]",
            )
        out.print(f"largest score drops (up to {TOP_DROPS}):")
        out.print(grid)
    if found:
        reasons = "; ".join(escape(str(regression)) for regression in found)
        out.print(f"[red]REGRESSION[/] beyond threshold {threshold:g}: {reasons}")
    else:
        out.print(f"[green]OK[/]: no regression beyond threshold {threshold:g}")
