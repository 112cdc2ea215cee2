"""The queue's counts per bucket, for any mix of states, failure counts and approvals:
each artifact is counted once, in the first bucket it matches (hypothesis, on a real
SQLite file)."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone
from pathlib import Path

import sqlalchemy as sa
from hypothesis import given, settings
from hypothesis import strategies as st

from rubricflow.application import Application
from rubricflow.server.ui.queue import BUCKETS
from rubricflow.store.artifacts import ArtifactType
from rubricflow.store.dashboard import DashboardQueries, QueueFilter
from rubricflow.store.tables import ArtifactRow

STATES = ("pending_review", "in_review", "needs_revision", "dead_lettered", "approved")
artifact = st.tuples(
    st.sampled_from(STATES),
    st.booleans(),
    st.integers(min_value=0, max_value=4),
    st.sampled_from(("post", "reply")),
)


def expected(rows: list[tuple[str, bool, int, str]], types: set[str]) -> dict[str, int]:
    counts = {bucket.name: 0 for bucket in BUCKETS}
    for status, awaiting, failures, kind in rows:
        if kind not in types:
            continue
        for bucket in BUCKETS:
            if bucket.holds(status, awaiting, failures > 0):
                counts[bucket.name] += 1
                break
    return counts


def test_counts_match_the_buckets_for_any_mix(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'queue.db'}"
    table = ArtifactRow.__table__  # type: ignore[attr-defined]
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)

    async def counted(
        app: Application, rows: list[tuple[str, bool, int, str]]
    ) -> list[dict[str, int]]:
        async with app.store.database.transaction() as connection:
            await connection.execute(sa.delete(table))
            if rows:
                await connection.execute(
                    sa.insert(table),
                    [
                        {
                            "id": f"a{i}",
                            "type": kind,
                            "status": status,
                            "revision": 1,
                            "version": 1,
                            "metadata_json": "{}",
                            "created_by": "bot",
                            "created_at": now,
                            "updated_at": now,
                            "awaiting_approval": awaiting,
                            "failures": failures,
                        }
                        for i, (status, awaiting, failures, kind) in enumerate(rows)
                    ],
                )
        queries = DashboardQueries(app.store.database)
        return [
            await queries.queue_counts(QueueFilter(buckets=BUCKETS)),
            await queries.queue_counts(QueueFilter(buckets=BUCKETS, types=("reply",))),
        ]

    with asyncio.Runner() as runner:
        app = runner.run(Application.open(url))
        for kind in ("post", "reply"):
            runner.run(app.artifacts.set_type(ArtifactType(name=kind, rubrics=())))

        @settings(max_examples=60, deadline=None)
        @given(st.lists(artifact, max_size=30))
        def check(rows: list[tuple[str, bool, int, str]]) -> None:
            every, replies = runner.run(counted(app, rows))
            assert every == expected(rows, {"post", "reply"})
            assert replies == expected(rows, {"reply"})

        try:
            check()
        finally:
            runner.run(app.close())
