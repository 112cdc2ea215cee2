"""`rubricflow mcp`: serve the MCP tools and rubric resources over stdio."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from rubricflow.cli.shared import ActorOption, DbOption, actor_default, fail, run_with_app
from rubricflow.settings import current

if TYPE_CHECKING:
    from rubricflow.application import Application

__all__ = ["mcp_command"]


def mcp_command(
    llm: Annotated[
        str | None,
        typer.Option(
            "--llm",
            metavar="SPEC",
            help="The judge for rubrics that need one: openai:MODEL[@URL], anthropic:MODEL, "
            "ollama:MODEL[@URL], local (default: $RUBRICFLOW_LLM). Tool calls never choose it.",
        ),
    ] = None,
    actor: ActorOption = None,
    db: DbOption = None,
) -> None:
    """Serve rubricflow to an MCP client over stdio: tools to evaluate text, submit and
    revise artifacts, read reviews and explain rubrics, and the rubrics as resources.

    Needs the `mcp` extra. An MCP client (Claude Desktop, an IDE) starts this command
    and talks to it on standard input and output; the store stays open until it closes
    them. Tools act as --actor in the audit trail. Over HTTP, 'rubricflow serve' serves
    the same at /mcp."""
    try:
        from rubricflow.mcp import serve_stdio
    except ImportError as error:
        if (error.name or "").split(".")[0] != "mcp":
            raise
        fail(
            f"the MCP server needs the 'mcp' extra ({error.name} is missing): "
            "python -m pip install -e '.[mcp]' in the rubricflow checkout"
        )
    judge = llm or current().llm
    if judge is not None:
        _check_judge(judge)
    who = actor or actor_default()

    async def work(application: Application) -> None:
        await serve_stdio(application, actor=who, judge=judge)

    run_with_app(db, work)


def _check_judge(spec: str) -> None:
    """Exit 2 when `spec` cannot make a judge: found at start, not by the first tool call
    that needs it. It imports no code (`python:`)."""
    from rubricflow.errors import RubricflowError
    from rubricflow.llm.session import LLMSession

    try:
        LLMSession(spec, allow_import=False, cache=None).provider_now()
    except RubricflowError as error:
        fail(f"--llm {spec}: {error}")
