"""Creating and submitting in one step (`ArtifactRegistry.create_and_submit`, what
`POST /v1/submissions` and `artifacts submit --type` run): the create and the submit are
written in one transaction, so whatever the submit refuses creates nothing, and the
history and the listeners see the same two steps as a create and a submit made apart."""

from __future__ import annotations

import pytest

from rubricflow.errors import (
    ArtifactIdTakenError,
    ContentValidationError,
    NotFoundError,
    ReviewError,
)
from rubricflow.review import ArtifactRegistry, ArtifactType
from rubricflow.store import Store

from .conftest import FAIL, PASS, Recorder, assert_replays, doc_types, triggers


async def test_created_and_submitted_in_one_step_has_the_history_of_two(
    registry: ArtifactRegistry, recorder: Recorder
) -> None:
    await doc_types(registry)
    outcome = await registry.create_and_submit(
        "doc", PASS, actor="bot", title="t", metadata={"k": 1}, artifact_id="one-step"
    )
    assert outcome.approved
    assert outcome.artifact.id == "one-step"
    assert (outcome.artifact.title, outcome.artifact.metadata) == ("t", {"k": 1})
    events = await registry.history("one-step")
    assert triggers(events) == ["create", "submit", "start_review", "approve"]
    assert [e.seq for e in events] == [1, 2, 3, 4]
    assert_replays(events, status="approved", revision=1)
    # the listeners hear both steps, in order, each once
    assert [e["trigger"] for e in recorder.events if e["artifact_id"] == "one-step"] == [
        "create",
        "submit",
        "start_review",
        "approve",
    ]
    stored = await registry.evaluations("one-step")
    assert [e.id for e in stored] == [e.id for e in outcome.evaluations]


async def test_a_failing_one_step_submission_is_sent_back_with_its_review(
    registry: ArtifactRegistry,
) -> None:
    await doc_types(registry)
    outcome = await registry.create_and_submit("doc", FAIL, actor="bot")
    assert outcome.artifact.status == "needs_revision"
    assert [e.verdict for e in outcome.evaluations] == ["fail"]


async def test_deferred_one_step_submission_is_queued(registry: ArtifactRegistry) -> None:
    await doc_types(registry)
    outcome = await registry.create_and_submit("doc", PASS, actor="bot", defer=True)
    assert outcome.queued
    assert outcome.artifact.status == "pending_review"
    assert triggers(await registry.history(outcome.artifact.id)) == ["create", "submit"]


@pytest.mark.parametrize(
    ("setup", "error", "message"),
    [
        ("unknown type", NotFoundError, "nope"),
        ("no rubrics", ReviewError, "binds no rubrics"),
        ("bad content", ContentValidationError, "content schema"),
        ("deleted rubric", NotFoundError, "register it (or bind another)"),
    ],
)
async def test_whatever_the_submit_refuses_creates_nothing(
    registry: ArtifactRegistry,
    store: Store,
    recorder: Recorder,
    setup: str,
    error: type[Exception],
    message: str,
) -> None:
    await doc_types(registry)
    type_name = "doc"
    if setup == "unknown type":
        type_name = "nope"
    elif setup == "no rubrics":
        await registry.set_type(ArtifactType(name="bare"))
        type_name = "bare"
    elif setup == "bad content":
        doc = await registry.get_type("doc")
        schema = {"type": "object", "required": ["title"]}
        await registry.set_type(doc.model_copy(update={"content_schema": schema}))
    else:
        await store.rubrics.delete("scored")
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")) as raised:
        await registry.create_and_submit(type_name, PASS, actor="bot", artifact_id="refused")
    if setup != "unknown type":
        assert "nothing was created" in str(raised.value)
    assert await registry.list_artifacts() == []
    with pytest.raises(NotFoundError):
        await registry.get("refused")
    assert recorder.events == []


async def test_an_id_already_taken_is_refused_and_the_first_artifact_is_untouched(
    registry: ArtifactRegistry,
) -> None:
    await doc_types(registry)
    first = await registry.create("doc", FAIL, actor="bot", artifact_id="taken")
    with pytest.raises(ArtifactIdTakenError, match="the artifact id 'taken' is taken"):
        await registry.create_and_submit("doc", PASS, actor="bot", artifact_id="taken")
    after = await registry.get("taken")
    assert (after.status, after.version, after.content) == ("draft", first.version, FAIL)
    assert triggers(await registry.history("taken")) == ["create"]
