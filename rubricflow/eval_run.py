"""One `rubricflow eval` run, below the CLI: the store, through an `Application` (with
the run's rubric registered), the judge cache it shares, Ctrl-C (the first stops taking
targets, the second abandons those in flight), the batch run, and closing judge, run and
store in that order whatever happens. What the user sees (each evaluation, progress,
messages) is the caller's, told through an `EvalObserver`; the CLI prints, this module
only runs."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from rubricflow.batch import BatchRun
from rubricflow.model import Rubric
from rubricflow.results import Evaluation, Target
from rubricflow.runs import RunInfo

if TYPE_CHECKING:
    from rubricflow.application import Application
    from rubricflow.llm.session import LLMSession

__all__ = ["EvalObserver", "EvalRun"]


class EvalObserver(Protocol):
    """What a run tells its face, as it happens."""

    def stopping(self) -> None:
        """Ctrl-C: no new target is taken; those in flight finish and are written."""

    def prepared(self, batch: BatchRun) -> None:
        """The run is started or resumed (`batch.tally.skipped` finished earlier);
        evaluations follow."""

    def evaluated(self, evaluation: Evaluation, batch: BatchRun) -> None:
        """One evaluation landed (and is written); raising stops the run, interrupted."""

    def closing(self) -> None:
        """The run ends, for any reason; called before it is closed."""


class EvalRun:
    """Runs (rubric, target) pairs as one batch run `info`, judged by `judge`; stored in
    `db` when given (registering `rubric` there: the run's shared rubric, None when each
    case has its own), written to `output`, `resume`d, every evaluation `keep`t for a
    report. After `run`, `batch` is the run (None when it never started) and
    `interrupted` says whether it stopped short (Ctrl-C, an error, a reader gone)."""

    def __init__(
        self,
        info: RunInfo,
        *,
        judge: LLMSession,
        db: str | None = None,
        rubric: Rubric | None = None,
        source_format: str | None = None,
        output: Path | None = None,
        resume: bool = False,
        keep: bool = False,
        share_cache: bool = True,
    ) -> None:
        self.info = info
        self.judge = judge
        self.db = db
        self.rubric = rubric
        self.source_format = source_format
        self.output = output
        self.resume = resume
        self.keep = keep
        #: whether the judge uses the store's cache (workers sharing a store share answers)
        self.share_cache = share_cache
        self.interrupted = False
        self.batch: BatchRun | None = None

    async def run(
        self,
        cases: Iterable[tuple[Rubric, Target]],
        *,
        total: int | None,
        observer: EvalObserver,
        **options: Any,
    ) -> None:
        """Evaluate `cases` (`total` of them when known); `options` go to `BatchRun.run`."""
        application = await self._open_application()
        store = None if application is None else application.store
        if store is not None and self.share_cache:
            self.judge.cache = store.judge_cache
        batch = BatchRun(
            self.info, output=self.output, store=store, resume=self.resume, keep=self.keep
        )
        self.batch = batch
        batch.tally.total = total
        main_task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        # not possible off the main thread or on Windows: Ctrl-C then stops at once
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGINT, self._on_interrupt, observer, main_task)
        try:
            await batch.prepare()
            observer.prepared(batch)
            stream = batch.run(cases, **options)
            async with contextlib.aclosing(stream):
                async for evaluation in stream:
                    observer.evaluated(evaluation, batch)
        except asyncio.CancelledError:
            self.interrupted = True
        except BaseException:
            # e.g. a malformed JSONL line: the run stopped short, and --resume continues it
            self.interrupted = True
            raise
        finally:
            observer.closing()
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(signal.SIGINT)
            await self.judge.aclose()
            try:
                await batch.close(interrupted=self.interrupted)
            finally:
                if application is not None:
                    await application.close()

    async def _open_application(self) -> Application | None:
        """The application over the store at `db` (None without one), with the shared
        rubric registered (the same content again is a no-op)."""
        if self.db is None:
            return None
        from rubricflow.application import Application

        application = await Application.open(self.db)
        if self.rubric is None:
            return application
        try:
            await application.rubrics.register(self.rubric, source_format=self.source_format)
        except BaseException:
            await application.close()
            raise
        return application

    def _on_interrupt(self, observer: EvalObserver, main_task: asyncio.Task[Any] | None) -> None:
        """Ctrl-C: the first stops taking targets, the second abandons those in flight."""
        batch = self.batch
        if batch is not None and not batch.stopping:
            batch.stop()
            self.interrupted = True
            observer.stopping()
        elif main_task is not None:
            main_task.cancel()
