"""`POST /v1/evaluate`: score one or many targets against a rubric without storing
anything. The rubric is a registered one (`id` for the latest, `id@version`) or a
document sent inline (any supported format, held to the strangers' rules). The answer
is JSON with every evaluation in target order, or, with `Accept: application/x-ndjson`,
one line per target as each finishes (a client that goes away stops the work).

Any token may score (submitters and up); the batch size is bounded by the server
(`max_evaluate_targets`) and the body by its size limit.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from rubricflow.application import Application
from rubricflow.errors import RubricflowError
from rubricflow.model import Rubric
from rubricflow.results import Evaluation, Target
from rubricflow.server.auth import AppDep, Submitter
from rubricflow.server.problems import PROBLEM_RESPONSES, status_of
from rubricflow.server.scoring import (
    check_batch_size,
    evaluate_each,
    inline_rubric,
    registered_rubric,
)
from rubricflow.server.settings import ServerSettings
from rubricflow.wire.problems import ApiProblem
from rubricflow.wire.scoring import (
    NDJSON,
    EvaluateRequest,
    EvaluateResponse,
    EvaluationLine,
    RubricRef,
    Tally,
)

__all__ = ["NDJSON", "router"]

router = APIRouter(prefix="/v1", tags=["scoring"])


def _line_schema() -> dict[str, Any]:
    """EvaluationLine's JSON Schema, its parts referring to the OpenAPI document's own
    (Evaluation, ApiProblem: both are there, as other responses use them)."""
    schema = EvaluationLine.model_json_schema(
        ref_template="#/components/schemas/{model}", mode="serialization"
    )
    schema.pop("$defs", None)
    return schema


_STREAM_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The evaluations (JSON), or one EvaluationLine per line "
        "(Accept: application/x-ndjson) as each target finishes",
        "content": {NDJSON: {"schema": _line_schema()}},
    },
    **{k: PROBLEM_RESPONSES[k] for k in (403, 404, 409, 413, 422)},
}


async def resolve_rubric(application: Application, body: EvaluateRequest) -> Rubric:
    if body.rubric is not None:
        return await registered_rubric(application, body.rubric)
    assert body.document is not None
    return await inline_rubric(
        application, body.document, format=body.format, rubric_id=body.rubric_id
    )


def _tally(evaluations: list[Evaluation]) -> Tally:
    verdicts = [e.verdict for e in evaluations]
    return Tally(
        total=len(verdicts),
        passed=verdicts.count("pass"),
        failed=verdicts.count("fail"),
        incomplete=verdicts.count("incomplete"),
    )


def _wants_ndjson(request: Request) -> bool:
    accept = request.headers.get("accept", "")
    return any(part.split(";")[0].strip().lower() == NDJSON for part in accept.split(","))


async def _lines(
    application: Application,
    settings: ServerSettings,
    rubric: Rubric,
    targets: list[Target],
    instance: str,
) -> AsyncIterator[bytes]:
    stream = evaluate_each(application, settings, rubric, targets)
    try:
        async for index, evaluation in stream:
            line = EvaluationLine(index=index, target_id=targets[index].id, evaluation=evaluation)
            yield line.model_dump_json().encode() + b"\n"
    except RubricflowError as error:  # the stream has started: the problem is its last line
        status, slug = status_of(error)
        problem = ApiProblem(
            type=f"urn:rubricflow:problem:{slug}",
            title="Evaluation failed",
            status=status,
            detail=str(error),
            instance=instance,
        )
        yield (
            json.dumps(
                {"index": -1, "target_id": None, "evaluation": None, "error": problem.model_dump()}
            ).encode()
            + b"\n"
        )
    finally:
        await stream.aclose()


@router.post(
    "/evaluate",
    response_model=EvaluateResponse,
    summary="Score targets against a rubric; nothing is stored",
    responses=_STREAM_RESPONSES,
)
async def evaluate(
    body: EvaluateRequest, request: Request, principal: Submitter, application: AppDep
) -> Any:
    """Each evaluation holds the verdict, the score (0..1 and on the rubric's scale),
    coverage, every criterion with its evidence, and feedback. A rubric that needs a
    judge uses the server's (`rubricflow serve --llm`); on a server without one it is a
    422 problem naming the setting."""
    settings: ServerSettings = request.app.state.settings
    targets = body.all_targets
    check_batch_size(len(targets), settings)
    rubric = await resolve_rubric(application, body)
    if _wants_ndjson(request):
        # refuse what cannot run (no judge) with a problem, before the stream starts
        from rubricflow.server.judging import judge_session

        session = judge_session(application, settings, rubric)
        if session is not None:
            await session.aclose()
        return StreamingResponse(
            _lines(application, settings, rubric, targets, request.url.path),
            media_type=NDJSON,
        )
    found: list[Evaluation | None] = [None] * len(targets)
    stream = evaluate_each(application, settings, rubric, targets)
    async with contextlib.aclosing(stream):
        async for index, evaluation in stream:
            found[index] = evaluation
    evaluations = [e for e in found if e is not None]
    return EvaluateResponse(
        rubric=RubricRef(id=rubric.id, version=rubric.version, content_hash=rubric.content_hash),
        evaluations=evaluations,
        summary=_tally(evaluations),
    )
