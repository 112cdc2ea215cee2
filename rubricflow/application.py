"""The application core: every operation a front door offers, as typed async calls over
one store and one plugin registry.

The CLI, the HTTP API, the MCP server, the reward adapters and the pytest plugin all
call this, so an operation behaves the same whichever door it came through. A front
door parses its input, calls one or a few of these methods, and presents the result;
it decides nothing itself. The artifact lifecycle is `Application.artifacts` (an
`ArtifactRegistry`); the rubric registry, evaluations, runs and the judge cache are the
store's repositories, reachable as `rubrics`, `evaluations` (per-criterion pass rates and
judge usage among its queries) and `runs`; the judge cache is `store.judge_cache`.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from rubricflow.errors import NotFoundError
from rubricflow.settings import Settings, current, use
from rubricflow.store import Store

if TYPE_CHECKING:
    from rubricflow.compare import RunComparison
    from rubricflow.model import Rubric
    from rubricflow.plugins import PluginRegistry
    from rubricflow.results import Evaluation, Target
    from rubricflow.review import ArtifactRegistry, ReviewOutcome
    from rubricflow.rubric_diff import RubricDiff
    from rubricflow.runs import RunData, RunInfo
    from rubricflow.store.evaluations import EvaluationStore
    from rubricflow.store.rubrics import RegisteredRubric, RubricRegistry
    from rubricflow.store.runs import RunOverview, RunStore
    from rubricflow.validation import FileReport
    from rubricflow.webhooks import WebhookService

__all__ = ["Application"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _under_settings(
    method: Callable[Concatenate[Application, _P], Awaitable[_R]],
) -> Callable[Concatenate[Application, _P], Awaitable[_R]]:
    """Run an operation with the application's settings bound (`rubricflow.settings.use`),
    so what it calls (loading, checks, the judge) reads them and not the environment."""

    @functools.wraps(method)
    async def bound(self: Application, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with use(self.settings):
            return await method(self, *args, **kwargs)

    return bound


def _masked(info: RunInfo) -> RunInfo:
    """`info` with credentials in its options (a judge URL's password, a `?key=`)
    masked: what a face shows of a run never holds a secret."""
    from rubricflow.llm.secrets import redact_options

    return replace(info, options=redact_options(info.options))


class Application:
    """One store, one plugin registry, and the operations over them.

    Open it with `Application.open(db)` (and close it, or use `async with`), or wrap a
    store you already hold with `Application(store)`; then the caller closes the store.
    """

    def __init__(
        self,
        store: Store,
        *,
        plugins: PluginRegistry | None = None,
        lease_seconds: float | None = None,
        settings: Settings | None = None,
    ) -> None:
        #: the settings of this application's operations (default: the caller's, else
        #: the environment's, read now); another application may hold others
        self.settings = settings if settings is not None else current()
        self.store = store
        self._plugins = plugins
        self._lease_seconds = lease_seconds
        self._artifacts: ArtifactRegistry | None = None
        self._webhooks: WebhookService | None = None
        self._owns_store = False
        from rubricflow.engine.isolation import hold_check_pool

        # the check process pool (started when a check needs it) stops when the last
        # application (or worker) using it closes
        self._check_pool = hold_check_pool()

    @property
    def plugins(self) -> PluginRegistry:
        """The plugin registry (made on first use: reading the store needs none)."""
        if self._plugins is None:
            from rubricflow.plugins import create_plugin_manager

            with use(self.settings):
                self._plugins = create_plugin_manager()
        return self._plugins

    @property
    def artifacts(self) -> ArtifactRegistry:
        """The artifact lifecycle: types, artifacts, reviews and decisions."""
        if self._artifacts is None:
            from rubricflow.review import ArtifactRegistry

            options: dict[str, Any] = {
                "plugins": self.plugins,
                "max_failures": self.settings.max_review_failures,
            }
            if self._lease_seconds is not None:
                options["lease_seconds"] = self._lease_seconds
            self._artifacts = ArtifactRegistry(self.store, **options)
        return self._artifacts

    @property
    def webhooks(self) -> WebhookService:
        """Webhook subscriptions, their delivery log, replays and the delivery worker."""
        if self._webhooks is None:
            from rubricflow.store.webhooks import announced_event
            from rubricflow.webhooks import WebhookService

            # a running delivery worker wakes when a transition that may announce an
            # event commits, in this process or another (the artifacts' change feed)
            self._webhooks = WebhookService(
                self.store,
                watch=lambda: self.artifacts.live.feed.watch(
                    match=lambda notice: announced_event(notice.trigger, failed=True) is not None
                ),
            )
        return self._webhooks

    @classmethod
    async def open(
        cls,
        db: str | None = None,
        *,
        upgrade: bool = False,
        plugins: PluginRegistry | None = None,
        lease_seconds: float | None = None,
        settings: Settings | None = None,
    ) -> Application:
        """The application over the store at `db` (default `settings.db`: $RUBRICFLOW_DB,
        else ./rubricflow.db); closing it closes the store. `settings` default to the
        caller's (the CLI's, the server's), else the environment's, read here."""
        settings = settings if settings is not None else current()
        with use(settings):
            store = await Store.open(db, upgrade=upgrade)
        try:
            application = cls(
                store, plugins=plugins, lease_seconds=lease_seconds, settings=settings
            )
        except BaseException:
            await store.close()
            raise
        application._owns_store = True
        return application

    async def close(self) -> None:
        if self._artifacts is not None:
            await self._artifacts.aclose()
        if self._owns_store:
            await self.store.close()
        self._check_pool.release()

    async def __aenter__(self) -> Application:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def rubrics(self) -> RubricRegistry:
        """The rubric registry."""
        return self.store.rubrics

    @property
    def evaluations(self) -> EvaluationStore:
        """Stored evaluations."""
        return self.store.evaluations

    @property
    def runs(self) -> RunStore:
        """Batch evaluation runs."""
        return self.store.runs

    # --- artifacts ---------------------------------------------------------------------------
    @_under_settings
    async def create_and_submit(
        self,
        type_name: str,
        content: Any,
        *,
        actor: str,
        title: str | None = None,
        defer: bool = False,
        metadata: Mapping[str, Any] | None = None,
        artifact_id: str | None = None,
    ) -> ReviewOutcome:
        """Create an artifact of `type_name` and submit it, in one step (one transaction
        writes both): whatever the submit refuses (an unknown type, content against the
        type's schema, a type with no rubrics, a bound rubric not registered, an id
        already taken) creates nothing. The review then runs as `submit_for_review`'s."""
        return await self.artifacts.create_and_submit(
            type_name,
            content,
            actor=actor,
            title=title,
            metadata=metadata,
            artifact_id=artifact_id,
            defer=defer,
        )

    # --- rubrics -----------------------------------------------------------------------------
    @_under_settings
    async def register_rubric_files(
        self, paths: Sequence[str | Path], *, format: str | None = None
    ) -> list[RegisteredRubric]:
        """Register every rubric in `paths` (any format), all in one transaction: a file
        that does not load registers nothing."""
        from rubricflow.formats.loader import load_file

        loaded = [load_file(path, format=format, plugins=self.plugins) for path in paths]
        pairs = [(rubric, item.format) for item in loaded for rubric in item.rubrics]
        return list(await self.store.rubrics.register_pairs(pairs))

    @_under_settings
    async def register_rubric_text(
        self, text: str, *, source: str = "<text>", suffix: str = "", format: str | None = None
    ) -> list[RegisteredRubric]:
        """Register every rubric in a document given as text (YAML or JSON, any format)."""
        from rubricflow.formats.document import check_rubric_size, parse_text
        from rubricflow.formats.loader import detect_format, load_document
        from rubricflow.validation import refuse_broken_configs

        check_rubric_size(len(text.encode("utf-8", "surrogatepass")), source)
        document = parse_text(text, source, suffix=suffix)
        name = format or detect_format(document, plugins=self.plugins, source=source).name
        loaded = load_document(document, format=name, source=source, plugins=self.plugins)
        refuse_broken_configs(loaded.rubrics, self.plugins, source)
        pairs = [(rubric, loaded.format) for rubric in loaded.rubrics]
        return list(await self.store.rubrics.register_pairs(pairs))

    @_under_settings
    async def lint_rubric_file(self, path: str | Path, *, format: str | None = None) -> FileReport:
        """Validate a rubric file and run the meta-rubric over it (off the event loop:
        a large rubric must not hold up a server's other requests)."""
        from rubricflow.validation import lint_file

        return await asyncio.to_thread(lint_file, path, format=format, plugins=self.plugins)

    @_under_settings
    async def lint_rubric_text(
        self, text: str, *, source: str = "<text>", suffix: str = "", format: str | None = None
    ) -> FileReport:
        """`lint_rubric_file` for a rubric given as text."""
        from rubricflow.validation import validate_text

        return await asyncio.to_thread(
            validate_text, text, source=source, suffix=suffix, format=format, plugins=self.plugins
        )

    async def diff_rubric(
        self, rubric_id: str, before: str | None = None, after: str | None = None
    ) -> RubricDiff:
        """What changed between two stored versions of `rubric_id`. By default `after` is
        the highest version and `before` the one below it."""
        from rubricflow.rubric_diff import diff_rubrics

        if before is None or after is None:
            versions = [info.version for info in await self.store.rubrics.history(rubric_id)]
            if not versions:
                raise NotFoundError(f"no rubric {rubric_id!r} is registered")
            after = after or versions[-1]
            if before is None:
                older = versions[: versions.index(after)] if after in versions else []
                if not older:
                    raise NotFoundError(
                        f"rubric {rubric_id!r} has no version before {after} to compare with; "
                        f"stored versions: {', '.join(versions)}"
                    )
                before = older[-1]
        old = await self.store.rubrics.get(rubric_id, before)
        new = await self.store.rubrics.get(rubric_id, after)
        return diff_rubrics(old, new)

    # --- evaluation without storage ----------------------------------------------------------
    @_under_settings
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
        from rubricflow.engine.executor import evaluate_many
        from rubricflow.targets import as_target

        prepared = [as_target(target) for target in targets]
        for index, target in enumerate(prepared):
            check_content_bounds(target.content, f"target {index} content")
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

    # --- runs --------------------------------------------------------------------------------
    async def run(self, run_id: str) -> RunData:
        """A stored run with its evaluations, by id or `latest` (its options with any
        credential masked, runs stored before masking existed included)."""
        from rubricflow.report.sources import stored_run

        data = await stored_run(self.store, run_id)
        return replace(data, info=_masked(data.info))

    async def artifact_run(self, artifact_id: str) -> RunData:
        """Every stored evaluation of one artifact, as a run (for reports and compare)."""
        from rubricflow.report.sources import stored_artifact_run

        return await stored_artifact_run(self.store, artifact_id)

    async def run_overviews(self, *, limit: int = 20) -> list[RunOverview]:
        """The newest runs with their figures, summed up in SQL (options masked)."""
        overviews = await self.store.runs.overviews(limit=limit)
        return [replace(o, info=_masked(o.info)) for o in overviews]

    async def compare_runs(self, run_a: str, run_b: str) -> RunComparison:
        """Run B against run A, matched by target id (ids or `latest`)."""
        from rubricflow.compare import compare_runs

        return compare_runs(await self.run(run_a), await self.run(run_b))

    # --- the judge cache ---------------------------------------------------------------------
    async def judge_cache_stats(self, *, clear: bool = False) -> dict[str, Any]:
        """The store's judge cache: entries, size and hits (after clearing it when
        asked, with how many answers were `removed`)."""
        from rubricflow.llm.cache import cleared_stats

        return await cleared_stats(self.store.judge_cache, clear=clear)

    async def judge_cache_entries(self) -> list[tuple[str, str]]:
        """Every (key, value) in the store's judge cache, by key (`llm cache export`)."""
        return await self.store.judge_cache.entries()

    async def judge_cache_add(self, entries: Sequence[tuple[str, str]]) -> int:
        """Add (key, value) answers to the store's judge cache (`llm cache import`); a key
        already there keeps its answer. Returns how many were given."""
        for key, value in entries:
            await self.store.judge_cache.put(key, value)
        return len(entries)
