"""`eval --db` without `-o` is durable (issue 16, item 15): evaluations reach the store
within about a second of landing, a run whose process died is reported `interrupted`
(not `running` forever), and `--resume` judges only the targets the store lacks.

The run is a real `python -m rubricflow eval` process judged by the scripted
OpenAI-compatible server over HTTP, killed with SIGKILL mid-run."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from llm.scripted import Recorded, Reply, ScriptedServer, openai_reply, verdict

from rubricflow.runs import RunInfo
from rubricflow.store import Store
from rubricflow.store._sql import utcnow
from rubricflow.store.tables import RunRow

TARGETS = 120
DELAY = 0.1  # seconds per judge call while the first session runs: ~10 targets/s


class SlowJudge:
    """A judge that takes `delay` seconds per answer and counts the calls it answered."""

    def __init__(self) -> None:
        self.delay = DELAY
        self.answered = 0
        self._lock = threading.Lock()

    def __call__(self, request: Recorded) -> Reply:
        time.sleep(self.delay)
        with self._lock:
            self.answered += 1
        return openai_reply(verdict("MET"))


def _cli(*args: str, **popen: Any) -> subprocess.Popen[str]:
    env = {**os.environ, "RUBRICFLOW_LLM_API_KEY": "test-key"}
    return subprocess.Popen(
        [sys.executable, "-m", "rubricflow", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        **popen,
    )


def _finish(process: subprocess.Popen[str], timeout: float = 120) -> tuple[int, str, str]:
    stdout, stderr = process.communicate(timeout=timeout)
    return process.returncode, stdout, stderr


async def _stored_targets(url: str, run_id: str) -> set[str]:
    async with await Store.open(url) as store:
        return {
            e.target_id or ""
            for e in await store.runs.evaluations(run_id)
            if e.verdict != "incomplete"
        }


def test_a_killed_eval_db_run_keeps_its_work_is_interrupted_and_resumes_the_rest(
    tmp_path: Path,
) -> None:
    rubric = tmp_path / "rubric.yaml"
    rubric.write_text(
        "id: support\ncriteria:\n  - id: polite\n    description: The reply is polite.\n"
    )
    targets = tmp_path / "targets.jsonl"
    targets.write_text(
        "".join(
            json.dumps({"id": f"t{i:03}", "content": f"Hello {i}"}) + "\n" for i in range(TARGETS)
        )
    )
    url = f"sqlite+aiosqlite:///{tmp_path / 'runs.db'}"
    judge = SlowJudge()
    with ScriptedServer(judge) as server:
        spec = f"openai:judge@{server.url}/v1"
        common = [str(rubric), str(targets), "--db", url, "--run", "R", "--llm", spec]
        common += ["--no-cache", "--targets-in-flight", "1", "--concurrency", "1", "--quiet"]
        first = _cli("eval", *common)
        deadline = time.monotonic() + 60
        while judge.answered < 40 and time.monotonic() < deadline:
            assert first.poll() is None, first.communicate()
            time.sleep(0.02)
        answered = judge.answered
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        first.communicate()
        assert answered >= 40

        stored = asyncio.run(_stored_targets(url, "R"))
        # every answered target but the one in flight finished; at most ~1 s of them
        # (10 targets at 0.1 s each, plus slack for a loaded machine) may be lost
        assert len(stored) >= answered - 1 - 10 - 5, (len(stored), answered)

        listed = subprocess.run(
            [sys.executable, "-m", "rubricflow", "runs", "list", "--db", url, "--json"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert listed.returncode == 0, listed.stderr
        (run,) = json.loads(listed.stdout)
        assert run["id"] == "R" and run["status"] == "interrupted"
        shown = subprocess.run(
            [sys.executable, "-m", "rubricflow", "runs", "show", "R", "--db", url],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert "[interrupted]" in shown.stdout, shown.stdout + shown.stderr

        judge.delay = 0.0
        before = judge.answered
        code, out, err = _finish(_cli("eval", *common, "--resume"))
        assert code == 0, out + err
        # only the targets the store lacked were judged again
        assert judge.answered - before == TARGETS - len(stored)
        assert f"{len(stored)} finished earlier" in out
    assert asyncio.run(_stored_targets(url, "R")) == {f"t{i:03}" for i in range(TARGETS)}


def _set_owner(url: str, run_id: str, owner: str | None, beat_ago: float | None) -> None:
    """Write a run's owner and heartbeat as another process (or host) would have."""

    async def main() -> None:
        async with await Store.open(url) as store:
            beat = None if beat_ago is None else utcnow() - timedelta(seconds=beat_ago)
            async with store.database.transaction() as connection:
                await connection.execute(
                    sa.update(RunRow.__table__)  # type: ignore[attr-defined]
                    .where(RunRow.__table__.c.id == run_id)  # type: ignore[attr-defined]
                    .values(owner=owner, heartbeat_at=beat)
                )

    asyncio.run(main())


async def _status(url: str, run_id: str) -> str:
    async with await Store.open(url) as store:
        return (await store.runs.get(run_id)).status


def test_a_running_run_is_interrupted_once_its_owner_is_gone(tmp_path: Path) -> None:
    """On this host a dead owner process is seen at once; elsewhere, by a heartbeat that
    stopped. A live owner's run stays `running` and cannot be resumed by another process."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'runs.db'}"

    async def start() -> None:
        async with await Store.open(url) as store:
            await store.runs.start(RunInfo(id="R", rubric_id="r", rubric_version="1"))

    asyncio.run(start())
    host = socket.gethostname()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        _set_owner(url, "R", f"{host}:{sleeper.pid}", 0)
        assert asyncio.run(_status(url, "R")) == "running"

        async def resume() -> None:
            async with await Store.open(url) as store:
                await store.runs.resume("R")

        from rubricflow.errors import RubricflowError

        with pytest.raises(RubricflowError, match=f"still running.*{sleeper.pid}"):
            asyncio.run(resume())
    finally:
        sleeper.kill()
        sleeper.wait()
    assert asyncio.run(_status(url, "R")) == "interrupted"  # its process is gone
    _set_owner(url, "R", "another-host:1", 5)
    assert asyncio.run(_status(url, "R")) == "running"  # a fresh heartbeat elsewhere
    _set_owner(url, "R", "another-host:1", 3600)
    assert asyncio.run(_status(url, "R")) == "interrupted"  # its heartbeat stopped
