"""The HTML report: its figures, escaping, the data block, no external references, and
`rubricflow report` from a results file, a stored run, `latest` and an artifact."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

import rubricflow
from rubricflow import parse_rubric
from rubricflow.cli import app
from rubricflow.report import render_report, write_report
from rubricflow.report.html import format_cost, format_rate
from rubricflow.review import ArtifactRegistry, ArtifactType, RubricBinding
from rubricflow.runs import RunData
from rubricflow.store import DB_ENV, Store

from .conftest import (
    BREAKOUT,
    TARGETS_A,
    XSS,
    deterministic_criteria,
    evaluate_all,
    run_info,
    store_runs,
    write_results,
)
from .dom import Node, parse

CRITERION_RATES = {"greets": "62.5%", "length": "75.0%", "secrets": "87.5%", "tone": "85.7%"}


def text(page: Node, element_id: str) -> str:
    return page.by_id(element_id).text


def criterion_rows(page: Node) -> dict[str, Node]:
    rows = page.by_id("criteria").find_all(lambda n: n.tag == "tr" and "criterion" in n.classes())
    return {str(row.attrs["data-criterion"]): row for row in rows}


def assert_run_a_figures(page: Node) -> None:
    assert text(page, "run-id") == "run-a"
    assert text(page, "run-rubric") == "reply@1.0.0"
    assert text(page, "run-status") == "finished"
    assert text(page, "run-source") == "replies.jsonl"
    assert text(page, "run-started") == "2025-03-01T10:00:00+00:00"
    assert text(page, "run-finished") == "2025-03-01T10:05:00+00:00"
    assert text(page, "pass-rate") == "37.5%"
    assert (text(page, "count-pass"), text(page, "count-fail")) == ("3", "4")
    assert text(page, "count-incomplete") == "1"
    assert (text(page, "mean-score"), text(page, "median-score")) == ("0.750", "0.750")
    counts = [node.text for node in page.by_id("histogram").by_class("bar-count")]
    assert counts == ["0", "0", "0", "0", "0", "3", "0", "1", "0", "3"]
    rows = criterion_rows(page)
    assert list(rows) == list(CRITERION_RATES)
    for criterion, rate in CRITERION_RATES.items():
        assert rows[criterion].by_class("criterion-rate")[0].text == rate
    assert "5 of 8" in rows["greets"].text
    assert "6 of 7" in rows["tone"].text  # t6's tone was not scored
    assert (text(page, "llm-calls"), text(page, "cache-hits")) == ("8", "1")
    assert (text(page, "input-tokens"), text(page, "output-tokens")) == ("800", "160")
    assert text(page, "cost") == "0.0011"
    assert text(page, "total-count") == "8"


# --------------------------------------------------------------------------- rendering


def test_the_report_shows_the_run_figures(run_a: RunData) -> None:
    page = parse(render_report(run_a))
    assert_run_a_figures(page)
    assert text(page, "shown-count") == "8"  # before the script runs: every target
    assert page.by_tag("title")[0].text == "rubricflow report: run-a"


def test_every_target_has_its_verdict_scores_and_criterion_details(run_a: RunData) -> None:
    page = parse(render_report(run_a))
    targets = page.by_class("target")
    assert [t.by_class("target-id")[0].text for t in targets] == [t["id"] for t in TARGETS_A]
    assert [t.attrs["data-verdict"] for t in targets] == [
        "pass",
        "fail",
        "pass",
        "fail",
        "fail",
        "incomplete",
        "fail",
        "pass",
    ]
    t2 = targets[1]
    assert t2.by_class("target-score")[0].text == "score 0.750"
    assert t2.by_class("target-scaled")[0].text == "scaled 0.75"
    results = {str(r.attrs["data-criterion"]): r for r in t2.by_class("result")}
    assert list(results) == ["greets", "length", "secrets", "tone"]
    tone = results["tone"]
    assert "state-failed" in tone.classes()
    assert tone.by_class("status")[0].text == "scored"
    assert tone.by_class("outcome")[0].text == "UNMET (failed)"
    assert tone.by_class("score")[0].text == "0.00"
    reasoning = tone.by_class("reasoning")[0]
    assert reasoning.tag == "details"
    assert reasoning.by_tag("summary")[0].text == "Judge reasoning"
    assert reasoning.by_tag("p")[0].text == "the reply reads as UNMET"
    assert results["length"].by_class("evidence")[0].text == "6 words (allowed 3..30)"
    t6 = targets[5].find_all(lambda n: n.attrs.get("data-criterion") == "tone")[0]
    assert t6.by_class("status")[0].text == "unable_to_evaluate"
    assert "no valid judge answer" in t6.by_class("notes")[0].text
    feedback = t2.by_class("feedback")[0]
    assert "FAILED" in feedback.text


def test_the_filters_list_each_criterion_and_verdict(run_a: RunData) -> None:
    page = parse(render_report(run_a))
    verdicts = [o.attrs["value"] for o in page.by_id("filter-verdict").by_tag("option")]
    criteria = [o.attrs["value"] for o in page.by_id("filter-criterion").by_tag("option")]
    assert verdicts == ["", "pass", "fail", "incomplete"]
    assert criteria == ["", "greets", "length", "secrets", "tone"]


def test_content_under_review_is_escaped_everywhere(run_a: RunData) -> None:
    html = render_report(run_a)
    assert XSS not in html
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    page = parse(html)
    scripts = page.by_tag("script")
    assert [s.attrs.get("type") for s in scripts] == ["application/json", None]
    assert scripts[1].raw_text.lstrip().startswith("(function () {")
    target = page.by_class("target")[2]
    assert target.by_class("target-id")[0].text == XSS
    reasoning = target.by_class("reasoning")[0].by_tag("p")[0].text
    assert reasoning.endswith(f"it quotes {BREAKOUT}")
    assert target.by_class("evidence")[-1].text.endswith(BREAKOUT)
    # no element, attribute or handler came from the content
    assert not page.find_all(lambda n: any(name.startswith("on") for name in n.attrs))


def test_the_data_block_holds_exactly_the_data_and_cannot_be_broken_out_of(
    run_a: RunData,
) -> None:
    html = render_report(run_a)
    block = re.search(
        r'<script type="application/json" id="report-data">(.*?)</script>', html, re.S
    )
    assert block is not None
    raw = block.group(1)
    assert "<" not in raw and ">" not in raw and "&" not in raw
    data = json.loads(raw)
    assert data["criteria"] == ["greets", "length", "secrets", "tone"]
    assert [t["id"] for t in data["targets"]] == [t["id"] for t in TARGETS_A]
    assert data["targets"][2]["id"] == XSS
    assert data["targets"][3] == {"id": "t4", "verdict": "fail", "failed": ["greets", "length"]}
    # the parser (as a browser) sees the same block end where the data ends
    assert parse(html).by_id("report-data").raw_text == raw


def test_a_target_id_that_closes_the_script_tag_stays_inside_the_data(
    evaluations_a: list[Any],
) -> None:
    evil = evaluations_a[0].model_copy(update={"target_id": BREAKOUT})
    html = render_report(RunData(run_info("evil"), [evil]))
    page = parse(html)
    assert len(page.by_tag("script")) == 2
    assert json.loads(page.by_id("report-data").raw_text)["targets"][0]["id"] == BREAKOUT
    assert page.by_class("target-id")[0].text == BREAKOUT


def test_the_report_references_nothing_outside_itself(run_a: RunData) -> None:
    html = render_report(run_a)
    page = parse(html)
    for node in page.iter():
        for name in ("src", "href", "action", "srcset", "poster", "data"):
            assert name not in node.attrs, (node.tag, name, node.attrs[name])
    assert not page.by_tag("link") and not page.by_tag("img") and not page.by_tag("iframe")
    assert not re.search(r"https?:|//[a-z0-9]|url\(|@import", html, re.I)
    policy = page.find_all(lambda n: n.attrs.get("http-equiv") == "Content-Security-Policy")
    assert "default-src 'none'" in str(policy[0].attrs["content"])


def test_an_unpriced_run_shows_cost_as_not_available(tmp_path: Path) -> None:
    rubric = parse_rubric(
        {"id": "checks", "version": "2.0.0", "criteria": deterministic_criteria()}
    )
    evaluations = evaluate_all(rubric, [{"id": "a", "content": "hello there friend"}])
    page = parse(render_report(RunData(run_info("plain", rubric_id="checks"), evaluations)))
    assert text(page, "cost") == "n/a"
    assert text(page, "llm-calls") == "0"
    assert text(page, "pass-rate") == "100.0%"


def test_an_empty_run_renders() -> None:
    page = parse(render_report(RunData(run_info("empty", status="interrupted"), [])))
    assert text(page, "pass-rate") == "n/a"
    assert text(page, "mean-score") == "n/a"
    assert text(page, "shown-count") == "0"
    assert not page.by_id("no-targets").hidden


def test_number_formats() -> None:
    assert format_rate(0.375) == "37.5%"
    assert format_rate(2 / 3) == "66.7%"
    assert format_rate(None) == "n/a"
    assert format_cost(0.00112) == "0.0011"
    assert format_cost(0.0) == "0.0000"
    assert format_cost(None) == "n/a"


def test_write_report_creates_folders_and_takes_a_title(run_a: RunData, tmp_path: Path) -> None:
    path = write_report(run_a, tmp_path / "out" / "nested" / "r.html", title="Nightly <run>")
    assert path == tmp_path / "out" / "nested" / "r.html"
    html = path.read_text(encoding="utf-8")
    assert "<title>Nightly &lt;run&gt;</title>" in html
    assert rubricflow.write_report is write_report
    assert rubricflow.render_report is render_report


# --------------------------------------------------------------------------------- CLI


def invoke(*args: Any) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args])


def report_page(path: Path) -> Node:
    return parse(path.read_text(encoding="utf-8"))


def assert_usage_error(result: Result, *fragments: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr


def test_cli_reports_a_results_file(run_a: RunData, tmp_path: Path) -> None:
    results = write_results(tmp_path / "a.jsonl", run_a.info, run_a.evaluations)
    result = invoke("report", results, "-o", tmp_path / "site" / "report.html")
    assert result.exit_code == 0, result.output
    assert "wrote" in result.stderr and "pass rate 37.5%" in result.stderr
    assert_run_a_figures(report_page(tmp_path / "site" / "report.html"))


def test_cli_reports_a_results_file_given_by_a_relative_path(
    run_a: RunData, tmp_path: Path
) -> None:
    write_results(tmp_path / "a.jsonl", run_a.info, run_a.evaluations)
    result = invoke("report", "a.jsonl", "--title", "Nightly")
    assert result.exit_code == 0, result.output
    page = report_page(tmp_path / "report.html")  # the default output
    assert page.by_tag("title")[0].text == "Nightly"


def test_cli_reports_a_stored_run_by_id_and_latest(
    run_a: RunData, run_b: RunData, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "runs.db"
    store_runs(db, run_a, run_b)
    result = invoke("report", "run-a", "--db", db, "-o", "a.html")
    assert result.exit_code == 0, result.output
    page = report_page(tmp_path / "a.html")
    assert text(page, "pass-rate") == "37.5%"
    assert [t.by_class("target-id")[0].text for t in page.by_class("target")] == [
        t["id"] for t in TARGETS_A
    ]
    assert text(page, "run-started") == "2025-03-01T10:00:00+00:00"
    result = invoke("report", "latest", "--db", f"sqlite+aiosqlite:///{db}", "-o", "b.html")
    assert result.exit_code == 0, result.output
    page = report_page(tmp_path / "b.html")
    assert text(page, "run-id") == "run-b"
    assert text(page, "pass-rate") == "50.0%"
    # the store from $RUBRICFLOW_DB when --db is not given
    monkeypatch.setenv(DB_ENV, str(db))
    result = invoke("report", "run-a", "-o", "env.html")
    assert result.exit_code == 0, result.output
    assert text(report_page(tmp_path / "env.html"), "run-id") == "run-a"


CHECKS = parse_rubric(
    {"id": "checks", "version": "1.0.0", "criteria": deterministic_criteria()[:2]}
)
SAFE = parse_rubric({"id": "safe", "version": "1.0.0", "criteria": deterministic_criteria()[2:]})


def review_artifact(db: Path) -> None:
    """`reply-1` reviewed against two rubrics, sent back, revised and approved; `draft-1`
    never submitted."""

    async def run() -> None:
        store = await Store.open(str(db))
        try:
            await store.rubrics.register(CHECKS)
            await store.rubrics.register(SAFE)
            registry = ArtifactRegistry(store)
            await registry.set_type(
                ArtifactType(
                    name="reply",
                    rubrics=(RubricBinding(rubric_id="checks"), RubricBinding(rubric_id="safe")),
                )
            )
            await registry.create("reply", "bye", actor="bot", artifact_id="reply-1")
            first = await registry.submit_for_review("reply-1", actor="bot")
            assert first.artifact.status == "needs_revision"
            await registry.revise(
                "reply-1", "hello, your order ships today", actor="bot", reason="greet"
            )
            second = await registry.submit_for_review("reply-1", actor="bot")
            assert second.approved
            await registry.create("reply", "hello", actor="bot", artifact_id="draft-1")
        finally:
            await store.close()

    asyncio.run(run())


def test_cli_reports_an_artifacts_evaluations(tmp_path: Path) -> None:
    db = tmp_path / "review.db"
    review_artifact(db)
    result = invoke("report", "--artifact", "reply-1", "--db", db, "-o", "artifact.html")
    assert result.exit_code == 0, result.output
    page = report_page(tmp_path / "artifact.html")
    assert text(page, "run-id") == "artifact:reply-1"
    assert text(page, "run-rubric") == "checks@1.0.0, safe@1.0.0"
    assert "revision 2" in text(page, "run-source")
    targets = {
        t.by_class("target-id")[0].text: t.attrs["data-verdict"] for t in page.by_class("target")
    }
    assert targets == {
        "reply-1 r1 checks@1.0.0": "fail",
        "reply-1 r1 safe@1.0.0": "pass",
        "reply-1 r2 checks@1.0.0": "pass",
        "reply-1 r2 safe@1.0.0": "pass",
    }
    labels = [t.by_class("target-id")[0].text for t in page.by_class("target")]
    assert [label.split()[1] for label in labels] == ["r1", "r1", "r2", "r2"]
    assert text(page, "pass-rate") == "75.0%"
    assert text(page, "count-fail") == "1"
    assert criterion_rows(page)["greets"].by_class("criterion-rate")[0].text == "50.0%"


# ------------------------------------------------------------------------------- errors


async def close_new_store(db: Path) -> None:
    await (await Store.open(str(db))).close()


def test_cli_errors_name_the_thing_and_the_fix(run_a: RunData, tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    store_runs(db, run_a)
    assert_usage_error(invoke("report", "nope", "--db", db), "no run 'nope'", "runs list")
    assert_usage_error(
        invoke("report", "missing.jsonl"), "missing.jsonl: no such results file", "--output"
    )
    assert_usage_error(invoke("report", "run-a", "--db", tmp_path / "absent.db"), "no store at")
    assert not (tmp_path / "absent.db").exists()
    asyncio.run(close_new_store(tmp_path / "empty.db"))
    assert_usage_error(
        invoke("report", "latest", "--db", tmp_path / "empty.db"), "no runs in", "--db"
    )
    assert_usage_error(invoke("report", tmp_path), "is a directory")
    assert_usage_error(invoke("report"), "give either RUN", "--artifact")
    assert_usage_error(invoke("report", "run-a", "--artifact", "x", "--db", db), "either")
    assert not (tmp_path / "report.html").exists()


def test_cli_reports_malformed_results_files(run_a: RunData, tmp_path: Path) -> None:
    good = write_results(tmp_path / "good.jsonl", run_a.info, run_a.evaluations)
    lines = good.read_text(encoding="utf-8").splitlines()
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join([lines[0], "{not json", *lines[1:]]) + "\n", encoding="utf-8")
    assert_usage_error(invoke("report", broken), "broken.jsonl line 2: malformed JSON")
    foreign = tmp_path / "foreign.jsonl"
    foreign.write_text(lines[0] + '\n{"hello": "world"}\n', encoding="utf-8")
    assert_usage_error(invoke("report", foreign), "foreign.jsonl line 2: not a rubricflow")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    assert_usage_error(invoke("report", empty), "holds no run")


def test_cli_artifact_errors(tmp_path: Path) -> None:
    db = tmp_path / "review.db"
    review_artifact(db)
    assert_usage_error(
        invoke("report", "--artifact", "ghost", "--db", db), "no artifact 'ghost'", "list"
    )
    assert_usage_error(
        invoke("report", "--artifact", "draft-1", "--db", db),
        "artifact 'draft-1' has no stored evaluations",
        "rubricflow artifacts submit draft-1",
    )
