"""A type's max_cost_per_artifact (issue 31, item 6): one budget spans the review of every
rubric bound to the type; past it the remaining LLM criteria are unable_to_evaluate with
the reason "budget" and the artifact is not approved. Judged over HTTP by the scripted
server (each answer: 20 output tokens, at 0.01 each, 0.2 a call); on both backends."""

from __future__ import annotations

import pytest
from llm.scripted import Recorded, Reply, ScriptedServer, openai_reply, verdict

from rubricflow import parse_rubric
from rubricflow.errors import ReviewError
from rubricflow.review import ArtifactRegistry
from rubricflow.store import Store

from .conftest import define


def judged(rubric_id: str) -> object:
    return parse_rubric(
        {
            "id": rubric_id,
            "criteria": [
                {
                    "id": f"{rubric_id}-{n}",
                    "description": "Fine",
                    "scoring": {"method": "llm_verdict"},
                }
                for n in range(2)
            ],
        }
    )


def met(request: Recorded) -> Reply:
    return openai_reply(verdict("MET"))


@pytest.fixture
def priced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUBRICFLOW_LLM_PRICE", "0,10000")
    monkeypatch.setenv("RUBRICFLOW_LLM_MAX_TOKENS", "20")


async def test_one_budget_spans_an_artifact_s_rubrics(store: Store, priced: None) -> None:
    with ScriptedServer(met) as server:
        options = {"options": {"llm": f"openai:judge@{server.url}/v1", "llm_cache": None}}
        async with ArtifactRegistry(store, evaluate_options=options) as registry:
            await define(registry, "reply", judged("a"), judged("b"), max_cost_per_artifact=0.5)
            artifact = await registry.create("reply", "An answer.", actor="bot")
            outcome = await registry.submit_for_review(artifact.id, actor="bot")
            assert len(server.requests) == 2  # 0.2 + 0.2; a third would pass 0.5
            assert not outcome.approved
            results = [r for e in outcome.evaluations for r in e.criteria]
            refused = [r for r in results if r.status == "unable_to_evaluate"]
            assert len(refused) == 2 and all(r.notes.startswith("budget") for r in refused)
            assert all(
                e.verdict == "incomplete"
                for e in outcome.evaluations
                if any(r.status != "scored" for r in e.criteria)
            )
            # the next artifact has a budget of its own
            other = await registry.create("reply", "Another answer.", actor="bot")
            await registry.submit_for_review(other.id, actor="bot")
            assert len(server.requests) == 4


async def test_a_cap_without_a_price_is_a_clear_error(store: Store) -> None:
    with ScriptedServer(met) as server:
        options = {"options": {"llm": f"openai:judge@{server.url}/v1", "llm_cache": None}}
        async with ArtifactRegistry(store, evaluate_options=options) as registry:
            await define(registry, "reply", judged("a"), max_cost_per_artifact=1.0)
            artifact = await registry.create("reply", "An answer.", actor="bot")
            try:
                outcome = await registry.submit_for_review(artifact.id, actor="bot")
            except ReviewError as error:
                assert "RUBRICFLOW_LLM_PRICE" in str(error)
            else:
                assert not outcome.approved
                assert "RUBRICFLOW_LLM_PRICE" in (outcome.reason or "")
            assert server.requests == []


async def test_a_daily_budget_is_shared_across_artifacts(store: Store, priced: None) -> None:
    with ScriptedServer(met) as server:
        options = {"options": {"llm": f"openai:judge@{server.url}/v1", "llm_cache": None}}
        async with ArtifactRegistry(store, evaluate_options=options) as registry:
            await define(registry, "reply", judged("a"), daily_budget=0.5)
            first = await registry.create("reply", "An answer.", actor="bot")
            assert (await registry.submit_for_review(first.id, actor="bot")).approved
            second = await registry.create("reply", "Another answer.", actor="bot")
            outcome = await registry.submit_for_review(second.id, actor="bot")
        # two calls today (0.4); the second artifact's first call would pass 0.5
        assert len(server.requests) == 2 and not outcome.approved
        notes = [r.notes for e in outcome.evaluations for r in e.criteria]
        assert all("daily budget" in n for n in notes), notes
