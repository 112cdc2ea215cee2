"""Batch generation: one rubric per dataset row, resumable, and cached by the judge
cache so a re-run of finished rows costs no call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from llm.scripted import Recorded, Reply, ScriptedServer, openai_reply
from typer.testing import CliRunner

from rubricflow.cli import app
from rubricflow.model import parse_rubric

from .drafts import EVEN, FEW_ARGS


def dataset(path: Path) -> Path:
    rows = [
        {"id": "q1", "prompt": "How do refunds work?", "reference": "Within 30 days."},
        {"prompt": "FAILROW: How do exchanges work?", "reference": "Within 14 days."},
        {"id": "q3", "question": [{"role": "user", "content": "Can I cancel?"}]},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def judge_failing_row_2(request: Recorded) -> Reply:
    if "FAILROW" in request.text:
        return openai_reply("no JSON today")
    return openai_reply(EVEN)


def results(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_dataset_gets_one_rubric_per_row_and_a_rerun_resumes(tmp_path: Path) -> None:
    rows, output = dataset(tmp_path / "rows.jsonl"), tmp_path / "out" / "rubrics.jsonl"
    with ScriptedServer(judge_failing_row_2) as server:
        spec = f"openai:judge@{server.url}/v1"
        first = CliRunner().invoke(
            app, ["generate", "--dataset", str(rows), "-o", str(output), "--llm", spec, *FEW_ARGS]
        )
        assert first.exit_code == 1, first.output  # a row failed
        assert "2 generated, 0 already done, 1 failed of 3 rows" in first.stderr
        done = results(output)
        assert [r["row"] for r in done] == [0, 1, 2]
        assert "error" in done[1] and "no usable rubric draft" in str(done[1]["error"])
        assert [r["rubric"]["id"] for r in (done[0], done[2])] == ["row_q1", "row_q3"]
        parse_rubric(done[0]["rubric"])
        assert any("Can I cancel?" in r.text for r in server.requests)  # chat rows
        sent = len(server.requests)

        server.responder = lambda request: openai_reply(EVEN)  # the judge is fixed
        second = CliRunner().invoke(
            app, ["generate", "--dataset", str(rows), "-o", str(output), "--llm", spec, *FEW_ARGS]
        )
        assert second.exit_code == 0, second.output
        assert "1 generated, 2 already done, 0 failed of 3 rows" in second.stderr
        assert len(server.requests) == sent + 1  # only the failed row was asked again
        assert [r["row"] for r in results(output)] == [0, 1, 2]
        assert all("rubric" in r for r in results(output))

        output.unlink()  # the output is gone: the judge cache answers every row
        third = CliRunner().invoke(
            app,
            [
                "generate",
                "--dataset",
                str(rows),
                "-o",
                str(output),
                "--llm",
                spec,
                "--json",
                *FEW_ARGS,
            ],
        )
        assert third.exit_code == 0, third.output
        assert len(server.requests) == sent + 1
        summary = json.loads(third.stdout)
        assert summary["generated"] == 3 and summary["llm_calls"] == 0
        assert summary["cache_hits"] == 3


def test_a_torn_last_line_is_redone_and_bad_datasets_are_named(tmp_path: Path) -> None:
    rows, output = dataset(tmp_path / "rows.jsonl"), tmp_path / "rubrics.jsonl"
    with ScriptedServer(lambda request: openai_reply(EVEN)) as server:
        spec = f"openai:judge@{server.url}/v1"
        run = ["generate", "--dataset", str(rows), "-o", str(output), "--llm", spec, "--no-cache"]
        run += FEW_ARGS
        assert CliRunner().invoke(app, run).exit_code == 0
        lines = output.read_text(encoding="utf-8").splitlines()
        output.write_text("\n".join(lines[:2]) + "\n" + lines[2][:40], encoding="utf-8")
        again = CliRunner().invoke(app, run)
        assert again.exit_code == 0 and "1 generated, 2 already done" in again.stderr
        assert len(server.requests) == 4
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"prompt": "ok"}\n{"answer_id": 3}\n', encoding="utf-8")
    bad = CliRunner().invoke(app, ["generate", "--dataset", str(broken), "-o", str(output)])
    assert bad.exit_code == 2 and "broken.jsonl:2: the row has no prompt" in bad.output
    no_output = CliRunner().invoke(app, ["generate", "--dataset", str(rows)])
    assert no_output.exit_code == 2 and "--dataset needs -o" in no_output.output
