"""Agreement between the people who decide a type's artifacts (`ReviewPolicy.reviewers`):
read from the audit trail, per type and per criterion.

A unit is one settled round of people's decisions on an artifact's revision: the votes
cast since it was sent to people (`vote`, each reviewer's own decision) and a decision
that ended it (`approve`, `override` or `reject` by a person who did not vote: the
decision the votes settled on is the last voter's and is not counted twice), in order.
A round still open is not read (its votes are hidden). Decisions rubricflow makes itself
are never counted. Per criterion, a reviewer's label is the judge's pass or fail on it,
flipped where that reviewer marked it judged wrong (`judge_corrections`, against their
own vote or decision).
"""

from __future__ import annotations

import collections
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rubricflow.calibration.human_agreement import HumanAgreement, human_agreement
from rubricflow.results import Evaluation
from rubricflow.review.reviewers import VOTE, votes_of
from rubricflow.review.service import ArtifactRegistry
from rubricflow.store.artifact_models import SYSTEM_ACTOR, ArtifactEvent
from rubricflow.store.labels import JudgeLabels

__all__ = ["TypeAgreement", "decision_rounds", "reviewer_agreement"]

# a person's decision that settles a round, and the label it says
_SETTLING = {"approve": "approve", "override": "approve", "reject": "reject"}
_PAGE = 500


@dataclass(frozen=True)
class TypeAgreement:
    """People's agreement on one type's artifacts, overall and per rubric criterion
    (`RUBRIC:CRITERION`)."""

    type_name: str
    overall: HumanAgreement
    criteria: dict[str, HumanAgreement] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type_name,
            "overall": self.overall.to_dict(),
            "criteria": {key: value.to_dict() for key, value in self.criteria.items()},
        }


def _label(event: ArtifactEvent) -> str | None:
    if event.trigger == VOTE:
        found = votes_of([event], event.revision)
        return found[0].decision if found else None
    return _SETTLING.get(event.trigger)


def decision_rounds(events: Sequence[ArtifactEvent]) -> list[list[ArtifactEvent]]:
    """The settled rounds of two or more people's decisions in an artifact's history."""
    rounds: list[list[ArtifactEvent]] = []
    current: list[ArtifactEvent] = []
    for event in events:
        if event.trigger == "await_approval":
            current = []
        elif event.actor == SYSTEM_ACTOR:
            continue
        elif event.trigger == VOTE:
            current.append(event)
        elif event.trigger in _SETTLING:
            if all(vote.actor != event.actor for vote in current):  # not a settled vote
                current.append(event)
            if len(current) >= 2:
                rounds.append(current)
            current = []
    return rounds


def _latest(evaluations: Sequence[Evaluation]) -> list[Evaluation]:
    """The newest evaluation per rubric (`evaluations` come newest first)."""
    seen: dict[str, Evaluation] = {}
    for evaluation in evaluations:
        seen.setdefault(evaluation.rubric_id, evaluation)
    return list(seen.values())


def _marked_at(round_: list[ArtifactEvent], index: int) -> tuple[int, ...]:
    """The events a reviewer's marks on this decision are stored against: its own, and,
    for the vote that settled the round (its last member, a vote), the settled decision
    written right after it (the dashboard marks the decision it finds last)."""
    event = round_[index]
    if index == len(round_) - 1 and event.trigger == VOTE:
        return (event.seq, event.seq + 1)
    return (event.seq,)


async def _criterion_units(
    registry: ArtifactRegistry,
    labels: JudgeLabels,
    artifact_id: str,
    rounds: list[list[ArtifactEvent]],
    into: dict[str, list[list[str]]],
) -> None:
    wrong = await labels.corrections(artifact_id)
    for round_ in rounds:
        evaluations = _latest(await registry.evaluations(artifact_id, round_[0].revision))
        for evaluation in evaluations:
            for result in evaluation.criteria:
                if result.passed is None:
                    continue
                key = f"{evaluation.rubric_id}:{result.criterion_id}"
                unit = [
                    "pass"
                    if result.passed
                    != any(
                        (seq, evaluation.id, result.criterion_id) in wrong
                        for seq in _marked_at(round_, index)
                    )
                    else "fail"
                    for index in range(len(round_))
                ]
                into.setdefault(key, []).append(unit)


async def reviewer_agreement(
    registry: ArtifactRegistry,
    type_name: str,
    *,
    resamples: int = 1000,
    seed: int = 0,
) -> TypeAgreement:
    """How far the people deciding artifacts of `type_name` agree, with 95% intervals:
    Cohen's kappa between the two reviewers of a type of two, else Krippendorff's alpha."""
    reviewers = (await registry.get_type(type_name)).review_policy.reviewers
    labels = JudgeLabels(registry.store.database)
    overall: list[list[str]] = []
    criteria: dict[str, list[list[str]]] = {}
    offset = 0
    while True:
        page = await registry.list_artifacts(type_name=type_name, limit=_PAGE, offset=offset)
        for artifact in page:
            rounds = decision_rounds(await registry.history(artifact.id))
            if not rounds:
                continue
            for round_ in rounds:
                overall.append([label for e in round_ if (label := _label(e)) is not None])
            await _criterion_units(registry, labels, artifact.id, rounds, criteria)
        if len(page) < _PAGE:
            break
        offset += _PAGE
    options: dict[str, Any] = {"resamples": resamples, "seed": seed, "reviewers": reviewers}
    return TypeAgreement(
        type_name,
        _agreement(overall, **options),
        {key: _agreement(units, **options) for key, units in sorted(criteria.items())},
    )


#: agreements computed lately, by their units and options: the bootstrap (a thousand
#: resamples) is the costly part, and the same decisions give the same figures, so a
#: screen read again before anyone decides more does not resample again
_computed: collections.OrderedDict[str, HumanAgreement] = collections.OrderedDict()
_COMPUTED_KEPT = 256


def _agreement(units: list[list[str]], **options: Any) -> HumanAgreement:
    key = hashlib.sha256(
        json.dumps([units, sorted(options.items())], default=str).encode("utf-8")
    ).hexdigest()
    found = _computed.get(key)
    if found is None:
        found = human_agreement(units, **options)
        _computed[key] = found
        if len(_computed) > _COMPUTED_KEPT:
            _computed.popitem(last=False)
    else:
        _computed.move_to_end(key)
    return found
