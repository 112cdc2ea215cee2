"""An artifact type's content schema: strangers' data, checked when it is set and run
guarded at submission.

When a type is set (`check_content_schema`), its schema must keep the content bounds, be
a valid JSON Schema, and refer only within itself: a `$ref` that is not a fragment
(`file:///etc/passwd`, `http://…`, `other.json#/x`) is refused, since resolving it would
read a file or fetch a URL at every submission.

At submission (`schema_violations`) the schema runs with a reference registry that
retrieves nothing, so a type stored before the refusal existed never reads or fetches
either; its regular expressions (`pattern`, `patternProperties`) run on the bounded
engine rubric checks use (`rubricflow.scorers.patterns`: RE2, or `regex` with a time
limit), and `schema_violations_off_loop` runs the whole check in a worker thread, so a
slow schema never stalls the event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

from jsonschema import FormatChecker, SchemaError
from referencing import Registry
from referencing.exceptions import Unresolvable

from rubricflow.content_bounds import check_content_bounds
from rubricflow.errors import ConfigurationError
from rubricflow.scorers.patterns import RegexLimitError
from rubricflow.scorers.schema import bounded_validator_class
from rubricflow.store.artifacts import ArtifactType

__all__ = [
    "MAX_VIOLATIONS",
    "check_content_schema",
    "schema_violations",
    "schema_violations_off_loop",
]

#: the violations reported of one submission
MAX_VIOLATIONS = 20
_REF_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")
# keywords whose values are data, not schemas: a "$ref" inside is not a reference
_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})
#: resolves references inside the schema itself (and the dialects' own metaschemas,
#: which jsonschema adds); anything else is unresolvable, never read nor fetched
_NO_RETRIEVAL: Registry[Any] = Registry()


def check_content_schema(artifact_type: ArtifactType) -> None:
    """Refuse (`ConfigurationError`, naming the type and where) a content schema beyond the
    content bounds, one that is not a valid JSON Schema, or one with a non-fragment
    reference."""
    schema = artifact_type.content_schema
    if schema is None:
        return
    whose = f"the content schema of artifact type {artifact_type.name!r}"
    check_content_bounds(schema, whose)
    dialect = schema.get("$schema")
    if dialect is not None and not isinstance(dialect, str):
        raise ConfigurationError(
            f"{whose}: `$schema` must be the URI of a JSON Schema dialect; write e.g. "
            "https://json-schema.org/draft/2020-12/schema or leave it out"
        )
    for where, ref in _references(schema):
        if not ref.startswith("#"):
            raise ConfigurationError(
                f"{whose} refers outside itself at $/{where}: {ref!r}; a content schema may "
                "refer only within itself (`#/$defs/name`): nothing is read or fetched, so "
                "put the referred schema under `$defs` and refer to it there"
            )
    try:
        bounded_validator_class(schema).check_schema(schema)
    except SchemaError as error:
        where = "/".join(str(p) for p in error.absolute_path)
        raise ConfigurationError(
            f"{whose} is not a valid JSON Schema: at $/{where}: {error.message}"
        ) from None


def _references(schema: Any) -> Iterator[tuple[str, str]]:
    """Each reference keyword's (path, value) in `schema`, data keywords' values aside."""
    stack: list[tuple[Any, str]] = [(schema, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if key in _REF_KEYWORDS and isinstance(value, str):
                    yield f"{path}{key}", value
                elif key not in _DATA_KEYWORDS:
                    stack.append((value, f"{path}{key}/"))
        elif isinstance(node, list):
            stack.extend((item, f"{path}{index}/") for index, item in enumerate(node))


def schema_violations(artifact_type: ArtifactType, content: Any) -> list[str]:
    """Each violation of the type's content schema (at most `MAX_VIOLATIONS`), as
    `$/path: message`; a reference outside the schema or a pattern past its time limit
    is reported as a violation too, never resolved nor left running."""
    schema = artifact_type.content_schema
    if schema is None:
        return []
    try:
        validator = bounded_validator_class(schema)(
            schema, format_checker=FormatChecker(), registry=_NO_RETRIEVAL
        )
        errors = sorted(validator.iter_errors(content), key=lambda e: list(e.absolute_path))
    except Unresolvable as error:
        return [
            f"$/: the {artifact_type.name!r} type's content schema refers to "
            f"{getattr(error, 'ref', str(error))!r}, outside itself; such references are "
            f"never read nor fetched: set the type again with the referred schema under "
            "`$defs` (`rubricflow types set`)"
        ]
    except RegexLimitError as error:
        return [f"$/: the {artifact_type.name!r} type's content schema: {error}"]
    except RecursionError:
        return [
            f"$/: the {artifact_type.name!r} type's content schema cannot be checked: it "
            "refers to itself without end; fix the type's schema"
        ]
    return [
        f"$/{'/'.join(str(p) for p in e.absolute_path)}: {e.message}"
        for e in errors[:MAX_VIOLATIONS]
    ]


async def schema_violations_off_loop(artifact_type: ArtifactType, content: Any) -> list[str]:
    """`schema_violations` in a worker thread (at once when the type has no schema)."""
    if artifact_type.content_schema is None:
        return []
    return await asyncio.to_thread(schema_violations, artifact_type, content)
