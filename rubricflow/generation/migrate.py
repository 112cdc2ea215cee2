"""Upgrade an old rubric file to the current native format, saying what changed.

"Old" is any file rubricflow reads that is not already a current native document:
OpenRubricRL's files (the `migrate` its docs promise but never shipped), the other
importers' formats, and native documents written with fields at their defaults, keys
in another order or an older `$schema` URL. The native format has one version so far
(`native@1`); `--to native@1` names it so a later version can be asked for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rubricflow.errors import Problem, RubricflowError
from rubricflow.formats.document import read_document
from rubricflow.formats.loader import FormatRegistry, load_document
from rubricflow.formats.native import dump_rubrics
from rubricflow.model import Rubric

__all__ = ["NATIVE_VERSION", "Migration", "migrate_file", "parse_target"]

#: the native format's version: the only one there is so far
NATIVE_VERSION = 1
_MAX_CHANGES = 200


@dataclass
class Migration:
    """A file read in `source_format` as `rubrics`, with `changes` (one line per field
    path that is new, gone or different in the native document) and the importer's
    `warnings`."""

    path: str
    source_format: str
    rubrics: list[Rubric]
    changes: list[str] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.changes)

    def text(self, fmt: str = "yaml") -> str:
        return dump_rubrics(self.rubrics, fmt)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "source_format": self.source_format,
            "target": f"native@{NATIVE_VERSION}",
            "changes": self.changes,
            "warnings": [w.to_dict() for w in self.warnings],
            "rubrics": [f"{r.id}@{r.version}" for r in self.rubrics],
        }


def parse_target(target: str) -> int:
    """The native version `target` (`native` or `native@N`) asks for; refuses others."""
    name, _, version = target.partition("@")
    if name != "native":
        raise RubricflowError(f"cannot migrate to {target!r}; the target is native[@VERSION]")
    if not version:
        return NATIVE_VERSION
    if version != str(NATIVE_VERSION):
        raise RubricflowError(
            f"native format version {version!r} does not exist; the current one is "
            f"{NATIVE_VERSION} (--to native@{NATIVE_VERSION})"
        )
    return NATIVE_VERSION


def _flatten(value: Any, path: str, into: dict[str, Any]) -> None:
    if isinstance(value, Mapping) and value:
        for key, item in value.items():
            _flatten(item, f"{path}.{key}" if path else str(key), into)
    elif isinstance(value, list | tuple) and value:
        for index, item in enumerate(value):
            _flatten(item, f"{path}[{index}]", into)
    else:
        into[path or "$"] = value


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def document_changes(before: Any, after: Any, complete: Any = None) -> list[str]:
    """Field paths added (+), removed (-) or changed (~) from `before` to `after`;
    `complete` (the document with every default written out) tells a value left out
    because it is the default from one that is gone."""
    old: dict[str, Any] = {}
    new: dict[str, Any] = {}
    defaults: dict[str, Any] = {}
    _flatten(before, "", old)
    _flatten(after, "", new)
    _flatten(complete, "", defaults)
    changes: list[str] = []
    for path in sorted(old.keys() | new.keys()):
        if path not in new and path in defaults and defaults[path] == old[path]:
            changes.append(f"- {path} (was {_shown(old[path])}: the default, left out)")
        elif path not in new:
            changes.append(f"- {path} (was {_shown(old[path])})")
        elif path not in old:
            changes.append(f"+ {path}: {_shown(new[path])}")
        elif old[path] != new[path]:
            changes.append(f"~ {path}: {_shown(old[path])} -> {_shown(new[path])}")
    if len(changes) > _MAX_CHANGES:
        hidden = len(changes) - _MAX_CHANGES
        changes = [*changes[:_MAX_CHANGES], f"... and {hidden} more"]
    return changes


def migrate_file(
    path: str | Path,
    *,
    format: str | None = None,
    to: str = "native",
    plugins: FormatRegistry | None = None,
) -> Migration:
    """Read `path` in any format (detected unless `format` says) and upgrade it to the
    native format; raises `RubricLoadError`/`RubricValidationError` for a broken file."""
    parse_target(to)
    document = read_document(path)
    loaded = load_document(
        document,
        format=format,
        source=str(path),
        base_dir=Path(path).resolve().parent,
        plugins=plugins,
    )
    full = [r.model_dump(mode="json", by_alias=True) for r in loaded.rubrics]
    if len(loaded.rubrics) == 1:
        after: Any = loaded.rubrics[0].to_dict()
        complete: Any = full[0]
    else:
        after = {"rubrics": [rubric.to_dict() for rubric in loaded.rubrics]}
        complete = {"rubrics": full}
    before = document
    if isinstance(before, Mapping) and "$schema" in before:
        before = {k: v for k, v in before.items() if k != "$schema"}
    return Migration(
        path=str(path),
        source_format=loaded.format,
        rubrics=loaded.rubrics,
        changes=document_changes(before, after, complete),
        warnings=list(loaded.warnings),
    )
