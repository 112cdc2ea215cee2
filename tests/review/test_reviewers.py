"""Several reviewers per artifact (issue 28, item 5): routed and audited artifacts need N
human decisions, each blind to the others, and a disagreement stays open until a third
reviewer or a lead settles it; on both backends."""

from __future__ import annotations

import pytest

from rubricflow.errors import ReviewError
from rubricflow.review import ArtifactRegistry, ReviewPolicy
from rubricflow.review.reviewers import HIDDEN_VOTE

from .conftest import assert_replays, check, define, make_rubric

SCORED = make_rubric("scored", check("score", "score_field"))


async def routed(registry: ArtifactRegistry, artifact_id: str, **policy: object) -> None:
    """Define `doc` with a policy that routes every near-threshold score, and send one
    artifact to people."""
    await define(registry, "doc", SCORED, review_policy=ReviewPolicy(route_margin=0.2, **policy))
    await registry.create("doc", {"score": 0.75}, actor="bot", artifact_id=artifact_id)
    outcome = await registry.submit_for_review(artifact_id, actor="bot")
    assert outcome.artifact.awaiting_approval


async def test_two_agreeing_reviewers_settle_it(registry: ArtifactRegistry) -> None:
    await routed(registry, "a1", reviewers=2)
    first = await registry.approve("a1", actor="alice", reason="fine")
    assert (first.status, first.awaiting_approval) == ("in_review", True)
    assert first.last_reason == "1 of 2 reviewer decisions recorded; waiting for another reviewer"

    # bob does not see alice's decision
    events = await registry.history("a1")
    assert events[-1].trigger == "vote" and events[-1].reason == HIDDEN_VOTE
    assert all("fine" not in (e.reason or "") for e in events)

    settled = await registry.approve("a1", actor="bob", reason="good")
    assert settled.status == "approved"
    assert (
        settled.last_reason == "good — approve by 2 of 2 reviewers (alice: approve, bob: approve)"
    )
    events = await registry.history("a1")
    assert [e.reason for e in events if e.trigger == "vote"] == ["[approve] fine"]  # shown now
    assert_replays(events, status="approved", revision=1)


async def test_a_disagreement_waits_for_a_third_reviewer(registry: ArtifactRegistry) -> None:
    await routed(registry, "a1", reviewers=2)
    await registry.approve("a1", actor="alice", reason="fine")
    split = await registry.reject("a1", actor="bob", reason="wrong facts")
    assert (split.status, split.awaiting_approval) == ("in_review", True)
    with pytest.raises(ReviewError, match="bob has already decided"):
        await registry.approve("a1", actor="bob", reason="changed my mind")
    settled = await registry.reject("a1", actor="carol", reason="wrong indeed")
    assert settled.status == "rejected"
    assert "reject by 2 of 3 reviewers (alice: approve, bob: reject, carol: reject)" in (
        settled.last_reason or ""
    )
    assert_replays(await registry.history("a1"), status="rejected", revision=1)


async def test_a_lead_settles_a_disagreement(registry: ArtifactRegistry) -> None:
    await routed(registry, "a1", reviewers=2, leads=("lee",))
    await registry.approve("a1", actor="alice", reason="fine")
    await registry.reject("a1", actor="bob", reason="no")
    settled = await registry.approve("a1", actor="lee", reason="it is fine")
    assert settled.status == "approved"
    assert "settled by lead reviewer lee" in (settled.last_reason or "")


async def test_an_unsettled_artifact_can_still_be_overridden_or_revised(
    registry: ArtifactRegistry,
) -> None:
    await routed(registry, "a1", reviewers=3)
    await registry.approve("a1", actor="alice", reason="fine")
    overridden = await registry.override("a1", actor="boss", reason="ship it")
    assert overridden.status == "approved"


async def test_one_reviewer_is_the_old_behaviour(registry: ArtifactRegistry) -> None:
    await routed(registry, "a1")
    assert (await registry.approve("a1", actor="alice", reason="fine")).status == "approved"


async def test_votes_count_again_after_a_new_routing(registry: ArtifactRegistry) -> None:
    await routed(registry, "a1", reviewers=2)
    await registry.reject("a1", actor="alice", reason="no")
    await registry.reject("a1", actor="bob", reason="no")
    await registry.revise("a1", {"score": 0.8}, actor="bot", reason="fixed")
    again = await registry.submit_for_review("a1", actor="bot")
    assert again.artifact.awaiting_approval
    first = await registry.approve("a1", actor="alice", reason="better")
    assert first.status == "in_review"  # alice decides again on the new revision
