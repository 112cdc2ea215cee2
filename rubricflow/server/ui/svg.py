"""Plots drawn on the server as inline SVG: no script, no charting library, nothing for
the Content-Security-Policy to allow.

Three shapes cover the dashboard: `line_chart` (values over time, one line per series:
pass rates per day), `bar_chart` (one horizontal bar per row, with an optional interval
drawn as whiskers: pass rates, agreement with its confidence interval) and
`column_chart` (counts per bin: a score histogram). Each returns `Markup` whose every
piece of text went through `escape` here, so a criterion id or a run id is data, never
markup.

Accessibility: the `<svg>` is `role="img"`, labelled by its `<title>` and described by
its `<desc>` (which says what the plot shows in words); every point and bar has its own
`<title>` (a tooltip and what a screen reader reads), and series differ by marker
shape and dash pattern as well as colour. Colours come from `PALETTE`, each at least
3:1 against white (WCAG 1.4.11, non-text contrast); text is drawn in `INK` (over 15:1).
Styling is by presentation attributes (`fill`, `stroke`), which the CSP's `style-src`
does not govern, so the plots need no style attribute.

Every mark carries `data-*` attributes (series, x, y) so a test can read the plot back.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta

from markupsafe import Markup, escape

__all__ = [
    "INK",
    "PALETTE",
    "Bar",
    "Column",
    "Point",
    "Series",
    "bar_chart",
    "column_chart",
    "line_chart",
]

#: series colours: dark enough for 3:1 against white, told apart by marker and dash too
PALETTE = (
    "#1d4ed8",  # blue
    "#b45309",  # amber
    "#047857",  # green
    "#7c3aed",  # violet
    "#be123c",  # rose
    "#0e7490",  # cyan
    "#4d7c0f",  # lime
    "#9d174d",  # pink
)
INK = "#1b1f24"
GRID = "#d0d7de"
MUTED = "#57606a"
MARKERS = ("circle", "square", "diamond", "triangle")
DASHES = ("", "6 3", "2 3", "8 3 2 3")
FONT = "system-ui, -apple-system, Segoe UI, Roboto, sans-serif"


def percent(value: float) -> str:
    return f"{value * 100:.0f}%"


def _n(value: float) -> str:
    """A coordinate, short."""
    return f"{value:.1f}".rstrip("0").rstrip(".") if value != int(value) else str(int(value))


def _attrs(**values: object) -> str:
    parts = []
    for name, value in values.items():
        if value is None or value == "":
            continue
        key = name.rstrip("_").replace("_", "-")
        parts.append(f'{key}="{escape(str(value))}"')
    return " ".join(parts)


def _open(
    width: int, height: int, title: str, desc: str, ident: str, kind: str, extra: str = ""
) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" {_attrs(viewBox=f"0 0 {width} {height}")} '
        f'width="100%" {_attrs(role="img", aria_labelledby=f"{ident}-title {ident}-desc")} '
        f'{_attrs(id=ident, class_=f"plot plot-{kind}")} font-family="{escape(FONT)}" '
        # focusable: on a phone the chart scrolls sideways inside its figure (legible
        # labels), and a keyboard user scrolls it once it has the focus
        f'font-size="12" tabindex="0" {extra}>',
        f'<title id="{escape(ident)}-title">{escape(title)}</title>',
        f'<desc id="{escape(ident)}-desc">{escape(desc)}</desc>',
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
    ]


def _marker(shape: str, x: float, y: float, colour: str, attrs: str, tip: str) -> str:
    """A point's mark, with its tooltip."""
    title = f"<title>{escape(tip)}</title>"
    common = f'fill="{colour}" stroke="#ffffff" stroke-width="1.5" {attrs}'
    if shape == "square":
        corner = f'x="{_n(x - 4.5)}" y="{_n(y - 4.5)}"'
        return f'<rect {corner} width="9" height="9" {common}>{title}</rect>'
    if shape == "diamond":
        d = f"M{_n(x)} {_n(y - 6)}L{_n(x + 6)} {_n(y)}L{_n(x)} {_n(y + 6)}L{_n(x - 6)} {_n(y)}Z"
        return f'<path d="{d}" {common}>{title}</path>'
    if shape == "triangle":
        d = f"M{_n(x)} {_n(y - 6)}L{_n(x + 6)} {_n(y + 5)}L{_n(x - 6)} {_n(y + 5)}Z"
        return f'<path d="{d}" {common}>{title}</path>'
    return f'<circle cx="{_n(x)}" cy="{_n(y)}" r="5" {common}>{title}</circle>'


# --- lines over time --------------------------------------------------------------------


@dataclass(frozen=True)
class Point:
    """One value on a day; `note` says what it counts (the tooltip's second half)."""

    day: date
    value: float
    note: str = ""


@dataclass(frozen=True)
class Series:
    name: str
    points: tuple[Point, ...]


def _day_ticks(first: date, last: date, most: int = 7) -> list[date]:
    span = (last - first).days
    step = max(1, math.ceil(span / (most - 1))) if span else 1
    ticks = [first + timedelta(days=i) for i in range(0, span + 1, step)]
    if ticks[-1] != last and span:
        if (last - ticks[-1]).days < step / 2:
            ticks[-1] = last
        else:
            ticks.append(last)
    return ticks


def line_chart(
    series: Sequence[Series],
    *,
    title: str,
    desc: str,
    ident: str,
    y_format: Callable[[float], str] = percent,
    y_range: tuple[float, float] = (0.0, 1.0),
    width: int = 720,
) -> Markup:
    """Series of values over days as lines with marked points, a y grid, day ticks and a
    legend under the plot. Days run left to right in proportion to time."""
    left, right, top = 56, 16, 16
    plot_h = 220
    legend_rows = math.ceil(len(series) / 3) if series else 0
    height = top + plot_h + 40 + legend_rows * 20 + 8
    plot_w = width - left - right
    days = sorted({p.day for s in series for p in s.points})
    out = _open(width, height, title, desc, ident, "line", _attrs(data_series=len(series)))
    low, high = y_range

    def y_of(value: float) -> float:
        share = (min(max(value, low), high) - low) / ((high - low) or 1)
        return top + plot_h - share * plot_h

    for i in range(5):  # the y grid: 0, 25, 50, 75, 100 %
        value = low + (high - low) * i / 4
        y = y_of(value)
        out.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{_n(y)}" y2="{_n(y)}" '
            f'stroke="{GRID}" stroke-width="1"/>'
        )
        out.append(
            f'<text x="{left - 8}" y="{_n(y + 4)}" text-anchor="end" fill="{INK}">'
            f"{escape(y_format(value))}</text>"
        )
    if not days:
        out.append(
            f'<text x="{left + plot_w / 2}" y="{top + plot_h / 2}" text-anchor="middle" '
            f'fill="{MUTED}">No data yet</text></svg>'
        )
        return Markup("".join(out))
    first, last = days[0], days[-1]
    span = (last - first).days

    def x_of(day: date) -> float:
        if not span:
            return left + plot_w / 2
        return left + 12 + (plot_w - 24) * (day - first).days / span

    axis_y = top + plot_h
    out.append(
        f'<line x1="{left}" x2="{left + plot_w}" y1="{axis_y}" y2="{axis_y}" stroke="{INK}"/>'
    )
    for tick in _day_ticks(first, last):
        x = x_of(tick)
        out.append(
            f'<line x1="{_n(x)}" x2="{_n(x)}" y1="{axis_y}" y2="{axis_y + 5}" stroke="{INK}"/>'
        )
        out.append(
            f'<text x="{_n(x)}" y="{axis_y + 18}" text-anchor="middle" fill="{INK}">'
            f"{escape(tick.strftime('%b %d'))}</text>"
        )
    styles = styles_for(series)
    for index, (line, (colour, marker, dash)) in enumerate(zip(series, styles, strict=True)):
        points = sorted(line.points, key=lambda p: p.day)
        out.append(_attrs_group("series", line.name, index))
        if len(points) > 1:
            path = " ".join(
                f"{'M' if i == 0 else 'L'}{_n(x_of(p.day))} {_n(y_of(p.value))}"
                for i, p in enumerate(points)
            )
            out.append(
                f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="2.5" '
                f'stroke-linejoin="round" {_attrs(stroke_dasharray=dash)}/>'
            )
        for p in points:
            tip = f"{line.name}, {p.day.isoformat()}: {y_format(p.value)}"
            if p.note:
                tip += f" ({p.note})"
            attrs = _attrs(
                class_="point",
                data_series=line.name,
                data_x=p.day.isoformat(),
                data_y=f"{p.value:.6g}",
            )
            out.append(_marker(marker, x_of(p.day), y_of(p.value), colour, attrs, tip))
        out.append("</g>")
    # the legend: three entries a row, each its line sample, marker and name
    column_w = plot_w / 3
    for index, (line, (colour, marker, dash)) in enumerate(zip(series, styles, strict=True)):
        row, col = divmod(index, 3)
        x = left + col * column_w
        y = axis_y + 36 + row * 20
        out.append(f'<g class="legend-entry" {_attrs(data_series=line.name)}>')
        out.append(
            f'<line x1="{_n(x)}" x2="{_n(x + 28)}" y1="{_n(y - 4)}" y2="{_n(y - 4)}" '
            f'stroke="{colour}" stroke-width="2.5" {_attrs(stroke_dasharray=dash)}/>'
        )
        out.append(_marker(marker, x + 14, y - 4, colour, "", line.name))
        out.append(
            f'<text x="{_n(x + 36)}" y="{_n(y)}" fill="{INK}">'
            f"{escape(_short(line.name, 34))}</text>"
        )
        out.append("</g>")
    out.append("</svg>")
    return Markup("".join(out))


def styles_for(series: Sequence[object]) -> list[tuple[str, str, str]]:
    """Each series' colour, marker and dash, in order (the legend's and the lines'):
    neighbours differ in colour and marker, and no two of the first 32 look alike."""
    return [
        (PALETTE[i % len(PALETTE)], MARKERS[i % len(MARKERS)], DASHES[(i // len(PALETTE)) % 4])
        for i in range(len(series))
    ]


def _attrs_group(kind: str, name: str, index: int) -> str:
    return f"<g {_attrs(class_=kind, data_series=name, data_index=index)}>"


def _short(text: str, most: int) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"


# --- horizontal bars ----------------------------------------------------------------------


@dataclass(frozen=True)
class Bar:
    """One row: `value` in the chart's domain, with an optional interval `low`..`high`;
    `note` is added to its tooltip; `tone` picks the colour ("good", "bad", or "")."""

    label: str
    value: float | None
    low: float | None = None
    high: float | None = None
    note: str = ""
    tone: str = ""


_TONES = {"": PALETTE[0], "good": "#047857", "bad": "#be123c"}


def bar_chart(
    bars: Sequence[Bar],
    *,
    title: str,
    desc: str,
    ident: str,
    domain: tuple[float, float] = (0.0, 1.0),
    value_format: Callable[[float], str] = percent,
    width: int = 720,
) -> Markup:
    """One horizontal bar per row from the domain's zero (or its low end), its value
    written at its end, its interval as whiskers; a row without a value says so."""
    label_w = 200
    left, right, top, row_h = label_w + 8, 64, 24, 26
    plot_w = width - left - right
    height = top + max(1, len(bars)) * row_h + 28
    low, high = domain
    out = _open(width, height, title, desc, ident, "bar", _attrs(data_bars=len(bars)))

    def x_of(value: float) -> float:
        share = (min(max(value, low), high) - low) / ((high - low) or 1)
        return left + share * plot_w

    origin = x_of(0.0 if low <= 0.0 <= high else low)
    for i in range(5):
        value = low + (high - low) * i / 4
        x = x_of(value)
        out.append(
            f'<line x1="{_n(x)}" x2="{_n(x)}" y1="{top - 6}" y2="{height - 24}" stroke="{GRID}"/>'
        )
        out.append(
            f'<text x="{_n(x)}" y="{height - 8}" text-anchor="middle" fill="{INK}">'
            f"{escape(value_format(value))}</text>"
        )
    for index, bar in enumerate(bars):
        y = top + index * row_h
        out.append(
            f'<text x="{label_w}" y="{y + 16}" text-anchor="end" fill="{INK}">'
            f"<title>{escape(bar.label)}</title>{escape(_short(bar.label, 30))}</text>"
        )
        colour = _TONES.get(bar.tone, PALETTE[0])
        if bar.value is None:
            out.append(
                f'<text x="{left + 4}" y="{y + 16}" fill="{MUTED}" '
                f"{_attrs(class_='bar', data_label=bar.label, data_value='')}>"
                f"no value{escape(': ' + bar.note if bar.note else '')}</text>"
            )
            continue
        end = x_of(bar.value)
        x0, x1 = sorted((origin, end))
        tip = f"{bar.label}: {value_format(bar.value)}"
        if bar.low is not None and bar.high is not None:
            tip += f" ({value_format(bar.low)} to {value_format(bar.high)})"
        if bar.note:
            tip += f"; {bar.note}"
        attrs = _attrs(class_="bar", data_label=bar.label, data_value=f"{bar.value:.6g}")
        out.append(
            f'<rect x="{_n(x0)}" y="{y + 4}" width="{_n(max(x1 - x0, 1.5))}" height="{row_h - 10}" '
            f'fill="{colour}" {attrs}><title>{escape(tip)}</title></rect>'
        )
        if bar.low is not None and bar.high is not None:
            a, b, mid = x_of(bar.low), x_of(bar.high), y + row_h / 2 - 1
            out.append(
                f'<g class="interval" stroke="{INK}" stroke-width="1.5" '
                f"{_attrs(data_low=f'{bar.low:.6g}', data_high=f'{bar.high:.6g}')}>"
                f'<line x1="{_n(a)}" x2="{_n(b)}" y1="{_n(mid)}" y2="{_n(mid)}"/>'
                f'<line x1="{_n(a)}" x2="{_n(a)}" y1="{_n(mid - 6)}" y2="{_n(mid + 6)}"/>'
                f'<line x1="{_n(b)}" x2="{_n(b)}" y1="{_n(mid - 6)}" y2="{_n(mid + 6)}"/></g>'
            )
        text_x = max(end, x_of(bar.high) if bar.high is not None else end) + 6
        out.append(
            f'<text x="{_n(text_x)}" y="{y + 16}" fill="{INK}">'
            f"{escape(value_format(bar.value))}</text>"
        )
    out.append(
        f'<line x1="{_n(origin)}" x2="{_n(origin)}" y1="{top - 6}" y2="{height - 24}" '
        f'stroke="{INK}"/>'
    )
    out.append("</svg>")
    return Markup("".join(out))


# --- columns ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    label: str
    count: int
    note: str = ""


@dataclass(frozen=True)
class _Scale:
    peak: int
    ticks: list[int] = field(default_factory=list)


def _count_scale(peak: int) -> _Scale:
    """A y axis for counts: whole-number ticks up to at least `peak`."""
    peak = max(peak, 1)
    step = max(1, math.ceil(peak / 4))
    magnitude = 10 ** int(math.log10(step))
    for nice in (1, 2, 5, 10):
        if step <= nice * magnitude:
            step = nice * magnitude
            break
    top = step * math.ceil(peak / step)
    return _Scale(top, list(range(0, top + 1, step)))


def column_chart(
    columns: Sequence[Column], *, title: str, desc: str, ident: str, width: int = 720
) -> Markup:
    """Counts as vertical columns over labelled bins, with a count axis."""
    left, right, top, plot_h = 48, 16, 16, 200
    height = top + plot_h + 40
    plot_w = width - left - right
    scale = _count_scale(max((c.count for c in columns), default=0))
    out = _open(width, height, title, desc, ident, "column", _attrs(data_columns=len(columns)))
    for tick in scale.ticks:
        y = top + plot_h - plot_h * tick / scale.peak
        out.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{_n(y)}" y2="{_n(y)}" stroke="{GRID}"/>'
        )
        out.append(
            f'<text x="{left - 8}" y="{_n(y + 4)}" text-anchor="end" fill="{INK}">{tick}</text>'
        )
    slot = plot_w / max(1, len(columns))
    for index, column in enumerate(columns):
        h = plot_h * column.count / scale.peak
        x = left + index * slot
        tip = f"{column.label}: {column.count}" + (f" ({column.note})" if column.note else "")
        attrs = _attrs(class_="column", data_label=column.label, data_count=column.count)
        out.append(
            f'<rect x="{_n(x + 4)}" y="{_n(top + plot_h - h)}" width="{_n(slot - 8)}" '
            f'height="{_n(h)}" fill="{PALETTE[0]}" {attrs}><title>{escape(tip)}</title></rect>'
        )
        out.append(
            f'<text x="{_n(x + slot / 2)}" y="{top + plot_h + 18}" text-anchor="middle" '
            f'fill="{INK}">{escape(column.label)}</text>'
        )
    out.append(
        f'<line x1="{left}" x2="{left + plot_w}" y1="{top + plot_h}" y2="{top + plot_h}" '
        f'stroke="{INK}"/>'
    )
    out.append("</svg>")
    return Markup("".join(out))
