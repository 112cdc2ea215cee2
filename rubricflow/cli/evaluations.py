"""`rubricflow evaluations ...`: look up stored evaluations."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from rubricflow.cli.shared import (
    MAX_LIMIT,
    MAX_OFFSET,
    DbOption,
    JsonOption,
    ServerOption,
    fail,
    out,
    print_json,
    refuse_server,
    run_with_app,
    table,
)
from rubricflow.errors import ConfigurationError

if TYPE_CHECKING:
    from rubricflow.results import Evaluation

__all__ = ["evaluations_app"]

evaluations_app = typer.Typer(help="Look up stored evaluations.", no_args_is_help=True)


def _parse_time(value: str | None, option: str) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ConfigurationError(
            f"{option} {value!r} is not an ISO date or time (e.g. 2026-11-21 or 2026-11-21T10:00)"
        ) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def _evaluation_summary(evaluation: Evaluation) -> dict[str, Any]:
    return {
        "id": evaluation.id,
        "created_at": evaluation.created_at,
        "rubric_id": evaluation.rubric_id,
        "rubric_version": evaluation.rubric_version,
        "target_id": evaluation.target_id,
        "verdict": evaluation.verdict,
        "score": evaluation.score,
        "coverage": evaluation.coverage,
        "usage": evaluation.usage(),
    }


@evaluations_app.command("list")
def evaluations_list(
    db: DbOption = None,
    rubric: Annotated[str | None, typer.Option("--rubric", help="Rubric id.")] = None,
    rubric_version: Annotated[
        str | None, typer.Option("--rubric-version", help="Rubric version.")
    ] = None,
    target: Annotated[str | None, typer.Option("--target", help="Target id.")] = None,
    artifact: Annotated[str | None, typer.Option("--artifact", help="Artifact id.")] = None,
    verdict: Annotated[
        str | None, typer.Option("--verdict", help="pass, fail or incomplete.")
    ] = None,
    since: Annotated[str | None, typer.Option("--since", help="ISO date/time, inclusive.")] = None,
    until: Annotated[str | None, typer.Option("--until", help="ISO date/time, exclusive.")] = None,
    limit: Annotated[
        int, typer.Option("--limit", min=1, max=MAX_LIMIT, help="At most this many.")
    ] = 50,
    offset: Annotated[
        int, typer.Option("--offset", min=0, max=MAX_OFFSET, help="Skip this many (paging).")
    ] = 0,
    server: ServerOption = None,
    as_json: JsonOption = False,
) -> None:
    """Stored evaluations, newest first."""
    from rubricflow.store import EvaluationFilter

    refuse_server(
        server,
        "evaluations list",
        "over HTTP, read an artifact's with `artifacts evaluations ID` and a run's with "
        "GET /v1/runs/{id}/evaluations",
    )

    if verdict is not None and verdict not in ("pass", "fail", "incomplete"):
        fail(f"--verdict {verdict!r} must be pass, fail or incomplete")
    try:
        chosen = EvaluationFilter(
            rubric_id=rubric,
            rubric_version=rubric_version,
            target_id=target,
            artifact_id=artifact,
            verdict=verdict,
            since=_parse_time(since, "--since"),
            until=_parse_time(until, "--until"),
        )
    except ConfigurationError as error:
        fail(str(error))
    found = run_with_app(db, lambda app: app.evaluations.query(chosen, limit=limit, offset=offset))
    if as_json:
        print_json({"evaluations": [_evaluation_summary(e) for e in found]})
        return
    grid = table("id", "time", "rubric", "target", "verdict", "score", "coverage")
    for evaluation in found:
        grid.add_row(
            evaluation.id,
            evaluation.created_at[:19],
            escape(f"{evaluation.rubric_id}@{evaluation.rubric_version}"),
            escape(evaluation.target_id or ""),
            evaluation.verdict,
            f"{evaluation.score:.3f}",
            f"{evaluation.coverage:.0%}",
        )
    out.print(grid)


@evaluations_app.command("show")
def evaluations_show(
    evaluation_id: Annotated[str, typer.Argument(metavar="EVAL_ID", help="The evaluation's id.")],
    db: DbOption = None,
    server: ServerOption = None,
    as_json: JsonOption = False,
) -> None:
    """One stored evaluation with every criterion result and its feedback."""
    refuse_server(server, "evaluations show", "read an artifact's with `artifacts evaluations ID`")
    evaluation = run_with_app(db, lambda app: app.evaluations.get(evaluation_id))
    if as_json:
        print_json(evaluation.to_dict())
        return
    out.print(
        f"evaluation {evaluation.id} at {evaluation.created_at}\n"
        f"rubric {escape(evaluation.rubric_id)}@{escape(evaluation.rubric_version)}, "
        f"target {escape(evaluation.target_id or '(none)')}"
    )
    out.print(escape(evaluation.feedback))
