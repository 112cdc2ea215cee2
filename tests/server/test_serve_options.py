"""`rubricflow serve`'s options for settings that used to come only from the environment
(`--idempotency-ttl`, `--idempotency-wait`, `--max-evaluate-targets`, `--reward-rubric`):
an option given wins over its `RUBRICFLOW_SERVER_*` variable, one left out keeps the
variable's value, and a value out of range is a clear error before anything starts."""

from __future__ import annotations

import os
import subprocess
import sys

from .conftest import free_port

TONE = """
id: tone
name: Tone
version: 1.0.0
criteria:
  - id: polite
    name: Polite
    scoring: {method: deterministic, function: contains_any, config: {terms: [please]}}
"""


def test_options_win_over_the_environment_and_unset_ones_keep_it(start_server, sqlite_db) -> None:
    server = start_server(
        sqlite_db,
        "--no-auth",
        "--max-evaluate-targets",
        "2",
        "--reward-rubric",
        "tone@1.0.0",
        env={
            "RUBRICFLOW_SERVER_MAX_EVALUATE_TARGETS": "5",
            "RUBRICFLOW_SERVER_REWARD_RUBRIC": "missing@9.9.9",
            # no option given: the environment's value holds
            "RUBRICFLOW_SERVER_IDEMPOTENCY_WAIT_SECONDS": "0",
        },
    )
    with server.client() as local:
        assert local.post("/v1/rubrics", json={"document": TONE}).status_code == 201
        two = local.post(
            "/v1/evaluate",
            json={"rubric": "tone", "targets": [{"content": "please"}, {"content": "no"}]},
        )
        three = local.post(
            "/v1/evaluate", json={"rubric": "tone", "targets": [{"content": "x"}] * 3}
        )
        reward = local.post("/get_reward", json={"query": ["please", "no"]})
    assert two.status_code == 200, two.text
    assert three.status_code == 422, three.text
    assert "2" in three.json()["detail"]
    assert reward.status_code == 200, reward.text
    assert reward.json()["rewards"] == [1.0, 0.0]


def test_an_option_out_of_range_is_a_clear_error_without_a_traceback(sqlite_db) -> None:
    env = {**os.environ, "RUBRICFLOW_SERVER_IDEMPOTENCY_TTL_SECONDS": "3600"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "rubricflow",
            "serve",
            "--db",
            sqlite_db,
            "--port",
            str(free_port()),
            "--idempotency-ttl",
            "10",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 2
    assert "--idempotency-ttl" in done.stderr and "Traceback" not in done.stderr
    # nothing was served
    assert "serving rubricflow" not in done.stderr


def test_a_store_without_tokens_is_warned_about_at_start(start_server, sqlite_db) -> None:
    """Issue 31: a token made in ./rubricflow.db and a server on --db reviews.db gave 401s
    with no word why."""
    from .conftest import issue_token

    bare = start_server(sqlite_db)
    assert "holds no active API token" in bare.output()
    assert "rubricflow tokens create NAME --role admin --db" in bare.output()
    issue_token(sqlite_db, "admin", name="ops")
    stocked = start_server(sqlite_db)
    assert "holds no active API token" not in stocked.output()
