"""Human labels are human (issue 28, item 1): the agreement figures read people's decisions
only. rubricflow's own approvals and blocking rejects (actor `rubricflow`, by an inline
review or a worker) are the judge agreeing with itself, and count for nothing; no person
may act, or hold a token, under that name."""

from __future__ import annotations

import pytest

from rubricflow.errors import ConfigurationError, ReviewError
from rubricflow.review import ArtifactRegistry, ArtifactType, RubricBinding
from rubricflow.review.worker import Worker
from rubricflow.store.labels import JudgeLabels, VerdictCount

from .conftest import FAIL, PASS, check, doc_types, make_rubric


async def test_an_automatic_approval_adds_no_label(registry: ArtifactRegistry) -> None:
    await doc_types(registry)
    labels = JudgeLabels(registry.store.database)
    inline = await registry.create("doc", PASS, actor="bot")
    assert (await registry.submit_for_review(inline.id, actor="bot")).approved
    queued = await registry.create("doc", PASS, actor="bot")
    await registry.submit_for_review(queued.id, actor="bot", defer=True)
    assert (await Worker(registry, poll_interval=0.05).run(once=True)).reviewed == 1
    assert (await registry.get(queued.id)).status == "approved"
    for artifact_id in (inline.id, queued.id):
        last = (await registry.history(artifact_id))[-1]
        assert (last.trigger, last.actor) == ("approve", "rubricflow")
    assert await labels.verdict_counts() == []
    assert await labels.criterion_counts() == []
    assert (await labels.disagreements()).items == ()


async def test_a_blocking_reject_adds_no_label(registry: ArtifactRegistry) -> None:
    await registry.store.rubrics.register(make_rubric("safety", check("s", "score_field")))
    await registry.set_type(
        ArtifactType(name="post", rubrics=(RubricBinding(rubric_id="safety", blocking=True),))
    )
    artifact = await registry.create("post", FAIL, actor="bot")
    outcome = await registry.submit_for_review(artifact.id, actor="bot")
    assert outcome.artifact.status == "rejected"
    assert await JudgeLabels(registry.store.database).verdict_counts() == []


async def test_people_s_decisions_are_the_only_labels(registry: ArtifactRegistry) -> None:
    """Beside automatic decisions, a person's approval agrees with the judge and a person's
    reject of a passing artifact disagrees: exactly two labels."""
    await doc_types(registry)
    for _ in range(3):  # machine decisions around the human ones
        auto = await registry.create("doc", PASS, actor="bot")
        await registry.submit_for_review(auto.id, actor="bot")
    agreed = await registry.create("gated", PASS, actor="bot")
    await registry.submit_for_review(agreed.id, actor="bot")
    await registry.approve(agreed.id, actor="alice", reason="checked")
    refused = await registry.create("gated", PASS, actor="bot")
    await registry.submit_for_review(refused.id, actor="bot")
    await registry.reject(refused.id, actor="bob", reason="off topic")
    labels = JudgeLabels(registry.store.database)
    assert sorted(await labels.verdict_counts(), key=lambda c: c.human) == [
        VerdictCount("scored", "pass", "fail", 1),
        VerdictCount("scored", "pass", "pass", 1),
    ]
    [disagreement] = (await labels.disagreements()).items
    assert (disagreement.artifact_id, disagreement.actor) == (refused.id, "bob")


async def test_nobody_acts_under_rubricflow_s_own_name(registry: ArtifactRegistry) -> None:
    await doc_types(registry)
    artifact = await registry.create("gated", PASS, actor="bot")
    await registry.submit_for_review(artifact.id, actor="bot")
    with pytest.raises(ReviewError, match="reserved"):
        await registry.approve(artifact.id, actor=" rubricflow ", reason="looks fine")
    assert (await registry.get(artifact.id)).awaiting_approval
    with pytest.raises(ConfigurationError, match="reserved"):
        await registry.store.tokens.create("rubricflow", role="reviewer", created_by="admin")
