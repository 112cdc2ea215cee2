"""The `rubricflow` command line: parse input, print results, set exit codes.

Exit codes: 0 success, 1 a rubric is invalid or a target did not pass, 2 usage or input
errors. No command prints a Python traceback for bad input; set RUBRICFLOW_DEBUG=1 to
see one for an internal error.
"""

from __future__ import annotations

import os
import sys

import typer
from rich.markup import escape

from rubricflow.cli import (
    artifacts,
    calibrate,
    db,
    eval,
    evaluations,
    llm,
    report,
    rubric_files,
    rubrics,
    runs,
    types,
    worker,
)
from rubricflow.cli.shared import EXIT_INTERNAL, EXIT_USAGE, err
from rubricflow.errors import RubricflowError

__all__ = ["EXIT_INTERNAL", "app", "main"]

app = typer.Typer(
    name="rubricflow",
    help="Review machine-made content against versioned rubrics.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

# the order commands are listed in `--help` and docs/cli.md
app.command("validate")(rubric_files.validate_command)
app.command("convert")(rubric_files.convert_command)
app.command("schema")(rubric_files.schema_command)
app.command("plugins")(rubric_files.plugins_command)
app.command("eval")(eval.eval_command)
app.add_typer(llm.llm_app, name="llm")
app.add_typer(rubrics.rubrics_app, name="rubrics")
app.add_typer(evaluations.evaluations_app, name="evaluations")
app.add_typer(db.db_app, name="db")
app.add_typer(runs.runs_app, name="runs")
app.add_typer(types.types_app, name="types")
app.add_typer(artifacts.artifacts_app, name="artifacts")
app.command("worker")(worker.worker_command)
app.command("report")(report.report_command)
app.command("compare")(report.compare_command)
app.command("calibrate")(calibrate.calibrate_command)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: run the app, never leaking a traceback for user errors."""
    try:
        app(args=argv, prog_name="rubricflow")
    except RubricflowError as error:
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
