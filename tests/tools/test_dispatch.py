"""Each tool dispatched end to end on a real store, in each provider's shape, and every
class of bad input answered with an error result that names the field and the fix."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from llm.scripted import ScriptedServer, openai_reply, verdict

from rubricflow.application import Application
from rubricflow.store.artifact_models import Artifact
from rubricflow.tools import ToolCallError, ToolDispatcher, dispatch, run_tool_sync

from .conftest import POST_RUBRIC, seed

GOOD = "Hello, please enjoy the new release."
LONG_RUDE = "This post is far too long and never once asks nicely for anything at all, sorry."


def openai_call(name: str, arguments: Any, call_id: str = "call_1") -> dict[str, Any]:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}


def anthropic_call(name: str, arguments: Any, call_id: str = "toolu_1") -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


async def call_openai(tools: ToolDispatcher, name: str, arguments: Any) -> dict[str, Any]:
    message = await tools.dispatch(openai_call(name, arguments))
    assert set(message) == {"role", "tool_call_id", "content"}
    assert message["role"] == "tool" and message["tool_call_id"] == "call_1"
    result: dict[str, Any] = json.loads(message["content"])
    return result


async def error_of(tools: ToolDispatcher, name: str, arguments: Any) -> dict[str, Any]:
    """The error an Anthropic-shaped call comes back with (is_error set)."""
    block = await tools.dispatch(anthropic_call(name, arguments))
    assert block["type"] == "tool_result" and block["tool_use_id"] == "toolu_1"
    assert block["is_error"] is True, block
    error: dict[str, Any] = json.loads(block["content"])["error"]
    return error


# --- each tool, end to end -------------------------------------------------------------------
async def test_submit_review_revise_until_approved(app: Application) -> None:
    tools = ToolDispatcher(app, actor="content-bot")
    first = await call_openai(
        tools,
        "submit_for_review",
        {
            "artifact_type": "post",
            "content": LONG_RUDE,
            "title": "Release note",
            "submitter": "writer-7",
            "metadata": [{"key": "channel", "value": "web"}],
        },
    )
    assert first["status"] == "needs_revision" and first["verdict"] == "fail"
    assert "revise_artifact" in first["next_step"]
    (evaluation,) = first["evaluations"]
    assert evaluation["rubric_id"] == "post" and evaluation["passed"] is False
    fixes = {fix["criterion_id"]: fix for fix in evaluation["fixes"]}
    assert set(fixes) == {"short", "polite"}
    assert fixes["short"]["required"] is True
    assert "At most 60 characters" in fixes["short"]["what_to_fix"]
    assert evaluation["fixes"][0]["criterion_id"] == "short"  # gating failures first
    statuses = {c["criterion_id"]: c["passed"] for c in evaluation["criteria"]}
    assert statuses == {"short": False, "polite": False, "no-email": True}

    stored = await app.artifacts.get(first["artifact_id"])
    assert stored.created_by == "content-bot"  # the host's actor, not the model's claim
    assert stored.metadata == {"channel": "web", "submitter": "writer-7"}
    assert stored.title == "Release note" and stored.content == LONG_RUDE

    review = await call_openai(tools, "get_review", {"artifact_id": first["artifact_id"]})
    assert review["status"] == "needs_revision" and review["revision"] == 1
    assert review["evaluations"][0]["fixes"] == evaluation["fixes"]
    assert review["history"][0]["action"] == "create"
    assert review["history"][-1]["to_status"] == "needs_revision"

    revised = await call_openai(
        tools,
        "revise_artifact",
        {
            "artifact_id": first["artifact_id"],
            "content": GOOD,
            "reason": "shorter, and polite",
            "expected_version": review["version"],
        },
    )
    assert revised["status"] == "approved" and revised["approved"] is True
    assert revised["revision"] == 2 and revised["verdict"] == "pass"
    assert revised["evaluations"][0]["fixes"] == []
    assert (await app.artifacts.get(first["artifact_id"])).status == "approved"
    history = await app.artifacts.history(first["artifact_id"])
    by_trigger = {event.trigger: event.actor for event in history}
    assert by_trigger["create"] == by_trigger["revise"] == "content-bot"
    assert "writer-7" not in {event.actor for event in history}


async def test_submit_json_content_and_a_queued_review(app: Application) -> None:
    tools = ToolDispatcher(app)
    queued = await call_openai(
        tools,
        "submit_for_review",
        {"artifact_type": "queued-post", "content": '"hi, please"', "content_format": "json"},
    )
    assert queued["status"] == "pending_review" and queued["queued"] is True
    assert queued["evaluations"] == [] and "get_review later" in queued["next_step"]
    stored = await app.artifacts.get(queued["artifact_id"])
    assert stored.content == "hi, please" and stored.created_by == "agent"


async def test_revise_without_resubmit_leaves_a_draft(app: Application) -> None:
    tools = ToolDispatcher(app)
    first = await call_openai(
        tools, "submit_for_review", {"artifact_type": "post", "content": LONG_RUDE}
    )
    draft = await call_openai(
        tools,
        "revise_artifact",
        {"artifact_id": first["artifact_id"], "content": GOOD, "resubmit": False},
    )
    assert draft["status"] == "draft" and draft["revision"] == 2 and draft["verdict"] is None


async def test_evaluate_text_with_a_registered_rubric_stores_nothing(app: Application) -> None:
    tools = ToolDispatcher(app)
    result = await call_openai(
        tools, "evaluate_text", {"content": "write to bob@example.com", "rubric": "post"}
    )
    assert result["verdict"] == "fail" and result["rubric_version"] == "1.0.0"
    assert result["score"] == 0.5
    assert [f["criterion_id"] for f in result["fixes"]] == ["polite", "no-email"]
    assert "Names no email address" in result["fixes"][1]["what_to_fix"]
    assert result["threshold"] == 0.75
    pinned = await call_openai(tools, "evaluate_text", {"content": GOOD, "rubric": "post@0.9.0"})
    assert pinned["verdict"] == "pass" and pinned["rubric_version"] == "0.9.0"
    assert await app.artifacts.list_artifacts() == []


async def test_evaluate_text_with_an_inline_rubric(app: Application) -> None:
    tools = ToolDispatcher(app)
    inline = {**POST_RUBRIC, "id": "inline-post"}
    result = await call_openai(
        tools, "evaluate_text", {"content": GOOD, "rubric_document": json.dumps(inline)}
    )
    assert result["verdict"] == "pass" and result["rubric_id"] == "inline-post"
    yaml_text = "id: shout\ncriteria:\n  - id: loud\n    description: Says WOW\n"
    yaml_text += "    scoring: {method: deterministic, function: contains_all, "
    yaml_text += "config: {terms: [WOW]}}\n"
    loud = await call_openai(
        tools, "evaluate_text", {"content": "wow", "rubric_document": yaml_text}
    )
    assert loud["verdict"] == "pass"  # contains_all is case-insensitive by default


async def test_evaluate_text_with_the_host_s_judge_over_http(app: Application) -> None:
    with ScriptedServer() as server:
        server.queue(openai_reply(verdict("UNMET", "It is curt.")))
        tools = ToolDispatcher(app, judge=f"openai:judge@{server.url}/v1")
        result = await call_openai(tools, "evaluate_text", {"content": "No.", "rubric": "tone"})
        (request,) = server.requests
    assert result["verdict"] == "fail"
    assert result["criteria"][0]["verdict"] == "UNMET"
    assert result["fixes"][0]["what_to_fix"] == (
        "meet the requirement: The reply is friendly (evidence: judge: It is curt.)"
    )
    assert "<content>" in request.text or "No." in request.text


async def test_list_and_explain_rubrics(app: Application) -> None:
    tools = ToolDispatcher(app)
    listed = await call_openai(tools, "list_rubrics", {})
    assert [(r["id"], r["version"]) for r in listed["rubrics"]] == [
        ("post", "1.0.0"),
        ("tone", "1.0.0"),
    ]
    assert listed["rubrics"][0]["criteria"] == 3
    none = await call_openai(tools, "list_rubrics", {"target_type": "tweet"})
    assert none["rubrics"] == []
    explained = await call_openai(tools, "explain_rubric", {"rubric": "post"})
    assert explained["pass_threshold"] == 0.75
    short = explained["criteria"][0]
    assert (short["id"], short["weight"], short["required"], short["method"]) == (
        "short",
        2.0,
        True,
        "deterministic",
    )
    assert "0.75" in explained["passing"] and "Short" in explained["passing"]
    tone = await call_openai(tools, "explain_rubric", {"rubric": "tone@1.0.0"})
    assert tone["criteria"][0]["method"] == "llm_verdict"


async def test_the_three_provider_shapes(app: Application) -> None:
    tools = ToolDispatcher(app)
    responses = await tools.dispatch(
        {"type": "function_call", "call_id": "fc_9", "name": "list_rubrics", "arguments": "{}"}
    )
    assert set(responses) == {"type", "call_id", "output"}
    assert responses["type"] == "function_call_output" and responses["call_id"] == "fc_9"
    assert json.loads(responses["output"])["rubrics"][0]["id"] == "post"
    block = await tools.dispatch(anthropic_call("explain_rubric", {"rubric": "post"}))
    assert set(block) == {"type", "tool_use_id", "content", "is_error"}
    assert block["is_error"] is False and json.loads(block["content"])["id"] == "post"
    results = await tools.dispatch_all(
        [openai_call("list_rubrics", {}, "a"), openai_call("get_review", {}, "b")]
    )
    assert [r["tool_call_id"] for r in results] == ["a", "b"]
    assert "error" in json.loads(results[1]["content"])


async def test_sdk_objects_with_model_dump_are_accepted(app: Application) -> None:
    class SdkToolCall:  # what the openai SDK's ChatCompletionMessageToolCall offers
        def model_dump(self) -> dict[str, Any]:
            return openai_call("list_rubrics", {}, "sdk_1")

    message = await dispatch(app, SdkToolCall())
    assert message["tool_call_id"] == "sdk_1"


async def test_a_dispatcher_limited_to_some_tools_runs_only_those(app: Application) -> None:
    tools = ToolDispatcher(app, tools=["submit_for_review", "get_review"])
    assert [t["function"]["name"] for t in tools.openai_tools()] == [
        "submit_for_review",
        "get_review",
    ]
    assert [t["name"] for t in tools.anthropic_tools()] == ["submit_for_review", "get_review"]
    assert [t["name"] for t in tools.openai_responses_tools()] == [
        "submit_for_review",
        "get_review",
    ]
    error = await error_of(tools, "list_rubrics", {})
    assert error["type"] == "unknown_tool"
    assert "call one of: submit_for_review, get_review" in error["message"]


async def test_the_same_flow_on_postgresql(pg_app: Application) -> None:
    tools = ToolDispatcher(pg_app, actor="pg-bot")
    first = await call_openai(
        tools, "submit_for_review", {"artifact_type": "post", "content": LONG_RUDE}
    )
    assert first["status"] == "needs_revision"
    revised = await call_openai(
        tools, "revise_artifact", {"artifact_id": first["artifact_id"], "content": GOOD}
    )
    assert revised["status"] == "approved"
    review = await call_openai(tools, "get_review", {"artifact_id": first["artifact_id"]})
    assert review["approved"] is True and len(review["history"]) >= 6
    error = await error_of(tools, "get_review", {"artifact_id": "nul\u0000id"})
    assert error["problems"][0]["field"] == "artifact_id"


def test_the_sync_wrapper(tmp_path: Path) -> None:
    import asyncio

    db = f"sqlite+aiosqlite:///{tmp_path / 'sync.db'}"

    async def prepare() -> None:
        async with await Application.open(db) as application:
            await seed(application)

    asyncio.run(prepare())
    message = run_tool_sync(
        db, openai_call("submit_for_review", {"artifact_type": "post", "content": GOOD}), actor="s"
    )
    assert json.loads(message["content"])["status"] == "approved"


# --- bad input: an error result naming the field and the fix ---------------------------------
async def test_arguments_that_are_not_json(app: Application) -> None:
    tools = ToolDispatcher(app)
    message = await tools.dispatch(openai_call("get_review", '{"artifact_id": '))
    error = json.loads(message["content"])["error"]
    assert error["type"] == "invalid_json"
    assert "not valid JSON" in error["message"] and "one JSON object" in error["message"]


async def test_arguments_that_are_not_an_object(app: Application) -> None:
    tools = ToolDispatcher(app)
    message = await tools.dispatch(openai_call("get_review", "[1, 2]"))
    error = json.loads(message["content"])["error"]
    assert error["type"] == "invalid_arguments" and "a JSON list, not an object" in error["message"]


async def test_an_unknown_tool(app: Application) -> None:
    error = await error_of(ToolDispatcher(app), "publish_now", {})
    assert error["type"] == "unknown_tool"
    assert "there is no tool 'publish_now'; call one of: evaluate_text" in error["message"]


@pytest.mark.parametrize(
    ("arguments", "field", "fix"),
    [
        ({"content": "x"}, "artifact_type", "Field required: add it"),
        ({"artifact_type": "post", "content": 7}, "content", "send the type"),
        ({"artifact_type": "post", "content": "x", "colour": "red"}, "colour", "remove it"),
        (
            {"artifact_type": "post", "content": "x", "content_format": "xml"},
            "content_format",
            "'text', 'json' or 'conversation'",
        ),
        ({"artifact_type": "post", "content": "a\u0000b"}, "content", "NUL"),
        ({"artifact_type": "post", "content": "\ud800"}, "content", "valid Unicode"),
        (
            {"artifact_type": "post", "content": "x", "metadata": [{"key": "k"}]},
            "metadata.0.value",
            "add it",
        ),
    ],
)
async def test_schema_violations_name_the_field(
    app: Application, arguments: dict[str, Any], field: str, fix: str
) -> None:
    error = await error_of(ToolDispatcher(app), "submit_for_review", arguments)
    assert error["type"] == "invalid_arguments"
    (problem,) = error["problems"]
    assert problem["field"] == field and fix in problem["message"], problem
    if field == "colour":
        assert "submit_for_review takes: artifact_type, content" in problem["message"]
    assert await app.artifacts.list_artifacts() == []  # nothing was created


async def test_evaluate_text_needs_exactly_one_rubric(app: Application) -> None:
    tools = ToolDispatcher(app)
    neither = await error_of(tools, "evaluate_text", {"content": "x"})
    assert "give either `rubric`" in neither["message"]
    both = await error_of(
        tools, "evaluate_text", {"content": "x", "rubric": "post", "rubric_document": "id: a"}
    )
    assert "not both" in both["message"]


async def test_unknown_rubric_artifact_and_type(app: Application) -> None:
    tools = ToolDispatcher(app)
    rubric = await error_of(tools, "evaluate_text", {"content": "x", "rubric": "nope"})
    assert rubric["type"] == "not_found" and "call list_rubrics" in rubric["message"]
    version = await error_of(tools, "explain_rubric", {"rubric": "post@9.9.9"})
    assert version["type"] == "not_found" and "9.9.9" in version["message"]
    reference = await error_of(tools, "explain_rubric", {"rubric": "post@"})
    assert reference["type"] == "refused" and "ID@VERSION" in reference["message"]
    artifact = await error_of(tools, "get_review", {"artifact_id": "missing"})
    assert artifact["type"] == "not_found"
    assert artifact["message"].startswith("artifact_id: no artifact 'missing'")
    kind = await error_of(tools, "submit_for_review", {"artifact_type": "tweet", "content": "x"})
    assert kind["type"] == "not_found"
    assert (
        "artifact_type: no artifact type 'tweet'; use one of: post, queued-post"
        in (kind["message"])
    )


@dataclass(frozen=True)
class Tenant:
    """One user of a host that serves several: sees only what it created, submits posts."""

    name: str
    role: str = "submitter"

    def allows_type(self, type_name: str) -> bool:
        return type_name == "post"

    def can_read(self, artifact: Artifact) -> bool:
        return artifact.created_by == self.name


async def test_a_host_serving_several_users_gives_each_its_own_artifacts(
    app: Application,
) -> None:
    alice = ToolDispatcher(app, caller=Tenant("alice"))
    bob = ToolDispatcher(app, caller=Tenant("bob"))
    mine = await call_openai(alice, "submit_for_review", {"artifact_type": "post", "content": GOOD})
    assert (await app.artifacts.get(mine["artifact_id"])).created_by == "alice"
    assert (await call_openai(alice, "get_review", {"artifact_id": mine["artifact_id"]}))[
        "status"
    ] == "approved"
    # bob is told it does not exist, as for an unknown id, and changes nothing
    for name, arguments in (
        ("get_review", {"artifact_id": mine["artifact_id"]}),
        ("revise_artifact", {"artifact_id": mine["artifact_id"], "content": "mine now"}),
    ):
        refused = await error_of(bob, name, arguments)
        assert refused["type"] == "not_found"
        assert refused["message"].startswith(f"artifact_id: no artifact {mine['artifact_id']!r}")
    stored = await app.artifacts.get(mine["artifact_id"])
    assert (stored.content, stored.revision) == (GOOD, 1)
    kind = await error_of(
        bob, "submit_for_review", {"artifact_type": "queued-post", "content": "x"}
    )
    assert kind["type"] == "not_allowed"
    assert "'bob' may not submit artifacts of type 'queued-post'" in kind["message"]
    with pytest.raises(ToolCallError, match="actor 'carol' and caller 'bob' disagree"):
        ToolDispatcher(app, actor="carol", caller=Tenant("bob"))


async def test_a_transition_the_lifecycle_refuses(app: Application) -> None:
    tools = ToolDispatcher(app)
    queued = await call_openai(
        tools, "submit_for_review", {"artifact_type": "queued-post", "content": GOOD}
    )
    error = await error_of(
        tools, "revise_artifact", {"artifact_id": queued["artifact_id"], "content": "again"}
    )
    assert error["type"] == "not_allowed"
    assert "pending_review" in error["message"] and "'revise' is not allowed" in error["message"]


async def test_a_stale_expected_version(app: Application) -> None:
    tools = ToolDispatcher(app)
    first = await call_openai(
        tools, "submit_for_review", {"artifact_type": "post", "content": LONG_RUDE}
    )
    error = await error_of(
        tools,
        "revise_artifact",
        {"artifact_id": first["artifact_id"], "content": GOOD, "expected_version": 1},
    )
    assert error["type"] == "version_conflict" and "version 1" in error["message"]
    assert (await app.artifacts.get(first["artifact_id"])).revision == 1  # nothing changed


async def test_content_that_is_not_the_json_it_claims(app: Application) -> None:
    error = await error_of(
        ToolDispatcher(app),
        "submit_for_review",
        {"artifact_type": "post", "content": "{oops", "content_format": "json"},
    )
    assert "content" in error["message"] and "content_format 'text'" in error["message"]


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ("id: [unclosed", "<tool call>"),
        ("id: r\ncriteria: []\n", "criteria"),
        (
            "id: r\ncriteria:\n  - id: c\n    scoring: {method: schema, schema_ref: /etc/passwd}\n",
            "schema_ref",
        ),
        (
            "id: r\ncriteria:\n  - id: c\n"
            "    scoring: {method: deterministic, function: os:system}\n",
            "names code to import",
        ),
        (
            "id: r\ncriteria:\n  - id: c\n"
            "    scoring: {method: llm_verdict, model: 'python:x:y'}\n",
            "python: judge",
        ),
    ],
)
async def test_inline_rubrics_are_a_stranger_s_data(
    app: Application, document: str, expected: str
) -> None:
    error = await error_of(
        ToolDispatcher(app), "evaluate_text", {"content": "x", "rubric_document": document}
    )
    assert error["type"] == "refused" and expected in error["message"], error


async def test_an_inline_document_with_several_rubrics(app: Application) -> None:
    tools = ToolDispatcher(app)
    two = json.dumps({"rubrics": [{**POST_RUBRIC, "id": "a"}, {**POST_RUBRIC, "id": "b"}]})
    error = await error_of(tools, "evaluate_text", {"content": GOOD, "rubric_document": two})
    assert "holds 2 rubrics (a, b); name one with `rubric_id`" in error["message"]
    chosen = await call_openai(
        tools, "evaluate_text", {"content": GOOD, "rubric_document": two, "rubric_id": "b"}
    )
    assert chosen["rubric_id"] == "b"
    missing = await error_of(
        tools, "evaluate_text", {"content": GOOD, "rubric_document": two, "rubric_id": "c"}
    )
    assert missing["type"] == "not_found" and "(it holds: a, b)" in missing["message"]


async def test_a_judged_rubric_without_a_judge(app: Application) -> None:
    error = await error_of(ToolDispatcher(app), "evaluate_text", {"content": "x", "rubric": "tone"})
    assert "criteria friendly of rubric 'tone' need a judge" in error["message"]
    assert "ToolDispatcher(app, judge=SPEC)" in error["message"]


async def test_a_tool_call_of_no_known_shape_is_the_host_s_error(app: Application) -> None:
    tools = ToolDispatcher(app)
    with pytest.raises(ToolCallError, match="no known shape"):
        await tools.dispatch({"tool": "get_review"})
    with pytest.raises(ToolCallError, match="must be a mapping"):
        await tools.dispatch("get_review")


async def test_a_store_that_fails_is_a_store_error_that_names_no_database(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import sqlite3
    from contextlib import closing

    path = tmp_path / "broken.db"
    async with await Application.open(f"sqlite+aiosqlite:///{path}") as application:
        with closing(sqlite3.connect(path)) as connection:  # a table dropped under us
            connection.execute("DROP TABLE rubric_versions")
            connection.commit()
        error = await error_of(ToolDispatcher(application), "list_rubrics", {})
    assert error["type"] == "store_error"
    assert error["message"] == "list_rubrics failed: the review store is unavailable; retry later"
    assert "no such table: rubric_versions" in caplog.text and str(path) in caplog.text


async def test_a_revision_the_type_would_refuse_changes_nothing(app: Application) -> None:
    """revise_artifact checks the new content against the type before it stores it: a
    refused revision leaves the artifact where it was (needs_revision, same version), so
    the model's corrected retry with the same expected_version goes through."""
    from rubricflow.review import ArtifactType
    from rubricflow.store.artifacts import RubricBinding

    schema = {"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}}
    await app.artifacts.set_type(
        ArtifactType(name="card", rubrics=(RubricBinding(rubric_id="post"),), content_schema=schema)
    )
    tools = ToolDispatcher(app)
    first = await call_openai(
        tools,
        "submit_for_review",
        {
            "artifact_type": "card",
            "content": json.dumps({"text": LONG_RUDE}),
            "content_format": "json",
        },
    )
    assert first["status"] == "needs_revision"
    revision = {"artifact_id": first["artifact_id"], "content_format": "json"}
    error = await error_of(
        tools,
        "revise_artifact",
        {**revision, "content": json.dumps({"body": GOOD}), "expected_version": first["version"]},
    )
    assert "'text' is a required property" in error["message"]
    stored = await app.artifacts.get(first["artifact_id"])
    assert (stored.status, stored.revision, stored.version) == (
        "needs_revision",
        1,
        first["version"],
    )
    fixed = await call_openai(
        tools,
        "revise_artifact",
        {**revision, "content": json.dumps({"text": GOOD}), "expected_version": first["version"]},
    )
    assert fixed["status"] == "approved" and fixed["revision"] == 2
