"""`POST /get_reward`: an OpenRLHF remote reward model.

OpenRLHF (`--remote_rm_url http://host:port/get_reward?rubric=ID`) posts
`{"query": [...], "prompts": [...], "labels": [...]}`: each query is the prompt and the
response as one string (`prompts`, when sent, lets the response be cut out of it) and
`labels` the references. The answer is `{"rewards": [...], "scores": [...]}`, one number
per query: the evaluation's score (0..1), or `fallback` (default 0.0) for an incomplete
evaluation, whose reason is logged (`rubricflow.rewards`) and whose index is listed in
`incomplete`, since the trainer needs a number for every sample.

The rubric is a registered one, named by the `rubric` query parameter (`id`, or
`id@version`), else by the server's `reward_rubric` setting. Any token may ask (submitters
and up), as for the other scoring routes; the batch is bounded by `max_evaluate_targets`.
Nothing is stored.
"""

from __future__ import annotations

import logging
from typing import Annotated

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from rubricflow.errors import ConfigurationError
from rubricflow.results import Evaluation, Target
from rubricflow.server.auth import AppDep, Submitter
from rubricflow.server.problems import PROBLEM_RESPONSES
from rubricflow.server.scoring import check_batch_size, evaluate_each, registered_rubric
from rubricflow.server.settings import ServerSettings

__all__ = ["RewardRequest", "RewardResponse", "router"]

logger = logging.getLogger("rubricflow.rewards")

router = APIRouter(
    tags=["rewards"],
    responses={k: PROBLEM_RESPONSES[k] for k in (403, 404, 413, 422)},
)


class RewardRequest(BaseModel):
    """OpenRLHF's remote reward model request."""

    model_config = ConfigDict(extra="ignore")

    query: list[str] = Field(description="Each sample's prompt and response as one string")
    prompts: list[str] | None = Field(
        default=None, description="Each sample's prompt (a prefix of its query)"
    )
    labels: list[str | None] | None = Field(
        default=None, description="Each sample's reference answer"
    )


class RewardResponse(BaseModel):
    """One reward per query, in order; `scores` repeats them (newer OpenRLHF reads it)."""

    rewards: list[float]
    scores: list[float]
    incomplete: list[int] = Field(
        default_factory=list, description="Indices whose evaluation was incomplete"
    )


def _targets(body: RewardRequest) -> list[Target]:
    count = len(body.query)
    for name, column in (("prompts", body.prompts), ("labels", body.labels)):
        if column is not None and len(column) != count:
            raise ConfigurationError(
                f"`{name}` has {len(column)} entries for {count} queries; give one per query"
            )
    targets = []
    for index, query in enumerate(body.query):
        prompt = body.prompts[index] if body.prompts is not None else None
        response = query[len(prompt) :] if prompt and query.startswith(prompt) else query
        label = body.labels[index] if body.labels is not None else None
        targets.append(Target(content=response, query=prompt, reference=label))
    return targets


@router.post(
    "/get_reward",
    response_model=RewardResponse,
    summary="Rewards for a batch of samples (OpenRLHF remote reward model)",
)
async def get_reward(
    body: RewardRequest,
    request: Request,
    principal: Submitter,
    application: AppDep,
    rubric: Annotated[
        str | None,
        Query(description="The registered rubric: id or id@version", max_length=402),
    ] = None,
    fallback: Annotated[float, Query(description="The reward of an incomplete evaluation")] = 0.0,
) -> RewardResponse:
    settings: ServerSettings = request.app.state.settings
    name = rubric or settings.reward_rubric
    if not name:
        raise ConfigurationError(
            "name the rubric: POST /get_reward?rubric=ID (or id@version), or start the "
            "server with the reward_rubric setting"
        )
    check_batch_size(len(body.query), settings)
    chosen = await registered_rubric(application, name)
    targets = _targets(body)
    found: list[Evaluation | None] = [None] * len(targets)
    stream = evaluate_each(application, settings, chosen, targets)
    try:
        async for index, done in stream:
            found[index] = done
    finally:
        await stream.aclose()
    rewards: list[float] = []
    incomplete: list[int] = []
    for index, evaluation in enumerate(found):
        if evaluation is None or evaluation.verdict == "incomplete":
            incomplete.append(index)
            unscored = (
                [
                    f"{r.criterion_id}: {r.notes or r.status}"
                    for r in evaluation.criteria
                    if not r.scored
                ]
                if evaluation is not None
                else ["not evaluated"]
            )
            logger.warning(
                "reward %d for rubric %s is the fallback %s: %s",
                index,
                chosen.id,
                fallback,
                "; ".join(unscored),
            )
            rewards.append(fallback)
        else:
            rewards.append(evaluation.score)
    return RewardResponse(rewards=rewards, scores=list(rewards), incomplete=incomplete)
