"""rubricflow.client against real servers: every method family through `Client` (SQLite
and PostgreSQL), errors as the RubricflowError classes the same mistakes raise in process,
a retry after a dropped connection that creates one artifact, and `wait_for_decision` on
a review the server's embedded worker decides."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import TypeVar

import httpx
import pytest

from rubricflow.client import AsyncClient, Client, RetryPolicy
from rubricflow.errors import (
    ArtifactConflictError,
    AuthenticationError,
    ConfigurationError,
    DecisionTimeoutError,
    IllegalTransitionError,
    NotFoundError,
    PermissionDeniedError,
    PreconditionFailedError,
    RubricVersionConflictError,
    ServerError,
)
from rubricflow.results import Target
from rubricflow.wire import ArtifactTypeIn, RubricBindingIn

from .artifact_setup import FAIL, PASS, RUBRIC, Tokens, prepare
from .conftest import RunningServer

StartServer = Callable[..., RunningServer]
T = TypeVar("T")

GATE_V2 = """id: gate
name: Gate
version: 2.0.0
pass_threshold: 0.6
criteria:
  - id: clean
    description: The content does not say FAIL.
    scoring: {method: deterministic, function: contains_none, config: {terms: [FAIL]}}
"""


def test_the_client_over_every_method_family(server_db: str, start_server: StartServer) -> None:
    tokens = prepare(server_db)
    server = start_server(server_db, "--review-workers", "0")  # deferred reviews stay queued
    with (
        Client(server.url, tokens.sub) as sub,
        Client(server.url, tokens.rev) as rev,
        Client(server.url, tokens.admin) as admin,
    ):
        assert sub.me().name == "sub" and sub.me().role == "submitter"
        assert {t.name for t in sub.list_types()} == {"note", "gated"}
        assert sub.get_type("note").rubrics[0].rubric_id == "gate"

        # one request per artifact: the decision is in the answer
        passed = sub.submit("note", PASS, title="fine", metadata={"n": 1})
        assert passed.status == "approved" and passed.approved
        assert passed.evaluations[0].rubric_id == "gate"
        failed = sub.submit("note", FAIL)
        assert failed.status == "needs_revision" and not failed.approved

        # revise with If-Match, then submit the revision
        stale = failed.artifact.version - 1
        with pytest.raises(PreconditionFailedError) as refused:
            sub.revise(failed.artifact.id, PASS, reason="fixed", expected_version=stale)
        assert refused.value.status == 412 and refused.value.problem is not None
        revised = sub.revise(
            failed.artifact.id, PASS, reason="fixed", expected_version=failed.artifact.version
        )
        assert revised.status == "draft" and revised.revision == 2
        again = sub.submit_artifact(revised.id, expected_version=revised.version)
        assert again.status == "approved"

        # reads: one, pages through a cursor, history, evaluations
        assert sub.get(passed.artifact.id).title == "fine"
        created = sub.create("note", PASS, artifact_id="chosen-id")
        assert created.status == "draft" and created.created_by == "sub"
        listed = [a.id for a in sub.list(page_size=1)]
        assert sorted(listed) == sorted([passed.artifact.id, failed.artifact.id, "chosen-id"])
        assert [a.id for a in sub.list(page_size=1, limit=2)] == listed[:2]
        assert [a.id for a in sub.list(status="draft")] == ["chosen-id"]
        triggers = [e.trigger for e in sub.history(failed.artifact.id)]
        assert triggers[0] == "create" and "revise" in triggers and triggers[-1] == "approve"
        assert len(sub.evaluations(failed.artifact.id)) == 2
        assert len(sub.evaluations(failed.artifact.id, revision=2)) == 1

        # decisions: a human approves what waits; stale versions and refused triggers
        gated = sub.submit("gated", PASS)
        assert gated.artifact.awaiting_approval and gated.status == "in_review"
        with pytest.raises(PermissionDeniedError) as denied:
            sub.approve(gated.artifact.id, reason="mine")
        assert denied.value.status == 403
        approved = rev.approve(
            gated.artifact.id, reason="looks right", expected_version=gated.artifact.version
        )
        assert approved.status == "approved"
        with pytest.raises(IllegalTransitionError) as illegal:
            rev.reject(gated.artifact.id, reason="too late")
        assert illegal.value.status == 409 and illegal.value.trigger == "reject"
        assert "approved" in str(illegal.value)
        assert isinstance(illegal.value, ArtifactConflictError) is False
        sent_back = sub.submit("note", FAIL)
        overridden = rev.override(sent_back.artifact.id, reason="fine as is")
        assert overridden.status == "approved"
        superseded = rev.supersede(passed.artifact.id, reason="replaced", by=failed.artifact.id)
        assert superseded.status == "superseded"
        queued = sub.submit("note", PASS, defer=True)
        withdrawn = sub.withdraw(queued.artifact.id, reason="not yet")
        assert withdrawn.status == "draft"
        assert rev.archive("chosen-id").status == "archived"

        # the stream of an artifact: every transition, ending at a final state
        seen = [e.trigger for e in sub.events("chosen-id")]
        assert seen == ["create", "archive"]

        # another's artifact is not there; no token is not allowed
        with Client(server.url, tokens.other) as other, pytest.raises(NotFoundError) as missing:
            other.get(passed.artifact.id)
        assert missing.value.status == 404 and "no artifact" in str(missing.value)
        with Client(server.url, "rf_not-a-token") as nobody, pytest.raises(AuthenticationError):
            nobody.me()

        # scoring without storage, as JSON and as NDJSON
        scored = sub.evaluate("gate", [PASS, Target(id="b", content=FAIL)])
        assert [e.verdict for e in scored.evaluations] == ["pass", "fail"]
        assert scored.summary.passed == 1 and scored.rubric.version == "1.0.0"
        lines = list(sub.evaluate_stream("gate@1.0.0", [{"id": "x", "content": PASS}] * 3))
        assert sorted(line.index for line in lines) == [0, 1, 2]
        assert all(line.evaluation and line.evaluation.passed for line in lines)

        # rubrics: register, list, get, versions, lint, diff
        registered = admin.register_rubrics(GATE_V2)
        assert registered.registered[0].created and registered.registered[0].version == "2.0.0"
        assert not admin.register_rubrics(GATE_V2).registered[0].created
        with pytest.raises(RubricVersionConflictError):
            admin.register_rubrics(GATE_V2.replace("0.6", "0.7"))
        with pytest.raises(PermissionDeniedError):
            sub.register_rubrics(GATE_V2)
        assert [(r.id, r.version) for r in sub.list_rubrics()] == [("gate", "2.0.0")]
        assert sub.get_rubric("gate", "1.0.0").document.pass_threshold == RUBRIC["pass_threshold"]
        assert [v.version for v in sub.rubric_versions("gate")] == ["1.0.0", "2.0.0"]
        assert sub.lint_rubric(GATE_V2).valid
        assert not sub.lint_rubric("id: broken\n").valid
        diff = sub.diff_rubric("gate")
        assert diff.scoring_changed and diff.before.version == "1.0.0"
        with pytest.raises(NotFoundError):
            sub.get_rubric("nope")
        assert rev.pass_rates("gate")  # reviews' evaluations count
        with pytest.raises(PermissionDeniedError):
            sub.pass_rates("gate")

        # types (admins), runs and judge usage (reviewers)
        defined = admin.set_type(
            "memo", ArtifactTypeIn(rubrics=[RubricBindingIn(rubric_id="gate")], description="m")
        )
        assert defined.name == "memo" and defined.description == "m"
        assert rev.list_runs() == [] and rev.judge_usage(by_model=False) is not None
        with pytest.raises(NotFoundError):
            rev.get_run("latest")

        # tokens and webhooks (admins)
        issued = admin.create_token("bot", role="submitter", types=["note"])
        with Client(server.url, issued.token) as bot:
            assert bot.me().types == ["note"]
            admin.revoke_token("bot")
            with pytest.raises(AuthenticationError):
                bot.me()
        assert "bot" in {t.name for t in admin.list_tokens(include_revoked=True)}
        hook = admin.add_webhook(
            "http://127.0.0.1:9/hook", ["approved"], artifact_type="note", allow_private=True
        )
        assert hook.secret and [w.id for w in admin.list_webhooks()] == [hook.id]
        assert admin.get_webhook(hook.id).url == "http://127.0.0.1:9/hook"
        assert admin.remove_webhook(hook.id).active is False
        assert admin.webhook_backlog().pending >= 0
        with pytest.raises(PermissionDeniedError):
            sub.list_tokens()


@pytest.fixture(scope="module")
def prepared(module_sqlite_db: str, request: pytest.FixtureRequest) -> tuple[RunningServer, Tokens]:
    """One server (default options, an embedded worker) on a store prepared before it
    starts, shared by the tests below: each acts through a submitter of its own or creates
    nothing."""
    tokens = prepare(module_sqlite_db)
    server: RunningServer = request.getfixturevalue("module_sqlite_server")
    return server, tokens


def test_wait_for_decision_on_a_review_the_embedded_worker_decides(
    prepared: tuple[RunningServer, Tokens],
) -> None:
    server, tokens = prepared

    async def scenario() -> None:
        async with AsyncClient(server.url, tokens.sub) as client:
            queued = await client.submit("note", FAIL, defer=True)
            assert queued.queued and queued.status == "pending_review"
            decided = await client.wait_for_decision(queued.artifact.id, timeout=30)
            assert decided.status == "needs_revision"
            events = [e.dest async for e in _until(client.events(queued.artifact.id), 4)]
            assert events == ["draft", "pending_review", "in_review", "needs_revision"]
            drafted = await client.create("note", PASS)
            with pytest.raises(DecisionTimeoutError) as late:
                await client.wait_for_decision(drafted.id, timeout=0.3, poll=0.1)
            assert "draft" in str(late.value)

    asyncio.run(scenario())


async def _until(events: AsyncIterator[T], count: int) -> AsyncIterator[T]:
    seen = 0
    async for event in events:
        yield event
        seen += 1
        if seen == count:
            return


class DropsTheFirstAnswer(httpx.AsyncBaseTransport):
    """Sends every request, but loses the answer of the first submission (as a dropped
    connection would): the server did the work, the client never heard."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.dropped = 0
        self.keys: list[str] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        if request.url.path == "/v1/submissions":
            self.keys.append(request.headers["Idempotency-Key"])
            if not self.dropped:
                self.dropped += 1
                await response.aread()
                await response.aclose()
                raise httpx.ReadError("connection dropped", request=request)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


def test_a_retry_after_a_dropped_connection_creates_one_artifact(
    prepared: tuple[RunningServer, Tokens],
) -> None:
    server, tokens = prepared
    transport = DropsTheFirstAnswer()

    async def scenario() -> None:
        # `other`: this test's own submitter, so its list holds only what this test made
        async with AsyncClient(
            server.url, tokens.other, transport=transport, retry=RetryPolicy(backoff=0.01)
        ) as client:
            outcome = await client.submit("note", PASS)
            assert outcome.status == "approved"
            listed = [a.id async for a in client.list()]
            assert listed == [outcome.artifact.id]
            history = await client.history(outcome.artifact.id)
            assert [e.trigger for e in history].count("submit") == 1

    asyncio.run(scenario())
    assert transport.dropped == 1
    assert len(transport.keys) == 2 and transport.keys[0] == transport.keys[1]


def test_errors_name_the_server_and_never_the_token(
    prepared: tuple[RunningServer, Tokens],
) -> None:
    server, tokens = prepared
    with Client(server.url, tokens.sub) as client:
        with pytest.raises(ConfigurationError) as invalid:
            client.submit("note", PASS, artifact_id="bad/id")
        assert invalid.value.status == 422 and invalid.value.problem
        assert tokens.sub not in repr(client)
    with pytest.raises(ConfigurationError, match="http:// or https://"):
        Client("127.0.0.1:8000", "x")
    unreachable = Client(
        "http://127.0.0.1:9", tokens.sub, retry=RetryPolicy(attempts=2, backoff=0.01)
    )
    with unreachable, pytest.raises(ServerError) as gone:
        unreachable.me()
    assert "cannot reach" in str(gone.value) and tokens.sub not in str(gone.value)
