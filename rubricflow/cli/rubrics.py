"""`rubricflow rubrics ...`: register and look up versioned rubrics in the store. Every
command takes `--db URL` (default $RUBRICFLOW_DB, else ./rubricflow.db) and `--json`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from rubricflow.cli.shared import (
    DbOption,
    JsonOption,
    fail,
    out,
    plugin_manager,
    print_json,
    run_with_app,
    table,
)
from rubricflow.errors import RubricflowError

if TYPE_CHECKING:
    from rubricflow.application import Application
    from rubricflow.model import Rubric

__all__ = ["rubrics_app"]

rubrics_app = typer.Typer(
    help="Register and look up versioned rubrics in the store.", no_args_is_help=True
)


def _rubric_summary(rubric: Rubric) -> dict[str, Any]:
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
    from rubricflow.validation import refuse_broken_configs

    plugins = plugin_manager()
    try:
        loaded = [load_file(path, format=format, plugins=plugins) for path in paths]
        for path, item in zip(paths, loaded, strict=True):
            refuse_broken_configs(item.rubrics, plugins, str(path))
    except RubricflowError as error:
        # every problem is in a file the user named: a usage error, like `eval` and `convert`
        fail(str(error))

    pairs = [(rubric, item.format) for item in loaded for rubric in item.rubrics]
    results = run_with_app(db, lambda app: app.rubrics.register_pairs(pairs))
    if as_json:
        print_json(
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

    async def work(app: Application) -> list[Rubric]:
        if target_type is not None:
            return list(await app.rubrics.get_for_target(target_type))
        return list(await app.rubrics.list_latest())

    rubrics = run_with_app(db, work)
    if as_json:
        print_json({"rubrics": [_rubric_summary(r) for r in rubrics]})
        return
    grid = table("id", "version", "name", "target type", "criteria")
    for rubric in rubrics:
        grid.add_row(
            escape(rubric.id),
            escape(rubric.version),
            escape(rubric.name),
            escape(rubric.target_type or ""),
            str(len(rubric.criteria)),
        )
    out.print(grid)


@rubrics_app.command("show")
def rubrics_show(
    rubric_id: Annotated[str, typer.Argument(metavar="ID", help="The rubric's id.")],
    version: Annotated[str | None, typer.Option("--version", help="An exact version.")] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print a rubric (the latest version unless --version) as native YAML or JSON."""
    from rubricflow.formats.native import dump_stored_rubric, stored_rubric_document

    rubric = run_with_app(db, lambda app: app.rubrics.get(rubric_id, version))
    if as_json:
        print_json(stored_rubric_document(rubric))
    else:
        out.print(escape(dump_stored_rubric(rubric)), end="")


@rubrics_app.command("history")
def rubrics_history(
    rubric_id: Annotated[str, typer.Argument(metavar="ID", help="The rubric's id.")],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Every stored version of a rubric, lowest to highest."""
    infos = run_with_app(db, lambda app: app.rubrics.history(rubric_id))
    if as_json:
        print_json({"versions": [info.to_dict() for info in infos]})
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
    run_with_app(db, lambda app: app.rubrics.delete(rubric_id))
    if as_json:
        print_json({"deleted": rubric_id})
    else:
        out.print(f"deleted {escape(rubric_id)} (versions kept; register a new version to restore)")


@rubrics_app.command("diff")
def rubrics_diff(
    rubric_id: Annotated[str, typer.Argument(metavar="ID", help="The rubric's id.")],
    before: Annotated[
        str | None,
        typer.Option("--from", help="The older version (default: the one below --to)."),
    ] = None,
    after: Annotated[
        str | None, typer.Option("--to", help="The newer version (default: the highest).")
    ] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """What changed between two stored versions of a rubric, field by field, and whether
    any change can move a score (default: the two highest versions)."""
    diff = run_with_app(db, lambda app: app.diff_rubric(rubric_id, before, after))
    if as_json:
        print_json(diff.to_dict())
        return
    if diff.identical:
        verdict = "identical"
    elif diff.scoring_changed:
        verdict = "[bold]scoring changed[/bold]"
    else:
        verdict = "wording only"
    out.print(
        f"{escape(diff.rubric_id)} {escape(diff.before_version)} -> "
        f"{escape(diff.after_version)}: {verdict}"
    )
    for field in diff.rubric_fields:
        out.print(f"  {escape(str(field))}")
    for criterion in diff.criteria:
        out.print(f"  criterion {escape(criterion.criterion_id)}: {criterion.change}")
        for field in criterion.fields:
            out.print(f"    {escape(str(field))}")
    if diff.reordered:
        out.print("  criteria reordered")
