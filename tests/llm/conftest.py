"""Judge tests run with a clean LLM environment (see fixtures.py)."""

from .fixtures import clean_llm_env, server

__all__ = ["clean_llm_env", "server"]
