"""Calibration tests judge through the scripted OpenAI-compatible server of tests/llm,
with a clean LLM environment and the answer cache in each test's folder."""

from llm.fixtures import clean_llm_env, server

__all__ = ["clean_llm_env", "server"]
