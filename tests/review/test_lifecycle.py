"""The state machine: every legal edge works and is on the record, every illegal trigger
is refused with the state, the trigger and what is allowed, and the persisted history
replays through the machine exactly."""

from __future__ import annotations

from typing import Any

import pytest

from rubricflow.errors import IllegalTransitionError
from rubricflow.review import EDGES, STATES, TRIGGERS, ArtifactRegistry, Lifecycle, ReviewPolicy
from rubricflow.store import Store

from .conftest import (
    BROKEN,
    FAIL,
    PASS,
    assert_replays,
    doc_types,
    reach,
    triggers,
)

LEGAL = sorted((trigger, source) for trigger, (sources, _) in EDGES.items() for source in sources)
ILLEGAL = sorted(
    (state, trigger) for state in STATES for trigger in TRIGGERS if state not in EDGES[trigger][0]
)

# ------------------------------------------------------------------ the machine itself


@pytest.mark.parametrize(("state", "trigger"), ILLEGAL)
def test_the_machine_refuses_an_illegal_trigger_naming_state_trigger_and_allowed(
    state: str, trigger: str
) -> None:
    lifecycle = Lifecycle()
    with pytest.raises(IllegalTransitionError) as caught:
        lifecycle.next_state("a-1", state, trigger)
    error = caught.value
    allowed = [t for t in TRIGGERS if state in EDGES[t][0]]
    assert (error.artifact_id, error.state, error.trigger, error.allowed) == (
        "a-1",
        state,
        trigger,
        allowed,
    )
    message = str(error)
    assert state in message
    assert repr(trigger) in message
    for name in allowed:
        assert name in message
    if not allowed:
        assert "final" in message


@pytest.mark.parametrize(("trigger", "source"), LEGAL)
def test_the_machine_follows_every_legal_edge(trigger: str, source: str) -> None:
    assert Lifecycle().next_state("a-1", source, trigger) == EDGES[trigger][1]


def test_unknown_states_and_triggers_are_refused() -> None:
    lifecycle = Lifecycle()
    with pytest.raises(IllegalTransitionError, match="'publish' is not allowed"):
        lifecycle.next_state("a-1", "draft", "publish")
    with pytest.raises(IllegalTransitionError, match="is limbo"):
        lifecycle.next_state("a-1", "limbo", "submit")


def test_the_edges_fix_dataknobs_defects() -> None:
    """SEMANTICS.md 4: needs_revision can be resubmitted; in_review is never a dead end;
    archived is final; every other state can be archived, directly or after a decision."""
    lifecycle = Lifecycle()
    assert lifecycle.next_state("a", "needs_revision", "submit") == "pending_review"
    assert lifecycle.next_state("a", "in_review", "abort_review") == "pending_review"
    assert lifecycle.allowed_triggers("archived") == []
    for state in STATES:
        if state == "archived":
            continue
        seen, frontier = {state}, [state]
        while frontier:
            current = frontier.pop()
            for trigger in lifecycle.allowed_triggers(current):
                dest = lifecycle.next_state("a", current, trigger)
                if dest not in seen:
                    seen.add(dest)
                    frontier.append(dest)
        assert "archived" in seen, f"{state} can never be archived"


# ---------------------------------------------------------- the machine, persisted


async def _human(registry: ArtifactRegistry, trigger: str, artifact_id: str) -> Any:
    """The public call a person or bot makes for `trigger`."""
    if trigger == "submit":
        return await registry.submit_for_review(artifact_id, actor="bot", defer=True)
    if trigger == "start_review":
        return await registry.claim(artifact_id, worker="worker-2")
    if trigger == "revise":
        return await registry.revise(artifact_id, PASS, actor="bot", reason="rewrote it")
    if trigger in ("withdraw", "archive"):
        return await getattr(registry, trigger)(artifact_id, actor="dana", reason="tidy up")
    if trigger == "vote":  # one of several reviewers approves
        return await registry.approve(artifact_id, actor="dana", reason="my call")
    return await getattr(registry, trigger)(artifact_id, actor="dana", reason="my call")


# (trigger, source) -> how the edge is driven: the artifact's type and content, and the call
# that fires it (a human/bot call, or a review that decides)
REVIEW = "review"
SETUPS: dict[tuple[str, str], tuple[str, Any, str]] = {
    ("approve", "in_review"): ("doc", PASS, REVIEW),
    ("request_revision", "in_review"): ("doc", FAIL, REVIEW),
    ("abort_review", "in_review"): ("doc", BROKEN, REVIEW),
    ("dead_letter", "in_review"): ("doc", BROKEN, "last_failure"),
    ("await_approval", "in_review"): ("gated", PASS, REVIEW),
    ("reject", "in_review"): ("gated", PASS, "awaiting"),
    ("vote", "in_review"): ("voted", PASS, "awaiting"),
    ("override", "in_review"): ("doc", PASS, "human"),
}


async def test_every_legal_edge_succeeds_and_is_recorded(registry: ArtifactRegistry) -> None:
    await doc_types(registry)
    gated = await registry.get_type("gated")  # and two reviewers decide each artifact
    await registry.set_type(
        gated.model_copy(update={"name": "voted", "review_policy": ReviewPolicy(reviewers=2)})
    )
    covered = set()
    for trigger, source in LEGAL:
        type_name, content, how = SETUPS.get((trigger, source), ("doc", None, "human"))
        artifact_id = await reach(registry, source, content=content, type_name=type_name)
        before = await registry.history(artifact_id)
        if how == REVIEW:
            await registry.finish_review(await registry.get(artifact_id))
        elif how == "last_failure":  # a failed review at a limit of one failure
            registry.max_failures = 1
            await registry.finish_review(await registry.get(artifact_id))
            registry.max_failures = 3
            how = REVIEW
        elif how == "awaiting":
            claimed = await registry.get(artifact_id)
            await registry.finish_review(claimed)  # passes: now waiting for a human
            before = await registry.history(artifact_id)
            await _human(registry, trigger, artifact_id)
        else:
            await _human(registry, trigger, artifact_id)
        artifact = await registry.get(artifact_id)
        events = await registry.history(artifact_id)
        new = events[len(before) :]
        assert artifact.status == EDGES[trigger][1], (trigger, source)
        # the edge is exactly one new event (a review started inline adds none here)
        assert [(e.trigger, e.source, e.dest) for e in new] == [
            (trigger, source, EDGES[trigger][1])
        ], (trigger, source)
        event = new[0]
        assert event.revision == artifact.revision
        if how == REVIEW:
            assert event.actor == "rubricflow"
            assert event.evaluation_ids, "a review's outcome names its evaluations"
            stored = {e.id for e in await registry.evaluations(artifact_id, artifact.revision)}
            assert set(event.evaluation_ids) <= stored
        elif trigger == "start_review":
            assert event.actor == "worker-2"
            assert artifact.lease_owner == "worker-2"
        else:
            assert event.actor in ("bot", "dana")
        if trigger == "revise":
            assert artifact.revision == 2
            assert artifact.content == PASS
        assert_replays(events, status=artifact.status, revision=artifact.revision)
        covered.add((trigger, source))
    assert covered == set(LEGAL)


PUBLIC = (
    "submit",
    "start_review",
    "approve",
    "reject",
    "revise",
    "withdraw",
    "archive",
    "override",
    "supersede",
)


async def test_every_illegal_call_is_refused_and_changes_nothing(
    registry: ArtifactRegistry,
) -> None:
    await doc_types(registry)
    lifecycle = Lifecycle()
    failures = []
    pairs = [(s, t) for s, t in ILLEGAL if t in PUBLIC]
    assert len(pairs) > 30
    for state, trigger in pairs:
        artifact_id = await reach(registry, state)
        before = await registry.get(artifact_id)
        history = await registry.history(artifact_id)
        try:
            await _human(registry, trigger, artifact_id)
        except IllegalTransitionError as error:
            if (error.state, error.trigger) != (state, trigger) or error.allowed != (
                lifecycle.allowed_triggers(state)
            ):
                failures.append(f"{state}/{trigger}: wrong error {error}")
            if state not in str(error) or trigger not in str(error):
                failures.append(f"{state}/{trigger}: message {error}")
        else:
            failures.append(f"{state}/{trigger}: was allowed")
            continue
        after = await registry.get(artifact_id)
        if (after.status, after.version) != (before.status, before.version):
            failures.append(f"{state}/{trigger}: the artifact changed")
        if await registry.history(artifact_id) != history:
            failures.append(f"{state}/{trigger}: the history changed")
    assert failures == []


async def test_finishing_a_review_nobody_claimed_is_refused_before_evaluating(
    registry: ArtifactRegistry, store: Store
) -> None:
    await doc_types(registry)
    artifact_id = await reach(registry, "pending_review")
    with pytest.raises(IllegalTransitionError, match="pending_review"):
        await registry.finish_review(await registry.get(artifact_id))
    assert await registry.evaluations(artifact_id) == []
    assert (await registry.get(artifact_id)).status == "pending_review"


async def test_history_replays_a_long_life_exactly(
    registry: ArtifactRegistry, store: Store, db_url: str, review_plugins: Any
) -> None:
    """create, fail, resubmit as is, fail, revise, pass and wait for approval, approve,
    revise again, archive: every step replays with its actor, reason, evaluations and
    revision, read back through a second store."""
    await doc_types(registry)
    artifact = await registry.create("gated", FAIL, actor="bot", title="essay")
    first = await registry.submit_for_review(artifact.id, actor="bot")
    again = await registry.submit_for_review(artifact.id, actor="bot")
    await registry.revise(artifact.id, PASS, actor="bot", reason="took the feedback")
    passed = await registry.submit_for_review(artifact.id, actor="bot")
    await registry.approve(artifact.id, actor="alice", reason="reads well")
    await registry.revise(artifact.id, {"score": 1.0}, actor="bot", reason="typo")
    await registry.archive(artifact.id, actor="alice", reason="replaced elsewhere")

    reopened = await Store.open(db_url)
    try:
        events = await ArtifactRegistry(reopened, plugins=review_plugins).history(artifact.id)
    finally:
        await reopened.close()
    assert_replays(events, status="archived", revision=3)
    rev1 = [e.id for e in first.evaluations]
    rev2 = [e.id for e in passed.evaluations]
    assert [e.id for e in again.evaluations] == rev1, "same revision, same rubric: reused"
    inline = [e.actor for e in events if e.trigger == "start_review"]
    assert all(actor.startswith("inline-") for actor in inline)
    expected = [
        ("create", "bot", None, (), 1),
        ("submit", "bot", "submitted", (), 1),
        ("start_review", inline[0], "review started", (), 1),
        ("request_revision", "rubricflow", None, tuple(rev1), 1),
        ("submit", "bot", "submitted", (), 1),
        ("start_review", inline[1], "review started", (), 1),
        ("request_revision", "rubricflow", None, tuple(rev1), 1),
        ("revise", "bot", "took the feedback", (), 2),
        ("submit", "bot", "submitted", (), 2),
        ("start_review", inline[2], "review started", (), 2),
        ("await_approval", "rubricflow", None, tuple(rev2), 2),
        ("approve", "alice", "reads well", (), 2),
        ("revise", "bot", "typo", (), 3),
        ("archive", "alice", "replaced elsewhere", (), 3),
    ]
    got = [
        (
            e.trigger,
            e.actor,
            e.reason if e.actor != "rubricflow" else None,
            e.evaluation_ids,
            e.revision,
        )
        for e in events
    ]
    assert got == expected
    decisions = [e for e in events if e.actor == "rubricflow"]
    assert "scored@1.0.0" in (decisions[0].reason or "")
    assert "waiting for a human" in (decisions[-1].reason or "")
    assert triggers(events).count("revise") == 2


def test_dataknobs_superseded_edges_are_covered_by_supersede_and_archive() -> None:
    """dataknobs retires an artifact from draft, needs_revision or approved into
    superseded, and archives a superseded one; nothing else leaves superseded."""
    lifecycle = Lifecycle()
    for source in ("draft", "needs_revision", "approved"):
        assert lifecycle.next_state("a", source, "supersede") == "superseded"
    assert lifecycle.next_state("a", "superseded", "archive") == "archived"
    assert lifecycle.allowed_triggers("superseded") == ["archive"]
    for source in ("pending_review", "in_review", "rejected", "superseded", "archived"):
        with pytest.raises(IllegalTransitionError, match=f"is {source}: 'supersede'"):
            lifecycle.next_state("a", source, "supersede")


# ------------------------------------------------- the guards beyond the edges


class _Seen:
    """What the lifecycle sees of an artifact."""

    def __init__(
        self,
        status: str,
        *,
        awaiting: bool = False,
        lease_expires_at: Any = None,
        failures: int = 0,
    ) -> None:
        self.id = "a-1"
        self.status = status
        self.awaiting_approval = awaiting
        self.lease_expires_at = lease_expires_at
        self.failures = failures


def test_the_lifecycle_names_the_states_of_new_artifacts_and_revisions() -> None:
    lifecycle = Lifecycle()
    assert lifecycle.initial_state == "draft"
    assert (lifecycle.new_revision_state, lifecycle.retired_revision_state) == (
        "current",
        "superseded",
    )
    assert lifecycle.claimable_states == ("pending_review", "in_review")


def test_a_persons_approve_waits_for_the_review_to_pass_but_the_reviews_does_not() -> None:
    from rubricflow.errors import ReviewError

    lifecycle = Lifecycle()
    running = _Seen("in_review")
    with pytest.raises(ReviewError, match="still being reviewed"):
        lifecycle.decide(running, "approve")
    assert lifecycle.decide(running, "approve", by_review=True) == "approved"
    assert lifecycle.decide(_Seen("in_review", awaiting=True), "approve") == "approved"
    assert lifecycle.decide(running, "override") == "approved"
    assert "approve" not in lifecycle.open_to_people(running)
    assert "approve" in lifecycle.open_to_people(_Seen("in_review", awaiting=True))
    with pytest.raises(IllegalTransitionError, match="is draft: 'approve'"):
        lifecycle.decide(_Seen("draft"), "approve")
    assert lifecycle.awaits_approval("await_approval")
    assert lifecycle.awaits_approval("vote")  # one of several reviewers decided
    waits = {"await_approval", "vote"}
    assert not any(lifecycle.awaits_approval(t) for t in TRIGGERS if t not in waits)


def test_a_claim_starts_a_queued_review_or_takes_over_a_stranded_one() -> None:
    from datetime import datetime, timedelta, timezone

    lifecycle = Lifecycle()
    now = datetime.now(timezone.utc)
    past, future = now - timedelta(seconds=1), now + timedelta(seconds=60)
    assert lifecycle.claim_triggers(_Seen("pending_review"), now) == ("start_review",)
    stranded = _Seen("in_review", lease_expires_at=past)
    assert lifecycle.claim_triggers(stranded, now) == ("abort_review", "start_review")
    assert lifecycle.claim_triggers(_Seen("in_review", lease_expires_at=future), now) == ()
    waiting = _Seen("in_review", awaiting=True, lease_expires_at=past)
    assert lifecycle.claim_triggers(waiting, now) == ()
    for state in ("draft", "approved", "archived"):
        assert lifecycle.claim_triggers(_Seen(state), now) == ()
    with pytest.raises(IllegalTransitionError, match="'start_review'"):
        lifecycle.check_reviewable(waiting)
    lifecycle.check_reviewable(stranded)  # still under review: its outcome may commit
