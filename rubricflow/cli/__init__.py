"""The `rubricflow` command line: parse input, print results, set exit codes.

Exit codes: 0 success, 1 a rubric is invalid or a target did not pass, 2 usage or input
errors. No command prints a Python traceback for bad input; set RUBRICFLOW_DEBUG=1 to
see one for an internal error.
"""

from __future__ import annotations

import os
import sys
from importlib import metadata
from typing import Annotated, Any, TextIO

import typer
from rich.markup import escape

from rubricflow.cli import (
    artifacts,
    calibrate,
    db,
    eval,
    evaluations,
    generate,
    llm,
    mcp,
    report,
    rubric_files,
    rubrics,
    runs,
    serve,
    tokens,
    types,
    webhooks,
    worker,
)
from rubricflow.cli.shared import EXIT_INTERNAL, EXIT_USAGE, FullHelpGroup, err, out
from rubricflow.errors import RubricflowError
from rubricflow.settings import Settings, current, use

__all__ = ["EXIT_INTERNAL", "app", "main"]


app = typer.Typer(
    name="rubricflow",
    help="Review machine-made content against versioned rubrics.",
    cls=FullHelpGroup,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _print_version(value: bool) -> None:
    if value:
        out.print(f"rubricflow {metadata.version('rubricflow')}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print rubricflow's version and exit.",
        ),
    ] = False,
) -> None:
    """Review machine-made content against versioned rubrics."""
    # the settings, read from the environment once for the command and bound for it
    ctx.obj = ctx.with_resource(use(Settings.from_environment()))


# the order commands are listed in `--help` and docs/cli.md
app.command("validate")(rubric_files.validate_command)
app.command("convert")(rubric_files.convert_command)
app.command("migrate")(generate.migrate_command)
app.command("schema")(rubric_files.schema_command)
app.command("plugins")(rubric_files.plugins_command)
app.command("eval")(eval.eval_command)
app.command("generate")(generate.generate_command)
app.add_typer(llm.llm_app, name="llm", cls=FullHelpGroup)
app.add_typer(rubrics.rubrics_app, name="rubrics", cls=FullHelpGroup)
app.add_typer(evaluations.evaluations_app, name="evaluations", cls=FullHelpGroup)
app.add_typer(db.db_app, name="db", cls=FullHelpGroup)
app.add_typer(runs.runs_app, name="runs", cls=FullHelpGroup)
app.add_typer(types.types_app, name="types", cls=FullHelpGroup)
app.add_typer(artifacts.artifacts_app, name="artifacts", cls=FullHelpGroup)
app.command("worker")(worker.worker_command)
app.add_typer(webhooks.webhooks_app, name="webhooks", cls=FullHelpGroup)
app.command("report")(report.report_command)
app.command("compare")(report.compare_command)
app.command("calibrate")(calibrate.calibrate_command)
app.command("serve")(serve.serve_command)
app.command("mcp")(mcp.mcp_command)
app.add_typer(tokens.tokens_app, name="tokens", cls=FullHelpGroup)


class _ClosedPipeSafe:
    """Standard output that outlives its reader: once a write meets a closed pipe
    (`rubricflow ... | head -2`), the rest goes to /dev/null, so the command still ends
    with the exit code its outcome decides rather than click's 1 for a broken pipe."""

    #: whether the reader has gone: a command that streams (`eval`) stops working then
    reader_gone = False

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def _divert(self) -> None:
        self.reader_gone = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, self._stream.fileno())
        finally:
            os.close(devnull)

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._divert()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._divert()
            self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _debug() -> bool:
    """Whether RUBRICFLOW_DEBUG asks for tracebacks (no: when it cannot be read)."""
    try:
        return current().debug
    except RubricflowError:
        return False


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: run the app, never leaking a traceback for user errors."""
    if not isinstance(sys.stdout, _ClosedPipeSafe):
        sys.stdout = _ClosedPipeSafe(sys.stdout)
    try:
        app(args=argv, prog_name="rubricflow")
    except RubricflowError as error:
        err.print(f"error: {escape(str(error))}")
        sys.exit(EXIT_USAGE)
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)
    except Exception as error:
        if _debug():
            raise
        err.print(
            f"internal error: {escape(type(error).__name__)}: {escape(str(error))} "
            "(set RUBRICFLOW_DEBUG=1 for a traceback and please report it)"
        )
        sys.exit(EXIT_INTERNAL)
