"""Routing by uncertainty (issue 28, item 4): a type's review policy lets a verdict stand
or sends the artifact to people, with the reason in its history; on both backends, with
judges served over HTTP by the scripted server."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from llm.scripted import Recorded, Reply, ScriptedServer, openai_reply, verdict

from rubricflow import parse_rubric
from rubricflow.review import ArtifactRegistry, ReviewPolicy
from rubricflow.review.routing import audit_draw
from rubricflow.store import Store

from .conftest import check, define, make_rubric

SCORED = make_rubric("scored", check("score", "score_field"))

SAMPLED = parse_rubric(
    {
        "id": "helpful",
        "criteria": [
            {
                "id": "answers",
                "description": "The reply answers the question",
                "scoring": {"method": "llm_verdict", "config": {"samples": 3}},
            }
        ],
    }
)


def split_on_unsure(request: Recorded) -> Reply:
    """MET, except one sample in three says UNMET for content with 'unsure' in it."""
    if "unsure" in request.text:
        split_on_unsure.count += 1  # type: ignore[attr-defined]
        if split_on_unsure.count % 3 == 0:  # type: ignore[attr-defined]
            return openai_reply(verdict("UNMET"))
    return openai_reply(verdict("MET"))


split_on_unsure.count = 0  # type: ignore[attr-defined]


async def test_a_score_near_the_threshold_goes_to_a_reviewer(registry: ArtifactRegistry) -> None:
    await define(registry, "doc", SCORED, review_policy=ReviewPolicy(route_margin=0.1))
    near = await registry.create("doc", {"score": 0.75}, actor="bot")
    clear = await registry.create("doc", {"score": 0.95}, actor="bot")

    routed = await registry.submit_for_review(near.id, actor="bot")
    assert routed.artifact.status == "in_review" and routed.artifact.awaiting_approval
    assert "routed to a reviewer" in (routed.reason or "")
    assert "within 0.1 of the threshold (margin +0.05)" in (routed.reason or "")
    last = (await registry.history(near.id))[-1]
    assert last.trigger == "await_approval" and last.reason == routed.reason

    stands = await registry.submit_for_review(clear.id, actor="bot")
    assert stands.artifact.status == "approved"
    assert (await registry.history(clear.id))[-1].reason == "every rubric passed; auto (confident)"

    # a person decides the routed one: approve (its score passed) or reject
    decided = await registry.approve(near.id, actor="alice", reason="reads well")
    assert decided.status == "approved"


async def test_a_failing_verdict_near_the_threshold_waits_too(registry: ArtifactRegistry) -> None:
    await define(registry, "doc", SCORED, review_policy=ReviewPolicy(route_margin=0.1))
    low = await registry.create("doc", {"score": 0.65}, actor="bot")
    routed = await registry.submit_for_review(low.id, actor="bot")
    assert routed.artifact.awaiting_approval and "margin -0.05" in (routed.reason or "")
    rejected = await registry.reject(low.id, actor="alice", reason="not good enough")
    assert rejected.status == "rejected"


async def test_no_policy_keeps_the_old_behaviour(registry: ArtifactRegistry) -> None:
    await define(registry, "doc", SCORED)
    near = await registry.create("doc", {"score": 0.71}, actor="bot")
    outcome = await registry.submit_for_review(near.id, actor="bot")
    assert outcome.artifact.status == "approved" and outcome.reason == "every rubric passed"


async def test_audits_are_drawn_per_artifact_and_blind(registry: ArtifactRegistry) -> None:
    policy = ReviewPolicy(audit_rate=0.5, audit_seed=7)
    await define(registry, "doc", SCORED, review_policy=policy)
    ids = [f"doc-{n}" for n in range(12)]
    expected = {i for i in ids if audit_draw(i, 1, 7) < 0.5}
    assert 0 < len(expected) < len(ids)  # the draw picks some, not all
    audited = set()
    for artifact_id in ids:
        await registry.create("doc", {"score": 0.95}, actor="bot", artifact_id=artifact_id)
        outcome = await registry.submit_for_review(artifact_id, actor="bot")
        if outcome.artifact.awaiting_approval:
            audited.add(artifact_id)
            reason = outcome.reason or ""
            assert reason.startswith("audit: drawn for a blind review (audit rate 0.5)")
            assert "passed" not in reason  # the machine's verdict is not named
            # nor shown: its evaluations are hidden until a person decides
            assert await registry.evaluations(artifact_id) == []
            assert await registry.evaluations(artifact_id, 1) == []
        else:
            assert outcome.artifact.status == "approved"
    assert audited == expected
    one = sorted(audited)[0]
    decided = await registry.approve(one, actor="alice", reason="fine")
    assert decided.status == "approved"
    assert len(await registry.evaluations(one)) == 1  # shown once decided
    assert len(await registry.evaluations(sorted(set(ids) - audited)[0])) == 1


async def test_a_split_among_samples_routes_by_confidence(store: Store) -> None:
    split_on_unsure.count = 0  # type: ignore[attr-defined]
    with ScriptedServer(split_on_unsure) as server:
        options = {"options": {"llm": f"openai:judge@{server.url}/v1", "llm_cache": None}}
        async with ArtifactRegistry(store, evaluate_options=options) as registry:
            await define(
                registry, "reply", SAMPLED, review_policy=ReviewPolicy(route_confidence=0.9)
            )
            sure = await registry.create("reply", "Paris, I am sure.", actor="bot")
            unsure = await registry.create("reply", "Lyon? I am unsure.", actor="bot")
            stands = await registry.submit_for_review(sure.id, actor="bot")
            routed = await registry.submit_for_review(unsure.id, actor="bot")
    assert stands.artifact.status == "approved"
    assert routed.artifact.awaiting_approval
    assert "helpful@" in (routed.reason or "")
    assert "answers: confidence 0.667 < 0.9 (samples)" in (routed.reason or "")


@pytest.mark.parametrize("rate", [0.0, 0.25, 1.0])
def test_the_audit_draw_is_fixed_by_id_revision_and_seed(rate: float) -> None:
    draws = [audit_draw(f"a{n}", 1, 3) for n in range(400)]
    assert draws == [audit_draw(f"a{n}", 1, 3) for n in range(400)]
    assert all(0.0 <= d < 1.0 for d in draws)
    share = sum(d < rate for d in draws) / len(draws)
    assert abs(share - rate) < 0.1
    assert audit_draw("a1", 2, 3) != audit_draw("a1", 1, 3) != audit_draw("a1", 1, 4)


CASCADE = parse_rubric(
    {
        "id": "cascade",
        "criteria": [
            {
                "id": "answers",
                "description": "The reply answers the question",
                "scoring": {"method": "llm_verdict", "config": {"samples": 3}},
            },
            {
                "id": "polite",
                "description": "The reply is polite",
                "scoring": {"method": "llm_verdict", "config": {"samples": 3}},
            },
        ],
    }
)


def cheap(request: Recorded) -> Reply:
    """Sure the reply is polite; split one in three on whether it answers."""
    if "answers the question" in request.text:
        cheap.count += 1  # type: ignore[attr-defined]
        if cheap.count % 3 == 0:  # type: ignore[attr-defined]
            return openai_reply(verdict("UNMET"))
    return openai_reply(verdict("MET"))


def strong(request: Recorded) -> Reply:
    return openai_reply(verdict("MET"))


async def test_the_cascade_asks_the_stronger_judge_only_what_the_first_was_unsure_of(
    store: Store,
) -> None:
    cheap.count = 0  # type: ignore[attr-defined]
    with ScriptedServer(cheap) as first, ScriptedServer(strong) as second:
        stronger = f"openai:strong@{second.url}/v1"
        options = {"options": {"llm": f"openai:cheap@{first.url}/v1", "llm_cache": None}}
        async with ArtifactRegistry(store, evaluate_options=options) as registry:
            policy = ReviewPolicy(route_confidence=0.9, escalate_to=stronger)
            await define(registry, "reply", CASCADE, review_policy=policy)
            reply = await registry.create("reply", "Paris, politely.", actor="bot")
            outcome = await registry.submit_for_review(reply.id, actor="bot")
            history = await registry.history(reply.id)
    assert len(first.requests) == 6  # both criteria, three samples each
    assert len(second.requests) == 3  # only `answers`, three samples
    assert all("answers the question" in r.text for r in second.requests)
    assert outcome.artifact.status == "approved"  # the stronger judge was sure
    reason = history[-1].reason or ""
    assert reason.startswith(
        f"escalated cascade@1.0.0 answers (confidence 0.667 < 0.9 (samples)) to {stronger}"
    )
    assert reason.endswith("every rubric passed; auto (confident)")
    (evaluation,) = outcome.evaluations
    answers = evaluation.criterion("answers")
    assert answers is not None and answers.confidence == 1.0
    assert len(answers.llm_calls) == 6  # the cheap judge's three calls stay in the ledger
    assert evaluation.metadata["escalation"]["to"] == stronger


async def test_types_set_takes_the_policy_options(registry: ArtifactRegistry, db_url: str) -> None:
    import asyncio
    import json

    from typer.testing import CliRunner

    from rubricflow.cli import app as cli_app

    await registry.store.rubrics.register(SCORED)
    args = ["types", "set", "doc", "--rubric", "scored", "--db", db_url, "--json"]
    args += ["--route-confidence", "0.8", "--route-margin", "0.05", "--audit-rate", "0.1"]
    args += ["--audit-seed", "4", "--escalate-to", "openai:strong@http://127.0.0.1:9/v1"]
    args += ["--reviewers", "2", "--lead", "lee"]
    done = await asyncio.to_thread(CliRunner().invoke, cli_app, args)
    assert done.exit_code == 0, done.output
    expected = ReviewPolicy(
        route_confidence=0.8,
        route_margin=0.05,
        audit_rate=0.1,
        audit_seed=4,
        escalate_to="openai:strong@http://127.0.0.1:9/v1",
        reviewers=2,
        leads=("lee",),
    )
    assert json.loads(done.stdout)["review_policy"] == expected.model_dump(mode="json")
    assert (await registry.get_type("doc")).review_policy == expected
    shown = await asyncio.to_thread(
        CliRunner().invoke, cli_app, ["types", "show", "doc", "--db", db_url]
    )
    assert "review policy route_confidence=0.8" in shown.stdout
    bad = await asyncio.to_thread(CliRunner().invoke, cli_app, [*args[:7], "--audit-rate", "2"])
    assert bad.exit_code == 2 and "--audit-rate" in bad.output


def test_the_api_sets_the_policy(sqlite_url: str) -> None:
    from fastapi.testclient import TestClient

    from rubricflow.server import ServerSettings, create_app
    from rubricflow.store import Store

    async def seed() -> None:
        async with await Store.open(sqlite_url) as store:
            await store.rubrics.register(SCORED)

    import asyncio

    asyncio.run(seed())
    settings = ServerSettings(
        db=sqlite_url, auth=False, review_workers=0, webhooks=False, access_log=False
    )
    body = {
        "rubrics": [{"rubric_id": "scored"}],
        "review_policy": {"route_margin": 0.1, "reviewers": 3, "leads": ["lee"]},
    }
    with TestClient(create_app(settings)) as client:
        done = client.put("/v1/types/doc", json=body)
        assert done.status_code == 200, done.text
        policy = client.get("/v1/types/doc").json()["review_policy"]
        assert (policy["route_margin"], policy["reviewers"], policy["leads"]) == (0.1, 3, ["lee"])
        wrong = client.put("/v1/types/doc", json={**body, "review_policy": {"reviewers": 0}})
        assert wrong.status_code == 422
        judge = {"review_policy": {"escalate_to": "openai:other@http://10.0.0.1/v1"}}
        refused = client.put("/v1/types/doc", json={**body, **judge})
        assert refused.status_code in (403, 422), refused.text


JUDGED = parse_rubric(
    {
        "id": "judged",
        "criteria": [
            {
                "id": "answers",
                "description": "The reply answers the question",
                "scoring": {"method": "llm_verdict"},
            }
        ],
    }
)


def says(answer: str) -> Callable[[Recorded], Reply]:
    return lambda request: openai_reply(verdict(answer))


async def test_a_panel_split_routes(store: Store) -> None:
    with (
        ScriptedServer(says("MET")) as a,
        ScriptedServer(says("MET")) as b,
        ScriptedServer(says("UNMET")) as c,
    ):
        judges = " | ".join(f"openai:j{n}@{s.url}/v1" for n, s in enumerate((a, b, c)))
        panel = f"panel:majority({judges})"
        async with ArtifactRegistry(store, evaluate_options={"options": {"llm_cache": None}}) as (
            registry
        ):
            # a margin rule is on (and far from firing): the split alone routes
            policy = ReviewPolicy(route_margin=0.01)
            await define(registry, "reply", JUDGED, judge=panel, review_policy=policy)
            reply = await registry.create("reply", "Paris.", actor="bot")
            outcome = await registry.submit_for_review(reply.id, actor="bot")
    assert outcome.artifact.awaiting_approval
    assert "judged@1.0.0 answers: the judge panel split (agreement 0.667)" in (outcome.reason or "")
