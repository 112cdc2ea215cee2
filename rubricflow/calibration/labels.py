"""Human labels: what each criterion can be labelled, and reading labelled examples.

A labelled example is a target (`content`, optional `id`, `query`, `reference`,
`metadata`) plus `labels`, the human's label per criterion id:

- binary criteria: "MET" / "UNMET" (any case) or true / false;
- criteria with levels: a level id of that criterion;
- band criteria (0..10 score ranges): "MET" / "UNMET" or true / false, meaning the
  score reaches the criterion's bar (bands are compared by pass/fail);
- null, or no entry: not labelled, so that criterion does not count for that example.

Every problem is a `CalibrationError` naming the file and line (or the example's index),
the field, and the fix.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from rubricflow.errors import ConfigurationError, RubricflowError
from rubricflow.formats.document import open_regular_file
from rubricflow.jsonl import bounded_lines, json_lines
from rubricflow.model import Criterion, Rubric
from rubricflow.results import Target
from rubricflow.targets import as_target

__all__ = [
    "CalibrationError",
    "LabelScale",
    "LabelledExample",
    "label_scale",
    "parse_examples",
    "read_labels",
]

MET, UNMET = "MET", "UNMET"
_EXAMPLE = '{"id": "a1", "content": "...", "labels": {"criterion-id": "MET"}}'


class CalibrationError(RubricflowError):
    """Labelled examples cannot be used for calibration (unreadable file, malformed JSON,
    a label for a criterion the rubric lacks, a label that is not valid for its
    criterion, no examples at all)."""


@dataclass(frozen=True)
class LabelScale:
    """How one criterion's decisions are compared: `compared` is what a label means
    (`verdict` MET/UNMET, `level` a level id, `pass/fail` whether a band score reaches
    the bar) and `labels` are the categories, lowest first (levels by score)."""

    criterion_id: str
    kind: Literal["binary", "levels", "bands"]
    compared: Literal["verdict", "level", "pass/fail"]
    labels: tuple[str, ...]

    @property
    def ordered(self) -> bool:
        """Levels are ordered categories, so weighted kappa applies to them."""
        return self.kind == "levels"

    def valid_values(self) -> str:
        if self.kind == "levels":
            return ", ".join(self.labels)
        return "MET, UNMET, true, false"

    def normalise(self, value: Any) -> str | None:
        """The category a human label names, or None when it names none."""
        if self.kind == "levels":
            return value if isinstance(value, str) and value in self.labels else None
        if isinstance(value, bool):
            return MET if value else UNMET
        if isinstance(value, str) and value.upper() in (MET, UNMET):
            return value.upper()
        return None


def label_scale(criterion: Criterion) -> LabelScale:
    kind = criterion.kind
    if kind == "levels":
        ranked = sorted(enumerate(criterion.levels), key=lambda item: (item[1].score, item[0]))
        return LabelScale(criterion.id, kind, "level", tuple(level.id for _, level in ranked))
    return LabelScale(
        criterion.id, kind, "verdict" if kind == "binary" else "pass/fail", (UNMET, MET)
    )


@dataclass(frozen=True)
class LabelledExample:
    """One target and its human labels (criterion id -> category of its `LabelScale`)."""

    target: Target
    labels: Mapping[str, str] = field(default_factory=dict)
    where: str = ""


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if _is_json(value) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_json(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def _labels(
    raw: Mapping[Any, Any], rubric: Rubric, scales: Mapping[str, LabelScale], where: str
) -> dict[str, str]:
    """The labels of one example as categories of their criteria's scales."""
    labels: dict[str, str] = {}
    for key, given in raw.items():
        scale = scales.get(str(key))
        if scale is None:
            raise CalibrationError(
                f"{where}, field `labels.{key}`: rubric {rubric.id!r} has no criterion "
                f"{str(key)!r}; use one of its criterion ids: {', '.join(scales)}"
            )
        if given is None:
            continue  # explicitly not labelled
        category = scale.normalise(given)
        if category is None:
            what = "level id" if scale.kind == "levels" else "label"
            raise CalibrationError(
                f"{where}, field `labels.{key}`: {_shown(given)} is not a valid {what} for "
                f"{scale.kind} criterion {scale.criterion_id!r}; use one of: "
                f"{scale.valid_values()} (or null for no label)"
            )
        labels[scale.criterion_id] = category
    return labels


def _parse(
    value: Any, rubric: Rubric, scales: Mapping[str, LabelScale], where: str
) -> LabelledExample:
    if isinstance(value, LabelledExample):  # checked again: it may be for another rubric
        return LabelledExample(
            value.target, _labels(value.labels, rubric, scales, value.where or where), value.where
        )
    if not isinstance(value, Mapping):
        raise CalibrationError(
            f"{where}: an example is a JSON object with `content` and `labels`, got "
            f"{type(value).__name__}; write it as {_EXAMPLE}"
        )
    if "labels" not in value:
        raise CalibrationError(
            f"{where}, field `labels`: missing; add the human labels, e.g. "
            f'"labels": {{"{rubric.criteria[0].id}": "MET"}}'
        )
    raw = value["labels"]
    if not isinstance(raw, Mapping):
        raise CalibrationError(
            f"{where}, field `labels`: expected an object mapping criterion ids to labels, "
            f'got {_shown(raw)}; write e.g. {{"{rubric.criteria[0].id}": "MET"}}'
        )
    labels = _labels(raw, rubric, scales, where)
    fields = {name: item for name, item in value.items() if name != "labels"}
    try:
        target = as_target(fields)
    except ConfigurationError as error:
        raise CalibrationError(f"{where}: {error}") from None
    return LabelledExample(target, labels, where)


def parse_examples(
    examples: Iterable[LabelledExample | Mapping[str, Any]], rubric: Rubric
) -> list[LabelledExample]:
    """Check labelled examples given as mappings (or `LabelledExample`s) against
    `rubric`; an example without an id gets `example-N` (N counts from 1)."""
    scales = {criterion.id: label_scale(criterion) for criterion in rubric.criteria}
    parsed: list[LabelledExample] = []
    for index, value in enumerate(examples):
        example = _parse(value, rubric, scales, f"examples[{index}]")
        if example.target.id is None:
            target = example.target.model_copy(update={"id": f"example-{index + 1}"})
            example = LabelledExample(target, example.labels, example.where)
        parsed.append(example)
    if not parsed:
        raise CalibrationError(f"no labelled examples given; give at least one, e.g. {_EXAMPLE}")
    return parsed


def _lines(path: Path, name: str) -> Iterator[str]:
    """The lines of a labels file: a regular file, each line within the line size cap."""

    def refuse(reason: str) -> CalibrationError:
        return CalibrationError(f"{name}: {reason}")

    try:
        with open_regular_file(path, refuse, what="JSONL labels file") as stream:
            yield from bounded_lines(stream, name, CalibrationError)
    except OSError as error:
        raise CalibrationError(f"{name}: cannot read: {error.strerror or error}") from None


def read_labels(source: str | Path, rubric: Rubric) -> list[LabelledExample]:
    """Labelled examples from a JSONL file (one JSON object per line; blank lines are
    skipped), checked against `rubric`. An example without an id gets `line-N`."""
    path = Path(source)
    name = str(source)
    if not path.exists() and not path.is_symlink():
        raise CalibrationError(f"{name}: no such file; check the path")
    scales = {criterion.id: label_scale(criterion) for criterion in rubric.criteria}
    examples: list[LabelledExample] = []
    hint = f"; write one JSON object per line, e.g. {_EXAMPLE}"
    for number, value in json_lines(_lines(path, name), name, CalibrationError, hint=hint):
        where = f"{name} line {number}"
        example = _parse(value, rubric, scales, where)
        if example.target.id is None:
            target = example.target.model_copy(update={"id": f"line-{number}"})
            example = LabelledExample(target, example.labels, where)
        examples.append(example)
    if not examples:
        raise CalibrationError(
            f"{name}: holds no labelled examples; write one JSON object per line, e.g. {_EXAMPLE}"
        )
    return examples
