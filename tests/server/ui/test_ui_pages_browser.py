"""The rubric, run and agreement pages in headless Chromium against a real `rubricflow
serve` (SQLite and PostgreSQL), over a seeded history (tests/server/ui/seed.py): the
rubric diff and the pass-rate plot render with the stored figures, the runs page goes
live while a run is going and compares two runs, and the agreement page shows kappa
after people decide in the browser.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from typing import Any

import pytest
from review.conftest import run_blocking

from .conftest import WAIT_MS, Dashboard, Tab, sign_in
from .seed import RUBRIC, V1, V2, Seeded, add_to_run, finish_run, seed


@pytest.fixture(scope="module")
def seeded(dashboard: Dashboard) -> Iterator[Seeded]:
    yield run_blocking(seed(dashboard.db_url))


def expect_text(locator: Any, text: str) -> None:
    from playwright.sync_api import expect

    expect(locator).to_contain_text(text, timeout=WAIT_MS)


def points(page: Any, plot: str) -> dict[str, dict[str, float]]:
    """A line chart's points read back from the page: series -> day -> value."""
    found = page.eval_on_selector_all(
        f"svg#{plot} .point",
        "els => els.map(e => [e.dataset.series, e.dataset.x, Number(e.dataset.y)])",
    )
    out: dict[str, dict[str, float]] = {}
    for series, day, value in found:
        out.setdefault(series, {})[day] = value
    return out


def test_rubric_pages_show_versions_plots_and_a_side_by_side_diff(
    dashboard: Dashboard, seeded: Seeded, tab: Tab
) -> None:
    page = tab.page
    sign_in(tab, dashboard, "alice")
    page.get_by_role("link", name="Rubrics").click()
    row = page.locator(f'tr[data-rubric="{RUBRIC}"]')
    expect_text(row, V2)
    assert row.locator(".versions li").all_inner_texts() == [V2, V1]
    row.get_by_role("link", name=RUBRIC).click()
    assert page.get_by_role("heading", level=1).inner_text().endswith(f"{RUBRIC}@{V2}")
    # criteria with weights and the meta-rubric's lint
    assert page.locator("table.criteria tbody tr").count() == 3
    expect_text(page.locator('tr[data-criterion="long-enough"]'), "required")
    expect_text(page.locator("#lint-heading + p"), "meta-rubric scores this version")

    # one plot per version, newest first, each point the stored pass rate of its day
    figures = page.locator("figure[data-version]")
    assert figures.evaluate_all("els => els.map(e => e.dataset.version)") == [V2, V1]
    newest = points(page, "pass-rates-0")
    oldest = points(page, "pass-rates-1")
    assert set(newest) == {"filled", "polite", "long-enough"}
    assert set(oldest) == {"filled", "polite"}
    for (day, version), (passed, scored) in seeded.polite.items():
        drawn = (newest if version == V2 else oldest)["polite"]
        assert drawn[day] == pytest.approx(passed / scored, abs=1e-6), (day, version)
    assert all(value == 1.0 for value in oldest["filled"].values())
    # the plot says what it is to a screen reader, and each point has its tooltip
    plot = page.locator("svg#pass-rates-1")
    assert plot.get_attribute("role") == "img"
    assert "Daily pass rate" in (plot.locator("desc").text_content() or "")
    day, (passed, scored) = next((k[0], v) for k, v in seeded.polite.items() if k[1] == V1)
    point = plot.locator(f'.point[data-series="polite"][data-x="{day}"] title')
    tip = point.text_content() or ""
    assert f"{passed} of {scored} passed" in tip
    assert date.fromisoformat(day) < date.today()
    # the per-criterion bars: polite is under the threshold, so drawn red
    bar = page.locator('svg#criterion-pass-rates rect[data-label="polite"]')
    assert bar.get_attribute("fill") == "#be123c"

    # the diff, side by side
    page.get_by_role("link", name="what changed").click()
    assert page.get_by_role("heading", level=1).inner_text() == f"{RUBRIC}: {V1} → {V2}"
    expect_text(page.locator('table.changes tr[data-criterion="long-enough"]'), "added")
    polite = page.locator('table.changes tr[data-criterion="polite"]')
    expect_text(polite, "scoring.config.terms[1]")
    expect_text(polite.locator("td.after"), '"spam"')
    added = page.locator("table.side-by-side tr.sbs-added .sbs-right")
    assert any('"spam"' in text for text in added.all_inner_texts())
    assert page.locator("table.side-by-side tr.sbs-same").count() > 0
    expect_text(page.locator("[role=status]"), "Scores or verdicts can move")
    tab.clean()


def test_runs_list_a_live_run_and_a_comparison(
    dashboard: Dashboard, seeded: Seeded, tab: Tab
) -> None:
    page = tab.page
    sign_in(tab, dashboard, "alice")
    page.get_by_role("link", name="Runs").click()
    rows = page.locator("table.runs tbody tr")
    rows.first.wait_for()  # the click's navigation may not have landed yet
    assert rows.evaluate_all("els => els.map(e => e.dataset.run)")[:3] == [
        seeded.running,
        seeded.run_b,
        seeded.run_a,
    ]
    # one run: the report's figures and plots, and the static script's filter
    page.locator(f'tr[data-run="{seeded.run_a}"] a').first.click()
    page.wait_for_url(f"**/ui/runs/{seeded.run_a}")
    assert page.get_by_role("heading", level=1).inner_text() == f"Run {seeded.run_a}"
    histogram = page.locator("svg#score-histogram rect.column")
    counts = histogram.evaluate_all("els => els.map(e => Number(e.dataset.count))")
    assert len(counts) == 10 and sum(counts) == 5
    assert page.locator("svg#run-criteria rect.bar").count() == 2
    page.wait_for_function("() => document.body.dataset.runScript === 'ready'")
    page.get_by_label("Verdict").select_option("fail")
    assert page.locator("#shown-count").inner_text() == "1"  # only the rude post fails in A
    assert page.locator("article.target:visible").get_attribute("data-target") == "t-rude"

    # a running run's page follows it without a reload
    page.goto(f"{dashboard.url}/ui/runs/{seeded.running}")
    live = page.locator("#run-live")
    assert live.get_attribute("data-status") == "running"
    assert page.locator(".run-total").inner_text() == "0"
    run_blocking(add_to_run(dashboard.db_url, seeded.running, "fresh words here", "t-new"))
    expect_text(page.locator(".run-total"), "1")
    run_blocking(finish_run(dashboard.db_url, seeded.running))
    from playwright.sync_api import expect

    expect(page.locator("#run-live")).to_have_attribute("data-status", "finished")
    assert page.locator("#run-live[hx-trigger]").count() == 0  # polling stopped

    # compare: the flips, each linked to the target in both runs
    page.goto(f"{dashboard.url}/ui/runs/compare")
    page.get_by_label("Run A").fill(seeded.run_a)
    page.get_by_label("Run B").fill(seeded.run_b)
    page.get_by_role("button", name="Compare").click()
    flips = page.locator("table.flips tbody tr")
    flips.first.wait_for()  # the form's navigation may not have landed yet
    assert sorted(flips.evaluate_all("els => els.map(e => e.dataset.target)")) == sorted(
        seeded.flipped
    )
    assert page.locator(".flip-count").inner_text() == str(len(seeded.flipped))
    assert page.locator("svg#criterion-deltas rect.bar").count() >= 2
    target = seeded.flipped[0]
    page.locator(f'tr[data-target="{target}"]').get_by_role("link", name="in B").click()
    assert page.locator("article.target").count() == 1
    assert page.locator("article.target").get_attribute("data-target") == target
    tab.clean()


def _decide(tab: Tab, dashboard: Dashboard, artifact_id: str, button: str, wrong: str = "") -> None:
    page = tab.page
    page.goto(f"{dashboard.url}/ui/artifacts/{artifact_id}")
    if wrong:
        page.locator("fieldset.wrong-criteria").get_by_label(wrong).check()
    page.get_by_label("Reason").fill(f"{button} by a person")
    page.get_by_role("button", name=button, exact=True).click()
    expect_text(page.locator(".message.done"), "Approved" if button != "Reject" else "Rejected")


def test_agreement_shows_kappa_after_people_decide(
    dashboard: Dashboard, seeded: Seeded, tab: Tab
) -> None:
    page = tab.page
    sign_in(tab, dashboard, "alice")
    passing = [dashboard.submit(f"a fine post number {i}", actor="bob") for i in range(3)]
    failing = [dashboard.submit(f"a forbidden post {i}", actor="bob") for i in range(2)]
    _decide(tab, dashboard, passing[0], "Approve")
    _decide(tab, dashboard, passing[1], "Approve")
    _decide(tab, dashboard, passing[2], "Reject")  # the person fails what the judge passed
    _decide(tab, dashboard, failing[0], "Override and approve", wrong="polite")
    _decide(tab, dashboard, failing[1], "Reject")

    page.get_by_role("link", name="Judge agreement").click()
    row = page.locator(f'#rubric-agreement tr[data-rubric="{RUBRIC}"]')
    # verdicts: 3 of 5 agree; kappa = (0.6 - 0.52) / 0.48
    assert row.locator("td").nth(0).inner_text() == "5"
    assert row.locator("td").nth(1).inner_text() == "3"
    assert row.locator("td.kappa").inner_text().startswith("0.17 [")
    assert row.locator("td.accuracy").inner_text().startswith("0.60 [")
    row.get_by_role("link", name=RUBRIC).click()
    # polite: 4 of 5 agree (the override said the judge got it wrong); kappa 0.24/0.44
    polite = page.locator('#criterion-agreement tr[data-criterion="polite"]')
    assert polite.locator("td.kappa").inner_text().startswith("0.55 [")
    assert polite.locator("td").nth(4).inner_text() == "1"
    # filled: the judge passed it every time and everyone agreed: kappa is 0/0
    filled = page.locator('#criterion-agreement tr[data-criterion="filled"]')
    assert filled.locator("td.kappa").inner_text() == "undefined"
    assert filled.locator("td.accuracy").inner_text().startswith("1.00")
    # filled and long-enough passed every time: only polite has a kappa to draw
    drawn = page.locator("svg#kappa-criteria rect.bar")
    assert drawn.evaluate_all("els => els.map(e => e.dataset.label)") == ["polite"]
    # the disagreements: the override (with its criterion) and the reject of a passing one
    listed = page.locator("table.disagreements tbody tr")
    assert sorted(listed.evaluate_all("els => els.map(e => e.dataset.artifact)")) == sorted(
        [passing[2], failing[0]]
    )
    expect_text(page.locator(f'table.disagreements tr[data-artifact="{failing[0]}"]'), "polite")
    tab.clean()
