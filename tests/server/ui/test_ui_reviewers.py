"""Several reviewers on the workbench (issue 29, item 5) over HTTP against a real
`rubricflow serve` on SQLite and PostgreSQL: a second reviewer does not see the first
one's decision until they have decided; a split is listed (blind to those who did not
vote) and resolved from the reviewers' screen; the screen shows agreement between
reviewers and the judge's reliability per criterion with intervals; the API's
/v1/types/{name}/disagreements."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest
from review.conftest import run_blocking

from rubricflow.application import Application
from rubricflow.records.artifacts import ReviewPolicy
from rubricflow.store.artifact_models import ArtifactType, RubricBinding
from server.conftest import issue_token

from .conftest import Dashboard, csrf_of

PAIR = "pair-post"
REVIEWERS = ("dave", "erin", "frank")


@pytest.fixture(scope="module")
def pair(dashboard: Dashboard) -> Dashboard:
    """The dashboard (SQLite, PostgreSQL) with a type two people decide, and three more
    reviewers."""
    sqlite_dashboard = dashboard

    async def define() -> None:
        async with await Application.open(sqlite_dashboard.db_url) as app:
            await app.artifacts.set_type(
                ArtifactType(
                    name=PAIR,
                    rubrics=(RubricBinding(rubric_id="clean-post"),),
                    requires_approval=True,
                    review_policy=ReviewPolicy(reviewers=2),
                )
            )

    run_blocking(define())
    for name in REVIEWERS:
        sqlite_dashboard.tokens[name] = issue_token(sqlite_dashboard.db_url, "reviewer", name=name)
    return sqlite_dashboard


def submit(dashboard: Dashboard, text: str, title: str) -> str:
    async def work() -> str:
        async with await Application.open(dashboard.db_url) as app:
            outcome = await app.create_and_submit(PAIR, {"text": text}, actor="bob", title=title)
            return outcome.artifact.id

    return str(run_blocking(work()))


@contextmanager
def signed_in(dashboard: Dashboard, who: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=dashboard.url, follow_redirects=True, timeout=30) as client:
        form = client.get("/ui/sign-in")
        answer = client.post(
            "/ui/sign-in",
            data={"csrf": csrf_of(form.text), "token": dashboard.tokens[who], "next": "/ui/"},
        )
        assert answer.status_code == 200, answer.text
        yield client


def decide(client: httpx.Client, artifact_id: str, action: str, reason: str) -> httpx.Response:
    page = client.get(f"/ui/artifacts/{artifact_id}")
    version = re.search(r'name="version" value="(\d+)"', page.text)
    assert version is not None
    return client.post(
        f"/ui/artifacts/{artifact_id}/decision",
        data={
            "csrf": csrf_of(page.text),
            "action": action,
            "reason": reason,
            "version": version.group(1),
        },
    )


def api(dashboard: Dashboard, who: str, path: str) -> httpx.Response:
    headers = {"Authorization": f"Bearer {dashboard.tokens[who]}"}
    return httpx.get(f"{dashboard.url}{path}", headers=headers, timeout=30)


def test_votes_are_blind_until_you_decide_and_a_split_is_resolved(pair: Dashboard) -> None:
    dashboard = pair
    split = submit(dashboard, "a fine post", "Split post")
    agreed = submit(dashboard, "another fine post", "Agreed post")
    with signed_in(dashboard, "dave") as dave, signed_in(dashboard, "erin") as erin:
        assert decide(dave, split, "approve", "dave-reason-reads-well").status_code == 200
        # erin has not decided: she sees that someone voted, not what or why
        page = erin.get(f"/ui/artifacts/{split}").text
        assert "dave-reason-reads-well" not in page
        assert "hidden until the artifact is settled" in page
        history = api(dashboard, "erin", f"/v1/artifacts/{split}/history").json()
        assert "dave-reason-reads-well" not in str(history)
        # dave, who decided, sees his own vote, and may override but not vote again
        mine = dave.get(f"/ui/artifacts/{split}").text
        assert "dave-reason-reads-well" in mine and 'id="my-vote"' in mine
        assert 'name="action" value="approve"' not in mine
        assert 'name="action" value="override"' in mine
        assert 'id="my-vote"' not in page
        assert decide(erin, split, "reject", "erin-reason-too-short").status_code == 200
        # two reviewers, one each way: an open split; each voter now sees the other's vote
        assert "dave-reason-reads-well" in erin.get(f"/ui/artifacts/{split}").text
        for client in (dave, erin):
            assert decide(client, agreed, "approve", "fine by me").status_code == 200

    # the split is listed: blind to frank, who has not voted, and open to dave
    found = api(dashboard, "frank", f"/v1/types/{PAIR}/disagreements").json()
    [open_split] = [d for d in found["disagreements"] if d["artifact_id"] == split]
    assert open_split["open"] and open_split["resolution"] is None
    assert [v["actor"] for v in open_split["votes"]] == ["dave", "erin"]
    assert {v["decision"] for v in open_split["votes"]} == {"hidden"}
    assert "dave-reason" not in str(open_split)
    assert agreed not in str(found)  # a unanimous decision is no disagreement
    seen = api(dashboard, "dave", f"/v1/types/{PAIR}/disagreements").json()
    [mine] = [d for d in seen["disagreements"] if d["artifact_id"] == split]
    assert [v["decision"] for v in mine["votes"]] == ["approve", "reject"]
    assert api(dashboard, "bob", f"/v1/types/{PAIR}/disagreements").status_code == 403

    with signed_in(dashboard, "frank") as frank:
        page = frank.get(f"/ui/reviewers?type={PAIR}")
        assert page.status_code == 200
        item = re.search(
            rf'<li class="split open" data-artifact="{split}".*?</li>\s*</ul>', page.text, re.S
        )
        assert item is not None and "hidden until you decide" in page.text
        assert "dave-reason" not in page.text
        # a resolution needs a reason, refused with nothing recorded
        csrf = csrf_of(page.text)
        version = re.search(
            rf'value="{split}">\s*<input type="hidden" name="version" value="(\d+)"', page.text
        )
        assert version is not None
        form = {"csrf": csrf, "type": PAIR, "artifact": split, "version": version.group(1)}
        refused = frank.post("/ui/reviewers/resolve", data={**form, "action": "approve"})
        assert refused.status_code == 409 and "needs a reason" in refused.text
        # frank's approval is the third vote: it breaks the tie, 2 to 1
        done = frank.post(
            "/ui/reviewers/resolve", data={**form, "action": "approve", "reason": "it is fine"}
        )
        assert done.status_code == 200 and "Your approval is recorded." in done.text
        assert dashboard.status(split) == "approved"
        resolved = re.search(
            rf'<li class="split resolved" data-artifact="{split}".*?</li>\s*</ul>.*?</li>',
            done.text,
            re.S,
        )
        assert resolved is not None
        assert "dave-reason-reads-well" in resolved.group(0)  # settled: no longer blind
        assert "Resolved by <strong>frank</strong> (majority of the votes)" in resolved.group(0)
        # the agreement between reviewers and the judge's reliability, with intervals
        assert 'id="reviewer-agreement"' in done.text
        units = re.search(r'id="overall-agreement" data-units="(\d+)"', done.text)
        assert units is not None and int(units.group(1)) >= 2
        judge = re.search(r'id="judge-reliability-table".*?</table>', done.text, re.S)
        assert judge is not None
        assert 'data-criterion="clean-post:polite"' in judge.group(0)
        # accuracy with its interval; kappa, undefined while one label is used throughout,
        # says why
        assert re.search(
            r'class="accuracy">\d\.\d\d <span class="muted">\[\d\.\d\d, ', judge.group(0)
        )
        kappa = r'class="kappa">(-?\d\.\d\d <span class="muted">\[|<span class="muted" title="\w)'
        assert re.search(kappa, judge.group(0))

    resolved_api = api(dashboard, "frank", f"/v1/types/{PAIR}/disagreements").json()
    [after] = [d for d in resolved_api["disagreements"] if d["artifact_id"] == split]
    assert after["resolution"] == "approve" and after["how"] == "majority"
    assert after["resolved_by"] == "frank"
    agreement = api(dashboard, "frank", f"/v1/types/{PAIR}/agreement").json()
    assert agreement["overall"]["units"] >= 2


def test_a_voter_cannot_vote_again_from_the_screen_and_a_submitter_is_refused(
    pair: Dashboard,
) -> None:
    dashboard = pair
    split = submit(dashboard, "a third post", "Second split")
    with signed_in(dashboard, "dave") as dave, signed_in(dashboard, "erin") as erin:
        decide(dave, split, "reject", "no")
        decide(erin, split, "approve", "yes")
        page = dave.get(f"/ui/reviewers?type={PAIR}").text
        item = re.search(rf'<li class="split open" data-artifact="{split}".*?</form>', page, re.S)
        assert item is not None
        # dave voted: he may override, not vote again
        assert 'value="override"' in item.group(0) and 'value="approve"' not in item.group(0)
        version = re.search(r'name="version" value="(\d+)"', item.group(0))
        assert version is not None
        again = dave.post(
            "/ui/reviewers/resolve",
            data={
                "csrf": csrf_of(page),
                "type": PAIR,
                "artifact": split,
                "version": version.group(1),
                "action": "approve",
                "reason": "changed my mind",
            },
        )
        assert again.status_code == 409 and "already decided" in again.text
        assert dashboard.status(split) == "in_review"
    with signed_in(dashboard, "bob") as bob:
        assert bob.get("/ui/reviewers").status_code == 403
