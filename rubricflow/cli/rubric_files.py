"""Commands on rubric files and the installation: `validate`, `convert`, `schema`,
`plugins`. None of them touches the store."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from rubricflow.cli.shared import (
    EXIT_FAILED,
    EXIT_OK,
    err,
    fail,
    out,
    plugin_manager,
    run_async,
    store_less_core,
    user_errors,
)
from rubricflow.errors import RubricflowError, RubricValidationError

if TYPE_CHECKING:
    from rubricflow.validation import FileReport

__all__ = ["convert_command", "plugins_command", "schema_command", "validate_command"]


def validate_command(
    paths: Annotated[list[Path], typer.Argument(help="Rubric files to check.", metavar="PATH")],
    format: Annotated[
        str | None,
        typer.Option(
            "--format", "-f", help="Read every file in this format instead of detecting it."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON report.")] = False,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict",
            help="Also fail (exit 1) a valid file whose meta-rubric check fails, or that "
            "names a check or scorer no installed plugin provides.",
        ),
    ] = False,
) -> None:
    """Check rubric files: format, model rules, and the meta-rubric's structural checks.

    Exit 0 when every file is valid, 1 when any is invalid (with --strict: or fails the
    meta-rubric, or names a check or scorer that is not installed), 2 on usage errors.
    """
    core = store_less_core()
    known = core.plugins.formats
    if format is not None and format not in known:
        fail(f"unknown format {format!r}; known formats: {', '.join(sorted(known))}")
    reports = run_async(core.lint_rubric_files(paths, format=format))
    if as_json:
        out.print_json(json.dumps({"files": [r.to_dict() for r in reports]}))
    else:
        for report in reports:
            _print_report(report)
        invalid = sum(not r.valid for r in reports)
        summary = f"{len(reports) - invalid} valid, {invalid} invalid"
        out.print(summary if len(reports) > 1 else "", end="\n" if len(reports) > 1 else "")
    failed = [r for r in reports if not r.valid or (strict and _strict_failure(r))]
    if not as_json:
        for report in failed:
            if report.valid:
                err.print(f"--strict: {escape(report.path)}: {_strict_failure(report)}")
    raise typer.Exit(EXIT_FAILED if failed else EXIT_OK)


def _strict_failure(report: FileReport) -> str:
    """Why --strict fails a valid file ("" when it does not)."""
    if report.unresolved:
        names = ", ".join(w.path for w in report.unresolved)
        return f"names checks or scorers that are not installed ({names})"
    if not _meta_passed(report):
        return "the meta-rubric fails"
    return ""


def _meta_passed(report: FileReport) -> bool:
    """Whether every rubric of a valid file passes the meta-rubric (a file without one,
    e.g. an empty rubric list, has nothing to fail)."""
    return bool((report.meta_rubric or {"passed": True}).get("passed"))


def _print_report(report: FileReport) -> None:
    path = escape(report.path)
    if not report.valid:
        out.print(f"[red]invalid[/red] {path}")
        for problem in report.errors:
            where = f"{escape(problem.path)}: " if problem.path else ""
            out.print(f"{path}: {where}{escape(problem.message)}")
        return
    meta = report.meta_rubric or {}
    ids = ", ".join(f"{r.rubric.id}@{r.rubric.version}" for r in report.rubrics)
    out.print(
        f"[green]valid[/green] {path} ({report.format}: {escape(ids)}; "
        f"meta-rubric {meta.get('score', 0):.2f} {'pass' if meta.get('passed') else 'FAIL'})"
    )
    for warning in report.warnings:
        where = f"{escape(warning.path)}: " if warning.path else ""
        out.print(f"{path}: warning: {where}{escape(warning.message)}")


def convert_command(
    path: Annotated[Path, typer.Argument(help="Rubric file in any supported format.")],
    to: Annotated[str, typer.Option("--to", help="Target format (only `native`).")] = "native",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here instead of stdout.")
    ] = None,
    format: Annotated[
        str | None, typer.Option("--format", "-f", help="Source format (default: detect).")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Write JSON (default YAML, or JSON for a .json output).")
    ] = False,
    allow_import: Annotated[
        bool,
        typer.Option(
            "--allow-import",
            help="Import graders that run code (an OpenAI python grader): its criterion runs "
            "the source in a subprocess with a timeout, when evaluated with --allow-import.",
        ),
    ] = False,
) -> None:
    """Convert a rubric file from any supported format into the native format."""
    from rubricflow.formats.base import allowing_code

    if to != "native":
        fail(f"cannot convert to {to!r}; the only target format is native")
    fmt = "json" if as_json or (output is not None and output.suffix.lower() == ".json") else "yaml"
    core = store_less_core()
    try:
        with allowing_code(allow_import):
            text, loaded = asyncio.run(core.convert(path, format=format, to=fmt))
    except RubricValidationError as error:
        for problem in error.problems:
            where = f"{escape(problem.path)}: " if problem.path else ""
            err.print(f"{escape(str(path))}: {where}{escape(problem.message)}")
        raise typer.Exit(EXIT_FAILED) from None
    except RubricflowError as error:
        fail(str(error))
    for warning in loaded.warnings:
        err.print(f"{escape(str(path))}: warning: {escape(str(warning))}")
    if output is None:
        sys.stdout.write(text)
        return
    with user_errors():
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf-8")
    err.print(f"wrote {len(loaded.rubrics)} rubric(s) to {escape(str(output))}")


def schema_command(
    content: Annotated[
        bool,
        typer.Option(
            "--content",
            help="Print the JSON Schemas of typed content instead: a conversation, a "
            "message and an image.",
        ),
    ] = False,
) -> None:
    """Print the JSON Schema of the native rubric format (or, with --content, of typed
    content)."""
    if content:
        from rubricflow.conversation import content_schemas

        sys.stdout.write(json.dumps(content_schemas(), indent=2) + "\n")
        return
    from rubricflow.schema import rubric_json_schema

    sys.stdout.write(json.dumps(rubric_json_schema(), indent=2) + "\n")


def plugins_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List installed plugins and the scorers, metrics, check functions, formats and
    providers each adds."""
    infos = plugin_manager().plugins()
    if as_json:
        out.print_json(json.dumps({"plugins": [info.to_dict() for info in infos]}))
        return
    for info in infos:
        origin = " ".join(p for p in (info.distribution, info.version) if p)
        out.print(escape(info.name) + (f" ({escape(origin)})" if origin else ""))
        for label in ("scorers", "metrics", "functions", "formats", "providers"):
            if names := getattr(info, label):
                out.print(f"  {label}: {escape(', '.join(names))}")
