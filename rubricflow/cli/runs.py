"""`rubricflow runs list|show`: the batch runs in the store, and one run's figures."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from rubricflow.cli.shared import (
    MAX_LIMIT,
    DbOption,
    JsonOption,
    out,
    print_json,
    run_with_app,
    table,
    usage_text,
)

if TYPE_CHECKING:
    from rubricflow.application import Application
    from rubricflow.runs import RunInfo, RunSummary

__all__ = ["runs_app"]

runs_app = typer.Typer(help="Batch evaluation runs in the store.", no_args_is_help=True)


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


@runs_app.command("list")
def list_runs(
    db: DbOption = None,
    limit: Annotated[
        int, typer.Option("--limit", min=1, max=MAX_LIMIT, help="How many runs.")
    ] = 20,
    as_json: JsonOption = False,
) -> None:
    """The newest runs first: id, rubric, status, when, and how many targets passed."""

    async def work(app: Application) -> list[tuple[RunInfo, RunSummary]]:
        # the figures come from SQL aggregates: no evaluation document is read
        return [(o.info, o.summary) for o in await app.run_overviews(limit=limit)]

    rows = run_with_app(db, work)
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
    as_json: JsonOption = False,
) -> None:
    """One run: its options, verdict counts, scores, per-criterion pass rates, LLM usage."""
    from rubricflow.runs import summarize

    run = run_with_app(db, lambda app: app.run(run_id))
    summary = summarize(run.evaluations)
    if as_json:
        print_json({**run.info.to_dict(), "summary": summary.to_dict()})
        return
    info = run.info
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
    if summary.llm_calls or summary.cache_hits:
        usage = {
            "llm_calls": summary.llm_calls,
            "cache_hits": summary.cache_hits,
            "input_tokens": summary.input_tokens,
            "output_tokens": summary.output_tokens,
            "cost": summary.cost,
        }
        out.print(f"LLM usage: {escape(usage_text(usage))}")
