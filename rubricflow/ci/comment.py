"""A comparison of two runs as a short markdown PR comment.

The headline is the pass rate A -> B and its change; then the verdict counts, the
regression gate, the targets whose verdict flipped (pass -> fail first, then
fail -> pass, then the rest), the criteria whose pass rate dropped most, warnings and
the links the caller gives. GitHub refuses a comment over 65,536 characters, so the
comment stays under COMMENT_LIMIT: long lists are cut at a whole row and say
"... and N more"; a table is never cut in the middle.

Everything that comes from the runs is escaped: ids are code spans (no markdown, HTML,
@mention or #reference inside them; a pipe is escaped for the table), and free text is
backslash-escaped with HTML's `<`, `>` and `&` as entities.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from urllib.parse import urlsplit

from rubricflow.ci.files import CIOutputError
from rubricflow.compare import CriterionDelta, RunComparison, VerdictFlip

__all__ = [
    "COMMENT_LIMIT",
    "COMMENT_MARKER",
    "comparison_markdown",
    "markdown_code",
    "markdown_text",
    "parse_link",
]

#: GitHub's limit is 65,536 characters; stay clear of it
COMMENT_LIMIT = 65_000
#: the first line, by which a workflow finds its earlier comment to update it
COMMENT_MARKER = "<!-- rubricflow-compare -->"
#: rows shown at most, before the size cap cuts further
MAX_FLIPS = 25
MAX_CRITERIA = 10
#: an id longer than this is shortened in the comment (the JSON output has it whole)
ID_LIMIT = 120
TEXT_LIMIT = 500
MAX_WARNINGS = 5
MAX_LINKS = 10

_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")
_WHITESPACE = re.compile(r"\s+")
_SPECIAL = re.compile(r"([\\`*_\[\]#|~])")


def _one_line(text: str, limit: int) -> str:
    text = _WHITESPACE.sub(" ", _CONTROL.sub("", text)).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def markdown_text(text: str, limit: int = TEXT_LIMIT) -> str:
    """Free text as literal markdown on one line: markdown characters backslash-escaped,
    HTML's specials as entities, `@` as an entity (no mention)."""
    text = _one_line(text, limit)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _SPECIAL.sub(r"\\\1", text).replace("@", "&#64;")


def markdown_code(text: str, limit: int = ID_LIMIT) -> str:
    """An id as a code span, safe in a table cell: a fence longer than any run of
    backticks in it, padded when it starts or ends with one; pipes escaped; a long id
    keeps its start and its end."""
    text = _WHITESPACE.sub(" ", _CONTROL.sub("", text)).strip() or " "
    if len(text) > limit:  # ids often differ at the end: keep both ends
        tail = limit // 3
        text = text[: limit - tail - 1] + "…" + text[-tail:]
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * (longest + 1)
    if text.startswith("`") or text.endswith("`"):
        text = f" {text} "
    return f"{fence}{text}{fence}".replace("|", "\\|")


def parse_link(value: str) -> tuple[str, str]:
    """`TEXT=URL` (an http or https URL) as (text, url)."""
    text, sep, url = value.partition("=")
    url = url.strip()
    parts = urlsplit(url)
    spaced = any(char.isspace() or ord(char) < 32 for char in url)
    if (
        not sep
        or not text.strip()
        or parts.scheme not in ("http", "https")
        or not parts.netloc
        or spaced
    ):
        raise CIOutputError(
            f"--link {value!r}: give TEXT=URL with an http(s) URL, e.g. "
            "'CI run=https://github.com/OWNER/REPO/actions/runs/1'"
        )
    return text.strip(), url


def _rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def _points(delta: float | None) -> str:
    if delta is None:
        return "n/a"
    points = delta * 100
    return "±0.0 pts" if abs(points) < 0.05 else f"{points:+.1f} pts"


def _score(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _signed(delta: float | None, digits: int = 3) -> str:
    if delta is None:
        return "n/a"
    return f"±{0:.{digits}f}" if abs(delta) < 0.5 * 10**-digits else f"{delta:+.{digits}f}"


def _flip_order(flip: VerdictFlip) -> tuple[int, float, str]:
    """pass -> fail, pass -> incomplete, fail -> pass, incomplete -> pass, the rest;
    within each, the largest score drop first."""
    groups = {
        ("pass", "fail"): 0,
        ("pass", "incomplete"): 1,
        ("fail", "pass"): 2,
        ("incomplete", "pass"): 3,
    }
    group = groups.get((flip.verdict_a, flip.verdict_b), 4)
    return group, flip.score_b - flip.score_a, flip.target_id


_UNLISTED = "_Not listed: the comment's size limit; `rubricflow compare --json` has them._"


def _more(shown: int, total: int, what: str) -> list[str]:
    return [f"_… and {total - shown:,} more {what}_", ""] if total > shown else []


def _flips_section(flips: Sequence[VerdictFlip], rows: int) -> list[str]:
    if not flips:
        return ["No target changed verdict.", ""]
    heading = f"#### Flipped targets ({len(flips):,})"
    if rows == 0:
        return [heading, "", _UNLISTED, ""]
    lines = [
        heading,
        "",
        "| target | A | B | score A | score B |",
        "|---|---|---|--:|--:|",
    ]
    marks = {"pass": "✅ pass", "fail": "❌ fail", "incomplete": "⚠️ incomplete"}
    for flip in flips[:rows]:
        lines.append(
            f"| {markdown_code(flip.target_id)} | {marks.get(flip.verdict_a, flip.verdict_a)} "
            f"| {marks.get(flip.verdict_b, flip.verdict_b)} | {flip.score_a:.3f} "
            f"| {flip.score_b:.3f} |"
        )
    lines.append("")
    return lines + _more(min(rows, len(flips)), len(flips), "flipped targets")


def _criteria_section(drops: Sequence[CriterionDelta], rows: int) -> list[str]:
    if not drops:
        return ["No criterion's pass rate dropped.", ""]
    heading = f"#### Worst criteria ({len(drops):,} dropped)"
    if rows == 0:
        return [heading, "", _UNLISTED, ""]
    lines = [
        heading,
        "",
        "| criterion | pass rate A | pass rate B | change |",
        "|---|--:|--:|--:|",
    ]
    for criterion in drops[:rows]:
        lines.append(
            f"| {markdown_code(criterion.criterion_id)} | {_rate(criterion.pass_rate_a)} "
            f"| {_rate(criterion.pass_rate_b)} | {_points(criterion.pass_rate_delta)} |"
        )
    lines.append("")
    return lines + _more(min(rows, len(drops)), len(drops), "criteria with a drop")


def _render(
    comparison: RunComparison,
    threshold: float,
    links: Sequence[tuple[str, str]],
    flips: Sequence[VerdictFlip],
    drops: Sequence[CriterionDelta],
    flip_rows: int,
    criterion_rows: int,
) -> str:
    a, b = comparison.a, comparison.b
    sa, sb = comparison.summary_a, comparison.summary_b
    found = comparison.regressions(threshold)
    mark = "❌" if found else "✅"
    rubric = markdown_code(f"{b.rubric_id}@{b.rubric_version}")
    if not comparison.same_rubric:
        rubric = f"{markdown_code(f'{a.rubric_id}@{a.rubric_version}')} → {rubric}"
    lines = [
        COMMENT_MARKER,
        f"### {mark} rubricflow: pass rate {_rate(sa.pass_rate)} → {_rate(sb.pass_rate)} "
        f"({_points(comparison.pass_rate_delta)})",
        "",
        f"{rubric} · A {markdown_code(a.id)} → B {markdown_code(b.id)} · "
        f"{len(comparison.shared):,} targets in both, {len(comparison.only_a):,} only in A, "
        f"{len(comparison.only_b):,} only in B",
        "",
        "| | A | B | change |",
        "|---|--:|--:|--:|",
        f"| pass rate | {_rate(sa.pass_rate)} | {_rate(sb.pass_rate)} "
        f"| {_points(comparison.pass_rate_delta)} |",
        f"| mean score | {_score(sa.mean_score)} | {_score(sb.mean_score)} "
        f"| {_signed(comparison.mean_score_delta)} |",
        f"| passed | {sa.passed:,} | {sb.passed:,} | {sb.passed - sa.passed:+,} |",
        f"| failed | {sa.failed:,} | {sb.failed:,} | {sb.failed - sa.failed:+,} |",
        f"| incomplete | {sa.incomplete:,} | {sb.incomplete:,} "
        f"| {sb.incomplete - sa.incomplete:+,} |",
        "",
    ]
    if found:
        overall = [r for r in found if r.kind == "pass_rate"]
        criteria = [r for r in found if r.kind == "criterion"]
        reasons = [markdown_text(str(r)) for r in overall]
        if len(criteria) <= 3:
            reasons += [markdown_text(str(r), ID_LIMIT * 2) for r in criteria]
        else:
            reasons.append(f"the pass rates of {len(criteria):,} criteria fell (see below)")
        lines += [f"**Regression** beyond threshold {threshold:g}: {'; '.join(reasons)}", ""]
    else:
        lines += [f"No regression beyond threshold {threshold:g}.", ""]
    lines += _flips_section(flips, flip_rows)
    lines += _criteria_section(drops, criterion_rows)
    for warning in comparison.warnings[:MAX_WARNINGS]:
        lines += [f"> ⚠️ {markdown_text(warning)}", ""]
    if links:
        shown_links = [
            f"[{markdown_text(text, ID_LIMIT)}]({url.replace('(', '%28').replace(')', '%29')})"
            for text, url in links[:MAX_LINKS]
        ]
        lines += [" · ".join(shown_links), ""]
    return "\n".join(lines).rstrip() + "\n"


def comparison_markdown(
    comparison: RunComparison,
    *,
    threshold: float = 0.0,
    links: Sequence[tuple[str, str]] = (),
    limit: int = COMMENT_LIMIT,
) -> str:
    """The comparison as a PR comment of at most `limit` characters (see the module
    docstring). `links` are (text, URL) pairs, shown only when given."""
    for _, url in links:
        if len(url) > 2000:
            raise CIOutputError(f"--link URL is {len(url):,} characters; the limit is 2,000")
    flips = sorted(comparison.flips, key=_flip_order)
    drops = sorted(
        (c for c in comparison.criteria if (c.pass_rate_delta or 0.0) < 0),
        key=lambda c: (c.pass_rate_delta or 0.0, c.criterion_id),
    )
    flip_rows, criterion_rows = MAX_FLIPS, MAX_CRITERIA
    while True:
        text = _render(comparison, threshold, links, flips, drops, flip_rows, criterion_rows)
        if len(text) <= limit or (flip_rows == 0 and criterion_rows == 0):
            break
        if flip_rows > 0:
            flip_rows //= 2
        else:
            criterion_rows //= 2
    if len(text) > limit:
        raise CIOutputError(
            f"the comment is {len(text):,} characters even without its tables; "
            f"the limit is {limit:,}: give fewer or shorter --link values"
        )
    return text
