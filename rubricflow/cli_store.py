"""CLI commands for the store: `rubricflow rubrics ...`, `rubricflow evaluations ...`,
`rubricflow db upgrade`. Every command takes `--db URL` (default $RUBRICFLOW_DB, else
./rubricflow.db) and `--json`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from rubricflow.errors import ConfigurationError, RubricflowError

__all__ = ["db_app", "evaluations_app", "rubrics_app", "run_with_store"]

T = TypeVar("T")

out = Console(soft_wrap=True, highlight=False)
err = Console(stderr=True, soft_wrap=True, highlight=False)

rubrics_app = typer.Typer(
    help="Register and look up versioned rubrics in the store.", no_args_is_help=True
)
evaluations_app = typer.Typer(help="Look up stored evaluations.", no_args_is_help=True)
db_app = typer.Typer(help="Manage the store's database schema.", no_args_is_help=True)

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db", help="Database URL or SQLite file (default: $RUBRICFLOW_DB or ./rubricflow.db)."
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def run_with_store(
    db: str | None, work: Callable[[Any], Awaitable[T]], *, upgrade: bool = False
) -> T:
    """Open the store, run `work(store)`, close it; store errors become a message and exit 2."""
    from rubricflow.store import Store

    async def main() -> T:
        store = await Store.open(db, upgrade=upgrade)
        try:
            return await work(store)
        finally:
            await store.close()

    try:
        return asyncio.run(main())
    except RubricflowError as error:
        err.print(f"error: {escape(str(error))}")
        raise typer.Exit(2) from None


def _table(*headers: str) -> Table:
    """A table whose cells wrap instead of being cut off, so ids stay copyable."""
    table = Table()
    for header in headers:
        table.add_column(header, overflow="fold")
    return table


def _print_json(value: Any) -> None:
    out.print_json(json.dumps(value, ensure_ascii=False, default=str))


def _rubric_summary(rubric: Any) -> dict[str, Any]:
    return {
        "id": rubric.id,
        "version": rubric.version,
        "name": rubric.name,
        "target_type": rubric.target_type,
        "content_hash": rubric.content_hash,
        "criteria": len(rubric.criteria),
    }


@rubrics_app.command("register")
def rubrics_register(
    paths: Annotated[list[Path], typer.Argument(metavar="FILE", help="Rubric files, any format.")],
    db: DbOption = None,
    format: Annotated[str | None, typer.Option("--format", "-f", help="Source format.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Register every rubric in FILE... (all files in one transaction)."""
    from rubricflow.formats.loader import load_file

    try:
        loaded = [load_file(path, format=format) for path in paths]
    except RubricflowError as error:
        # every problem is in a file the user named: a usage error, like `eval` and `convert`
        err.print(f"error: {escape(str(error))}")
        raise typer.Exit(2) from None

    pairs = [(rubric, item.format) for item in loaded for rubric in item.rubrics]
    results = run_with_store(db, lambda store: store.rubrics.register_pairs(pairs))
    if as_json:
        _print_json(
            {"registered": [{**_rubric_summary(r.rubric), "created": r.created} for r in results]}
        )
        return
    for result in results:
        state = "registered" if result.created else "unchanged"
        out.print(f"{state} {escape(result.rubric.id)}@{escape(result.rubric.version)}")


@rubrics_app.command("list")
def rubrics_list(
    db: DbOption = None,
    target_type: Annotated[
        str | None, typer.Option("--target-type", help="Only rubrics for this target type.")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """The latest version of every registered (not deleted) rubric."""

    async def work(store: Any) -> list[Any]:
        if target_type is not None:
            return list(await store.rubrics.get_for_target(target_type))
        return list(await store.rubrics.list_latest())

    rubrics = run_with_store(db, work)
    if as_json:
        _print_json({"rubrics": [_rubric_summary(r) for r in rubrics]})
        return
    table = _table("id", "version", "name", "target type", "criteria")
    for rubric in rubrics:
        table.add_row(
            escape(rubric.id),
            escape(rubric.version),
            escape(rubric.name),
            escape(rubric.target_type or ""),
            str(len(rubric.criteria)),
        )
    out.print(table)


@rubrics_app.command("show")
def rubrics_show(
    rubric_id: Annotated[str, typer.Argument(metavar="ID", help="The rubric's id.")],
    version: Annotated[str | None, typer.Option("--version", help="An exact version.")] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print a rubric (the latest version unless --version) as native YAML or JSON."""
    from rubricflow.formats.native import _dump

    rubric = run_with_store(db, lambda store: store.rubrics.get(rubric_id, version))
    # the native document leaves out fields at their defaults, version 1.0.0 among them;
    # a registry lookup always says which version it shows
    document = {"id": rubric.id, "name": rubric.name, "version": rubric.version}
    document.update(rubric.to_dict())
    if as_json:
        _print_json(document)
    else:
        out.print(escape(_dump(document, "yaml")), end="")


@rubrics_app.command("history")
def rubrics_history(
    rubric_id: Annotated[str, typer.Argument(metavar="ID", help="The rubric's id.")],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Every stored version of a rubric, lowest to highest."""
    infos = run_with_store(db, lambda store: store.rubrics.history(rubric_id))
    if as_json:
        _print_json({"versions": [info.to_dict() for info in infos]})
        return
    for info in infos:
        deleted = " (deleted)" if info.deleted else ""
        out.print(
            f"{escape(info.rubric_id)}@{escape(info.version)} {info.content_hash[:12]} "
            f"{info.created_at:%Y-%m-%d %H:%M:%S}{deleted}"
        )


@rubrics_app.command("delete")
def rubrics_delete(
    rubric_id: Annotated[str, typer.Argument(metavar="ID", help="The rubric's id.")],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Hide a rubric from latest lookups; its versions stay readable for audit."""
    run_with_store(db, lambda store: store.rubrics.delete(rubric_id))
    if as_json:
        _print_json({"deleted": rubric_id})
    else:
        out.print(f"deleted {escape(rubric_id)} (versions kept; register a new version to restore)")


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


def _evaluation_summary(evaluation: Any) -> dict[str, Any]:
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
    limit: Annotated[int, typer.Option("--limit", min=1, help="At most this many.")] = 50,
    offset: Annotated[int, typer.Option("--offset", min=0, help="Skip this many (paging).")] = 0,
    as_json: JsonOption = False,
) -> None:
    """Stored evaluations, newest first."""
    from rubricflow.store import EvaluationFilter

    if verdict is not None and verdict not in ("pass", "fail", "incomplete"):
        err.print(f"error: --verdict {escape(verdict)!r} must be pass, fail or incomplete")
        raise typer.Exit(2)
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
        err.print(f"error: {escape(str(error))}")
        raise typer.Exit(2) from None
    found = run_with_store(
        db, lambda store: store.evaluations.query(chosen, limit=limit, offset=offset)
    )
    if as_json:
        _print_json({"evaluations": [_evaluation_summary(e) for e in found]})
        return
    table = _table("id", "time", "rubric", "target", "verdict", "score", "coverage")
    for evaluation in found:
        table.add_row(
            evaluation.id,
            evaluation.created_at[:19],
            escape(f"{evaluation.rubric_id}@{evaluation.rubric_version}"),
            escape(evaluation.target_id or ""),
            evaluation.verdict,
            f"{evaluation.score:.3f}",
            f"{evaluation.coverage:.0%}",
        )
    out.print(table)


@evaluations_app.command("show")
def evaluations_show(
    evaluation_id: Annotated[str, typer.Argument(metavar="EVAL_ID", help="The evaluation's id.")],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """One stored evaluation with every criterion result and its feedback."""
    evaluation = run_with_store(db, lambda store: store.evaluations.get(evaluation_id))
    if as_json:
        _print_json(evaluation.to_dict())
        return
    out.print(
        f"evaluation {evaluation.id} at {evaluation.created_at}\n"
        f"rubric {escape(evaluation.rubric_id)}@{escape(evaluation.rubric_version)}, "
        f"target {escape(evaluation.target_id or '(none)')}"
    )
    out.print(escape(evaluation.feedback))


@db_app.command("upgrade")
def db_upgrade(db: DbOption = None, as_json: JsonOption = False) -> None:
    """Apply every pending schema migration."""
    from rubricflow.store import Database, resolve_url
    from rubricflow.store.url import display_url

    async def main() -> tuple[str | None, str | None, bool]:
        database = await Database.open(db, upgrade=True)
        try:
            now = await database.current_revision()
            before = database.migrated[0] if database.migrated else now
            return before, now, database.migrated is not None
        finally:
            await database.close()

    try:
        where = display_url(resolve_url(db))
        before, now, upgraded = asyncio.run(main())
    except RubricflowError as error:
        err.print(f"error: {escape(str(error))}")
        raise typer.Exit(2) from None
    head = Database.head_revision()
    if as_json:
        _print_json(
            {
                "database": where,
                "before": before,
                "revision": now,
                "head": head,
                "upgraded": upgraded,
            }
        )
    elif upgraded:
        out.print(f"upgraded {escape(where)} from schema {before or 'none'} to {now} (current)")
    else:
        out.print(f"{escape(where)} is at schema {now} (current); nothing to do")
