"""Where an over-budget review goes (issue 31, items 6 and 8): to a person when its type
routes, else released and retried, then dead-lettered; a panel's judges spend under the
type's per-artifact cap; a type that batches sends a worker's review through the batch
API, and never an inline one. Judged over HTTP by the scripted server (each answer: 20
output tokens at 0.01 each, 0.2 a call); on both backends."""

from __future__ import annotations

from datetime import datetime, time, timedelta, timezone
from pathlib import Path

import pytest
from llm.batch_server import BatchBackend
from llm.scripted import Recorded, Reply, ScriptedServer, openai_reply, verdict

from rubricflow import parse_rubric
from rubricflow.review import ArtifactRegistry, ReviewPolicy
from rubricflow.review.worker import Worker
from rubricflow.store import Store

from .conftest import define


def judged(rubric_id: str, count: int = 3) -> object:
    return parse_rubric(
        {
            "id": rubric_id,
            "criteria": [
                {
                    "id": f"{rubric_id}-{n}",
                    "description": "Fine",
                    "scoring": {"method": "llm_verdict"},
                }
                for n in range(count)
            ],
        }
    )


def met(request: Recorded) -> Reply:
    return openai_reply(verdict("MET"))


@pytest.fixture(autouse=True)
def priced(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RUBRICFLOW_LLM_PRICE", "0,10000")
    monkeypatch.setenv("RUBRICFLOW_LLM_MAX_TOKENS", "20")
    monkeypatch.setenv("RUBRICFLOW_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("RUBRICFLOW_BATCH_POLL", "0.01")


def options(server: ScriptedServer) -> dict[str, object]:
    return {"options": {"llm": f"openai:judge@{server.url}/v1", "llm_cache": None}}


async def test_an_over_budget_review_goes_to_a_person_when_its_type_routes(store: Store) -> None:
    with ScriptedServer(met) as server:
        async with ArtifactRegistry(store, evaluate_options=options(server)) as registry:
            await define(
                registry,
                "reply",
                judged("a"),
                max_cost_per_artifact=0.5,
                review_policy=ReviewPolicy(route_confidence=0.5),
            )
            artifact = await registry.create("reply", "An answer.", actor="bot")
            outcome = await registry.submit_for_review(artifact.id, actor="bot")
            assert len(server.requests) == 2
            assert not outcome.approved
            assert outcome.artifact.awaiting_approval, outcome.artifact
            assert outcome.reason is not None and outcome.reason.startswith("routed to a reviewer")
            assert "judge budget" in outcome.reason
            decided = await registry.approve(artifact.id, actor="alice", reason="read it myself")
            assert decided.status == "approved"


async def test_an_over_budget_review_is_dead_lettered_after_its_retries(store: Store) -> None:
    with ScriptedServer(met) as server:
        async with ArtifactRegistry(
            store, evaluate_options=options(server), max_failures=2, retry_delay_seconds=0
        ) as registry:
            await define(registry, "reply", judged("a"), max_cost_per_artifact=0.5)
            artifact = await registry.create("reply", "An answer.", actor="bot")
            first = await registry.submit_for_review(artifact.id, actor="bot")
            assert not first.approved and "review incomplete" in (first.reason or "")
            assert first.artifact.status == "pending_review"  # released, to be retried
            stats = await Worker(registry, poll_interval=0.05).run(once=True)
            assert stats.reviewed == 1
            final = await registry.get(artifact.id)
            assert final.status == "dead_lettered", final
            assert "review incomplete" in (final.last_reason or "")
            assert len(server.requests) == 4  # two calls under the cap, each try


async def test_a_review_stopped_by_the_daily_budget_waits_for_the_next_day(
    store: Store,
) -> None:
    """A type that does not route: a review the daily budget alone stopped goes back to
    the queue until the next UTC midnight, not counted as a failure, so it is neither
    retried today nor dead-lettered."""
    with ScriptedServer(met) as server:
        async with ArtifactRegistry(
            store, evaluate_options=options(server), max_failures=2, retry_delay_seconds=0
        ) as registry:
            await define(registry, "reply", judged("a"), daily_budget=0.5)
            artifact = await registry.create("reply", "An answer.", actor="bot")
            before = datetime.now(timezone.utc)
            outcome = await registry.submit_for_review(artifact.id, actor="bot")
            assert len(server.requests) == 2  # the third call would pass 0.5
            waiting = outcome.artifact
            assert waiting.status == "pending_review" and waiting.failures == 0, waiting
            midnight = datetime.combine(
                before.date() + timedelta(days=1), time.min, tzinfo=timezone.utc
            )
            assert waiting.queued_at is not None
            assert waiting.queued_at.astimezone(timezone.utc) in (
                midnight,
                midnight + timedelta(days=1),  # the test ran across midnight
            )
            assert "daily budget" in (outcome.reason or "") and "reset" in (outcome.reason or "")
            stats = await Worker(registry, poll_interval=0.05).run(once=True)
            assert stats.reviewed == 0  # not before the budget resets
            final = await registry.get(artifact.id)
            assert (final.status, final.failures) == ("pending_review", 0), final
        assert len(server.requests) == 2


async def test_a_panel_s_judges_spend_under_the_per_artifact_cap(store: Store) -> None:
    with ScriptedServer(met) as server:
        async with ArtifactRegistry(store, evaluate_options=options(server)) as registry:
            panel = f"panel:majority(openai:a@{server.url}/v1 | openai:b@{server.url}/v1)"
            await define(registry, "reply", judged("a"), judge=panel, max_cost_per_artifact=0.9)
            artifact = await registry.create("reply", "An answer.", actor="bot")
            outcome = await registry.submit_for_review(artifact.id, actor="bot")
        # six calls without a cap (three criteria, two judges); 0.9 holds four at 0.2
        assert len(server.requests) == 4
        assert not outcome.approved
        results = [r for e in outcome.evaluations for r in e.criteria]
        assert any((r.notes or "").startswith("budget") for r in results), results
        assert sum(e.usage().get("cost") or 0.0 for e in outcome.evaluations) <= 0.9


async def test_a_batching_type_batches_a_worker_s_review_and_never_an_inline_one(
    store: Store,
) -> None:
    backend = BatchBackend(lambda body: dict(openai_reply(verdict("MET")).body))

    def respond(request: Recorded) -> Reply:
        return met(request) if request.path.endswith("/chat/completions") else backend(request)

    with ScriptedServer(respond) as server:
        async with ArtifactRegistry(store, evaluate_options=options(server)) as registry:
            await define(registry, "reply", judged("a", 2), judge_batch=True)
            inline = await registry.create("reply", "An answer.", actor="bot")
            assert (await registry.submit_for_review(inline.id, actor="bot")).approved
            live = [r for r in server.requests if r.path.endswith("/chat/completions")]
            assert len(live) == 2 and not backend.batches
            queued = await registry.create("reply", "Another answer.", actor="bot")
            await registry.submit_for_review(queued.id, actor="bot", defer=True)
            assert (await Worker(registry, poll_interval=0.05).run(once=True)).reviewed == 1
            assert (await registry.get(queued.id)).status == "approved"
        assert len(backend.batches) == 1
        assert len(next(iter(backend.batches.values())).lines) == 2
        live = [r for r in server.requests if r.path.endswith("/chat/completions")]
        assert len(live) == 2  # the worker's review sent none
