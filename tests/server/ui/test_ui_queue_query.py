"""The queue's SQL: keyset pages that neither skip nor repeat, counts per bucket in one
query, and the filters (bucket, type, submitter, age), on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from review.conftest import check, make_rubric

from rubricflow.application import Application
from rubricflow.server.ui.queue import BUCKETS
from rubricflow.store.artifact_models import ArtifactType, RubricBinding
from rubricflow.store.dashboard import DashboardQueries, QueueCursor, QueueFilter


async def _fill(app: Application) -> dict[str, str]:
    """Artifacts in every queue bucket and some outside the queue; id -> bucket."""
    rubric = make_rubric(
        "r",
        check("filled", "non_empty"),
        check("polite", "contains_none", terms=["bad"]),
        threshold=0.9,
    )
    await app.store.rubrics.register(rubric)
    binding = (RubricBinding(rubric_id="r"),)
    await app.artifacts.set_type(
        ArtifactType(name="gated", rubrics=binding, requires_approval=True)
    )
    await app.artifacts.set_type(ArtifactType(name="queued", rubrics=binding, auto_review=False))
    expected: dict[str, str] = {}
    for i in range(15):
        out = await app.create_and_submit("gated", f"good {i}", actor="bob" if i % 2 else "carol")
        expected[out.artifact.id] = "awaiting_approval"
    for i in range(12):
        out = await app.create_and_submit("gated", f"bad {i}", actor="bob")
        expected[out.artifact.id] = "needs_revision"
    for i in range(10):
        out = await app.create_and_submit("queued", f"later {i}", actor="carol")
        expected[out.artifact.id] = "in_review"
    approved = await app.create_and_submit("gated", "good, decided", actor="bob")
    await app.artifacts.approve(approved.artifact.id, actor="alice", reason="fine")
    await app.artifacts.create("gated", "a draft", actor="bob")
    return expected


async def test_keyset_pages_walk_the_whole_queue_once_with_filters(server_db: str) -> None:
    async with await Application.open(server_db) as app:
        expected = await _fill(app)
        reads = DashboardQueries(app.store.database)
        everything = QueueFilter(buckets=BUCKETS)
        assert await reads.queue_counts(everything) == {
            "awaiting_approval": 15,
            "needs_revision": 12,
            "dead_lettered": 0,
            "incomplete": 0,
            "in_review": 10,
        }
        for newest_first in (True, False):
            seen: list[str] = []
            cursor: QueueCursor | None = None
            pages = 0
            while True:
                page = await reads.queue_page(
                    everything, limit=15, after=cursor, newest_first=newest_first
                )
                pages += 1
                seen += [item.id for item in page.items]
                for item in page.items:
                    assert item.bucket == expected[item.id]
                if page.next is None:
                    break
                # a cursor survives its text form (the page's link)
                cursor = QueueCursor.decode(page.next.encode())
                assert cursor == page.next
            assert pages == 3
            assert sorted(seen) == sorted(expected), "every queued artifact once"
            whole = await reads.queue_page(everything, limit=1000, newest_first=newest_first)
            keys = [(item.updated_at, item.id) for item in whole.items]
            assert [item.id for item in whole.items] == seen
            if newest_first:
                assert keys == sorted(keys, reverse=True)
            else:
                assert keys == sorted(keys)

        mine = QueueFilter(buckets=BUCKETS, created_by="carol")
        counts = await reads.queue_counts(mine)
        assert counts["awaiting_approval"] == 8 and counts["in_review"] == 10
        assert counts["needs_revision"] == 0
        only = QueueFilter(buckets=BUCKETS, bucket="needs_revision", types=("gated",))
        page = await reads.queue_page(only, limit=100)
        assert len(page.items) == 12 and {i.bucket for i in page.items} == {"needs_revision"}
        assert (await reads.queue_page(QueueFilter(buckets=BUCKETS, types=()))).items == ()
        later = datetime.now(timezone.utc) + timedelta(minutes=1)
        earlier = datetime.now(timezone.utc) - timedelta(hours=1)
        assert (
            sum((await reads.queue_counts(QueueFilter(BUCKETS, changed_before=later))).values())
            == 37
        )
        assert (
            sum((await reads.queue_counts(QueueFilter(BUCKETS, changed_before=earlier))).values())
            == 0
        )
        # a forged cursor starts from the first page instead of failing
        assert QueueCursor.decode("not a cursor") is None
