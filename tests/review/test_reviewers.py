"""Several reviewers per artifact (issue 28, item 5): routed and audited artifacts need N
human decisions, each blind to the others, and a disagreement stays open until a third
reviewer or a lead settles it; on both backends."""

from __future__ import annotations

import pytest

from rubricflow.errors import ReviewError
from rubricflow.plugins import PluginRegistry
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
    assert settled.last_reason == "approve by 2 of 2 reviewers (alice: approve, bob: approve)"
    events = await registry.history("a1")
    votes = [(e.actor, e.reason) for e in events if e.trigger == "vote"]  # shown now
    assert votes == [("alice", "[approve] fine"), ("bob", "[approve] good")]
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


# ------------------------------------------------------------ agreement between people

# each routed artifact's decisions, in order: (reviewer, decision, criteria marked wrong)
ROUNDS = [
    [("alice", "approve"), ("bob", "approve")],
    [("alice", "reject"), ("bob", "reject")],
    [("alice", "approve"), ("bob", "reject"), ("carol", "approve")],
    [("alice", "reject"), ("bob", "approve"), ("carol", "reject")],
    [("alice", "approve"), ("bob", "approve")],
    [("alice", "reject"), ("bob", "reject")],
]


async def _decided(registry: ArtifactRegistry) -> None:
    await define(registry, "doc", SCORED, review_policy=ReviewPolicy(route_margin=0.2, reviewers=2))
    for number, round_ in enumerate(ROUNDS):
        artifact_id = f"a{number}"
        await registry.create("doc", {"score": 0.75}, actor="bot", artifact_id=artifact_id)
        await registry.submit_for_review(artifact_id, actor="bot")
        for actor, decision in round_:
            await getattr(registry, decision)(artifact_id, actor=actor, reason="because")
    # one still open: its vote is not read (nor shown)
    await registry.create("doc", {"score": 0.75}, actor="bot", artifact_id="open")
    await registry.submit_for_review("open", actor="bot")
    await registry.reject("open", actor="alice", reason="no")
    # and one decided by rubricflow alone: no person, no unit
    await registry.create("doc", {"score": 0.99}, actor="bot", artifact_id="auto")
    await registry.submit_for_review("auto", actor="bot")


async def test_two_reviewers_agreement_is_kappa_over_the_first_two(
    registry: ArtifactRegistry,
) -> None:
    from sklearn.metrics import cohen_kappa_score

    from rubricflow.application import Application

    await _decided(registry)
    found = await Application(registry.store).reviewer_agreement("doc", resamples=200)
    overall = found.overall
    # six settled units; the open one and the automatic one are not read
    assert (overall.statistic, overall.units, overall.agreeing) == ("cohen_kappa", 6, 4)
    first = [round_[0][1] for round_ in ROUNDS]
    second = [round_[1][1] for round_ in ROUNDS]
    assert overall.value == pytest.approx(cohen_kappa_score(first, second), abs=1e-9)
    assert overall.interval is not None and overall.interval.resamples == 200
    # per criterion: nobody marked the judge wrong, so the people agree on `score`
    assert list(found.criteria) == ["scored:score"]
    assert found.criteria["scored:score"].agreeing == 6


async def test_three_reviewers_agreement_is_alpha(registry: ArtifactRegistry) -> None:
    import krippendorff
    import numpy as np

    from rubricflow.application import Application

    await define(registry, "doc", SCORED, review_policy=ReviewPolicy(route_margin=0.2, reviewers=3))
    rounds = [
        ["approve", "approve", "approve"],
        ["reject", "reject", "reject"],
        ["approve", "reject", "approve"],
        ["reject", "approve", "reject"],
        ["reject", "reject", "approve"],
    ]
    for number, decisions in enumerate(rounds):
        artifact_id = f"k{number}"
        await registry.create("doc", {"score": 0.75}, actor="bot", artifact_id=artifact_id)
        await registry.submit_for_review(artifact_id, actor="bot")
        for actor, decision in zip(("ann", "ben", "cat"), decisions, strict=True):
            await getattr(registry, decision)(artifact_id, actor=actor, reason="because")
        assert (await registry.get(artifact_id)).status != "in_review"
    found = await Application(registry.store).reviewer_agreement("doc", resamples=100)
    assert (found.overall.statistic, found.overall.units) == ("krippendorff_alpha", 5)
    data = np.full((3, len(rounds)), np.nan)
    for column, decisions in enumerate(rounds):
        for row, decision in enumerate(decisions):
            data[row, column] = decision == "approve"
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    assert found.overall.value == pytest.approx(expected, abs=1e-9)


def test_the_api_shows_agreement_and_hides_open_votes(
    sqlite_url: str, review_plugins: PluginRegistry
) -> None:
    import asyncio

    from fastapi.testclient import TestClient

    from rubricflow.server import ServerSettings, create_app
    from rubricflow.store import Store

    async def seed() -> None:
        async with await Store.open(sqlite_url) as store:
            await _decided(ArtifactRegistry(store, plugins=review_plugins))

    asyncio.run(seed())
    settings = ServerSettings(
        db=sqlite_url, auth=False, review_workers=0, webhooks=False, access_log=False
    )
    with TestClient(create_app(settings)) as client:
        found = client.get("/v1/types/doc/agreement?resamples=50").json()
        assert found["type"] == "doc"
        assert (found["overall"]["statistic"], found["overall"]["units"]) == ("cohen_kappa", 6)
        assert found["overall"]["interval"]["resamples"] == 50
        assert set(found["criteria"]) == {"scored:score"}
        history = client.get("/v1/artifacts/open/history").json()
        assert [e["reason"] for e in history if e["trigger"] == "vote"] == [HIDDEN_VOTE]
        shown = client.get("/v1/artifacts/open").json()
        assert "no" not in (shown["last_reason"] or "").split()
        assert client.get("/v1/types/nope/agreement").status_code == 404


async def test_types_agreement_shows_it_at_the_cli(registry: ArtifactRegistry, db_url: str) -> None:
    import asyncio
    import json

    from typer.testing import CliRunner

    from rubricflow.cli import app as cli_app

    await _decided(registry)
    args = ["types", "agreement", "doc", "--db", db_url, "--resamples", "50"]
    # the CLI runs its own event loop: in a thread beside this test's
    shown = await asyncio.to_thread(CliRunner().invoke, cli_app, [*args, "--json"])
    assert shown.exit_code == 0, shown.output
    document = json.loads(shown.stdout)
    assert (document["overall"]["statistic"], document["overall"]["units"]) == ("cohen_kappa", 6)
    text = await asyncio.to_thread(CliRunner().invoke, cli_app, args)
    assert text.exit_code == 0, text.output
    assert "overall: kappa" in text.stdout and "4 of 6 unanimous" in text.stdout
    assert "scored:score: kappa undefined" in text.stdout  # everyone agreed with the judge


async def test_live_streams_hide_votes(registry: ArtifactRegistry) -> None:
    await routed(registry, "a1", reviewers=2)
    version = (await registry.get("a1")).version
    await registry.approve("a1", actor="alice", reason="secret opinion")
    event = await registry.wait_for_change("a1", after=version, timeout=5)
    assert event is not None and (event.trigger, event.reason) == ("vote", HIDDEN_VOTE)
    stream = registry.events("a1", after_seq=version)
    streamed = await anext(stream)
    await stream.aclose()
    assert (streamed.trigger, streamed.reason) == ("vote", HIDDEN_VOTE)


async def test_per_criterion_labels_follow_each_reviewer_s_marks(
    registry: ArtifactRegistry,
) -> None:
    from sklearn.metrics import cohen_kappa_score

    from rubricflow.application import Application

    await _decided(registry)
    application = Application(registry.store)
    labels = application.judge_labels
    # bob settled a0 (his vote, then the approval): the dashboard marks the approval
    a0 = await registry.history("a0")
    (evaluation,) = await registry.evaluations("a0", 1)
    assert (a0[-1].trigger, a0[-1].actor) == ("approve", "bob")
    await labels.correct("a0", a0[-1].seq, [(evaluation.id, "score")], actor="bob")
    # alice's vote on a1 is the first of its round
    a1 = await registry.history("a1")
    vote = next(e for e in a1 if e.trigger == "vote" and e.actor == "alice")
    (evaluation,) = await registry.evaluations("a1", 1)
    await labels.correct("a1", vote.seq, [(evaluation.id, "score")], actor="alice")

    found = (await application.reviewer_agreement("doc", resamples=50)).criteria["scored:score"]
    assert (found.units, found.agreeing) == (6, 4)
    first = ["pass", "fail", "pass", "pass", "pass", "pass"]
    second = ["fail", "pass", "pass", "pass", "pass", "pass"]
    assert found.value == pytest.approx(cohen_kappa_score(first, second), abs=1e-9)


def test_the_same_decisions_are_not_resampled_again_when_the_screen_is_read_again() -> None:
    """The reviewers screen computes agreement on every read: the bootstrap of the same
    decisions is kept, and a decision more computes it afresh."""
    from rubricflow.review import agreement

    units = [["approve", "approve"], ["approve", "reject"], ["reject", "reject"]] * 4
    first = agreement._agreement(units, resamples=200, seed=0, reviewers=2)
    again = agreement._agreement([list(u) for u in units], resamples=200, seed=0, reviewers=2)
    more = agreement._agreement(
        [*units, ["approve", "approve"]], resamples=200, seed=0, reviewers=2
    )
    assert again is first
    assert more is not first and more.units == first.units + 1
