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
`{"reference": ...}`) and returns a number in 0..1. The process is killed
after `timeout` seconds (default 10) and its address space is capped (1 GiB where the
platform allows); an exception, a timeout or a score outside 0..1 is the criterion's
error, naming the grader.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
from typing import Any

from rubricflow.results import Target

__all__ = ["DEFAULT_TIMEOUT", "PythonGraderError", "run_python_grader"]

DEFAULT_TIMEOUT = 10.0
_MEMORY_BYTES = 1 << 30

_RUNNER = r"""
import json, sys
given = json.loads(sys.stdin.read())
space = {"__name__": "grader"}
exec(compile(given["source"], "<python grader>", "exec"), space)
grade = space.get("grade")
if not callable(grade):
    raise SystemExit("the grader's source defines no grade(sample, item)")
score = grade(given["sample"], given["item"])
sys.stdout.write(json.dumps({"score": score}))
"""


class PythonGraderError(RuntimeError):
    """A python grader failed: its exception, a timeout, or an unusable score."""


def _limit_memory() -> None:  # pragma: no cover - runs in the child
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (_MEMORY_BYTES, _MEMORY_BYTES))
    except (ImportError, ValueError, OSError):
        pass


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
    try:
        with tempfile.TemporaryDirectory(prefix="rubricflow-grader-") as folder:
            done = subprocess.run(
                [sys.executable, "-I", "-c", _RUNNER],
                input=payload,
                capture_output=True,
                text=True,
                timeout=timeout,
                env=_environment(),
                cwd=folder,
                preexec_fn=_limit_memory if sys.platform != "win32" else None,
                check=False,
            )
    except subprocess.TimeoutExpired:
        raise PythonGraderError(
            f"the python grader ran past its {timeout:g}s timeout and was stopped"
        ) from None
    if done.returncode != 0:
        lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
        why = lines[-1] if lines else f"exit status {done.returncode}"
        raise PythonGraderError(f"the python grader failed: {why}")
    try:
        score = json.loads(done.stdout)["score"]
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
