"""An OpenRubricRL client works unchanged against `rubricflow serve`: openrubricrl
0.1.0's own request and response models (pydantic 1), in a virtualenv of their own, score
one output and a batch through `/score/{rubric}` and `/batch-score/{rubric}`.

The venv is made once from PyPI and kept (benchmarks/.peers/openrubricrl-client, or
under $RUBRICFLOW_BENCH_PEERS_DIR, as the benchmarks keep their peers'), so later runs
need no network."""

from __future__ import annotations

import json
import os
import subprocess
import venv
from pathlib import Path

from llm.scripted import Recorded, Reply, ScriptedServer, openai_reply

from .conftest import issue_token

ROOT = Path(__file__).resolve().parents[2]
PEERS_DIR = Path(os.environ.get("RUBRICFLOW_BENCH_PEERS_DIR") or ROOT / "benchmarks" / ".peers")
VENV = PEERS_DIR / "openrubricrl-client"
#: what openrubricrl's code needs (its metadata says pydantic>=2, but its models use
#: pydantic 1's Field(regex=...)); the package itself without its server and LLM clients
REQUIREMENTS = ("pydantic>=1.10,<2", "openrubricrl==0.1.0")
CLIENT = Path(__file__).parent / "peer" / "openrubricrl_client.py"

CODE_QUALITY = {
    "name": "code_quality",
    "version": "1.0.0",
    "domain": "code",
    "scale": {"min": 0, "max": 10},
    "criteria": [
        {"name": "correctness", "description": "The code is correct", "weight": 0.6},
        {"name": "readability", "description": "The code reads well", "weight": 0.4},
    ],
}


def _python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def client_python() -> Path:
    """The venv's Python, made and filled on first use."""
    marker = VENV / "rubricflow-peer.json"
    ready = marker.exists() and _python().exists()
    if ready and json.loads(marker.read_text()).get("requirements") == list(REQUIREMENTS):
        return _python()
    venv.EnvBuilder(with_pip=True, clear=True).create(VENV)
    pip = [str(_python()), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    for command in ([*pip, REQUIREMENTS[0]], [*pip, "--no-deps", REQUIREMENTS[1]]):
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stderr[-3000:]}"
    marker.write_text(json.dumps({"requirements": list(REQUIREMENTS)}))
    return _python()


def scores(request: Recorded) -> Reply:
    """The judge: correctness 9, readability 6 (on OpenRubricRL's 0..10)."""
    value = 9 if "The code is correct" in request.text else 6
    return openai_reply({"reasoning": f"judged {value}", "score": value})


def test_an_openrubricrl_client_scores_through_rubricflow(start_server, sqlite_db) -> None:
    python = client_python()
    admin = issue_token(sqlite_db, "admin", name="ops")
    trainer = issue_token(sqlite_db, "submitter", name="trainer")
    with ScriptedServer(scores) as judge:
        server = start_server(sqlite_db, "--llm", f"openai:judge@{judge.url}/v1")
        with server.client(admin) as ops:
            registered = ops.post("/v1/rubrics", json={"document": json.dumps(CODE_QUALITY)})
            assert registered.status_code == 201, registered.text
        environment = {
            k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")
        }
        done = subprocess.run(
            [str(python), str(CLIENT)],
            input=json.dumps({"url": server.url, "token": trainer, "rubric": "code_quality"}),
            capture_output=True,
            text=True,
            env=environment,
            timeout=120,
            check=False,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer["pydantic"].startswith("1.")
    score = answer["score"]
    assert score["criterion_scores"] == {"correctness": 9.0, "readability": 6.0}
    assert score["overall_score"] == 7.8  # 0.6 * 9 + 0.4 * 6, on the rubric's 0..10
    assert score["criterion_explanations"]["correctness"] == "judged 9"
    assert (score["rubric_name"], score["rubric_version"]) == ("code_quality", "1.0.0")
    batch = answer["batch"]
    assert [r["overall_score"] for r in batch["results"]] == [7.8, 7.8]
    assert batch["summary"]["total_items"] == 2 and batch["summary"]["average_score"] == 7.8


def test_openrubricrl_s_health_and_rubric_listing_and_its_default_rubric(
    start_server, sqlite_db
) -> None:
    """OpenRubricRL's server also answers GET /health, GET /rubrics and GET
    /rubrics/{name}, and POST /score without rubric_name uses its first rubric."""
    admin = issue_token(sqlite_db, "admin", name="ops")
    trainer = issue_token(sqlite_db, "submitter", name="trainer")
    with ScriptedServer(scores) as judge:
        server = start_server(sqlite_db, "--llm", f"openai:judge@{judge.url}/v1")
        with server.client(None) as anonymous:
            health = anonymous.get("/health")
            assert health.status_code == 200, health.text
            assert health.json()["status"] == "healthy"
            assert anonymous.get("/rubrics").status_code == 401
        with server.client(trainer) as client:
            empty = client.post("/score", json={"task_input": "q", "model_output": "a"})
            assert empty.status_code == 404
            assert "no rubric is registered" in empty.text
        with server.client(admin) as ops:
            registered = ops.post("/v1/rubrics", json={"document": json.dumps(CODE_QUALITY)})
            assert registered.status_code == 201, registered.text
        with server.client(trainer) as client:
            listed = client.get("/rubrics")
            assert listed.status_code == 200, listed.text
            assert listed.json() == [
                {
                    "name": "code_quality",
                    "version": "1.0.0",
                    "description": "",
                    "domain": "code",
                    "criteria_count": 2,
                    "scale_min": 0.0,
                    "scale_max": 10.0,
                }
            ]
            detail = client.get("/rubrics/code_quality").json()
            assert detail["scale"] == {"min": 0.0, "max": 10.0, "type": "continuous"}
            assert [c["name"] for c in detail["criteria"]] == ["correctness", "readability"]
            assert client.get("/rubrics/nothing_here").status_code == 404
            scored = client.post("/score", json={"task_input": "q", "model_output": "a"})
            assert scored.status_code == 200, scored.text
            assert scored.json()["rubric_name"] == "code_quality"
            assert scored.json()["criterion_scores"] == {"correctness": 9.0, "readability": 6.0}
