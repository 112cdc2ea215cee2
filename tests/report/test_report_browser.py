"""The report in a real browser: headless Chromium loads the file, runs its script and
dumps the DOM; a second run saves a screenshot to test-artifacts/report.png.

When CI=true a missing Chromium fails the test; elsewhere the test skips."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from rubricflow.report import write_report
from rubricflow.runs import RunData

from .dom import Node, parse

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
TIMEOUT = 60
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


@pytest.fixture(scope="module")
def chromium() -> str:
    found = shutil.which("chromium") or (
        "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
    )
    if found is None:
        message = "chromium is not installed (apt-get install chromium)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true, so the browser test may not skip: {message}", pytrace=False)
        pytest.skip(message)
    return found


def run_chromium(chromium: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [chromium, *FLAGS, f"--user-data-dir={profile}", *args]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired as error:
        stderr = error.stderr.decode() if isinstance(error.stderr, bytes) else error.stderr
        pytest.fail(f"chromium did not finish in {TIMEOUT} s: {command}\n{stderr}")
    if done.returncode != 0:
        pytest.fail(f"chromium exited {done.returncode}: {command}\n{done.stderr}")
    return done


def dump(chromium: str, tmp_path: Path, url: str) -> Node:
    done = run_chromium(chromium, tmp_path / "profile", "--dump-dom", url)
    assert "<html" in done.stdout, done.stderr
    return parse(done.stdout)


def visible_verdicts(page: Node) -> list[str]:
    return [str(t.attrs["data-verdict"]) for t in page.by_class("target") if not t.hidden]


def text(page: Node, element_id: str) -> str:
    return page.by_id(element_id).text


def test_the_report_renders_and_filters_in_chromium(
    chromium: str, run_a: RunData, tmp_path: Path
) -> None:
    report = write_report(run_a, tmp_path / "report.html")
    url = report.as_uri()

    page = dump(chromium, tmp_path, url)
    assert page.by_tag("body")[0].attrs.get("data-script") == "ready", "the script did not run"
    assert not page.by_id("filters").hidden  # the script shows the filters
    assert text(page, "pass-rate") == "37.5%"
    assert (text(page, "count-pass"), text(page, "count-fail")) == ("3", "4")
    assert text(page, "count-incomplete") == "1"
    rates = {
        str(row.attrs["data-criterion"]): row.by_class("criterion-rate")[0].text
        for row in page.by_id("criteria").by_class("criterion")
    }
    assert rates == {"greets": "62.5%", "length": "75.0%", "secrets": "87.5%", "tone": "85.7%"}
    assert text(page, "cost") == "0.0011"
    assert text(page, "shown-count") == "8"
    assert len(visible_verdicts(page)) == 8
    # the escaped target is text in the page, and no script of its own ran or exists
    assert len(page.by_tag("script")) == 2
    assert page.by_class("target")[2].by_class("target-id")[0].text == "<script>alert(1)</script>"

    failing = dump(chromium, tmp_path, url + "#verdict=fail")
    assert failing.by_tag("body")[0].attrs.get("data-filter-verdict") == "fail"
    assert text(failing, "shown-count") == "4"
    assert visible_verdicts(failing) == ["fail"] * 4

    greets = dump(chromium, tmp_path, url + "#verdict=fail&criterion=greets")
    assert text(greets, "shown-count") == "3"
    shown = [t.by_class("target-id")[0].text for t in greets.by_class("target") if not t.hidden]
    assert shown == ["t4", "t5", "t7"]

    none = dump(chromium, tmp_path, url + "#verdict=incomplete&criterion=secrets")
    assert text(none, "shown-count") == "0"
    assert not none.by_id("no-targets").hidden


def test_a_screenshot_of_the_report(chromium: str, run_a: RunData, tmp_path: Path) -> None:
    report = write_report(run_a, tmp_path / "report.html")
    ARTIFACTS.mkdir(exist_ok=True)
    screenshot = ARTIFACTS / "report.png"
    screenshot.unlink(missing_ok=True)
    run_chromium(
        chromium,
        tmp_path / "profile",
        f"--screenshot={screenshot}",
        "--window-size=1280,2000",
        report.as_uri(),
    )
    assert screenshot.is_file(), "chromium wrote no screenshot"
    data = screenshot.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    assert len(data) > 10_000, f"the screenshot is only {len(data)} bytes"
