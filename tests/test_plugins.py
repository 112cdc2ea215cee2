"""The plugin manager: built-ins through the hooks, no import-time registration, name
clashes, blocking, bad plugins, and lifecycle listeners."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import types
from collections.abc import Callable
from typing import Any

import pytest

import rubricflow
from rubricflow import (
    PluginConflictError,
    PluginError,
    create_plugin_manager,
    hookimpl,
    parse_rubric,
)
from rubricflow.engine import evaluate
from rubricflow.plugins import BLOCK_ENV
from rubricflow.scorers.base import result_from_value

BUILTIN_FORMATS = {
    "native",
    "openrubricrl",
    "agentv",
    "rubric-pkg",
    "dataknobs",
    "rubricjudgespec",
    "rar",
    "healthbench",
    "openai-graders",
    "promptfoo",
}
BUILTIN_FUNCTIONS = {
    "non_empty",
    "levenshtein_within",
    "contains_json",
    "openai_multi",
    "word_count_between",
    "char_count_between",
    "contains_all",
    "contains_none",
    "matches_regex",
    "no_regex_match",
    "valid_json",
    "json_has_keys",
    "json_array_length",
    "no_email_addresses",
    "no_phone_numbers",
    "no_secrets",
    "contains_any",
    "contains_secrets",
    "string_check",
    "meta.criteria_coverage",
    "meta.criteria_independence",
    "meta.weight_distribution",
    "meta.threshold_reasonableness",
    "meta.level_ordering",
}


def plugin_module(name: str, **hooks: Callable[..., Any]) -> types.ModuleType:
    """A plugin module called `name` whose hook implementations are `hooks`."""
    module = types.ModuleType(name)
    for hook_name, function in hooks.items():
        setattr(module, hook_name, hookimpl(function))
    return module


class NamedScorer:
    description = "always 1.0"

    def __init__(self, name: str) -> None:
        self.name = name

    async def score(self, criterion: Any, target: Any, context: Any) -> Any:
        return result_from_value(criterion, context, self.name, 1.0, what=self.name)


def scorer_plugin(plugin_name: str, scorer_name: str) -> types.ModuleType:
    return plugin_module(plugin_name, rubricflow_scorers=lambda: [NamedScorer(scorer_name)])


def function_plugin(plugin_name: str, function_name: str) -> types.ModuleType:
    return plugin_module(
        plugin_name, rubricflow_check_functions=lambda: {function_name: lambda target: True}
    )


@pytest.fixture(autouse=True)
def _no_blocking_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BLOCK_ENV, raising=False)


# --- built-ins -------------------------------------------------------------------------


def test_builtins_are_registered_through_the_hooks() -> None:
    registry = create_plugin_manager(load_entry_points=False)

    assert {"deterministic", "schema"} <= set(registry.scorers)
    assert set(registry.functions) >= BUILTIN_FUNCTIONS
    assert set(registry.formats) >= BUILTIN_FORMATS
    infos = {info.name: info for info in registry.plugins()}
    assert infos["builtin-scorers"].scorers == [
        "deterministic",
        "schema",
        "llm_verdict",
        "llm_oneshot",
        "llm_decode",
        "llm_score",
    ]
    assert infos["builtin-llm-providers"].providers == [
        "openai",
        "anthropic",
        "ollama",
        "local",
        "python",
    ]
    assert set(infos["builtin-functions"].functions) == BUILTIN_FUNCTIONS
    assert set(infos["builtin-formats"].formats) == BUILTIN_FORMATS
    for name in (
        "builtin-scorers",
        "builtin-functions",
        "builtin-formats",
        "builtin-llm-providers",
    ):
        assert infos[name].distribution == "rubricflow"
        assert infos[name].version == rubricflow.__version__
    # the very hooks a third party implements return the built-ins
    hook = registry.manager.hook
    assert {s.name for batch in hook.rubricflow_scorers() for s in batch} >= {
        "deterministic",
        "schema",
    }
    assert {n for batch in hook.rubricflow_check_functions() for n in batch} >= BUILTIN_FUNCTIONS


def test_without_builtins_nothing_is_registered() -> None:
    registry = create_plugin_manager(load_entry_points=False, builtins=False)

    assert registry.scorers == {}
    assert registry.functions == {}
    assert registry.formats == {}
    assert registry.plugins() == []


def test_importing_rubricflow_registers_nothing() -> None:
    code = (
        "import rubricflow, rubricflow.plugins, rubricflow.engine, rubricflow.cli\n"
        "print(rubricflow.plugins._cached_default.cache_info().currsize)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0"


def test_default_plugins_is_built_once_on_first_use() -> None:
    from rubricflow.plugins import _cached_default, default_plugins, reset_default_plugins

    reset_default_plugins()
    try:
        first = default_plugins()
        assert default_plugins() is first
        assert _cached_default.cache_info().currsize == 1
        assert "deterministic" in first.scorers
    finally:
        reset_default_plugins()


# --- name clashes ----------------------------------------------------------------------


def test_two_plugins_registering_one_scorer_name_conflict() -> None:
    with pytest.raises(PluginConflictError) as caught:
        create_plugin_manager(
            plugins=[scorer_plugin("alpha_plugin", "dup"), scorer_plugin("beta_plugin", "dup")],
            load_entry_points=False,
        )

    message = str(caught.value)
    assert "'dup'" in message
    assert "alpha_plugin" in message
    assert "beta_plugin" in message


def test_two_plugins_registering_one_function_name_conflict() -> None:
    with pytest.raises(PluginConflictError) as caught:
        create_plugin_manager(
            plugins=[
                function_plugin("alpha_plugin", "is_nice"),
                function_plugin("beta_plugin", "is_nice"),
            ],
            load_entry_points=False,
        )

    message = str(caught.value)
    assert "'is_nice'" in message
    assert "alpha_plugin" in message
    assert "beta_plugin" in message


def test_a_plugin_reusing_a_builtin_function_name_conflicts_with_the_builtin() -> None:
    with pytest.raises(PluginConflictError) as caught:
        create_plugin_manager(
            plugins=[function_plugin("copycat_plugin", "non_empty")], load_entry_points=False
        )

    message = str(caught.value)
    assert "copycat_plugin" in message
    assert "builtin-functions" in message
    assert BLOCK_ENV in message


def test_distinct_names_from_two_plugins_coexist() -> None:
    registry = create_plugin_manager(
        plugins=[scorer_plugin("alpha_plugin", "first"), scorer_plugin("beta_plugin", "second")],
        load_entry_points=False,
    )

    assert {"first", "second"} <= set(registry.scorers)
    infos = {info.name: info for info in registry.plugins()}
    assert infos["alpha_plugin"].scorers == ["first"]
    assert infos["beta_plugin"].scorers == ["second"]


# --- blocking --------------------------------------------------------------------------


def test_env_var_blocks_plugins_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(BLOCK_ENV, " alpha_plugin , no-such-plugin")
    registry = create_plugin_manager(
        plugins=[scorer_plugin("alpha_plugin", "dup"), scorer_plugin("beta_plugin", "dup")],
        load_entry_points=False,
    )

    names = [info.name for info in registry.plugins()]
    assert "alpha_plugin" not in names
    assert "beta_plugin" in names
    assert "dup" in registry.scorers  # the clash is gone: only beta registers it


def test_blocked_argument_removes_a_plugins_contributions() -> None:
    registry = create_plugin_manager(
        plugins=[scorer_plugin("alpha_plugin", "first"), function_plugin("beta_plugin", "nice")],
        load_entry_points=False,
        blocked=["beta_plugin"],
    )

    assert "first" in registry.scorers
    assert "nice" not in registry.functions
    assert "beta_plugin" not in [info.name for info in registry.plugins()]


def test_env_var_and_blocked_argument_combine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(BLOCK_ENV, "alpha_plugin")
    registry = create_plugin_manager(
        plugins=[scorer_plugin("alpha_plugin", "first"), scorer_plugin("beta_plugin", "second")],
        load_entry_points=False,
        blocked=["beta_plugin"],
    )

    assert "first" not in registry.scorers
    assert "second" not in registry.scorers


async def test_blocking_the_builtin_functions_leaves_deterministic_criteria_unscored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(BLOCK_ENV, "builtin-functions")
    registry = create_plugin_manager(load_entry_points=False)
    rubric = parse_rubric(
        {
            "id": "r",
            "criteria": [
                {"id": "c", "scoring": {"method": "deterministic", "function": "non_empty"}}
            ],
        }
    )

    assert not BUILTIN_FUNCTIONS & set(registry.functions)
    assert "deterministic" in registry.scorers
    evaluation = await evaluate(rubric, "some text", plugins=registry)
    assert evaluation.verdict == "incomplete"
    assert evaluation.criteria[0].status == "error"
    assert "non_empty" in evaluation.criteria[0].notes


def test_blocking_the_builtin_scorers_removes_them() -> None:
    registry = create_plugin_manager(load_entry_points=False, blocked=["builtin-scorers"])

    assert "deterministic" not in registry.scorers
    assert "schema" not in registry.scorers
    assert "non_empty" in registry.functions


# --- bad plugins -----------------------------------------------------------------------


def test_a_plugin_implementing_an_unknown_hook_is_refused() -> None:
    typo = plugin_module("typo_plugin", rubricflow_scorerz=lambda: [])

    with pytest.raises(PluginError) as caught:
        create_plugin_manager(plugins=[typo], load_entry_points=False)

    assert "typo_plugin" in str(caught.value)
    assert "rubricflow_scorerz" in str(caught.value)


def test_unknown_hook_error_names_the_plugin_by_its_registered_name() -> None:
    """A plugin is known (and blocked) by its registered name, e.g. its entry-point name,
    which need not be its module's or class's name."""

    class Typo:
        __name__ = "typo-entry-point"

        @hookimpl
        def rubricflow_check_functionz(self) -> dict[str, Any]:
            return {}

    with pytest.raises(PluginError) as caught:
        create_plugin_manager(plugins=[Typo()], load_entry_points=False)

    assert "typo-entry-point" in str(caught.value)
    assert f"{BLOCK_ENV}=typo-entry-point" in str(caught.value)


def test_a_hook_implementation_with_unknown_arguments_is_a_plugin_error() -> None:
    bad = plugin_module("bad_args_plugin", rubricflow_scorers=lambda settings: [])

    with pytest.raises(PluginError) as caught:
        create_plugin_manager(plugins=[bad], load_entry_points=False)

    assert "bad_args_plugin" in str(caught.value)


def test_a_plugin_whose_hook_raises_is_named_in_the_error() -> None:
    def explode() -> dict[str, Any]:
        raise RuntimeError("boom in the hook")

    broken = plugin_module("exploding_plugin", rubricflow_check_functions=explode)

    with pytest.raises(PluginError) as caught:
        create_plugin_manager(plugins=[broken], load_entry_points=False)

    message = str(caught.value)
    assert "exploding_plugin" in message
    assert "boom in the hook" in message
    assert f"{BLOCK_ENV}=exploding_plugin" in message


def test_a_plugin_contributing_something_that_is_not_a_scorer_is_a_plugin_error() -> None:
    junk = plugin_module("junk_scorer_plugin", rubricflow_scorers=lambda: [object()])

    with pytest.raises(PluginError) as caught:
        create_plugin_manager(plugins=[junk], load_entry_points=False)

    assert "junk_scorer_plugin" in str(caught.value)


def test_a_plugin_returning_a_list_of_functions_is_a_plugin_error() -> None:
    junk = plugin_module("junk_functions_plugin", rubricflow_check_functions=lambda: ["is_ok"])

    with pytest.raises(PluginError) as caught:
        create_plugin_manager(plugins=[junk], load_entry_points=False)

    assert "junk_functions_plugin" in str(caught.value)


# --- lifecycle listeners ---------------------------------------------------------------


async def test_lifecycle_listeners_are_told_in_order_and_a_raising_one_breaks_no_other() -> None:
    heard: list[tuple[str, Any]] = []

    def raising(event: Any) -> None:
        raise RuntimeError("listener bug")

    def recorder(label: str) -> Callable[[Any], None]:
        def listen(event: Any) -> None:
            heard.append((label, dict(event)))

        return listen

    registry = create_plugin_manager(
        plugins=[
            plugin_module("raising_first", rubricflow_artifact_transition=raising),
            plugin_module("audit_one", rubricflow_artifact_transition=recorder("one")),
            plugin_module("raising_last", rubricflow_artifact_transition=raising),
            plugin_module("audit_two", rubricflow_artifact_transition=recorder("two")),
        ],
        load_entry_points=False,
    )
    event = {"artifact_id": "a1", "trigger": "approve", "source": "in_review", "dest": "approved"}

    await registry.notify(event)

    assert [label for label, _ in heard] == ["two", "one"]  # pluggy's order: newest first
    assert all(payload == event for _, payload in heard)


def _recorder(
    heard: list[str], label: str, *, returns_awaitable: bool = False
) -> Callable[..., Any]:
    """A listener writing `label` when it is called (one that returns an awaitable, which
    the caller awaits, when `returns_awaitable`)."""

    def listen(event: Any) -> Any:
        heard.append(label)
        return asyncio.sleep(0) if returns_awaitable else None

    return listen


async def test_lifecycle_listeners_are_called_in_pluggys_order() -> None:
    """Newest first, `tryfirst` before and `trylast` after the rest (newest first within
    each), sync and async alike: the order in which pluggy itself calls the hook."""
    heard: list[str] = []
    early, late = types.ModuleType("early"), types.ModuleType("late")
    early.rubricflow_artifact_transition = hookimpl(tryfirst=True)(_recorder(heard, "early"))  # type: ignore[attr-defined]
    late.rubricflow_artifact_transition = hookimpl(trylast=True)(_recorder(heard, "late"))  # type: ignore[attr-defined]
    listeners = [
        early,
        plugin_module("A", rubricflow_artifact_transition=_recorder(heard, "A")),
        late,
        plugin_module(
            "B", rubricflow_artifact_transition=_recorder(heard, "B", returns_awaitable=True)
        ),
    ]
    registry = create_plugin_manager(plugins=listeners, load_entry_points=False)
    event = {"kind": "artifact.transition", "artifact_id": "a1"}

    await registry.notify(event)
    assert heard == ["early", "B", "A", "late"]

    heard.clear()
    for awaitable in registry.manager.hook.rubricflow_artifact_transition(event=event):
        await awaitable
    assert heard == ["early", "B", "A", "late"]  # pluggy calling the hook itself


def test_a_wrapper_listener_is_refused_at_registration() -> None:
    """pluggy would call listeners A, B and a wrapper W as W-before, B, A, W-after; a
    wrapper cannot run around async listeners, so rubricflow refuses it, clearly, rather
    than accept it and never call it."""
    heard: list[str] = []

    def wrapping(event: Any) -> Any:
        heard.append("W-before")
        yield
        heard.append("W-after")

    markers = {"wrapper": hookimpl(wrapper=True), "hookwrapper": hookimpl(hookwrapper=True)}
    for name, marker in markers.items():
        wrapper = types.ModuleType("W")
        wrapper.rubricflow_artifact_transition = marker(wrapping)  # type: ignore[attr-defined]
        with pytest.raises(PluginError) as raised:
            create_plugin_manager(
                plugins=[
                    plugin_module("A", rubricflow_artifact_transition=_recorder(heard, "A")),
                    plugin_module("B", rubricflow_artifact_transition=_recorder(heard, "B")),
                    wrapper,
                ],
                load_entry_points=False,
            )
        message = str(raised.value)
        assert "plugin 'W'" in message and f"@hookimpl({name}=True)" in message
        assert "tryfirst=True" in message and f"{BLOCK_ENV}=W" in message
    assert heard == []
