"""The workbench for teams over HTTP against a real `rubricflow serve` on SQLite (issue 29,
items 2, 3 and 8): claims through the API and by opening a page (others' queues leave the
item out and name who holds it, the next-item flow skips it), comments posted with htmx,
as a plain form and through the API and kept in the history, the export of decisions and
labels as CSV and JSON Lines from the page and the API, and the queue sorted and
filtered by score and failed criterion."""

from __future__ import annotations

import csv
import io
import json
import re
import uuid
from collections.abc import Iterator

import httpx
import pytest

from server.conftest import issue_token

from .conftest import Dashboard, csrf_of
from .test_ui_http import signed_in


@pytest.fixture(scope="module")
def team(sqlite_dashboard: Dashboard) -> Dashboard:
    """The module's dashboard with a second reviewer, dave."""
    if "dave" not in sqlite_dashboard.tokens:
        sqlite_dashboard.tokens["dave"] = issue_token(
            sqlite_dashboard.db_url, "reviewer", name="dave"
        )
    return sqlite_dashboard


def api(dashboard: Dashboard, who: str) -> httpx.Client:
    return httpx.Client(
        base_url=dashboard.url,
        headers={"Authorization": f"Bearer {dashboard.tokens[who]}"},
        timeout=30,
    )


@pytest.fixture
def tag() -> Iterator[str]:
    yield uuid.uuid4().hex[:8]


def test_claims_through_the_api(team: Dashboard) -> None:
    artifact_id = team.submit({"text": "claim me"}, actor="bob")
    path = f"/v1/artifacts/{artifact_id}/claim"
    with api(team, "alice") as alice, api(team, "dave") as dave, api(team, "bob") as bob:
        taken = alice.post(path)
        assert taken.status_code == 200, taken.text
        assert taken.json()["holder"] == "alice" and taken.json()["mine"] is True
        refused = dave.post(path)
        assert refused.status_code == 409
        assert "claimed by 'alice'" in refused.json()["detail"]
        seen = dave.get(path).json()
        assert seen["holder"] == "alice" and seen["mine"] is False
        assert bob.post(path).status_code == 403  # a submitter claims nothing
        assert alice.delete(path).status_code == 204
        assert dave.get(path).json()["holder"] is None
        assert dave.post(path, params={"seconds": 30}).json()["mine"] is True
        assert dave.post("/v1/artifacts/no-such-thing/claim").status_code == 404


def test_an_open_item_leaves_the_other_reviewers_queue(team: Dashboard, tag: str) -> None:
    first = team.submit({"text": "one"}, actor="bob", title=f"claims {tag} one")
    second = team.submit({"text": "two"}, actor="bob", title=f"claims {tag} two")
    with signed_in(team, "alice") as alice, signed_in(team, "dave") as dave:
        page = alice.get(f"/ui/artifacts/{first}").text
        assert 'id="claim-note"' in page
        queue = dave.get("/ui/queue", params={"q": tag}).text
        assert f'data-artifact="{second}"' in queue
        assert f'data-artifact="{first}"' not in queue
        assert 'id="claimed-by-others"' in queue and ">alice</span>" in queue
        # alice still sees her own claim in her queue
        assert f'data-artifact="{first}"' in alice.get("/ui/queue", params={"q": tag}).text
        # dave opening it anyway is told who holds it, and does not take it
        other = dave.get(f"/ui/artifacts/{first}").text
        assert 'id="claim-banner"' in other and "alice</strong> is reviewing" in other
        assert dave.get(f"/ui/artifacts/{first}/version").json()["claimed_by"] == "alice"
        # dave's next item skips alice's: the skip link leads to the queue, not to `first`
        queue_params = f"q={tag}"
        skipped = dave.get(f"/ui/artifacts/{second}/next", params={"queue": queue_params})
        assert first not in str(skipped.url)
        # alice's decision drops her claim: dave's queue has it again
        answer = alice.post(
            f"/ui/artifacts/{first}/decision",
            data={
                "csrf": csrf_of(page),
                "version": re.search(r'name="version" value="(\d+)"', page).group(1),  # type: ignore[union-attr]
                "action": "reject",
                "reason": "not for us",
            },
        )
        assert answer.status_code == 200
        with api(team, "dave") as api_dave:
            assert api_dave.get(f"/v1/artifacts/{first}/claim").json()["holder"] is None


def test_comments_kept_in_the_history(team: Dashboard) -> None:
    artifact_id = team.submit({"text": "talk about it"}, actor="bob")
    with signed_in(team, "alice") as alice:
        page = alice.get(f"/ui/artifacts/{artifact_id}").text
        assert 'id="comment-form"' in page and 'hx-post="/ui/artifacts/' in page
        fragment = alice.post(
            f"/ui/artifacts/{artifact_id}/comments",
            data={"csrf": csrf_of(page), "comment": "check the <b>tone</b>"},
            headers={"HX-Request": "true"},
        )
        assert fragment.status_code == 200
        assert fragment.text.startswith('<section aria-labelledby="comments-heading"')
        assert "check the &lt;b&gt;tone&lt;/b&gt;" in fragment.text
        plain = alice.post(
            f"/ui/artifacts/{artifact_id}/comments",
            data={"csrf": csrf_of(page), "comment": "second thought"},
        )
        assert plain.status_code == 200 and "second thought" in plain.text  # redirected
        blank = alice.post(
            f"/ui/artifacts/{artifact_id}/comments",
            data={"csrf": csrf_of(page), "comment": "   "},
        )
        assert blank.status_code == 422 and "A comment needs some words" in blank.text
        forged = alice.post(
            f"/ui/artifacts/{artifact_id}/comments", data={"csrf": "x", "comment": "no"}
        )
        assert forged.status_code == 403
        history = alice.get(f"/ui/artifacts/{artifact_id}").text
        assert history.count('class="comment-row"') == 2
    with api(team, "bob") as bob, api(team, "carol") as carol:
        made = bob.post(f"/v1/artifacts/{artifact_id}/comments", json={"body": "fixed it"})
        assert made.status_code == 201 and made.json()["author"] == "bob"
        listed = bob.get(f"/v1/artifacts/{artifact_id}/comments").json()
        assert [c["body"] for c in listed] == [
            "check the <b>tone</b>",
            "second thought",
            "fixed it",
        ]
        assert (
            bob.post(f"/v1/artifacts/{artifact_id}/comments", json={"body": " "}).status_code == 422
        )
        # carol did not submit it: as if it did not exist
        assert carol.get(f"/v1/artifacts/{artifact_id}/comments").status_code == 404


def test_export_of_decisions_and_labels(team: Dashboard) -> None:
    artifact_id = team.submit({"text": "export me"}, actor="bob", title="=cmd|' /C calc'!A0")
    with api(team, "alice") as alice:
        shown = alice.get(f"/v1/artifacts/{artifact_id}")
        decided = alice.post(
            f"/v1/artifacts/{artifact_id}/approve",
            json={"reason": "fine"},
            headers={"If-Match": shown.headers["etag"]},
        )
        assert decided.status_code == 200, decided.text
        with alice.stream("GET", "/v1/decisions/export", params={"format": "jsonl"}) as streamed:
            assert streamed.headers["content-type"].startswith("application/x-ndjson")
            records = [json.loads(line) for line in streamed.iter_lines() if line]
        mine = [r for r in records if r["artifact_id"] == artifact_id]
        assert len(mine) == 1
        assert mine[0]["decision"] == "approve" and mine[0]["judge_verdict"] == "pass"
        assert mine[0]["agrees"] is True and mine[0]["rubric_id"] == "clean-post"
        assert {c["criterion_id"] for c in mine[0]["criteria"]} == {"filled", "polite"}
        text = alice.get("/v1/decisions/export", params={"format": "csv"}).text
        rows = list(csv.DictReader(io.StringIO(text)))
        row = next(r for r in rows if r["artifact_id"] == artifact_id)
        assert row["title"].startswith("'=cmd")  # a formula is not a formula in a sheet
        labels = alice.get("/v1/decisions/export", params={"format": "csv", "rows": "labels"})
        mine_labels = [
            r for r in csv.DictReader(io.StringIO(labels.text)) if r["artifact_id"] == artifact_id
        ]
        assert {r["criterion_id"] for r in mine_labels} == {"filled", "polite"}
        assert alice.get("/v1/decisions/export", params={"format": "xml"}).status_code == 422
    with api(team, "bob") as bob:
        assert bob.get("/v1/decisions/export").status_code == 403
    with signed_in(team, "alice") as page:
        queue = page.get("/ui/queue").text
        assert 'href="/ui/decisions/export?format=csv"' in queue
        download = page.get("/ui/decisions/export", params={"format": "jsonl"})
        assert download.status_code == 200
        assert "attachment" in download.headers["content-disposition"]
        assert any(
            json.loads(line)["artifact_id"] == artifact_id for line in download.text.splitlines()
        )


def test_queue_sorted_and_filtered_by_score_and_failed_criterion(team: Dashboard, tag: str) -> None:
    kind = team.submit({"text": "kind"}, actor="bob", title=f"score {tag} kind")
    rude = team.submit({"text": "forbidden"}, actor="bob", title=f"score {tag} rude")
    with signed_in(team, "alice") as alice:
        by_score = alice.get("/ui/queue", params={"q": tag, "order": "score"}).text
        assert by_score.index(f'data-artifact="{rude}"') < by_score.index(f'data-artifact="{kind}"')
        assert "failed polite" in by_score and "score 0.50" in by_score
        failed = alice.get("/ui/queue", params={"q": tag, "criterion": "polite"}).text
        assert f'data-artifact="{rude}"' in failed and f'data-artifact="{kind}"' not in failed
        high = alice.get("/ui/queue", params={"q": tag, "score_min": "0.9"}).text
        assert f'data-artifact="{kind}"' in high and f'data-artifact="{rude}"' not in high
        # a score that is no number in [0, 1] is ignored, not an error
        assert alice.get("/ui/queue", params={"q": tag, "score_min": "lots"}).status_code == 200
