"""What the rubric registry hands back: a registration's outcome and a stored version's
facts. Plain values: no database in here."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from rubricflow.model import Rubric

__all__ = ["RegisteredRubric", "RubricVersionInfo"]


@dataclass(frozen=True)
class RegisteredRubric:
    """The outcome of registering one rubric: `created` is False for an identical
    re-register; `source_format` is the format it was read from."""

    rubric: Rubric
    created: bool
    source_format: str | None = None


@dataclass(frozen=True)
class RubricVersionInfo:
    """One stored version, as `history` lists it."""

    rubric_id: str
    version: str
    content_hash: str
    name: str
    target_type: str | None
    source_format: str | None
    created_at: datetime
    deleted: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.rubric_id,
            "version": self.version,
            "content_hash": self.content_hash,
            "name": self.name,
            "target_type": self.target_type,
            "source_format": self.source_format,
            "created_at": self.created_at.isoformat(),
            "deleted": self.deleted,
        }
