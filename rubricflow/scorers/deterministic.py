"""The `deterministic` scorer: run a registered check function on the target.

A rubric names a function by its registered name. A `module:function` that no plugin
registered is imported only when the caller opts in (`allow_import=True`,
`--allow-import`), because rubric files are data and must not run arbitrary code.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from rubricflow.model import Criterion
from rubricflow.results import CriterionResult, Target
from rubricflow.scoring import ScoringContext, error_result, result_from_value

__all__ = ["DeterministicScorer", "resolve_function"]


def resolve_function(name: str, context: ScoringContext) -> tuple[Callable[..., Any] | None, str]:
    """The function a rubric names, or (None, why it is refused or missing)."""
    registered = context.plugins.functions.get(name)
    if registered is not None:
        return registered, ""
    if ":" not in name:
        known = ", ".join(sorted(context.plugins.functions)) or "none"
        return None, (
            f"no check function {name!r} is registered (registered: {known}); "
            "install the plugin that provides it or fix the name"
        )
    if not context.allow_import:
        return None, (
            f"function {name!r} is not a registered check; rubric files are data, so "
            "rubricflow imports code they name only when you allow it (allow_import=True "
            "or --allow-import); or register the function in a plugin"
        )
    module_name, _, attribute = name.partition(":")
    try:
        module = importlib.import_module(module_name)
        function = module
        for part in attribute.split("."):
            function = getattr(function, part)
    except (Exception, SystemExit) as error:
        return None, f"cannot import {name!r}: {type(error).__name__}: {error}"
    if not callable(function):
        return None, f"{name!r} is not callable"
    return function, ""


@lru_cache(maxsize=1024)
def _accepts_config(function: Callable[..., Any]) -> bool:
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(
        p.kind is not inspect.Parameter.POSITIONAL_ONLY for p in list(parameters)[1:]
    ) or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


class DeterministicScorer:
    name = "deterministic"
    description = "runs a registered check function; it returns a level id, a bool or a 0..1 float"

    async def score(
        self, criterion: Criterion, target: Target, context: ScoringContext
    ) -> CriterionResult:
        name = criterion.scoring.function or ""
        function, why = resolve_function(name, context)
        if function is None:
            return error_result(criterion, self.name, why)
        config = dict(criterion.scoring.config)
        try:
            if config and _accepts_config(function):
                value = function(target, **config)
            elif config:
                return error_result(
                    criterion,
                    self.name,
                    f"check {name!r} takes no options but scoring.config gives "
                    f"{', '.join(sorted(config))}; remove them or fix the function",
                )
            else:
                value = function(target)
            if inspect.isawaitable(value):
                value = await value
        except (Exception, SystemExit) as error:  # sys.exit() in a check is its failure
            return error_result(
                criterion, self.name, f"check {name!r} raised {type(error).__name__}: {error}"
            )
        return result_from_value(criterion, context, self.name, value, what=f"check {name!r}")
