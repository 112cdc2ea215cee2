"""OpenAI `python` graders, run only when the caller opts in.

An imported python grader (`rubricflow convert`/`eval` with `--allow-import`) is a
criterion whose check is `rubricflow.scorers.python_grader:run_python_grader`: a
`module:function` name, which the deterministic scorer imports only when the evaluation
allows it (`allow_import=True`, `--allow-import`). Without it the criterion is an error
naming the opt-in.

The grader's source runs in a separate Python process, never in rubricflow's: Python's
isolated mode (no site or user paths), a minimal environment (`PATH` set to
`os.defpath`, `LANG`/`LC_ALL` when set, nothing else: no API keys, no database URL) and a
fresh empty temporary folder as its working directory. That keeps secrets out of it, but
it is not a sandbox: the code can still read the user's files and reach the network.

The source defines `grade(sample, item)`, which gets OpenAI's `sample` (`output_text`,
`output_json`) and `item` (the target's reference when it is an object, else
`{"reference": ...}`) and returns a number in 0..1. The process runs in a session of its
own and is killed with its process group after `timeout` seconds (default 10, kept below
`RUBRICFLOW_CHECK_TIMEOUT` so the grader stops before the check that runs it); its CPU
time (the timeout and a second) and address space (1 GiB) are capped where the platform
allows; an exception, a timeout or a score outside 0..1 is the criterion's
error, naming the grader.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from typing import Any

from rubricflow.results import Target
from rubricflow.settings import current as current_settings

__all__ = ["DEFAULT_TIMEOUT", "PythonGraderError", "run_python_grader"]

DEFAULT_TIMEOUT = 10.0
_MEMORY_BYTES = 1 << 30

_RUNNER = r"""
import json, sys
given = json.loads(sys.stdin.read())
out, sys.stdout = sys.stdout, sys.stderr  # what the grader prints is not its score
space = {"__name__": "grader"}
exec(compile(given["source"], "<python grader>", "exec"), space)
grade = space.get("grade")
if not callable(grade):
    raise SystemExit("the grader's source defines no grade(sample, item)")
score = grade(given["sample"], given["item"])
out.write(json.dumps({"score": score}))
"""


#: prctl(2): the signal a process gets when its parent dies
_PR_SET_PDEATHSIG = 1


class PythonGraderError(RuntimeError):
    """A python grader failed: its exception, a timeout, or an unusable score."""


def _child_setup(cpu_seconds: int) -> Callable[[], None]:
    """What the grader's process does before it runs: Ctrl-C and SIGTERM kill it again
    (a check pool process ignores both, and a child would inherit that), its CPU time is
    capped just past its timeout (a busy loop dies even if no one is left to kill it),
    its address space is capped, and on Linux it is killed when its parent dies for any
    reason (out of memory, SIGKILL), so a sleeping grader is never left behind."""

    def setup() -> None:  # pragma: no cover - runs in the child
        import resource
        import signal

        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if sys.platform.startswith("linux"):
            import ctypes

            with contextlib.suppress(OSError, AttributeError):
                # the parent is the thread that waits on the grader until it ends
                ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        for limit, value in (
            (resource.RLIMIT_CPU, cpu_seconds),
            (resource.RLIMIT_AS, _MEMORY_BYTES),
        ):
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(limit, (value, value))

    return setup


def _time_allowed(timeout: float) -> float:
    """The grader's timeout, kept below the check's own (`check_timeout`) so the grader
    times out first and is killed with its process group, never left behind by a check
    process that was killed at its limit."""
    check = current_settings().check_timeout
    if check > 0:
        timeout = min(timeout, check - min(1.0, check * 0.2))
    return timeout


def _run(command: list[str], payload: str, timeout: float) -> tuple[int, str, str]:
    """Run the grader in a session of its own, in a fresh empty folder; on its timeout,
    kill its whole process group."""
    unix = sys.platform != "win32"
    with tempfile.TemporaryDirectory(prefix="rubricflow-grader-") as folder:
        process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_environment(),
            cwd=folder,
            preexec_fn=_child_setup(math.ceil(timeout) + 1) if unix else None,
            start_new_session=unix,
        )
        try:
            out, err = process.communicate(payload, timeout=timeout)
        except subprocess.TimeoutExpired:
            if unix:
                with contextlib.suppress(OSError):
                    os.killpg(process.pid, signal.SIGKILL)
            process.kill()
            process.communicate()
            raise
        except BaseException:
            process.kill()
            process.wait()
            raise
    return process.returncode, out, err


def _environment() -> dict[str, str]:
    """What the grader's process sees of the environment: a PATH and the locale, nothing
    else (the parent's API keys and database URL stay out)."""
    kept = {"PATH": os.defpath}
    for name in ("LANG", "LC_ALL"):
        value = os.environ.get(name)
        if value is not None:
            kept[name] = value
    return kept


def _sample(target: Target) -> dict[str, Any]:
    content = target.content
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    parsed: Any = content
    if isinstance(content, str):
        try:
            parsed = json.loads(content)
        except ValueError:
            parsed = None
    return {"output_text": text, "output_json": parsed}


def run_python_grader(target: Target, *, source: str, timeout: float = DEFAULT_TIMEOUT) -> float:
    """The grader's score for `target` (0..1), from `grade(sample, item)` run in a
    subprocess; raises `PythonGraderError` when it fails."""
    reference = target.reference
    item = reference if isinstance(reference, dict) else {"reference": reference}
    payload = json.dumps({"source": source, "sample": _sample(target), "item": item}, default=str)
    allowed = _time_allowed(timeout)
    try:
        code, out, err = _run([sys.executable, "-I", "-c", _RUNNER], payload, allowed)
    except subprocess.TimeoutExpired:
        raise PythonGraderError(
            f"the python grader ran past its {allowed:g}s timeout and was stopped"
        ) from None
    if code != 0:
        lines = [line for line in err.strip().splitlines() if line.strip()]
        why = lines[-1] if lines else f"exit status {code}"
        raise PythonGraderError(f"the python grader failed: {why}")
    try:
        score = json.loads(out)["score"]
    except (ValueError, KeyError, TypeError):
        raise PythonGraderError(
            "the python grader printed something other than its score"
        ) from None
    if (
        isinstance(score, bool)
        or not isinstance(score, int | float)
        or not math.isfinite(score)
        or not 0 <= score <= 1
    ):
        raise PythonGraderError(
            f"the python grader returned {score!r}; rubricflow takes a score in 0..1"
        )
    return float(score)
