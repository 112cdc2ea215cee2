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
    ServerOption,
    TokenOption,
    fail,
    out,
    print_json,
    run_on,
    run_with_app,
    table,
)

if TYPE_CHECKING:
    from rubricflow.application import Application
    from rubricflow.client import AsyncClient
    from rubricflow.model import Rubric
    from rubricflow.records import RubricVersionInfo
    from rubricflow.rubric_diff import RubricDiff
    from rubricflow.wire import RubricDiffOut, RubricVersionOut

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


def _version_info(version: RubricVersionOut) -> RubricVersionInfo:
    from rubricflow.records import RubricVersionInfo

    return RubricVersionInfo(
        rubric_id=version.id,
        version=version.version,
        content_hash=version.content_hash,
        name=version.name,
        target_type=version.target_type,
        source_format=version.source_format,
        created_at=version.created_at,
        deleted=version.deleted,
    )


def _diff(diff: RubricDiffOut) -> RubricDiff:
    from rubricflow.rubric_diff import CriterionChange, FieldChange, RubricDiff

    def fields(changes: list[Any]) -> tuple[FieldChange, ...]:
        return tuple(FieldChange(f.path, f.before, f.after, f.kind) for f in changes)

    return RubricDiff(
        rubric_id=diff.rubric_id,
        before_version=diff.before.version,
        after_version=diff.after.version,
        before_hash=diff.before.content_hash,
        after_hash=diff.after.content_hash,
        rubric_fields=fields(diff.rubric_fields),
        criteria=tuple(
            CriterionChange(c.criterion_id, c.change, fields(c.fields)) for c in diff.criteria
        ),
        reordered=diff.reordered,
    )


@rubrics_app.command("register")
def rubrics_register(
    paths: Annotated[list[Path], typer.Argument(metavar="FILE", help="Rubric files, any format.")],
    db: DbOption = None,
    format: Annotated[str | None, typer.Option("--format", "-f", help="Source format.")] = None,
    server: ServerOption = None,
    token: TokenOption = None,
    as_json: JsonOption = False,
) -> None:
    """Register every rubric in FILE... (all files in one transaction; with --server, each
    file's rubrics all or none, as the server's rules for strangers' rubrics allow)."""
    if server is not None:
        _register_remotely(paths, format, server, token, as_json)
        return
    # every problem is in a file the user named: a usage error, like `eval` and `convert`
    results = run_with_app(db, lambda app: app.register_rubrics(paths, format=format))
    if as_json:
        print_json(
            {"registered": [{**_rubric_summary(r.rubric), "created": r.created} for r in results]}
        )
        return
    for result in results:
        state = "registered" if result.created else "unchanged"
        out.print(f"{state} {escape(result.rubric.id)}@{escape(result.rubric.version)}")


def _register_remotely(
    paths: list[Path], format: str | None, server: str, token: str | None, as_json: bool
) -> None:
    texts: list[str] = []
    for path in paths:
        try:
            texts.append(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as error:
            fail(f"{path}: cannot read: {error}")

    async def remote(client: AsyncClient) -> list[dict[str, Any]]:
        registered: list[dict[str, Any]] = []
        for text in texts:
            result = await client.register_rubrics(text, format=format)
            registered.extend(r.model_dump(mode="json") for r in result.registered)
        return registered

    async def never(app: Application) -> list[dict[str, Any]]:  # pragma: no cover
        raise AssertionError("register runs remotely here")

    results = run_on(None, server, token, local=never, remote=remote)
    if as_json:
        print_json({"registered": results})
        return
    for result in results:
        state = "registered" if result["created"] else "unchanged"
        out.print(f"{state} {escape(result['id'])}@{escape(result['version'])}")


@rubrics_app.command("list")
def rubrics_list(
    db: DbOption = None,
    target_type: Annotated[
        str | None, typer.Option("--target-type", help="Only rubrics for this target type.")
    ] = None,
    server: ServerOption = None,
    token: TokenOption = None,
    as_json: JsonOption = False,
) -> None:
    """The latest version of every registered (not deleted) rubric."""

    async def work(app: Application) -> list[dict[str, Any]]:
        if target_type is not None:
            found = await app.rubrics.get_for_target(target_type)
        else:
            found = await app.rubrics.list_latest()
        return [_rubric_summary(rubric) for rubric in found]

    async def remote(client: AsyncClient) -> list[dict[str, Any]]:
        found = await client.list_rubrics(target_type=target_type)
        return [summary.model_dump(mode="json") for summary in found]

    rubrics = run_on(db, server, token, local=work, remote=remote)
    if as_json:
        print_json({"rubrics": rubrics})
        return
    grid = table("id", "version", "name", "target type", "criteria")
    for rubric in rubrics:
        grid.add_row(
            escape(rubric["id"]),
            escape(rubric["version"]),
            escape(rubric["name"]),
            escape(rubric["target_type"] or ""),
            str(rubric["criteria"]),
        )
    out.print(grid)


@rubrics_app.command("show")
def rubrics_show(
    rubric_id: Annotated[str, typer.Argument(metavar="ID", help="The rubric's id.")],
    version: Annotated[str | None, typer.Option("--version", help="An exact version.")] = None,
    db: DbOption = None,
    server: ServerOption = None,
    token: TokenOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print a rubric (the latest version unless --version) as native YAML or JSON."""
    from rubricflow.formats.native import dump_stored_rubric, stored_rubric_document

    async def remote(client: AsyncClient) -> Rubric:
        return (await client.get_rubric(rubric_id, version)).document

    rubric = run_on(
        db,
        server,
        token,
        local=lambda app: app.rubrics.get(rubric_id, version),
        remote=remote,
    )
    if as_json:
        print_json(stored_rubric_document(rubric))
    else:
        out.print(escape(dump_stored_rubric(rubric)), end="")


@rubrics_app.command("history")
def rubrics_history(
    rubric_id: Annotated[str, typer.Argument(metavar="ID", help="The rubric's id.")],
    db: DbOption = None,
    server: ServerOption = None,
    token: TokenOption = None,
    as_json: JsonOption = False,
) -> None:
    """Every stored version of a rubric, lowest to highest."""

    async def remote(client: AsyncClient) -> list[RubricVersionInfo]:
        return [_version_info(v) for v in await client.rubric_versions(rubric_id)]

    infos = run_on(
        db,
        server,
        token,
        local=lambda app: app.rubrics.history(rubric_id),
        remote=remote,
    )
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
    server: ServerOption = None,
    token: TokenOption = None,
    as_json: JsonOption = False,
) -> None:
    """Hide a rubric from latest lookups; its versions stay readable for audit."""

    async def remote(client: AsyncClient) -> None:
        await client.delete_rubric(rubric_id)

    run_on(
        db,
        server,
        token,
        local=lambda app: app.rubrics.delete(rubric_id),
        remote=remote,
    )
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
    server: ServerOption = None,
    token: TokenOption = None,
    as_json: JsonOption = False,
) -> None:
    """What changed between two stored versions of a rubric, field by field, and whether
    any change can move a score (default: the two highest versions)."""

    async def remote(client: AsyncClient) -> RubricDiff:
        return _diff(await client.diff_rubric(rubric_id, before, after))

    diff = run_on(
        db,
        server,
        token,
        local=lambda app: app.diff_rubric(rubric_id, before, after),
        remote=remote,
    )
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
