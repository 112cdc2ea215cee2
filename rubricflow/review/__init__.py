"""The artifact review lifecycle: a persisted state machine, the review service, workers."""

from rubricflow.review.lifecycle import EDGES, STATES, TRIGGERS, Lifecycle
from rubricflow.review.service import ArtifactRegistry, ReviewOutcome
from rubricflow.store.artifacts import Artifact, ArtifactEvent, ArtifactType, RubricBinding

__all__ = [
    "EDGES",
    "STATES",
    "TRIGGERS",
    "Artifact",
    "ArtifactEvent",
    "ArtifactRegistry",
    "ArtifactType",
    "Lifecycle",
    "ReviewOutcome",
    "RubricBinding",
]
