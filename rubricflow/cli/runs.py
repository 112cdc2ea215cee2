"""`rubricflow runs list|show`: the batch runs in the store, and one run's figures."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from rubricflow.cli.shared import (
    MAX_LIMIT,
    DbOption,
    JsonOption,
    ServerOption,
    TokenOption,
    out,
    print_json,
    run_on,
    table,
    usage_text,
)

if TYPE_CHECKING:
    from rubricflow.application import Application
    from rubricflow.client import AsyncClient
    from rubricflow.runs import RunInfo, RunSummary
    from rubricflow.wire import RunOut

__all__ = ["runs_app"]

runs_app = typer.Typer(help="Batch evaluation runs in the store.", no_args_is_help=True)


def _from_wire(run: RunOut) -> tuple[RunInfo, RunSummary]:
    """A server's run as the core's values (the same figures: the server computed them
    from the same evaluations)."""
    from rubricflow.runs import CriterionSummary, RunInfo, RunSummary

    figures = run.summary
    info = RunInfo.from_dict(run.model_dump(mode="json", exclude={"summary"}))
    summary = RunSummary(
        total=figures.total,
        passed=figures.passed,
        failed=figures.failed,
        incomplete=figures.incomplete,
        mean_score=figures.mean_score,
        median_score=figures.median_score,
        histogram=list(figures.histogram),
        criteria=[
            CriterionSummary(
                criterion_id=c.id,
                scored=c.scored,
                passed=c.passed,
                unscored=c.unscored,
                mean_score=c.mean_score,
            )
            for c in figures.criteria
        ],
        llm_calls=figures.llm_calls,
        cache_hits=figures.cache_hits,
        input_tokens=figures.input_tokens,
        output_tokens=figures.output_tokens,
        cost=figures.cost,
        duration_ms=figures.duration_ms,
    )
    return info, summary


def _interval(figures: dict[str, Any]) -> str:
    low, high = max(0.0, figures["low"]), min(1.0, figures["high"])
    return f"{figures['estimate']:.1%} [{figures['confidence']:.0%} CI {low:.1%}, {high:.1%}]"


def _print_estimate(estimate: dict[str, Any]) -> None:
    """The naive and the corrected pass rate (intervals shown clipped to 0..100%)."""
    out.print(f"pass rate, the judge's verdicts: {_interval(estimate['naive'])}")
    if estimate["corrected"] is None:
        out.print(
            f"pass rate corrected with people's labels: n/a ({estimate['labelled']} label(s); "
            "it needs at least 2)"
        )
        return
    out.print(
        f"pass rate corrected with {estimate['labelled']} people's label(s): "
        f"{_interval(estimate['corrected'])}"
    )


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


@runs_app.command("list")
def list_runs(
    db: DbOption = None,
    limit: Annotated[
        int, typer.Option("--limit", min=1, max=MAX_LIMIT, help="How many runs.")
    ] = 20,
    server: ServerOption = None,
    token: TokenOption = None,
    as_json: JsonOption = False,
) -> None:
    """The newest runs first: id, rubric, status, when, and how many targets passed."""

    async def work(app: Application) -> list[tuple[RunInfo, RunSummary]]:
        # the figures come from SQL aggregates: no evaluation document is read
        return [(o.info, o.summary) for o in await app.run_overviews(limit=limit)]

    async def remote(client: AsyncClient) -> list[tuple[RunInfo, RunSummary]]:
        return [_from_wire(run) for run in await client.list_runs(limit=limit)]

    rows = run_on(db, server, token, local=work, remote=remote)
    if as_json:
        print_json([{**info.to_dict(), "summary": s.to_dict()} for info, s in rows])
        return
    rows_table = table("run", "rubric", "status", "started", "targets", "passed", "pass rate")
    for info, summary in rows:
        rows_table.add_row(
            escape(info.id),
            escape(f"{info.rubric_id}@{info.rubric_version}"),
            info.status,
            info.started_at[:19].replace("T", " "),
            str(summary.total),
            str(summary.passed),
            _pct(summary.pass_rate),
        )
    out.print(rows_table)


@runs_app.command("show")
def show_run(
    run_id: Annotated[str, typer.Argument(metavar="RUN", help="A run id, or `latest`.")],
    db: DbOption = None,
    server: ServerOption = None,
    token: TokenOption = None,
    as_json: JsonOption = False,
) -> None:
    """One run: its options, verdict counts, scores, per-criterion pass rates, LLM usage,
    and, when people labelled its rubric, the naive and the corrected pass rate."""
    from rubricflow.runs import summarize

    async def work(app: Application) -> tuple[RunInfo, RunSummary, dict[str, Any] | None]:
        run = await app.run(run_id)
        estimate = await app.run_pass_rate_estimate(run)
        return run.info, summarize(run.evaluations), estimate.to_dict() if estimate else None

    async def remote(client: AsyncClient) -> tuple[RunInfo, RunSummary, dict[str, Any] | None]:
        found = await client.get_run(run_id)
        estimate = found.pass_rate_estimate
        return *_from_wire(found), estimate.model_dump(mode="json") if estimate else None

    info, summary, estimate = run_on(db, server, token, local=work, remote=remote)
    if as_json:
        print_json({**info.to_dict(), "summary": summary.to_dict(), "pass_rate_estimate": estimate})
        return
    out.print(
        f"[bold]{escape(info.id)}[/bold] {escape(info.rubric_id)}@{escape(info.rubric_version)} "
        f"{escape(f'[{info.status}]')} source {escape(str(info.source))}"
    )
    out.print(
        f"{summary.total} target(s): {summary.passed} passed, {summary.failed} failed, "
        f"{summary.incomplete} incomplete; pass rate {_pct(summary.pass_rate)}"
    )
    rows_table = table("criterion", "scored", "passed", "pass rate", "unscored")
    for criterion in summary.criteria:
        rows_table.add_row(
            escape(criterion.criterion_id),
            str(criterion.scored),
            str(criterion.passed),
            _pct(criterion.pass_rate),
            str(criterion.unscored),
        )
    out.print(rows_table)
    if estimate is not None:
        _print_estimate(estimate)
    if summary.llm_calls or summary.cache_hits:
        usage = {
            "llm_calls": summary.llm_calls,
            "cache_hits": summary.cache_hits,
            "input_tokens": summary.input_tokens,
            "output_tokens": summary.output_tokens,
            "cost": summary.cost,
        }
        out.print(f"LLM usage: {escape(usage_text(usage))}")
