"""History for the rubric, run and agreement pages: a second version of the dashboard's
rubric, evaluations of both versions spread over past days (real evaluations by the
engine, dated back), and two finished runs whose verdicts differ on some targets, plus a
running one. Everything goes through the application core and the store, as a
deployment's history would.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from review.conftest import check, make_rubric

from rubricflow.application import Application
from rubricflow.runs import RunInfo
from rubricflow.store.evaluations import StoredEvaluation

RUBRIC = "clean-post"
#: the version the dashboard's conftest registers, and the one seeded here
V1, V2 = "1.0.0", "1.1.0"
#: per day back (3, 2, 1): posts of v1 that pass "polite" on that day
DAYS = 3


def v2_rubric() -> object:
    """Version 1.1.0: "polite" also refuses "spam", a new required "long-enough"."""
    return make_rubric(
        RUBRIC,
        check("filled", "non_empty"),
        check("polite", "contains_none", terms=["forbidden", "spam"]),
        {**check("long-enough", "word_count_between", min=2), "required": True},
        version=V2,
        threshold=0.9,
    )


@dataclass(frozen=True)
class Seeded:
    run_a: str
    run_b: str
    running: str
    #: targets whose verdict differs between run A and run B
    flipped: tuple[str, ...]
    #: (day, version) -> (polite passed, polite scored)
    polite: dict[tuple[str, str], tuple[int, int]]


def _day(back: int) -> datetime:
    now = datetime.now(timezone.utc).replace(hour=12, minute=0, second=0, microsecond=0)
    return now - timedelta(days=back)


async def seed(db_url: str) -> Seeded:
    async with await Application.open(db_url) as app:
        await app.store.rubrics.register(v2_rubric())  # type: ignore[arg-type]
        v1 = await app.store.rubrics.get(RUBRIC, V1)
        v2 = await app.store.rubrics.get(RUBRIC, V2)
        polite: dict[tuple[str, str], tuple[int, int]] = {}
        stored: list[StoredEvaluation] = []
        for back in range(DAYS, 0, -1):
            day = _day(back)
            # v1: back+1 polite posts and one rude one each day; v2 from day 2 on
            texts = [f"a kind post {i}" for i in range(back + 1)] + ["a forbidden post"]
            for rubric, version in ((v1, V1), (v2, V2)):
                if version == V2 and back == DAYS:
                    continue
                chosen = texts if version == V1 else [*texts, "spam spam"]
                evaluations = await app.evaluate(rubric, chosen)
                for evaluation in evaluations:
                    stored.append(
                        StoredEvaluation(
                            evaluation.model_copy(update={"created_at": day.isoformat()})
                        )
                    )
                passed = sum(1 for t in chosen if "forbidden" not in t and "spam" not in t)
                polite[(day.date().isoformat(), version)] = (passed, len(chosen))
        await app.evaluations.save_many(stored)

        # two runs over the same five targets: B uses v2, which fails "spam" and one-word posts
        targets = [
            {"id": "t-kind", "content": "a kind post"},
            {"id": "t-rude", "content": "a forbidden post"},
            {"id": "t-spam", "content": "spam offer today"},
            {"id": "t-short", "content": "hello"},
            {"id": "t-fine", "content": "all good here"},
        ]
        runs = {}
        for name, rubric, back in (("run-a", v1, 2), ("run-b", v2, 1)):
            info = RunInfo(
                id=name,
                rubric_id=RUBRIC,
                rubric_version=rubric.version,
                started_at=_day(back).isoformat(),
            )
            await app.store.runs.start(info)
            evaluations = await app.evaluate(rubric, targets)
            await app.evaluations.save_many(StoredEvaluation(e, run_id=name) for e in evaluations)
            await app.store.runs.finish(name)
            runs[name] = {e.target_id: e.verdict for e in evaluations}
        running = "run-live"
        await app.store.runs.start(RunInfo(id=running, rubric_id=RUBRIC, rubric_version=V2))
        flipped = tuple(t for t in runs["run-a"] if runs["run-a"][t] != runs["run-b"][t])
        return Seeded("run-a", "run-b", running, flipped, polite)


async def add_to_run(db_url: str, run_id: str, content: str, target_id: str) -> None:
    """One more evaluated target in a (running) run."""
    async with await Application.open(db_url) as app:
        rubric = await app.store.rubrics.get(RUBRIC, V2)
        evaluations = await app.evaluate(rubric, [{"id": target_id, "content": content}])
        await app.evaluations.save_many(StoredEvaluation(e, run_id=run_id) for e in evaluations)


async def finish_run(db_url: str, run_id: str) -> None:
    async with await Application.open(db_url) as app:
        await app.store.runs.finish(run_id)
