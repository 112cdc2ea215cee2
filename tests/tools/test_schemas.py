"""The tool definitions: valid JSON Schema (Draft 2020-12), in each provider's documented
shape, in the form OpenAI's strict mode accepts, and in agreement with the models the
dispatcher validates with."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from rubricflow.errors import ConfigurationError
from rubricflow.tools import (
    TOOL_NAMES,
    TOOLS,
    anthropic_tools,
    openai_responses_tools,
    openai_tools,
    parameters_schema,
)

#: OpenAI and Anthropic both take tool names matching this
NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
#: the keywords OpenAI's strict mode documents as supported
STRICT_KEYWORDS = {
    "type",
    "description",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "anyOf",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
}

#: arguments a model could send, one valid set per tool
VALID: dict[str, dict[str, Any]] = {
    "evaluate_text": {"content": "Thanks, please reply.", "rubric": "post@1.0.0"},
    "submit_for_review": {
        "artifact_type": "post",
        "content": "Hello, please",
        "metadata": [{"key": "channel", "value": "web"}],
    },
    "get_review": {"artifact_id": "a1"},
    "revise_artifact": {"artifact_id": "a1", "content": "Hello again, please"},
    "list_rubrics": {},
    "explain_rubric": {"rubric": "post"},
}


def objects(schema: Any) -> list[dict[str, Any]]:
    """Every object schema inside `schema`."""
    found: list[dict[str, Any]] = []
    if isinstance(schema, dict):
        if schema.get("type") == "object":
            found.append(schema)
        for value in schema.values():
            found.extend(objects(value))
    elif isinstance(schema, list):
        for item in schema:
            found.extend(objects(item))
    return found


def keywords(schema: Any) -> set[str]:
    """Every keyword used in `schema` (property names are not keywords)."""
    used: set[str] = set()
    if isinstance(schema, dict):
        for key, value in schema.items():
            used.add(key)
            if key == "properties":
                for sub in value.values():
                    used |= keywords(sub)
            else:
                used |= keywords(value)
    elif isinstance(schema, list):
        for item in schema:
            used |= keywords(item)
    return used


def strict_completion(schema: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """`given` as a strict-mode model sends it: every property present, null if unset,
    the default if it has one."""
    out = dict(given)
    for name, sub in schema["properties"].items():
        if name not in out:
            nullable = any(part.get("type") == "null" for part in sub.get("anyOf", []))
            default = re.search(r"\(default: (.+)\)$", sub.get("description", ""))
            out[name] = None if nullable else json.loads(default.group(1)) if default else None
    return out


def test_every_tool_is_offered_with_a_valid_name() -> None:
    assert TOOL_NAMES == (
        "evaluate_text",
        "submit_for_review",
        "get_review",
        "revise_artifact",
        "list_rubrics",
        "explain_rubric",
    )
    assert all(NAME.match(name) for name in TOOL_NAMES)
    assert set(VALID) == set(TOOL_NAMES)


def test_openai_chat_completions_shape() -> None:
    tools = openai_tools()
    assert [t["function"]["name"] for t in tools] == list(TOOL_NAMES)
    for tool in tools:
        assert set(tool) == {"type", "function"} and tool["type"] == "function"
        function = tool["function"]
        assert set(function) == {"name", "description", "parameters", "strict"}
        assert function["strict"] is True
        assert len(function["description"]) > 40
        Draft202012Validator.check_schema(function["parameters"])
        assert function["parameters"]["type"] == "object"


def test_openai_strict_mode_rules_hold_for_every_object() -> None:
    for tool in openai_tools():
        parameters = tool["function"]["parameters"]
        assert "$ref" not in keywords(parameters) and "$defs" not in keywords(parameters)
        assert keywords(parameters) <= STRICT_KEYWORDS, tool["function"]["name"]
        for schema in objects(parameters):
            assert schema["additionalProperties"] is False
            assert schema["required"] == list(schema["properties"])


def test_openai_non_strict_keeps_the_model_s_required_fields() -> None:
    (tool,) = openai_tools(["submit_for_review"], strict=False)
    assert tool["function"]["strict"] is False
    assert tool["function"]["parameters"]["required"] == ["artifact_type", "content"]


def test_openai_responses_shape() -> None:
    tools = openai_responses_tools(["evaluate_text", "get_review"])
    assert [t["name"] for t in tools] == ["evaluate_text", "get_review"]
    for tool in tools:
        assert set(tool) == {"type", "name", "description", "parameters", "strict"}
        assert tool["type"] == "function"
        Draft202012Validator.check_schema(tool["parameters"])


def test_anthropic_shape() -> None:
    tools = anthropic_tools()
    assert [t["name"] for t in tools] == list(TOOL_NAMES)
    for tool in tools:
        assert set(tool) == {"name", "description", "input_schema"}
        schema = tool["input_schema"]
        Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object"
        assert "$ref" not in keywords(schema) and "title" not in keywords(schema)
        for sub in objects(schema):
            assert sub["additionalProperties"] is False
    (submit,) = anthropic_tools(["submit_for_review"])
    properties = submit["input_schema"]["properties"]
    assert submit["input_schema"]["required"] == ["artifact_type", "content"]
    assert properties["content"]["maxLength"] == 1_000_000  # bounds stay for Anthropic
    assert properties["content_format"]["default"] == "text"


@pytest.mark.parametrize("spec", TOOLS, ids=lambda s: s.name)
def test_valid_arguments_satisfy_both_schemas_and_the_model(spec: Any) -> None:
    given = VALID[spec.name]
    full = parameters_schema(spec.params, strict=False)
    Draft202012Validator(full).validate(given)
    strict = parameters_schema(spec.params, strict=True)
    completed = strict_completion(strict, given)
    Draft202012Validator(strict).validate(completed)
    spec.params.model_validate(given)
    spec.params.model_validate(completed)  # what strict mode sends, the model takes


@pytest.mark.parametrize("spec", TOOLS, ids=lambda s: s.name)
def test_unknown_fields_are_refused_by_schema_and_model(spec: Any) -> None:
    given = {**VALID[spec.name], "surprise": 1}
    assert not Draft202012Validator(parameters_schema(spec.params, strict=False)).is_valid(given)
    with pytest.raises(ValueError, match="surprise"):
        spec.params.model_validate(given)


def test_strict_descriptions_tell_the_defaults_they_cannot_express() -> None:
    (tool,) = openai_tools(["revise_artifact"])
    properties = tool["function"]["parameters"]["properties"]
    assert properties["resubmit"]["description"].endswith("(default: true)")
    assert "default" not in properties["resubmit"]


def test_an_unknown_tool_name_is_a_clear_error() -> None:
    with pytest.raises(ConfigurationError, match=r"no tool 'publish'; the tools are: evaluate"):
        openai_tools(["publish"])


def test_definitions_are_fresh_copies() -> None:
    first = openai_tools(["get_review"])
    first[0]["function"]["parameters"]["properties"].clear()
    again = openai_tools(["get_review"])
    assert "artifact_id" in again[0]["function"]["parameters"]["properties"]
