"""Judge spend per artifact type and day (issue 31, item 6) over HTTP against a real
`rubricflow serve` on SQLite: the API's GET /v1/judge-spend (reviewers only, through the
Application) and the small table on the dashboard's runs page."""

from __future__ import annotations

from datetime import datetime, timezone

import httpx
import pytest
from review.conftest import run_blocking

from rubricflow import parse_rubric
from rubricflow.application import Application
from rubricflow.engine.executor import evaluate
from rubricflow.results import LLMCall
from rubricflow.store.evaluations import StoredEvaluation
from server.conftest import issue_token

from .conftest import POST_TYPE, Dashboard
from .test_ui_reviewers import signed_in

SPEND_TYPE = "spend-post"


def seed(dashboard: Dashboard) -> None:
    """Two judged evaluations of a `spend-post` artifact (0.25 each) and one of no
    artifact (an eval run's, 0.5)."""

    async def work() -> None:
        async with await Application.open(dashboard.db_url) as app:
            await app.artifacts.set_type(
                (await app.artifacts.get_type(POST_TYPE)).model_copy(update={"name": SPEND_TYPE})
            )
            artifact = await app.artifacts.create(SPEND_TYPE, {"text": "hi"}, actor="bob")
            rubric = parse_rubric({"id": "spent", "criteria": [{"id": "c", "description": "x"}]})
            items = []
            for cost, artifact_id in ((0.25, artifact.id), (0.25, artifact.id), (0.5, None)):
                evaluation = await evaluate(rubric, {"id": "t", "content": "hi"})
                call = LLMCall(
                    provider="openai-batch",
                    model="m",
                    prompt_hash="p",
                    input_tokens=100,
                    output_tokens=20,
                    cost=cost,
                )
                first = evaluation.criteria[0].model_copy(update={"llm_calls": (call,)})
                evaluation = evaluation.model_copy(update={"criteria": (first,)})
                revision = 1 if artifact_id else None
                items.append(
                    StoredEvaluation(evaluation, artifact_id=artifact_id, revision=revision)
                )
            await app.store.evaluations.save_many(items)

    run_blocking(work())


@pytest.fixture(scope="module")
def seeded(sqlite_dashboard: Dashboard) -> Dashboard:
    """The module's dashboard, seeded once (its tests count the seeded spend)."""
    seed(sqlite_dashboard)
    return sqlite_dashboard


def test_spend_by_type_and_day_in_the_api_and_on_the_runs_page(seeded: Dashboard) -> None:
    sqlite_dashboard = seeded
    today = datetime.now(timezone.utc).date().isoformat()
    with httpx.Client(base_url=sqlite_dashboard.url, timeout=30) as client:
        bob = {"authorization": f"Bearer {sqlite_dashboard.tokens['bob']}"}
        assert client.get("/v1/judge-spend", headers=bob).status_code == 403
        alice = {"authorization": f"Bearer {sqlite_dashboard.tokens['alice']}"}
        by_type = client.get("/v1/judge-spend", params={"by": "type"}, headers=alice).json()
        assert by_type["by"] == "type"
        rows = {row["key"]: row for row in by_type["spend"]}
        assert rows[SPEND_TYPE]["calls"] == 2 and rows[SPEND_TYPE]["cost"] == 0.5
        assert rows[SPEND_TYPE]["input_tokens"] == 200
        by_day = client.get("/v1/judge-spend", params={"by": "day"}, headers=alice).json()
        assert today in {row["key"] for row in by_day["spend"]}
        later = client.get(
            "/v1/judge-spend", params={"by": "day", "since": "2999-01-01T00:00:00Z"}, headers=alice
        ).json()
        assert later["spend"] == []
        assert (
            client.get("/v1/judge-spend", params={"by": "week"}, headers=alice).status_code == 422
        )
    from rubricflow.client import Client

    with Client(sqlite_dashboard.url, token=sqlite_dashboard.tokens["alice"]) as api:
        assert [r.calls for r in api.judge_spend("type") if r.key == SPEND_TYPE] == [2]
    with signed_in(sqlite_dashboard, "alice") as browser:
        page = browser.get("/ui/runs").text
    assert "Judge spend" in page and "By artifact type" in page and "By day (UTC)" in page
    assert f'<th scope="row">{SPEND_TYPE}</th><td>2</td>' in page
    assert f'<th scope="row">{today}</th>' in page


def test_a_reviewer_restricted_to_some_types_sees_only_their_spend(seeded: Dashboard) -> None:
    sqlite_dashboard = seeded
    dora = issue_token(sqlite_dashboard.db_url, "reviewer", name="dora", types=(POST_TYPE,))
    sqlite_dashboard.tokens["dora"] = dora
    with httpx.Client(base_url=sqlite_dashboard.url, timeout=30) as client:
        headers = {"authorization": f"Bearer {dora}"}
        by_type = client.get("/v1/judge-spend", params={"by": "type"}, headers=headers).json()
        keys = {row["key"] for row in by_type["spend"]}
        assert SPEND_TYPE not in keys and None in keys  # her types, and no type's
        alice = {"authorization": f"Bearer {sqlite_dashboard.tokens['alice']}"}
        every = client.get("/v1/judge-spend", params={"by": "type"}, headers=alice).json()
        assert SPEND_TYPE in {row["key"] for row in every["spend"]}
        # the totals by day and by run leave out the types she may not see, too
        hidden = sum(row["calls"] for row in every["spend"] if row["key"] not in (POST_TYPE, None))
        assert hidden >= 2
        for by in ("day", "run"):
            hers, all_ = (
                sum(
                    row["calls"]
                    for row in client.get("/v1/judge-spend", params={"by": by}, headers=who).json()[
                        "spend"
                    ]
                )
                for who in (headers, alice)
            )
            assert all_ - hers == hidden, by
    with signed_in(sqlite_dashboard, "dora") as browser:
        page = browser.get("/ui/runs").text
    assert "By artifact type" in page and SPEND_TYPE not in page
