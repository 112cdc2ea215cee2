"""Where a report or a comparison gets its run: a results file, a run in the store (by id
or `latest`), or every stored evaluation of one artifact."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from rubricflow.errors import NotFoundError
from rubricflow.results import Evaluation
from rubricflow.runs import RunData, RunInfo
from rubricflow.settings import env_name

if TYPE_CHECKING:
    from rubricflow.store import Store

__all__ = [
    "LATEST",
    "STORED_RUN_REMEDY",
    "looks_like_path",
    "results_path",
    "stored_artifact_run",
    "stored_run",
]

LATEST = "latest"
_RESULT_SUFFIXES = (".jsonl", ".json", ".ndjson", ".jl")


def looks_like_path(spec: str) -> bool:
    """Whether RUN was meant as a file: it has a directory part or a results-file suffix
    (a run id such as `run-20250101-120000-abc123` has neither)."""
    return "/" in spec or "\\" in spec or spec.lower().endswith(_RESULT_SUFFIXES)


#: what to give instead when the store a run was asked from does not exist
STORED_RUN_REMEDY = (
    f"give the database the run was recorded in with --db URL (or set {env_name('db')}), "
    "or give a results file written by `rubricflow eval --output FILE`"
)


def results_path(spec: str) -> Path | None:
    """RUN as the CLI takes it, when it names a results file (the path exists); None when
    it names a stored run (an id or `latest`). A directory, or a path that looks like a
    results file and does not exist, is a `NotFoundError` saying what to give."""
    path = Path(spec)
    if path.is_dir():
        raise NotFoundError(
            f"{spec}: is a directory; give a results file written by "
            "`rubricflow eval --output FILE`, or a run id"
        )
    if path.exists():
        return path
    if looks_like_path(spec):
        raise NotFoundError(
            f"{spec}: no such results file; check the path (write one with "
            "`rubricflow eval RUBRIC TARGETS --output FILE`), or give a run id from the store"
        )
    return None


async def stored_run(store: Store, run_id: str) -> RunData:
    """A run in `store` by its id, or the newest with `latest`."""
    if run_id == LATEST:
        latest = await store.runs.latest()
        if latest is None:
            raise NotFoundError(
                f"no runs in {store.database.display_url}; record one with "
                "`rubricflow eval RUBRIC TARGETS --db URL`"
            )
        run_id = latest.id
    return await store.runs.load(run_id)


async def stored_artifact_run(store: Store, artifact_id: str) -> RunData:
    """Every stored evaluation of one artifact (each revision under each rubric version,
    incomplete attempts too), oldest first, as a run. Each row's target id names the
    artifact, the revision and the rubric: `ID r2 rubric@1.0.0`."""
    from rubricflow.store.artifacts import ArtifactRepository

    artifact = await ArtifactRepository(store.database).get(artifact_id)
    evaluations = list(
        reversed(await store.evaluations.query(artifact_id=artifact_id, limit=100_000))
    )
    revisions: dict[str, int] = {}
    for revision in range(1, artifact.revision + 1):
        for evaluation_id in await store.evaluations.ids(
            artifact_id=artifact_id, revision=revision
        ):
            revisions[evaluation_id] = revision
    if not evaluations:
        raise NotFoundError(
            f"artifact {artifact_id!r} has no stored evaluations; review it first "
            f"(`rubricflow artifacts submit {artifact_id}`)"
        )
    rows = _labelled(artifact_id, evaluations, revisions)
    rubrics = sorted({(e.rubric_id, e.rubric_version) for e in evaluations})
    one_rubric = len(rubrics) == 1
    times = sorted(e.created_at for e in evaluations if e.created_at)
    info = RunInfo(
        id=f"artifact:{artifact_id}",
        rubric_id=rubrics[0][0] if one_rubric else ", ".join(f"{r}@{v}" for r, v in rubrics),
        rubric_version=rubrics[0][1] if one_rubric else "",
        source=(
            f"artifact {artifact_id} ({artifact.type}, {artifact.status}, "
            f"revision {artifact.revision})"
        ),
        status="finished",
        started_at=times[0] if times else "",
        finished_at=times[-1] if times else None,
        options={"artifact_id": artifact_id, "artifact_type": artifact.type},
    )
    return RunData(info, rows)


def _labelled(
    artifact_id: str, evaluations: list[Evaluation], revisions: dict[str, int]
) -> list[Evaluation]:
    """Each evaluation with a target id naming its revision and rubric; a retried
    (revision, rubric version) gets `(attempt N)`."""
    seen: Counter[str] = Counter()
    rows = []
    for evaluation in evaluations:
        revision = revisions.get(evaluation.id)
        where = f" r{revision}" if revision is not None else ""
        label = f"{artifact_id}{where} {evaluation.rubric_id}@{evaluation.rubric_version}"
        seen[label] += 1
        if seen[label] > 1:
            label += f" (attempt {seen[label]})"
        rows.append(evaluation.model_copy(update={"target_id": label}))
    return rows
