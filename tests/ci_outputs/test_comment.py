"""The comparison as a markdown PR comment: headline and counts, flips in the order a
reviewer needs them, worst criteria, escaping of whatever the ids hold, and the size
cap with thousands of flipped targets."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rubricflow.ci import COMMENT_LIMIT, COMMENT_MARKER, CIOutputError, comparison_markdown
from rubricflow.ci.comment import markdown_code, markdown_text, parse_link
from rubricflow.compare import compare_runs
from rubricflow.results import CriterionResult
from rubricflow.runs import RunData

from .conftest import evaluation, made_up_run

UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")


def cells(row: str) -> int:
    """How many cells GFM splits a table row into (an escaped pipe does not split)."""
    return len(UNESCAPED_PIPE.findall(row)) - 1


def tables(comment: str) -> list[list[str]]:
    """Each table of the comment as its lines: a header, a delimiter row, the rows."""
    found: list[list[str]] = []
    current: list[str] = []
    for line in comment.splitlines():
        if line.startswith("|"):
            current.append(line)
        elif current:
            found.append(current)
            current = []
    if current:
        found.append(current)
    return found


def assert_whole_tables(comment: str) -> None:
    for table in tables(comment):
        assert len(table) >= 3, table  # never a header without its rows
        assert set(table[1]) <= set("|-:"), table[1]
        width = cells(table[0])
        assert all(cells(row) == width for row in table), table


def test_headline_counts_and_flips_in_order(run_a: RunData, run_b: RunData) -> None:
    comment = comparison_markdown(compare_runs(run_a, run_b))
    lines = comment.splitlines()
    assert lines[0] == COMMENT_MARKER
    assert lines[1] == "### ✅ rubricflow: pass rate 37.5% → 50.0% (+12.5 pts)"
    assert "8 targets in both, 0 only in A, 0 only in B" in comment
    assert "| pass rate | 37.5% | 50.0% | +12.5 pts |" in lines
    assert "| passed | 3 | 4 | +1 |" in lines
    assert "| incomplete | 1 | 0 | -1 |" in lines
    assert "No regression beyond threshold 0." in lines
    flips = [line.split("|")[1].strip() for line in tables(comment)[1][2:]]
    assert flips == ["`t1`", "`t2`", "`t6`"]  # pass -> fail, fail -> pass, the rest
    assert "No criterion's pass rate dropped." in lines
    assert "http" not in comment  # links only when given
    assert_whole_tables(comment)


def test_a_regression_shows_the_worst_criteria_and_the_links(
    run_a: RunData, run_b: RunData
) -> None:
    links = [("CI run", "https://ci.example/runs/1"), ("report", "https://ci.example/r.html")]
    comment = comparison_markdown(compare_runs(run_b, run_a), links=links)
    assert comment.splitlines()[1].startswith("### ❌ rubricflow: pass rate 50.0% → 37.5%")
    assert "(-12.5 pts)" in comment.splitlines()[1]
    assert "**Regression** beyond threshold 0: pass rate fell 12.5 points" in comment
    worst = tables(comment)[2]
    assert worst[2] == "| `tone` | 87.5% | 85.7% | -1.8 pts |"
    flips = [line.split("|")[1:3] for line in tables(comment)[1][2:]]
    assert [(t.strip(), a.strip()) for t, a in flips] == [
        ("`t2`", "✅ pass"),
        ("`t6`", "✅ pass"),
        ("`t1`", "❌ fail"),
    ]
    assert comment.rstrip().endswith(
        "[CI run](https://ci.example/runs/1) · [report](https://ci.example/r.html)"
    )
    # the threshold lets the 1.8-point drop through, not the 12.5-point one
    assert "criterion 'tone'" not in comparison_markdown(compare_runs(run_b, run_a), threshold=0.05)


HOSTILE = "| `code` <script>alert(1)</script> @octocat #1 **bold** [x](javascript:y) "


def big_runs(count: int) -> tuple[RunData, RunData]:
    """`count` targets that all flip pass -> fail, each with its own criterion that drops
    from 100% to 0%, ids long and full of markdown and HTML."""
    a, b = [], []
    for i in range(count):
        target = f"{HOSTILE}{i:05d}" + "x" * 300
        met = CriterionResult(
            criterion_id=f"{HOSTILE}c{i}", status="scored", score=1.0, passed=True
        )
        unmet = met.model_copy(update={"score": 0.0, "passed": False})
        a.append(evaluation(target, "pass", 1.0, [met]))
        b.append(evaluation(target, "fail", 0.0, [unmet]))
    return made_up_run("base", a), made_up_run("head", b)


def test_thousands_of_flips_stay_under_the_limit_with_whole_tables() -> None:
    base, head = big_runs(3000)
    comparison = compare_runs(base, head)
    comment = comparison_markdown(comparison)
    assert len(comment) <= COMMENT_LIMIT
    assert "-100.0 pts" in comment.splitlines()[1]
    assert "#### Flipped targets (3,000)" in comment
    assert "#### Worst criteria (3,000 dropped)" in comment
    flips, worst = tables(comment)[1:3]
    shown_flips, shown_worst = len(flips) - 2, len(worst) - 2
    assert 0 < shown_flips <= 25 and 0 < shown_worst <= 10
    assert f"_… and {3000 - shown_flips:,} more flipped targets_" in comment
    assert f"_… and {3000 - shown_worst:,} more criteria with a drop_" in comment
    assert_whole_tables(comment)
    # nothing from the ids acts as markup: no tag, no mention, no link
    for row in flips[2:]:  # the code span is the whole cell
        assert row.startswith("| ``\\| `code` <script>") and "x`` | ✅ pass" in row
    outside_code = re.sub(r"(`+).*?\1", "", comment)
    for markup in ("<script", "](javascript", "@octocat", "**bold**"):
        assert markup not in outside_code
    assert len({row.split(" | ")[0] for row in flips[2:]}) == shown_flips  # ids stay apart
    # a tighter limit cuts more rows, still whole
    small = comparison_markdown(comparison, limit=4000)
    assert len(small) <= 4000
    assert_whole_tables(small)
    assert "more flipped targets_" in small


def test_the_limit_is_kept_whatever_the_rows_hold() -> None:
    base, head = big_runs(40)
    comparison = compare_runs(base, head)
    for limit in (1500, 2500, 6000, 20000):
        comment = comparison_markdown(comparison, limit=limit)
        assert len(comment) <= limit
        assert_whole_tables(comment)
        assert "#### Flipped targets (40)" in comment
    assert "_Not listed: the comment's size limit" in comparison_markdown(comparison, limit=1500)
    with pytest.raises(CIOutputError, match="even without its tables"):
        comparison_markdown(comparison, limit=200)


@settings(max_examples=200, deadline=None)
@given(st.text(st.characters(codec=None), max_size=200))
def test_any_id_stays_one_code_span_in_one_cell(text: str) -> None:
    code = markdown_code(text)
    assert "\n" not in code and "\r" not in code
    row = f"| {code} | x |"
    assert cells(row) == 2
    fence = re.match("`+", code)
    assert fence is not None
    inner = code[len(fence.group()) : -len(fence.group())]
    assert code.endswith(fence.group())
    assert all(len(run) < len(fence.group()) for run in re.findall("`+", inner))


@settings(max_examples=200, deadline=None)
@given(st.text(st.characters(codec=None), max_size=200))
def test_any_free_text_is_inert(text: str) -> None:
    escaped = markdown_text(text)
    assert "\n" not in escaped and "<" not in escaped and ">" not in escaped
    assert "@" not in escaped
    assert cells(f"| {escaped} | x |") == 2


def test_links_must_be_text_and_an_http_url() -> None:
    assert parse_link("CI run=https://ci.example/1?a=b") == ("CI run", "https://ci.example/1?a=b")
    bad_links = ("https://ci.example", "x=javascript:alert(1)", "=https://ci.example")
    for bad in (*bad_links, "x=ftp://a", "x=https://a/b c"):
        with pytest.raises(CIOutputError, match="TEXT=URL"):
            parse_link(bad)
