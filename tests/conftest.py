"""Shared fixtures: a fresh plugin registry, a CLI runner, and a scratch folder for files.

`@pytest.mark.fast_path_only` marks a test that asserts the SQLite fast path's internals
(the direct writes, the checkpoint thread): it skips itself when the fast path is off
(`RUBRICFLOW_SQLITE_FASTPATH=0`, CI's second run of the store and review suites).
"""

from __future__ import annotations

import weakref
from typing import Any

import click
import pytest
import typer
import typer.testing
from typer.testing import CliRunner

from rubricflow.plugins import PluginRegistry, create_plugin_manager

#: the `pytester` fixture (tests/pytest_plugin runs test files in a scratch folder); pytest
#: takes `pytest_plugins` only from a conftest it loads first, such as this one
pytest_plugins = ["pytester"]

_built: weakref.WeakKeyDictionary[typer.Typer, tuple[Any, click.Command]]
_built = weakref.WeakKeyDictionary()
_build_command = typer.testing._get_command


def _shape(app: typer.Typer) -> Any:
    """What a Typer app's click command is built from: its callback, commands and groups
    (each group's own shape), by identity."""
    return (
        id(app.registered_callback),
        tuple(id(command) for command in app.registered_commands),
        tuple(
            (id(group), _shape(group.typer_instance) if group.typer_instance else None)
            for group in app.registered_groups
        ),
    )


def _cached_command(app: typer.Typer) -> click.Command:
    """typer's CliRunner.invoke builds the app's whole click command tree on every call
    (a few hundred ms for rubricflow's ~50 commands, and the suite invokes the CLI over a
    thousand times); the tree of an app whose commands are unchanged is the same, so it is
    built once per app and shape. A click command is reusable: each invoke parses into a
    fresh context."""
    shape = _shape(app)
    cached = _built.get(app)
    if cached is None or cached[0] != shape:
        cached = (shape, _build_command(app))
        _built[app] = cached
    return cached[1]


typer.testing._get_command = _cached_command  # type: ignore[attr-defined]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "fast_path_only: asserts the SQLite fast path's internals; skipped when "
        "RUBRICFLOW_SQLITE_FASTPATH=0",
    )


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("fast_path_only") is None:
        return
    # only when needed
    from rubricflow.store._sqlite_fastpath import FASTPATH_ENV, fast_path_enabled

    if not fast_path_enabled():
        pytest.skip(f"asserts the SQLite fast path's internals, which {FASTPATH_ENV}=0 turns off")


@pytest.fixture
def plugins() -> PluginRegistry:
    return create_plugin_manager()


@pytest.fixture
def cli() -> CliRunner:
    return CliRunner()
