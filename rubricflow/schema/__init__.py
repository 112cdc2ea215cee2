"""The published JSON Schema of the native rubric format.

`rubric.schema.json` in this folder is generated from the model; a test keeps it
identical. Regenerate with `rubricflow schema > rubricflow/schema/rubric.schema.json`.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from rubricflow.model import Rubric

__all__ = ["SCHEMA_ID", "published_schema", "rubric_json_schema"]

SCHEMA_ID = "https://rubricflow.dev/schema/rubric.schema.json"


def rubric_json_schema() -> dict[str, Any]:
    """The JSON Schema the `Rubric` model generates, with an id and title."""
    schema = Rubric.model_json_schema(by_alias=True, mode="validation")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        **schema,
        "title": "rubricflow rubric",
    }


def published_schema() -> dict[str, Any]:
    """The schema file shipped in the package."""
    text = resources.files(__package__).joinpath("rubric.schema.json").read_text("utf-8")
    result: dict[str, Any] = json.loads(text)
    return result
