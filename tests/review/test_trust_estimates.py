"""Estimates people can trust, wired to the store (issue 28, items 6 and 7): a run's naive
pass rate and the one corrected with people's decisions on its rubric, in the Python
API, `runs show --json`, the HTTP API, the report and the dashboard; people's decisions
as labelled examples; the judge's reliability over time. On SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rubricflow.application import Application
from rubricflow.calibration import estimate_pass_rate
from rubricflow.calibration.reliability import period_start
from rubricflow.cli import app as cli_app
from rubricflow.plugins import PluginRegistry
from rubricflow.report.html import render_report
from rubricflow.review import ArtifactRegistry
from rubricflow.runs import RunInfo
from rubricflow.store import Store
from rubricflow.store.evaluations import StoredEvaluation
from rubricflow.store.labels import JudgeLabels

from .conftest import FAIL, PASS, doc_types, score_rubric


async def _decide(registry: ArtifactRegistry) -> None:
    """Six passing artifacts people decided: four approved, two rejected, one of those
    with the criterion marked wrong; three more decided by rubricflow alone (no label)."""
    await doc_types(registry)
    for index in range(6):
        artifact = await registry.create("gated", PASS, actor="bot")
        await registry.submit_for_review(artifact.id, actor="bot")
        if index < 4:
            await registry.approve(artifact.id, actor="alice", reason="fine")
            continue
        await registry.reject(artifact.id, actor="bob", reason="not fine")
        if index == 5:
            event = (await registry.history(artifact.id))[-1]
            [evaluation_id] = await registry.store.evaluations.ids(artifact_id=artifact.id)
            await JudgeLabels(registry.store.database).correct(
                artifact.id, event.seq, [(evaluation_id, "score")], actor="bob"
            )
    for _ in range(3):
        auto = await registry.create("doc", PASS, actor="bot")
        await registry.submit_for_review(auto.id, actor="bot")


async def _run(application: Application, run_id: str = "run-1") -> None:
    """A run of the same rubric over ten targets: eight pass, two fail."""
    rubric = score_rubric()
    await application.store.runs.start(
        RunInfo(id=run_id, rubric_id=rubric.id, rubric_version="1.0.0")
    )
    targets = [{"id": f"t{index}", "content": PASS if index < 8 else FAIL} for index in range(10)]
    evaluations = await application.evaluate(rubric, targets)
    await application.evaluations.save_many(StoredEvaluation(e, run_id=run_id) for e in evaluations)
    await application.store.runs.finish(run_id)


def _expected() -> dict[str, object]:
    """PPI by the function itself: the run's ten verdicts unlabelled, the six decisions
    (the judge passed all six, people passed four) labelled."""
    verdicts: dict[str, bool | float] = {f"t{i}": i < 8 for i in range(10)}
    labels: dict[str, bool | float] = {}
    for index in range(6):
        verdicts[f"l{index}"] = True
        labels[f"l{index}"] = index < 4
    both = estimate_pass_rate(verdicts, labels)
    assert both.corrected is not None
    return {"corrected": both.corrected.to_dict(), "power": both.power}


async def test_a_run_s_pass_rate_is_corrected_with_people_s_decisions(
    registry: ArtifactRegistry, db_url: str, tmp_path: Path
) -> None:
    await _decide(registry)
    application = Application(registry.store, plugins=registry.plugins)
    await _run(application)
    run = await application.run("run-1")
    estimate = await application.run_pass_rate_estimate(run)
    assert estimate is not None and estimate.corrected is not None
    assert (estimate.labelled, estimate.unlabelled) == (6, 10)
    assert estimate.naive.estimate == pytest.approx(0.8) and estimate.naive.n == 10
    expected = _expected()
    assert estimate.corrected.to_dict() == pytest.approx(expected["corrected"])
    assert estimate.power == pytest.approx(expected["power"])
    # the judge passed every decided artifact, people only four in six: corrected lower
    assert estimate.corrected.estimate < estimate.naive.estimate

    # the CLI runs its own event loop: in a thread beside this test's
    shown = await asyncio.to_thread(
        CliRunner().invoke, cli_app, ["runs", "show", "run-1", "--db", db_url, "--json"]
    )
    assert shown.exit_code == 0, shown.output
    document = json.loads(shown.stdout)["pass_rate_estimate"]
    assert document == estimate.to_dict()
    text = await asyncio.to_thread(
        CliRunner().invoke, cli_app, ["runs", "show", "run-1", "--db", db_url]
    )
    assert "corrected with 6 people's label(s)" in text.output

    page = tmp_path / "report.html"
    wrote = await asyncio.to_thread(
        CliRunner().invoke, cli_app, ["report", "run-1", "--db", db_url, "-o", str(page)]
    )
    assert wrote.exit_code == 0, wrote.output
    assert 'id="pass-rate-estimate"' in page.read_text(encoding="utf-8")
    html = render_report(run, estimate=estimate)
    assert 'id="pass-rate-estimate"' in html and "from 6 label(s)" in html
    assert 'id="pass-rate-estimate"' not in render_report(run)


async def test_without_labels_there_is_no_corrected_rate(registry: ArtifactRegistry) -> None:
    application = Application(registry.store, plugins=registry.plugins)
    await _run(application)
    assert await application.run_pass_rate_estimate(await application.run("run-1")) is None


async def test_people_s_decisions_are_labelled_examples_and_reliability(
    registry: ArtifactRegistry,
) -> None:
    await _decide(registry)
    application = Application(registry.store, plugins=registry.plugins)
    examples = await application.labelled_examples(score_rubric())
    assert len(examples) == 6  # rubricflow's own decisions are not among them
    assert sorted(e.labels["score"] for e in examples) == ["MET"] * 5 + ["UNMET"]
    assert all(json.loads(e.target.content)["score"] == 0.9 for e in examples)
    [point] = await application.judge_reliability("scored")
    assert (point.criterion_id, point.n, point.agreed) == ("score", 6, 5)
    assert point.kappa == pytest.approx(0.0)  # the judge said pass every time
    assert point.period == period_start(datetime.now(timezone.utc), "week")


def test_the_api_and_the_dashboard_show_the_estimate_and_the_reliability(
    sqlite_url: str, review_plugins: PluginRegistry
) -> None:
    from fastapi.testclient import TestClient

    from rubricflow.server import ServerSettings, create_app

    async def seed() -> None:
        async with await Store.open(sqlite_url) as store:
            await _decide(ArtifactRegistry(store, plugins=review_plugins))
            await _run(Application(store, plugins=review_plugins))

    asyncio.run(seed())
    settings = ServerSettings(
        db=sqlite_url, auth=False, review_workers=0, webhooks=False, access_log=False
    )
    with TestClient(create_app(settings)) as client:
        run = client.get("/v1/runs/run-1").json()
        estimate = run["pass_rate_estimate"]
        assert (estimate["labelled"], estimate["unlabelled"]) == (6, 10)
        assert estimate["naive"]["estimate"] == pytest.approx(0.8)
        assert estimate["corrected"] == pytest.approx(_expected()["corrected"])
        reliability = client.get("/v1/rubrics/scored/reliability?period=month").json()
        assert reliability["period"] == "month"
        [point] = reliability["points"]
        assert (point["criterion_id"], point["n"], point["agreed"]) == ("score", 6, 5)
        assert client.get("/v1/rubrics/scored/reliability?period=year").status_code == 422
        page = client.get("/ui/runs/run-1")
        assert page.status_code == 200, page.text[:500]
        assert 'id="corrected-pass-rate"' in page.text and "from 6 label(s)" in page.text


async def test_calibrate_reads_people_s_decisions_from_the_store(
    registry: ArtifactRegistry, db_url: str, tmp_path: Path
) -> None:
    """`calibrate RUBRIC --db` without a labels file: the six decisions are the labels
    (a built-in check stands in for the criterion, so no judge is needed), and the
    judge's reliability over time comes with them."""
    await _decide(registry)
    rubric_file = tmp_path / "scored.yaml"
    rubric_file.write_text(
        "id: scored\ncriteria:\n  - id: score\n"
        "    scoring: {method: deterministic, function: non_empty}\n",
        encoding="utf-8",
    )
    args = ["calibrate", str(rubric_file), "--db", db_url, "--resamples", "0"]
    done = await asyncio.to_thread(CliRunner().invoke, cli_app, [*args, "--json"])
    assert done.exit_code == 0, done.output
    report = json.loads(done.stdout)
    assert report["labels_from"] == {"file": 0, "store": 6} and report["examples"] == 6
    [criterion] = report["criteria"]
    assert (criterion["n"], criterion["accuracy"]["value"]) == (6, pytest.approx(5 / 6))
    [point] = report["reliability"]
    assert (point["criterion_id"], point["n"], point["agreed"]) == ("score", 6, 5)
    text = await asyncio.to_thread(CliRunner().invoke, cli_app, [*args, "--period", "day"])
    assert text.exit_code == 0, text.output
    assert "Judge reliability over time" in text.output and "per day" in text.output
    empty = tmp_path / "other.yaml"
    empty.write_text(rubric_file.read_text().replace("id: scored", "id: other"), "utf-8")
    none = await asyncio.to_thread(
        CliRunner().invoke, cli_app, ["calibrate", str(empty), "--db", db_url]
    )
    assert none.exit_code == 2 and "no person's decision on rubric 'other'" in none.output
