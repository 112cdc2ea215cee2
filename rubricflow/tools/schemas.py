"""Function-calling tool definitions for the OpenAI and Anthropic APIs, their parameters'
JSON Schemas generated from the pydantic models.

Both schemas are self-contained (no `$ref`: definitions are inlined), closed
(`additionalProperties: false` on every object) and without titles.

- OpenAI's strict mode (`strict: true`, the default here) needs every property listed in
  `required` and accepts only some keywords. So in `openai_tools()` every property is
  required, an optional one is nullable (`null` means "not given"), a field with a
  default other than null must be sent (the description says the default), and length
  bounds (`minLength`, `maxLength`) are left out. The dispatcher validates the arguments
  against the full model whatever the schema said, so a bound left out of the schema is
  still enforced, with an error result naming the field.
- `anthropic_tools()` keeps the full schema: only fields without a default are
  required, and bounds and defaults stay.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from rubricflow.tools.specs import select_tools

__all__ = [
    "anthropic_tools",
    "openai_responses_tools",
    "openai_tools",
    "parameters_schema",
]

#: the keywords OpenAI's strict mode accepts (others are refused with the whole request)
_STRICT_KEYWORDS = frozenset(
    {
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
)


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    """`node` with every `$ref` to `#/$defs/X` replaced by X (the models hold no cycles)."""
    if isinstance(node, list):
        return [_inline(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = dict(defs[ref.removeprefix("#/$defs/")])
        extra = {k: v for k, v in node.items() if k != "$ref"}
        return _inline({**target, **extra}, defs)
    return {k: _inline(v, defs) for k, v in node.items() if k != "$defs"}


def _tidy(node: Any, *, strict: bool) -> Any:
    """Titles dropped, objects closed; for strict mode also every property required,
    defaults dropped and only the keywords strict mode accepts kept."""
    if isinstance(node, list):
        return [_tidy(item, strict=strict) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" or (strict and key not in _STRICT_KEYWORDS):
            continue
        if key == "properties":
            out[key] = {name: _tidy(sub, strict=strict) for name, sub in value.items()}
        else:
            out[key] = _tidy(value, strict=strict)
    default = node.get("default")
    if strict and default is not None and not isinstance(default, dict | list):
        told = f"default: {json.dumps(default)}"
        out["description"] = f"{out['description']} ({told})" if "description" in out else told
    if out.get("type") == "object" or "properties" in out:
        out["type"] = "object"
        out.setdefault("properties", {})
        out["additionalProperties"] = False
        if strict:
            out["required"] = list(out["properties"])
        elif not out.get("required"):
            out.pop("required", None)
    return out


@functools.lru_cache(maxsize=64)
def _schema_text(model: type[BaseModel], strict: bool) -> str:
    raw = model.model_json_schema(mode="validation")
    inlined = _inline(raw, raw.get("$defs", {}))
    inlined.pop("description", None)  # the tool's own description says it
    return json.dumps(_tidy(inlined, strict=strict))


def parameters_schema(model: type[BaseModel], *, strict: bool = True) -> dict[str, Any]:
    """The JSON Schema of a tool's parameters model, self-contained and closed; with
    `strict`, in the form OpenAI's strict mode accepts (see the module's docstring).
    Generated once per model (a bot loop asks for the tools every turn); each call
    returns a fresh copy the caller may change."""
    schema: dict[str, Any] = json.loads(_schema_text(model, strict))
    return schema


def openai_tools(
    names: Sequence[str] | None = None, *, strict: bool = True
) -> list[dict[str, Any]]:
    """Chat Completions tool definitions (`tools=` of `chat.completions.create`):
    `{"type": "function", "function": {name, description, parameters, strict}}`, for the
    tools named (default: all)."""
    return [
        {
            "type": "function",
            "function": {
                "name": spec.name,
                "description": spec.description,
                "parameters": parameters_schema(spec.params, strict=strict),
                "strict": strict,
            },
        }
        for spec in select_tools(names)
    ]


def openai_responses_tools(
    names: Sequence[str] | None = None, *, strict: bool = True
) -> list[dict[str, Any]]:
    """Responses API tool definitions (`tools=` of `responses.create`): `{"type":
    "function", name, description, parameters, strict}`."""
    return [{"type": "function", **tool["function"]} for tool in openai_tools(names, strict=strict)]


def anthropic_tools(names: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Anthropic Messages tool definitions (`tools=` of `messages.create`): `{name,
    description, input_schema}`, for the tools named (default: all)."""
    return [
        {
            "name": spec.name,
            "description": spec.description,
            "input_schema": parameters_schema(spec.params, strict=False),
        }
        for spec in select_tools(names)
    ]
