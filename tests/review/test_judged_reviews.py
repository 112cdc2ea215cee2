"""Reviews judged by an LLM: every review a registry makes shares one LLM session, and the
judge's answers live in the store, so registries and workers sharing a store share them
(never the per-machine file cache)."""

from __future__ import annotations

from pathlib import Path

import pytest
from llm.scripted import Recorded, Reply, ScriptedServer, openai_reply, verdict

from rubricflow import parse_rubric
from rubricflow.review import ArtifactRegistry
from rubricflow.store import Store

from .conftest import define

JUDGED = parse_rubric(
    {
        "id": "helpful",
        "criteria": [
            {
                "id": "answers",
                "description": "The reply answers the question",
                "scoring": {"method": "llm_verdict"},
            }
        ],
    }
)


def met(request: Recorded) -> Reply:
    return openai_reply(verdict("MET"))


@pytest.fixture
def file_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "file-cache"
    monkeypatch.setenv("RUBRICFLOW_CACHE_DIR", str(folder))
    return folder


async def test_registries_sharing_a_store_share_judge_answers(
    store: Store, file_cache: Path
) -> None:
    with ScriptedServer(met) as server:
        options = {"options": {"llm": f"openai:judge@{server.url}/v1"}}
        async with ArtifactRegistry(store, evaluate_options=options) as first:
            await define(first, "reply", JUDGED)
            one = await first.create("reply", "Paris is the capital of France.", actor="bot")
            outcome = await first.submit_for_review(one.id, actor="bot")
        assert outcome.approved and len(server.requests) == 1

        # another registry (another worker) on the same store: the same question is
        # answered from the store
        async with ArtifactRegistry(store, evaluate_options=options) as second:
            two = await second.create("reply", "Paris is the capital of France.", actor="bot")
            again = await second.submit_for_review(two.id, actor="bot")
        assert again.approved and len(server.requests) == 1

    (evaluation,) = again.evaluations
    assert [call.outcome for call in evaluation.llm_calls] == ["cached"]
    stats = await store.judge_cache.stats()
    assert (stats["entries"], stats["hits"]) == (1, 1)
    assert not file_cache.exists() or not any(file_cache.iterdir())


async def test_one_session_serves_every_review_of_a_registry(store: Store) -> None:
    with ScriptedServer(met) as server:
        options = {"options": {"llm": f"openai:judge@{server.url}/v1", "llm_cache": None}}
        registry = ArtifactRegistry(store, evaluate_options=options)
        await define(registry, "reply", JUDGED)
        sessions = set()
        for number in range(3):
            artifact = await registry.create("reply", f"Answer number {number}.", actor="bot")
            assert (await registry.submit_for_review(artifact.id, actor="bot")).approved
            sessions.add(id(registry._session))
        assert len(sessions) == 1 and len(server.requests) == 3

        await registry.aclose()
        assert registry._session is None
        # closing is not the end: a later review opens a new session
        artifact = await registry.create("reply", "One more answer.", actor="bot")
        assert (await registry.submit_for_review(artifact.id, actor="bot")).approved
        await registry.aclose()
        await registry.aclose()  # twice is harmless
        assert len(server.requests) == 4
