"""Batch evaluation runs: what a run is, how it is written to and read from a results
JSONL file or the store, and the figures a report or a comparison is built from.

A results file holds one JSON object per line: first a header `{"run": {...}}`, then each
evaluation's full document with a `run_id` key, then a closing `{"run": {...}}` line with
the run's final status. A resumed run appends to the same file; when a target was
evaluated twice (an incomplete evaluation retried), the last one counts.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from fractions import Fraction
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from rubricflow.errors import ConfigurationError, NotFoundError, RubricflowError
from rubricflow.model import MAX_ID_LENGTH, NUL_MESSAGE
from rubricflow.results import Evaluation, exact_number

__all__ = [
    "CriterionSummary",
    "HealthBenchScore",
    "RunData",
    "RunInfo",
    "RunInputError",
    "RunSummary",
    "check_run_id",
    "evaluation_line",
    "finished_targets",
    "healthbench_example_score",
    "healthbench_score",
    "latest_per_target",
    "new_run_id",
    "read_results_file",
    "summarize",
    "write_run_header",
]

FINISHED = ("pass", "fail")


class RunInputError(RubricflowError):
    """A results file cannot be read, or does not hold a rubricflow run."""


def check_run_id(run_id: str) -> str:
    """A run id the store can keep on both backends (runs.id is VARCHAR(200), and
    PostgreSQL refuses NUL); a `ConfigurationError` naming the limit otherwise."""
    if len(run_id) > MAX_ID_LENGTH:
        raise ConfigurationError(
            f"run id is {len(run_id)} characters; the limit is {MAX_ID_LENGTH}: shorten it"
        )
    if "\x00" in run_id:
        raise ConfigurationError(f"run id {NUL_MESSAGE}")
    return run_id


def new_run_id(now: datetime | None = None) -> str:
    """A run id that sorts by start time and is unique enough to need no coordination."""
    import secrets

    when = (now or datetime.now(timezone.utc)).strftime("%Y%m%d-%H%M%S")
    return f"run-{when}-{secrets.token_hex(3)}"


@dataclass(frozen=True)
class RunInfo:
    """One batch run: its id, the rubric, where the targets came from, and how it ended
    (`running`, `interrupted` or `finished`)."""

    id: str
    rubric_id: str
    rubric_version: str
    source: str | None = None
    status: str = "running"
    started_at: str = ""
    finished_at: str | None = None
    options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_run_id(self.id)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "rubric_id": self.rubric_id,
            "rubric_version": self.rubric_version,
            "source": self.source,
            "status": self.status,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "options": self.options,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunInfo:
        return cls(
            id=str(data["id"]),
            rubric_id=str(data.get("rubric_id", "")),
            rubric_version=str(data.get("rubric_version", "")),
            source=data.get("source"),
            status=str(data.get("status", "finished")),
            started_at=str(data.get("started_at") or ""),
            finished_at=data.get("finished_at"),
            options=dict(data.get("options") or {}),
        )


@dataclass(frozen=True)
class RunData:
    """A run and its evaluations: the latest one per target, in the order targets were
    first evaluated."""

    info: RunInfo
    evaluations: list[Evaluation]

    @property
    def label(self) -> str:
        return self.info.id


@dataclass(frozen=True)
class CriterionSummary:
    """How one criterion did across a run."""

    criterion_id: str
    scored: int
    passed: int
    unscored: int
    mean_score: float | None

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.scored if self.scored else None


@dataclass(frozen=True)
class RunSummary:
    """The figures of a run: verdict counts, pass rate, score statistics and a histogram,
    per-criterion pass rates, and the LLM ledger totals."""

    total: int
    passed: int
    failed: int
    incomplete: int
    mean_score: float | None
    median_score: float | None
    histogram: list[int]
    criteria: list[CriterionSummary]
    llm_calls: int
    cache_hits: int
    input_tokens: int
    output_tokens: int
    cost: float | None
    duration_ms: float

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.total if self.total else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "passed": self.passed,
            "failed": self.failed,
            "incomplete": self.incomplete,
            "pass_rate": self.pass_rate,
            "mean_score": self.mean_score,
            "median_score": self.median_score,
            "histogram": self.histogram,
            "criteria": [
                {
                    "id": c.criterion_id,
                    "scored": c.scored,
                    "passed": c.passed,
                    "unscored": c.unscored,
                    "pass_rate": c.pass_rate,
                    "mean_score": c.mean_score,
                }
                for c in self.criteria
            ],
            "llm_calls": self.llm_calls,
            "cache_hits": self.cache_hits,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost": self.cost,
            "duration_ms": self.duration_ms,
        }


HISTOGRAM_BINS = 10


def summarize(evaluations: Sequence[Evaluation]) -> RunSummary:
    """The figures of a run. The histogram has ten bins over the normalised 0..1 score
    (the last bin includes 1.0)."""
    verdicts = {"pass": 0, "fail": 0, "incomplete": 0}
    histogram = [0] * HISTOGRAM_BINS
    scores: list[float] = []
    per_criterion: dict[str, list[Any]] = {}
    usage = {"llm_calls": 0, "cache_hits": 0, "input_tokens": 0, "output_tokens": 0}
    cost: float | None = None
    duration = 0.0
    for evaluation in evaluations:
        verdicts[evaluation.verdict] += 1
        duration += evaluation.duration_ms
        if evaluation.verdict != "incomplete":
            scores.append(evaluation.score)
            histogram[min(int(evaluation.score * HISTOGRAM_BINS), HISTOGRAM_BINS - 1)] += 1
        for result in evaluation.criteria:
            entry = per_criterion.setdefault(result.criterion_id, [0, 0, 0, []])
            if result.scored and result.passed is not None:
                entry[0] += 1
                entry[1] += bool(result.passed)
                if result.score is not None:
                    entry[3].append(result.score)
            else:
                entry[2] += 1
        spent = evaluation.usage()
        for key in usage:
            usage[key] += spent[key]
        if spent["cost"] is not None:
            cost = (cost or 0.0) + spent["cost"]
    criteria = [
        CriterionSummary(
            criterion_id=name,
            scored=scored,
            passed=passed,
            unscored=unscored,
            mean_score=mean(values),
        )
        for name, (scored, passed, unscored, values) in per_criterion.items()
    ]
    return RunSummary(
        total=len(evaluations),
        passed=verdicts["pass"],
        failed=verdicts["fail"],
        incomplete=verdicts["incomplete"],
        mean_score=mean(scores),
        median_score=median(scores),
        histogram=histogram,
        criteria=criteria,
        llm_calls=usage["llm_calls"],
        cache_hits=usage["cache_hits"],
        input_tokens=usage["input_tokens"],
        output_tokens=usage["output_tokens"],
        cost=cost,
        duration_ms=duration,
    )


def mean(values: Sequence[float]) -> float | None:
    """The mean of a summary: the exactly rounded sum (`math.fsum`) over the count, so it
    does not depend on the order the values come in (the store reads them in SQL's)."""
    return math.fsum(values) / len(values) if values else None


def median(values: Sequence[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def latest_per_target(evaluations: Iterable[Evaluation]) -> list[Evaluation]:
    """The last evaluation of each target, in the order targets first appear."""
    chosen: dict[str, Evaluation] = {}
    for evaluation in evaluations:
        # a dict keeps a key's first position when its value is replaced
        chosen[evaluation.target_id or evaluation.target_hash] = evaluation
    return list(chosen.values())


def write_run_header(stream: IO[str], info: RunInfo) -> None:
    stream.write(json.dumps({"run": info.to_dict()}, ensure_ascii=False) + "\n")


def evaluation_line(evaluation: Evaluation, run_id: str) -> str:
    """One results-file line: the evaluation's full document and its run id."""
    return json.dumps({"run_id": run_id, **evaluation.to_dict()}, ensure_ascii=False) + "\n"


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """The file's JSON objects with their line numbers. A malformed *last* line (a write
    cut off by a kill, perhaps inside a multi-byte character) is dropped, since everything
    before it is intact; a malformed line anywhere else is an error."""
    try:
        stream = path.open("rb")
    except OSError as error:
        raise RunInputError(f"{path}: cannot read: {error.strerror or error}") from None
    with stream:
        broken: RunInputError | None = None
        for number, raw in enumerate(stream, start=1):
            if not raw.strip():
                continue
            if broken is not None:
                raise broken
            try:
                value = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError:
                broken = RunInputError(f"{path} line {number}: not UTF-8 text")
                continue
            except json.JSONDecodeError as error:
                broken = RunInputError(
                    f"{path} line {number}: malformed JSON at column {error.colno}: "
                    f"{error.msg}; a results file is written by `rubricflow eval --output`"
                )
                continue
            if not isinstance(value, dict):
                raise RunInputError(
                    f"{path} line {number}: expected a JSON object, got {type(value).__name__}"
                )
            yield number, value


def read_results_file(path: str | Path) -> RunData:
    """The run in a results file written by `rubricflow eval --output`. A file that was
    cut off mid-line (a killed run) is read up to its last complete line."""
    source = Path(path)
    if not source.is_file():
        raise NotFoundError(f"{source}: no such results file; check the path")
    info: RunInfo | None = None
    evaluations: list[Evaluation] = []
    for number, value in _lines(source):
        if "run" in value and isinstance(value["run"], dict):
            # the header; a resumed run appends another, and every session ends with one
            # that says how it ended: the last one is the run's state
            info = RunInfo.from_dict(value["run"])
            continue
        document = {k: v for k, v in value.items() if k != "run_id"}
        try:
            evaluations.append(Evaluation.model_validate(document))
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(map(str, first["loc"])) or "(line)"
            raise RunInputError(
                f"{source} line {number}: not a rubricflow evaluation ({where}: "
                f"{first['msg']}); give a file written by `rubricflow eval --output`"
            ) from None
        if info is None:
            info = RunInfo(
                id=str(value.get("run_id") or source.stem),
                rubric_id=evaluations[-1].rubric_id,
                rubric_version=evaluations[-1].rubric_version,
                source=str(source),
                status="finished",
            )
    if info is None:
        raise RunInputError(f"{source}: holds no run; it is empty")
    return RunData(info, latest_per_target(evaluations))


def finished_targets(evaluations: Iterable[Evaluation]) -> set[str]:
    """The targets whose latest evaluation is complete (pass or fail): a resumed run skips
    them; incomplete ones are evaluated again."""
    latest: dict[str, str] = {}
    for evaluation in evaluations:
        if evaluation.target_id is not None:
            latest[evaluation.target_id] = evaluation.verdict
    return {target for target, verdict in latest.items() if verdict in FINISHED}


@dataclass(frozen=True)
class HealthBenchScore:
    """HealthBench's own figures, as simple-evals' healthbench_eval.py computes them: each
    example scores achieved / possible points *unclipped* (a response that meets only
    pitfalls scores below 0), and the dataset scores the mean of those, clipped to 0..1.

    rubricflow's evaluation `score` (and so the reward) is the per-example figure clipped
    to 0..1: right for a reward, not HealthBench's dataset figure. `examples` counts the
    evaluations that had a score (complete, with positive points); `left_out` the rest."""

    score: float
    mean: float
    per_example: tuple[float, ...]
    examples: int
    left_out: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "score": self.score,
            "mean": self.mean,
            "examples": self.examples,
            "left_out": self.left_out,
        }


def healthbench_example_score(evaluation: Evaluation) -> float | None:
    """HealthBench's per-example score of an evaluation of a HealthBench rubric: the points
    of the criteria met (pitfalls negative) over the positive points, unclipped; None for
    an incomplete evaluation or one with no positive points (simple-evals' None too)."""
    if evaluation.verdict == "incomplete":
        return None
    possible = sum(
        (exact_number(c.weight) for c in evaluation.criteria if c.weight > 0), Fraction(0)
    )
    if possible == 0:
        return None
    return float(exact_number(evaluation.raw_score) / possible)


def healthbench_score(evaluations: Iterable[Evaluation]) -> HealthBenchScore | None:
    """HealthBench's dataset score over `evaluations`: clip(mean of the per-example scores,
    0, 1); None when no evaluation has a per-example score."""
    found: list[float] = []
    left_out = 0
    for evaluation in evaluations:
        value = healthbench_example_score(evaluation)
        if value is None:
            left_out += 1
        else:
            found.append(value)
    if not found:
        return None
    mean = math.fsum(found) / len(found)
    return HealthBenchScore(
        score=min(1.0, max(0.0, mean)),
        mean=mean,
        per_example=tuple(found),
        examples=len(found),
        left_out=left_out,
    )
