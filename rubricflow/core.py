"""The store-less core: every operation a face offers that needs no store, as typed async
calls over one plugin registry and one `Settings`.

Loading rubrics (from files the user named, or from a stranger's document), validating
and linting them, evaluating without storing, converting to the native format, reading
results files, comparing runs and writing reports need no database, so `validate`,
`convert`, `eval` without `--db`, `compare` and `report` of results files run here and
open none. `rubricflow.application.Application` builds on it for what needs a store;
a face holds one or the other and decides nothing itself.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, Literal, ParamSpec, TypeVar

from rubricflow.errors import ConfigurationError, Problem, RubricValidationError
from rubricflow.settings import Settings, current, use

if TYPE_CHECKING:
    from rubricflow.calibration import PassRateEstimate
    from rubricflow.compare import RunComparison
    from rubricflow.formats.loader import LoadedFile
    from rubricflow.model import Rubric
    from rubricflow.plugins import PluginRegistry
    from rubricflow.results import Evaluation, Target
    from rubricflow.runs import RunData
    from rubricflow.validation import FileReport

__all__ = ["STRANGERS_WHY", "Core", "RubricSource", "RubricText", "Trust", "refuse_untrusted"]

#: how far a rubric document is trusted: `local` is a file the user named (it may read
#: schema files beside it, and its checks may name code the caller lets it import);
#: `stranger` is a document from outside (an HTTP request, a tool call): it reads no
#: file, names no code no plugin registers and chooses no judge
Trust = Literal["local", "stranger"]

#: why a stranger's rubric is held to those rules, in every refusal of one
STRANGERS_WHY = "rubrics sent over HTTP or in a tool call are data"

_P = ParamSpec("_P")
_R = TypeVar("_R")
_C = TypeVar("_C", bound="Core")


@dataclass(frozen=True)
class RubricText:
    """A rubric document given as text (YAML or JSON, any format): a request's body, a
    tool call's argument. `source` names it in messages; `suffix` (`.json`, `.yaml`)
    says how to parse it (default: JSON when it parses as JSON, else YAML)."""

    text: str
    source: str = "<text>"
    suffix: str = ""


#: a rubric document to load: a file's path, or its text
RubricSource = str | Path | RubricText


def under_settings(
    method: Callable[Concatenate[_C, _P], Coroutine[Any, Any, _R]],
) -> Callable[Concatenate[_C, _P], Coroutine[Any, Any, _R]]:
    """Run an operation with its core's settings bound (`rubricflow.settings.use`), so
    what it calls (loading, checks, the judge) reads them and not the environment."""

    @functools.wraps(method)
    async def bound(self: _C, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with use(self.settings):
            return await method(self, *args, **kwargs)

    return bound


def refuse_untrusted(
    rubrics: Sequence[Rubric], plugins: PluginRegistry, source: str = "<request>"
) -> None:
    """Raise a `RubricValidationError` naming every field a stranger's rubric may not use:
    a file (`schema_ref`), code to import, a judge (prefixed with the rubric's id when
    there are several). The message is the same whichever door the rubric came through."""
    from rubricflow.validation import untrusted_problems

    problems: list[Problem] = []
    for rubric in rubrics:
        found = untrusted_problems(rubric, plugins, why=STRANGERS_WHY, host="the host")
        if len(rubrics) > 1:
            found = [Problem(f"{rubric.id}: {p.path}", p.message) for p in found]
        problems.extend(found)
    if problems:
        raise RubricValidationError(problems, source)


class Core:
    """One plugin registry and one `Settings`, and the operations that need no store.

    `Core()` takes the caller's settings (the CLI's, the server's), else the
    environment's, read now; the plugin registry is made on first use."""

    def __init__(
        self, *, plugins: PluginRegistry | None = None, settings: Settings | None = None
    ) -> None:
        #: the settings of this core's operations; another core may hold others
        self.settings = settings if settings is not None else current()
        self._plugins = plugins

    @property
    def plugins(self) -> PluginRegistry:
        """The plugin registry (made on first use: reading a store needs none)."""
        if self._plugins is None:
            from rubricflow.plugins import create_plugin_manager

            with use(self.settings):
                self._plugins = create_plugin_manager()
        return self._plugins

    # --- rubric documents --------------------------------------------------------------------
    @under_settings
    async def load_rubrics(
        self,
        sources: Sequence[RubricSource],
        *,
        format: str | None = None,
        trust: Trust = "local",
    ) -> list[LoadedFile]:
        """Load every rubric of `sources` (each a file or a `RubricText`, any format) and
        refuse, naming the source and the field, what may not be registered or run: a
        document that does not load, check options `validate` reports (broken configs),
        templates over their render budget and, from a `stranger`, a file, code or a judge
        it names (`refuse_untrusted`; a stranger's document comes as text: a path is
        refused). Runs off the event loop: a large document must not hold up a server."""
        self.plugins  # made here, not in the thread  # noqa: B018
        return await asyncio.to_thread(self._load_all, sources, format, trust)

    def _load_all(
        self, sources: Sequence[RubricSource], format: str | None, trust: Trust
    ) -> list[LoadedFile]:
        return [self._load_one(source, format, trust) for source in sources]

    def _load_one(self, source: RubricSource, format: str | None, trust: Trust) -> LoadedFile:
        from rubricflow.formats.loader import load_document, load_file
        from rubricflow.validation import refuse_broken_configs, refuse_over_budget_templates

        if isinstance(source, RubricText):
            loaded = load_document(
                _parse(source),
                format=format,
                source=source.source,
                plugins=self.plugins,
                schema_refs="refuse" if trust == "stranger" else "inside",
            )
            name = source.source
        elif trust == "stranger":
            raise ConfigurationError(
                f"{source}: a stranger's rubric comes as text; rubricflow reads no file for it"
            )
        else:
            loaded = load_file(source, format=format, plugins=self.plugins)
            name = str(source)
        if trust == "stranger":
            refuse_untrusted(loaded.rubrics, self.plugins, name)
        refuse_broken_configs(loaded.rubrics, self.plugins, name)
        refuse_over_budget_templates(loaded.rubrics, name)
        return loaded

    @under_settings
    async def lint_rubric_files(
        self, paths: Sequence[str | Path], *, format: str | None = None
    ) -> list[FileReport]:
        """Validate rubric files and run the meta-rubric over them (off the event loop,
        where `asyncio.to_thread` carries the bound settings). Never raises for a bad
        file: its problems are in its report."""
        from rubricflow.validation import lint_file

        def lint() -> list[FileReport]:
            return [lint_file(path, format=format, plugins=self.plugins) for path in paths]

        return await asyncio.to_thread(lint)

    @under_settings
    async def lint_rubric_text(
        self, text: str, *, source: str = "<text>", suffix: str = "", format: str | None = None
    ) -> FileReport:
        """`lint_rubric_files` for a rubric given as text."""
        from rubricflow.validation import validate_text

        return await asyncio.to_thread(
            validate_text, text, source=source, suffix=suffix, format=format, plugins=self.plugins
        )

    @under_settings
    async def convert(
        self, path: str | Path, *, format: str | None = None, to: str = "yaml"
    ) -> tuple[str, LoadedFile]:
        """Every rubric of the file at `path` as the native format's text (`to`: `yaml` or
        `json`), with what was loaded (its warnings among it)."""
        from rubricflow.formats.loader import load_file
        from rubricflow.formats.native import dump_rubrics

        loaded = await asyncio.to_thread(load_file, path, format=format, plugins=self.plugins)
        return dump_rubrics(loaded.rubrics, to), loaded

    # --- evaluation without storage ----------------------------------------------------------
    @under_settings
    async def evaluate(
        self,
        rubric: Rubric,
        targets: Sequence[Target | Mapping[str, Any] | str],
        *,
        options: Mapping[str, Any] | None = None,
        allow_import: bool = False,
        concurrency: int | None = None,
    ) -> list[Evaluation]:
        """Score each target against `rubric`, in order; nothing is stored. `options`
        carries the judge (`{"llm": spec or LLMSession}`) and its settings. A target whose
        content breaks the content bounds is a `ContentBoundsError`, before any is scored."""
        from rubricflow.content_bounds import check_content_bounds
        from rubricflow.conversation import conversation_of
        from rubricflow.engine.executor import evaluate_many
        from rubricflow.targets import as_target

        prepared = [as_target(target) for target in targets]
        for index, target in enumerate(prepared):
            check_content_bounds(target.content, f"target {index} content")
            conversation_of(target)  # a conversation's shape and bounds (read once)
        extra: dict[str, Any] = {} if concurrency is None else {"concurrency": concurrency}
        stream = evaluate_many(
            rubric,
            prepared,
            plugins=self.plugins,
            allow_import=allow_import,
            options=options,
            settings=self.settings,
            **extra,
        )
        return [evaluation async for evaluation in stream]

    # --- results files, comparisons and reports ----------------------------------------------
    @under_settings
    async def read_results(self, path: str | Path) -> RunData:
        """A run from a results file written by `rubricflow eval --output`."""
        from rubricflow.runs import read_results_file

        return await asyncio.to_thread(read_results_file, path)

    async def read_run(self, spec: str) -> RunData | None:
        """The run of the results file `spec` names (when the path exists), or None when
        `spec` names a stored run (an id, or `latest`: an `Application`'s `run`). A
        directory, or a path that looks like a results file and does not exist, is a
        `NotFoundError` saying what to give."""
        from rubricflow.report.sources import results_path

        path = results_path(spec)
        return None if path is None else await self.read_results(path)

    def compare(self, a: RunData, b: RunData) -> RunComparison:
        """Run B against run A, matched by target id."""
        from rubricflow.compare import compare_runs

        return compare_runs(a, b)

    @under_settings
    async def write_report(
        self,
        run: RunData,
        output: str | Path,
        *,
        title: str | None = None,
        estimate: PassRateEstimate | None = None,
    ) -> Path:
        """Write `run`'s self-contained HTML report to `output` (with the pass rate
        corrected with people's labels, when `estimate` is given); returns the path."""
        from rubricflow.report import write_report

        return await asyncio.to_thread(write_report, run, output, title=title, estimate=estimate)


def _parse(source: RubricText) -> Any:
    """A `RubricText`'s document, within the rubric size limit."""
    from rubricflow.formats.document import check_rubric_size, parse_rubric_text, parse_text

    if not source.suffix:
        return parse_rubric_text(source.text, source.source)
    check_rubric_size(len(source.text.encode("utf-8", "surrogatepass")), source.source)
    return parse_text(source.text, source.source, suffix=source.suffix)
