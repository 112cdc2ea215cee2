"""`rubricflow generate` (draft a rubric with the judge, one or one per dataset row) and
`rubricflow migrate` (upgrade an old rubric file to the current native format)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from rubricflow.cli.shared import (
    EXIT_FAILED,
    JsonOption,
    LLMOption,
    NoCacheOption,
    err,
    fail,
    out,
    plugin_manager,
    run_async,
    usage_text,
    user_errors,
)
from rubricflow.errors import RubricflowError, RubricValidationError

if TYPE_CHECKING:
    from rubricflow.generation import GeneratedRubric

__all__ = ["generate_command", "migrate_command"]


def _read(value: str | None, what: str) -> str | None:
    """`value` as given, or the text of the file it names with `@FILE`."""
    if value is None or not value.startswith("@"):
        return value
    path = Path(value[1:])
    try:
        return path.read_text(encoding="utf-8")
    except OSError as error:
        fail(f"{what} file {path}: {error.strerror or error}")


def _write(path: Path, text: str) -> None:
    with user_errors():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _print_lint(draft: GeneratedRubric) -> None:
    if draft.revised:
        err.print(f"first draft: {len(draft.first_findings)} lint finding(s), fed back once:")
        for finding in draft.first_findings:
            err.print(f"  - {escape(finding)}")
    meta = draft.meta
    verdict = "pass" if meta.passed else "FAIL"
    err.print(f"lint: meta-rubric {meta.score:.2f} {verdict}; {len(draft.findings)} finding(s)")
    for finding in draft.findings:
        err.print(f"  - {escape(finding)}")


def _criteria_range(text: str) -> tuple[int, int]:
    """`--criteria 7-20` (or one number) as (min, max); anything else is a usage error."""
    low, _, high = text.partition("-")
    try:
        bounds = (int(low), int(high or low))
    except ValueError:
        bounds = (0, -1)
    if not 1 <= bounds[0] <= bounds[1]:
        fail(f"--criteria {text!r} is not a range: give MIN-MAX with 1 <= MIN <= MAX, e.g. 7-20")
    return bounds


def generate_command(
    task: Annotated[
        str | None,
        typer.Option(
            "--task", "-t", metavar="TEXT|@FILE", help="The task description (or @FILE to read it)."
        ),
    ] = None,
    reference: Annotated[
        str | None,
        typer.Option(
            "--reference",
            "-r",
            metavar="TEXT|@FILE",
            help="A reference answer (or @FILE to read it).",
        ),
    ] = None,
    example: Annotated[
        list[str] | None,
        typer.Option(
            "--example",
            "-e",
            metavar="TEXT|@FILE",
            help="An example output (or @FILE); repeatable.",
        ),
    ] = None,
    dataset: Annotated[
        Path | None,
        typer.Option(
            "--dataset",
            help="JSONL rows (prompt/task/question, reference, examples, id): one rubric per "
            "row into -o (JSONL), resuming where an earlier run stopped.",
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", help="Write the draft here (nothing is written without -o)."
        ),
    ] = None,
    rubric_id: Annotated[
        str | None,
        typer.Option("--id", metavar="ID", help="The draft's rubric id (default: the judge's)."),
    ] = None,
    no_revise: Annotated[
        bool, typer.Option("--no-revise", help="Do not feed the lint back for a revision.")
    ] = False,
    criteria: Annotated[
        str,
        typer.Option(
            "--criteria",
            metavar="MIN-MAX",
            help="How many criteria to ask for; a draft outside the range has a finding.",
        ),
    ] = "7-20",
    concurrency: Annotated[
        int, typer.Option("--concurrency", "-c", min=1, help="Rows drafted at once (--dataset).")
    ] = 4,
    llm: LLMOption = None,
    no_cache: NoCacheOption = False,
    as_json: JsonOption = False,
) -> None:
    """Draft a rubric with the LLM judge from a task, a reference answer or example outputs.

    The judge answers in a JSON schema; the draft is validated as a rubric, linted by the
    meta-rubric, and the findings are fed back for one revision. The draft and its lint
    are printed; the rubric is written only where -o says. Exit 1 when the final draft
    still has lint findings."""
    from rubricflow.generation import generate_batch, generate_rubric

    cache = None if no_cache else "default"
    wanted = _criteria_range(criteria)
    if dataset is not None:
        if output is None:
            fail("--dataset needs -o FILE.jsonl: where the rubrics (one per row) go")
        if task or reference or example:
            fail(
                "--dataset reads each row's prompt and reference; drop --task/--reference/--example"
            )

        def shown(result: dict[str, object]) -> None:
            state = f"error: {result['error']}" if "error" in result else "ok"
            err.print(f"row {result['row']}: {escape(state)}")

        summary = run_async(
            generate_batch(
                dataset,
                output,
                judge=llm,
                concurrency=concurrency,
                revise=not no_revise,
                criteria=wanted,
                cache=cache,
                progress=shown,
            )
        )
        line = (
            f"{summary.generated} generated, {summary.skipped} already done, "
            f"{summary.failed} failed of {summary.rows} rows; {summary.llm_calls} LLM calls, "
            f"{summary.cache_hits} cache hits; wrote {output}"
        )
        if as_json:
            out.print_json(json.dumps(summary.__dict__))
        else:
            err.print(escape(line))
        if summary.failed:
            raise typer.Exit(EXIT_FAILED)
        return
    draft = run_async(
        generate_rubric(
            task=_read(task, "--task"),
            reference=_read(reference, "--reference"),
            examples=[_read(e, "--example") or "" for e in example or []],
            judge=llm,
            rubric_id=rubric_id,
            revise=not no_revise,
            criteria=wanted,
            cache=cache,
        )
    )
    fmt = "json" if output is not None and output.suffix.lower() == ".json" else "yaml"
    if as_json:
        out.print_json(json.dumps(draft.to_dict()))
    else:
        sys.stdout.write(draft.text(fmt))
        _print_lint(draft)
        err.print(usage_text(draft.to_dict()["usage"]))
    if output is not None:
        _write(output, draft.text(fmt))
        err.print(f"wrote the draft to {escape(str(output))}; review it before you use it")
    else:
        err.print("not written (pass -o FILE to write the draft)")
    if not draft.clean:
        raise typer.Exit(EXIT_FAILED)


def migrate_command(
    path: Annotated[Path, typer.Argument(help="An old rubric file (OpenRubricRL, native, ...).")],
    to: Annotated[
        str, typer.Option("--to", help="Target: native or native@VERSION (the current: 1).")
    ] = "native",
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write the upgraded rubric here (else only report)."),
    ] = None,
    format: Annotated[
        str | None, typer.Option("--format", "-f", help="Source format (default: detect).")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Upgrade an old rubric file to the current native format and print what changed.

    OpenRubricRL documents a `migrate` command it never shipped; this is it, for its files
    and every other format rubricflow reads. The upgraded rubric is written only with -o."""
    from rubricflow.generation import migrate_file

    try:
        migration = migrate_file(path, format=format, to=to, plugins=plugin_manager())
    except RubricValidationError as error:
        for problem in error.problems:
            where = f"{escape(problem.path)}: " if problem.path else ""
            err.print(f"{escape(str(path))}: {where}{escape(problem.message)}")
        raise typer.Exit(EXIT_FAILED) from None
    except RubricflowError as error:
        fail(str(error))
    for warning in migration.warnings:
        err.print(f"{escape(str(path))}: warning: {escape(str(warning))}")
    if as_json:
        out.print_json(json.dumps(migration.to_dict()))
    else:
        head = f"{path}: {migration.source_format} -> {migration.to_dict()['target']}"
        out.print(escape(head))
        if not migration.changes:
            out.print("  already current: nothing changes")
        for change in migration.changes:
            out.print(f"  {escape(change)}")
    if output is None:
        err.print("not written (pass -o FILE to write the upgraded rubric)")
        return
    fmt = "json" if output.suffix.lower() == ".json" else "yaml"
    _write(output, migration.text(fmt))
    err.print(f"wrote {len(migration.rubrics)} rubric(s) to {escape(str(output))}")
