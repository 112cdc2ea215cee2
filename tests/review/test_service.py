"""The review service: dataknobs' scenarios with the corrected behaviour (SEMANTICS.md 4),
the type options dataknobs declares and never uses, blocking rubrics, content schemas,
revisions and what a review that cannot finish does."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from rubricflow.errors import (
    ArtifactIdTakenError,
    ConfigurationError,
    ContentValidationError,
    IllegalTransitionError,
    NotFoundError,
    ReviewError,
)
from rubricflow.review import ArtifactRegistry, ArtifactType, RubricBinding
from rubricflow.review.worker import Worker
from rubricflow.store import Store

from .checks_plugin import ReviewChecks
from .conftest import (
    BROKEN,
    FAIL,
    PASS,
    assert_replays,
    check,
    define,
    doc_types,
    make_rubric,
    score_rubric,
    triggers,
)


async def revision_rows(store: Store, artifact_id: str) -> list[tuple[int, str, Any]]:
    async with store.database.engine.connect() as connection:
        rows = await connection.execute(
            sa.text(
                "SELECT revision, status, content FROM artifact_revisions "
                "WHERE artifact_id = :id ORDER BY revision"
            ),
            {"id": artifact_id},
        )
        return [(row.revision, row.status, row.content) for row in rows]


# ----------------------------------------------------------- the happy path, both ways


async def test_submit_reviews_in_process_and_approves_with_feedback(
    registry: ArtifactRegistry,
) -> None:
    await doc_types(registry)
    artifact = await registry.create("doc", PASS, actor="bot", title="t", metadata={"k": 1})
    outcome = await registry.submit_for_review(artifact.id, actor="bot")
    assert outcome.approved
    assert outcome.artifact.status == "approved"
    assert outcome.artifact.lease_owner is None
    assert [e.verdict for e in outcome.evaluations] == ["pass"]
    assert "PASSED" in outcome.evaluations[0].feedback
    stored = await registry.evaluations(artifact.id)
    assert [e.id for e in stored] == [e.id for e in outcome.evaluations]
    assert stored[0].target_id == artifact.id
    assert triggers(await registry.history(artifact.id)) == [
        "create",
        "submit",
        "start_review",
        "approve",
    ]


async def test_a_failing_review_sends_it_back_with_actionable_feedback(
    registry: ArtifactRegistry,
) -> None:
    await doc_types(registry)
    artifact = await registry.create("doc", FAIL, actor="bot")
    outcome = await registry.submit_for_review(artifact.id, actor="bot")
    assert outcome.artifact.status == "needs_revision"
    assert not outcome.approved
    assert "scored@1.0.0" in (outcome.reason or "")
    assert outcome.artifact.last_reason == outcome.reason
    feedback = outcome.evaluations[0].feedback
    assert "FAILED" in feedback
    assert "score" in feedback
    document = outcome.to_dict()
    assert document["status"] == "needs_revision"
    assert document["evaluation_ids"] == [outcome.evaluations[0].id]


# ------------------------------------------------------------ dataknobs' defects, fixed


async def test_resubmitting_from_needs_revision_as_is_reviews_again(
    registry: ArtifactRegistry, store: Store
) -> None:
    """dataknobs raised here. Resubmitting unchanged content reviews it again (against the
    rubric's latest version: a fixed rubric can now pass it)."""
    await doc_types(registry)
    artifact = await registry.create("doc", {"score": 0.6}, actor="bot")
    first = await registry.submit_for_review(artifact.id, actor="bot")
    assert first.artifact.status == "needs_revision"
    same = await registry.submit_for_review(artifact.id, actor="bot")
    assert same.artifact.status == "needs_revision"
    assert [e.id for e in same.evaluations] == [e.id for e in first.evaluations]
    # the rubric's owners relax the pass mark in a new version; resubmit as is
    await store.rubrics.register(score_rubric(version="1.1.0", threshold=0.5))
    relaxed = await registry.submit_for_review(artifact.id, actor="bot")
    assert relaxed.artifact.status == "approved"
    assert relaxed.artifact.revision == 1
    assert [e.rubric_version for e in relaxed.evaluations] == ["1.1.0"]
    assert len(await registry.evaluations(artifact.id, 1)) == 2
    assert_replays(await registry.history(artifact.id), status="approved", revision=1)


async def test_revise_then_resubmit_reviews_the_new_revision(
    registry: ArtifactRegistry, store: Store
) -> None:
    await doc_types(registry)
    artifact = await registry.create("doc", FAIL, actor="bot")
    failed = await registry.submit_for_review(artifact.id, actor="bot")
    revised = await registry.revise(artifact.id, PASS, actor="bot", reason="used the feedback")
    assert (revised.status, revised.revision, revised.content) == ("draft", 2, PASS)
    assert revised.content_hash != failed.artifact.content_hash
    passed = await registry.submit_for_review(artifact.id, actor="bot")
    assert (passed.artifact.status, passed.artifact.revision) == ("approved", 2)
    # evaluations belong to their revision
    rev1 = await registry.evaluations(artifact.id, 1)
    rev2 = await registry.evaluations(artifact.id, 2)
    assert [e.id for e in rev1] == [e.id for e in failed.evaluations]
    assert [e.id for e in rev2] == [e.id for e in passed.evaluations]
    assert [e.verdict for e in rev1 + rev2] == ["fail", "pass"]
    assert {e.id for e in await registry.evaluations(artifact.id)} == {e.id for e in rev1 + rev2}
    # the old revision is kept, superseded; the new one is current
    rows = await revision_rows(store, artifact.id)
    assert [(r, s) for r, s, _ in rows] == [(1, "superseded"), (2, "current")]
    assert '"score": 0.2' in rows[0][2]
    events = await registry.history(artifact.id)
    revise = next(e for e in events if e.trigger == "revise")
    assert (revise.actor, revise.reason, revise.revision) == ("bot", "used the feedback", 2)
    assert_replays(events, status="approved", revision=2)


async def test_an_approved_artifact_can_be_revised_and_reviewed_again(
    registry: ArtifactRegistry, store: Store
) -> None:
    await doc_types(registry)
    artifact = await registry.create("doc", PASS, actor="bot")
    await registry.submit_for_review(artifact.id, actor="bot")
    await registry.revise(artifact.id, FAIL, actor="bot", reason="new facts")
    outcome = await registry.submit_for_review(artifact.id, actor="bot")
    assert (outcome.artifact.status, outcome.artifact.revision) == ("needs_revision", 2)
    rows = await revision_rows(store, artifact.id)
    assert [(r, s) for r, s, _ in rows] == [(1, "superseded"), (2, "current")]


async def test_a_type_without_rubrics_refuses_submit_and_the_artifact_stays_draft(
    registry: ArtifactRegistry,
) -> None:
    await registry.set_type(ArtifactType(name="bare"))
    artifact = await registry.create("bare", PASS, actor="bot")
    with pytest.raises(ReviewError) as caught:
        await registry.submit_for_review(artifact.id, actor="bot")
    assert "binds no rubrics" in str(caught.value)
    assert "rubricflow types set bare --rubric" in str(caught.value)
    assert (await registry.get(artifact.id)).status == "draft"
    assert triggers(await registry.history(artifact.id)) == ["create"]


async def test_a_type_unbound_while_queued_never_approves_and_never_strands(
    registry: ArtifactRegistry,
) -> None:
    await doc_types(registry)
    artifact = await registry.create("doc", PASS, actor="bot")
    await registry.submit_for_review(artifact.id, actor="bot", defer=True)
    await registry.set_type(ArtifactType(name="doc"))  # someone removed every rubric
    await Worker(registry, poll_interval=0.05).run(once=True)
    after = await registry.get(artifact.id)
    assert after.status == "pending_review"
    assert "binds no rubrics" in (after.last_reason or "")
    assert triggers(await registry.history(artifact.id))[-2:] == ["start_review", "abort_review"]
    assert await registry.evaluations(artifact.id) == []


async def test_a_deleted_rubric_refuses_submit_before_anything_changes(
    registry: ArtifactRegistry, store: Store
) -> None:
    await doc_types(registry)
    artifact = await registry.create("doc", PASS, actor="bot")
    await store.rubrics.delete("scored")
    with pytest.raises(NotFoundError, match="scored"):
        await registry.submit_for_review(artifact.id, actor="bot")
    assert (await registry.get(artifact.id)).status == "draft"


# --------------------------------------------------- reviews that cannot finish


async def _assert_back_in_queue(
    registry: ArtifactRegistry, artifact_id: str, *, reason: str
) -> list[Any]:
    after = await registry.get(artifact_id)
    assert after.status == "pending_review"
    assert (after.lease_owner, after.lease_expires_at) == (None, None)
    assert reason in (after.last_reason or "")
    events = await registry.history(artifact_id)
    assert (events[-1].trigger, events[-1].source, events[-1].dest) == (
        "abort_review",
        "in_review",
        "pending_review",
    )
    assert reason in (events[-1].reason or "")
    assert await registry.list_artifacts(status="in_review") == []
    assert_replays(events, status="pending_review", revision=after.revision)
    return events


async def test_a_check_that_raises_makes_the_review_incomplete_and_requeues(
    registry: ArtifactRegistry,
) -> None:
    await define(registry, "doc", make_rubric("boom", check("boom", "explodes")))
    artifact = await registry.create("doc", PASS, actor="bot")
    outcome = await registry.submit_for_review(artifact.id, actor="bot")
    assert outcome.artifact.status == "pending_review"
    assert "incomplete" in (outcome.reason or "")
    [evaluation] = outcome.evaluations
    assert evaluation.verdict == "incomplete"
    assert not evaluation.passed
    assert "the check blew up" in evaluation.criteria[0].notes
    events = await _assert_back_in_queue(registry, artifact.id, reason="boom@1.0.0")
    # the record names the incomplete evaluation, and it is stored
    assert events[-1].evaluation_ids == (evaluation.id,)
    assert [e.id for e in await registry.evaluations(artifact.id)] == [evaluation.id]


async def test_a_scorer_plugin_that_raises_requeues_the_review(
    registry: ArtifactRegistry,
) -> None:
    rubric = make_rubric(
        "judged",
        {"id": "tone", "description": "polite", "scoring": {"method": "exploding"}},
    )
    await define(registry, "doc", rubric)
    artifact = await registry.create("doc", PASS, actor="bot")
    outcome = await registry.submit_for_review(artifact.id, actor="bot")
    assert outcome.evaluations[0].verdict == "incomplete"
    assert "judge service is down" in outcome.evaluations[0].criteria[0].notes
    await _assert_back_in_queue(registry, artifact.id, reason="judged@1.0.0")


async def test_an_error_escaping_the_engine_requeues_with_the_reason(
    store: Store, review_plugins: Any
) -> None:
    broken = ArtifactRegistry(store, plugins=review_plugins, evaluate_options={"concurrency": 0})
    await doc_types(broken)
    artifact = await broken.create("doc", PASS, actor="bot")
    outcome = await broken.submit_for_review(artifact.id, actor="bot")
    assert outcome.evaluations == []
    assert "ConfigurationError" in (outcome.reason or "")
    await _assert_back_in_queue(broken, artifact.id, reason="concurrency must be at least 1")


async def test_a_rubric_deleted_mid_review_requeues_with_the_reason(
    registry: ArtifactRegistry, store: Store
) -> None:
    await doc_types(registry)
    artifact = await registry.create("doc", PASS, actor="bot")
    await registry.submit_for_review(artifact.id, actor="bot", defer=True)
    claimed = await registry.claim(artifact.id, worker="w1")
    await store.rubrics.delete("scored")
    outcome = await registry.finish_review(claimed)
    assert "NotFoundError" in (outcome.reason or "")
    await _assert_back_in_queue(registry, artifact.id, reason="scored")


async def test_an_incomplete_review_is_evaluated_again_when_retried(
    store: Store, review_plugins: Any
) -> None:
    """The retry an incomplete review promises must evaluate again: once the cause is gone
    (a judge was down, a check was fixed) the retried review decides. The failed attempt
    stays on the record; one complete evaluation per rubric version and revision."""
    flaky = {"down": True}

    class Flaky:
        __name__ = "flaky"

        from rubricflow.hookspecs import hookimpl

        @hookimpl
        def rubricflow_check_functions(self) -> dict[str, Any]:
            def judge(target: Any) -> bool:
                if flaky["down"]:
                    raise TimeoutError("judge timed out")
                return True

            return {"flaky_judge": judge}

    from rubricflow.plugins import create_plugin_manager

    registry = ArtifactRegistry(
        store, plugins=create_plugin_manager(plugins=[Flaky()], load_entry_points=False)
    )
    await define(registry, "doc", make_rubric("flaky", check("judge", "flaky_judge")))
    artifact = await registry.create("doc", PASS, actor="bot")
    first = await registry.submit_for_review(artifact.id, actor="bot")
    assert first.artifact.status == "pending_review"
    flaky["down"] = False
    retried = await registry.review(artifact.id, worker="w2")
    assert retried.artifact.status == "approved", retried.reason
    stored = await registry.evaluations(artifact.id, 1)
    assert sorted(e.verdict for e in stored) == ["incomplete", "pass"]
    events = await registry.history(artifact.id)
    for event in events:
        for evaluation_id in event.evaluation_ids:
            assert evaluation_id in {e.id for e in stored}


async def test_a_review_that_keeps_failing_backs_off(store: Store) -> None:
    """Each failed attempt at the same revision doubles the wait before workers retry it
    (30 s, 60 s, 120 s, ... up to an hour), so a judge that is down is not hammered."""

    class Down:
        __name__ = "down"

        from rubricflow.hookspecs import hookimpl

        @hookimpl
        def rubricflow_check_functions(self) -> dict[str, Any]:
            def judge(target: Any) -> bool:
                raise TimeoutError("judge timed out")

            return {"down_judge": judge}

    from rubricflow.plugins import create_plugin_manager
    from rubricflow.store._sql import utcnow

    registry = ArtifactRegistry(  # below the dead-letter limit: three retries back off
        store,
        plugins=create_plugin_manager(plugins=[Down()], load_entry_points=False),
        max_failures=4,
    )
    await define(registry, "doc", make_rubric("down", check("judge", "down_judge")))
    artifact = await registry.create("doc", PASS, actor="bot")
    outcome = await registry.submit_for_review(artifact.id, actor="bot")
    waits = []
    for attempt in range(3):
        if attempt:
            outcome = await registry.review(artifact.id, worker=f"w{attempt}")
        assert outcome.artifact.status == "pending_review"
        assert outcome.artifact.queued_at is not None
        waits.append((outcome.artifact.queued_at - utcnow()).total_seconds())
    assert [round(w / 10) * 10 for w in waits] == [30, 60, 120]
    assert await registry.claim_next(worker="eager") is None  # not before its time


# ----------------------------------------------------------------- type options


async def test_auto_review_off_queues_the_submission_for_workers(
    registry: ArtifactRegistry, checks: ReviewChecks
) -> None:
    await define(
        registry, "doc", make_rubric("counted", check("c", "counted_non_empty")), auto_review=False
    )
    artifact = await registry.create("doc", PASS, actor="bot")
    outcome = await registry.submit_for_review(artifact.id, actor="bot")
    assert outcome.queued
    assert outcome.artifact.status == "pending_review"
    assert outcome.evaluations == []
    assert checks.calls == {}
    stats = await Worker(registry, poll_interval=0.05).run(once=True)
    assert stats.reviewed == 1
    assert (await registry.get(artifact.id)).status == "approved"
    assert checks.calls == {artifact.id: 1}


async def test_defer_only_queues_even_when_auto_review_is_on(
    registry: ArtifactRegistry, checks: ReviewChecks
) -> None:
    await define(registry, "doc", make_rubric("counted", check("c", "counted_non_empty")))
    artifact = await registry.create("doc", PASS, actor="bot")
    outcome = await registry.submit_for_review(artifact.id, actor="bot", defer=True)
    assert (outcome.queued, outcome.artifact.status) == (True, "pending_review")
    assert checks.calls == {}


async def test_requires_approval_waits_for_a_named_human(registry: ArtifactRegistry) -> None:
    await doc_types(registry)
    artifact = await registry.create("gated", PASS, actor="bot")
    outcome = await registry.submit_for_review(artifact.id, actor="bot")
    waiting = outcome.artifact
    assert (waiting.status, waiting.awaiting_approval) == ("in_review", True)
    assert not outcome.approved
    assert waiting.lease_owner is None, "the reviewer let go: nobody holds a lease"
    # a worker does not pick it up again, however long it waits
    stats = await Worker(registry, poll_interval=0.05).run(once=True)
    assert stats.reviewed == 0
    assert (await registry.get(artifact.id)).awaiting_approval
    with pytest.raises(ReviewError, match="reason"):
        await registry.approve(artifact.id, actor="alice", reason=" ")
    with pytest.raises(ReviewError, match="actor"):
        await registry.approve(artifact.id, actor="", reason="fine")
    approved = await registry.approve(artifact.id, actor="alice", reason="checked the sources")
    assert (approved.status, approved.awaiting_approval) == ("approved", False)
    events = await registry.history(artifact.id)
    assert [(e.trigger, e.actor) for e in events[-2:]] == [
        ("await_approval", "rubricflow"),
        ("approve", "alice"),
    ]
    assert events[-2].evaluation_ids == tuple(e.id for e in outcome.evaluations)
    assert events[-1].reason == "checked the sources"
    assert_replays(events, status="approved", revision=1)


async def test_requires_approval_does_not_hold_a_failing_artifact(
    registry: ArtifactRegistry,
) -> None:
    await doc_types(registry)
    artifact = await registry.create("gated", FAIL, actor="bot")
    outcome = await registry.submit_for_review(artifact.id, actor="bot")
    assert (outcome.artifact.status, outcome.artifact.awaiting_approval) == (
        "needs_revision",
        False,
    )


async def test_approve_during_a_running_review_is_refused(registry: ArtifactRegistry) -> None:
    await doc_types(registry)
    artifact = await registry.create("gated", PASS, actor="bot")
    await registry.submit_for_review(artifact.id, actor="bot", defer=True)
    claimed = await registry.claim(artifact.id, worker="w1")
    with pytest.raises(ReviewError, match="still being reviewed"):
        await registry.approve(artifact.id, actor="alice", reason="looks fine")
    assert (await registry.get(artifact.id)).version == claimed.version
    # the review goes on undisturbed
    outcome = await registry.finish_review(claimed)
    assert outcome.artifact.awaiting_approval


@pytest.mark.parametrize(
    ("score", "approval_threshold", "status"),
    [
        (0.6, None, "needs_revision"),  # the rubric's own pass mark, 0.7
        (0.6, 0.5, "approved"),  # the type lowers the bar
        (0.8, None, "approved"),
        (0.8, 0.9, "needs_revision"),  # the type raises the bar
        (0.9, 0.9, "approved"),  # exactly at the bar passes
    ],
)
async def test_approval_threshold_overrides_the_rubric_threshold(
    registry: ArtifactRegistry, score: float, approval_threshold: float | None, status: str
) -> None:
    await define(registry, "doc", score_rubric(), approval_threshold=approval_threshold)
    artifact = await registry.create("doc", {"score": score}, actor="bot")
    outcome = await registry.submit_for_review(artifact.id, actor="bot")
    assert outcome.artifact.status == status
    [evaluation] = outcome.evaluations
    assert evaluation.threshold == pytest.approx(approval_threshold or 0.7)


@pytest.mark.parametrize(
    ("safety", "quality", "status"),
    [
        (0.1, "good", "rejected"),
        (0.1, "bad", "rejected"),
        (0.9, "bad", "needs_revision"),
        (0.9, "good", "approved"),
    ],
)
async def test_a_blocking_rubric_rejects_instead_of_asking_for_revision(
    registry: ArtifactRegistry, safety: float, quality: str, status: str
) -> None:
    """`safety` (blocking) scores the content's `score`; `quality` wants the word "good"."""
    await registry.store.rubrics.register(make_rubric("safety", check("s", "score_field")))
    await registry.store.rubrics.register(
        make_rubric("quality", check("q", "contains_all", terms=["good"]))
    )
    await registry.set_type(
        ArtifactType(
            name="post",
            rubrics=(
                RubricBinding(rubric_id="safety", blocking=True),
                RubricBinding(rubric_id="quality"),
            ),
        )
    )
    artifact = await registry.create("post", {"score": safety, "note": quality}, actor="bot")
    outcome = await registry.submit_for_review(artifact.id, actor="bot")
    assert outcome.artifact.status == status
    assert len(outcome.evaluations) == 2
    last = (await registry.history(artifact.id))[-1]
    assert last.evaluation_ids == tuple(e.id for e in outcome.evaluations)
    if status == "rejected":
        assert last.trigger == "reject"
        assert "blocking rubric failed: safety@1.0.0" in (outcome.reason or "")
        assert "quality" not in (outcome.reason or "")
    elif status == "needs_revision":
        assert "quality@1.0.0" in (outcome.reason or "")


async def test_pinned_and_latest_bindings_review_with_the_right_version(
    registry: ArtifactRegistry, store: Store
) -> None:
    await store.rubrics.register(score_rubric(version="1.0.0"))
    await store.rubrics.register(score_rubric(version="2.0.0", threshold=0.95))
    await define(registry, "pinned", "scored@1.0.0")
    await define(registry, "latest", "scored")
    pinned = await registry.create("pinned", {"score": 0.8}, actor="bot")
    latest = await registry.create("latest", {"score": 0.8}, actor="bot")
    first = await registry.submit_for_review(pinned.id, actor="bot")
    second = await registry.submit_for_review(latest.id, actor="bot")
    assert [(e.rubric_version, e.verdict) for e in first.evaluations] == [("1.0.0", "pass")]
    assert [(e.rubric_version, e.verdict) for e in second.evaluations] == [("2.0.0", "fail")]


# ------------------------------------------------------------------- content schema

SCHEMA = {
    "type": "object",
    "required": ["title", "score"],
    "properties": {"title": {"type": "string", "minLength": 3}, "score": {"type": "number"}},
}


async def test_content_breaking_the_type_schema_is_refused_before_any_review(
    registry: ArtifactRegistry, checks: ReviewChecks
) -> None:
    rubric = make_rubric("counted", check("c", "counted_non_empty"))
    await define(registry, "doc", rubric, content_schema=SCHEMA)
    artifact = await registry.create("doc", {"title": "no", "score": "high"}, actor="bot")
    with pytest.raises(ContentValidationError) as caught:
        await registry.submit_for_review(artifact.id, actor="bot")
    problems = caught.value.problems
    assert any(p.startswith("$/score:") and "number" in p for p in problems), problems
    assert any(p.startswith("$/title:") for p in problems), problems
    assert "$/score" in str(caught.value)
    assert (await registry.get(artifact.id)).status == "draft"
    assert triggers(await registry.history(artifact.id)) == ["create"]
    assert checks.calls == {}
    assert await registry.evaluations(artifact.id) == []
    await registry.revise(artifact.id, {"title": "fixed", "score": 1}, actor="bot", reason="x")
    outcome = await registry.submit_for_review(artifact.id, actor="bot")
    assert outcome.artifact.status == "approved"
    assert checks.calls == {artifact.id: 1}


async def test_an_invalid_content_schema_is_refused_when_the_type_is_set(
    registry: ArtifactRegistry,
) -> None:
    await registry.store.rubrics.register(score_rubric())
    with pytest.raises(ConfigurationError, match="not a valid JSON Schema"):
        await define(registry, "doc", "scored", content_schema={"type": 12})
    with pytest.raises(NotFoundError):
        await registry.get_type("doc")


# ------------------------------------------------------------- types and artifacts


async def test_types_are_stored_listed_and_replaced(registry: ArtifactRegistry) -> None:
    await registry.store.rubrics.register(score_rubric())
    first = await define(registry, "b-doc", "scored", description="one")
    await define(registry, "a-doc", "scored@1.0.0", requires_approval=True)
    assert await registry.get_type("b-doc") == first
    assert [t.name for t in await registry.list_types()] == ["a-doc", "b-doc"]
    replaced = await define(registry, "b-doc", "scored", approval_threshold=0.4)
    assert await registry.get_type("b-doc") == replaced
    assert (await registry.get_type("a-doc")).rubrics[0].version == "1.0.0"


async def test_bad_type_definitions_are_refused(registry: ArtifactRegistry) -> None:
    await registry.store.rubrics.register(score_rubric())
    with pytest.raises(NotFoundError, match="nope"):
        await define(registry, "doc", "nope")
    with pytest.raises(ConfigurationError, match="more than once"):
        await define(
            registry,
            "doc",
            RubricBinding(rubric_id="scored"),
            RubricBinding(rubric_id="scored", blocking=True),
        )
    with pytest.raises(NotFoundError, match="types set ghost"):
        await registry.create("ghost", PASS, actor="bot")


async def test_create_refuses_a_taken_id_and_non_json_content(
    registry: ArtifactRegistry,
) -> None:
    import datetime

    await doc_types(registry)
    await registry.create("doc", PASS, actor="bot", artifact_id="post-1")
    with pytest.raises(ArtifactIdTakenError, match=r"id 'post-1' is taken"):
        await registry.create("doc", FAIL, actor="bot", artifact_id="post-1")
    assert (await registry.get("post-1")).content == PASS
    with pytest.raises(ReviewError, match="JSON"):
        await registry.create("doc", {"when": datetime.date(2026, 1, 1)}, actor="bot")
    with pytest.raises(ReviewError, match="JSON"):
        await registry.revise("post-1", {"x": float("nan")}, actor="bot", reason="r")
    assert (await registry.get("post-1")).revision == 1


async def test_list_filters_by_type_and_status_and_pages(registry: ArtifactRegistry) -> None:
    await doc_types(registry)
    made = {}
    for n in range(5):
        artifact = await registry.create("doc", PASS if n % 2 else FAIL, actor="bot")
        made[artifact.id] = (await registry.submit_for_review(artifact.id, actor="bot")).artifact
    other = await registry.create("gated", PASS, actor="bot")
    approved = await registry.list_artifacts(status="approved")
    assert {a.id for a in approved} == {i for i, a in made.items() if a.status == "approved"}
    assert {a.id for a in await registry.list_artifacts(type_name="gated")} == {other.id}
    everything = await registry.list_artifacts(limit=100)
    assert len(everything) == 6
    pages = [await registry.list_artifacts(limit=2, offset=k) for k in (0, 2, 4)]
    assert [a.id for page in pages for a in page] == [a.id for a in everything]
    assert await registry.list_artifacts(status="archived") == []
    with pytest.raises(NotFoundError):
        await registry.get("missing")
    with pytest.raises(NotFoundError):
        await registry.history("missing")


async def test_broken_content_is_a_review_that_cannot_finish_not_a_pass(
    registry: ArtifactRegistry,
) -> None:
    await doc_types(registry)
    artifact = await registry.create("doc", BROKEN, actor="bot")
    outcome = await registry.submit_for_review(artifact.id, actor="bot")
    assert outcome.artifact.status == "pending_review"
    assert "KeyError" in outcome.evaluations[0].criteria[0].notes


async def test_list_is_the_issue_name_for_list_artifacts(registry: ArtifactRegistry) -> None:
    await doc_types(registry)
    passed = await registry.create("doc", PASS, actor="bot")
    await registry.submit_for_review(passed.id, actor="bot")
    draft = await registry.create("gated", PASS, actor="bot")
    assert [a.id for a in await registry.list(status="approved")] == [passed.id]
    assert [a.id for a in await registry.list(type_name="gated")] == [draft.id]
    both = await registry.list(limit=10)
    assert {a.id for a in both} == {passed.id, draft.id}
    assert [a.id for a in await registry.list(limit=1, offset=1)] == [both[1].id]
    assert both == await registry.list_artifacts(limit=10)


# ------------------------------------------------------------------------- supersede


async def test_supersede_retires_an_artifact_naming_its_replacement(
    registry: ArtifactRegistry, db_url: str
) -> None:
    """draft, needs_revision and approved artifacts can be superseded by another artifact;
    the event says by which and why, and the superseded artifact can only be archived."""
    await doc_types(registry)
    replacement = await registry.create("doc", PASS, actor="bot")
    old = {}
    for content in (PASS, FAIL):
        artifact = await registry.create("doc", content, actor="bot")
        old[(await registry.submit_for_review(artifact.id, actor="bot")).artifact.status] = (
            artifact.id
        )
    old["draft"] = (await registry.create("doc", PASS, actor="bot")).id
    assert set(old) == {"approved", "needs_revision", "draft"}
    for source, artifact_id in old.items():
        retired = await registry.supersede(
            artifact_id, actor=" carol ", reason="the v2 post replaces it", by=replacement.id
        )
        assert (retired.status, retired.revision) == ("superseded", 1)
        events = await registry.history(artifact_id)
        last = events[-1]
        assert (last.trigger, last.source, last.dest, last.actor) == (
            "supersede",
            source,
            "superseded",
            "carol",
        )
        assert last.reason == f"superseded by {replacement.id}: the v2 post replaces it"
        assert_replays(events, status="superseded", revision=1)
    # without `by`, the reason is kept as given
    lone = await registry.create("doc", PASS, actor="bot")
    await registry.supersede(lone.id, actor="carol", reason="no longer needed")
    assert (await registry.history(lone.id))[-1].reason == "no longer needed"
    # a superseded artifact is final but for archiving
    with pytest.raises(IllegalTransitionError, match=r"allowed: archive$"):
        await registry.submit_for_review(old["draft"], actor="bot")
    archived = await registry.archive(old["draft"], actor="carol", reason="tidy")
    assert archived.status == "archived"
    # read back through a second store: the replacement is untouched
    reopened = await Store.open(db_url)
    try:
        again = ArtifactRegistry(reopened, plugins=registry.plugins)
        assert (await again.get(replacement.id)).status == "draft"
        assert (await again.get(old["approved"])).status == "superseded"
    finally:
        await reopened.close()


async def test_supersede_refuses_a_missing_replacement_itself_and_no_reason(
    registry: ArtifactRegistry,
) -> None:
    await doc_types(registry)
    artifact = await registry.create("doc", PASS, actor="bot")
    with pytest.raises(NotFoundError, match="no artifact 'ghost' to supersede") as missing:
        await registry.supersede(artifact.id, actor="carol", reason="newer", by="ghost")
    assert "--by" in str(missing.value)
    with pytest.raises(ReviewError, match="cannot supersede itself"):
        await registry.supersede(artifact.id, actor="carol", reason="newer", by=artifact.id)
    with pytest.raises(ReviewError, match="give a reason"):
        await registry.supersede(artifact.id, actor="carol", reason=" ")
    with pytest.raises(ReviewError, match="actor"):
        await registry.supersede(artifact.id, actor="", reason="newer")
    with pytest.raises(NotFoundError, match="no artifact 'nope'"):
        await registry.supersede("nope", actor="carol", reason="newer", by=artifact.id)
    assert (await registry.get(artifact.id)).status == "draft"
    assert triggers(await registry.history(artifact.id)) == ["create"]
