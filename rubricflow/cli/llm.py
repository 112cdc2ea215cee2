"""`rubricflow llm check SPEC` and `rubricflow llm cache`: check an LLM judge, and show
or clear the judge answer cache (the local file, or a store's)."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from rubricflow.cli.shared import FullHelpGroup, err, fail, out, run_with_app
from rubricflow.errors import RubricflowError
from rubricflow.settings import current

if TYPE_CHECKING:
    from rubricflow.llm.check import CheckReport

__all__ = ["llm_app"]

llm_app = typer.Typer(
    help="Check LLM judges and manage the judge answer cache.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@llm_app.command("check")
def check(
    spec: Annotated[
        str | None,
        typer.Argument(
            help="Provider spec, e.g. openai:gpt-4o-mini, openai:MODEL@http://127.0.0.1:8000/v1, "
            "anthropic:MODEL, ollama:MODEL, local (default: $RUBRICFLOW_LLM).",
            metavar="SPEC",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON report.")] = False,
    allow_import: Annotated[
        bool, typer.Option("--allow-import", help="Allow a python:module:function spec.")
    ] = False,
    timeout: Annotated[
        float, typer.Option("--timeout", min=0.1, help="Seconds to wait for the answer.")
    ] = 60.0,
) -> None:
    """Send one tiny request and report the model, the latency and whether structured
    output works (for a panel, `panel:POLICY(A | B)`, to each of its judges). Exit 0 when
    the judge gave a schema-valid answer, 1 when it did not, 2 when the spec cannot be
    used."""
    from rubricflow.llm.panel import as_panel

    try:
        panel = as_panel(spec if spec is not None else current().llm)
    except RubricflowError as error:
        fail(str(error))
    specs = [str(judge) for judge in panel.judges] if panel is not None else [spec]
    reports = [_check_one(one, allow_import=allow_import, timeout=timeout) for one in specs]
    if as_json:
        shown: Any = [r.to_dict() for r in reports] if panel is not None else reports[0].to_dict()
        out.print_json(json.dumps(shown, ensure_ascii=False))
    else:
        for report in reports:
            _print_report(report)
    raise typer.Exit(0 if all(report.ok for report in reports) else 1)


def _check_one(spec: str | None, *, allow_import: bool, timeout: float) -> CheckReport:
    from rubricflow.llm.check import check_provider
    from rubricflow.llm.specs import create_provider
    from rubricflow.plugins import create_plugin_manager

    try:
        plugins = create_plugin_manager()
        provider = create_provider(
            spec,
            plugins=plugins,
            allow_import=allow_import,
            settings={"timeout": timeout, "deadline": timeout},
        )
    except RubricflowError as error:
        fail(str(error))

    async def run() -> CheckReport:
        try:
            return await check_provider(provider)
        finally:
            await provider.aclose()

    return asyncio.run(run())


def _print_report(report: CheckReport) -> None:
    status = "[green]ok[/green]" if report.ok else "[red]FAILED[/red]"
    out.print(f"{status} {escape(report.provider)}")
    out.print(f"  model: {escape(report.model or '(unknown)')}")
    if report.latency_ms is not None:
        out.print(f"  latency: {report.latency_ms:.0f} ms")
    out.print(f"  structured output: {escape(report.structured_output)}")
    out.print(
        f"  schema-valid answer: {'yes' if report.schema_valid else 'no'}"
        + (f" (verdict {report.verdict})" if report.verdict else "")
    )
    if report.input_tokens is not None or report.output_tokens is not None:
        out.print(f"  tokens: {report.input_tokens or 0} in, {report.output_tokens or 0} out")
    if report.error:
        out.print(f"  error: {escape(report.error)}")
    for note in report.notes:
        out.print(f"  note: {escape(note)}")


cache_app = typer.Typer(rich_markup_mode=None)  # its help is the callback's docstring
llm_app.add_typer(cache_app, name="cache", cls=FullHelpGroup)


@cache_app.callback(invoke_without_command=True)
def cache(
    ctx: typer.Context,
    clear: Annotated[bool, typer.Option("--clear", help="Remove every cached answer.")] = False,
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            metavar="URL",
            help="Use the judge cache in this store (URL or SQLite file): the one "
            "`rubricflow eval --db URL` uses, instead of the local file.",
        ),
    ] = None,
    use_store: Annotated[
        bool,
        typer.Option(
            "--store",
            help="Use the judge cache in the store at $RUBRICFLOW_DB, else ./rubricflow.db "
            "(implied by --db).",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Show where the judge answer cache is and how big it is (or clear it).

    Without --db or --store this is the local cache file `rubricflow eval` uses; with
    them, the `judge_cache` table of a store, which `rubricflow eval --db URL` uses.
    `export FILE` and `import FILE` write and read a recorded-answers file (for
    `pytest --rubric-replay`)."""
    if ctx.invoked_subcommand is not None:
        return
    if db is not None or use_store:
        _store_cache(db, clear=clear, as_json=as_json)
        return
    from rubricflow.llm.cache import cleared_stats, default_cache

    store = default_cache()

    try:
        stats = asyncio.run(cleared_stats(store, clear=clear))
    except Exception as error:
        fail(f"{store.path}: {error}")
    finally:
        store.close()
    summary = f"{escape(stats['path'])}: {stats['entries']} answer(s), {stats['bytes']:,} bytes"
    if _show_cache_stats(stats, summary, as_json=as_json):
        _hint_at_the_store()


def _hint_at_the_store() -> None:
    """$RUBRICFLOW_DB names a store whose cache `eval --db` fills: say how to see it."""
    from rubricflow.settings import env_name

    if current().db:
        err.print(
            f"note: this is the local cache file; the judge cache of the store in "
            f"${env_name('db')} "
            "(used by `rubricflow eval --db` and by reviews) is shown by "
            "`rubricflow llm cache --store`"
        )


def _store_cache(db: str | None, *, clear: bool, as_json: bool) -> None:
    """`llm cache --db URL` / `--store`: the store's judge cache, shown or cleared."""
    stats = run_with_app(db, lambda app: app.judge_cache_stats(clear=clear), existing=True)
    _show_cache_stats(
        stats,
        f"judge cache in {escape(stats['db'])}: {stats['entries']} answer(s), "
        f"{stats['chars']:,} characters, served {stats['hits']:,} time(s)",
        as_json=as_json,
    )


def _show_cache_stats(stats: dict[str, Any], summary: str, *, as_json: bool) -> bool:
    """Print a cache's stats (and how many answers `--clear` removed) as JSON or as the
    one-line `summary`; True when printed for a person."""
    if as_json:
        out.print_json(json.dumps(stats))
        return False
    if "removed" in stats:
        out.print(f"removed {stats['removed']} cached answer(s)")
    out.print(summary)
    return True


_DB_OPTION = typer.Option(
    "--db",
    metavar="URL",
    help="Use the judge cache in this store (URL or SQLite file) instead of the local file.",
)
_STORE_OPTION = typer.Option(
    "--store", help="Use the judge cache in the store at $RUBRICFLOW_DB, else ./rubricflow.db."
)


def _cache_entries(db: str | None, use_store: bool) -> list[tuple[str, str]]:
    """Every (key, value) of the local cache file, or of a store's cache."""
    if db is not None or use_store:
        entries: list[tuple[str, str]] = run_with_app(
            db, lambda app: app.judge_cache_entries(), existing=True
        )
        return entries
    from rubricflow.llm.cache import default_cache

    local = default_cache()
    try:
        return asyncio.run(local.entries())
    except Exception as error:
        fail(f"{local.path}: {error}")
    finally:
        local.close()


@cache_app.command("export")
def export(
    file: Annotated[
        str, typer.Argument(metavar="FILE", help="The recorded-answers file to write (JSON Lines).")
    ],
    rubric: Annotated[
        list[str] | None,
        typer.Option(
            "--rubric",
            metavar="ID",
            help="Only the answers about this rubric id (repeatable); default: every answer.",
        ),
    ] = None,
    db: Annotated[str | None, _DB_OPTION] = None,
    use_store: Annotated[bool, _STORE_OPTION] = False,
) -> None:
    """Write the cached judge answers to FILE: a versioned, sorted recorded-answers file
    to commit, so `pytest --rubric-replay FILE` (or `llm cache import FILE` then `eval`)
    gives the same verdicts offline with no key. One line per judge call, keyed as the
    cache keys it, with the rubric, criteria, target and prompt template it answered."""
    from rubricflow.llm.replay import recorded_answer, write_answers

    answers = [
        a for key, value in _cache_entries(db, use_store) if (a := recorded_answer(key, value))
    ]
    if rubric:
        wanted = set(rubric)
        answers = [a for a in answers if (a.about.get("rubric") or {}).get("id") in wanted]
    try:
        count = write_answers(file, answers)
    except RubricflowError as error:
        fail(str(error))
    unnamed = sum(1 for a in answers if not a.about)
    out.print(f"wrote {count} judge answer(s) to {escape(file)}")
    if unnamed:
        err.print(
            f"note: {unnamed} answer(s) were cached before answers recorded what they are "
            "about; they replay, but a miss cannot name their case"
        )


@cache_app.command("import")
def import_(
    file: Annotated[
        str, typer.Argument(metavar="FILE", help="A recorded-answers file (from `export`).")
    ],
    db: Annotated[str | None, _DB_OPTION] = None,
    use_store: Annotated[bool, _STORE_OPTION] = False,
) -> None:
    """Add the answers recorded in FILE to the judge cache (the local file, or a
    store's), so `rubricflow eval` and reviews are served from them."""
    from rubricflow.llm.replay import read_answers

    try:
        answers = read_answers(file)
    except RubricflowError as error:
        fail(str(error))
    entries = [(a.key, a.cache_value()) for a in answers]
    if db is not None or use_store:
        run_with_app(db, lambda app: app.judge_cache_add(entries), existing=True)
        where = "the store's judge cache"
    else:
        from rubricflow.llm.cache import default_cache

        local = default_cache()

        async def put_all() -> None:
            await asyncio.gather(*(local.put(key, value) for key, value in entries))

        try:
            asyncio.run(put_all())
        except Exception as error:
            fail(f"{local.path}: {error}")
        finally:
            local.close()
        where = str(local.path)
    out.print(f"imported {len(entries)} judge answer(s) into {escape(where)}")


@llm_app.command("usage")
def usage(
    db: Annotated[
        str | None,
        typer.Option("--db", help="The store (URL or SQLite file) whose call ledger to read."),
    ] = None,
    by: Annotated[
        str,
        typer.Option("--by", help="Group the spend per run, artifact type or day (UTC)."),
    ] = "run",
    since: Annotated[
        str | None, typer.Option("--since", help="Evaluations from this date or time (ISO).")
    ] = None,
    until: Annotated[
        str | None, typer.Option("--until", help="Evaluations before this date or time (ISO).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Show judge spend: calls, cache hits, tokens and cost per run, type or day."""
    from dataclasses import asdict

    from rubricflow.cli.evaluations import _parse_time

    if by not in ("run", "type", "day"):
        fail(f"--by {by!r}: use run, type or day")
    try:
        start, end = _parse_time(since, "--since"), _parse_time(until, "--until")
    except RubricflowError as error:
        fail(str(error))
    rows = run_with_app(
        db,
        lambda app: app.evaluations.spend(by, since=start, until=end),
        existing=True,
    )
    if as_json:
        out.print_json(json.dumps([asdict(row) for row in rows]))
        return
    if not rows:
        out.print("no judge calls stored")
        return
    from rubricflow.cli.shared import table

    grid = table(by, "calls", "cache hits", "input tokens", "output tokens", "cost")
    for row in rows:
        grid.add_row(
            escape(row.key or "(none)"),
            f"{row.calls:,}",
            f"{row.cache_hits:,}",
            f"{row.input_tokens:,}",
            f"{row.output_tokens:,}",
            "" if row.cost is None else f"{row.cost:.4g}",
        )
    out.print(grid)
