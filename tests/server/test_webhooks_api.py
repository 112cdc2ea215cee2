"""Webhooks over the API: admins subscribe (the SSRF guard refuses loopback unless allowed),
the server's own deliverer sends each decision signed, and the log and replay are there."""

from __future__ import annotations

from review.conftest import run_blocking
from review.webhook_receiver import running_receiver
from standardwebhooks import Webhook

from rubricflow.application import Application
from rubricflow.model import parse_rubric
from rubricflow.review import ArtifactType, RubricBinding

from .conftest import issue_token, wait_until

RUBRIC = {
    "id": "short-note",
    "name": "Short note",
    "version": "1.0.0",
    "criteria": [
        {
            "id": "has_text",
            "name": "Has text",
            "description": "The note is not empty.",
            "scoring": {"method": "deterministic", "function": "non_empty"},
        }
    ],
}


async def _submit_two(db_url: str) -> list[str]:
    async with await Application.open(db_url) as app:
        await app.store.rubrics.register(parse_rubric(RUBRIC))
        await app.artifacts.set_type(
            ArtifactType(name="note", rubrics=(RubricBinding(rubric_id="short-note"),))
        )
        passing = await app.create_and_submit("note", "hello", actor="bot")
        failing = await app.create_and_submit("note", "", actor="bot")
        return [passing.artifact.id, failing.artifact.id]


def test_decisions_reach_a_subscribed_receiver_signed_and_logged(start_server, server_db) -> None:
    admin = issue_token(server_db, "admin", name="ops")
    reviewer = issue_token(server_db, "reviewer", name="rev")
    server = start_server(server_db)
    with running_receiver() as receiver, server.client(admin) as ops:
        with server.client(reviewer) as rev:
            denied = rev.post("/v1/webhooks", json={"url": receiver.url, "events": ["all"]})
            assert denied.status_code == 403
        refused = ops.post("/v1/webhooks", json={"url": receiver.url, "events": ["all"]})
        assert refused.status_code == 422
        assert "allow" in refused.json()["detail"].lower()
        unknown = ops.post(
            "/v1/webhooks",
            json={"url": receiver.url, "events": ["published"], "allow_private": True},
        )
        assert unknown.status_code == 422 and "unknown webhook event" in unknown.json()["detail"]
        created = ops.post(
            "/v1/webhooks", json={"url": receiver.url, "events": ["all"], "allow_private": True}
        )
        assert created.status_code == 201, created.text
        receiver.secret = created.json()["secret"]
        subscription = created.json()["id"]
        assert ops.get(f"/v1/webhooks/{subscription}").json()["url"] == receiver.url

        ids = run_blocking(_submit_two(server_db))
        # each artifact: submitted, then approved (passing) or needs_revision (failing)
        assert receiver.wait_for(lambda r: len(r.delivered_ids()) >= 4, timeout=20)
        delivered = receiver.delivered()
        assert all(item.verified for item in delivered)
        first = delivered[0]
        Webhook(receiver.secret).verify(first.body, first.headers)
        kinds = {(item.payload or {})["data"]["artifact_id"]: [] for item in delivered}
        for item in delivered:
            payload = item.payload or {}
            kinds[payload["data"]["artifact_id"]].append(payload["type"])
        # deliveries are at least once and unordered: receivers order by data.event_seq
        assert sorted(kinds[ids[0]]) == ["artifact.approved", "artifact.submitted"]
        assert sorted(kinds[ids[1]]) == ["artifact.needs_revision", "artifact.submitted"]

        # the receiver has answered; the deliverer records each a moment later
        def delivered_log() -> list[dict]:
            return ops.get("/v1/webhooks/deliveries", params={"status": "delivered"}).json()

        assert wait_until(lambda: len(delivered_log()) == 4)
        log = delivered_log()
        assert len(log) == 4 and {d["subscription_id"] for d in log} == {subscription}
        detail = ops.get(f"/v1/webhooks/deliveries/{log[0]['id']}").json()
        assert detail["attempt_log"][0]["status_code"] == 200
        replayed = ops.post(f"/v1/webhooks/deliveries/{log[0]['id']}/replay")
        assert replayed.status_code == 202
        assert replayed.json()["message_id"] == log[0]["message_id"]
        assert receiver.wait_for(
            lambda r: sum(1 for x in r.delivered() if x.message_id == log[0]["message_id"]) == 2
        )
        # the receiver has answered; the deliverer records it a moment later
        assert wait_until(lambda: ops.get("/v1/webhooks/backlog").json()["pending"] == 0)
        assert ops.get("/v1/webhooks/deliveries/999999").status_code == 404
        removed = ops.delete(f"/v1/webhooks/{subscription}")
        assert removed.status_code == 200 and removed.json()["active"] is False
