"""Fixtures and helpers shared by the judge tests (tests/llm and tests/scorers/test_llm_*):
import them into a test module to use them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rubricflow import parse_rubric
from rubricflow.llm import LLMSession, MemoryJudgeCache, ProviderSettings
from rubricflow.llm.specs import ENV_VARS
from rubricflow.model import Rubric

from .scripted import ScriptedServer

FAST = ProviderSettings(
    timeout=2.0, connect_timeout=1.0, deadline=10.0, backoff_base=0.01, backoff_max=0.05
)


@pytest.fixture(autouse=True)
def clean_llm_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No judge, key or limit leaks in from the developer's environment; the answer
    cache lives in this test's folder."""
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    cache_dir = tmp_path / "rf-cache"
    monkeypatch.setenv("RUBRICFLOW_CACHE_DIR", str(cache_dir))
    # the in-process model beside the other test workers: llama.cpp's threads spin while
    # they wait for each other, so two of them on a busy machine took minutes, one seconds
    monkeypatch.setenv("RUBRICFLOW_LOCAL_THREADS", "1")
    return cache_dir


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running


def fast(**changes: Any) -> ProviderSettings:
    return FAST.with_overrides(**changes)


def session_for(
    server: ScriptedServer,
    *,
    prefix: str = "openai",
    cache: Any = None,
    settings: ProviderSettings | None = None,
    **changes: Any,
) -> LLMSession:
    """A session judging through `server` (OpenAI-compatible unless `prefix` says
    otherwise), with no cache unless one is given, and fast retries."""
    path = "/v1" if prefix == "openai" else ""
    return LLMSession(
        f"{prefix}:judge@{server.url}{path}",
        cache=cache,
        settings=settings or fast(**changes),
    )


def memory_cache() -> MemoryJudgeCache:
    return MemoryJudgeCache()


def rubric(*criteria: dict[str, Any], **fields: Any) -> Rubric:
    return parse_rubric({"id": fields.pop("id", "r"), "criteria": list(criteria), **fields})
