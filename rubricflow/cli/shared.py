"""What every command shares: the consoles, exit codes, error printing, opening the
store, and the options several commands take (one definition, one help text)."""

from __future__ import annotations

import asyncio
import getpass
import json
import re
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from typer.core import TyperGroup

from rubricflow.errors import RubricflowError
from rubricflow.settings import current

if TYPE_CHECKING:
    from rubricflow.application import Application, ArtifactsAPI
    from rubricflow.client import AsyncClient
    from rubricflow.core import Core
    from rubricflow.llm.session import LLMSession
    from rubricflow.model import Rubric
    from rubricflow.plugins import PluginRegistry

__all__ = [
    "EXIT_FAILED",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "MAX_LIMIT",
    "MAX_OFFSET",
    "ActorOption",
    "AllowImportOption",
    "ConcurrencyOption",
    "DbOption",
    "FormatOption",
    "FullHelpGroup",
    "JsonOption",
    "LLMOption",
    "NoCacheOption",
    "RubricIdOption",
    "SamplesOption",
    "ServerOption",
    "TokenOption",
    "actor_default",
    "err",
    "fail",
    "first_sentence",
    "judge_session",
    "needs_judge",
    "out",
    "pick_rubric",
    "plugin_manager",
    "print_json",
    "read_content",
    "refuse_actor",
    "refuse_server",
    "refuse_unregistered_imports",
    "run_api",
    "run_async",
    "run_on",
    "run_with_app",
    "store_less_core",
    "table",
    "usage_text",
    "user_errors",
]

T = TypeVar("T")

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
EXIT_INTERRUPTED = 130

#: bounds of `--limit` and `--offset`: a page bigger than this is not a page, and an
#: offset must fit the databases' 64-bit integers
MAX_LIMIT = 100_000
MAX_OFFSET = 2**62

#: standard output (results) and standard error (messages, progress), for every command
out = Console(soft_wrap=True, highlight=False)
err = Console(stderr=True, soft_wrap=True, highlight=False)


# --- errors ----------------------------------------------------------------------------------
def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    """Print `error: message` on stderr and exit with `code` (a usage error by default)."""
    err.print(f"error: {escape(message)}")
    raise typer.Exit(code)


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn rubricflow errors into a message and exit code 2, never a traceback."""
    try:
        yield
    except RubricflowError as error:
        fail(str(error))
    except BrokenPipeError:
        raise typer.Exit(EXIT_OK) from None
    except OSError as error:
        fail(f"{error.filename or ''}: {error.strerror or error}".lstrip(": "))


def run_async(work: Coroutine[Any, Any, T]) -> T:
    """Run `work`; rubricflow errors become a message and exit 2, never a traceback."""
    with user_errors():
        return asyncio.run(work)
    raise AssertionError("unreachable")  # pragma: no cover


def run_with_app(
    db: str | None,
    work: Callable[[Application], Awaitable[T]],
    *,
    upgrade: bool = False,
    lease_seconds: float | None = None,
    existing: bool = False,
) -> T:
    """Open the application core over the store at `db`, run `work(app)`, close it;
    rubricflow errors become a message and exit 2. With `existing`, a SQLite file that
    does not exist is that error, not a new empty store (a look must not create one)."""
    from rubricflow.application import Application

    async def main() -> T:
        from rubricflow.telemetry import attach

        async with await Application.open(
            db, upgrade=upgrade, lease_seconds=lease_seconds, existing=existing
        ) as application:
            detach = attach(application)  # review transitions as span events, when tracing
            try:
                return await work(application)
            finally:
                detach()

    try:
        return asyncio.run(main())
    except RubricflowError as error:
        fail(str(error))


def run_on(
    db: str | None,
    server: str | None,
    token: str | None,
    *,
    local: Callable[[Application], Awaitable[T]],
    remote: Callable[[AsyncClient], Awaitable[T]],
) -> T:
    """The seam between a command and where it runs: `local(app)` over the store at `db`,
    or, with `--server URL`, `remote(client)` against that server's HTTP API (as the
    token's holder: the server records the token's name). Both give the command the same
    values to print. Errors become a message and exit 2; the token is never shown."""
    if server is None:
        return run_with_app(db, local)
    if db is not None:
        fail("give --db or --server, not both: --server runs the command on that server's store")
    from rubricflow.client import AsyncClient

    async def main() -> T:
        async with AsyncClient(server, token or None) as client:
            return await remote(client)

    try:
        return asyncio.run(main())
    except RubricflowError as error:
        fail(str(error))


def run_api(
    db: str | None,
    server: str | None,
    token: str | None,
    work: Callable[[ArtifactsAPI], Awaitable[T]],
    *,
    actor: str | None = None,
) -> T:
    """One path for an artifacts command, wherever it runs: `work(api)` with the
    `ArtifactsAPI` of the store at `db` (acting as `actor`, default the user's name), or,
    with `--server URL`, of that server's HTTP client (acting as the token's holder)."""

    async def local(app: Application) -> T:
        return await work(app.artifacts_api(actor or actor_default()))

    async def remote(client: AsyncClient) -> T:
        return await work(client)

    return run_on(db, server, token, local=local, remote=remote)


def refuse_server(server: str | None, command: str, why: str = "") -> None:
    """Exit 2 when `--server` (or $RUBRICFLOW_SERVER_URL) asks a command the HTTP API has
    no equivalent for to run remotely."""
    if server is not None:
        fail(
            f"{command} has no equivalent in the HTTP API, so it cannot run with --server "
            f"(or $RUBRICFLOW_SERVER_URL){': ' + why if why else ''}; run it with --db on "
            "the server's store, or unset RUBRICFLOW_SERVER_URL"
        )


def refuse_actor(server: str | None, actor: str | None) -> None:
    """`--actor` names who acts in the audit trail; a server records its token's name."""
    if server is not None and actor is not None:
        fail("--actor cannot be used with --server: the server records the token's name")


def store_less_core() -> Core:
    """The store-less core (`rubricflow.core.Core`) with every installed plugin, for the
    commands that open no database; a broken plugin is a clear error."""
    from rubricflow.core import Core

    return Core(plugins=plugin_manager())


def plugin_manager() -> PluginRegistry:
    """The plugin registry with every installed plugin; a broken plugin is a clear error."""
    from rubricflow.plugins import create_plugin_manager

    with user_errors():
        return create_plugin_manager()
    raise AssertionError("unreachable")  # pragma: no cover


# --- output ----------------------------------------------------------------------------------
def table(*headers: str) -> Table:
    """A table whose cells wrap instead of being cut off, so ids stay copyable."""
    made = Table()
    for header in headers:
        made.add_column(header, overflow="fold")
    return made


def print_json(value: Any) -> None:
    out.print_json(json.dumps(value, ensure_ascii=False, default=str))


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


def actor_default() -> str:
    """Who runs the command: the user name, else `cli`."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "cli"


def read_content(path: Path) -> Any:
    """Content from a file (an artifact's, or a JSON Schema): JSON or YAML documents are
    parsed, other text is taken as is. A file that cannot be read, is not a regular file
    (a named pipe, a device) or is larger than `RUBRICFLOW_MAX_INPUT_BYTES` exits 2."""
    from rubricflow.formats.document import parse_text, read_regular_file

    def refuse(reason: str) -> RubricflowError:
        return RubricflowError(f"{path}: {reason}")

    try:
        text = read_regular_file(path, refuse, what="content file").decode("utf-8")
    except RubricflowError as error:
        fail(str(error))
    except UnicodeDecodeError:
        fail(f"{path}: cannot read: not UTF-8 text; save it as UTF-8")
    if path.suffix.lower() in (".json", ".yaml", ".yml"):
        try:
            return parse_text(text, str(path), suffix=path.suffix)
        except RubricflowError as error:
            fail(str(error))
    return text


# --- rubric files and judges -----------------------------------------------------------------
def pick_rubric(
    path: Path, format: str | None, rubric_id: str | None, plugins: PluginRegistry
) -> tuple[Rubric, str]:
    """The one rubric of `path` (or the one named `rubric_id`) and the file's format."""
    from rubricflow.formats.loader import load_file

    with user_errors():
        loaded = load_file(path, format=format, plugins=plugins)
    if rubric_id is not None:
        chosen = [r for r in loaded.rubrics if r.id == rubric_id]
        if not chosen:
            ids = ", ".join(r.id for r in loaded.rubrics)
            fail(f"{path}: no rubric {rubric_id!r} in this file (it holds: {ids})")
        return chosen[0], loaded.format
    if len(loaded.rubrics) > 1:
        ids = ", ".join(r.id for r in loaded.rubrics)
        fail(f"{path}: holds {len(loaded.rubrics)} rubrics ({ids}); pick one with --rubric-id")
    return loaded.rubrics[0], loaded.format


def refuse_unregistered_imports(
    rubric: Rubric, plugins: PluginRegistry, allow_import: bool
) -> None:
    """Exit 2 when a deterministic criterion names `module:function` code no plugin
    registered and the user did not pass --allow-import: rubric files are data."""
    if allow_import:
        return
    for index, criterion in enumerate(rubric.criteria):
        name = criterion.scoring.function
        unregistered = name and ":" in name and name not in plugins.functions
        if criterion.scoring.method == "deterministic" and unregistered:
            fail(
                f"criteria[{index}] ({criterion.id}) names code {name!r} that no plugin "
                "registered; rubric files are data, so rubricflow runs it only with "
                "--allow-import (or register the function in a plugin)"
            )


def needs_judge(rubric: Rubric, plugins: PluginRegistry) -> list[str]:
    """Ids of the criteria an LLM judge scores."""
    from rubricflow.engine.executor import resolve_method
    from rubricflow.scorers.llm import LLM_SCORER_NAMES

    return [
        c.id
        for c in rubric.criteria
        if resolve_method(c) in LLM_SCORER_NAMES and resolve_method(c) in plugins.scorers
    ]


def judge_session(
    rubric: Rubric,
    plugins: PluginRegistry,
    spec: str | None,
    *,
    allow_import: bool,
    no_cache: bool,
    feedback: bool,
    judge_concurrency: int | None = None,
    judge_vision: bool = False,
) -> LLMSession:
    """The judge session for `eval` and `calibrate`; exits 2 with a clear message when the
    rubric needs a judge (or --llm names one) that cannot be set up. `judge_concurrency`
    (`--judge-concurrency`) bounds the requests in flight, over the environment's;
    `judge_vision` (`--judge-vision`) says the judge sees images."""
    from rubricflow.llm.session import LLMSession

    session = LLMSession(
        spec,
        plugins=plugins,
        allow_import=allow_import,
        settings={
            **({} if judge_concurrency is None else {"max_concurrency": judge_concurrency}),
            **({"vision": True} if judge_vision else {}),
        }
        or None,
        cache=None if no_cache else "default",
    )
    judged = needs_judge(rubric, plugins)
    if spec is not None or judged or feedback:
        try:
            session.provider_now()
        except RubricflowError as error:
            if judged:
                shown = ", ".join(judged[:5]) + (" ..." if len(judged) > 5 else "")
                fail(f"criteria {shown} are judged by an LLM: {error}")
            fail(str(error))
    return session


# --- options ---------------------------------------------------------------------------------
def _server_default(value: str | None) -> str | None:
    """`--server`, else the settings' server URL ($RUBRICFLOW_SERVER_URL)."""
    return value or current().server_url


def _token_default(value: str | None) -> str | None:
    """`--token`, else the settings' token ($RUBRICFLOW_TOKEN)."""
    return value or current().token


DbOption = Annotated[
    str | None,
    typer.Option(
        "--db", help="Database URL or SQLite file (default: $RUBRICFLOW_DB or ./rubricflow.db)."
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON.")]
ServerOption = Annotated[
    str | None,
    typer.Option(
        "--server",
        metavar="URL",
        callback=_server_default,
        help="Run against a rubricflow server's HTTP API instead of a database "
        "(default: $RUBRICFLOW_SERVER_URL).",
    ),
]
TokenOption = Annotated[
    str | None,
    typer.Option(
        "--token",
        metavar="TOKEN",
        callback=_token_default,
        show_default=False,
        help="The API token for --server (default: $RUBRICFLOW_TOKEN).",
    ),
]
ActorOption = Annotated[
    str | None, typer.Option("--actor", help="Who does this (default: your user name).")
]
LLMOption = Annotated[
    str | None,
    typer.Option(
        "--llm",
        metavar="SPEC",
        help="LLM judge: openai:MODEL[@URL], anthropic:MODEL, ollama:MODEL[@URL], local, "
        "python:module:function (default: $RUBRICFLOW_LLM).",
    ),
]
NoCacheOption = Annotated[
    bool, typer.Option("--no-cache", help="Ask the judge again; do not use cached answers.")
]
SamplesOption = Annotated[
    int | None,
    typer.Option(
        "--samples", min=1, help="Judge each LLM criterion N times (majority vote / mean)."
    ),
]
ConcurrencyOption = Annotated[
    int | None,
    typer.Option(
        "--concurrency",
        "-c",
        min=1,
        help="Criteria scored at once per target (default: all its LLM criteria, at least 8).",
    ),
]
JudgeVisionOption = Annotated[
    bool,
    typer.Option(
        "--judge-vision",
        help="The judge sees images (well-known vision models are recognised by name); "
        "without it, criteria over content with images are unable_to_evaluate.",
    ),
]
JudgeConcurrencyOption = Annotated[
    int | None,
    typer.Option(
        "--judge-concurrency",
        min=1,
        help="Requests in flight to the LLM judge (default: $RUBRICFLOW_LLM_CONCURRENCY, else "
        "the provider's: 8, 1 for local); targets in flight follow it.",
    ),
]
AllowImportOption = Annotated[
    bool,
    typer.Option(
        "--allow-import",
        help="Let the rubric's deterministic criteria import `module:function` code.",
    ),
]
FormatOption = Annotated[
    str | None, typer.Option("--format", "-f", help="Rubric format (default: detect).")
]
RubricIdOption = Annotated[
    str | None, typer.Option("--rubric-id", help="Which rubric, when the file holds several.")
]


def first_sentence(text: str) -> str:
    """The first sentence of a help text's first paragraph, whole: a full stop that ends a
    sentence, not the one of "FILE..." or "e.g." in the middle of it."""
    paragraph = " ".join(text.split("\n\n", 1)[0].split())
    match = re.match(r"(.+?[^.]\.)(?=\s+[A-Z(`]|$)", paragraph)
    return match.group(1) if match else paragraph


class FullHelpGroup(TyperGroup):
    """A command group whose `--help` lists each command with its whole first sentence.

    Click cuts a command's summary to what fits beside the longest name on one line and
    ends it with "..."; a summary is short enough to wrap instead."""

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        rows: list[tuple[str, str]] = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is None or command.hidden:
                continue
            rows.append((name, command.short_help or first_sentence(command.help or "")))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)
