"""The artifact state machine, built on `transitions`.

States and named triggers (DESIGN.md); the edges cover dataknobs' set and fix its
defects: a review that cannot finish goes back to `pending_review` (`abort_review`),
resubmitting from `needs_revision` works, and `revise` starts a new revision in `draft`
while the old revision is recorded as `superseded`. `await_approval` records a passing
review of a type that requires a human's approval (the artifact stays `in_review`).
`supersede` retires an artifact another artifact replaces (dataknobs' edges from `draft`,
`needs_revision` and `approved`); a superseded artifact can only be archived.

`SYSTEM_TRIGGERS` are fired by rubricflow's reviews, never by a person; `human_triggers`
filters them out of what a person is told they can do.
"""

from __future__ import annotations

from typing import Literal, get_args

from transitions import Machine, MachineError

from rubricflow.errors import IllegalTransitionError

__all__ = [
    "EDGES",
    "FINAL_STATES",
    "STATES",
    "SYSTEM_TRIGGERS",
    "TRIGGERS",
    "ArtifactState",
    "Lifecycle",
    "human_triggers",
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
]
STATES: tuple[str, ...] = get_args(ArtifactState)
FINAL_STATES = frozenset({"archived"})

# trigger -> (sources, destination)
EDGES: dict[str, tuple[tuple[str, ...], str]] = {
    "submit": (("draft", "needs_revision"), "pending_review"),
    "start_review": (("pending_review",), "in_review"),
    "approve": (("in_review",), "approved"),
    "request_revision": (("in_review",), "needs_revision"),
    "reject": (("in_review", "needs_revision"), "rejected"),
    "abort_review": (("in_review",), "pending_review"),
    "revise": (("draft", "needs_revision", "approved", "rejected"), "draft"),
    "withdraw": (("pending_review",), "draft"),
    "archive": (
        ("draft", "pending_review", "approved", "needs_revision", "rejected", "superseded"),
        "archived",
    ),
    "override": (("needs_revision", "rejected", "in_review"), "approved"),
    # a passing review of a type that `requires_approval`: the artifact stays in review,
    # released by the reviewer and waiting for a named human's `approve` (or `reject`)
    "await_approval": (("in_review",), "in_review"),
    # another artifact replaces this one (`ArtifactRegistry.supersede(..., by=OTHER)`)
    "supersede": (("draft", "needs_revision", "approved"), "superseded"),
}
TRIGGERS: tuple[str, ...] = tuple(EDGES)

# fired by a review (a worker or an inline review), never by a person or a bot's call
SYSTEM_TRIGGERS = frozenset({"start_review", "request_revision", "abort_review", "await_approval"})


def human_triggers(triggers: list[str]) -> list[str]:
    """`triggers` without the ones only rubricflow's reviews fire, order kept."""
    return [trigger for trigger in triggers if trigger not in SYSTEM_TRIGGERS]


class _Cursor:
    """The model `transitions` moves: one per check, so one machine serves every artifact."""

    state: str


class Lifecycle:
    """Which trigger takes an artifact from which state to which."""

    def __init__(self) -> None:
        self._machine = Machine(
            model=None,
            states=list(STATES),
            transitions=[
                {"trigger": trigger, "source": list(sources), "dest": dest}
                for trigger, (sources, dest) in EDGES.items()
            ],
            initial="draft",
            auto_transitions=False,
            ignore_invalid_triggers=False,
        )
        self._memo: dict[tuple[str, str], str] = {}

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
        cursor = _Cursor()
        self._machine.add_model(cursor, initial=state)
        try:
            getattr(cursor, trigger)()
        except MachineError:
            raise IllegalTransitionError(
                artifact_id, state, trigger, self.allowed_triggers(state)
            ) from None
        finally:
            self._machine.remove_model(cursor)
        self._memo[(state, trigger)] = cursor.state
        return cursor.state
