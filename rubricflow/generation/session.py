"""The judge session a generation call uses: the caller's `LLMSession`, or one made from
a spec (closed afterwards)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from rubricflow.llm.session import LLMSession

__all__ = ["JudgeOption", "judge_scope"]

JudgeOption = LLMSession | str | None


@asynccontextmanager
async def judge_scope(judge: JudgeOption, cache: Any = "default") -> AsyncIterator[LLMSession]:
    """`judge` itself when it is a session (left open), else a session for the spec
    (None: $RUBRICFLOW_LLM) with `cache`, closed on the way out."""
    if isinstance(judge, LLMSession):
        yield judge
        return
    session = LLMSession(judge, cache=cache)
    try:
        yield session
    finally:
        await session.aclose()
