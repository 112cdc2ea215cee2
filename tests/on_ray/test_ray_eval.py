"""Evaluation on a real two-node Ray cluster (tests/on_ray/conftest.py) against the scripted
judge server over HTTP: `eval --ray` writes the results file a local `eval` writes, a
Ray Dataset of targets becomes a Dataset of evaluations, the judge's concurrency is one
limit for the whole cluster, and a worker without a plugin the rubric needs says so."""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from llm.scripted import Recorded, Reply, ScriptedServer, openai_reply, schema_of

from rubricflow import evaluate_many, load_rubric
from rubricflow.cli import app

ray = pytest.importorskip("ray")
#: one process runs them all, on the one cluster it starts (tests/on_ray/conftest.py)
pytestmark = pytest.mark.xdist_group("ray-cluster")

REPO = Path(__file__).resolve().parents[2]
#: what may differ between a local run and a Ray run: timings and ids made per call
VOLATILE = {"id", "run_id", "created_at", "duration_ms", "call_id", "started_at", "latency_ms"}

RUBRIC = """\
id: ray-reply
name: Reply checks, judged
version: 1.0.0
pass_threshold: 0.7
criteria:
  - id: polite
    description: The reply is polite.
    scoring: {method: llm}
  - id: answers
    description: The reply answers the question that was asked.
    scoring: {method: llm}
  - id: short
    description: The reply stays under 40 words
    scoring: {method: deterministic, function: word_count_between, config: {max: 40}}
"""


class CountingJudge:
    """Answers MET or UNMET from a hash of what it is asked (the same question gets the
    same answer, whichever actor asks), holding each answer `delay` seconds and counting
    the calls in flight at once."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.in_flight = 0
        self.peak = 0
        self._lock = threading.Lock()

    def __call__(self, request: Recorded) -> Reply:
        with self._lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        try:
            if self.delay:
                time.sleep(self.delay)
            return openai_reply(self.answer(request))
        finally:
            with self._lock:
                self.in_flight -= 1

    @staticmethod
    def answer(request: Recorded) -> dict[str, Any]:
        schema = schema_of(request) or {}
        digest = hashlib.sha256(request.text.encode()).digest()[0]
        verdict = "MET" if digest % 3 else "UNMET"
        if "criteria" in schema.get("properties", {}):
            ids = schema["properties"]["criteria"]["items"]["properties"]["id"]["enum"]
            return {
                "criteria": [{"id": i, "reasoning": "Read it.", "verdict": verdict} for i in ids]
            }
        return {"reasoning": "Read it.", "verdict": verdict}


def _targets(folder: Path, count: int) -> Path:
    path = folder / "targets.jsonl"
    lines = [
        json.dumps(
            {
                "id": f"reply-{i}",
                "query": f"Question {i}?",
                "content": "Thanks for asking. " + "More detail here. " * (i % 7) + f"#{i}",
            }
        )
        for i in range(count)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _stable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def _results(path: Path) -> list[Any]:
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [_stable(line) for line in lines if "criteria" in line]  # not the run's lines


def test_eval_ray_writes_the_results_file_a_local_eval_writes(
    ray_cluster: str, cli: Any, tmp_path: Path
) -> None:
    rubric = tmp_path / "rubric.yaml"
    rubric.write_text(RUBRIC, encoding="utf-8")
    targets = _targets(tmp_path, 40)
    with ScriptedServer(CountingJudge()) as judge:
        spec = f"openai:scripted@{judge.url}/v1"
        common = [str(rubric), str(targets), "--llm", spec, "--no-cache", "--no-progress"]
        local = cli.invoke(app, ["eval", *common, "-o", str(tmp_path / "local.jsonl")])
        remote = cli.invoke(
            app,
            [
                "eval",
                *common,
                "--ray",
                ray_cluster,
                "--ray-actors",
                "3",
                "-o",
                str(tmp_path / "ray.jsonl"),
            ],
        )
    assert local.exit_code == remote.exit_code == 1, (local.output, remote.output)
    ours, theirs = _results(tmp_path / "local.jsonl"), _results(tmp_path / "ray.jsonl")
    assert len(ours) == 40
    assert {line["verdict"] for line in ours} == {"pass", "fail"}  # both kinds compared
    assert theirs == ours
    assert remote.output.splitlines()[-1] == local.output.splitlines()[-1]  # the summary


def test_eval_ray_on_the_repo_example_suite_and_resume(
    ray_cluster: str, cli: Any, tmp_path: Path
) -> None:
    suite = tmp_path / "chatbot"
    shutil.copytree(REPO / "examples" / "chatbot", suite)
    local = cli.invoke(app, ["eval", str(suite / "dataset.yaml"), "-o", str(tmp_path / "l.jsonl")])
    out = tmp_path / "r.jsonl"
    remote = cli.invoke(
        app, ["eval", str(suite / "dataset.yaml"), "--ray", ray_cluster, "-o", str(out)]
    )
    assert local.exit_code == remote.exit_code, (local.output, remote.output)
    assert _results(out) == _results(tmp_path / "l.jsonl")
    # a run cut short after its first two targets: --resume judges only the rest
    lines = out.read_text(encoding="utf-8").splitlines()
    out.write_text("\n".join(lines[:3]) + "\n", encoding="utf-8")
    again = cli.invoke(
        app, ["eval", str(suite / "dataset.yaml"), "--ray", ray_cluster, "-o", str(out), "--resume"]
    )
    assert again.exit_code == local.exit_code, again.output
    assert sorted(json.dumps(x, sort_keys=True) for x in _results(out)) == sorted(
        json.dumps(x, sort_keys=True) for x in _results(tmp_path / "l.jsonl")
    )


def test_a_dataset_of_targets_becomes_a_dataset_of_evaluations(
    ray_cluster: str, tmp_path: Path
) -> None:
    import ray.data

    from rubricflow.ray import evaluate_dataset

    path = tmp_path / "rubric.yaml"
    path.write_text(RUBRIC, encoding="utf-8")
    rubric = load_rubric(path)
    rows = [json.loads(line) for line in _targets(tmp_path, 24).read_text().splitlines()]
    with ScriptedServer(CountingJudge()) as judge:
        spec = f"openai:scripted@{judge.url}/v1"
        evaluated = evaluate_dataset(
            ray.data.from_items(rows), rubric, judge=spec, concurrency=2, batch_size=5
        )
        evaluated.write_json(str(tmp_path / "out"))

        async def local() -> list[Any]:
            return [
                e
                async for e in evaluate_many(rubric, rows, options={"llm": spec, "llm_cache": None})
            ]

        expected = asyncio.run(local())
    written = [
        json.loads(line)
        for file in sorted((tmp_path / "out").glob("*.json"))
        for line in file.read_text(encoding="utf-8").splitlines()
    ]
    records = [json.loads(row["evaluation"]) for row in written]
    got = {r["target_id"]: (r["verdict"], r["score"]) for r in records}
    assert got == {e.target_id: (str(e.verdict), e.score) for e in expected}
    assert {row["id"]: row["verdict"] for row in written} == {k: v for k, (v, _) in got.items()}
    record = json.loads(written[0]["evaluation"])
    assert {c["criterion_id"] for c in record["criteria"]} == {"polite", "answers", "short"}


def test_the_judge_concurrency_is_one_limit_for_the_whole_cluster(
    ray_cluster: str, cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rubricflow.ray.budget import find_budget

    monkeypatch.setenv("RUBRICFLOW_LLM_RPM", "12000")  # and its rpm: held by the budget too
    rubric = tmp_path / "rubric.yaml"
    rubric.write_text(RUBRIC, encoding="utf-8")
    targets = _targets(tmp_path, 36)
    counting = CountingJudge(delay=0.05)
    with ScriptedServer(counting) as judge:
        result = cli.invoke(
            app,
            [
                "eval",
                str(rubric),
                str(targets),
                "--llm",
                f"openai:scripted@{judge.url}/v1",
                "--no-cache",
                "--no-progress",
                "--ray",
                ray_cluster,
                "--ray-actors",
                "4",
                "--judge-concurrency",
                "3",
            ],
        )
        figures = ray.get(find_budget(f"openai:scripted@{judge.url}/v1", 3, 12000).figures.remote())
    assert result.exit_code == 1, result.output
    # four actors, each allowed 3 calls of its own: 12 at once without the shared budget
    assert counting.peak <= 3
    assert len(judge.requests) >= 36
    assert figures["rpm"] == 12000 and figures["admitted"] == len(judge.requests)
    assert figures["closest_starts"] >= 0.005 - 0.004  # 60/12000 s apart, at the actor


def _needs_a_plugin() -> Any:
    from rubricflow.model import Rubric

    return Rubric.model_validate(
        {
            "id": "needs-a-plugin",
            "criteria": [
                {"id": "tone", "description": "Warm.", "scoring": {"method": "sentiment_scorer"}}
            ],
        }
    )


def test_a_worker_without_a_scorer_the_rubric_needs_refuses_its_first_batch_naming_it() -> None:
    from rubricflow.errors import PluginError
    from rubricflow.ray.actors import BatchEvaluator, JudgeConfig

    rubric = _needs_a_plugin()
    evaluator = BatchEvaluator(JudgeConfig(None))
    rows = [{"id": "t1", "content": "Hello there."}]
    with pytest.raises(PluginError) as refused:
        asyncio.run(evaluator.evaluate(rows, ("key", [{rubric.content_hash: rubric}]), {}))
    assert "tone needs scorer 'sentiment_scorer'" in str(refused.value)
    assert "Install them on every node" in str(refused.value)


def test_an_actor_keeps_the_last_sets_of_rubrics_it_was_sent() -> None:
    """A long suite's chunks each bring their rubrics: an actor scores with each set it is
    sent and keeps the last few, not all of them."""
    from rubricflow.model import Rubric
    from rubricflow.ray.actors import RUBRIC_SETS_KEPT, BatchEvaluator, JudgeConfig

    evaluator = BatchEvaluator(JudgeConfig(None))

    def words(limit: int) -> Rubric:
        return Rubric.model_validate(
            {
                "id": f"at-most-{limit}",
                "criteria": [
                    {
                        "id": "short",
                        "description": "Short.",
                        "scoring": {
                            "method": "deterministic",
                            "function": "word_count_between",
                            "config": {"max": limit},
                        },
                    }
                ],
            }
        )

    async def score(limit: int) -> bool:
        rubric = words(limit)
        rows = [{"id": "t", "content": "one two three four five"}]
        columns = await evaluator.evaluate(
            rows, (f"set-{limit}", [{rubric.content_hash: rubric}]), {}
        )
        return bool(columns["passed"][0])

    async def all_limits() -> list[bool]:
        return [await score(limit) for limit in range(1, RUBRIC_SETS_KEPT + 4)]

    assert asyncio.run(all_limits()) == [limit >= 5 for limit in range(1, RUBRIC_SETS_KEPT + 4)]
    assert len(evaluator._rubrics) == RUBRIC_SETS_KEPT


def imported_check(target: Any) -> Any:
    from rubricflow.scoring import CheckResult

    return CheckResult(1.0, ["imported and run"])


def test_an_actor_made_to_allow_imports_scores_a_function_the_rubric_names() -> None:
    """`evaluate_dataset(..., allow_import=True)` reaches the scoring, not only the judge
    session: a rubric naming `module:function` is scored, and refused without it."""
    from rubricflow.model import Rubric
    from rubricflow.ray.actors import BatchEvaluator, JudgeConfig

    rubric = Rubric.model_validate(
        {
            "id": "imports",
            "criteria": [
                {
                    "id": "named",
                    "description": "Checked by a named function.",
                    "scoring": {
                        "method": "deterministic",
                        "function": f"{__name__}:imported_check",
                    },
                }
            ],
        }
    )
    rows = [{"id": "t", "content": "Hello."}]
    carried = ("key", [{rubric.content_hash: rubric}])

    def verdict(allow: bool) -> str:
        evaluator = BatchEvaluator(JudgeConfig(None), allow_import=allow)
        return str(asyncio.run(evaluator.evaluate(rows, carried, {}))["verdict"][0])

    assert verdict(True) == "pass"
    assert verdict(False) == "incomplete"


def test_on_the_cluster_a_worker_without_the_scorer_stops_the_run_naming_it(
    ray_cluster: str,
) -> None:
    """The driver has the scorer (a plugin of its own process), the workers do not: the
    run stops with the worker's words, not a Ray traceback."""
    from rubricflow.errors import PluginError
    from rubricflow.ray import RayEvaluator
    from rubricflow.targets import as_target

    rubric = _needs_a_plugin()
    evaluator = RayEvaluator(address=ray_cluster, actors=2, judge=None, batch_size=2)

    async def run() -> list[Any]:
        cases = [(rubric, as_target({"id": f"t{i}", "content": "Hi."})) for i in range(6)]
        return [e async for e in evaluator(cases, target_concurrency=4)]

    with pytest.raises(PluginError) as refused:
        asyncio.run(run())
    assert "lacks plugins the rubric needs" in str(refused.value)
    assert "tone needs scorer 'sentiment_scorer'" in str(refused.value)


def test_a_database_password_stays_out_of_what_the_actors_are_started_with(
    ray_cluster: str,
) -> None:
    """The run's store URL reaches each actor whole (its judge cache opens with it), but
    its password is not among the actors' start-up arguments, which Ray's state API and
    logs show: it travels in the object store."""
    import cloudpickle

    from rubricflow.ray.actors import JudgeConfig

    url = "postgresql://rubric:s3cret-pw@127.0.0.1:5432/test"
    config = JudgeConfig("openai:m@http://127.0.0.1:9/v1", cache=url)
    assert b"s3cret-pw" not in cloudpickle.dumps(config)
    assert config.cache == "postgresql://rubric:***@127.0.0.1:5432/test"
    assert cloudpickle.loads(cloudpickle.dumps(config)).cache_option() == url
    assert JudgeConfig(None, cache="memory").cache_option() == "memory"


def test_the_budget_actors_process_does_not_load_ray_data() -> None:
    """The budget actor's process imports `rubricflow.ray.budget` only: Ray Data and
    pandas (half a second of its start, beside the evaluation actors') stay out, and the
    package's names still load when used."""
    probe = (
        "import sys, rubricflow.ray.budget; "
        "print('ray.data' in sys.modules, 'pandas' in sys.modules); "
        "from rubricflow.ray import RayEvaluator, evaluate_dataset; "
        "print('ray.data' in sys.modules, callable(evaluate_dataset))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.split() == ["False", "False", "True", "True"]
    import rubricflow.ray

    with pytest.raises(AttributeError, match="no attribute 'evaluate_datasets'"):
        rubricflow.ray.evaluate_datasets  # noqa: B018
