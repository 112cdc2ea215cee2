"""Judge tests run with a clean LLM environment (see fixtures.py)."""

from pathlib import Path

import pytest

from .fixtures import clean_llm_env, server

__all__ = ["clean_llm_env", "server"]


@pytest.fixture(scope="module")
def model_path() -> Path:
    """The bundled local model's file (the llm-local extra), assembled once into the
    user's rubricflow cache."""
    from rubricflow.llm.providers.local import default_model_path

    return default_model_path()
