"""The native rubricflow format: a YAML/JSON document that maps one-to-one onto `Rubric`.

A document is one rubric, or `{rubrics: [...]}` holding several. A criterion's
`scoring.schema_ref` is read relative to the rubric file (inside its folder, unless the
loader's `schema_refs=` allows more) and inlined as `scoring.schema`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from rubricflow.errors import Problem, RubricLoadError, RubricValidationError
from rubricflow.formats.base import ImportResult, LoadContext
from rubricflow.formats.document import parse_text, read_regular_file
from rubricflow.model import Rubric, parse_rubric

__all__ = [
    "NativeFormat",
    "dump_rubric",
    "dump_rubrics",
    "dump_stored_rubric",
    "stored_rubric_document",
]


class NativeFormat:
    name = "native"
    description = "rubricflow's own format (YAML or JSON), one rubric or `rubrics: [...]`"

    def detect(self, document: Any) -> float:
        if not isinstance(document, Mapping):
            return 0.0
        schema = document.get("$schema")
        if isinstance(schema, str) and "rubricflow" in schema:
            return 1.0
        items = document.get("rubrics")
        if isinstance(items, list) and items and "criteria" not in document:
            return 0.85 if all(_looks_native(item) for item in items) else 0.0
        if _looks_native(document):
            return 0.85
        # a native rubric with a mistake (a missing id, say) should get native errors,
        # not "matches no format", as long as nothing marks it as another system's
        return 0.55 if _plain_criteria(document) else 0.0

    def load(self, document: Any, context: LoadContext) -> ImportResult:
        source = context.source
        if isinstance(document, Mapping) and "rubrics" in document and "criteria" not in document:
            items = document["rubrics"]
            problems = [
                Problem(
                    str(key), "unknown field next to `rubrics`; remove it or move it into a rubric"
                )
                for key in document
                if key not in ("rubrics", "$schema")
            ]
            if not isinstance(items, list) or not items:
                problems.insert(0, Problem("rubrics", "expected a non-empty list of rubrics"))
            if problems:
                raise RubricValidationError(problems, source)
            rubrics = [
                _load_one(item, context, prefix=f"rubrics[{index}]")
                for index, item in enumerate(items)
            ]
            seen: dict[tuple[str, str], int] = {}
            for index, rubric in enumerate(rubrics):
                key = (rubric.id, rubric.version)
                if key in seen:
                    raise RubricValidationError(
                        [
                            Problem(
                                f"rubrics[{index}].id",
                                f"rubric {rubric.id!r} version {rubric.version} appears twice "
                                f"(also rubrics[{seen[key]}]); remove one or bump its version",
                            )
                        ],
                        source,
                    )
                seen[key] = index
            return ImportResult(rubrics)
        return ImportResult([_load_one(document, context, prefix="")])


_FOREIGN_CRITERION_KEYS = frozenset(
    {"scoring_method", "requirement", "expected_outcome", "outcome"}
)
_FOREIGN_RUBRIC_KEYS = frozenset(
    {"hybrid_metrics", "domain", "evalcases", "tests", "model_type", "sections", "rubric"}
)


def _plain_criteria(item: Mapping[str, Any]) -> bool:
    criteria = item.get("criteria")
    return (
        isinstance(criteria, list)
        and bool(criteria)
        and not _FOREIGN_RUBRIC_KEYS & set(item)
        and all(isinstance(c, Mapping) and not _FOREIGN_CRITERION_KEYS & set(c) for c in criteria)
    )


def _looks_native(item: Any) -> bool:
    if not isinstance(item, Mapping):
        return False
    criteria = item.get("criteria")
    if not isinstance(criteria, list):
        return False
    foreign = {"scoring_method", "requirement", "expected_outcome", "outcome"}
    return all(
        isinstance(c, Mapping) and "id" in c and not foreign & set(c) for c in criteria
    ) and ("id" in item)


def _load_one(document: Any, context: LoadContext, prefix: str) -> Rubric:
    source = context.source
    data = _inline_schema_refs(document, context, prefix)
    try:
        return parse_rubric(data, source)
    except RubricValidationError as error:
        if not prefix:
            raise
        raise RubricValidationError(
            [
                Problem(f"{prefix}.{p.path}" if p.path else prefix, p.message)
                for p in error.problems
            ],
            source,
        ) from None


def _inline_schema_refs(document: Any, context: LoadContext, prefix: str) -> Any:
    if not isinstance(document, Mapping) or not isinstance(document.get("criteria"), list):
        return document
    criteria = []
    problems = []
    for index, criterion in enumerate(document["criteria"]):
        scoring = criterion.get("scoring") if isinstance(criterion, Mapping) else None
        ref = scoring.get("schema_ref") if isinstance(scoring, Mapping) else None
        if isinstance(ref, str) and ref and scoring is not None and scoring.get("schema") is None:
            where = f"{prefix + '.' if prefix else ''}criteria[{index}].scoring.schema_ref"
            try:
                schema = read_schema_ref(ref, context)
            except ValueError as error:
                problems.append(Problem(where, str(error)))
            else:
                criterion = {**criterion, "scoring": {**scoring, "schema": schema}}
        criteria.append(criterion)
    if problems:
        raise RubricValidationError(problems, context.source)
    return {**document, "criteria": criteria}


def read_schema_ref(ref: str, context: LoadContext) -> Any:
    """Read the JSON Schema file `ref` names, relative to the rubric file's folder
    (`context.base_dir`).

    Under the load's `SchemaRefPolicy` (`context.schema_refs`): by default the file
    must resolve inside `base_dir` (absolute paths, `../` and links leading out are
    refused, and a rubric with no folder reads nothing); `refuse` reads no file at all.
    The file passes the rubric file's guards (regular file, size cap, nesting and alias
    budgets), and a parse error gives its position only: the referenced file may be one
    the rubric's author cannot otherwise read, so its lines are never quoted back.
    Every failure is a `ValueError` with the message for the problem list.
    """
    policy, base_dir = context.schema_refs, context.base_dir
    if policy == "refuse":
        raise ValueError(
            "schema_ref is not allowed here (a rubric from this source may not read files); "
            "inline the JSON Schema as `schema` instead"
        )
    if "\0" in ref:
        raise ValueError(f"cannot read schema file {ref!r}: the path holds a NUL character")
    path = Path(ref)
    if policy == "inside":
        if base_dir is None:
            raise ValueError(
                "schema_ref names a file, but this rubric was not read from a file, so there "
                "is no folder to read it from; inline the JSON Schema as `schema` instead"
            )
        root = base_dir.resolve()
        resolved = (root / path).resolve()
        if not resolved.is_relative_to(root):
            raise ValueError(
                f"schema_ref {ref!r} points outside the rubric file's folder; put the schema "
                "file next to the rubric (or in a folder below it), or load with "
                "schema_refs='anywhere' to allow it"
            )
        path = resolved
    elif not path.is_absolute():
        path = (base_dir or Path.cwd()) / path
    shown = str(path)
    raw = read_regular_file(
        path,
        lambda reason: ValueError(
            f"cannot read schema file {shown!r}: {reason} (schema_ref is a path relative "
            "to the rubric file)"
        ),
        what="JSON Schema file (.json, .yaml or .yml)",
    )
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError(f"schema file {shown!r} is not UTF-8 text") from None
    try:
        schema = parse_text(text, shown, suffix=path.suffix)
    except RubricLoadError as error:
        raise ValueError(
            f"schema file {shown!r} is not valid JSON/YAML: {_unquoted(error.detail)}"
        ) from None
    if not isinstance(schema, Mapping):
        raise ValueError(
            f"schema file {shown!r} does not hold a JSON Schema object (a mapping); "
            "point schema_ref at a JSON Schema file"
        )
    return schema


_POSITION = re.compile(r"\bline (\d+), column (\d+)")


def _unquoted(detail: str) -> str:
    """A parse error of a referenced file without any of the file's text: syntax errors
    keep their position only (PyYAML and JSON messages may quote keys, tags or lines)."""
    if not detail.startswith("malformed"):
        return detail  # the nesting, alias and surrogate messages quote nothing
    kind = "JSON" if detail.startswith("malformed JSON") else "YAML"
    position = _POSITION.search(detail)
    where = f" at line {position[1]}, column {position[2]}" if position else ""
    return f"malformed {kind}{where}; fix the schema file (its text is not shown)"


def dump_rubric(rubric: Rubric, fmt: str = "yaml") -> str:
    """The native document for `rubric`, as YAML or JSON text."""
    return _dump(rubric.to_dict(), fmt)


def dump_rubrics(rubrics: list[Rubric], fmt: str = "yaml") -> str:
    """One rubric as a plain document, several as `{rubrics: [...]}`."""
    if len(rubrics) == 1:
        return dump_rubric(rubrics[0], fmt)
    return _dump({"rubrics": [rubric.to_dict() for rubric in rubrics]}, fmt)


def stored_rubric_document(rubric: Rubric) -> dict[str, Any]:
    """The native document of a rubric looked up in a registry: it always names its id,
    name and version (the plain document leaves out fields at their defaults, version
    1.0.0 among them, and a registry lookup must say which version it shows)."""
    document: dict[str, Any] = {"id": rubric.id, "name": rubric.name, "version": rubric.version}
    document.update(rubric.to_dict())
    return document


def dump_stored_rubric(rubric: Rubric, fmt: str = "yaml") -> str:
    """`stored_rubric_document` as YAML or JSON text."""
    return _dump(stored_rubric_document(rubric), fmt)


# characters JSON may carry raw but a YAML reader (which also reads .json files) rejects
# or folds as line breaks; written as \u escapes they mean the same in both
_NOT_YAML_PRINTABLE = re.compile("[\x7f-\x9f\u2028\u2029\ud800-\udfff\ufffe\uffff]")


_YAML_LINE_BREAKS = re.compile("[\x85\u2028\u2029]")


class _Dumper(yaml.SafeDumper):
    """SafeDumper that double-quotes (so escapes) text holding YAML's extra line breaks:
    PyYAML would write them raw in a plain or single-quoted scalar, where a reader folds
    them into spaces."""


def _represent_text(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
    if _YAML_LINE_BREAKS.search(data):
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style='"')
    return dumper.represent_str(data)


_Dumper.add_representer(str, _represent_text)


def _dump(data: Any, fmt: str) -> str:
    if fmt == "json":
        text = json.dumps(data, indent=2, ensure_ascii=False)
        return _NOT_YAML_PRINTABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
