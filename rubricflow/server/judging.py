"""The server's judge: chosen by its configuration (`ServerSettings.judge`, `rubricflow
serve --llm SPEC`), never by a request, and answering from the store's judge cache so
every server process and worker sharing the store shares the answers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rubricflow.engine.executor import resolve_method
from rubricflow.errors import ConfigurationError
from rubricflow.model import Rubric
from rubricflow.plugins import PluginRegistry
from rubricflow.scorers.llm import LLM_SCORER_NAMES

if TYPE_CHECKING:
    from rubricflow.application import Application
    from rubricflow.llm.session import LLMSession
    from rubricflow.server.settings import ServerSettings

__all__ = [
    "check_judge_spec",
    "check_type_judge",
    "configure_reviews",
    "judge_session",
    "judged_criteria",
]

NO_JUDGE = (
    "this server has no judge: start it with 'rubricflow serve --llm SPEC' (or set "
    "RUBRICFLOW_LLM; the setting is ServerSettings.judge); a request cannot choose one"
)


def judged_criteria(rubric: Rubric, plugins: PluginRegistry) -> list[str]:
    """Ids of the criteria of `rubric` an LLM judge scores."""
    judged: list[str] = []
    for criterion in rubric.criteria:
        method = resolve_method(criterion)
        if method in LLM_SCORER_NAMES and method in plugins.scorers:
            judged.append(criterion.id)
    return judged


def judge_session(
    application: Application, settings: ServerSettings, rubric: Rubric
) -> LLMSession | None:
    """A judge session for scoring `rubric` in one request (the caller closes it), or
    None when no criterion needs a judge. A rubric that needs one on a server that has
    none is a `ConfigurationError` naming the setting."""
    judged = judged_criteria(rubric, application.plugins)
    if not judged:
        return None
    if not settings.judge:
        shown = ", ".join(judged[:5]) + (" ..." if len(judged) > 5 else "")
        raise ConfigurationError(f"criteria {shown} of {rubric.id!r} need a judge, but {NO_JUDGE}")
    from rubricflow.llm.session import LLMSession

    return LLMSession(
        settings.judge,
        plugins=application.plugins,
        allow_import=False,
        cache=application.judge_cache,
    )


def check_judge_spec(spec: str) -> None:
    """Raise a rubricflow error when `spec` cannot make a judge (an unknown prefix, a
    missing key, a `python:` spec: the server imports no code for a judge)."""
    from rubricflow.llm.session import LLMSession

    LLMSession(spec, allow_import=False, cache=None).provider_now()


def check_type_judge(spec: str, settings: ServerSettings) -> None:
    """A type's judge set over the API may name only the judges the server was started
    with (its judge, or the judges of its panel), in any panel: a request never sends
    content, or the key for other hosts, to a judge of its own choosing. The judge is then
    made now (no code imported), not at the first review."""
    from rubricflow.llm.panel import as_panel

    def judges(text: str | None) -> list[str]:
        if not text:
            return []
        panel = as_panel(text)
        return [str(j).strip() for j in panel.judges] if panel else [text.strip()]

    allowed = judges(settings.judge)
    unknown = [judge for judge in judges(spec) if judge not in allowed]
    if unknown:
        shown = ", ".join(allowed) or "none"
        raise ConfigurationError(
            f"judge {unknown[0]!r} is not one of this server's judges ({shown}): over the API "
            "a type's judge may name only those; start the server with it (rubricflow serve "
            "--llm ... --panel ...), or set the type locally with 'rubricflow types set --db'"
        )
    check_judge_spec(spec)


def configure_reviews(application: Application, settings: ServerSettings) -> None:
    """Reviews the server runs (submissions, its embedded worker) judge with the
    server's judge too."""
    if settings.judge:
        options = dict(application.artifacts.evaluate_options)
        inner = dict(options.get("options") or {})
        inner["llm"] = settings.judge
        application.artifacts.evaluate_options = {**options, "options": inner}
