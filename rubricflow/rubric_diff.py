"""What changed between two versions of a rubric: the rubric's own fields, and each
criterion added, removed, changed or moved, field by field.

A rubric owner reads it before shipping a version ("did only the wording change, or a
weight too?"), and the HTTP API serves it. The diff compares the whole documents with
every default filled in, so a threshold left at its default still shows its value
(`pass_threshold: 0.7 -> 0.9`, not "added").
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from rubricflow.model import Rubric

__all__ = ["CriterionChange", "FieldChange", "RubricDiff", "diff_rubrics"]

_MISSING: Any = object()


@dataclass(frozen=True)
class FieldChange:
    """One value that differs: `path` is dotted (`scale.max`, `levels[1].score`); a
    value that is absent on one side (at its default) is None there, with `added` or
    `removed` saying which side lacked it."""

    path: str
    before: Any
    after: Any
    kind: Literal["changed", "added", "removed"] = "changed"

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "kind": self.kind, "before": self.before, "after": self.after}

    def __str__(self) -> str:
        if self.kind == "added":
            return f"{self.path}: added {self.after!r}"
        if self.kind == "removed":
            return f"{self.path}: removed (was {self.before!r})"
        return f"{self.path}: {self.before!r} -> {self.after!r}"


@dataclass(frozen=True)
class CriterionChange:
    """A criterion that was added, removed or changed (its fields), matched by id."""

    criterion_id: str
    change: Literal["added", "removed", "changed"]
    fields: tuple[FieldChange, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "criterion_id": self.criterion_id,
            "change": self.change,
            "fields": [f.to_dict() for f in self.fields],
        }


@dataclass(frozen=True)
class RubricDiff:
    """Every difference between `before` and `after` (two versions of one rubric, or any
    two rubrics)."""

    rubric_id: str
    before_version: str
    after_version: str
    before_hash: str
    after_hash: str
    rubric_fields: tuple[FieldChange, ...]
    criteria: tuple[CriterionChange, ...]
    #: the criteria both sides hold, in a different order (order shows in reports)
    reordered: bool

    @property
    def identical(self) -> bool:
        """No difference at all: the same content hash."""
        return self.before_hash == self.after_hash

    @property
    def scoring_changed(self) -> bool:
        """Whether a change can move a score or a verdict: anything but names,
        descriptions, labels, indicators, examples and the criteria's order."""
        wording = ("name", "description", "label", "indicators", "examples", "tags", "metadata")

        def cosmetic(field: FieldChange) -> bool:
            last = field.path.rsplit(".", 1)[-1].split("[", 1)[0]
            return last in wording

        if any(not cosmetic(f) for f in self.rubric_fields if f.path != "version"):
            return True
        return any(
            c.change != "changed" or any(not cosmetic(f) for f in c.fields) for c in self.criteria
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "rubric_id": self.rubric_id,
            "before": {"version": self.before_version, "content_hash": self.before_hash},
            "after": {"version": self.after_version, "content_hash": self.after_hash},
            "identical": self.identical,
            "scoring_changed": self.scoring_changed,
            "reordered": self.reordered,
            "rubric_fields": [f.to_dict() for f in self.rubric_fields],
            "criteria": [c.to_dict() for c in self.criteria],
        }


def _flatten(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    """Leaf values of a document by dotted path; lists by index."""
    if isinstance(value, Mapping) and value:
        for key, item in value.items():
            yield from _flatten(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list) and value:
        for index, item in enumerate(value):
            yield from _flatten(item, f"{path}[{index}]")
    else:
        yield path, value


def _field_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> tuple[FieldChange, ...]:
    old, new = dict(_flatten(before, "")), dict(_flatten(after, ""))
    changes: list[FieldChange] = []
    for path in [*old, *(p for p in new if p not in old)]:
        a, b = old.get(path, _MISSING), new.get(path, _MISSING)
        if a is _MISSING:
            changes.append(FieldChange(path, None, b, "added"))
        elif b is _MISSING:
            changes.append(FieldChange(path, a, None, "removed"))
        elif a != b:
            changes.append(FieldChange(path, a, b))
    return tuple(changes)


def diff_rubrics(before: Rubric, after: Rubric) -> RubricDiff:
    """The differences from `before` to `after`, criteria matched by id."""
    old = before.model_dump(mode="json", by_alias=True)
    new = after.model_dump(mode="json", by_alias=True)
    old_criteria = {c["id"]: c for c in old.pop("criteria", [])}
    new_criteria = {c["id"]: c for c in new.pop("criteria", [])}
    # the identity of the rubric is reported on its own, not as a field change
    for document, rubric in ((old, before), (new, after)):
        document.pop("id", None)
        document["version"] = rubric.version
    criteria: list[CriterionChange] = []
    for criterion_id, document in old_criteria.items():
        if criterion_id not in new_criteria:
            criteria.append(CriterionChange(criterion_id, "removed"))
            continue
        fields = _field_changes(document, new_criteria[criterion_id])
        if fields:
            criteria.append(CriterionChange(criterion_id, "changed", fields))
    criteria.extend(
        CriterionChange(criterion_id, "added")
        for criterion_id in new_criteria
        if criterion_id not in old_criteria
    )
    shared_old = [c for c in old_criteria if c in new_criteria]
    shared_new = [c for c in new_criteria if c in old_criteria]
    return RubricDiff(
        rubric_id=after.id if after.id == before.id else f"{before.id} -> {after.id}",
        before_version=before.version,
        after_version=after.version,
        before_hash=before.content_hash,
        after_hash=after.content_hash,
        rubric_fields=_field_changes(old, new),
        criteria=tuple(criteria),
        reordered=shared_old != shared_new,
    )
