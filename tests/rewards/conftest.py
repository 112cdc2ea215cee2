"""Reward tests judge through a scripted server with a clean LLM environment."""

from llm.fixtures import clean_llm_env

__all__ = ["clean_llm_env"]
