"""`rubricflow eval` reads a HealthBench line and a RaR row like any other rubric file,
and scores them by their formulas (HealthBench: clamp(S/P); RaR: S / sum |w|)."""

from __future__ import annotations

import json
from pathlib import Path

from llm.scripted import Recorded, Reply, ScriptedServer, openai_reply, verdict
from typer.testing import CliRunner

from rubricflow.cli import app


def judge(request: Recorded) -> Reply:
    """MET for 'fluids' and 'aspirin' when the content has them."""
    user = str(request.messages[-1]["content"])
    content = user.split("<content>")[-1].split("</content>")[0].lower()
    word = "aspirin" if "aspirin" in user.split("<content>")[0].lower() else "fluids"
    return openai_reply(verdict("MET" if word in content else "UNMET"))


HEALTHBENCH = {
    "prompt": [{"role": "user", "content": "My child has a fever."}],
    "rubrics": [
        {"criterion": "Advises fluids", "points": 5, "tags": ["axis:completeness"]},
        {"criterion": "Recommends aspirin", "points": -5, "tags": ["axis:accuracy"]},
    ],
    "prompt_id": "hb-1",
}
RAR = {
    "question": "My child has a fever.",
    "rubric": [
        {"title": "Fluids", "description": "Essential: advises fluids", "weight": 5},
        {"title": "Aspirin", "description": "Pitfall: recommends aspirin", "weight": -5},
    ],
}


def test_eval_scores_healthbench_and_rar_files_by_their_formulas(tmp_path: Path) -> None:
    (tmp_path / "hb.jsonl").write_text(json.dumps(HEALTHBENCH) + "\n", encoding="utf-8")
    (tmp_path / "rar.jsonl").write_text(json.dumps(RAR) + "\n", encoding="utf-8")
    targets = tmp_path / "targets.jsonl"
    lines = [
        {"id": "fluids", "content": "Give fluids."},
        {"id": "both", "content": "Give fluids, and aspirin."},
    ]
    targets.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    scores = {}
    with ScriptedServer(judge) as server:
        for name in ("hb.jsonl", "rar.jsonl"):
            result = CliRunner().invoke(
                app,
                [
                    "eval",
                    str(tmp_path / name),
                    str(targets),
                    "--json",
                    "--llm",
                    f"openai:judge@{server.url}/v1",
                ],
            )
            assert result.exit_code in (0, 1), result.output
            scores[name] = [json.loads(line)["score"] for line in result.stdout.splitlines()]
    # fluids alone: HealthBench 5/5, RaR 5/10 (the pitfall's weight counts in the
    # denominator); fluids and aspirin: 0 by both
    assert scores == {"hb.jsonl": [1.0, 0.0], "rar.jsonl": [0.5, 0.0]}
