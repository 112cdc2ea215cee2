"""The cluster as one: sixteen actors under one judge budget (calls in flight and
requests per minute, held by the named budget actor), one judge cache shared through
PostgreSQL, faults (an actor killed mid-batch, a judge outage, a driver interrupted
twice), and rewards for verl's and OpenRLHF's Ray workers judged by a pool of actors.
On the two-node loopback cluster of tests/on_ray/conftest.py, against the scripted judge
server over HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from llm.scripted import Recorded, Reply, ScriptedServer

from rubricflow import evaluate_many, load_rubric
from rubricflow.cli import app

from .test_ray_eval import RUBRIC, CountingJudge, _results, _targets

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.xdist_group("ray-cluster")

PG_ADMIN = os.environ.get("RUBRICFLOW_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


def _rubric(folder: Path) -> Any:
    path = folder / "rubric.yaml"
    path.write_text(RUBRIC, encoding="utf-8")
    return load_rubric(path)


def _rows(folder: Path, count: int) -> list[dict[str, Any]]:
    return [json.loads(line) for line in _targets(folder, count).read_text().splitlines()]


def _local(rubric: Any, rows: list[dict[str, Any]], spec: str, **settings: Any) -> dict:
    async def run() -> list[Any]:
        options: dict[str, Any] = {"llm": spec, "llm_cache": None}
        if settings:
            options["llm_settings"] = settings
        return [e async for e in evaluate_many(rubric, rows, options=options)]

    return {e.target_id: _outcome(json.loads(e.model_dump_json())) for e in asyncio.run(run())}


def _outcome(record: dict[str, Any]) -> tuple[Any, ...]:
    statuses = tuple(sorted((c["criterion_id"], c["status"]) for c in record["criteria"]))
    return (record["verdict"], record["score"], statuses)


def _evaluated(dataset: Any) -> list[dict[str, Any]]:
    return [json.loads(row["evaluation"]) for row in dataset.take_all()]


# --- one budget: calls in flight and requests per minute -------------------------------


def test_the_budget_actor_spaces_starts_by_the_rpm() -> None:
    from rubricflow.ray.budget import JudgeBudget

    async def run() -> dict[str, Any]:
        budget = JudgeBudget(2, rpm=1200)  # a start every 50 ms at most

        async def call() -> None:
            await budget.acquire()
            await asyncio.sleep(0.01)
            await budget.release()

        await asyncio.gather(*(call() for _ in range(6)))
        return await budget.figures()

    figures = asyncio.run(run())
    assert figures["admitted"] == 6 and figures["peak"] <= 2
    assert figures["closest_starts"] >= 0.05 - 0.005  # the loop's clock resolution


class _InProcess:
    """A JudgeBudget's methods called as a Ray actor handle's are (`.remote(...)`), in
    this process. As with Ray, a call is sent at once: it runs until it first waits (a
    release completes there and then, even if the caller's loop stops next)."""

    def __init__(self, budget: Any) -> None:
        self._budget = budget

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._budget, name)

        class Remote:
            @staticmethod
            def remote(*args: Any) -> Any:
                return asyncio.ensure_future(_sent_at_once(method(*args)))

        return Remote


def _sent_at_once(call: Any) -> Any:
    """`call` (a coroutine) run now up to its first wait; an awaitable of its result."""
    try:
        step = call.send(None)
    except StopIteration as done:
        finished = asyncio.get_running_loop().create_future()
        finished.set_result(done.value)
        return finished

    async def rest(step: Any) -> Any:
        while True:  # the coroutine waits on `step` (a future, or None for a bare turn)
            if step is None:
                await asyncio.sleep(0)
            else:
                await asyncio.wait({step})
            try:
                step = call.send(None)
            except StopIteration as done:
                return done.value

    return rest(step)


def test_leased_slots_pass_between_one_actors_calls_and_the_budget_still_bounds_all() -> None:
    """Two actors of a budget of 3, twenty calls each: a slot a call frees goes to the
    actor's next waiting call (fewer grants than calls), never more than 3 calls run at
    once, and every slot is back in the budget at the end."""
    from rubricflow.ray.budget import SPARE_TURNS, JudgeBudget, SlotLeases

    async def run() -> tuple[int, dict[str, Any]]:
        budget = JudgeBudget(3)
        handle = _InProcess(budget)
        running = {"now": 0, "peak": 0}

        async def call(leases: Any, number: int) -> None:
            granted = await leases.take()
            running["now"] += 1
            running["peak"] = max(running["peak"], running["now"])
            await asyncio.sleep(0.001 * (number % 3))
            running["now"] -= 1
            leases.give_back(granted)

        actors = [SlotLeases(handle, f"run/actor-{i}") for i in range(2)]
        await asyncio.gather(*(call(a, n) for a in actors for n in range(20)))
        # kept slots go back once no call took them; the releases are sent, not awaited
        for _ in range(SPARE_TURNS + 10):
            await asyncio.sleep(0)
        return running["peak"], await budget.figures()

    peak, figures = asyncio.run(run())
    assert 1 < peak <= 3
    assert figures["peak"] <= 3 and figures["in_flight"] == 0
    assert figures["admitted"] < 40  # leased slots served several calls each


def test_a_call_behind_the_judge_slots_takes_the_slot_the_last_call_left() -> None:
    """As in a provider: each call takes one of the actor's 2 judge slots, then a budget
    slot, and frees them in the other order, so no call waits at the budget when one
    gives its slot back. Thirty calls are served by the slots kept for the next call
    (the budget asked a few times, not thirty), and idle they go back to the budget
    within a few loop turns."""
    from rubricflow.llm.slots import OrderedSlots
    from rubricflow.ray.budget import SPARE_TURNS, JudgeBudget, SlotLeases

    budget = JudgeBudget(4)
    leases = SlotLeases(_InProcess(budget), "run/actor")

    async def run() -> tuple[dict[str, Any], dict[str, Any]]:
        judge_slots = OrderedSlots(2)

        async def call() -> None:
            async with judge_slots:
                granted = await leases.take()
                try:
                    await asyncio.sleep(0.001)
                finally:
                    leases.give_back(granted)

        await asyncio.gather(*(call() for _ in range(30)))
        busy = await budget.figures()
        for _ in range(SPARE_TURNS + 10):
            await asyncio.sleep(0)
        return busy, await budget.figures()

    busy, idle = asyncio.run(run())
    assert busy["admitted"] <= 4 and busy["peak"] <= 2
    assert idle["in_flight"] == 0 and leases.spare == 0


def test_a_kept_slot_goes_back_when_its_loop_ends_or_its_lease_runs_out() -> None:
    """A slot kept as the last call's loop ends (a loop per call, as a sync bridge makes)
    is back in the budget once `asyncio.run` returns; one kept past its lease is not
    used: it goes back and a new slot is asked for."""
    from rubricflow.ray.budget import JudgeBudget, SlotLeases

    budget = JudgeBudget(2)

    async def one_call(leases: Any) -> None:
        leases.give_back(await leases.take())  # kept: no call waits for it

    ended = SlotLeases(_InProcess(budget), "run/ended")
    asyncio.run(one_call(ended))
    assert asyncio.run(budget.figures())["in_flight"] == 0 and ended.spare == 0

    async def expired() -> tuple[int, dict[str, Any]]:
        short = SlotLeases(_InProcess(budget), "run/short", lease_seconds=0.01, spare_turns=10**6)
        short.give_back(await short.take())
        time.sleep(0.02)  # the lease runs out while the slot is kept (no loop turn passes)
        before = (await budget.figures())["admitted"]
        short.give_back(await short.take())
        return before, await budget.figures()

    before, after = asyncio.run(expired())
    assert after["admitted"] == before + 1  # a new slot, not the expired kept one
    assert after["in_flight"] == 1  # the new one, kept; the expired one went back


def test_a_run_that_ends_gives_back_the_slots_its_stopped_actors_held() -> None:
    """An interrupted run's actors are stopped holding slots; when the driver closes the
    run they come back, so the next run against the same judge is not starved, and a
    late actor of the closed run gets no slot."""
    from rubricflow.ray.budget import JudgeBudget

    async def run() -> tuple[int, dict[str, Any], str]:
        budget = JudgeBudget(2)
        await budget.acquire("old-run/actor-1")
        await budget.acquire("old-run/actor-2")
        given = await budget.close_run("old-run")
        await asyncio.wait_for(budget.acquire("new-run/actor-3"), timeout=30)
        try:
            await budget.acquire("old-run/actor-1")
            refused = ""
        except RuntimeError as error:
            refused = str(error)
        return given, await budget.figures(), refused

    given, figures, refused = asyncio.run(run())
    assert given == 2
    assert figures["in_flight"] == 1 and figures["reclaimed"] == 2
    assert "has ended" in refused


def test_eight_actors_never_exceed_the_cluster_wide_limit_even_when_one_is_killed(
    ray_cluster: str, tmp_path: Path
) -> None:
    import ray.data

    from rubricflow.ray import evaluate_dataset
    from rubricflow.ray.budget import find_budget

    rubric = _rubric(tmp_path)
    rows = _rows(tmp_path, 24)
    counting = CountingJudge(delay=0.05)
    with ScriptedServer(counting) as judge:
        spec = f"openai:scripted@{judge.url}/v1"
        # one actor is killed mid-batch, holding slots: Ray restarts it, its batch runs
        # again, and the budget gets its slots back
        killer = _kill_an_evaluation_actor_after(judge, 10)
        evaluated = evaluate_dataset(
            ray.data.from_items(rows),
            rubric,
            judge=spec,
            # eight actors (sixteen cost the suite 20 s more of start-up, proving no more),
            # each allowed 4 calls of its own: 32 at once
            concurrency=8,
            judge_concurrency=4,
            cluster_judge_limit=5,
            judge_rpm=6000,  # a start every 10 ms across the cluster
            batch_size=3,
            actor_cpus=0.25,
        )
        records = _evaluated(evaluated)
        killer.join(timeout=60)
        figures = ray.get(find_budget(spec, 5, 6000).figures.remote())
        peak, asked = counting.peak, len(judge.requests)
        expected = _local(rubric, rows, spec)
    assert killer.killed, "no evaluation actor was found to kill"  # type: ignore[attr-defined]
    ids = [r["target_id"] for r in records]
    assert sorted(ids) == sorted(expected) and len(ids) == len(set(ids))  # none lost or twice
    assert {r["target_id"]: _outcome(r) for r in records} == expected
    assert 1 < peak <= 5  # at the judge: never more than the cluster's limit
    assert figures["peak"] <= 5 and figures["admitted"] >= asked
    assert figures["rpm"] == 6000 and figures["closest_starts"] >= 0.01 - 0.005


# --- one cache for the whole cluster ----------------------------------------------------


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A scratch PostgreSQL database for the test, dropped after it."""
    asyncpg = pytest.importorskip("asyncpg")
    from sqlalchemy.engine import make_url

    admin = make_url(PG_ADMIN).set(drivername="postgresql")
    name = f"rubricflow_ray_{uuid.uuid4().hex[:10]}"

    async def execute(statement: str) -> None:
        connection = await asyncpg.connect(admin.render_as_string(hide_password=False))
        try:
            await connection.execute(statement)
        finally:
            await connection.close()

    try:
        asyncio.run(execute(f'CREATE DATABASE "{name}"'))
    except (OSError, asyncpg.PostgresError) as error:
        if os.environ.get("CI") == "true":
            pytest.fail(f"PostgreSQL at {PG_ADMIN} is needed on CI: {error}")
        pytest.skip(f"PostgreSQL not available at {PG_ADMIN}: {error}")
    try:
        yield admin.set(database=name).render_as_string(hide_password=False)
    finally:
        asyncio.run(execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def test_with_a_postgresql_store_a_second_run_makes_no_judge_call(
    ray_cluster: str, cli: Any, tmp_path: Path, pg_url: str
) -> None:
    rubric = tmp_path / "rubric.yaml"
    rubric.write_text(RUBRIC, encoding="utf-8")
    targets = _targets(tmp_path, 24)
    with ScriptedServer(CountingJudge()) as judge:
        common = [str(rubric), str(targets), "--llm", f"openai:scripted@{judge.url}/v1"]
        ray_args = ["--ray", ray_cluster, "--ray-actors", "1", "--db", pg_url, "--no-progress"]
        first = cli.invoke(app, ["eval", *common, *ray_args, "-o", str(tmp_path / "1.jsonl")])
        asked = len(judge.requests)
        second = cli.invoke(app, ["eval", *common, *ray_args, "-o", str(tmp_path / "2.jsonl")])
    assert first.exit_code == second.exit_code == 1, (first.output, second.output)
    assert asked >= 24
    assert len(judge.requests) == asked  # the second run: every answer from the store
    first_run = {r["target_id"]: _outcome(r) for r in _results(tmp_path / "1.jsonl")}
    assert {r["target_id"]: _outcome(r) for r in _results(tmp_path / "2.jsonl")} == first_run
    # the ledger, written by the driver into the store, says so
    assert "answered from the cache" in second.output.splitlines()[-1]
    assert "answered from the cache" not in first.output.splitlines()[-1]


# --- faults -----------------------------------------------------------------------------


def _kill_an_evaluation_actor_after(judge: ScriptedServer, calls: int) -> threading.Thread:
    """A thread that, once the judge has `calls` requests, SIGKILLs the process of one
    live evaluation actor (what `ray.kill` does to it), found in the GCS's actor table
    (the state API needs the dashboard, which the test cluster does not run)."""
    from ray._private.state import actors as actor_table

    def kill() -> None:
        deadline = time.monotonic() + 120
        while len(judge.requests) < calls and time.monotonic() < deadline:
            time.sleep(0.02)
        alive = [
            info
            for info in actor_table().values()
            if "BatchEvaluator" in str(info.get("ActorClassName", ""))
            and str(info.get("State")) in ("ALIVE", "2")
            and info.get("Pid")
        ]
        if alive:
            os.kill(int(alive[0]["Pid"]), signal.SIGKILL)
            killed.append(int(alive[0]["Pid"]))

    killed: list[int] = []
    thread = threading.Thread(target=kill, daemon=True)
    thread.killed = killed  # type: ignore[attr-defined]
    thread.start()
    return thread


def test_a_judge_outage_gives_unable_to_evaluate_as_locally(
    ray_cluster: str, tmp_path: Path
) -> None:
    import ray.data

    from rubricflow.ray import evaluate_dataset

    rubric = _rubric(tmp_path)
    rows = _rows(tmp_path, 6)

    def down(request: Recorded) -> Reply:
        return Reply(status=503, body={"error": {"message": "overloaded"}})

    with ScriptedServer(down) as judge:
        spec = f"openai:scripted@{judge.url}/v1"
        expected = _local(rubric, rows, spec, max_attempts=1)
        evaluated = evaluate_dataset(
            ray.data.from_items(rows),
            rubric,
            judge=spec,
            judge_settings={"max_attempts": 1},
            concurrency=1,
        )
        records = _evaluated(evaluated)
    assert {r["target_id"]: _outcome(r) for r in records} == expected
    for record in records:
        assert record["verdict"] == "incomplete"
        statuses = {c["criterion_id"]: c["status"] for c in record["criteria"]}
        assert statuses == {
            "polite": "unable_to_evaluate",
            "answers": "unable_to_evaluate",
            "short": "scored",
        }


class _Interrupting:
    """An observer pressing Ctrl-C twice once `after` evaluations landed (the first stops
    taking targets, the second abandons those in flight), through the run's own handler."""

    def __init__(self, run: Any, after: int) -> None:
        self.run, self.after, self.seen = run, after, 0

    def stopping(self) -> None:
        pass

    def prepared(self, batch: Any) -> None:
        pass

    def evaluated(self, evaluation: Any, batch: Any) -> None:
        self.seen += 1
        if self.seen == self.after:
            task = asyncio.current_task()
            self.run._on_interrupt(self, task)
            self.run._on_interrupt(self, task)

    def closing(self) -> None:
        pass


def test_a_driver_interrupted_leaves_a_run_that_resume_finishes(
    ray_cluster: str, cli: Any, tmp_path: Path
) -> None:
    from rubricflow.eval_run import EvalRun
    from rubricflow.llm.session import LLMSession
    from rubricflow.ray import RayEvaluator
    from rubricflow.runs import RunInfo
    from rubricflow.targets import as_target

    rubric = _rubric(tmp_path)
    rows = _rows(tmp_path, 40)
    out = tmp_path / "run.jsonl"
    with ScriptedServer(CountingJudge(delay=0.02)) as judge:
        spec = f"openai:scripted@{judge.url}/v1"
        info = RunInfo(
            id="interrupted-run",
            rubric_id=rubric.id,
            rubric_version=rubric.version,
            source=str(tmp_path / "targets.jsonl"),
            started_at=datetime.now(timezone.utc).isoformat(),
        )
        run = EvalRun(info, judge=LLMSession(spec, cache=None), rubric=rubric, output=out)
        evaluator = RayEvaluator(address=ray_cluster, actors=1, judge=spec, batch_size=4)

        async def interrupted() -> None:
            await run.run(
                [(rubric, as_target(row)) for row in rows],
                total=len(rows),
                observer=_Interrupting(run, after=5),
                target_concurrency=8,
                evaluator=evaluator,
                options={"llm": run.judge},
            )

        asyncio.run(interrupted())
        assert run.interrupted
        written = _results(out)
        assert 5 <= len(written) < len(rows)
        resumed = cli.invoke(
            app,
            [
                "eval",
                str(tmp_path / "rubric.yaml"),
                str(tmp_path / "targets.jsonl"),
                "--llm",
                spec,
                "--no-cache",
                "--no-progress",
                "--ray",
                ray_cluster,
                "--ray-actors",
                "1",
                "-o",
                str(out),
                "--resume",
            ],
        )
        expected = _local(rubric, rows, spec)
    assert resumed.exit_code == 1, resumed.output
    records = [json.loads(line) for line in out.read_text().splitlines()]
    records = [r for r in records if "criteria" in r]
    ids = [r["target_id"] for r in records]
    assert len(ids) == len(set(ids)) == len(rows)  # none lost, none scored twice
    assert {r["target_id"]: _outcome(r) for r in records} == expected


# --- rewards for Ray-based trainers ------------------------------------------------------

SHOWN = r'<completion index="\d+">\n(.*?)\n</completion>'


class RankingJudge(CountingJudge):
    """Ranks a group longest first (ties share a rank); counts calls in flight."""

    @staticmethod
    def answer(request: Recorded) -> dict[str, Any]:
        import re

        texts = re.findall(SHOWN, request.text, re.S)
        lengths = sorted({len(t) for t in texts}, reverse=True)
        return {
            "ranking": [
                {"index": i, "reasoning": "length", "rank": lengths.index(len(t)) + 1}
                for i, t in enumerate(texts)
            ]
        }


def test_a_reward_for_verl_and_openrlhf_judged_by_a_pool_of_actors(
    ray_cluster: str, tmp_path: Path
) -> None:
    from rubricflow.ray.budget import find_budget
    from rubricflow.rewards import RubricReward, ray_reward

    rubric = _rubric(tmp_path)
    # GRPO groups: three completions of each of four prompts
    prompts = [f"Question {i // 3}?" for i in range(12)]
    replies = [f"Answer {i}." + " More." * (i % 3) for i in range(12)]
    ranked = RankingJudge(delay=0.02)
    with ScriptedServer(ranked) as judge:
        spec = f"openai:scripted@{judge.url}/v1"
        reward = ray_reward(rubric, judge=spec, actors=2, judge_concurrency=2, ranking="group")

        @ray.remote(num_cpus=0)
        def verl_reward_worker(compute_score: Any) -> list[float]:
            # verl's batch reward manager, on a Ray worker of its own
            result: list[float] = compute_score(
                data_sources=["chat"] * 12,
                solution_strs=replies,
                ground_truths=[None] * 12,
                extra_infos=[{"prompt": p} for p in prompts],
            )
            return result

        batch = ray.get(verl_reward_worker.remote(reward.compute_score))
        calls = len(judge.requests)
        openrlhf = reward.reward_func(
            queries=[p + r for p, r in zip(prompts, replies, strict=True)],
            prompts=prompts,
            labels=[None] * 12,
        )
        one = reward.compute_score("chat", replies[0], None, {"prompt": prompts[0]})
        peak = ranked.peak
        local = asyncio.run(
            RubricReward(rubric, judge=spec, cache=None, ranking="group").score(prompts, replies)
        )
        figures = ray.get(find_budget(spec, 2, None).figures.remote())
    expected = [outcome.reward for outcome in local]
    assert expected == [0.0, 0.5, 1.0] * 4  # longer is better, in each group
    assert batch == expected
    assert calls == 4  # one judge call per group: each group went whole to one actor
    assert list(openrlhf["rewards"]) == expected == list(openrlhf["scores"])
    assert list(openrlhf["extra_logs"]["rubricflow/incomplete"]) == [0.0] * 12
    assert one == 0.5  # verl's per-sample call: a group of one
    assert peak <= 2 and figures["peak"] <= 2  # the cluster-wide budget


def test_a_ray_reward_needs_its_judge_as_a_spec() -> None:
    from rubricflow.errors import RewardError
    from rubricflow.rewards import ray_reward

    async def judge(system: str, user: str) -> str:
        return "{}"

    with pytest.raises(RewardError, match="spec string"):
        ray_reward({"id": "r", "criteria": [{"id": "c", "description": "Good."}]}, judge=judge)


def test_a_batch_goes_to_the_actors_whole_groups_at_a_time() -> None:
    from rubricflow.rewards.ray import _groups, _parts

    spans = _groups(list("aaabbbcc"))
    assert spans == [(0, 3), (3, 6), (6, 8)]
    assert _parts(spans, 2) == [(0, 6), (6, 8)]  # never a group cut in two
    assert _parts(spans, 3) == [(0, 3), (3, 6), (6, 8)]
    assert _parts(_groups(list("abcdef")), 4) == [(0, 2), (2, 4), (4, 6)]


# --- the evaluation actors outlive a Dataset ---------------------------------------------


def _evaluation_actors() -> dict[str, str]:
    """Evaluation actors in the GCS's actor table: id -> state (`ALIVE`, `DEAD`, ...)."""
    from ray._private.state import actors as actor_table

    return {
        actor_id: str(info.get("State"))
        for actor_id, info in actor_table().items()
        if "BatchEvaluator" in str(info.get("ActorClassName", ""))
    }


def _alive(table: dict[str, str]) -> set[str]:
    return {actor for actor, state in table.items() if state in ("ALIVE", "2")}


def test_a_drivers_second_dataset_is_scored_by_the_actors_its_first_started(
    ray_cluster: str, tmp_path: Path
) -> None:
    import ray.data

    from rubricflow.ray import evaluate_dataset, release_pools

    rubric = _rubric(tmp_path)
    rows = _rows(tmp_path, 12)
    before = _evaluation_actors()
    with ScriptedServer(CountingJudge()) as judge:
        spec = f"openai:scripted@{judge.url}/v1"

        def scored(part: list[dict[str, Any]]) -> dict[str, str]:
            out = evaluate_dataset(
                ray.data.from_items(part), rubric, judge=spec, concurrency=2, batch_size=2
            ).take_all()
            return {row["id"]: row["verdict"] for row in out}

        first = scored(rows[:6])
        started = _alive(_evaluation_actors()) - set(before)
        asked = len(judge.requests)
        second = scored(rows[6:])
        after = _evaluation_actors()
        expected = _local(rubric, rows, spec)
    assert len(started) == 2
    assert set(after) - set(before) == started  # no actor started for the second Dataset
    assert _alive(after) >= started
    assert len(judge.requests) > asked  # the second Dataset was judged, not cached
    assert {**first, **second} == {k: v[0] for k, v in expected.items()}
    release_pools()
    assert not _alive(_evaluation_actors()) & started


def test_a_run_scores_every_chunk_with_its_own_actors_and_stops_them_at_its_end(
    ray_cluster: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rubricflow.ray import RayEvaluator, driver
    from rubricflow.targets import as_target

    monkeypatch.setattr(driver, "CHUNK", 5)  # 12 targets: three chunks, three Datasets
    rubric = _rubric(tmp_path)
    rows = _rows(tmp_path, 12)
    before = set(_evaluation_actors())
    with ScriptedServer(CountingJudge()) as judge:
        spec = f"openai:scripted@{judge.url}/v1"
        evaluator = RayEvaluator(address=ray_cluster, actors=2, judge=spec, batch_size=2)

        async def run() -> list[Any]:
            cases = [(rubric, as_target(row)) for row in rows]
            return [e async for e in evaluator(cases, target_concurrency=4)]

        evaluations = asyncio.run(run())
        expected = _local(rubric, rows, spec)
    table = _evaluation_actors()
    started = set(table) - before
    assert len(started) == 2  # one pool for the three chunks
    assert not _alive(table) & started  # stopped when the run ended
    assert [e.target_id for e in evaluations] == [row["id"] for row in rows]
    assert {e.target_id: str(e.verdict) for e in evaluations} == {
        k: v[0] for k, v in expected.items()
    }


def test_a_pooled_actor_that_died_for_good_is_replaced_by_the_next_run(
    ray_cluster: str, tmp_path: Path
) -> None:
    """An actor stopped for good (`ray.kill` without restart, a constructor that raised)
    never answers again: the driver's next Dataset starts another in its place."""
    import ray.data
    from ray._private.state import actors as actor_table

    from rubricflow.ray import evaluate_dataset

    rubric = _rubric(tmp_path)
    rows = _rows(tmp_path, 6)
    before = set(_evaluation_actors())
    with ScriptedServer(CountingJudge()) as judge:
        spec = f"openai:scripted@{judge.url}/v1"

        def scored() -> dict[str, str]:
            out = evaluate_dataset(
                ray.data.from_items(rows), rubric, judge=spec, concurrency=1, batch_size=2
            ).take_all()
            return {row["id"]: row["verdict"] for row in out}

        first = scored()
        (started,) = _alive(_evaluation_actors()) - before
        name = actor_table()[started]["Name"]
        ray.kill(ray.get_actor(name, namespace="rubricflow"), no_restart=True)
        again = scored()
        expected = _local(rubric, rows, spec)
    replacements = _alive(_evaluation_actors()) - before
    assert started not in replacements and len(replacements) == 1
    assert first == again == {k: v[0] for k, v in expected.items()}


def test_a_driver_that_joins_again_starts_a_pool_afresh(ray_cluster: str, tmp_path: Path) -> None:
    """Handles on the actors of an earlier join are not used again (a new cluster numbers
    its jobs from 1 again, so the job alone does not tell them apart)."""
    import ray.data

    from rubricflow.ray import connect, evaluate_dataset

    rubric = _rubric(tmp_path)
    rows = _rows(tmp_path, 4)
    with ScriptedServer(CountingJudge()) as judge:
        spec = f"openai:scripted@{judge.url}/v1"

        def scored() -> list[str]:
            out = evaluate_dataset(
                ray.data.from_items(rows), rubric, judge=spec, concurrency=1, batch_size=2
            ).take_all()
            return [row["verdict"] for row in out]

        first = scored()
        ray.shutdown()
        connect(ray_cluster)
        ray.data.DataContext.get_current().execution_options.preserve_order = True
        again = scored()
    assert again == first and len(again) == 4


def test_a_cluster_that_cannot_finish_is_an_error_naming_the_fix() -> None:
    from rubricflow.errors import PluginError, RubricflowError
    from rubricflow.ray.driver import RayRunError, _run_error

    lost = _run_error(RuntimeError("Failed to connect to GCS at 127.0.0.1:6379\nmore"))
    assert isinstance(lost, RayRunError) and isinstance(lost, RubricflowError)
    assert "RuntimeError: Failed to connect to GCS" in str(lost) and "more" not in str(lost)
    assert "continue with --resume" in str(lost) and "ray status" in str(lost)

    class ActorDied(Exception):  # what Ray raises, with the worker's error as its cause
        cause = PluginError("a Ray worker on node-2 lacks plugins the rubric needs")

    assert isinstance(_run_error(ActorDied("died")), PluginError)  # the worker's own words
    interrupt = KeyboardInterrupt()
    assert _run_error(interrupt) is interrupt
