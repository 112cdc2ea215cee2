"""The agent tools hold an inline rubric to the same caps and template budget as the
CLI and the HTTP API (issue 27, items 1 and 6): over a cap, or with a template that asks
for gigabytes, the call is an error result naming the cap or the budget."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rubricflow.application import Application
from rubricflow.model import limit_setting
from rubricflow.tools import ToolDispatcher


async def error_of(tools: ToolDispatcher, arguments: dict[str, Any]) -> str:
    call = {"type": "tool_use", "id": "toolu_1", "name": "evaluate_text", "input": arguments}
    block = await tools.dispatch(call)
    assert block["is_error"] is True, block
    error: dict[str, Any] = json.loads(block["content"])["error"]
    return str(error["message"])


def decoded(template: str) -> str:
    level = [{"id": "low", "score": 0}, {"id": "high", "score": 1}]
    criterion = {"id": "graded", "levels": level, "scoring": {"method": "llm_decode"}}
    criterion["scoring"]["template"] = template
    return json.dumps({"id": "hostile", "criteria": [criterion]})


@pytest.mark.parametrize(
    "template",
    ["{{ '%0999999999d'|format(1) }}", "{{ ('a'*3000000000)|length }}", "{{ 'x'*100000000 }}"],
)
async def test_a_template_over_budget_is_refused(app: Application, template: str) -> None:
    message = await error_of(
        ToolDispatcher(app), {"content": "hello", "rubric_document": decoded(template)}
    )
    assert "criterion 'graded'" in message
    assert "16,000,000 characters built per render" in message


async def test_an_inline_rubric_over_a_cap_is_refused(app: Application) -> None:
    many = json.dumps({"id": "many", "criteria": [{"id": f"c{i}"} for i in range(501)]})
    message = await error_of(ToolDispatcher(app), {"content": "x", "rubric_document": many})
    assert f"the limit is 500 (setting {limit_setting('max_criteria')})" in message
    padded = json.dumps({"id": "padded", "description": "x" * 2_100_000, "criteria": [{"id": "c"}]})
    message = await error_of(ToolDispatcher(app), {"content": "x", "rubric_document": padded})
    assert "the limit is 2,097,152 bytes" in message
