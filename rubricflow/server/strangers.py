"""Rubric documents over HTTP are data from strangers.

A rubric that arrives in a request (to register, lint or evaluate inline) may not read
files (`schema_ref`), may not name code to import (`module:function` checks no plugin
registered) and may not name a judge (`python:` specs); the server's configuration alone
chooses the judge. Each refusal is a `RubricValidationError` naming the field, which the
API answers with a 422 problem. A rubric read back from the store is scored as it is
stored, with imports off: a `module:function` check an admin registered from the CLI
reports an error over HTTP instead of running.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rubricflow.errors import Problem, RubricValidationError
from rubricflow.formats.document import parse_rubric_text
from rubricflow.formats.loader import LoadedFile, load_document
from rubricflow.model import Rubric
from rubricflow.plugins import PluginRegistry
from rubricflow.validation import refuse_over_budget_templates
from rubricflow.validation import untrusted_problems as _untrusted_problems

__all__ = ["load_untrusted", "refuse_untrusted", "untrusted_problems"]

_WHY = "rubrics sent over HTTP are data"


def untrusted_problems(rubric: Rubric, plugins: PluginRegistry) -> list[Problem]:
    """What `rubric` asks for that a stranger may not: a file, code, or a judge."""
    return _untrusted_problems(rubric, plugins, why=_WHY, host="the server")


def refuse_untrusted(
    rubrics: Sequence[Rubric], plugins: PluginRegistry, source: str = "<request>"
) -> None:
    """Raise a `RubricValidationError` naming every field a stranger's rubric may not
    use (prefixed with the rubric's id when there are several)."""
    problems: list[Problem] = []
    for rubric in rubrics:
        found = untrusted_problems(rubric, plugins)
        if len(rubrics) > 1:
            found = [Problem(f"{rubric.id}: {p.path}", p.message) for p in found]
        problems.extend(found)
    if problems:
        raise RubricValidationError(problems, source)


def load_untrusted(
    text: str,
    *,
    format: str | None,
    plugins: PluginRegistry,
    source: str = "<request>",
) -> LoadedFile:
    """Load every rubric of a document sent as text (YAML or JSON, any format) as a
    stranger's: no file is read (`schema_ref` is refused while loading, in every format),
    and the loaded rubrics are held to `refuse_untrusted` and their templates to their
    render budget (`refuse_over_budget_templates`). It blocks: call it in a thread."""
    document: Any = parse_rubric_text(text, source)
    loaded = load_document(
        document, format=format, source=source, plugins=plugins, schema_refs="refuse"
    )
    refuse_untrusted(loaded.rubrics, plugins, source)
    refuse_over_budget_templates(loaded.rubrics, source)
    return loaded
