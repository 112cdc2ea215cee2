"""The artifact records, kept importable here for the store's own modules: they live in
`rubricflow.records.artifacts`, below the store, so the wire models and the faces name
them without importing the store."""

from rubricflow.records.artifacts import (
    KEEP,
    SYSTEM_ACTOR,
    Artifact,
    ArtifactEvent,
    ArtifactType,
    Change,
    Keep,
    NewArtifact,
    ReviewPolicy,
    RubricBinding,
    Submitting,
    content_hash,
)

__all__ = [
    "KEEP",
    "SYSTEM_ACTOR",
    "Artifact",
    "ArtifactEvent",
    "ArtifactType",
    "Change",
    "Keep",
    "NewArtifact",
    "ReviewPolicy",
    "RubricBinding",
    "Submitting",
    "content_hash",
]
