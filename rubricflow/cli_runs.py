"""`rubricflow runs list|show`: the batch runs in the store, and one run's figures."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape

from rubricflow.cli_store import DbOption, JsonOption, _print_json, _table, out, run_with_store

__all__ = ["runs_app"]

runs_app = typer.Typer(help="Batch evaluation runs in the store.", no_args_is_help=True)


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


@runs_app.command("list")
def list_runs(
    db: DbOption = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="How many runs.")] = 20,
    as_json: JsonOption = False,
) -> None:
    """The newest runs first: id, rubric, status, when, and how many targets passed."""
    from rubricflow.runs import summarize

    async def work(store: Any) -> list[tuple[Any, Any]]:
        runs = await store.runs.list(limit=limit)
        return [(info, summarize((await store.runs.load(info.id)).evaluations)) for info in runs]

    rows = run_with_store(db, work)
    if as_json:
        _print_json([{**info.to_dict(), "summary": s.to_dict()} for info, s in rows])
        return
    table = _table("run", "rubric", "status", "started", "targets", "passed", "pass rate")
    for info, summary in rows:
        table.add_row(
            escape(info.id),
            escape(f"{info.rubric_id}@{info.rubric_version}"),
            info.status,
            info.started_at[:19].replace("T", " "),
            str(summary.total),
            str(summary.passed),
            _pct(summary.pass_rate),
        )
    out.print(table)


@runs_app.command("show")
def show_run(
    run_id: Annotated[str, typer.Argument(metavar="RUN", help="A run id, or `latest`.")],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """One run: its options, verdict counts, scores, per-criterion pass rates, LLM usage."""
    from rubricflow.runs import summarize

    async def work(store: Any) -> Any:
        chosen = run_id
        if run_id == "latest":
            latest = await store.runs.latest()
            if latest is None:
                from rubricflow.errors import NotFoundError

                raise NotFoundError("the store holds no run yet; start one with `rubricflow eval`")
            chosen = latest.id
        return await store.runs.load(chosen)

    run = run_with_store(db, work)
    summary = summarize(run.evaluations)
    if as_json:
        _print_json({**run.info.to_dict(), "summary": summary.to_dict()})
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
    table = _table("criterion", "scored", "passed", "pass rate", "unscored")
    for criterion in summary.criteria:
        table.add_row(
            escape(criterion.criterion_id),
            str(criterion.scored),
            str(criterion.passed),
            _pct(criterion.pass_rate),
            str(criterion.unscored),
        )
    out.print(table)
    if summary.llm_calls or summary.cache_hits:
        from rubricflow.llm.cli import usage_text

        usage = {
            "llm_calls": summary.llm_calls,
            "cache_hits": summary.cache_hits,
            "input_tokens": summary.input_tokens,
            "output_tokens": summary.output_tokens,
            "cost": summary.cost,
        }
        out.print(f"LLM usage: {escape(usage_text(usage))}")
