"""Build the plugin manager: built-ins, entry-point plugins, blocking, and name clashes.

Nothing is registered at import time; `create_plugin_manager()` builds a fresh
`PluginRegistry` and `default_plugins()` caches one for callers that pass none.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import logging
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import metadata
from typing import TYPE_CHECKING, Any

import pluggy

from rubricflow.errors import PluginConflictError, PluginError
from rubricflow.formats import loader
from rubricflow.hookspecs import (
    CONFIG_CHECK_ATTRIBUTE,
    CONFIG_SCHEMA_ATTRIBUTE,
    PROJECT_NAME,
    ConfigCheck,
    RubricflowHookSpecs,
)
from rubricflow.settings import current, env_name

if TYPE_CHECKING:
    from rubricflow.formats.base import RubricFormat
    from rubricflow.scoring import Scorer

__all__ = [
    "BLOCK_ENV",
    "BUILTIN_PLUGINS",
    "ENTRY_POINT_GROUP",
    "PluginInfo",
    "PluginRegistry",
    "create_plugin_manager",
    "default_plugins",
    "reset_default_plugins",
]

logger = logging.getLogger("rubricflow.plugins")

ENTRY_POINT_GROUP = PROJECT_NAME
BLOCK_ENV = env_name("disable_plugins")
BUILTIN_PLUGINS: tuple[tuple[str, str], ...] = (
    ("builtin-formats", "rubricflow.builtin_formats"),
    ("builtin-scorers", "rubricflow.scorers.builtin"),
    ("builtin-functions", "rubricflow.functions"),
    ("builtin-trajectory", "rubricflow.trajectory"),
    ("builtin-llm-providers", "rubricflow.llm.builtin"),
)
_BUILTIN_NAMES = {name for name, _ in BUILTIN_PLUGINS}
#: config schemas already checked against their metaschema, by object: (the schema, a copy
#: of it when checked, its validator). A registry is made per command, worker and session,
#: and checking the built-ins' twenty schemas was most of its cost.
_CHECKED_SCHEMAS: dict[int, tuple[Mapping[str, Any], Any, Any]] = {}


@dataclass
class PluginInfo:
    """What one registered plugin contributes, for `rubricflow plugins`."""

    name: str
    distribution: str | None = None
    version: str | None = None
    scorers: list[str] = field(default_factory=list)
    functions: list[str] = field(default_factory=list)
    formats: list[str] = field(default_factory=list)
    providers: list[str] = field(default_factory=list)
    #: the metric names its scorers compute (a scorer's optional `metrics` attribute)
    metrics: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "distribution": self.distribution,
            "version": self.version,
            "scorers": self.scorers,
            "functions": self.functions,
            "formats": self.formats,
            "providers": self.providers,
            "metrics": self.metrics,
        }


class PluginRegistry:
    """The plugins of one rubricflow session, with their contributions gathered by name."""

    def __init__(self, manager: pluggy.PluginManager, dists: Mapping[str, tuple[str, str]]):
        self.manager = manager
        self._dists = dict(dists)
        self._infos: dict[str, PluginInfo] = {}
        for name, plugin in manager.list_name_plugin():
            if plugin is not None:
                dist = self._dists.get(name)
                self._infos[name] = PluginInfo(
                    name, dist[0] if dist else None, dist[1] if dist else None
                )
        self.scorers: dict[str, Scorer] = self._gather(
            "rubricflow_scorers", "scorer", "scorers", lambda item: item.name, as_items=True
        )
        self.functions: dict[str, Callable[..., Any]] = self._gather(
            "rubricflow_check_functions", "check function", "functions", None
        )
        self._gather_metrics()
        self._config_checks = self._gather_config_schemas()
        self.formats: dict[str, RubricFormat] = self._gather(
            "rubricflow_formats", "rubric format", "formats", lambda item: item.name, as_items=True
        )
        self.providers: dict[str, Callable[..., Any]] = self._gather(
            "rubricflow_llm_providers", "LLM provider", "providers", None
        )
        _refuse_listener_wrappers(manager)

    def _gather(
        self,
        hook_name: str,
        what: str,
        info_field: str,
        name_of: Callable[[Any], str] | None,
        as_items: bool = False,
    ) -> dict[str, Any]:
        found: dict[str, Any] = {}
        owners: dict[str, str] = {}
        hook = getattr(self.manager.hook, hook_name)
        for impl in reversed(hook.get_hookimpls()):
            try:
                contributed = impl.function()
            except Exception as error:
                raise PluginError(
                    f"plugin {impl.plugin_name!r} failed in {hook_name}: {error}; "
                    f"fix the plugin or disable it with {BLOCK_ENV}={impl.plugin_name}"
                ) from error
            if contributed is None:
                continue
            pairs: Iterable[tuple[str, Any]]
            try:
                if as_items:
                    assert name_of is not None
                    pairs = [(name_of(item), item) for item in contributed]
                else:
                    pairs = list(dict(contributed).items())
            except (TypeError, ValueError, AttributeError) as error:
                raise PluginError(
                    f"plugin {impl.plugin_name!r} returned something unusable from {hook_name} "
                    f"({error}); fix the plugin or disable it with "
                    f"{BLOCK_ENV}={impl.plugin_name}"
                ) from error
            for name, item in pairs:
                if name in owners:
                    third_party = [
                        p for p in (impl.plugin_name, owners[name]) if p not in _BUILTIN_NAMES
                    ]
                    culprit = third_party[0] if third_party else impl.plugin_name
                    raise PluginConflictError(
                        f"{what} {name!r} is registered by both plugin {owners[name]!r} and "
                        f"plugin {impl.plugin_name!r}; uninstall one or disable it with "
                        f"{BLOCK_ENV}={culprit}"
                    )
                owners[name] = impl.plugin_name
                found[name] = item
                info = self._infos.setdefault(impl.plugin_name, PluginInfo(impl.plugin_name))
                getattr(info, info_field).append(name)
        return found

    def _gather_metrics(self) -> None:
        """List, under the plugin that registered it, the metric names each scorer says it
        computes: an optional `metrics` attribute (a sequence of names, or a callable
        returning one). Scorers without it are unaffected, so the scorer API stays as
        it was."""
        for info in self._infos.values():
            for name in info.scorers:
                declared = getattr(self.scorers[name], "metrics", None)
                try:
                    names = declared() if callable(declared) else declared
                    info.metrics.extend(str(n) for n in names or ())
                except Exception as error:
                    raise PluginError(
                        f"plugin {info.name!r}: scorer {name!r} has unusable `metrics` "
                        f"({error}); fix the plugin or disable it with {BLOCK_ENV}={info.name}"
                    ) from error

    def _gather_config_schemas(self) -> dict[str, tuple[Any, ConfigCheck | None]]:
        """The config schema (a jsonschema validator) and further check each check function
        declares (`@config_schema`); a schema that is not valid JSON Schema is the plugin's
        error, found here rather than when a rubric is validated. Functions that declare
        none are not in the result: their config is not checked, as before."""
        declared = {
            name: function
            for name, function in self.functions.items()
            if getattr(function, CONFIG_SCHEMA_ATTRIBUTE, None) is not None
        }
        if not declared:
            return {}
        from jsonschema import exceptions, validators

        checks: dict[str, tuple[Any, ConfigCheck | None]] = {}
        for name, function in declared.items():
            schema = getattr(function, CONFIG_SCHEMA_ATTRIBUTE)
            check = getattr(function, CONFIG_CHECK_ATTRIBUTE, None)
            owner = next((i.name for i in self._infos.values() if name in i.functions), name)
            try:
                if not isinstance(schema, Mapping) or (check is not None and not callable(check)):
                    raise TypeError("the schema must be a mapping and the check a callable")
                checks[name] = (_checked_validator(schema, validators), check)
            except (exceptions.SchemaError, TypeError) as error:
                message = error.message if isinstance(error, exceptions.SchemaError) else error
                raise PluginError(
                    f"plugin {owner!r}: the config schema of check function {name!r} is not "
                    f"usable ({message}); fix the plugin or disable it with {BLOCK_ENV}={owner}"
                ) from error
        return checks

    def check_function_config(self, name: str, config: Mapping[str, Any]) -> list[tuple[str, str]]:
        """What is wrong with `config` for check function `name`, as `(field, problem)`
        pairs (field: a dotted path inside the config, "" for the config itself); empty
        when it is fine or the function declares no schema."""
        declared = self._config_checks.get(name)
        if declared is None:
            return []
        validator, check = declared
        problems = [
            (".".join(str(part) for part in error.absolute_path), _config_message(error))
            for error in sorted(
                validator.iter_errors(dict(config)), key=lambda e: [str(p) for p in e.path]
            )
        ]
        if problems or check is None:
            return problems
        try:
            return [(str(field), str(problem)) for field, problem in check(config)]
        except Exception as error:  # a plugin's check is the plugin's: report, never crash
            return [("", f"the config check of {name!r} failed: {type(error).__name__}: {error}")]

    def plugins(self) -> list[PluginInfo]:
        """Every registered plugin and what it contributes, built-ins first."""
        return list(self._infos.values())

    async def notify(self, event: Mapping[str, Any]) -> None:
        """Tell the listeners about a committed event (a transition, a stored evaluation:
        `rubricflow.review.events`) in pluggy's call order: `tryfirst` listeners first,
        then the others, last registered first, `trylast` ones last. Each, sync or async,
        has finished before the next is called; one that raises is logged and skipped.
        (pluggy keeps its hook implementations in the reverse of that order.)"""
        impls = self.manager.hook.rubricflow_artifact_transition.get_hookimpls()
        for impl in reversed(impls):
            try:
                outcome = impl.function(event=event)
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception:
                logger.exception(
                    "listener %s failed on artifact %s %s; the transition stands",
                    impl.plugin_name,
                    event.get("artifact_id"),
                    event.get("trigger", event.get("kind")),
                )


def _config_message(error: Any) -> str:
    """jsonschema's message, followed by what the failing part of the schema says it
    expects (its `description`), which is the fix."""
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    description = schema.get("description")
    return f"{error.message}; expected {description}" if description else str(error.message)


def _refuse_listener_wrappers(manager: pluggy.PluginManager) -> None:
    """A `wrapper=True` (or `hookwrapper=True`) listener is a `PluginError`: listeners run
    one at a time, sync or async, each finished before the next, and a synchronous
    wrapper cannot run around an async listener's work, so it would never be called."""
    for impl in manager.hook.rubricflow_artifact_transition.get_hookimpls():
        if impl.wrapper or impl.hookwrapper:
            marker = "wrapper=True" if impl.wrapper else "hookwrapper=True"
            raise PluginError(
                f"plugin {impl.plugin_name!r} implements rubricflow_artifact_transition with "
                f"@hookimpl({marker}); lifecycle listeners cannot be wrappers (each listener, "
                "sync or async, runs on its own); drop the marker and do the work in a plain "
                "listener, ordered with tryfirst=True or trylast=True if it must come first "
                f"or last, or disable the plugin with {BLOCK_ENV}={impl.plugin_name}"
            )


def _invalid_plugin(name: str, error: Exception) -> PluginError:
    return PluginError(
        f"plugin {name!r} has an invalid hook implementation: {error}; "
        f"fix the plugin or disable it with {BLOCK_ENV}={name}"
    )


def _blocked_names(blocked: Iterable[str] | None) -> set[str]:
    names = set(current().disable_plugins)
    names.update(blocked or ())
    return names


def _checked_validator(schema: Mapping[str, Any], validators: Any) -> Any:
    """A validator for a config schema, checked against its metaschema once per schema
    object (again if the object changed since); raises jsonschema's SchemaError."""
    seen = _CHECKED_SCHEMAS.get(id(schema))
    if seen is not None and seen[0] is schema and seen[1] == schema:
        return seen[2]
    validator = validators.validator_for(schema)
    validator.check_schema(dict(schema))
    checked = validator(schema, format_checker=validator.FORMAT_CHECKER)
    _CHECKED_SCHEMAS[id(schema)] = (schema, copy.deepcopy(dict(schema)), checked)
    return checked


def create_plugin_manager(
    *,
    plugins: Sequence[object] = (),
    load_entry_points: bool = True,
    builtins: bool = True,
    blocked: Iterable[str] | None = None,
) -> PluginRegistry:
    """Build a plugin registry: built-ins, then `rubricflow` entry points, then `plugins`.

    Plugins named in `blocked` or in the `RUBRICFLOW_DISABLE_PLUGINS` environment
    variable (comma-separated) are skipped. Raises `PluginConflictError` when two plugins
    register the same name and `PluginError` when an entry point cannot be loaded.
    """
    manager = pluggy.PluginManager(PROJECT_NAME)
    manager.add_hookspecs(RubricflowHookSpecs)
    skip = _blocked_names(blocked)
    for name in skip:
        manager.set_blocked(name)
    dists: dict[str, tuple[str, str]] = {}
    if builtins:
        version = metadata.version(PROJECT_NAME)
        for name, module_name in BUILTIN_PLUGINS:
            if name not in skip:
                manager.register(importlib.import_module(module_name), name=name)
                dists[name] = (PROJECT_NAME, version)
    if load_entry_points:
        _register_entry_points(manager, skip, dists)
    for plugin in plugins:
        name = getattr(plugin, "__name__", None) or type(plugin).__name__
        if name not in skip:
            _register(manager, plugin, name)
    try:
        manager.check_pending()
    except pluggy.PluginValidationError as error:
        name = manager.get_name(error.plugin) or repr(error.plugin)
        raise PluginError(
            f"plugin {name!r} implements an unknown hook: {error}; hooks are named "
            f"rubricflow_* (see docs/plugins.md); fix it or disable it with {BLOCK_ENV}={name}"
        ) from error
    return PluginRegistry(manager, dists)


def _register_entry_points(
    manager: pluggy.PluginManager, skip: Collection[str], dists: dict[str, tuple[str, str]]
) -> None:
    """Register the `rubricflow` entry points not in `skip` (nor already registered),
    noting the distribution of each in `dists`."""
    for entry_point in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if entry_point.name in skip or manager.has_plugin(entry_point.name):
            continue
        try:
            plugin = entry_point.load()
        except Exception as error:
            raise PluginError(
                f"cannot load plugin {entry_point.name!r} ({entry_point.value}): {error}; "
                f"reinstall it or disable it with {BLOCK_ENV}={entry_point.name}"
            ) from error
        _register(manager, plugin, entry_point.name)
        if entry_point.dist is not None:
            dists[entry_point.name] = (entry_point.dist.name, entry_point.dist.version)


def _register(manager: pluggy.PluginManager, plugin: object, name: str) -> None:
    """Register `plugin` as `name`; a malformed plugin or a name taken is a clear error."""
    try:
        manager.register(plugin, name=name)
    except pluggy.PluginValidationError as error:
        raise _invalid_plugin(name, error) from error
    except ValueError as error:
        raise PluginConflictError(f"plugin {name!r} cannot be registered: {error}") from error


@lru_cache(maxsize=1)
def _cached_default() -> PluginRegistry:
    return create_plugin_manager()


def default_plugins() -> PluginRegistry:
    """The process-wide registry, built on first use (never at import time)."""
    return _cached_default()


def reset_default_plugins() -> None:
    """Forget the cached registry, so the next `default_plugins()` rebuilds it."""
    _cached_default.cache_clear()


# The rubric loader sits below this layer and cannot name the plugin manager: it is told
# here where its default formats come from (the registry is still built on first use).
loader.use_default_registry(default_plugins)
