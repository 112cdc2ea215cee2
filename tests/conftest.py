"""Shared fixtures: a fresh plugin registry, a CLI runner, and a scratch folder for files."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from rubricflow.plugins import PluginRegistry, create_plugin_manager


@pytest.fixture
def plugins() -> PluginRegistry:
    return create_plugin_manager()


@pytest.fixture
def cli() -> CliRunner:
    return CliRunner()
