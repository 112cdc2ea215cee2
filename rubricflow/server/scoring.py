"""Scoring without storage, shared by `/v1/evaluate` and the OpenRubricRL-compatible
routes: pick the rubric (registered, or a stranger's document), set up the server's
judge, and evaluate targets a bounded number at a time, yielding each evaluation as it
finishes. Nothing is stored."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Sequence
from typing import Annotated, Any

from fastapi import Path

from rubricflow.application import Application
from rubricflow.core import RubricText
from rubricflow.errors import ConfigurationError, NotFoundError
from rubricflow.model import Rubric
from rubricflow.results import Evaluation, Target
from rubricflow.server.judging import judge_session
from rubricflow.server.settings import ServerSettings

__all__ = [
    "PRINTABLE",
    "IdPath",
    "check_batch_size",
    "evaluate_each",
    "inline_rubric",
    "parse_reference",
    "registered_rubric",
]


#: ids and versions in paths and queries: no control characters (PostgreSQL refuses NUL)
PRINTABLE = r"^[^\x00-\x1f\x7f]+$"
IdPath = Annotated[str, Path(min_length=1, max_length=402, pattern=PRINTABLE)]


def parse_reference(reference: str) -> tuple[str, str | None]:
    """`id` or `id@version` as (id, version or None)."""
    rubric_id, at, version = reference.partition("@")
    if not rubric_id or (at and not version):
        raise ConfigurationError(
            f"rubric reference {reference!r} must be ID or ID@VERSION (e.g. tone@1.2.0)"
        )
    return rubric_id, (version if at else None)


async def registered_rubric(application: Application, reference: str) -> Rubric:
    """The registered rubric `reference` (`id` for the latest, or `id@version`)."""
    rubric_id, version = parse_reference(reference)
    return await application.rubrics.get(rubric_id, version)


async def inline_rubric(
    application: Application, document: str, *, format: str | None, rubric_id: str | None
) -> Rubric:
    """The one rubric of a stranger's document (or the one named `rubric_id`), loaded
    through the core's one door (`Core.load_rubrics(trust="stranger")`)."""
    (loaded,) = await application.load_rubrics(
        [RubricText(document, source="<request>")], format=format, trust="stranger"
    )
    if rubric_id is not None:
        chosen = [r for r in loaded.rubrics if r.id == rubric_id]
        if not chosen:
            held = ", ".join(r.id for r in loaded.rubrics)
            raise NotFoundError(f"the document holds no rubric {rubric_id!r} (it holds: {held})")
        return chosen[0]
    if len(loaded.rubrics) > 1:
        held = ", ".join(r.id for r in loaded.rubrics)
        raise ConfigurationError(
            f"the document holds {len(loaded.rubrics)} rubrics ({held}); name one with `rubric_id`"
        )
    return loaded.rubrics[0]


def check_batch_size(count: int, settings: ServerSettings) -> None:
    if count > settings.max_evaluate_targets:
        raise ConfigurationError(
            f"{count} targets in one request; this server takes at most "
            f"{settings.max_evaluate_targets} (RUBRICFLOW_SERVER_MAX_EVALUATE_TARGETS): "
            "split the batch"
        )


async def evaluate_each(
    application: Application,
    settings: ServerSettings,
    rubric: Rubric,
    targets: Sequence[Target],
) -> AsyncGenerator[tuple[int, Evaluation], None]:
    """(index, evaluation) for each target, as each finishes, with at most
    `settings.evaluate_concurrency` targets in flight. Closing the iterator (a client
    that went away) cancels the targets in flight and starts no more. A rubric that
    needs a judge on a server without one is refused before anything runs."""
    check_batch_size(len(targets), settings)
    session = judge_session(application, settings, rubric)
    options: dict[str, Any] = {"llm": session} if session is not None else {"llm_cache": None}
    width = settings.evaluate_concurrency

    async def one(index: int, target: Target) -> tuple[int, Evaluation]:
        (evaluation,) = await application.evaluate(rubric, [target], options=options)
        return index, evaluation

    waiting = iter(enumerate(targets))
    running: set[asyncio.Task[tuple[int, Evaluation]]] = set()
    try:
        while True:
            while len(running) < width:
                step = next(waiting, None)
                if step is None:
                    break
                running.add(asyncio.ensure_future(one(*step)))
            if not running:
                return
            done, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                yield task.result()
    finally:
        for task in running:
            task.cancel()
        with contextlib.suppress(BaseException):
            await asyncio.gather(*running, return_exceptions=True)
        if session is not None:
            await session.aclose()
