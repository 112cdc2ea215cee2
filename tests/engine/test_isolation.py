"""Checks that can run away run in the check process pool (issue 16, item 4): a spinning
check, a backtracking `re` or a memory bomb is an `error` naming the limit it ran past,
within about that limit, while the event loop keeps running; the other criteria of the
evaluation still score, and the stuck process is replaced for the next evaluation.

The checks come from `tests/engine/poison_checks.py`, imported with `allow_import`."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Awaitable, Iterator, Mapping
from typing import Any

import pytest

from rubricflow import hookimpl
from rubricflow.engine import check_pool
from rubricflow.engine.executor import evaluate
from rubricflow.engine.isolation import (
    hold_check_pool,
    isolation_plan,
    isolation_settings,
    shutdown_check_pool,
)
from rubricflow.errors import ConfigurationError
from rubricflow.model import Rubric, parse_rubric
from rubricflow.plugins import create_plugin_manager, default_plugins
from rubricflow.results import Evaluation
from rubricflow.scoring import ScoringContext

POISON = "engine.poison_checks"


@pytest.fixture(autouse=True)
def budgets(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Small budgets, so a runaway check costs a second; the pool is stopped afterwards."""
    monkeypatch.setenv("RUBRICFLOW_CHECK_TIMEOUT", "1")
    monkeypatch.delenv("RUBRICFLOW_CHECK_ISOLATION", raising=False)
    monkeypatch.delenv("RUBRICFLOW_CHECK_CPU_SECONDS", raising=False)
    monkeypatch.delenv("RUBRICFLOW_CHECK_MEMORY_MB", raising=False)
    yield
    shutdown_check_pool()


def check(criterion_id: str, function: str, **config: Any) -> dict[str, Any]:
    scoring: dict[str, Any] = {"method": "deterministic", "function": function}
    if config:
        scoring["config"] = config
    return {"id": criterion_id, "description": criterion_id, "scoring": scoring}


def leveled(criterion_id: str, function: str, **config: Any) -> dict[str, Any]:
    levels = [
        {"id": "poor", "label": "Poor", "description": "poor", "score": 0.0},
        {"id": "good", "label": "Good", "description": "good", "score": 1.0},
    ]
    return {**check(criterion_id, function, **config), "levels": levels}


def schema_criterion(criterion_id: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": criterion_id,
        "description": criterion_id,
        "scoring": {"method": "schema", "schema": dict(schema)},
    }


def rubric(*criteria: dict[str, Any]) -> Rubric:
    return parse_rubric(
        {"id": "poison", "name": "Poison", "version": "1.0.0", "criteria": list(criteria)}
    )


def by_id(evaluation: Evaluation) -> dict[str, Any]:
    return {result.criterion_id: result for result in evaluation.criteria}


async def responsively(work: Awaitable[Evaluation]) -> tuple[Evaluation, float, float]:
    """(the evaluation, seconds it took, the longest the event loop went without running
    a 20 ms ticker beside it)."""
    longest = 0.0
    done = asyncio.Event()

    async def ticker() -> None:
        nonlocal longest
        last = time.monotonic()
        while not done.is_set():
            await asyncio.sleep(0.02)
            now = time.monotonic()
            longest = max(longest, now - last)
            last = now

    ticking = asyncio.create_task(ticker())
    started = time.monotonic()
    try:
        evaluation = await work
    finally:
        done.set()
        await ticking
    return evaluation, time.monotonic() - started, longest


def pool_pids() -> list[int]:
    pool = check_pool._pool
    assert pool is not None
    return [p.popen.pid for p in [*pool._idle, *pool._busy]]


def gone(pid: int) -> bool:
    """Whether `pid` has exited and been reaped (a zombie still answers a signal 0)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def until(condition: Any, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def test_runaway_checks_are_errors_naming_the_budget_and_the_loop_keeps_running() -> None:
    poison = rubric(
        check("first", f"{POISON}:non_empty"),
        check("spin", f"{POISON}:spins"),
        check("evidence", f"{POISON}:with_evidence"),
        check("backtrack", f"{POISON}:backtracks"),
        check("last", f"{POISON}:non_empty"),
    )
    # warm the pool up, so the figures below are the budgets', not a first start's
    await evaluate(rubric(check("warm", f"{POISON}:non_empty")), "x", allow_import=True)

    evaluation, seconds, longest = await responsively(
        evaluate(poison, "some content", allow_import=True)
    )
    results = by_id(evaluation)
    for runaway, name in (("spin", "spins"), ("backtrack", "backtracks")):
        assert results[runaway].status == "error"
        assert results[runaway].notes == (
            f"check '{POISON}:{name}' exceeded its wall-clock budget of 1 s "
            "(RUBRICFLOW_CHECK_TIMEOUT); raise it or fix the check"
        )
    assert [results[c].status for c in ("first", "evidence", "last")] == ["scored"] * 3
    assert results["evidence"].evidence == ("found x", "found y")
    assert evaluation.verdict == "ERROR" or evaluation.coverage < 1
    assert seconds < 8  # two budgets of 1 s, plus a replacement's start
    assert longest < 0.5  # the event loop never stalled

    # the stuck processes were replaced: the next evaluation scores at once
    evaluation, seconds, _ = await responsively(
        evaluate(rubric(check("ok", f"{POISON}:non_empty")), "text", allow_import=True)
    )
    assert by_id(evaluation)["ok"].status == "scored"
    assert seconds < 5


async def test_results_are_the_same_in_the_pool_and_in_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    checks = rubric(
        leveled("level", f"{POISON}:level", value="good"),
        check("fraction", f"{POISON}:fraction"),
        check("evidence", f"{POISON}:with_evidence"),
        check("raises", f"{POISON}:raises"),
        leveled("unknown", f"{POISON}:unknown_level"),
        check("async", f"{POISON}:awaits"),
        check("config", f"{POISON}:non_empty", surplus=1),
        schema_criterion("schema", {"type": "object", "required": ["a"]}),
        check("builtin", "non_empty"),
    )

    async def scored() -> list[dict[str, Any]]:
        evaluation = await evaluate(checks, {"content": {"b": 1}}, allow_import=True)
        return [r.model_dump(exclude={"duration_ms"}) for r in evaluation.criteria]

    context = ScoringContext(rubric=checks, plugins=default_plugins(), allow_import=True)
    plan = isolation_plan(checks, context, "auto")
    # not rubricflow's own check, nor the async one (it awaits, concurrently, in-process)
    assert plan is not None and plan.ids == {
        "level",
        "fraction",
        "evidence",
        "raises",
        "unknown",
        "config",
        "schema",
    }
    everything = isolation_plan(checks, context, "process")
    assert everything is not None and "async" in everything.ids
    pooled = await scored()
    monkeypatch.setenv("RUBRICFLOW_CHECK_ISOLATION", "off")
    assert await scored() == pooled
    assert [r["status"] for r in pooled] == [
        "scored",
        "scored",
        "scored",
        "error",
        "error",
        "scored",
        "error",
        "scored",
        "scored",
    ]
    assert "raised ValueError: the check blew up" in pooled[3]["notes"]


async def test_a_memory_bomb_is_an_error_naming_the_memory_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RUBRICFLOW_CHECK_MEMORY_MB", "1024")
    evaluation = await evaluate(
        rubric(check("bomb", f"{POISON}:eats_memory"), check("ok", f"{POISON}:non_empty")),
        "text",
        allow_import=True,
    )
    results = by_id(evaluation)
    assert results["bomb"].status == "error"
    assert results["bomb"].notes == (
        f"check '{POISON}:eats_memory' exceeded its memory limit of 1024 MB "
        "(RUBRICFLOW_CHECK_MEMORY_MB); raise it or fix the check"
    )
    assert results["ok"].status == "scored"


async def test_a_check_past_its_cpu_limit_is_an_error_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RUBRICFLOW_CHECK_TIMEOUT", "30")
    monkeypatch.setenv("RUBRICFLOW_CHECK_CPU_SECONDS", "1")
    evaluation, seconds, _ = await responsively(
        evaluate(rubric(check("spin", f"{POISON}:spins")), "x", allow_import=True)
    )
    (result,) = evaluation.criteria
    assert result.status == "error"
    assert result.notes == (
        f"check '{POISON}:spins' exceeded its CPU-time limit of 1 s "
        "(RUBRICFLOW_CHECK_CPU_SECONDS); raise it or fix the check"
    )
    assert seconds < 10


async def test_a_check_that_ends_its_process_is_an_error_and_the_rest_still_score() -> None:
    evaluation = await evaluate(
        rubric(check("exit", f"{POISON}:exits"), check("ok", f"{POISON}:non_empty")),
        "text",
        allow_import=True,
    )
    results = by_id(evaluation)
    assert results["exit"].status == "error"
    assert "killed its check process (exit code 3)" in results["exit"].notes
    assert results["ok"].status == "scored"


async def test_a_pathological_schema_is_held_to_the_budget() -> None:
    # each level's anyOf tries both branches of the next: 2**40 validations of a number
    depth = 40
    definitions: dict[str, Any] = {
        f"a{n}": {"anyOf": [{"$ref": f"#/$defs/a{n + 1}"}, {"$ref": f"#/$defs/a{n + 1}"}]}
        for n in range(depth)
    }
    definitions[f"a{depth}"] = {"type": "string"}
    schema = {"$defs": definitions, "$ref": "#/$defs/a0"}
    evaluation, seconds, longest = await responsively(
        evaluate(
            rubric(
                schema_criterion("exponential", schema),
                schema_criterion("plain", {"type": "object"}),
            ),
            {"content": {"a": 1}},
        )
    )
    results = by_id(evaluation)
    assert results["exponential"].status == "error"
    assert results["exponential"].notes == (
        "the schema check of 'exponential' exceeded its wall-clock budget of 1 s "
        "(RUBRICFLOW_CHECK_TIMEOUT); raise it or fix the check"
    )
    assert results["plain"].status == "scored"
    assert seconds < 8 and longest < 0.5


@pytest.mark.parametrize(
    ("schema", "content", "found"),
    [
        ({"type": "string", "pattern": "^(a+)+$"}, json.dumps("a" * 64 + "!"), "does not match"),
        (
            {"type": "object", "patternProperties": {"^(a+)+$": {"type": "string"}}},
            {"a" * 64 + "!": 1, "aaa": 1},
            "$.aaa: 1 is not of type 'string'",
        ),
        (
            {
                "type": "object",
                "patternProperties": {"^(a+)+$": {"type": "string"}},
                "additionalProperties": False,
            },
            {"a" * 64 + "!": 1},
            "does not match any of the regexes: '^(a+)+$'",
        ),
    ],
)
async def test_schema_patterns_are_bounded_in_process_too(
    monkeypatch: pytest.MonkeyPatch, schema: dict[str, Any], content: Any, found: str
) -> None:
    monkeypatch.setenv("RUBRICFLOW_CHECK_ISOLATION", "off")
    started = time.monotonic()
    evaluation = await evaluate(rubric(schema_criterion("shape", schema)), {"content": content})
    (result,) = evaluation.criteria
    assert time.monotonic() - started < 2  # on RE2; Python's re would run for ages
    assert result.status == "scored" and result.passed is False
    assert found in " ".join(result.evidence)


async def test_a_schema_pattern_past_the_regex_limit_is_an_error_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RUBRICFLOW_CHECK_ISOLATION", "off")
    monkeypatch.setenv("RUBRICFLOW_REGEX_TIMEOUT", "0.2")
    # a backreference: RE2 refuses it, so it runs on `regex` with the time limit
    schema = {"type": "string", "pattern": r"^(a|a)+\1$"}
    content = json.dumps("a" * 40 + "!")  # text content is read as JSON
    evaluation = await evaluate(rubric(schema_criterion("shape", schema)), content)
    (result,) = evaluation.criteria
    assert result.status == "error"
    assert "regex time limit (RUBRICFLOW_REGEX_TIMEOUT)" in result.notes


class InProcessChecks:
    """Checks a pool process cannot rebuild: a bound method and a closure."""

    __name__ = "in-process-checks"

    def __init__(self) -> None:
        self.calls = 0
        limit = 3

        def closure(target: Any) -> bool:
            return len(str(target.content)) > limit

        self.closure = closure

    @hookimpl
    def rubricflow_check_functions(self) -> Mapping[str, Any]:
        return {
            "bound": self.bound,
            "closure": self.closure,
            "sleeps": self.sleeps,
            "static": self.static,
        }

    @staticmethod
    def static(target: Any) -> bool:
        return True

    def bound(self, target: Any) -> bool:
        self.calls += 1
        return True

    async def sleeps(self, target: Any) -> bool:
        await asyncio.sleep(30)
        return True


def test_what_runs_in_the_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    plugins = create_plugin_manager(plugins=[InProcessChecks()], load_entry_points=False)
    checks = rubric(
        check("builtin", "non_empty"),
        check("bound", "bound"),
        check("closure", "closure"),
        check("static", "static"),  # importable, but its plugin was given in-process
        check("imported", f"{POISON}:non_empty"),
        schema_criterion("schema", {"type": "string"}),
        {"id": "judged", "description": "judged", "scoring": {"method": "llm"}},
    )

    def planned(mode: Any, allow_import: bool = True) -> set[str]:
        context = ScoringContext(rubric=checks, plugins=plugins, allow_import=allow_import)
        plan = isolation_plan(checks, context, mode)
        return set(plan.ids) if plan is not None else set()

    assert planned("auto") == {"imported", "schema"}
    assert planned("process") == {"builtin", "imported", "static", "schema"}
    assert planned("off") == set()
    # not allowed to import it: it stays in-process, which refuses it, saying why
    assert planned("auto", allow_import=False) == {"schema"}


async def test_an_in_process_async_check_is_held_to_the_budget() -> None:
    plugins = create_plugin_manager(plugins=[InProcessChecks()], load_entry_points=False)
    started = time.monotonic()
    evaluation = await evaluate(rubric(check("slow", "sleeps")), "x", plugins=plugins)
    (result,) = evaluation.criteria
    assert result.status == "error"
    assert "exceeded its wall-clock budget of 1 s (RUBRICFLOW_CHECK_TIMEOUT)" in result.notes
    assert time.monotonic() - started < 5


async def test_a_cancelled_evaluation_does_not_leave_its_check_spinning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RUBRICFLOW_CHECK_TIMEOUT", "60")
    spinning = asyncio.create_task(
        evaluate(rubric(check("spin", f"{POISON}:spins")), "x", allow_import=True)
    )
    await until(lambda: check_pool._pool is not None and check_pool._pool._busy)
    pool = check_pool._pool
    assert pool is not None
    (busy,) = pool._busy
    await until(lambda: busy.ready and busy.running()[0] > 0)  # it is scoring
    spinning.cancel()
    with pytest.raises(asyncio.CancelledError):
        await spinning
    await until(lambda: gone(busy.popen.pid), timeout=5)  # killed and reaped
    assert len(pool_pids()) == pool.size  # and replaced


async def test_the_pool_stops_with_its_last_holder_leaving_no_process() -> None:
    hold = hold_check_pool()
    evaluation = await evaluate(rubric(check("ok", f"{POISON}:non_empty")), "x", allow_import=True)
    assert evaluation.criteria[0].status == "scored"
    pids = pool_pids()
    assert len(pids) == isolation_settings().workers
    hold.release()
    hold.release()  # harmless
    assert check_pool._pool is None
    assert all(gone(pid) for pid in pids)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("RUBRICFLOW_CHECK_ISOLATION", "sometimes", "is not one of auto, process, off"),
        ("RUBRICFLOW_CHECK_TIMEOUT", "soon", "is not a number above 0"),
        ("RUBRICFLOW_CHECK_TIMEOUT", "0", "is not a number above 0"),
        ("RUBRICFLOW_CHECK_CPU_SECONDS", "-1", "is not a number above 0"),
        ("RUBRICFLOW_CHECK_MEMORY_MB", "1.5", "is not a whole number above 0"),
        ("RUBRICFLOW_CHECK_WORKERS", "none", "is not a whole number above 0"),
    ],
)
def test_a_setting_that_is_not_usable_is_refused_naming_it(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, message: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigurationError, match=f"{name}={value!r} {message}"):
        isolation_settings()


# a script that evaluates a schema criterion (it runs in the check pool) in a fresh process
_SCHEMA_EVALUATION = (
    "import asyncio\n"
    "from rubricflow.engine.executor import evaluate\n"
    "from rubricflow.model import parse_rubric\n"
    "rubric = parse_rubric({'id': 'r', 'name': 'R', 'version': '1.0.0', 'criteria': [\n"
    "    {'id': 's', 'description': 'an object',\n"
    "     'scoring': {'method': 'schema', 'schema': {'type': 'object'}}}]})\n"
    "evaluation = asyncio.run(evaluate(rubric, {'content': {'a': 1}}))\n"
)


def test_a_process_that_used_the_pool_exits_without_noise() -> None:
    """The pool processes stop when their parent exits, quietly: no "Exception ignored"
    traceback from an event loop finalised after its pipes were gone (a user of any
    command that ran a schema criterion saw one per pool process)."""
    import subprocess
    import sys

    script = _SCHEMA_EVALUATION + "print(evaluation.verdict)\n"
    env = {**os.environ, "RUBRICFLOW_CHECK_ISOLATION": "auto"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "pass"
    assert done.stderr == ""


def _exited(pid: int) -> bool:
    """Gone, or a zombie waiting for whoever adopted it to reap it."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_pool_processes_exit_when_their_parent_is_killed() -> None:
    """A parent killed with SIGKILL cannot stop its pool: each pool process notices its
    job pipe hang up and exits, so none outlives it."""
    import signal
    import subprocess
    import sys

    script = (
        _SCHEMA_EVALUATION + "import time\n"
        "from rubricflow.engine import check_pool\n"
        "pool = check_pool._pool\n"
        "print(evaluation.verdict, *[p.popen.pid for p in [*pool._idle, *pool._busy]],"
        " flush=True)\n"
        "time.sleep(600)\n"
    )
    env = {**os.environ, "RUBRICFLOW_CHECK_ISOLATION": "auto"}
    parent = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert parent.stdout is not None
        verdict, *pids = parent.stdout.readline().split()
        assert verdict == "pass"
        assert pids and not any(_exited(int(pid)) for pid in pids)
        parent.send_signal(signal.SIGKILL)
        parent.wait(30)
        deadline = time.monotonic() + 20
        while not all(_exited(int(pid)) for pid in pids):
            assert time.monotonic() < deadline, f"pool processes {pids} outlived their parent"
            time.sleep(0.05)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
