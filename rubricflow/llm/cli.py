"""CLI pieces for LLM judges: `rubricflow llm check SPEC`, `rubricflow llm cache`, and
the helpers `rubricflow eval` uses for `--llm`, `--no-cache`, `--samples` and usage."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from rubricflow.errors import RubricflowError

__all__ = ["eval_session", "llm_app", "needs_judge", "usage_text"]

out = Console(soft_wrap=True, highlight=False)
err = Console(stderr=True, soft_wrap=True, highlight=False)

llm_app = typer.Typer(
    help="Check LLM judges and manage the judge answer cache.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def _fail(message: str, code: int = 2) -> None:
    err.print(f"error: {escape(message)}")
    raise typer.Exit(code)


def needs_judge(rubric: Any, plugins: Any) -> list[str]:
    """Ids of the criteria an LLM judge scores."""
    from rubricflow.engine.executor import resolve_method
    from rubricflow.scorers.llm import LLM_SCORER_NAMES

    return [
        c.id
        for c in rubric.criteria
        if resolve_method(c) in LLM_SCORER_NAMES and resolve_method(c) in plugins.scorers
    ]


def eval_session(
    rubric: Any,
    plugins: Any,
    spec: str | None,
    *,
    allow_import: bool,
    no_cache: bool,
    feedback: bool,
) -> Any:
    """The judge session for `rubricflow eval`; exits 2 with a clear message when the
    rubric needs a judge (or --llm names one) that cannot be set up."""
    from rubricflow.llm.session import LLMSession

    session = LLMSession(
        spec,
        plugins=plugins,
        allow_import=allow_import,
        cache=None if no_cache else "default",
    )
    judged = needs_judge(rubric, plugins)
    if spec is not None or judged or feedback:
        try:
            session.provider_now()
        except RubricflowError as error:
            if judged:
                shown = ", ".join(judged[:5]) + (" ..." if len(judged) > 5 else "")
                _fail(f"criteria {shown} are judged by an LLM: {error}")
            _fail(str(error))
    return session


def usage_text(usage: dict[str, Any]) -> str:
    """`3 LLM calls (2 cached), 1,234 input + 56 output tokens, cost 0.0012`."""
    calls, hits = usage.get("llm_calls", 0), usage.get("cache_hits", 0)
    text = f"{calls} LLM call{'s' * (calls != 1)}"
    if hits:
        text += f" ({hits} answered from the cache)"
    tokens_in, tokens_out = usage.get("input_tokens", 0), usage.get("output_tokens", 0)
    text += f", {tokens_in:,} input + {tokens_out:,} output tokens"
    if usage.get("cost") is not None:
        text += f", cost {usage['cost']:.4g}"
    return text


def add_usage(total: dict[str, Any], usage: dict[str, Any]) -> None:
    for key in ("llm_calls", "cache_hits", "input_tokens", "output_tokens"):
        total[key] = total.get(key, 0) + (usage.get(key) or 0)
    if usage.get("cost") is not None:
        total["cost"] = (total.get("cost") or 0.0) + usage["cost"]
    else:
        total.setdefault("cost", None)


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
    output works. Exit 0 when the judge gave a schema-valid answer, 1 when it did not,
    2 when the spec cannot be used."""
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
        _fail(str(error))
        return

    async def run() -> Any:
        try:
            return await check_provider(provider)
        finally:
            await provider.aclose()

    report = asyncio.run(run())
    if as_json:
        out.print_json(json.dumps(report.to_dict(), ensure_ascii=False))
    else:
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
    raise typer.Exit(0 if report.ok else 1)


@llm_app.command("cache")
def cache(
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
    them, the `judge_cache` table of a store, which `rubricflow eval --db URL` uses."""
    if db is not None or use_store:
        _store_cache(db, clear=clear, as_json=as_json)
        return
    from rubricflow.llm.cache import default_cache

    store = default_cache()

    try:
        stats = asyncio.run(_cleared_stats(store, clear=clear))
    except Exception as error:
        _fail(f"{store.path}: {error}")
        return
    finally:
        store.close()
    summary = f"{escape(stats['path'])}: {stats['entries']} answer(s), {stats['bytes']:,} bytes"
    if _show_cache_stats(stats, summary, as_json=as_json):
        _hint_at_the_store()


async def _cleared_stats(cache: Any, *, clear: bool) -> dict[str, Any]:
    """A judge cache's stats (either cache: `clear()` and `stats()`), after clearing it
    when asked, with how many answers were `removed`."""
    removed = await cache.clear() if clear else None
    stats: dict[str, Any] = await cache.stats()
    if removed is not None:
        stats["removed"] = removed
    return stats


def _hint_at_the_store() -> None:
    """$RUBRICFLOW_DB names a store whose cache `eval --db` fills: say how to see it."""
    import os

    from rubricflow.store.url import DB_ENV

    if os.environ.get(DB_ENV):
        err.print(
            f"note: this is the local cache file; the judge cache of the store in ${DB_ENV} "
            "(used by `rubricflow eval --db` and by reviews) is shown by "
            "`rubricflow llm cache --store`"
        )


def _store_cache(db: str | None, *, clear: bool, as_json: bool) -> None:
    """`llm cache --db URL` / `--store`: the store's judge cache, shown or cleared."""
    from rubricflow.store import Store

    async def run() -> dict[str, Any]:
        store = await Store.open(_existing_store_url(db))
        try:
            return await _cleared_stats(store.judge_cache, clear=clear)
        finally:
            await store.close()

    try:
        stats = asyncio.run(run())
    except RubricflowError as error:
        _fail(str(error))
        return
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


def _existing_store_url(db: str | None) -> str:
    """The store URL (`db`, else $RUBRICFLOW_DB, else ./rubricflow.db). A SQLite file that
    does not exist is an error: looking at a cache must not create an empty store."""
    import os
    from pathlib import Path

    from sqlalchemy.engine import make_url

    from rubricflow.errors import NotFoundError
    from rubricflow.store.url import DB_ENV, resolve_url

    url = resolve_url(db)
    parsed = make_url(url)
    file = parsed.database or ""
    if (
        parsed.get_backend_name() == "sqlite"
        and file not in ("", ":memory:")
        and not Path(file).exists()
    ):
        source = "--db" if db else f"${DB_ENV}" if os.environ.get(DB_ENV) else "the default"
        raise NotFoundError(
            f"no store at {file} ({source}): give the database `rubricflow eval --db URL` "
            f"stores to with --db URL (or set {DB_ENV})"
        )
    return url
