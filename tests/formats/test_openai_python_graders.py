"""OpenAI `python` graders run only when the caller opts in (issue 31, item 3): refused by
default with an error naming `--allow-import`; with it, `grade(sample, item)` runs in a
subprocess with a timeout, and its score passes at `pass_threshold`."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rubricflow import Target, evaluate
from rubricflow.cli import app
from rubricflow.engine.isolation import shutdown_check_pool
from rubricflow.errors import RubricValidationError
from rubricflow.formats import allowing_code, load_document
from rubricflow.model import parse_rubric
from rubricflow.scorers.python_grader import PythonGraderError, run_python_grader

SOURCE = """
def grade(sample, item):
    words = sample["output_text"].split()
    wanted = item.get("word", "")
    return 1.0 if wanted in words else 0.25
"""
GRADER = {"type": "python", "name": "has word", "source": SOURCE, "pass_threshold": 0.5}


def test_a_python_grader_is_refused_without_the_opt_in() -> None:
    with pytest.raises(RubricValidationError) as raised:
        load_document(GRADER, source="grader.json")
    message = str(raised.value)
    assert "--allow-import" in message and "subprocess" in message


async def test_with_the_opt_in_it_runs_in_a_subprocess_and_gates_at_its_bar() -> None:
    with allowing_code():
        rubric = load_document(GRADER, source="grader.json").rubrics[0]
    criterion = rubric.criteria[0]
    assert criterion.required and criterion.scoring.function.endswith(":run_python_grader")
    hit = Target(content="the parcel ships monday", reference={"word": "monday"})
    miss = Target(content="the parcel ships soon", reference={"word": "monday"})
    passed = await evaluate(rubric, hit, allow_import=True)
    failed = await evaluate(rubric, miss, allow_import=True)
    assert (passed.verdict, passed.criteria[0].score) == ("pass", 1.0)
    assert (failed.verdict, failed.criteria[0].score) == ("fail", 0.25)
    # loaded, but evaluated without the opt-in: the code does not run, and it says why
    refused = await evaluate(rubric, hit)
    assert refused.criteria[0].status == "error"
    assert "allow_import=True" in (refused.criteria[0].notes or "")
    assert refused.verdict != "pass"


def test_a_grader_that_hangs_is_stopped_and_one_that_raises_is_named() -> None:
    target = Target(content="x")
    with pytest.raises(PythonGraderError, match="timeout"):
        run_python_grader(target, source="def grade(s, i):\n    while True: pass\n", timeout=0.5)
    with pytest.raises(PythonGraderError, match="ZeroDivisionError"):
        run_python_grader(target, source="def grade(s, i):\n    return 1 / 0\n")
    with pytest.raises(PythonGraderError, match=r"0\.\.1"):
        run_python_grader(target, source="def grade(s, i):\n    return 7\n")


def test_the_cli_takes_the_opt_in(tmp_path: Path) -> None:
    grader = tmp_path / "grader.json"
    grader.write_text(json.dumps(GRADER))
    target = tmp_path / "t.json"
    target.write_text(
        json.dumps({"id": "t", "content": "ships monday", "reference": {"word": "monday"}})
    )
    runner = CliRunner()
    refused = runner.invoke(app, ["eval", str(grader), str(target)])
    assert refused.exit_code != 0 and "--allow-import" in refused.output
    allowed = runner.invoke(app, ["eval", str(grader), str(target), "--json", "--allow-import"])
    assert allowed.exit_code == 0, allowed.output
    assert json.loads(allowed.stdout.splitlines()[0])["verdict"] == "pass"
    converted = runner.invoke(app, ["convert", str(grader), "--allow-import"])
    assert converted.exit_code == 0 and "run_python_grader" in converted.stdout
    assert runner.invoke(app, ["convert", str(grader)]).exit_code != 0


async def test_a_grader_sees_none_of_the_parents_secrets(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-parent-secret")
    monkeypatch.setenv("RUBRICFLOW_DB", "postgresql://u:password@db/x")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.txt").write_text("the parent's folder")
    reading = {
        **GRADER,
        "source": "import os\ndef grade(sample, item):\n"
        "    return 1.0 if os.environ['OPENAI_API_KEY'] else 0.0\n",
    }
    with allowing_code():
        rubric = load_document(reading, source="grader.json").rubrics[0]
    result = await evaluate(rubric, Target(content="x"), allow_import=True)
    assert result.criteria[0].status == "error"
    assert "KeyError" in (result.criteria[0].notes or "")
    # what it does see: a PATH, and an empty folder of its own as its working directory
    seen = run_python_grader(
        Target(content="x"),
        source="import os\ndef grade(sample, item):\n"
        "    assert sorted(set(os.environ) - {'LANG', 'LC_ALL', 'LC_CTYPE'}) == ['PATH'], "
        "sorted(os.environ)\n"
        "    assert os.listdir('.') == [], os.listdir('.')\n"
        "    return 1.0\n",
    )
    assert seen == 1.0


def _gone(pid: int) -> bool:
    """Whether `pid` has exited (reaped, or a zombie no one has reaped yet)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
            return stat.read().rpartition(")")[2].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


@pytest.fixture
def short_checks(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # long enough for the grader's process to start on a busy machine and write its pid
    monkeypatch.setenv("RUBRICFLOW_CHECK_TIMEOUT", "4")
    monkeypatch.delenv("RUBRICFLOW_CHECK_ISOLATION", raising=False)
    shutdown_check_pool()  # a pool started by an earlier test has the old limit in its env
    yield
    shutdown_check_pool()


@pytest.mark.usefixtures("short_checks")
async def test_a_stuck_grader_leaves_no_process_behind(tmp_path: Path) -> None:
    """The grader asks for 60 s, the check may run 4 s: the grader is stopped first (with
    its process group), never orphaned by the check process killed at its limit."""
    pid_file = tmp_path / "pid"
    source = (
        "import os, time\n"
        "def grade(sample, item):\n"
        f"    open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
        "    while True:\n"
        "        time.sleep(0.05)  # no CPU: no CPU limit ends it\n"
    )
    rubric = parse_rubric(
        {
            "id": "stuck",
            "name": "Stuck",
            "version": "1.0.0",
            "criteria": [
                {
                    "id": "spin",
                    "description": "spin",
                    "scoring": {
                        "method": "deterministic",
                        "function": "rubricflow.scorers.python_grader:run_python_grader",
                        "config": {"source": source, "timeout": 60},
                    },
                }
            ],
        }
    )
    result = await evaluate(rubric, Target(content="x"), allow_import=True)
    assert result.criteria[0].status == "error"
    pid = int(pid_file.read_text())
    try:
        deadline = time.monotonic() + 30
        while not _gone(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _gone(pid), "the grader's process is still running"
    finally:
        if not _gone(pid):
            os.kill(pid, signal.SIGKILL)
    assert "python grader ran past its" in (result.criteria[0].notes or "")


def test_a_grader_that_prints_still_gives_its_score() -> None:
    source = (
        "print('loading')\n"
        "def grade(sample, item):\n    print('thinking about', sample)\n    return 0.75\n"
    )
    assert run_python_grader(Target(content="x"), source=source) == 0.75


def test_a_grader_dies_with_the_process_that_runs_it(tmp_path: Path) -> None:
    """A process running a grader killed outright (SIGKILL, as the kernel's out-of-memory
    killer does): the grader, which sleeps and so no CPU limit ends, dies with it."""
    import subprocess
    import sys

    pid_file = tmp_path / "pid"
    source = (
        "import os, time\n"
        "def grade(sample, item):\n"
        f"    open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
        "    while True:\n"
        "        time.sleep(0.05)\n"
    )
    runner = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys\n"
            "from rubricflow import Target\n"
            "from rubricflow.scorers.python_grader import run_python_grader\n"
            "run_python_grader(Target(content='x'), source=sys.argv[1], timeout=600)\n",
            source,
        ]
    )
    try:
        deadline = time.monotonic() + 120
        while not pid_file.exists() or not pid_file.read_text():
            assert time.monotonic() < deadline, "the grader never started"
            assert runner.poll() is None, "the runner exited before its grader started"
            time.sleep(0.05)
        grader = int(pid_file.read_text())
        runner.kill()
        runner.wait()
        deadline = time.monotonic() + 30
        while not _gone(grader) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _gone(grader), "the grader outlived the process that ran it"
    finally:
        if runner.poll() is None:
            runner.kill()
        if pid_file.exists() and pid_file.read_text() and not _gone(int(pid_file.read_text())):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
