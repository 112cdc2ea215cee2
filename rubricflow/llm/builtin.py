"""Registers the built-in LLM providers through the same hook a third party uses."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rubricflow.hookspecs import hookimpl
from rubricflow.llm.specs import BUILTIN_FACTORIES


@hookimpl
def rubricflow_llm_providers() -> Mapping[str, Callable[..., Any]]:
    return dict(BUILTIN_FACTORIES)
