"""`rubricflow evaluations ...`: look up stored evaluations."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

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
    """Stored evaluations, newest first.

    In a terminal under 110 columns the time and coverage columns are left out, so each
    id stays whole on one line; --json has every field.
    """
    from rubricflow.application import EvaluationFilter

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
    wide = out.width >= WIDE_COLUMNS
    headers = ("id", "time", "rubric", "target", "verdict", "score", "coverage")
    grid = _id_table(*(h for h in headers if wide or h not in NARROW_OMITS))
    for evaluation in found:
        cells = {
            "id": evaluation.id,
            "time": evaluation.created_at[:16].replace("T", " "),
            "rubric": escape(f"{evaluation.rubric_id}@{evaluation.rubric_version}"),
            "target": escape(evaluation.target_id or ""),
            "verdict": evaluation.verdict,
            "score": f"{evaluation.score:.3f}",
            "coverage": f"{evaluation.coverage:.0%}",
        }
        grid.add_row(*(cells[h] for h in headers if wide or h not in NARROW_OMITS))
    out.print(grid)


#: below this terminal width `evaluations list` leaves out these columns (`--json` has
#: them), so the 32-character ids stay whole on one line beside the rest
WIDE_COLUMNS = 110
NARROW_OMITS = ("time", "coverage")


def _id_table(*headers: str) -> Table:
    """A compact table whose first column (an id, 32 characters) never wraps, so an id
    stays on one line, whole and copyable, at 80 columns; the other columns fold."""
    grid = table(*headers)
    grid.box = box.SIMPLE_HEAD
    grid.columns[0].no_wrap = True
    grid.columns[0].overflow = "ignore"
    return grid


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
