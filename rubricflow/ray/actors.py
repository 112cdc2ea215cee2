"""The evaluation actor: holding one judge session (and its HTTP connection pools) for
the actor's whole life, and scoring the batches of targets it is handed."""

from __future__ import annotations

import asyncio
import collections
import uuid
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import ray

from rubricflow.engine.executor import evaluate_cases, resolve_method
from rubricflow.errors import PluginError
from rubricflow.llm.admission import Admission, admit_with
from rubricflow.llm.session import LLMSession
from rubricflow.model import Rubric
from rubricflow.plugins import PluginRegistry, create_plugin_manager
from rubricflow.ray.caching import Closer, open_cache
from rubricflow.results import Evaluation, Target
from rubricflow.targets import as_target

__all__ = [
    "BatchEvaluator",
    "JudgeConfig",
    "RubricSet",
    "evaluation_columns",
    "missing_scorers",
    "refuse_missing_scorers",
]

#: sets of rubrics an actor keeps (`BatchEvaluator._rubric_set`)
RUBRIC_SETS_KEPT = 8
#: the columns of a Dataset of evaluations (`evaluation` is the whole record as JSON)
EVALUATION_COLUMNS = ("id", "rubric_id", "verdict", "passed", "score", "evaluation")


class JudgeConfig:
    """What an actor needs to build its judge session: the spec (a `kind:model@url`
    string, or a `panel:POLICY(A | B)` one), provider settings, and the answer cache
    (`rubricflow.ray.caching`: None, `memory`, a file, or a shared store's URL)."""

    def __init__(
        self,
        spec: str | None,
        settings: Mapping[str, Any] | None = None,
        cache: str | None = None,
        budget: tuple[str, int, float | None] | None = None,
        run: str | None = None,
    ) -> None:
        self.spec = spec
        self.settings = dict(settings or {})
        #: the cache option as shown: a database URL's password is not in it (nor in the
        #: actors' start-up arguments, which Ray's state API and logs show); the whole
        #: option travels in the object store (`cache_option`)
        self.cache = cache
        self._cache_ref: Any = None
        if cache is not None and urlsplit(cache).password:
            self._cache_ref = ray.put(cache)
            self.cache = _without_password(cache)
        #: (judge name, limit, rpm) of the cluster-wide budget, or None for none
        self.budget = budget
        #: the driver's run these actors score for: the budget gives back the slots of
        #: a run's actors when the run ends (`rubricflow.ray.budget.close_run`)
        self.run = run or uuid.uuid4().hex

    def cache_option(self) -> str | None:
        """The cache option whole, password included (read where the cache is opened)."""
        if self._cache_ref is not None:
            option: str = ray.get(self._cache_ref)
            return option
        return self.cache


def _without_password(url: str) -> str:
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def missing_scorers(rubrics: Mapping[str, Rubric], plugins: PluginRegistry) -> list[str]:
    """`rubric: criterion needs scorer 'x'` for every criterion no installed plugin scores."""
    missing = []
    for rubric in rubrics.values():
        for criterion in rubric.criteria:
            method = resolve_method(criterion)
            if method not in plugins.scorers:
                missing.append(f"{rubric.id}: {criterion.id} needs scorer {method!r}")
    return missing


def evaluation_columns(rows: list[tuple[int | None, Evaluation]]) -> dict[str, list[Any]]:
    """Evaluations as the columns of a Dataset of evaluations (`position` only when the
    rows were numbered)."""
    columns: dict[str, list[Any]] = {}
    if rows and all(position is not None for position, _ in rows):
        columns["position"] = [position for position, _ in rows]
    evaluations = [evaluation for _, evaluation in rows]
    columns.update(
        id=[e.target_id for e in evaluations],
        rubric_id=[e.rubric_id for e in evaluations],
        verdict=[getattr(e.verdict, "value", e.verdict) for e in evaluations],
        passed=[e.passed for e in evaluations],
        score=[float(e.score) for e in evaluations],
        evaluation=[e.model_dump_json() for e in evaluations],
    )
    return columns


class BatchEvaluator:
    """An evaluation actor of a pool (`rubricflow.ray.pool`): one judge session and its
    HTTP connection pool for the actor's whole life, shared by the batches it scores at
    once, for any number of Datasets and runs.

    A Ray async actor: its methods run on the actor's one event loop, so the batches it is
    handed at once all make progress (a synchronous method would hold the loop for a whole
    batch). Rubrics come with the batches, each set once per actor (`evaluate`)."""

    def __init__(self, judge: JudgeConfig, allow_import: bool = False) -> None:
        self._judge = judge
        self._allow_import = allow_import
        self._plugins = create_plugin_manager()
        self._cache_option = judge.cache_option()
        self._session: LLMSession | None = None
        self._close_cache: Closer | None = None
        self._opening = asyncio.Lock()
        #: the last `RUBRIC_SETS_KEPT` sets of rubrics, by key (a long suite's chunks each
        #: bring a set)
        self._rubrics: collections.OrderedDict[str, dict[str, Rubric]] = collections.OrderedDict()
        #: targets of the batches being scored now (what `load` reports)
        self._load = 0
        self._gate: Admission | None = None
        if judge.budget is not None:
            from rubricflow.ray.budget import budget_admission, find_budget

            self._gate = budget_admission(find_budget(*judge.budget), run=judge.run)

    async def ready(self) -> str:
        """The id of the node this actor runs on (once it has started)."""
        return str(ray.get_runtime_context().get_node_id())

    async def load(self) -> int:
        """Targets this actor is scoring now: a batch goes to the least loaded actor."""
        return self._load

    async def evaluate(
        self,
        rows: list[dict[str, Any]],
        rubrics: RubricSet,
        options: Mapping[str, Any],
    ) -> dict[str, list[Any]]:
        """One batch's evaluation columns: `rows` (`position`, `rubric` key, `target` as
        JSON, or a target's own fields) scored against `rubrics`."""
        self._load += len(rows)
        try:
            known = await self._rubric_set(rubrics)
            return evaluation_columns(await self._evaluate(rows, known, options))
        finally:
            self._load -= len(rows)

    async def _rubric_set(self, rubrics: RubricSet) -> dict[str, Rubric]:
        """The rubrics of `rubrics` (fetched from the object store once per actor), checked
        against this worker's plugins."""
        key, ref = rubrics
        known = self._rubrics.get(key)
        if known is None:
            fetched = ref[0]
            if not isinstance(fetched, Mapping):  # an ObjectRef: the rubrics in the store
                fetched = await fetched
            known = dict(fetched)
            refuse_missing_scorers(known, self._plugins)
            self._rubrics[key] = known
            while len(self._rubrics) > RUBRIC_SETS_KEPT:
                self._rubrics.popitem(last=False)
        else:
            self._rubrics.move_to_end(key)
        return known

    async def _open_session(self) -> LLMSession | None:
        async with self._opening:
            if self._session is None and self._judge.spec is not None:
                cache, self._close_cache = await open_cache(self._cache_option)
                self._session = LLMSession(
                    self._judge.spec,
                    plugins=self._plugins,
                    allow_import=self._allow_import,
                    settings=self._judge.settings or None,
                    cache=cache,
                )
        return self._session

    async def _evaluate(
        self,
        rows: list[dict[str, Any]],
        rubrics: Mapping[str, Rubric],
        options: Mapping[str, Any],
    ) -> list[tuple[int | None, Evaluation]]:
        pairs = [(_rubric_of(row, rubrics), _target_of(row)) for row in rows]
        run_options = dict(options)
        inner = dict(run_options.pop("options", None) or {})
        session = await self._open_session()
        if session is not None:
            inner["llm"] = session
        target_concurrency = int(run_options.pop("target_concurrency", 8))
        run_options.pop("allow_import", None)  # the actor's own, as its judge session's
        evaluations: list[Evaluation] = []
        with admit_with(self._gate):
            async for evaluation in evaluate_cases(
                pairs,
                target_concurrency=target_concurrency,
                plugins=self._plugins,
                allow_import=self._allow_import,
                options=inner,
                **run_options,
            ):
                evaluations.append(evaluation)
        return [
            (row.get("position"), evaluation)
            for row, evaluation in zip(rows, evaluations, strict=True)
        ]


#: a set of rubrics as the batches carry it: (its key, [the rubrics by content hash, or
#: an ObjectRef to them]); in a list, so Ray hands the actor the reference, not the value
RubricSet = tuple[str, list[Any]]


def refuse_missing_scorers(rubrics: Mapping[str, Rubric], plugins: PluginRegistry) -> None:
    """Raise a PluginError naming the node and the scorers when a rubric needs a plugin
    this worker lacks (plugins are found through their entry points, as locally)."""
    missing = missing_scorers(rubrics, plugins)
    if missing:
        import socket

        raise PluginError(
            f"a Ray worker on {socket.gethostname()} lacks plugins the rubric needs: "
            + "; ".join(missing)
            + ". Install them on every node (pip install the plugin package where the "
            "workers run), or run without --ray"
        )


def _rubric_of(row: Mapping[str, Any], rubrics: Mapping[str, Rubric]) -> Rubric:
    key = row.get("rubric")
    if isinstance(key, str) and key in rubrics:
        return rubrics[key]
    return next(iter(rubrics.values()))


def _target_of(row: Mapping[str, Any]) -> Target:
    """A row's target: its `target` column of target JSON, else the row itself."""
    text = row.get("target")
    if isinstance(text, str):
        return Target.model_validate_json(text)
    fields = {k: v for k, v in row.items() if v is not None and k not in ("position", "rubric")}
    return as_target(fields)
