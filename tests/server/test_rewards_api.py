"""`POST /get_reward`, the OpenRLHF remote reward model, through a real `rubricflow serve`.

OpenRLHF (openrlhf/utils/remote_rm_utils.py) posts
    remote_rm_fn(api_url, queries, prompts, labels):
        request_api_wrapper(api_url, {"query": queries, "prompts": prompts, "labels": labels})
    request_api_wrapper: response = requests.post(url=url, json=data,
        headers={"Content-Type": "application/json"}, timeout=180); response.json()
and reads the rewards from the answer's "rewards" key. It sends no credentials, so a
trainer beside the server uses `--no-auth` on loopback; a token works too.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
from llm.scripted import Recorded, Reply, ScriptedServer, openai_reply, verdict

from .conftest import issue_token

RUBRIC = {
    "id": "capitals",
    "criteria": [
        {"id": "paris", "description": "Names Paris", "weight": 3},
        {"id": "seine", "description": "Names the Seine", "weight": 1},
    ],
}


def judge(request: Recorded) -> Reply:
    user = str(request.messages[-1]["content"])
    content = user.split("<content>")[-1].split("</content>")[0].lower()
    if "broken" in content:
        return Reply(500, {"error": {"message": "judge down"}})
    word = "paris" if "Names Paris" in user else "seine"
    return openai_reply(verdict("MET" if word in content else "UNMET"))


def test_openrlhf_posts_a_batch_and_gets_one_reward_per_query(start_server, sqlite_db) -> None:
    admin = issue_token(sqlite_db, "admin", name="ops")
    trainer = issue_token(sqlite_db, "submitter", name="trainer")
    with ScriptedServer(judge) as llm:
        server = start_server(sqlite_db, "--llm", f"openai:judge@{llm.url}/v1")
        with server.client(admin) as ops:
            done = ops.post("/v1/rubrics", json={"document": json.dumps(RUBRIC)})
            assert done.status_code == 201, done.text
        prompts = ["Q: capital of France? A:", "Q: capital of France? A:", "Q: river? A:"]
        responses = [" Paris, on the Seine.", " Lyon.", " broken"]
        data: dict[str, Any] = {
            "query": [p + r for p, r in zip(prompts, responses, strict=True)],
            "prompts": prompts,
            "labels": ["Paris", "Paris", "Seine"],
        }
        url = f"{server.url}/get_reward?rubric=capitals"
        refused = httpx.post(url, json=data, timeout=30)
        answer = httpx.post(
            url,
            json=data,
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {trainer}"},
            timeout=30,
        )
        unnamed = httpx.post(
            f"{server.url}/get_reward",
            json=data,
            headers={"Authorization": f"Bearer {trainer}"},
            timeout=30,
        )
        # the response alone reached the judge, with the label as its reference
        judged = [r for r in llm.requests if "Lyon" in r.text]
    assert refused.status_code == 401
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["rewards"] == [1.0, 0.0, 0.0] and body["scores"] == body["rewards"]
    assert body["incomplete"] == [2]
    contents = [r.text.split("<content>")[-1].split("</content>")[0] for r in judged]
    assert contents and all(c.strip() == "Lyon." for c in contents)
    assert all("<reference>\nParis\n</reference>" in r.text for r in judged)
    assert unnamed.status_code == 422 and "rubric" in unnamed.json()["detail"]
    assert "reward 2 for rubric capitals is the fallback" in server.output()


def test_without_auth_on_loopback_openrlhf_needs_no_token(start_server, sqlite_db) -> None:
    """The server's reward_rubric setting (RUBRICFLOW_SERVER_REWARD_RUBRIC) names the
    rubric when the URL does not."""
    with ScriptedServer(judge) as llm:
        server = start_server(
            sqlite_db,
            "--no-auth",
            "--llm",
            f"openai:judge@{llm.url}/v1",
            env={"RUBRICFLOW_SERVER_REWARD_RUBRIC": "capitals@1.0.0"},
        )
        with server.client() as local:
            done = local.post("/v1/rubrics", json={"document": json.dumps(RUBRIC)})
            assert done.status_code == 201, done.text
        answer = httpx.post(
            f"{server.url}/get_reward",
            json={"query": ["Paris", "the Seine"]},
            headers={"Content-Type": "application/json"},
            timeout=30,
        )
    assert answer.status_code == 200, answer.text
    assert answer.json()["rewards"] == [0.75, 0.25]
