"""Helpers for testing rubricflow plugins and rubrics without a network or an LLM.

A plugin's own tests typically build a plugin registry holding just that plugin, give the
LLM criteria scripted answers, and evaluate a rubric:

```python
from rubricflow import evaluate, parse_rubric
from rubricflow.testing import ScriptedJudge, make_plugins, make_target

judge = ScriptedJudge({"tone": "MET", "depth": 7})
plugins = make_plugins(my_plugin, judge)
evaluation = await evaluate(rubric, make_target("text", reference="ref"), plugins=plugins)
assert judge.calls[0].criterion_id == "tone"
```

- `make_plugins(*plugins)` builds a `PluginRegistry` with the built-ins and the given
  plugin objects or modules (no entry points unless asked, so installed plugins do not
  leak into a test). A given plugin replaces a built-in's scorer, function, format or
  provider of the same name, so a `ScriptedJudge` stands in for the LLM judges.
- `ScriptedJudge` answers `llm_verdict`, `llm_oneshot`, `llm_decode` and `llm_score`
  criteria from a script and records every call.
- `make_target(content, **fields)` builds a `Target`.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import Any, TypeAlias

from rubricflow.hookspecs import PROJECT_NAME, hookimpl
from rubricflow.model import Criterion
from rubricflow.plugins import BUILTIN_PLUGINS, PluginRegistry, create_plugin_manager
from rubricflow.results import CriterionResult, Target, exact_number
from rubricflow.scoring import Scorer, ScoringContext, result_from_value, scored_result
from rubricflow.targets import as_target

__all__ = [
    "JUDGE_SCORERS",
    "UNABLE",
    "Answer",
    "JudgeCall",
    "ScriptedJudge",
    "Unable",
    "make_plugins",
    "make_target",
]

#: The scorer names a `ScriptedJudge` registers: one per LLM judging strategy
#: (`llm_oneshot` judges a rubric's one-shot criteria together, via `score_group`).
JUDGE_SCORERS = ("llm_verdict", "llm_oneshot", "llm_decode", "llm_score")


@dataclass(frozen=True)
class Unable:
    """A scripted answer meaning "the judge gave no usable answer": the criterion's result
    is `unable_to_evaluate` with `reason` in its notes."""

    reason: str = "the scripted judge gave no usable answer"


#: The ready-made `Unable` answer (the text "unable" works too).
UNABLE = Unable()

Answer: TypeAlias = str | bool | int | float | Unable | Exception | type[Exception]
"""What a script says for a criterion:

- `"MET"` / `"UNMET"` (any case) or `True` / `False`: a verdict;
- a level id: that level (an id the criterion does not have is `unable_to_evaluate`,
  as a real judge's invalid answer would be);
- an `int` or `float` in 0..10: a judge score, scored as score / 10 (outside 0..10 is
  `unable_to_evaluate`);
- `UNABLE`, an `Unable(reason)` or the text `"unable"`: `unable_to_evaluate`;
- an exception instance or class: the scorer raises it, as a failing provider would
  (the engine turns that into an `error` result).
"""

ScriptEntry: TypeAlias = Answer | Callable[[Criterion, Target], Answer]


@dataclass(frozen=True)
class JudgeCall:
    """One call a `ScriptedJudge` received."""

    scorer: str
    criterion_id: str
    target_id: str | None
    content: Any
    answer: Any


class ScriptedJudge:
    """A scorer plugin that answers LLM criteria from a script instead of a model.

    `script` maps criterion ids to an `Answer`, or to a callable `(criterion, target) ->
    Answer` when the answer depends on the target. `default` answers criteria the script
    does not name; without one such a criterion is `unable_to_evaluate`, like a judge
    answer that leaves a criterion out. Register it with `make_plugins(judge)` (or
    `create_plugin_manager(plugins=[judge])`); it provides the scorers named in
    `JUDGE_SCORERS` and appends a `JudgeCall` to `calls` for every criterion it scores.
    """

    def __init__(
        self,
        script: Mapping[str, ScriptEntry] | None = None,
        *,
        default: ScriptEntry | None = None,
        name: str = "scripted-judge",
    ) -> None:
        self.script: dict[str, ScriptEntry] = dict(script or {})
        self.default = default
        self.calls: list[JudgeCall] = []
        self.__name__ = name  # the plugin name the plugin manager registers it under

    @hookimpl
    def rubricflow_scorers(self) -> Sequence[Scorer]:
        """The scripted stand-ins for the LLM judging strategies."""
        return [
            (_ScriptedGroupScorer if scorer == "llm_oneshot" else _ScriptedScorer)(self, scorer)
            for scorer in JUDGE_SCORERS
        ]

    def calls_for(self, criterion_id: str) -> list[JudgeCall]:
        """The calls this judge received for one criterion, in order."""
        return [call for call in self.calls if call.criterion_id == criterion_id]

    def answer_for(self, criterion: Criterion, target: Target) -> Answer | None:
        """The scripted answer for this criterion and target (None: not scripted)."""
        entry = self.script.get(criterion.id, self.default)
        if callable(entry) and not isinstance(entry, type):
            return entry(criterion, target)
        return entry

    async def judge(
        self, scorer: str, criterion: Criterion, target: Target, context: ScoringContext
    ) -> CriterionResult:
        """Answer one criterion as the scorer named `scorer`, recording the call."""
        answer = self.answer_for(criterion, target)
        self.calls.append(JudgeCall(scorer, criterion.id, target.id, target.content, answer))
        return _result(criterion, context, scorer, answer)


class _ScriptedScorer:
    """One of a `ScriptedJudge`'s scorers (`llm_verdict`, `llm_decode` or `llm_score`)."""

    def __init__(self, judge: ScriptedJudge, name: str) -> None:
        self.judge = judge
        self.name = name
        self.description = f"scripted stand-in for the {name} LLM judge (rubricflow.testing)"

    async def score(
        self, criterion: Criterion, target: Target, context: ScoringContext
    ) -> CriterionResult:
        return await self.judge.judge(self.name, criterion, target, context)


class _ScriptedGroupScorer(_ScriptedScorer):
    """The `llm_oneshot` stand-in: the executor hands it all one-shot criteria at once;
    each is answered from the script (and recorded) in rubric order."""

    async def score_group(
        self, criteria: Sequence[Criterion], target: Target, context: ScoringContext
    ) -> list[CriterionResult]:
        return [await self.judge.judge(self.name, c, target, context) for c in criteria]


def _unable(criterion: Criterion, scorer: str, reason: str) -> CriterionResult:
    return CriterionResult(
        criterion_id=criterion.id,
        status="unable_to_evaluate",
        weight=criterion.weight,
        required=criterion.required,
        scorer=scorer,
        notes=reason,
    )


def _result(
    criterion: Criterion, context: ScoringContext, scorer: str, answer: Answer | None
) -> CriterionResult:
    if answer is None:
        return _unable(
            criterion, scorer, f"the scripted judge has no answer for criterion {criterion.id!r}"
        )
    if isinstance(answer, Unable):
        return _unable(criterion, scorer, answer.reason)
    if isinstance(answer, Exception):
        raise answer
    if isinstance(answer, type) and issubclass(answer, Exception):
        raise answer(f"scripted failure for criterion {criterion.id!r}")
    reasoning = f"scripted answer {answer!r}"
    if isinstance(answer, bool):
        return result_from_value(criterion, context, scorer, answer, what="the scripted judge")
    if isinstance(answer, int | float):
        number = float(answer)
        if not math.isfinite(number) or not 0.0 <= number <= 10.0:
            return _unable(
                criterion, scorer, f"the scripted judge answered {answer!r}, outside 0..10"
            )
        exact = exact_number(number)  # 8.7 / 10 is 0.87 exactly, as for a real judge
        return scored_result(
            criterion, context, scorer, exact / 10, judge_score=number, reasoning=reasoning
        )
    if isinstance(answer, str):
        if answer.lower() == "unable" and criterion.level(answer) is None:
            return _unable(criterion, scorer, Unable().reason)
        result = result_from_value(criterion, context, scorer, answer, what="the scripted judge")
        if result.status == "error":
            return _unable(criterion, scorer, result.notes)
        return result.model_copy(update={"reasoning": reasoning})
    raise TypeError(
        f"a scripted answer is a verdict, a level id, a 0..10 number, UNABLE or an "
        f"exception; got {type(answer).__name__} {answer!r}"
    )


_NAMED_ITEMS = ("rubricflow_scorers", "rubricflow_formats")  # items with a `.name`


def _filtered(function: Callable[[], Any], hook: str, hidden: set[str]) -> Callable[[], Any]:
    """A hook implementation returning what `function` returns minus the `hidden` names."""

    def contribute() -> Any:
        items = function()
        if items is None:
            return None
        if hook in _NAMED_ITEMS:
            return [item for item in items if item.name not in hidden]
        return {key: value for key, value in dict(items).items() if key not in hidden}

    return hookimpl(contribute)


class _Without:
    """A built-in plugin module with some of its contributions left out, so that a plugin
    given to `make_plugins` can take their names. Every other hook implementation of the
    module (listeners included) is carried over unchanged."""

    def __init__(self, name: str, module: object, hidden: Mapping[str, set[str]]) -> None:
        self.__name__ = name
        for attribute in dir(module):
            if not attribute.startswith("rubricflow_"):
                continue
            function = getattr(module, attribute)
            if hidden.get(attribute):
                function = _filtered(function, attribute, hidden[attribute])
            setattr(self, attribute, function)


def _contributions(registry: PluginRegistry) -> dict[str, set[str]]:
    """The names a registry holds, by the hook that contributes them."""
    return {
        "rubricflow_scorers": set(registry.scorers),
        "rubricflow_check_functions": set(registry.functions),
        "rubricflow_formats": set(registry.formats),
        "rubricflow_llm_providers": set(registry.providers),
    }


def make_plugins(
    *plugins: object, builtins: bool = True, entry_points: bool = False
) -> PluginRegistry:
    """A plugin registry holding the built-ins (unless `builtins=False`), installed
    entry-point plugins (only with `entry_points=True`) and the given plugin objects or
    modules.

    A given plugin may replace a built-in's scorer, check function, format or provider of
    the same name (a `ScriptedJudge` stands in for the LLM judges this way). Name clashes
    between given plugins, or with entry-point plugins, raise `PluginConflictError` just as
    `create_plugin_manager` does. `RUBRICFLOW_DISABLE_PLUGINS` is honoured.
    """
    if not builtins or not plugins:
        return create_plugin_manager(
            plugins=plugins, builtins=builtins, load_entry_points=entry_points
        )
    given = _contributions(
        create_plugin_manager(plugins=plugins, builtins=False, load_entry_points=False)
    )
    plain = _contributions(create_plugin_manager(builtins=True, load_entry_points=False))
    if not any(names & plain[hook] for hook, names in given.items()):
        return create_plugin_manager(plugins=plugins, builtins=True, load_entry_points=entry_points)
    version = metadata.version(PROJECT_NAME)
    wrapped = [
        _Without(name, importlib.import_module(module), given) for name, module in BUILTIN_PLUGINS
    ]
    registry = create_plugin_manager(
        plugins=[*wrapped, *plugins], builtins=False, load_entry_points=entry_points
    )
    builtin_names = {name for name, _ in BUILTIN_PLUGINS}
    for info in registry.plugins():
        if info.name in builtin_names:
            info.distribution, info.version = PROJECT_NAME, version
    return registry


def make_target(content: Any = "", **fields: Any) -> Target:
    """A `Target` with `content` and any of `id`, `query`, `reference`, `metadata`
    (a numeric id becomes text; an unknown field is a `ConfigurationError`)."""
    return as_target({"content": content, **fields})
