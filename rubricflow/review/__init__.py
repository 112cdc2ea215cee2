"""The artifact review lifecycle: a persisted state machine, the review service, workers.

`ArtifactRegistry` is the public face; the parts it composes (`ArtifactCommands`,
`ArtifactSubmitter`, `ArtifactQueries`, `ReviewClaims`, `Reviewer`) are the application
core any front end can call; `Lifecycle` decides every transition."""

from rubricflow.review.claims import ReviewClaims
from rubricflow.review.commands import ArtifactCommands
from rubricflow.review.lifecycle import EDGES, STATES, TRIGGERS, Lifecycle
from rubricflow.review.queries import ArtifactQueries
from rubricflow.review.reviewing import Reviewer, ReviewOutcome
from rubricflow.review.service import ArtifactRegistry
from rubricflow.review.submission import ArtifactSubmitter
from rubricflow.store.artifact_models import (
    Artifact,
    ArtifactEvent,
    ArtifactType,
    ReviewPolicy,
    RubricBinding,
)

__all__ = [
    "EDGES",
    "STATES",
    "TRIGGERS",
    "Artifact",
    "ArtifactCommands",
    "ArtifactEvent",
    "ArtifactQueries",
    "ArtifactRegistry",
    "ArtifactSubmitter",
    "ArtifactType",
    "Lifecycle",
    "ReviewClaims",
    "ReviewOutcome",
    "ReviewPolicy",
    "Reviewer",
    "RubricBinding",
]
