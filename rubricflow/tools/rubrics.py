"""The rubric a tool call names: a registered one (`id` or `id@version`) or a document
given inline.

A tool call's arguments are written by a model, so an inline rubric is a stranger's
data, held to the HTTP API's rules (`Core.load_rubrics` with `trust="stranger"`): it reads no file
(`schema_ref`), names no code to import (a `module:function` no plugin registers) and
chooses no judge (`python:` specs); the host's configuration alone chooses the judge.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rubricflow.core import RubricText
from rubricflow.errors import ConfigurationError, NotFoundError
from rubricflow.model import Rubric

if TYPE_CHECKING:
    from rubricflow.application import Application

__all__ = ["inline_rubric", "parse_reference", "registered_rubric"]

_SOURCE = "<tool call>"


def parse_reference(reference: str) -> tuple[str, str | None]:
    """`id` or `id@version` as (id, version or None)."""
    rubric_id, at, version = reference.strip().partition("@")
    if not rubric_id or (at and not version):
        raise ConfigurationError(
            f"rubric reference {reference!r} must be ID or ID@VERSION (e.g. tone@1.2.0); "
            "call list_rubrics to see the registered ones"
        )
    return rubric_id, (version if at else None)


async def registered_rubric(application: Application, reference: str) -> Rubric:
    """The registered rubric `reference` names (the latest version, or the one given)."""
    rubric_id, version = parse_reference(reference)
    try:
        return await application.rubrics.get(rubric_id, version)
    except NotFoundError as error:
        raise NotFoundError(f"{error}; call list_rubrics to see the registered ones") from None


async def inline_rubric(
    application: Application, document: str, *, format: str | None, rubric_id: str | None
) -> Rubric:
    """The one rubric of an inline document (or the one named `rubric_id`), loaded as a
    stranger's (`Core.load_rubrics` with `trust="stranger"`: the refusals of every door),
    off the event loop (a large document must not hold up the host's other work)."""
    (loaded,) = await application.load_rubrics(
        [RubricText(document, _SOURCE)], format=format, trust="stranger"
    )
    rubrics = loaded.rubrics
    if rubric_id is not None:
        chosen = [r for r in rubrics if r.id == rubric_id]
        if not chosen:
            held = ", ".join(r.id for r in rubrics)
            raise NotFoundError(f"the document holds no rubric {rubric_id!r} (it holds: {held})")
        return chosen[0]
    if len(rubrics) > 1:
        held = ", ".join(r.id for r in rubrics)
        raise ConfigurationError(
            f"the document holds {len(rubrics)} rubrics ({held}); name one with `rubric_id`"
        )
    return rubrics[0]
