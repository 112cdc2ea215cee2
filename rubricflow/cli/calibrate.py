"""`rubricflow calibrate RUBRIC [LABELS] --llm SPEC`: does the judge agree with humans?

Judges human-labelled examples with the rubric (the way `rubricflow eval` does) and
prints accuracy, Cohen's kappa, weighted kappa, confusion matrices and bootstrap
intervals per criterion and overall. The labels come from LABELS (a JSONL file), from
people's decisions in the store (`--db`), or both; with `--db` the judge's per-criterion
reliability over time is shown too. With `--propose -o DRAFT.yaml` it drafts the rubric's
next version from the disagreements and measures it on held-out labels (`--register`
puts it in the store when it improved beyond the interval). Exit 0 when done (and every
criterion's kappa is at least --min-kappa, if given), 1 when a criterion's kappa is below
--min-kappa, 2 on usage or input errors.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

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
    from rubricflow.application import Application
    from rubricflow.calibration import (
        CalibrationReport,
        CriterionAgreement,
        Estimate,
        LabelledExample,
    )
    from rubricflow.calibration.propose import Proposal
    from rubricflow.calibration.reliability import ReliabilityPoint
    from rubricflow.model import Rubric
    from rubricflow.plugins import PluginRegistry

__all__ = ["calibrate_command"]


@dataclass
class _Outcome:
    """What one calibrate run found: the report or the proposal, and from the store the
    reliability over time and whether the draft was registered."""

    report: CalibrationReport | None = None
    proposal: Proposal | None = None
    registered: bool = False
    reliability: list[ReliabilityPoint] | None = None
    sources: dict[str, int] = field(default_factory=dict)


@dataclass
class _Job:
    """One calibrate run's inputs, ready to run with or without a store."""

    rubric: Rubric
    examples: list[LabelledExample]
    judge: Any
    plugins: PluginRegistry
    options: dict[str, Any]
    windows: dict[str, Any]
    propose: bool
    register: bool
    period: Literal["day", "week", "month"]
    proposal_settings: dict[str, Any]
    report_settings: dict[str, Any]

    async def run(self, application: Application | None) -> _Outcome:
        from rubricflow.calibration import CalibrationError

        rubric = self.rubric
        outcome = _Outcome(sources={"file": len(self.examples), "store": 0})
        stored: list[LabelledExample] = []
        if application is not None:
            stored = await application.labelled_examples(rubric)
            outcome.sources["store"] = len(stored)
            outcome.reliability = await application.judge_reliability(rubric.id, period=self.period)
        labelled = [*self.examples, *stored]
        if not labelled:
            raise CalibrationError(
                f"no labelled examples: the store holds no person's decision on rubric "
                f"{rubric.id!r}; give a LABELS file, or decide some of its artifacts first"
            )
        if self.propose:
            await self._propose(application, labelled, outcome)
            return outcome
        from rubricflow.calibration import calibrate

        outcome.report = await calibrate(
            rubric,
            labelled,
            plugins=self.plugins,
            options=self.options,
            **self.report_settings,
            **self.windows,
        )
        return outcome

    async def _propose(
        self, application: Application | None, labelled: list[LabelledExample], outcome: _Outcome
    ) -> None:
        settings = {**self.proposal_settings, "options": self.options, **self.windows}
        if application is None:
            from rubricflow.calibration.propose import propose_revision

            outcome.proposal = await propose_revision(
                self.rubric, labelled, llm=self.judge, plugins=self.plugins, **settings
            )
            return
        outcome.proposal, registered = await application.propose_rubric_revision(
            self.rubric,
            llm=self.judge,
            examples=labelled,
            from_store=False,
            register=self.register,
            **settings,
        )
        outcome.registered = registered is not None


def _check_modes(
    labels: Path | None,
    db: str | None,
    propose: bool,
    output: Path | None,
    register: bool,
    confidence: float,
) -> None:
    if not 0.0 < confidence < 1.0:
        fail(f"--confidence must be between 0 and 1 (exclusive), got {confidence:g}")
    if labels is None and db is None:
        fail(
            "give LABELS (a JSONL file of labelled examples), --db (people's decisions in "
            "a store), or both"
        )
    if propose and output is None:
        fail("--propose writes the draft rubric: give -o DRAFT.yaml")
    if output is not None and not propose:
        fail("-o/--output is the draft of --propose; add --propose")
    if register and not (propose and db is not None):
        fail("--register puts the draft in a store: give --propose and --db")


async def _in_store(
    db: str | None, work: Callable[[Application | None], Awaitable[_Outcome]]
) -> _Outcome:
    if db is None:
        return await work(None)
    from rubricflow.application import Application

    async with await Application.open(db) as application:
        return await work(application)


def calibrate_command(
    rubric_path: Annotated[
        Path, typer.Argument(metavar="RUBRIC", help="Rubric file (any format).")
    ],
    labels: Annotated[
        Path | None,
        typer.Argument(
            metavar="[LABELS]",
            help='JSONL file: one target per line plus "labels": {criterion-id: label} '
            "(optional with --db).",
            show_default=False,
        ),
    ] = None,
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
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            help="A store (URL or SQLite file): people's decisions on the rubric there are "
            "labels too, and the judge's reliability over time is shown; --register puts the "
            "draft there.",
        ),
    ] = None,
    propose: Annotated[
        bool,
        typer.Option(
            "--propose",
            help="Draft the rubric's next version from the disagreements (few-shot examples, "
            "clearer descriptions) and measure it by cross-validation.",
        ),
    ] = False,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="With --propose: write the draft rubric here."),
    ] = None,
    register: Annotated[
        bool,
        typer.Option(
            "--register",
            help="With --propose and --db: register the draft, only when its held-out kappa "
            "improved beyond the interval of the difference.",
        ),
    ] = False,
    folds: Annotated[
        int, typer.Option("--folds", min=2, help="With --propose: cross-validation folds.")
    ] = 5,
    examples_per_criterion: Annotated[
        int,
        typer.Option(
            "--examples-per-criterion",
            min=0,
            help="With --propose: few-shot examples added to each criterion at most.",
        ),
    ] = 4,
    period: Annotated[
        str,
        typer.Option("--period", help="With --db: the judge's reliability per day, week or month."),
    ] = "week",
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
    """Measure how well the judge agrees with human labels, per criterion and overall;
    with --propose, draft the rubric's next version from the disagreements.

    Exit 0 when done, 1 when --min-kappa is given and a criterion's kappa is below it,
    2 on usage or input errors.
    """
    import asyncio

    from rubricflow.calibration import read_labels

    _check_modes(labels, db, propose, output, register, confidence)
    if period not in ("day", "week", "month"):
        fail(f"--period is day, week or month, got {period!r}")
    plugins = plugin_manager()
    rubric, _source_format = pick_rubric(rubric_path, format, rubric_id, plugins)
    refuse_unregistered_imports(rubric, plugins, allow_import)
    examples: list[LabelledExample] = []
    if labels is not None:
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
    options: dict[str, Any] = {"llm": judge, "samples": samples}
    windows: dict[str, Any] = {
        "concurrency": concurrency,
        "target_concurrency": in_flight,
        "allow_import": allow_import,
    }
    every: Literal["day", "week", "month"] = period  # type: ignore[assignment]
    job = _Job(
        rubric=rubric,
        examples=examples,
        judge=judge,
        plugins=plugins,
        options=options,
        windows=windows,
        propose=propose,
        register=register,
        period=every,
        proposal_settings={
            "folds": folds,
            "per_criterion": examples_per_criterion,
            "resamples": resamples,
            "seed": seed,
            "confidence": confidence,
        },
        report_settings={"bootstrap": resamples, "seed": seed, "confidence": confidence},
    )

    async def run() -> _Outcome:
        try:
            return await _in_store(db, job.run)
        finally:
            await judge.aclose()

    with user_errors():
        outcome = asyncio.run(run())
    if outcome.proposal is not None:
        assert output is not None
        _finish_proposal(outcome, output, register, as_json)
        raise typer.Exit(EXIT_OK)
    raise typer.Exit(_finish_report(outcome, min_kappa, as_json, period))


def _finish_report(outcome: _Outcome, min_kappa: float | None, as_json: bool, period: str) -> int:
    report = outcome.report
    assert report is not None
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
        if outcome.reliability is not None:
            payload["labels_from"] = outcome.sources
            payload["reliability"] = [point.to_dict() for point in outcome.reliability]
        sys.stdout.write(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    else:
        _print_report(report)
        if outcome.reliability is not None:
            _print_reliability(outcome.reliability, period)
        if min_kappa is not None:
            _print_gate(report, min_kappa, below)
    return EXIT_FAILED if below else EXIT_OK


def _finish_proposal(outcome: _Outcome, output: Path, register: bool, as_json: bool) -> None:
    from rubricflow.formats.native import dump_rubric

    proposal = outcome.proposal
    assert proposal is not None
    with user_errors():
        try:
            output.write_text(dump_rubric(proposal.draft), encoding="utf-8")
        except OSError as error:
            fail(f"{output}: cannot write the draft: {error.strerror or error}")
    if as_json:
        payload = proposal.to_dict()
        payload["draft_file"] = str(output)
        payload["registered"] = outcome.registered
        payload["labels_from"] = outcome.sources
        if outcome.reliability is not None:
            payload["reliability"] = [point.to_dict() for point in outcome.reliability]
        sys.stdout.write(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
        return
    _print_proposal(proposal, output)
    if register:
        if outcome.registered:
            out.print(
                f"[green]registered[/green] {escape(proposal.rubric_id)}@"
                f"{escape(proposal.draft.version)}: it improved beyond the interval"
            )
        else:
            out.print("[yellow]not registered[/yellow]: " + escape(proposal.verdict()))
    if outcome.reliability is not None:
        _print_reliability(outcome.reliability, None)


def _print_proposal(proposal: Proposal, output: Path) -> None:
    out.print(
        f"[bold]Draft[/bold] {escape(proposal.rubric_id)}@{escape(proposal.draft.version)} "
        f"(from {escape(proposal.from_version)}) written to {escape(str(output))}; "
        f"{proposal.examples} labelled example(s), {proposal.folds}-fold cross-validation"
    )
    level = f"{proposal.confidence:.0%}"
    grid = table(
        "criterion",
        "disagreements",
        "examples added",
        "clarified",
        f"kappa now [{level} CI]",
        f"kappa draft, held out [{level} CI]",
    )
    for change in proposal.criteria:
        clarified = ", ".join(
            (["description"] if change.description_changed else [])
            + [f"level {level_id}" for level_id in change.levels_changed]
        )
        grid.add_row(
            escape(change.criterion_id),
            f"{change.disagreements} of {change.labelled}",
            str(change.examples_added),
            escape(clarified or change.note or "-"),
            _figure(change.baseline_kappa),
            _figure(change.draft_kappa),
        )
    grid.add_section()
    grid.add_row(
        "[bold]overall[/bold]\n(pooled)", "", "", "",
        _figure(proposal.baseline), _figure(proposal.held_out),
    )  # fmt: skip
    out.print(grid)
    out.print(escape(proposal.verdict()))


def _print_reliability(points: list[ReliabilityPoint], period: str | None) -> None:
    if not points:
        out.print("Judge reliability over time: no person's decision on this rubric yet.")
        return
    grid = table("criterion", "period from", "labels", "agreement", "kappa")
    for point in points:
        grid.add_row(
            escape(point.criterion_id),
            point.period,
            str(point.n),
            f"{point.agreement:.1%}",
            "n/a" if point.kappa is None else f"{point.kappa:.3f}",
        )
    per = f", per {period}" if period else ""
    out.print(f"Judge reliability over time (people's decisions in the store{per}):")
    out.print(grid)


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
