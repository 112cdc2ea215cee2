"""A rubric's template has a budget per render (issue 16, item 4): nested `range(100000)`
loops multiply past the sandbox's per-range cap, so they fail fast, naming the limit."""

from __future__ import annotations

import time

import pytest

from rubricflow.llm.prompts import TemplateBudgetError, render_rubric_template
from rubricflow.results import Target

TARGET = Target(id="t", content="hello")


@pytest.mark.parametrize(
    "template",
    [
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
        "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}",
        "{% for i in range(1000) %}{% for j in range(1000) %}{% for k in range(1000) %}"
        "{% endfor %}{% endfor %}{% endfor %}",
    ],
)
def test_nested_loops_fail_fast_naming_the_iteration_budget(template: str) -> None:
    started = time.monotonic()
    with pytest.raises(TemplateBudgetError, match="1,000,000 loop iterations"):
        render_rubric_template(template, TARGET)
    assert time.monotonic() - started < 5


def test_output_past_the_budget_is_refused() -> None:
    with pytest.raises(TemplateBudgetError, match="1,000,000 characters of output"):
        render_rubric_template("{% for i in range(100000) %}{{ text * 50 }}{% endfor %}", TARGET)


def test_ordinary_templates_render_as_before() -> None:
    rendered = render_rubric_template(
        "{% for k in [1, 2] %}{{ k }}/{{ loop.length }} {% endfor %}{{ text }}", TARGET
    )
    assert rendered == "1/2 2/2 hello"
    assert render_rubric_template("{% for i in range(100000) %}{% endfor %}ok", TARGET) == "ok"
