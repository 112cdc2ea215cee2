"""Generation tests judge through the scripted server with a clean LLM environment."""

from llm.fixtures import clean_llm_env, server

__all__ = ["clean_llm_env", "server"]
