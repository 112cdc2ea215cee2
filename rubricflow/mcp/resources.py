"""Rubrics as MCP resources: `rubric://ID` (the latest version) and
`rubric://ID@VERSION`, as the native document in JSON (add `?format=yaml` for YAML).

`resources/list` names every registered rubric at its latest version; the two URI
templates (`resources/templates/list`) name any of them and any stored version.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import parse_qs, unquote, urlsplit

from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    TextResourceContents,
)

from rubricflow.errors import RubricflowError
from rubricflow.formats.native import dump_stored_rubric
from rubricflow.tools.rubrics import registered_rubric

if TYPE_CHECKING:
    from rubricflow.application import Application

__all__ = ["SCHEME", "list_rubric_resources", "read_rubric_resource", "rubric_templates"]

SCHEME = "rubric"
_MIME = {"json": "application/json", "yaml": "application/yaml"}


def _count(criteria: int) -> str:
    return f"{criteria} criteri{'on' if criteria == 1 else 'a'}"


def rubric_uri(rubric_id: str, version: str | None = None) -> str:
    return f"{SCHEME}://{rubric_id}" + (f"@{version}" if version else "")


async def list_rubric_resources(application: Application) -> ListResourcesResult:
    """Every registered rubric, at its latest version."""
    rubrics = await application.rubrics.list_latest()
    return ListResourcesResult(
        resources=[
            Resource(
                uri=rubric_uri(rubric.id),
                name=rubric.id,
                title=rubric.name,
                description=f"{rubric.name} (version {rubric.version}): "
                + (rubric.description or _count(len(rubric.criteria))),
                mime_type=_MIME["json"],
            )
            for rubric in rubrics
        ]
    )


def rubric_templates() -> ListResourceTemplatesResult:
    return ListResourceTemplatesResult(
        resource_templates=[
            ResourceTemplate(
                uri_template=f"{SCHEME}://{{id}}",
                name="rubric",
                description="A registered rubric at its latest version, as its native "
                "document (JSON; add ?format=yaml for YAML)",
                mime_type=_MIME["json"],
            ),
            ResourceTemplate(
                uri_template=f"{SCHEME}://{{id}}@{{version}}",
                name="rubric-version",
                description="One stored version of a registered rubric, as its native "
                "document (JSON; add ?format=yaml for YAML)",
                mime_type=_MIME["json"],
            ),
        ]
    )


def _parse(uri: str) -> tuple[str, str]:
    """The `ID[@VERSION]` reference and the format a rubric URI names."""
    parts = urlsplit(uri)
    reference = unquote(parts.netloc + parts.path)
    if parts.scheme != SCHEME or not reference or "/" in reference:
        raise MCPError(
            INVALID_PARAMS,
            f"{uri!r} is not a rubric resource: use rubric://ID or rubric://ID@VERSION "
            "(resources/list names them)",
        )
    formats = parse_qs(parts.query).get("format", ["json"])
    fmt = formats[-1].lower()
    if fmt not in _MIME:
        raise MCPError(INVALID_PARAMS, f"format {fmt!r}: use ?format=json or ?format=yaml")
    return reference, fmt


async def read_rubric_resource(application: Application, uri: str) -> ReadResourceResult:
    """The native document of the rubric `uri` names; an unknown rubric or version is an
    invalid-params error naming what is stored."""
    reference, fmt = _parse(uri)
    try:
        rubric = await registered_rubric(application, reference)
    except RubricflowError as error:
        raise MCPError(INVALID_PARAMS, str(error), {"uri": uri}) from None
    return ReadResourceResult(
        contents=[
            TextResourceContents(
                uri=uri, mime_type=_MIME[fmt], text=dump_stored_rubric(rubric, fmt)
            )
        ]
    )
