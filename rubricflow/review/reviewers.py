"""Several reviewers per artifact (`ReviewPolicy.reviewers`): each person's `approve` or
`reject` on an artifact waiting for people is a vote (the `vote` trigger, in its history)
until the votes settle it.

The votes settle an artifact once there are `reviewers` of them and one decision has a
strict majority (all of them, for two reviewers), or when a reviewer the type names as a
lead decides; a tie stays open until a further reviewer breaks it (a third reviewer a 1-1
split). Until then the artifact stays in
review, waiting: never in a state it cannot leave (a person may still `override`, and every
further vote may settle it). A reviewer decides once per routing.

Votes are blind: while the artifact is unsettled, the history shows that a vote was cast
but not what it said, and the artifact's `last_reason` only counts the votes.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from rubricflow.review.routing import AUDIT_PREFIX
from rubricflow.store.artifact_models import Artifact, ArtifactEvent, ReviewPolicy

__all__ = [
    "HIDDEN_VOTE",
    "VOTE",
    "Vote",
    "blind",
    "hide_vote",
    "in_blind_audit",
    "needs_votes",
    "settle",
    "summary",
    "vote_reason",
    "votes_of",
]

VOTE = "vote"
#: what a later reviewer reads in place of an earlier reviewer's vote
HIDDEN_VOTE = "a reviewer decided (hidden until the artifact is settled)"
_MARK = re.compile(r"^\[(approve|reject)(, lead)?\] ?")
# the events that send an artifact to people: votes counted after the last of them
_ROUTED = frozenset({"await_approval"})


@dataclass(frozen=True)
class Vote:
    """One reviewer's decision: `approve` or `reject`."""

    actor: str
    decision: str
    reason: str
    lead: bool = False


def vote_reason(vote: Vote) -> str:
    """How a vote is written in the history: `[approve] reason`, `[reject, lead] reason`."""
    return f"[{vote.decision}{', lead' if vote.lead else ''}] {vote.reason}"


def votes_of(events: Sequence[ArtifactEvent], revision: int) -> list[Vote]:
    """The votes cast on `revision` since it was last sent to people, oldest first."""
    votes: list[Vote] = []
    for event in events:
        if event.revision != revision:
            continue
        if event.trigger in _ROUTED:
            votes = []
        elif event.trigger == VOTE:
            found = _MARK.match(event.reason or "")
            if found is not None:
                reason = (event.reason or "")[found.end() :]
                votes.append(Vote(event.actor, found.group(1), reason, bool(found.group(2))))
    return votes


def settle(votes: Sequence[Vote], needed: int) -> str | None:
    """The decision `votes` settle on, or None while they do not."""
    leads = [vote for vote in votes if vote.lead]
    if leads:
        return leads[-1].decision
    if len(votes) < needed:
        return None
    counts = Counter(vote.decision for vote in votes).most_common()
    if len(counts) == 1 or counts[0][1] > counts[1][1]:
        return counts[0][0]
    return None  # a tie: one more reviewer breaks it


def summary(votes: Sequence[Vote], decision: str) -> str:
    """Why the votes settled the artifact, naming each reviewer's decision."""
    lead = next((v for v in reversed(votes) if v.lead), None)
    each = ", ".join(f"{v.actor}: {v.decision}" for v in votes)
    if lead is not None:
        return f"{decision}, settled by lead reviewer {lead.actor} ({each})"
    agreeing = sum(v.decision == decision for v in votes)
    return f"{decision} by {agreeing} of {len(votes)} reviewers ({each})"


def needs_votes(policy: ReviewPolicy, artifact: Artifact, actor: str) -> bool:
    """Whether a person's decision on `artifact` is a vote: it waits for people, and its
    type wants several reviewers or names leads."""
    return artifact.awaiting_approval and (policy.reviewers > 1 or actor in policy.leads)


def blind(
    events: list[ArtifactEvent], artifact: Artifact, *, viewer: str | None = None
) -> list[ArtifactEvent]:
    """`events` with the votes on the artifact's pending decision hidden, except from a
    `viewer` who has cast one of them (blind until they decide)."""
    if not artifact.awaiting_approval:
        return events
    votes = _pending_votes(events, artifact.revision)
    if viewer is not None and any(vote.actor == viewer for vote in votes):
        return events
    pending = {id(v) for v in votes}
    return [
        event.model_copy(update={"reason": HIDDEN_VOTE}) if id(event) in pending else event
        for event in events
    ]


def hide_vote(event: ArtifactEvent) -> ArtifactEvent:
    """`event`, its reason hidden when it is a vote (for live streams, which cannot tell
    whether the decision it belongs to is still open)."""
    return event.model_copy(update={"reason": HIDDEN_VOTE}) if event.trigger == VOTE else event


def in_blind_audit(events: Sequence[ArtifactEvent], artifact: Artifact) -> bool:
    """Whether the artifact waits for people on a blind audit (`routing.AUDIT_PREFIX`) of
    its current revision: then nobody deciding it is shown the machine's verdict."""
    if not artifact.awaiting_approval:
        return False
    routed = [e for e in events if e.revision == artifact.revision and e.trigger in _ROUTED]
    return bool(routed) and (routed[-1].reason or "").startswith(f"{AUDIT_PREFIX}:")


def _pending_votes(events: Sequence[ArtifactEvent], revision: int) -> list[ArtifactEvent]:
    pending: list[ArtifactEvent] = []
    for event in events:
        if event.revision != revision:
            continue
        if event.trigger in _ROUTED:
            pending = []
        elif event.trigger == VOTE:
            pending.append(event)
    return pending
