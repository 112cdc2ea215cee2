"""The reviewer's workbench (issue 29) over HTTP against a real `rubricflow serve` on
SQLite: a stale or blank decision comes back as the form with the reason and the ticks
kept, a decision opens the queue's next item, search narrows the queue, bulk decisions
ask to confirm with the count before recording anything, and the artifact page names
criteria and states as people read them."""

from __future__ import annotations

import re
import uuid
from urllib.parse import urlencode

import httpx
from review.conftest import run_blocking

from rubricflow.application import Application

from .conftest import Dashboard, csrf_of
from .test_ui_http import signed_in


def _version(html: str) -> int:
    found = re.search(r'name="version" value="(\d+)"', html)
    assert found, "the page has no decision form"
    return int(found.group(1))


def _tick(html: str) -> str:
    found = re.search(r'name="wrong" value="([^"]+)"', html)
    assert found, "the page offers no criterion to tick"
    return found.group(1)


def test_a_stale_decision_keeps_the_reason_and_ticks(sqlite_dashboard: Dashboard) -> None:
    dashboard = sqlite_dashboard
    artifact_id = dashboard.submit({"text": "stale"}, actor="bob", title="Stale one")
    with signed_in(dashboard, "alice") as client:
        page = client.get(f"/ui/artifacts/{artifact_id}").text
        tick = _tick(page)
        answer = client.post(
            f"/ui/artifacts/{artifact_id}/decision",
            data={
                "csrf": csrf_of(page),
                "version": str(_version(page) - 1),
                "action": "reject",
                "reason": "typed with care <b>",
                "wrong": tick,
            },
        )
        assert answer.status_code == 412
        assert "Someone else changed this artifact" in answer.text
        assert "If-Match" not in answer.text and "ETag" not in answer.text
        assert ">typed with care &lt;b&gt;</textarea>" in answer.text
        assert f'value="{tick}" checked' in answer.text
        # the form is live again, at the current version: deciding again works
        assert _version(answer.text) == _version(page)
    assert dashboard.status(artifact_id) == "in_review"


def test_a_blank_reason_is_refused_in_the_form(sqlite_dashboard: Dashboard) -> None:
    dashboard = sqlite_dashboard
    artifact_id = dashboard.submit({"text": "blank"}, actor="bob")
    with signed_in(dashboard, "alice") as client:
        page = client.get(f"/ui/artifacts/{artifact_id}").text
        assert 'data-nonblank="' in page  # workbench.js refuses spaces before posting
        answer = client.post(
            f"/ui/artifacts/{artifact_id}/decision",
            data={
                "csrf": csrf_of(page),
                "version": str(_version(page)),
                "action": "approve",
                "reason": "   \n ",
            },
        )
        assert answer.status_code == 422
        assert "Approve needs a reason" in answer.text
        assert 'id="decision-form"' in answer.text
    assert dashboard.status(artifact_id) == "in_review"


def test_a_decision_opens_the_next_item_of_the_same_queue(sqlite_dashboard: Dashboard) -> None:
    dashboard = sqlite_dashboard
    tag = uuid.uuid4().hex[:8]
    first = dashboard.submit({"text": "one"}, actor="bob", title=f"flow {tag} one")
    second = dashboard.submit({"text": "two"}, actor="bob", title=f"flow {tag} two")
    queue = urlencode({"q": tag, "order": "oldest"})
    with signed_in(dashboard, "alice") as client:
        listing = client.get(f"/ui/queue?{queue}").text
        assert first in listing and second in listing
        assert listing.count('<tr data-artifact="') == 2
        assert f"/ui/artifacts/{first}?queue=" in listing
        page = client.get(f"/ui/artifacts/{first}", params={"queue": queue}).text
        answer = client.post(
            f"/ui/artifacts/{first}/decision",
            data={
                "csrf": csrf_of(page),
                "version": str(_version(page)),
                "action": "approve",
                "reason": "fine",
                "queue": queue,
            },
            follow_redirects=False,
        )
        assert answer.status_code == 303
        assert answer.headers["location"].startswith(f"/ui/artifacts/{second}?")
        landed = client.get(answer.headers["location"]).text
        assert "Approved." in landed and "next item of your queue" in landed
        assert re.search(r'<textarea id="reason"[^>]* autofocus', landed)
    assert dashboard.status(first) == "approved"


def test_bulk_decisions_ask_to_confirm_with_the_count(sqlite_dashboard: Dashboard) -> None:
    dashboard = sqlite_dashboard
    tag = uuid.uuid4().hex[:8]
    ids = [dashboard.submit({"text": str(i)}, actor="carol", title=f"bulk {tag}") for i in range(3)]
    with signed_in(dashboard, "alice") as client:
        listing = client.get("/ui/queue", params={"q": tag}).text
        picks = re.findall(r'name="pick" value="([^"]+)"', listing)
        assert len(picks) == 3
        form = {
            "csrf": csrf_of(listing),
            "action": "approve",
            "reason": "all fine",
            "queue": urlencode({"q": tag}),
        }
        asked = client.post("/ui/queue/bulk", data={**form, "pick": picks[:2]})
        assert asked.status_code == 200
        assert "Approve 2 items?" in asked.text and "Yes, approve 2 items" in asked.text
        assert [dashboard.status(i) for i in ids] == ["in_review"] * 3
        # a confirmation for another count is asked again, not applied
        wrong = client.post("/ui/queue/bulk", data={**form, "pick": picks, "confirmed": "2"})
        assert "Approve 3 items?" in wrong.text
        assert [dashboard.status(i) for i in ids] == ["in_review"] * 3
        done = client.post(
            "/ui/queue/bulk",
            data={**form, "pick": picks[:2], "confirmed": "2", "csrf": csrf_of(asked.text)},
        )
        assert done.status_code == 200 and "2 items approved." in done.text
        blank = client.post("/ui/queue/bulk", data={**form, "reason": " ", "pick": picks[2:]})
        assert blank.status_code == 422 and "needs a reason" in blank.text
    statuses = sorted(dashboard.status(i) for i in ids)
    assert statuses == ["approved", "approved", "in_review"]
    # a submitter may not decide in bulk
    with signed_in(dashboard, "bob") as client:
        page = client.get("/ui/queue").text
        assert 'id="bulk-form"' not in page
        refused = client.post(
            "/ui/queue/bulk",
            data={**form, "csrf": csrf_of(page), "pick": picks[2:], "confirmed": "1"},
        )
        assert refused.status_code == 403
    assert dashboard.status(picks[2].split(" ", 1)[1]) == "in_review"


def test_the_artifact_page_reads_as_people_do(sqlite_dashboard: Dashboard) -> None:
    dashboard = sqlite_dashboard
    artifact_id = dashboard.submit("a forbidden word", actor="bob", title="Failing")
    with signed_in(dashboard, "alice") as client:
        page = client.get(f"/ui/artifacts/{artifact_id}").text
        # content and evidence come before the Decide form
        assert page.index('id="content-heading"') < page.index('id="decide-heading"')
        assert page.index('id="evaluations-heading"') < page.index('id="decide-heading"')
        failed = re.search(r'data-criterion="polite">.*?</li>', page, re.S)
        assert failed is not None
        assert 'class="badge crit-failed">Failed<' in failed.group(0)
        assert "Needs revision" in page  # the queue's name for the state
        assert "(version " not in page
        assert re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+", _visible(page)) is None
        assert "Score <strong>" in page and "0.50" in page
        whole = client.get(f"/ui/artifacts/{artifact_id}/content")
        assert whole.text == "a forbidden word"
        assert whole.headers["content-disposition"].startswith("attachment;")


def _visible(html: str) -> str:
    """The page's text outside tags and attributes."""
    return re.sub(r"<[^>]*>", "", html)


def test_the_queue_filters_sit_above_the_rows(sqlite_dashboard: Dashboard) -> None:
    with signed_in(sqlite_dashboard, "alice") as client:
        page = client.get("/ui/queue").text
        assert page.index('id="f-q"') < page.index('<table class="queue">')
        assert page.index('id="f-submitter"') < page.index('<table class="queue">')
        version = client.get("/ui/queue/fragment")
        assert version.status_code == 200
    with httpx.Client(base_url=sqlite_dashboard.url) as anonymous:
        assert anonymous.get("/ui/static/workbench.js").status_code == 200


def test_changed_words_are_marked_within_lines() -> None:
    from rubricflow.server.ui.artifact import Piece, word_pieces

    left, right = word_pieces("the cat sat down", "the dog sat down")
    assert [p for p in left if p.changed] == [Piece("cat", True)]
    assert [p for p in right if p.changed] == [Piece("dog", True)]
    assert "".join(p.text for p in right) == "the dog sat down"


def test_a_dead_letter_reason_speaks_of_the_retry_button() -> None:
    from rubricflow.server.ui.artifact import _for_people

    stored = "3 reviews failed in a row; run `rubricflow artifacts retry abc` once fixed"
    assert _for_people(stored, retry=True) == (
        "3 reviews failed in a row; press Retry the review below once fixed"
    )
    assert _for_people(stored, retry=False) == stored


def test_revisions_are_compared_side_by_side(sqlite_dashboard: Dashboard) -> None:
    dashboard = sqlite_dashboard
    artifact_id = dashboard.submit("a forbidden word\nsecond line", actor="bob", title="Revised")

    async def revise() -> None:
        async with await Application.open(dashboard.db_url) as app:
            await app.artifacts.revise(
                artifact_id, "a polite word\nsecond line", actor="bob", reason="fixed"
            )

    run_blocking(revise())
    with signed_in(dashboard, "alice") as client:
        page = client.get(f"/ui/artifacts/{artifact_id}").text
        assert "<del>forbidden</del>" in page and "<ins>polite</ins>" in page
        assert 'class="side-by-side artifact-diff"' in page
