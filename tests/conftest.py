"""Shared fixtures: a fresh plugin registry, a CLI runner, and a scratch folder for files.

`@pytest.mark.fast_path_only` marks a test that asserts the SQLite fast path's internals
(the direct writes, the checkpoint thread): it skips itself when the fast path is off
(`RUBRICFLOW_SQLITE_FASTPATH=0`, CI's second run of the store and review suites).
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from rubricflow.plugins import PluginRegistry, create_plugin_manager


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "fast_path_only: asserts the SQLite fast path's internals; skipped when "
        "RUBRICFLOW_SQLITE_FASTPATH=0",
    )


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("fast_path_only") is None:
        return
    from rubricflow.store.sqlite import FASTPATH_ENV, fast_path_enabled  # only when needed

    if not fast_path_enabled():
        pytest.skip(f"asserts the SQLite fast path's internals, which {FASTPATH_ENV}=0 turns off")


@pytest.fixture
def plugins() -> PluginRegistry:
    return create_plugin_manager()


@pytest.fixture
def cli() -> CliRunner:
    return CliRunner()
