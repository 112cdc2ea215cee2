"""The evaluation actor: one per Ray worker slot, holding one judge session (and its HTTP
connection pools) on an event loop of its own for the actor's whole life, and scoring the
batches of targets Ray Data hands it."""

from __future__ import annotations

import asyncio
import threading
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

__all__ = ["BatchEvaluator", "JudgeConfig", "evaluation_columns", "missing_scorers"]

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
    """`ds.map_batches(BatchEvaluator, fn_constructor_kwargs=...)`: scores each batch's
    rows (`position`, `rubric` key, `target` as JSON) and returns evaluation columns.

    Fails at start, naming the node and the scorers, when a rubric needs a plugin this
    worker lacks (plugins are found through their entry points, as locally)."""

    def __init__(
        self,
        rubrics: Mapping[str, Rubric],
        judge: JudgeConfig,
        options: Mapping[str, Any],
    ) -> None:
        self._rubrics = dict(rubrics)
        self._plugins = create_plugin_manager()
        missing = missing_scorers(self._rubrics, self._plugins)
        if missing:
            import socket

            raise PluginError(
                f"a Ray worker on {socket.gethostname()} lacks plugins the rubric needs: "
                + "; ".join(missing)
                + ". Install them on every node (pip install the plugin package where the "
                "workers run), or run without --ray"
            )
        self._options = dict(options)
        self._judge = judge
        self._cache_option = judge.cache_option()
        self._session: LLMSession | None = None
        self._close_cache: Closer | None = None
        self._gate: Admission | None = None
        if judge.budget is not None:
            from rubricflow.ray.budget import budget_admission, find_budget

            self._gate = budget_admission(find_budget(*judge.budget), run=judge.run)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="rubricflow-ray-actor", daemon=True
        )
        self._thread.start()
        if judge.spec is not None:
            # opened before any batch: the batches an actor scores at once share it
            asyncio.run_coroutine_threadsafe(self._open_session(), self._loop).result()

    def __call__(self, batch: Any) -> dict[str, list[Any]]:
        """One batch's evaluation columns. Ray Data may call this from several threads at
        once (`BATCHES_PER_ACTOR`); each batch runs on the actor's one event loop."""
        rows = batch.to_pylist() if hasattr(batch, "to_pylist") else _rows_of(batch)
        future = asyncio.run_coroutine_threadsafe(self._evaluate(rows), self._loop)
        return evaluation_columns(future.result())

    async def _open_session(self) -> None:
        cache, self._close_cache = await open_cache(self._cache_option)
        self._session = LLMSession(
            self._judge.spec,
            plugins=self._plugins,
            allow_import=bool(self._options.get("allow_import")),
            settings=self._judge.settings or None,
            cache=cache,
        )

    async def _evaluate(self, rows: list[dict[str, Any]]) -> list[tuple[int | None, Evaluation]]:
        pairs = [(self._rubric_of(row), _target_of(row)) for row in rows]
        options = dict(self._options)
        inner = dict(options.pop("options", None) or {})
        if self._session is not None:
            inner["llm"] = self._session
        target_concurrency = int(options.pop("target_concurrency", 8))
        evaluations: list[Evaluation] = []
        with admit_with(self._gate):
            async for evaluation in evaluate_cases(
                pairs,
                target_concurrency=target_concurrency,
                plugins=self._plugins,
                options=inner,
                **options,
            ):
                evaluations.append(evaluation)
        return [
            (row.get("position"), evaluation)
            for row, evaluation in zip(rows, evaluations, strict=True)
        ]

    def _rubric_of(self, row: Mapping[str, Any]) -> Rubric:
        key = row.get("rubric")
        if isinstance(key, str) and key in self._rubrics:
            return self._rubrics[key]
        return next(iter(self._rubrics.values()))


def _target_of(row: Mapping[str, Any]) -> Target:
    """A row's target: its `target` column of target JSON, else the row itself."""
    text = row.get("target")
    if isinstance(text, str):
        return Target.model_validate_json(text)
    fields = {k: v for k, v in row.items() if v is not None and k not in ("position", "rubric")}
    return as_target(fields)


def _rows_of(batch: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A batch of columns (numpy or lists) as rows of plain values."""
    names = list(batch)
    count = len(batch[names[0]]) if names else 0
    return [{name: _plain(batch[name][index]) for name in names} for index in range(count)]


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value
