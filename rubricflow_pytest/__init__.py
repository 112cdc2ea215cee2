"""The rubricflow pytest plugin's hooks and fixtures (the `pytest11` entry point
`rubricflow`): options, the `rubric` marker, the `rubric` and `assert_passes` fixtures.

pytest imports this module in every run, so it imports nothing but pytest: importing the
`rubricflow` package costs hundreds of milliseconds (its root imports every layer), so
it lives outside it and reaches `rubricflow.pytest_plugin` (the implementation) only
inside fixtures and hooks, when a test uses it. Disable with `-p no:rubricflow`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator
from typing import Any

import pytest

__all__ = ["STATE", "current_item"]

STATE: pytest.StashKey[Any] = pytest.StashKey()
"""Where `rubricflow.pytest_plugin` keeps its per-run state (judge, replay, recording)."""

_current: list[pytest.Item] = []


def current_item() -> pytest.Item | None:
    """The test running now (for `assert_passes` called without the fixture)."""
    return _current[-1] if _current else None


def _leave_the_library_unrewritten(pluginmanager: pytest.PytestPluginManager) -> None:
    """pytest rewrites the asserts of every module of a distribution that declares a
    `pytest11` entry point, so every `rubricflow` module a test imports would be parsed
    and recompiled by pytest (with no bytecode cache, in every run). The library is not
    test code: only this hook package is the plugin. pytest has no public way to unmark
    a package, so this uses its rewrite hook's set where it exists and does nothing
    otherwise (asserts are then merely rewritten, as before)."""
    hook = getattr(pluginmanager, "rewrite_hook", None)
    marked = getattr(hook, "_must_rewrite", None)
    if isinstance(marked, set):
        marked.discard("rubricflow")


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    _leave_the_library_unrewritten(pluginmanager)
    group = parser.getgroup("rubricflow", "rubricflow: rubric checks (assert_passes)")
    group.addoption(
        "--rubric-llm",
        metavar="SPEC",
        default=None,
        help="LLM judge for rubric checks, as `rubricflow eval --llm` takes it "
        "(e.g. openai:gpt-4o-mini); default: $RUBRICFLOW_LLM.",
    )
    group.addoption(
        "--rubric-dir",
        action="append",
        default=[],
        metavar="PATH",
        help="A rubric file or a folder of them (searched recursively) where "
        "@pytest.mark.rubric('id@version') looks rubrics up; repeatable. Adds to the "
        "ini option rubric_paths.",
    )
    group.addoption(
        "--rubric-db",
        metavar="URL",
        default=None,
        help="A rubricflow store (URL or SQLite file) to look rubrics up in when no "
        "rubric file has them.",
    )
    group.addoption(
        "--rubric-replay",
        metavar="FILE",
        default=None,
        help="Judge answers come only from this recorded-answers file (offline, no key); "
        "a question with no recorded answer fails its test.",
    )
    group.addoption(
        "--rubric-record",
        metavar="FILE",
        default=None,
        help="Record every judge answer the run uses into this file (merged: the cases "
        "this run judged are replaced), for --rubric-replay.",
    )
    parser.addini(
        "rubric_paths",
        type="paths",
        default=[],
        help="Rubric files or folders (relative to the ini file) for @pytest.mark.rubric.",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "rubric(ref): the rubric the `rubric` fixture gives: 'id', 'id@version' (looked "
        "up in --rubric-dir / rubric_paths, then --rubric-db) or a rubric file's path "
        "(relative to the test file).",
    )
    if config.getoption("rubric_replay", None) and config.getoption("rubric_record", None):
        raise pytest.UsageError(
            "--rubric-replay and --rubric-record cannot be used together: record once "
            "with a judge (--rubric-record FILE), then replay (--rubric-replay FILE)"
        )
    record = config.getoption("rubric_record", None)
    if record and not os.path.isdir(os.path.dirname(os.path.abspath(record))):
        raise pytest.UsageError(
            f"--rubric-record {record}: its folder does not exist; create it or record "
            "into an existing folder"
        )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    _current.append(item)
    try:
        return (yield)
    finally:
        _current.pop()


def pytest_sessionfinish(session: pytest.Session) -> None:
    state = session.config.stash.get(STATE, None)
    if state is not None:
        state.finish()


@pytest.fixture
def rubric(request: pytest.FixtureRequest) -> Any:
    """The rubric `@pytest.mark.rubric(ref)` names (or `request.param` when
    parametrized indirectly), loaded once per run."""
    from rubricflow.pytest_plugin.fixtures import rubric_for

    return rubric_for(request)


@pytest.fixture(name="assert_passes")
def assert_passes_fixture(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """`assert_passes(rubric, output, **target)` for this test: evaluates `output`
    against `rubric` and fails the test with the feedback unless it passes."""
    from rubricflow.pytest_plugin.checking import bound_assert_passes

    return bound_assert_passes(request.node)
