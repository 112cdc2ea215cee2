"""The `rubricflow` command line: parse input, print results, set exit codes.

Exit codes: 0 success, 1 a rubric is invalid or a target did not pass, 2 usage or input
errors. No command prints a Python traceback for bad input; set RUBRICFLOW_DEBUG=1 to
see one for an internal error.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from rubricflow.errors import RubricflowError, RubricLoadError, RubricValidationError

__all__ = ["app", "main"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3

app = typer.Typer(
    name="rubricflow",
    help="Review machine-made content against versioned rubrics.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

out = Console(soft_wrap=True, highlight=False)
err = Console(stderr=True, soft_wrap=True, highlight=False)


def _fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    err.print(f"error: {escape(message)}")
    raise typer.Exit(code)


@contextmanager
def _user_errors() -> Iterator[None]:
    """Turn rubricflow errors into a message and exit code 2, never a traceback."""
    try:
        yield
    except RubricflowError as error:
        _fail(str(error))
    except BrokenPipeError:
        raise typer.Exit(EXIT_OK) from None
    except OSError as error:
        _fail(f"{error.filename or ''}: {error.strerror or error}".lstrip(": "))


def _plugins() -> Any:
    from rubricflow.plugins import create_plugin_manager

    with _user_errors():
        return create_plugin_manager()


@app.command()
def validate(
    paths: Annotated[list[Path], typer.Argument(help="Rubric files to check.", metavar="PATH")],
    format: Annotated[
        str | None,
        typer.Option(
            "--format", "-f", help="Read every file in this format instead of detecting it."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON report.")] = False,
) -> None:
    """Check rubric files: format, model rules, and the meta-rubric's structural checks.

    Exit 0 when every file is valid, 1 when any is invalid, 2 on usage errors.
    """

    plugins = _plugins()
    if format is not None and format not in plugins.formats:
        _fail(f"unknown format {format!r}; known formats: {', '.join(sorted(plugins.formats))}")
    reports = [_validate_one(path, format, plugins) for path in paths]
    if as_json:
        out.print_json(json.dumps({"files": [r.to_dict() for r in reports]}))
    else:
        for report in reports:
            _print_report(report)
        invalid = sum(not r.valid for r in reports)
        summary = f"{len(reports) - invalid} valid, {invalid} invalid"
        out.print(summary if len(reports) > 1 else "", end="\n" if len(reports) > 1 else "")
    raise typer.Exit(EXIT_FAILED if any(not r.valid for r in reports) else EXIT_OK)


def _validate_one(path: Path, format: str | None, plugins: Any) -> Any:
    """One file's report; an unexpected failure is reported for that file, not the run."""
    from rubricflow.errors import Problem
    from rubricflow.validation import FileReport, validate_file

    try:
        return validate_file(path, format=format, plugins=plugins)
    except Exception as error:
        if os.environ.get("RUBRICFLOW_DEBUG"):
            raise
        report = FileReport(str(path))
        report.errors.append(
            Problem(
                "",
                f"internal error while validating: {type(error).__name__}: {error} "
                "(please report it; set RUBRICFLOW_DEBUG=1 for a traceback)",
            )
        )
        return report


def _print_report(report: Any) -> None:
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


@app.command()
def convert(
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
) -> None:
    """Convert a rubric file from any supported format into the native format."""
    from rubricflow.formats.loader import load_file
    from rubricflow.formats.native import dump_rubrics

    if to != "native":
        _fail(f"cannot convert to {to!r}; the only target format is native")
    plugins = _plugins()
    try:
        loaded = load_file(path, format=format, plugins=plugins)
    except RubricValidationError as error:
        for problem in error.problems:
            where = f"{escape(problem.path)}: " if problem.path else ""
            err.print(f"{escape(str(path))}: {where}{escape(problem.message)}")
        raise typer.Exit(EXIT_FAILED) from None
    except RubricflowError as error:
        _fail(str(error))
    for warning in loaded.warnings:
        err.print(f"{escape(str(path))}: warning: {escape(str(warning))}")
    fmt = "json" if as_json or (output is not None and output.suffix.lower() == ".json") else "yaml"
    text = dump_rubrics(loaded.rubrics, fmt)
    if output is None:
        sys.stdout.write(text)
        return
    with _user_errors():
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf-8")
    err.print(f"wrote {len(loaded.rubrics)} rubric(s) to {escape(str(output))}")


def _pick_rubric(
    path: Path, format: str | None, rubric_id: str | None, plugins: Any
) -> tuple[Any, str]:
    from rubricflow.formats.loader import load_file

    with _user_errors():
        loaded = load_file(path, format=format, plugins=plugins)
    if rubric_id is not None:
        chosen = [r for r in loaded.rubrics if r.id == rubric_id]
        if not chosen:
            ids = ", ".join(r.id for r in loaded.rubrics)
            _fail(f"{path}: no rubric {rubric_id!r} in this file (it holds: {ids})")
        return chosen[0], loaded.format
    if len(loaded.rubrics) > 1:
        ids = ", ".join(r.id for r in loaded.rubrics)
        _fail(f"{path}: holds {len(loaded.rubrics)} rubrics ({ids}); pick one with --rubric-id")
    return loaded.rubrics[0], loaded.format


def _refuse_unregistered_imports(rubric: Any, plugins: Any, allow_import: bool) -> None:
    if allow_import:
        return
    for index, criterion in enumerate(rubric.criteria):
        name = criterion.scoring.function
        unregistered = name and ":" in name and name not in plugins.functions
        if criterion.scoring.method == "deterministic" and unregistered:
            _fail(
                f"criteria[{index}] ({criterion.id}) names code {name!r} that no plugin "
                "registered; rubric files are data, so rubricflow runs it only with "
                "--allow-import (or register the function in a plugin)"
            )


def _evaluation_line(evaluation: Any) -> dict[str, Any]:
    return {
        "target_id": evaluation.target_id,
        "rubric_id": evaluation.rubric_id,
        "rubric_version": evaluation.rubric_version,
        "verdict": evaluation.verdict,
        "passed": evaluation.passed,
        "score": evaluation.score,
        "scaled_score": evaluation.scaled_score,
        "raw_score": evaluation.raw_score,
        "coverage": evaluation.coverage,
        "feedback": evaluation.feedback,
        "usage": evaluation.usage(),
        **(
            {"llm_feedback": evaluation.metadata["llm_feedback"]}
            if "llm_feedback" in evaluation.metadata
            else {}
        ),
        "criteria": [
            {
                "id": r.criterion_id,
                "status": r.status,
                "verdict": r.verdict,
                "level": r.level,
                "score": r.score,
                "evidence": list(r.evidence),
                "notes": r.notes,
            }
            for r in evaluation.criteria
        ],
    }


def _print_evaluation(evaluation: Any, rubric: Any) -> None:
    from rubricflow.cli_store import _table

    colour = {"pass": "green", "fail": "red", "incomplete": "yellow"}[evaluation.verdict]
    out.print(
        f"[bold]{escape(evaluation.target_id or '(target)')}[/bold]: "
        f"[{colour}]{evaluation.verdict.upper()}[/{colour}] score {evaluation.score:.3f} "
        f"({evaluation.scaled_score:g} on {rubric.scale.min:g}..{rubric.scale.max:g}), "
        f"raw {evaluation.raw_score:g}, coverage {evaluation.coverage:.0%}"
    )
    table = _table("criterion", "weight", "status", "outcome", "score", "evidence / notes")
    for result in evaluation.criteria:
        outcome = result.level or result.verdict or ""
        if result.passed is False:
            outcome = f"[red]{escape(outcome or 'below bar')}[/red]"
        else:
            outcome = escape(outcome)
        # an unscored criterion's notes say why; a scored one's evidence says what was found
        detail = (
            result.notes or "; ".join(result.evidence)
            if not result.scored
            else "; ".join(result.evidence) or result.notes
        )
        table.add_row(
            escape(result.criterion_id) + (" *" if result.required else ""),
            f"{result.weight:g}",
            result.status,
            outcome,
            "" if result.score is None else f"{result.score:.2f}",
            escape(detail),
        )
    out.print(table)
    fix_at = evaluation.feedback.find("What to fix:")
    if fix_at < 0:
        fix_at = evaluation.feedback.find("Not scored")
    if fix_at >= 0:
        out.print(escape(evaluation.feedback[fix_at:].rstrip()))
    summary = evaluation.metadata.get("llm_feedback")
    if isinstance(summary, dict) and summary.get("source") == "llm":
        out.print(f"Feedback: {escape(str(summary.get('text', '')))}")
    if evaluation.llm_calls:
        from rubricflow.llm.cli import usage_text

        out.print(f"LLM: {escape(usage_text(evaluation.usage()))}")
    out.print()


async def _open_store(db: str, rubric: Any, source_format: str | None) -> Any:
    """The store at `db`, with `rubric` registered (the same content again is a no-op)."""
    from rubricflow.store import Store

    store = await Store.open(db)
    try:
        await store.rubrics.register(rubric, source_format=source_format)
    except BaseException:
        await store.close()
        raise
    return store


@app.command()
def schema() -> None:
    """Print the JSON Schema of the native rubric format."""
    from rubricflow.schema import rubric_json_schema

    sys.stdout.write(json.dumps(rubric_json_schema(), indent=2) + "\n")


@app.command()
def plugins(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List installed plugins and the scorers, check functions, formats and providers each adds."""
    registry = _plugins()
    infos = registry.plugins()
    if as_json:
        out.print_json(json.dumps({"plugins": [info.to_dict() for info in infos]}))
        return
    for info in infos:
        origin = " ".join(p for p in (info.distribution, info.version) if p)
        out.print(escape(info.name) + (f" ({escape(origin)})" if origin else ""))
        for label in ("scorers", "functions", "formats", "providers"):
            if names := getattr(info, label):
                out.print(f"  {label}: {escape(', '.join(names))}")


def _add_store_commands() -> None:
    from rubricflow.cli_store import db_app, evaluations_app, rubrics_app

    app.add_typer(rubrics_app, name="rubrics")
    app.add_typer(evaluations_app, name="evaluations")
    app.add_typer(db_app, name="db")

    from rubricflow.cli_runs import runs_app

    app.add_typer(runs_app, name="runs")

    from rubricflow.cli_review import artifacts_app, types_app, worker_command

    app.add_typer(types_app, name="types")
    app.add_typer(artifacts_app, name="artifacts")
    app.command("worker")(worker_command)


def _add_eval_command() -> None:
    from rubricflow.cli_eval import eval_command

    app.command("eval")(eval_command)


def _add_llm_commands() -> None:
    from rubricflow.llm.cli import llm_app

    app.add_typer(llm_app, name="llm")


_add_eval_command()
_add_llm_commands()


_add_store_commands()


def _add_report_commands() -> None:
    from rubricflow.cli_report import add_report_commands

    add_report_commands(app)


_add_report_commands()


def _add_calibrate_command() -> None:
    from rubricflow.cli_calibrate import add_calibrate_command

    add_calibrate_command(app)


_add_calibrate_command()


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: run the app, never leaking a traceback for user errors."""
    try:
        app(args=argv, prog_name="rubricflow")
    except (RubricValidationError, RubricLoadError, RubricflowError) as error:
        err.print(f"error: {escape(str(error))}")
        sys.exit(EXIT_USAGE)
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)
    except Exception as error:
        if os.environ.get("RUBRICFLOW_DEBUG"):
            raise
        err.print(
            f"internal error: {escape(type(error).__name__)}: {escape(str(error))} "
            "(set RUBRICFLOW_DEBUG=1 for a traceback and please report it)"
        )
        sys.exit(EXIT_INTERNAL)
