"""`rubricflow worker`: review the artifacts waiting in pending_review."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from rubricflow.cli.judging import PanelOption, check_judge, judge_spec
from rubricflow.cli.shared import DbOption, JsonOption, out, print_json, run_with_app

if TYPE_CHECKING:
    from rubricflow.application import Application
    from rubricflow.review.worker import WorkerStats

__all__ = ["worker_command"]


def worker_command(
    concurrency: Annotated[
        int, typer.Option("--concurrency", "-c", min=1, help="Reviews at once.")
    ] = 1,
    once: Annotated[
        bool, typer.Option("--once", help="Review everything waiting, then exit.")
    ] = False,
    lease: Annotated[
        float, typer.Option("--lease", min=1.0, help="Seconds a claimed review stays ours.")
    ] = 300.0,
    poll: Annotated[
        float, typer.Option("--poll", min=0.05, help="Seconds between looks at the queue.")
    ] = 1.0,
    grace: Annotated[
        float,
        typer.Option(
            "--grace",
            min=0.0,
            help="Seconds the reviews in flight may run on after SIGTERM; the rest are "
            "handed back to the queue.",
        ),
    ] = 30.0,
    max_failures: Annotated[
        int | None,
        typer.Option(
            "--max-failures",
            min=1,
            help="Failed reviews in a row that dead-letter an artifact (default "
            "$RUBRICFLOW_MAX_REVIEW_FAILURES, else 3).",
        ),
    ] = None,
    llm: Annotated[
        list[str] | None,
        typer.Option(
            "--llm",
            metavar="SPEC",
            help="The judge for rubrics that need one (default: $RUBRICFLOW_LLM; a type's "
            "own judge wins). Once per judge, with --panel, for a judge panel.",
        ),
    ] = None,
    panel: PanelOption = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Review artifacts waiting in pending_review until stopped, or with --once until
    nothing is waiting. SIGTERM lets in-flight reviews finish within --grace seconds and
    hands the rest back; a review that fails --max-failures times in a row is
    dead-lettered (`artifacts list --dead-letter`, `artifacts retry ID`)."""
    from rubricflow.review.worker import Worker

    judge = judge_spec(llm, panel)
    if judge is not None:
        check_judge(judge)

    async def work(app: Application) -> WorkerStats:
        if judge is not None:
            options = dict(app.artifacts.evaluate_options)
            inner = {**(options.get("options") or {}), "llm": judge}
            app.artifacts.evaluate_options = {**options, "options": inner}
        worker = Worker(
            app.artifacts,
            concurrency=concurrency,
            poll_interval=poll,
            grace_seconds=grace,
            max_failures=max_failures,
        )
        worker.install_signal_handlers()
        return await worker.run(once=once)

    stats = run_with_app(db, work, lease_seconds=lease)
    summary = {
        "reviewed": stats.reviewed,
        "approved": stats.approved,
        "outcomes": stats.outcomes,
        "lost_races": stats.lost_races,
        "errors": stats.errors,
        "handed_back": stats.handed_back,
    }
    if as_json:
        print_json(summary)
    else:
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(stats.outcomes.items()))
        out.print(
            f"reviewed {stats.reviewed} artifact{'s' * (stats.reviewed != 1)}"
            + (f": {outcomes}" if outcomes else "")
            + (f"; {stats.lost_races} taken by another worker" if stats.lost_races else "")
            + (f"; {stats.errors} error(s)" if stats.errors else "")
            + (f"; {stats.handed_back} handed back unfinished" if stats.handed_back else "")
        )
