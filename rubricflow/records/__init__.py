"""The domain records the store hands back, as plain values below it: the HTTP wire
models and the faces name them without importing the store, so a column change is not
an API change. The store's modules re-export them under their old names."""

from rubricflow.records.artifacts import (
    Artifact,
    ArtifactEvent,
    ArtifactType,
    EvaluationBrief,
    ReviewPolicy,
    RubricBinding,
    SubmissionOutcome,
)
from rubricflow.records.evaluations import CriterionPassRate, JudgeUsage
from rubricflow.records.rubrics import RegisteredRubric, RubricVersionInfo
from rubricflow.records.tokens import ROLES, ApiToken, IssuedToken
from rubricflow.records.webhooks import DeliveryAttempt, WebhookDelivery, WebhookSubscription

__all__ = [
    "ROLES",
    "ApiToken",
    "Artifact",
    "ArtifactEvent",
    "ArtifactType",
    "CriterionPassRate",
    "DeliveryAttempt",
    "EvaluationBrief",
    "IssuedToken",
    "JudgeUsage",
    "RegisteredRubric",
    "ReviewPolicy",
    "RubricBinding",
    "RubricVersionInfo",
    "SubmissionOutcome",
    "WebhookDelivery",
    "WebhookSubscription",
]
