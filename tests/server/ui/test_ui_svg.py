"""The server-drawn plots: text is escaped (a criterion id is data), every mark can be
read back, the plot is labelled for screen readers, and the series colours stand out
from the white background (WCAG non-text contrast, 3:1)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import date

from hypothesis import given
from hypothesis import strategies as st

from rubricflow.server.ui.svg import (
    PALETTE,
    Bar,
    Column,
    Point,
    Series,
    bar_chart,
    column_chart,
    line_chart,
    styles_for,
)

from .test_ui_static import contrast

NS = "{http://www.w3.org/2000/svg}"


def parse(markup: str) -> ET.Element:
    return ET.fromstring(str(markup))


@given(st.text(min_size=1, max_size=40))
def test_any_name_stays_text(name: str) -> None:
    name = "".join(ch for ch in name if ch.isprintable() or ch == " ") or "x"
    plot = parse(
        line_chart(
            [Series(name, (Point(date(2026, 1, 1), 0.5), Point(date(2026, 1, 3), 1.0)))],
            title=name,
            desc=name,
            ident="p",
        )
    )
    assert plot.find(f"{NS}title").text == name  # type: ignore[union-attr]
    points = plot.findall(".//*[@class='point']")
    assert [p.get("data-series") for p in points] == [name, name]
    assert not plot.findall(f".//{NS}script") and not plot.findall(".//script")


def test_line_chart_places_points_in_time_order_and_labels_itself() -> None:
    series = [
        Series("a", (Point(date(2026, 1, 3), 1.0, "2 of 2"), Point(date(2026, 1, 1), 0.0))),
        Series("b", (Point(date(2026, 1, 2), 0.5),)),
    ]
    plot = parse(line_chart(series, title="T", desc="D", ident="lc"))
    assert plot.get("role") == "img" and plot.get("aria-labelledby") == "lc-title lc-desc"
    points = plot.findall(".//*[@class='point']")
    drawn = [(p.get("data-series"), p.get("data-x"), float(p.get("data-y") or 0)) for p in points]
    assert drawn == [("a", "2026-01-01", 0.0), ("a", "2026-01-03", 1.0), ("b", "2026-01-02", 0.5)]
    tips = [p.find(f"{NS}title").text for p in points]  # type: ignore[union-attr]
    assert tips[1] == "a, 2026-01-03: 100% (2 of 2)"
    # earlier days sit further left; a higher rate sits higher (smaller y)
    xs = {p.get("data-x"): float(p.get("cx") or p.get("x") or 0) for p in points}
    assert xs["2026-01-01"] < xs["2026-01-02"] < xs["2026-01-03"]
    empty = parse(line_chart([], title="T", desc="D", ident="e"))
    assert "No data yet" in "".join(empty.itertext())


def test_bars_and_columns_carry_their_values() -> None:
    bars = parse(
        bar_chart(
            [Bar("k", 0.4, 0.1, 0.7, "3 of 5"), Bar("none", None, note="0/0")],
            title="T",
            desc="D",
            ident="b",
            domain=(-1.0, 1.0),
        )
    )
    drawn = bars.findall(".//*[@class='bar']")
    assert [(b.get("data-label"), b.get("data-value")) for b in drawn] == [
        ("k", "0.4"),
        ("none", None),
    ]
    interval = bars.find(".//*[@class='interval']")
    assert interval is not None and interval.get("data-low") == "0.1"
    columns = parse(
        column_chart([Column("0.0", 3), Column("0.1", 0)], title="T", desc="D", ident="c")
    )
    assert [c.get("data-count") for c in columns.findall(".//*[@class='column']")] == ["3", "0"]


def test_series_colours_stand_out_and_look_different() -> None:
    for colour in PALETTE:
        assert contrast(colour, "#ffffff") >= 3.0, colour
    styles = styles_for(range(32))
    assert len(set(styles)) == 32
    assert all(styles[i][:2] != styles[i + 1][:2] for i in range(31))
