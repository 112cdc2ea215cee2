"""A rubric's template has a budget per render (issue 16, item 4): nested `range(100000)`
loops multiply past the sandbox's per-range cap, so they fail fast, naming the limit.
Issue 27: the budget covers time and every string, list and number the template builds
(`*`, `+`, `~`, `%`, `format` widths, filters, method calls), checked before it is built,
and a render from async code runs off the event loop."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rubricflow.llm.prompts import (
    TemplateBudget,
    TemplateBudgetError,
    render_rubric_template,
    render_template_async,
)
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


# --- issue 27: templates that ask for gigabytes in one operation ----------------------------
# Each was accepted before and allocated what it asked for (up to 10.8 GB on the server);
# now each is refused before the allocation, naming the budget of characters built.
HOSTILE = [
    "{{ '%0999999999d'|format(1) }}",
    "{{ ('a'*3000000000)|length }}",
    "{{ 'x'*100000000 }}",
    "{{ '%0999999999d' % 1 }}",
    "{{ '%.999999999f' % 1.5 }}",
    "{{ '%*d' % (999999999, 1) }}",
    "{{ '{:>999999999}'.format(1) }}",
    "{{ '{0:{1}}'.format(1, 999999999) }}",
    "{{ ['x'] * 100000000 }}",
    "{{ 2 ** 999999999 }}",
    "{{ 'a'|center(999999999) }}",
    "{{ 'a'.ljust(999999999) }}",
    "{{ 'a'|indent(999999999, true) }}",
    "{{ 'aaaa'|replace('', 'x' * 10000000) }}",
    "{{ lipsum(100000000) }}",
    "{{ [1]|batch(999999999, 'x')|list }}",
    # repeated concatenation: `~` and `+` doubling in a loop, and aliased lists
    "{% set ns = namespace(s='x') %}{% for i in range(60) %}{% set ns.s = ns.s ~ ns.s %}"
    "{% endfor %}{{ ns.s|length }}",
    "{% set ns = namespace(s='x') %}{% for i in range(60) %}{% set ns.s = ns.s + ns.s %}"
    "{% endfor %}{{ ns.s|length }}",
    "{% set ns = namespace(s=['x']) %}{% for i in range(60) %}{% set ns.s = [ns.s, ns.s] %}"
    "{% endfor %}{{ ns.s }}",
    "{% set l = ['x'] %}{% for i in range(60) %}{{ l.extend(l) }}{% endfor %}",
    "{% set x %}{% for i in range(100000) %}{{ text * 1000 }}{% endfor %}{% endset %}{{ 1 }}",
    # found by a second reading: a join over a range or generator was sized only after it
    # was made (2.9 GB), a sum of lists copies its total at each step (18 s), and a huge
    # power holds the thread past the clock (12 s)
    '{% set s="a"*1000000 %}{{ s.join(range(3000)|map("string"))|length }}',
    '{% set s="a"*1000000 %}{{ range(1500)|join(s)|length }}',
    "{% set l = range(100000)|batch(1)|list %}{{ (l|sum(start=[]))|length }}",
    "{{ 10 ** 11000000 }}",
]


def test_joins_sums_and_powers_of_ordinary_size_still_work() -> None:
    template = (
        '{{ ["a","b"]|join(",") }} {{ ",".join(["x","y"]) }} {{ [1,2,3]|sum }} '
        '{{ [[1],[2]]|sum(start=[]) }} {{ 2 ** 10 }} {{ range(3)|join("-") }} '
        '{{ "+".join(range(3)|map("string")) }}'
    )
    assert render_rubric_template(template, TARGET) == "a,b x,y 6 [1, 2] 1024 0-1-2 0+1+2"


@pytest.mark.parametrize("template", HOSTILE)
def test_a_template_cannot_build_past_its_budget(template: str) -> None:
    # the clock's budget set out of reach: the size budget alone must stop it, however
    # slow the machine (refused before the allocation, as its message says)
    budget = TemplateBudget(seconds=3600)
    with pytest.raises(TemplateBudgetError, match="16,000,000 characters built per render"):
        render_rubric_template(template, TARGET, budget=budget)


def test_a_template_past_its_time_budget_is_stopped() -> None:
    budget = TemplateBudget(seconds=0.2)
    slow = "{% for i in range(100000) %}{{ range(50)|map('string')|join(',')|length }}{% endfor %}"
    started = time.monotonic()
    with pytest.raises(TemplateBudgetError, match=r"0\.2 seconds per render"):
        render_rubric_template(slow, TARGET, budget=budget)
    assert time.monotonic() - started < 30


@settings(max_examples=60, deadline=None)
@given(width=st.integers(min_value=0, max_value=10**12), form=st.sampled_from(["%", "{"]))
def test_any_format_width_renders_within_the_budget_or_is_refused(width: int, form: str) -> None:
    percent = f"{{{{ '%0{width}d'|format(7) }}}}"
    braces = f"{{{{ '{{:0>{width}}}'.format(7) }}}}"
    template = percent if form == "%" else braces
    try:
        rendered = render_rubric_template(template, TARGET)
    except TemplateBudgetError:
        assert width > 900_000  # refused only near or past the budget
    else:
        assert len(rendered) == max(width, 1) <= 1_000_000


def test_templates_that_use_the_content_render_as_before() -> None:
    target = Target(id="t", content={"items": ["a", "b"], "title": "Hi"})
    template = (
        "{{ title }}: {% for item in items %}{{ loop.index }}={{ item|upper }}{{ ', ' if not "
        "loop.last }}{% endfor %} | {{ '%-4s|' % title }}{{ '{:>4}'.format(title) }} "
        "{{ (items * 2)|join('') }} {{ content|tojson }}{% macro m(x) %}<{{ x }}>{% endmacro %}"
        "{{ m(title ~ '!') }}"
    )
    assert render_rubric_template(template, target) == (
        'Hi: 1=A, 2=B | Hi  |  Hi abab {"items": ["a", "b"], "title": "Hi"}<Hi!>'
    )


async def test_rendering_from_async_code_leaves_the_event_loop_free() -> None:
    """The render runs in a worker thread: a ticker on the loop keeps ticking while a
    template grinds through its iteration budget."""
    import asyncio

    ticks = 0
    stop = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0.01)

    task = asyncio.create_task(ticker())
    slow = "{% for i in range(1000) %}{% for j in range(1000) %}{% for k in range(9) %}"
    slow += "{% endfor %}{% endfor %}{% endfor %}"
    with pytest.raises(TemplateBudgetError):
        await render_template_async(slow, TARGET)
    stop.set()
    await task
    assert ticks >= 5


def test_a_rubric_s_templates_share_one_time_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lint renders each template once; the time budget is the rubric's, not one per
    criterion, and the first over-budget template ends it (500 slow templates cost 500
    budgets per request before)."""
    from rubricflow import parse_rubric
    from rubricflow.validation import template_problems

    monkeypatch.setenv("RUBRICFLOW_TEMPLATE_SECONDS", "0.3")
    slow = "{% for i in range(100000) %}{{ range(50)|map('string')|join(',')|length }}{% endfor %}"
    rubric = parse_rubric(
        {
            "id": "slow",
            "criteria": [
                {
                    "id": f"c{i}",
                    "levels": [{"id": "no", "score": 0}, {"id": "yes", "score": 1}],
                    "scoring": {"method": "llm_decode", "template": slow},
                }
                for i in range(3)
            ],
        }
    )
    [problem] = template_problems(rubric)
    assert problem.path == "criteria[0].scoring.template"
    assert "0.3 seconds per render" in problem.message
