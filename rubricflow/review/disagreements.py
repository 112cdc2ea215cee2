"""Where the people deciding an artifact disagreed, and how it was resolved.

A round is one sending of a revision to people (`await_approval`): the votes cast in it
(`vote`, each reviewer's own decision) and the person's decision that ended it, if any.
A round is a disagreement when its people did not all say the same: the votes split, or
someone who did not vote decided otherwise (an override of a reject, say). A settled one
names its resolution (the deciding event: approve, reject or override, by whom and why,
and how: by majority, by a lead, or by a person over the votes); an open one is a split
still waiting for a further reviewer's vote, or a lead's, or an override.

The open splits' votes are what blind review hides: `ReviewerDisagreement.blinded()`
gives the copy a person who has not voted on it may see (who voted, not what they said).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from rubricflow.review.reviewers import VOTE, votes_of
from rubricflow.review.service import ArtifactRegistry
from rubricflow.store.artifact_models import SYSTEM_ACTOR, Artifact, ArtifactEvent

__all__ = ["CastVote", "ReviewerDisagreement", "reviewer_disagreements", "rounds_of"]

# a person's decision that ends a round, and the label it says
_SETTLING = {"approve": "approve", "override": "approve", "reject": "reject"}
#: what a blinded vote's decision and reason read
HIDDEN = "hidden"


@dataclass(frozen=True)
class CastVote:
    """One reviewer's vote in a round."""

    actor: str
    decision: str
    reason: str
    lead: bool
    at: datetime

    def to_dict(self) -> dict[str, Any]:
        return {
            "actor": self.actor,
            "decision": self.decision,
            "reason": self.reason,
            "lead": self.lead,
            "at": self.at.isoformat(),
        }


@dataclass(frozen=True)
class ReviewerDisagreement:
    """One round in which the people disagreed: open (`resolution` None) or resolved."""

    artifact_id: str
    title: str | None
    type_name: str
    revision: int
    votes: tuple[CastVote, ...]
    #: the decision that ended the round (approve, reject, override), or None while open
    resolution: str | None = None
    resolved_by: str | None = None
    resolved_reason: str | None = None
    resolved_at: datetime | None = None
    #: how: "majority", "lead", "override", "decision" (a person who did not vote), "open"
    how: str = "open"
    #: the artifact's version now (to decide on an open one)
    version: int = 0

    @property
    def open(self) -> bool:
        return self.resolution is None

    @property
    def voters(self) -> tuple[str, ...]:
        return tuple(vote.actor for vote in self.votes)

    def blinded(self) -> ReviewerDisagreement:
        """This round as a person who has not voted in it may see it while it is open:
        who voted and when, not what they decided or why."""
        if not self.open:
            return self
        hidden = tuple(replace(v, decision=HIDDEN, reason="", lead=False) for v in self.votes)
        return replace(self, votes=hidden)

    def seen_by(self, viewer: str, leads: Sequence[str] = ()) -> ReviewerDisagreement:
        """This round as `viewer` may see it: an open split's votes only once they have
        voted in it, or when they are one of the type's `leads` (who settle splits)."""
        if not self.open or viewer in self.voters or viewer in leads:
            return self
        return self.blinded()

    def to_dict(self) -> dict[str, Any]:
        return {
            "artifact_id": self.artifact_id,
            "title": self.title,
            "type": self.type_name,
            "revision": self.revision,
            "open": self.open,
            "votes": [vote.to_dict() for vote in self.votes],
            "resolution": self.resolution,
            "resolved_by": self.resolved_by,
            "resolved_reason": self.resolved_reason,
            "resolved_at": self.resolved_at.isoformat() if self.resolved_at else None,
            "how": self.how,
            "version": self.version,
        }


def _vote(event: ArtifactEvent) -> CastVote | None:
    found = votes_of([event], event.revision)
    if not found:
        return None
    vote = found[0]
    return CastVote(vote.actor, vote.decision, vote.reason, vote.lead, event.created_at)


def _how(votes: Sequence[CastVote], decider: ArtifactEvent) -> str:
    if decider.trigger == "override":
        return "override"
    if any(vote.actor == decider.actor for vote in votes):
        return "lead" if any(v.lead and v.actor == decider.actor for v in votes) else "majority"
    return "decision"


def rounds_of(events: Sequence[ArtifactEvent], artifact: Artifact) -> list[ReviewerDisagreement]:
    """The rounds of `artifact`'s history (`events`, oldest first, unblinded) in which
    people disagreed, oldest first; the last is open when the artifact still waits on a
    split."""
    found: list[ReviewerDisagreement] = []
    votes: list[CastVote] = []
    base = ReviewerDisagreement(
        artifact.id, artifact.title, artifact.type, artifact.revision, (), version=artifact.version
    )
    for event in events:
        if event.trigger == "await_approval":
            votes = []
        elif event.actor == SYSTEM_ACTOR:
            continue
        elif event.trigger == VOTE:
            vote = _vote(event)
            if vote is not None:
                votes.append(vote)
        elif event.trigger in _SETTLING and votes:
            said = {vote.decision for vote in votes} | {_SETTLING[event.trigger]}
            if len(said) > 1:
                found.append(
                    replace(
                        base,
                        revision=event.revision,
                        votes=tuple(votes),
                        resolution=event.trigger,
                        resolved_by=event.actor,
                        resolved_reason=event.reason,
                        resolved_at=event.created_at,
                        how=_how(votes, event),
                    )
                )
            votes = []
    if artifact.awaiting_approval and len({vote.decision for vote in votes}) > 1:
        found.append(replace(base, votes=tuple(votes)))
    return found


async def reviewer_disagreements(
    registry: ArtifactRegistry,
    *,
    type_names: Sequence[str] | None = None,
    limit: int = 100,
    scan: int = 500,
) -> list[ReviewerDisagreement]:
    """The disagreements among reviewers on artifacts of `type_names` (every type: None),
    open splits first, then the most recently resolved; `limit` at most, read from the
    `scan` artifacts voted on most recently. Unblinded: a face blinds the open ones for
    a person who has not voted in them (`ReviewerDisagreement.blinded`)."""
    repository = registry.repository
    ids = await repository.with_trigger(VOTE, type_names=type_names, limit=scan)
    found: list[ReviewerDisagreement] = []
    for artifact, history in await repository.with_histories(ids):
        found.extend(rounds_of(history, artifact))

    def when(item: ReviewerDisagreement) -> str:
        moment = item.resolved_at or (item.votes[-1].at if item.votes else None)
        return moment.isoformat() if moment is not None else ""

    opened = sorted((d for d in found if d.open), key=when, reverse=True)
    closed = sorted((d for d in found if not d.open), key=when, reverse=True)
    return (opened + closed)[:limit]
