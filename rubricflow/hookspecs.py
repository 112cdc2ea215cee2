"""Hook specifications: everything that varies in rubricflow is contributed through these.

A plugin is any object or module with functions marked `@hookimpl` whose names match
the specs below. Built-in scorers, functions, formats and providers are registered
through the very same hooks, and third-party plugins are found through the
`rubricflow` entry-point group. Every hook returning items returns a sequence; the
plugin manager gathers them across plugins and reports name clashes naming both
plugins.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import pluggy

if TYPE_CHECKING:
    from rubricflow.formats.base import RubricFormat
    from rubricflow.scoring import Scorer

__all__ = [
    "CONFIG_CHECK_ATTRIBUTE",
    "CONFIG_SCHEMA_ATTRIBUTE",
    "PROJECT_NAME",
    "ConfigCheck",
    "RubricflowHookSpecs",
    "config_schema",
    "hookimpl",
    "hookspec",
]

PROJECT_NAME = "rubricflow"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)

CONFIG_SCHEMA_ATTRIBUTE = "rubricflow_config_schema"
CONFIG_CHECK_ATTRIBUTE = "rubricflow_config_check"
ConfigCheck = Callable[[Mapping[str, Any]], Iterable[tuple[str, str]]]
"""A check of a config that matches its schema: yields `(field, problem)` pairs (e.g.
`("pattern", "not a valid regular expression: ...")`), nothing when it is fine."""

_Function = TypeVar("_Function", bound=Callable[..., Any])


def config_schema(
    schema: Mapping[str, Any], *, check: ConfigCheck | None = None
) -> Callable[[_Function], _Function]:
    """Declare the options a check function takes: `schema` is the JSON Schema of a
    criterion's `scoring.config` for it, and `check` an optional further check (what a
    schema cannot say, such as a regular expression that does not compile). `rubricflow
    validate` then reports a bad config with its path (`criteria[0].scoring.config.min`)
    instead of the check failing at evaluation. Optional: a function without it is
    accepted as before. The schema is checked when the plugin is registered."""

    def declare(function: _Function) -> _Function:
        setattr(function, CONFIG_SCHEMA_ATTRIBUTE, schema)
        if check is not None:
            setattr(function, CONFIG_CHECK_ATTRIBUTE, check)
        return function

    return declare


class RubricflowHookSpecs:
    """The hooks a rubricflow plugin may implement."""

    @hookspec
    def rubricflow_scorers(self) -> Sequence[Scorer]:  # type: ignore[empty-body]
        """Called once when the plugin manager is built.

        Return the scorer objects this plugin provides. Each has a unique `name` (the
        `scoring.method` a criterion names, e.g. `deterministic`) and an async
        `score(criterion, target, context)` returning a `CriterionResult`.
        """

    @hookspec
    def rubricflow_check_functions(self) -> Mapping[str, Callable[..., Any]]:  # type: ignore[empty-body]
        """Called once when the plugin manager is built.

        Return `{registered_name: function}` for deterministic checks. A function takes
        the target (and the criterion's `scoring.config` as keyword arguments when it
        accepts them) and returns a level id, a bool (MET/UNMET) or a float in 0..1;
        it may be async. A function may declare the JSON Schema of its config with
        `@config_schema(...)`, so `validate` checks a rubric's config for it.
        """

    @hookspec
    def rubricflow_formats(self) -> Sequence[RubricFormat]:  # type: ignore[empty-body]
        """Called once when the plugin manager is built.

        Return rubric format objects: each has a `name`, a `detect(document)` returning a
        confidence in 0..1 and a `load(document, context)` returning the rubrics a
        document holds plus import warnings; `context` is a
        `rubricflow.formats.base.LoadContext` (source, base folder, schema-ref policy,
        format registry). A format with the earlier `load(document, *, source, base_dir)`
        is still called that way. See docs/plugins.md, "rubricflow_formats".
        """

    @hookspec
    def rubricflow_llm_providers(self) -> Mapping[str, Callable[..., Any]]:  # type: ignore[empty-body]
        """Called once when the plugin manager is built.

        Return `{spec_prefix: factory}` for LLM providers. A spec string such as
        `openai:gpt-4o-mini` is parsed into a `rubricflow.llm.ProviderSpec` and handed to
        the factory registered for `openai`, which returns an `LLMProvider`.
        """

    @hookspec
    def rubricflow_artifact_transition(self, event: Mapping[str, Any]) -> Any:
        """The review service's one event bus: called once per event, after the
        transaction that wrote it committed, with the event as a mapping whose `kind` says
        what happened:

        - `"artifact.transition"`: an artifact transition (artifact_id, seq, revision,
          trigger, source, dest, actor, reason, evaluation_ids, created_at);
        - `"evaluation.stored"`: an evaluation a review stored (evaluation_id,
          artifact_id, revision, rubric_id, rubric_version, verdict, passed, score,
          coverage, created_at).

        A listener ignores the kinds it does not handle (more may come). May be a plain
        function or return an awaitable (async listeners are awaited). A listener that
        raises is logged; it neither undoes nor blocks what happened.
        """
