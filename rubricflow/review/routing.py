"""Routing by uncertainty: whether a review's verdict stands (`auto`) or the artifact waits
for people (`human`), decided by the type's `ReviewPolicy` on the evaluations as stored,
with the reason written into the artifact's history.

A verdict goes to people when a criterion's confidence is below `route_confidence`, when
an evaluation's score is within `route_margin` of its threshold, when a judge panel split
on a criterion, or when a required criterion is uncertain (the last two only when a route
option is set). A share `audit_rate` of the verdicts that stand also goes to a reviewer,
blind to the machine's verdict; the draw is a hash of the artifact id, revision and
`audit_seed`, so it is the same on every run and every worker.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from rubricflow.results import CriterionResult, Evaluation
from rubricflow.store.artifact_models import ReviewPolicy

__all__ = [
    "AUDIT_PREFIX",
    "ESCALATION",
    "ROUTED_PREFIX",
    "Routing",
    "audit_draw",
    "escalations",
    "route",
    "unsure_criteria",
]

#: how the reason of a routed review begins (the history and the dashboard show it)
ROUTED_PREFIX = "routed to a reviewer"
#: how the reason of an audited review begins; it never names the machine's verdict
AUDIT_PREFIX = "audit"
#: the evaluation metadata key of a cascade: {"to": SPEC, "criteria": {id: why}}
ESCALATION = "escalation"


@dataclass(frozen=True)
class Routing:
    """Who decides: `auto` (the verdict stands) or `human`, and why; `audit` when the
    verdict would have stood and was drawn for a blind audit."""

    mode: Literal["auto", "human"]
    reason: str
    audit: bool = False


def _doubt(result: CriterionResult, policy: ReviewPolicy) -> str | None:
    """Why this criterion's result is too unsure to stand, or None."""
    confidence = result.confidence
    if confidence is None:
        return None
    bar = policy.route_confidence
    if bar is not None and confidence < bar:
        return f"confidence {confidence:.3g} < {bar:g} ({result.confidence_source or 'judge'})"
    if result.confidence_source == "panel" and confidence < 1.0:
        return f"the judge panel split (agreement {confidence:.3g})"
    if result.required and confidence < 1.0:
        return f"required criterion uncertain (confidence {confidence:.3g})"
    return None


def unsure_criteria(evaluation: Evaluation, policy: ReviewPolicy) -> dict[str, str]:
    """The criteria of `evaluation` the policy finds too unsure to stand, with why."""
    if not policy.routes:
        return {}
    found: dict[str, str] = {}
    for result in evaluation.criteria:
        doubt = _doubt(result, policy)
        if doubt is not None:
            found[result.criterion_id] = doubt
    return found


def _near_threshold(evaluation: Evaluation, policy: ReviewPolicy) -> str | None:
    band = policy.route_margin
    margin = evaluation.margin
    if band is None or margin is None or abs(margin) > band:
        return None
    return f"score within {band:g} of the threshold (margin {margin:+.3g})"


def audit_draw(artifact_id: str, revision: int, seed: int) -> float:
    """A number in [0, 1) fixed by the artifact, its revision and the seed."""
    digest = hashlib.sha256(f"{seed}\x00{artifact_id}\x00{revision}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def route(
    policy: ReviewPolicy,
    evaluations: Sequence[Evaluation],
    *,
    artifact_id: str,
    revision: int,
) -> Routing:
    """Whether the verdict of these evaluations stands, and why."""
    reasons: list[str] = []
    for evaluation in evaluations:
        name = f"{evaluation.rubric_id}@{evaluation.rubric_version}"
        near = _near_threshold(evaluation, policy) if policy.routes else None
        if near is not None:
            reasons.append(f"{name}: {near}")
        for criterion_id, doubt in unsure_criteria(evaluation, policy).items():
            reasons.append(f"{name} {criterion_id}: {doubt}")
    if reasons:
        return Routing("human", f"{ROUTED_PREFIX}: " + "; ".join(reasons))
    rate = policy.audit_rate
    if rate > 0 and audit_draw(artifact_id, revision, policy.audit_seed) < rate:
        return Routing(
            "human",
            f"{AUDIT_PREFIX}: drawn for a blind review (audit rate {rate:g}); decide without "
            "the machine's verdict",
            audit=True,
        )
    why = "confident" if policy.routes else "no routing rule"
    return Routing("auto", f"auto ({why})")


def escalations(evaluations: Sequence[Evaluation]) -> str:
    """What the cascade sent to the stronger judge in these evaluations, and why ("" when
    nothing was escalated): for the artifact's history."""
    parts = []
    for evaluation in evaluations:
        found = evaluation.metadata.get(ESCALATION)
        if not isinstance(found, dict):
            continue
        why = "; ".join(f"{cid} ({doubt})" for cid, doubt in dict(found["criteria"]).items())
        parts.append(
            f"escalated {evaluation.rubric_id}@{evaluation.rubric_version} {why} to {found['to']}"
        )
    return "; ".join(parts)
