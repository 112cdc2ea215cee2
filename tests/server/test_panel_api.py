"""The server's judge may be a panel (`serve --llm A --llm B --panel POLICY`): the API's
evaluations carry each criterion's confidence and the margin; a type's own judge is
checked when it is set: over the API it may name only the server's judges. In process
(TestClient)."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient
from llm.scripted import Recorded, Reply, ScriptedServer, openai_reply, verdict

from rubricflow.llm.panel import panel_spec
from rubricflow.server import ServerSettings
from rubricflow.server.app import create_app

JUDGED = """
id: helpful
criteria:
  - id: answers
    description: The reply answers the question
    scoring: {method: llm_verdict}
"""


def test_a_panel_judges_for_the_api_and_a_types_judge_names_only_the_servers(
    tmp_path: Path,
) -> None:
    def respond(request: Recorded) -> Reply:
        return openai_reply(verdict("UNMET" if request.json["model"] == "c" else "MET"))

    with ScriptedServer(respond) as judge:
        spec = panel_spec([f"openai:{m}@{judge.url}/v1" for m in "abc"], "majority")
        settings = ServerSettings(
            db=f"sqlite+aiosqlite:///{tmp_path / 'api.db'}", auth=False, judge=spec
        )
        with TestClient(create_app(settings)) as client:
            done = client.post(
                "/v1/evaluate", json={"document": JUDGED, "target": {"content": "Paris."}}
            )
            assert done.status_code == 200, done.text
            (evaluation,) = done.json()["evaluations"]
            (answers,) = evaluation["criteria"]
            assert answers["verdict"] == "MET" and answers["confidence_source"] == "panel"
            assert abs(answers["confidence"] - 2 / 3) < 1e-9
            # worked out exactly: 1 - 0.7 is 0.3, not 0.30000000000000004
            assert (evaluation["score"], evaluation["threshold"]) == (1.0, 0.7)
            assert evaluation["margin"] == 0.3
            assert {c["judge"].split("@")[0] for c in answers["llm_calls"]} == {
                "openai:a",
                "openai:b",
                "openai:c",
            }
            refused = client.put(
                "/v1/types/note", json={"judge": "panel:majority(python:os:system | local)"}
            )
            assert refused.status_code in (400, 403, 422), refused.text
            assert "python" in refused.text
            stranger = client.put(
                "/v1/types/note", json={"judge": "openai:x@http://203.0.113.9/v1"}
            )
            assert stranger.status_code == 422 and "not one of this server's judges" in (
                stranger.text
            )
            # the server's judges, in a panel of the type's own
            subset = panel_spec([f"openai:{m}@{judge.url}/v1" for m in "ab"], "any_unmet")
            kept = client.put("/v1/types/note", json={"judge": subset})
            assert kept.status_code == 200, kept.text
            assert kept.json()["judge"] == subset
    assert len(judge.requests) == 3
