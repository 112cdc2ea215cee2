"""The artifact state machine, built on `transitions`.

States and named triggers (DESIGN.md); the edges cover dataknobs' set and fix its
defects: a review that cannot finish goes back to `pending_review` (`abort_review`),
resubmitting from `needs_revision` works, and `revise` starts a new revision in `draft`
while the old revision is recorded as `superseded`. `await_approval` records a passing
review of a type that requires a human's approval (the artifact stays `in_review`).
`supersede` retires an artifact another artifact replaces (dataknobs' edges from `draft`,
`needs_revision` and `approved`); a superseded artifact can only be archived.

A review that fails `max_failures` times in a row (default 3; `RUBRICFLOW_MAX_REVIEW_FAILURES`)
is dead-lettered (`dead_letter`, to `dead_lettered`) instead of going back to the queue, so
a poison artifact or rubric never loops through leases forever; it stays out of the queue
until a person fires `retry` (back to `pending_review`, the count reset), revises or
archives it. The count (`failures`) rises with each failed attempt (an error, an incomplete
evaluation, a lease that expired) and is reset by every transition but `start_review` and a
worker's shutdown `abort_review` (`Lifecycle.failures_after`).

`SYSTEM_TRIGGERS` are fired by rubricflow's reviews, never by a person; `human_triggers`
filters them out of what a person is told they can do.

This module alone decides transitions: every state an artifact (or one of its revisions)
is written in comes from `Lifecycle` — a new artifact's and a new revision's state, the
state of a revision another replaces, each trigger's destination — and so do the guards
beyond the edges (`Lifecycle.decide`: a person's `approve` waits for a passing review;
`Lifecycle.claim_triggers`: what a worker's claim fires). The review service asks; the
store writes what it is given.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal, Protocol, get_args

from transitions import Machine, MachineError

from rubricflow.errors import ConfigurationError, IllegalTransitionError, ReviewError
from rubricflow.settings import current, env_name

__all__ = [
    "CREATE",
    "DEAD_LETTERED",
    "DEFAULT_MAX_FAILURES",
    "EDGES",
    "FINAL_STATES",
    "MAX_FAILURES_ENV",
    "STATES",
    "SYSTEM_TRIGGERS",
    "TRIGGERS",
    "ArtifactState",
    "Lifecycle",
    "Standing",
    "human_triggers",
    "max_failures_setting",
]

ArtifactState = Literal[
    "draft",
    "pending_review",
    "in_review",
    "approved",
    "needs_revision",
    "rejected",
    "superseded",
    "archived",
    "dead_lettered",
]
STATES: tuple[str, ...] = get_args(ArtifactState)
# where an artifact whose reviews kept failing waits for a person (`retry`)
DEAD_LETTERED = "dead_lettered"
FINAL_STATES = frozenset({"archived"})

# trigger -> (sources, destination)
EDGES: dict[str, tuple[tuple[str, ...], str]] = {
    "submit": (("draft", "needs_revision"), "pending_review"),
    "start_review": (("pending_review",), "in_review"),
    "approve": (("in_review",), "approved"),
    "request_revision": (("in_review",), "needs_revision"),
    "reject": (("in_review", "needs_revision"), "rejected"),
    "abort_review": (("in_review",), "pending_review"),
    "revise": (("draft", "needs_revision", "approved", "rejected", "dead_lettered"), "draft"),
    "withdraw": (("pending_review",), "draft"),
    "archive": (
        (
            "draft",
            "pending_review",
            "approved",
            "needs_revision",
            "rejected",
            "superseded",
            "dead_lettered",
        ),
        "archived",
    ),
    "override": (("needs_revision", "rejected", "in_review"), "approved"),
    # a passing review of a type that `requires_approval`: the artifact stays in review,
    # released by the reviewer and waiting for a named human's `approve` (or `reject`)
    "await_approval": (("in_review",), "in_review"),
    # another artifact replaces this one (`ArtifactRegistry.supersede(..., by=OTHER)`)
    "supersede": (("draft", "needs_revision", "approved"), "superseded"),
    # a review failed `max_failures` times in a row: out of the queue until a person acts
    "dead_letter": (("in_review",), "dead_lettered"),
    # a person sends a dead-lettered artifact back to the queue, its failures forgiven
    "retry": (("dead_lettered",), "pending_review"),
    # one reviewer's decision on an artifact that needs several (`ReviewPolicy.reviewers`):
    # recorded, the artifact still waiting for the others (review/reviewers.py)
    "vote": (("in_review",), "in_review"),
}
TRIGGERS: tuple[str, ...] = tuple(EDGES)

# the event that records a new artifact, in the machine's initial state (not a trigger)
CREATE = "create"

# A revision is `current` until `revise` stores a new one and it is `superseded`.
REVISION_STATES = ("current", "superseded")
REVISION_EDGES: dict[str, tuple[tuple[str, ...], str]] = {"revise": (("current",), "superseded")}

# a person's triggers that wait until a running review has passed (the artifact awaits
# approval): fired while the review runs they are refused, not applied
AFTER_REVIEW_PASSED = frozenset({"approve", "vote"})
# the review's outcome that leaves the artifact waiting for a human's approval
AWAITS_APPROVAL = frozenset({"await_approval", "vote"})

# fired by a review (a worker or an inline review), never by a person or a bot's call
# (`vote` is a person's, but fired for them by their `approve` or `reject`)
SYSTEM_TRIGGERS = frozenset(
    {"start_review", "request_revision", "abort_review", "await_approval", "dead_letter", "vote"}
)

# how many failed reviews in a row dead-letter an artifact, unless configured
DEFAULT_MAX_FAILURES = 3
MAX_FAILURES_ENV = env_name("max_review_failures")
# the triggers that leave the count of failures in a row as it is (any other resets it):
# claiming a review, and a worker handing a review back unfinished when it stops
# (`abort_review` fired with `failed=False`)
_KEEP_FAILURES = frozenset({"start_review", "abort_review"})


def max_failures_setting(value: int | None = None) -> int:
    """`value`, else `Settings.max_review_failures` (default 3): how many failed reviews
    in a row dead-letter an artifact (at least 1)."""
    if value is None:
        return current().max_review_failures
    if value < 1:
        raise ConfigurationError(
            "max_failures must be at least 1 (how many failed reviews in a row dead-letter "
            f"an artifact); got {value}"
        )
    return value


def human_triggers(triggers: list[str]) -> list[str]:
    """`triggers` without the ones only rubricflow's reviews fire, order kept."""
    return [trigger for trigger in triggers if trigger not in SYSTEM_TRIGGERS]


class Standing(Protocol):
    """What the lifecycle needs to know of an artifact (a stored `Artifact` is one)."""

    @property
    def id(self) -> str: ...

    @property
    def status(self) -> str: ...

    @property
    def awaiting_approval(self) -> bool: ...

    @property
    def lease_expires_at(self) -> datetime | None: ...

    @property
    def failures(self) -> int: ...


class _Cursor:
    """The model `transitions` moves: one per check, so one machine serves every artifact."""

    state: str


def _machine(
    states: tuple[str, ...], edges: dict[str, tuple[tuple[str, ...], str]], initial: str
) -> Machine:
    return Machine(
        model=None,
        states=list(states),
        transitions=[
            {"trigger": trigger, "source": list(sources), "dest": dest}
            for trigger, (sources, dest) in edges.items()
        ],
        initial=initial,
        auto_transitions=False,
        ignore_invalid_triggers=False,
    )


def _fire(machine: Machine, state: str, trigger: str) -> str:
    """The state `trigger` moves a model in `state` to (`MachineError` when it may not)."""
    cursor = _Cursor()
    machine.add_model(cursor, initial=state)
    try:
        getattr(cursor, trigger)()
    finally:
        machine.remove_model(cursor)
    return cursor.state


class Lifecycle:
    """Which trigger takes an artifact from which state to which."""

    def __init__(self, *, max_failures: int | None = None) -> None:
        #: failed reviews in a row that dead-letter an artifact
        self.max_failures = max_failures_setting(max_failures)
        self._machine = _machine(STATES, EDGES, initial="draft")
        self._memo: dict[tuple[str, str], str] = {}
        revisions = _machine(REVISION_STATES, REVISION_EDGES, initial="current")
        #: the state a new artifact is created in (the machine's initial state)
        self.initial_state: str = str(self._machine.initial)
        #: the state a new revision is stored in
        self.new_revision_state: str = str(revisions.initial)
        #: the state `revise` leaves the revision it replaces in
        self.retired_revision_state: str = _fire(revisions, self.new_revision_state, "revise")
        # where a worker finds artifacts to claim: queued for a review, or in one
        self._queued = EDGES["start_review"][0][0]
        self._reviewing = EDGES["start_review"][1]

    @property
    def claimable_states(self) -> tuple[str, str]:
        """(the state a review starts from, the state a review runs in): a worker claims
        artifacts in the first whose time has come, and stranded ones in the second."""
        return self._queued, self._reviewing

    def allows(self, state: str, trigger: str) -> bool:
        """Whether the machine takes `trigger` in `state` (guards aside)."""
        try:
            self.next_state("", state, trigger)
        except IllegalTransitionError:
            return False
        return True

    def under_review(self, artifact: Standing) -> bool:
        """A review is running on it: in review and not (yet) waiting for a human."""
        return artifact.status == self._reviewing and not artifact.awaiting_approval

    def stranded(self, artifact: Standing, now: datetime) -> bool:
        """Its review's lease has expired: the reviewer is gone, another may take over."""
        expires = artifact.lease_expires_at
        return self.under_review(artifact) and expires is not None and expires < now

    def awaits_approval(self, trigger: str) -> bool:
        """Whether `trigger` leaves the artifact waiting for a human's approval (every
        other transition ends any wait)."""
        return trigger in AWAITS_APPROVAL

    def decide(self, artifact: Standing, trigger: str, *, by_review: bool = False) -> str:
        """The state `trigger` moves `artifact` to, with every guard applied: the edge
        (else `IllegalTransitionError`), and, for a person (`by_review=False`), that a
        trigger such as `approve` waits until the running review has passed (else
        `ReviewError`)."""
        dest = self.next_state(artifact.id, artifact.status, trigger)
        if not by_review and trigger in AFTER_REVIEW_PASSED and self.under_review(artifact):
            raise ReviewError(
                f"artifact {artifact.id!r} is still being reviewed; wait for the review, or "
                "use `override` to approve whatever the rubrics say"
            )
        return dest

    def check_reviewable(self, artifact: Standing) -> None:
        """A review may finish only on an artifact under review, as claimed; anything else
        is refused as a `start_review` its state does not allow."""
        if not self.under_review(artifact):
            raise IllegalTransitionError(
                artifact.id, artifact.status, "start_review", self.allowed_triggers(artifact.status)
            )

    def claim_triggers(self, artifact: Standing, now: datetime) -> tuple[str, ...]:
        """What a worker claiming `artifact` fires, in order: `start_review` for one that
        is queued; `abort_review` then `start_review` to take over a stranded review (or
        `dead_letter` alone, when that lease was its last allowed failure); nothing when it
        cannot be claimed."""
        fired: tuple[str, ...] = ()
        state = artifact.status
        if self.stranded(artifact, now):  # a failed attempt: its reviewer is gone
            failed = self.failure_trigger(artifact)
            fired = (failed,)
            state = self.next_state(artifact.id, state, failed)
        if not self.allows(state, "start_review"):
            return fired  # the takeover alone (no claim follows)
        return (*fired, "start_review")

    def failure_trigger(self, artifact: Standing) -> str:
        """What a failed review of `artifact` fires: `abort_review` (back to the queue, to
        be retried), or `dead_letter` when this failure is its `max_failures`-th in a row."""
        if artifact.failures + 1 >= self.max_failures:
            return "dead_letter"
        return "abort_review"

    def failures_after(self, artifact: Standing, trigger: str, *, failed: bool = False) -> int:
        """The count of failed reviews in a row once `trigger` is applied: one more for a
        failure (`failed`), unchanged by a claim or a worker handing a review back, and
        reset by anything else (a finished review, a person's decision, a new revision)."""
        if failed:
            return artifact.failures + 1
        if trigger in _KEEP_FAILURES:
            return artifact.failures
        return 0

    def open_to_people(self, artifact: Standing) -> list[str]:
        """The triggers a person can fire on `artifact` now, guards included."""
        allowed = human_triggers(self.allowed_triggers(artifact.status))
        if self.under_review(artifact):
            allowed = [t for t in allowed if t not in AFTER_REVIEW_PASSED]
        return allowed

    def allowed_triggers(self, state: str) -> list[str]:
        """The triggers the machine accepts in `state`, in a stable order."""
        allowed = set(self._machine.get_triggers(state))
        return [trigger for trigger in TRIGGERS if trigger in allowed]

    def next_state(self, artifact_id: str, state: str, trigger: str) -> str:
        """The state `trigger` leads to from `state`, or `IllegalTransitionError`.

        The machine is static, so each (state, trigger) answer is remembered."""
        known = self._memo.get((state, trigger))
        if known is not None:
            return known
        if trigger not in EDGES or state not in STATES:
            raise IllegalTransitionError(artifact_id, state, trigger, self.allowed_triggers(state))
        try:
            dest = _fire(self._machine, state, trigger)
        except MachineError:
            raise IllegalTransitionError(
                artifact_id, state, trigger, self.allowed_triggers(state)
            ) from None
        self._memo[(state, trigger)] = dest
        return dest
