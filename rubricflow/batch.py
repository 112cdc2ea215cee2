"""A batch run: evaluate many cases, write each result as it lands (results JSONL and/or
the store), stop cleanly when asked, and resume without re-judging finished cases.

Durability: a results line is flushed as its case finishes; the store gets evaluations
in batches, committed every STORE_SECONDS (or every STORE_BATCH evaluations, whichever
comes first), so a killed process loses at most about a second of work. The run row
names its process and carries a heartbeat, so a run whose process died reads as
`interrupted` and `--resume` continues it.

Stopping: `BatchRun.stop()` (the CLI calls it on the first Ctrl-C) stops taking new
cases; the cases in flight finish and are written, and the run is recorded as
`interrupted`. Resuming reads what the results file and the store already hold: a case
whose latest evaluation is complete is skipped (and copied to whichever of the two lacks
it), an incomplete one is evaluated again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from fractions import Fraction
from pathlib import Path
from typing import IO, Any

from rubricflow.engine.executor import evaluate_cases
from rubricflow.errors import NotFoundError, RubricflowError
from rubricflow.llm.secrets import redact_options
from rubricflow.model import Rubric
from rubricflow.results import Evaluation, Target
from rubricflow.runs import (
    RunData,
    RunInfo,
    evaluation_line,
    latest_per_target,
    read_results_file,
    write_run_header,
)

__all__ = [
    "BatchRun",
    "BatchTally",
    "CaseEvaluator",
    "ResumeError",
    "criteria_in_flight",
    "targets_in_flight",
]

#: the store gets pending evaluations at least every STORE_SECONDS, at most STORE_BATCH
#: at a time: batching keeps a fast stream fast, the clock bounds what a kill loses
STORE_BATCH = 200
STORE_SECONDS = 1.0
#: targets in flight, and criteria per target, when the judge asks for no more
DEFAULT_TARGETS_IN_FLIGHT = 8
DEFAULT_CRITERIA_IN_FLIGHT = 8
#: judge questions kept ready per request the judge may have in flight (5/2: 2.5 times)
JUDGE_BACKLOG = Fraction(5, 2)
#: the most targets a sized window holds (memory stays bounded for any judge limit)
MAX_TARGETS_IN_FLIGHT = 512


def criteria_in_flight(judge_limit: int | None, judged: int) -> int:
    """Criteria of one target scored at once: all its `judged` LLM criteria (up to the
    judge's limit), at least DEFAULT_CRITERIA_IN_FLIGHT. A target whose criteria cannot
    all be asked at once asks its last ones only after its first answers, so targets
    started together leave the judge idle while they finish."""
    if judge_limit is None:
        return DEFAULT_CRITERIA_IN_FLIGHT
    return max(DEFAULT_CRITERIA_IN_FLIGHT, min(judged, judge_limit))


def targets_in_flight(judge_limit: int | None, per_target: int) -> int:
    """How many targets to evaluate at once so that a judge allowed `judge_limit`
    requests in flight always has questions waiting, when each target puts at most
    `per_target` questions to it at once.

    With only `judge_limit / per_target` targets the judge idles whenever they near their
    end together (0.76 of its limit for 10 criteria at limit 32 with 8 targets of 8);
    JUDGE_BACKLOG times the limit asked keeps it at 0.9 or more, and many more only adds
    bookkeeping."""
    if judge_limit is None or per_target < 1:
        return DEFAULT_TARGETS_IN_FLIGHT
    wanted = math.ceil(JUDGE_BACKLOG * judge_limit / per_target)
    return max(DEFAULT_TARGETS_IN_FLIGHT, min(MAX_TARGETS_IN_FLIGHT, wanted))


#: scores (rubric, target) pairs and yields their evaluations in input order, as
#: `evaluate_cases(cases, target_concurrency=..., **options)` does
CaseEvaluator = Callable[..., AsyncGenerator[Evaluation, None]]


class ResumeError(RubricflowError):
    """A run cannot be resumed (nothing to resume, or the pieces disagree)."""


@dataclass
class BatchTally:
    """Running totals, for the progress bar and the closing summary."""

    total: int | None = None
    skipped: int = 0
    #: how the targets finished in an earlier session of a resumed run went
    earlier_failed: int = 0
    done: int = 0
    passed: int = 0
    failed: int = 0
    incomplete: int = 0
    llm_calls: int = 0
    cache_hits: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None
    started: float = field(default_factory=time.monotonic)

    def add(self, evaluation: Evaluation) -> None:
        self.done += 1
        if evaluation.verdict == "pass":
            self.passed += 1
        elif evaluation.verdict == "fail":
            self.failed += 1
        else:
            self.incomplete += 1
        usage = evaluation.usage()
        self.llm_calls += usage["llm_calls"]
        self.cache_hits += usage["cache_hits"]
        self.input_tokens += usage["input_tokens"]
        self.output_tokens += usage["output_tokens"]
        if usage["cost"] is not None:
            self.cost = (self.cost or 0.0) + usage["cost"]

    @property
    def rate(self) -> float:
        elapsed = time.monotonic() - self.started
        return self.done / elapsed if elapsed > 0 else 0.0

    def usage(self) -> dict[str, Any]:
        return {
            "llm_calls": self.llm_calls,
            "cache_hits": self.cache_hits,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost": self.cost,
        }


class BatchRun:
    """One run over `cases` ((rubric, target) pairs). Use `prepare` (start or resume),
    then iterate `run()`, then `close()`."""

    def __init__(
        self,
        info: RunInfo,
        *,
        output: Path | None = None,
        store: Any = None,
        resume: bool = False,
        keep: bool = False,
    ) -> None:
        # the options are kept with the run (results file, store, report): a judge URL's
        # credentials or `?key=` are masked there, and live on only in the judge session
        self.info = replace(info, options=redact_options(info.options))
        self.output = output
        self.store = store
        self.resume = resume
        self.tally = BatchTally()
        self._stop = False
        self._stream: IO[str] | None = None
        self._pending: list[Any] = []
        self._skip: set[str] = set()
        self._copy_to_file: list[Evaluation] = []
        #: whether the run is in the store (started or resumed by `prepare`)
        self._in_store = False
        #: a store batch being saved, which a cancelled run leaves for close() to wait for
        self._saving: asyncio.Future[None] | None = None
        #: one store flush at a time (the run's own, or the clock's)
        self._flush_lock = asyncio.Lock()
        #: the clock: commits what is pending every STORE_SECONDS and beats the heartbeat
        self._ticker: asyncio.Task[None] | None = None
        #: what stopped the clock (a store error), raised by the next write
        self._ticker_error: BaseException | None = None
        self._seen: set[str] = set()
        self._written = output is not None or store is not None or keep
        #: target ids met more than once: the run keeps only the last evaluation of each
        self.repeated: dict[str, None] = {}
        #: every evaluation of this run (earlier sessions' too), when `keep` is set
        self.kept: list[Evaluation] | None = [] if keep else None

    # -- starting and resuming -------------------------------------------------------

    async def prepare(self) -> RunInfo:
        """Record the run's start, or for a resume gather what is already finished."""
        if not self.info.started_at:
            started = datetime.now(timezone.utc).isoformat()
            self.info = RunInfo(**{**self.info.to_dict(), "started_at": started})
        if self.resume:
            await self._prepare_resume()
        else:
            if self.output is not None and self.output.exists() and self.output.stat().st_size:
                raise ResumeError(
                    f"{self.output}: already holds results; continue that run with --resume, "
                    "or remove the file (or pick another --output)"
                )
            if self.store is not None:
                self.info = await self.store.runs.start(self.info)
                self._in_store = True
        if self._in_store:
            self._ticker = asyncio.ensure_future(self._tick())
        if self.output is not None:
            self.output.parent.mkdir(parents=True, exist_ok=True)
            if self.output.exists():
                _end_on_a_whole_line(self.output)
            self._stream = self.output.open("a", encoding="utf-8")
            running = RunInfo(**{**self.info.to_dict(), "status": "running", "finished_at": None})
            write_run_header(self._stream, running)
            self._stream.flush()
        return self.info

    async def _prepare_resume(self) -> None:
        given = self.info
        from_file = self._resume_file(given)
        from_store: list[Evaluation] = []
        if self.store is not None:
            from_store = await self._resume_store(given, from_file)
        elif from_file is None:
            raise ResumeError(
                "nothing to resume: give the run's --output file or its --db (with --run ID)"
            )
        file_done = _complete(from_file.evaluations if from_file else [])
        store_done = _complete(from_store)
        finished = {**file_done, **store_done}
        self._skip = set(finished)
        self.tally.skipped = len(self._skip)
        self.tally.earlier_failed = sum(e.verdict == "fail" for e in finished.values())
        # a case finished in one place only is copied to the other, not judged again
        if self.store is not None:
            stored_ids = {e.id for e in from_store}
            await self._save_to_store(
                [e for t, e in file_done.items() if t not in store_done and e.id not in stored_ids]
            )
        if self.output is not None:  # a new results file gets every earlier one too
            self._copy_to_file = [e for t, e in store_done.items() if t not in file_done]
        if self.kept is not None:
            self.kept.extend(finished.values())

    def _resume_file(self, given: RunInfo) -> RunData | None:
        """The run the --output file holds (None without one), which the run continues."""
        if self.output is None or not self.output.exists():
            return None
        from_file = read_results_file(self.output)
        if self.info.id != from_file.info.id and self.info.options.get("run_given"):
            raise ResumeError(
                f"{self.output} holds run {from_file.info.id!r}, not {self.info.id!r}; "
                "resume the run the file holds, or give another --output"
            )
        _same_rubric(from_file.info, given, f"{self.output}: run", "another --output")
        self.info = RunInfo(**{**self.info.to_dict(), "id": from_file.info.id})
        return from_file

    async def _resume_store(self, given: RunInfo, from_file: RunData | None) -> list[Evaluation]:
        """Resume the run in the store (the one named, the file's, else the latest; one only
        in the file is started there); its latest evaluation of each target."""
        run_id = self.info.id
        if from_file is None and not self.info.options.get("run_given"):
            latest = await self.store.runs.latest()
            if latest is None:
                raise ResumeError(
                    "nothing to resume: the store holds no run; start one without --resume"
                )
            run_id = latest.id
        try:
            recorded = await self.store.runs.get(run_id)
        except NotFoundError:
            if from_file is None:
                raise
            stored = await self.store.runs.start(self.info)
        else:
            where = f"{self.store.database.display_url}: run"
            _same_rubric(recorded, given, where, "another --run")
            stored = await self.store.runs.resume(run_id)
        self._in_store = True
        self.info = RunInfo(**{**stored.to_dict(), "options": self.info.options})
        return latest_per_target(await self.store.runs.evaluations(run_id))

    async def _save_to_store(self, evaluations: list[Evaluation]) -> None:
        from rubricflow.store import StoredEvaluation

        if evaluations:
            await self.store.evaluations.save_many(
                [StoredEvaluation(e, run_id=self.info.id) for e in evaluations]
            )

    # -- running ---------------------------------------------------------------------

    def stop(self) -> None:
        """Take no new case; those in flight finish and are written."""
        self._stop = True

    @property
    def stopping(self) -> bool:
        return self._stop

    async def _cases(
        self, cases: Iterable[tuple[Rubric, Target]]
    ) -> AsyncIterator[tuple[Rubric, Target]]:
        for rubric, target in cases:
            if self._stop:
                return
            # only a run that is written needs this, and a plain stream of a million
            # targets must not hold a million ids
            if target.id is not None and self._written:
                if target.id in self._seen:
                    self.repeated[target.id] = None
                self._seen.add(target.id)
            # a target without an id (a single-target file) is known by its content
            if (target.id or target.content_hash) in self._skip:
                continue
            yield rubric, target

    async def run(
        self,
        cases: Iterable[tuple[Rubric, Target]],
        *,
        target_concurrency: int,
        on_evaluation: Callable[[Evaluation], None] | None = None,
        evaluator: CaseEvaluator | None = None,
        **options: Any,
    ) -> AsyncGenerator[Evaluation, None]:
        """Evaluate the cases not finished yet, writing each result as it lands.
        `evaluator` (default: `evaluate_cases` here) scores them elsewhere, e.g. on a Ray
        cluster (`rubricflow.ray.RayEvaluator`), yielding in input order all the same."""
        if self._stream is not None:
            for evaluation in self._copy_to_file:
                self._stream.write(evaluation_line(evaluation, self.info.id))
            self._stream.flush()
        evaluations = (evaluator or evaluate_cases)(
            self._cases(cases), target_concurrency=target_concurrency, **options
        )
        # closed here, not by the garbage collector, when the caller stops early
        async with contextlib.aclosing(evaluations):
            async for evaluation in evaluations:
                await self._record(evaluation, on_evaluation)
                yield evaluation

    async def _tick(self) -> None:
        """Every STORE_SECONDS, commit the evaluations pending for the store (a slow
        target must not hold back those finished before it), and every
        HEARTBEAT_SECONDS say the run is alive."""
        from rubricflow.store.runs import HEARTBEAT_SECONDS

        beaten = time.monotonic()
        try:
            while True:
                await asyncio.sleep(STORE_SECONDS)
                if self._pending:
                    await self._flush_store()
                if time.monotonic() - beaten >= HEARTBEAT_SECONDS:
                    await self.store.runs.beat(self.info.id)
                    beaten = time.monotonic()
        except asyncio.CancelledError:
            raise
        except Exception as error:  # the run's next write raises it
            self._ticker_error = error

    async def _stop_ticker(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
            self._ticker = None

    async def _record(
        self, evaluation: Evaluation, on_evaluation: Callable[[Evaluation], None] | None
    ) -> None:
        """Count an evaluation and write it: results file now, the store in batches."""
        if self._ticker_error is not None:
            error, self._ticker_error = self._ticker_error, None
            raise error
        self.tally.add(evaluation)
        if self._stream is not None:
            self._stream.write(evaluation_line(evaluation, self.info.id))
            self._stream.flush()
        if self.kept is not None:
            self.kept.append(evaluation)
        if self.store is not None:
            self._pending.append(evaluation)
            if len(self._pending) >= STORE_BATCH:
                await self._flush_store()
        if on_evaluation is not None:
            on_evaluation(evaluation)

    async def _flush_store(self) -> None:
        """Store the pending evaluations, one flush at a time. The save is shielded: a
        cancelled run (a second Ctrl-C) does not cut its transaction short, which would
        lose the batch or leave SQLite locked; the next flush (close) waits for it."""
        async with self._flush_lock:
            if self._saving is not None:
                saving = self._saving
                await asyncio.shield(saving)
                if self._saving is saving:
                    self._saving = None
            pending, self._pending = self._pending, []
            if not pending:
                return
            self._saving = asyncio.ensure_future(self._save_to_store(pending))
            try:
                await asyncio.shield(self._saving)
            except asyncio.CancelledError:
                raise  # the save goes on
            except BaseException:
                self._saving = None
                raise
            self._saving = None

    async def close(self, *, interrupted: bool) -> RunInfo:
        """Write what is still pending and record how the run ended."""
        status = "interrupted" if interrupted or self._stop else "finished"
        finished = datetime.now(timezone.utc).isoformat()
        self.info = RunInfo(**{**self.info.to_dict(), "status": status, "finished_at": finished})
        try:
            # a run that `prepare` did not start or resume (refused) is not this one's
            if self.store is not None and self._in_store:
                await self._stop_ticker()
                await self._flush_store()
                await self.store.runs.finish(self.info.id, status)
        finally:
            if self._stream is not None:
                write_run_header(self._stream, self.info)
                self._stream.close()
                self._stream = None
        return self.info

    def data(self) -> RunData:
        """The run with every evaluation kept (needs `keep=True`)."""
        return RunData(self.info, latest_per_target(self.kept or []))


def _complete(evaluations: Iterable[Evaluation]) -> dict[str, Evaluation]:
    """The latest complete (pass or fail) evaluation of each target (by id, or by content
    for a target without one)."""
    done: dict[str, Evaluation] = {}
    for evaluation in evaluations:
        if evaluation.verdict != "incomplete":
            done[evaluation.target_id or evaluation.target_hash] = evaluation
    return done


def _same_rubric(recorded: RunInfo, given: RunInfo, where: str, other: str) -> None:
    """A run is graded with one rubric: resuming it with another would mix the grades."""
    if not (recorded.rubric_id and given.rubric_id):
        return
    was = f"{recorded.rubric_id}@{recorded.rubric_version}"
    now = f"{given.rubric_id}@{given.rubric_version}"
    if was != now:
        raise ResumeError(
            f"{where} {recorded.id!r} was graded with {was}, not {now}; resume it with that "
            f"rubric, or start a new run ({other})"
        )


def _end_on_a_whole_line(path: Path) -> None:
    """A run killed mid-write leaves its last line cut: drop that line (reading the file
    skips it too) so that what a resumed run appends starts on a line of its own. A whole
    last line that only lacks its newline gets one."""
    with path.open("rb+") as stream:
        size = stream.seek(0, os.SEEK_END)
        if size == 0:
            return
        stream.seek(size - 1)
        if stream.read(1) == b"\n":
            return
        start = size
        while start > 0:  # back to the start of the last line
            step = min(start, 1 << 16)
            stream.seek(start - step)
            newline = stream.read(step).rfind(b"\n")
            start -= step
            if newline >= 0:
                start += newline + 1
                break
        stream.seek(start)
        try:
            json.loads(stream.read().decode("utf-8"))
        except ValueError:  # cut JSON, or a cut multi-byte character
            stream.truncate(start)
        else:
            stream.write(b"\n")
