"""The content-addressed answer cache and the call ledger."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from rubricflow import evaluate, evaluate_many
from rubricflow.llm import (
    JudgeCache,
    LLMSession,
    MemoryJudgeCache,
    Price,
    SQLiteJudgeCache,
    cache_key,
)
from rubricflow.results import canonical_json

from .fixtures import fast, rubric, session_for
from .scripted import Reply, ScriptedServer, openai_reply, verdict

RUBRIC = rubric(
    {"id": "polite", "description": "The reply is polite.", "weight": 2},
    {"id": "accurate", "description": "The reply gives the 30-day refund window."},
)
TARGET = {"id": "t", "content": "Thanks! You can get a refund within 30 days."}


def always_met(request) -> Reply:  # type: ignore[no-untyped-def]
    return openai_reply(verdict("MET"))


async def test_a_cached_rerun_makes_zero_http_requests(tmp_path: Path) -> None:
    cache_file = tmp_path / "judge.sqlite"
    with ScriptedServer(always_met) as server:
        async with session_for(server, cache=SQLiteJudgeCache(cache_file)) as session:
            first = await evaluate(RUBRIC, TARGET, options={"llm": session})
        sent = len(server.requests)
        # a new session and a new cache object over the same file: a fresh process, in effect
        async with session_for(server, cache=SQLiteJudgeCache(cache_file)) as session:
            second = await evaluate(RUBRIC, TARGET, options={"llm": session})
        assert len(server.requests) == sent == 2
    assert first.usage() == {
        "llm_calls": 2,
        "cache_hits": 0,
        "input_tokens": 200,
        "output_tokens": 40,
        "cost": None,
    }
    assert second.usage() == {
        "llm_calls": 0,
        "cache_hits": 2,
        "input_tokens": 0,
        "output_tokens": 0,
        "cost": None,
    }
    assert [r.score for r in second.criteria] == [r.score for r in first.criteria]
    assert [r.reasoning for r in second.criteria] == [r.reasoning for r in first.criteria]
    hit = second.criteria[0].llm_calls[0]
    miss = first.criteria[0].llm_calls[0]
    assert hit.outcome == "cached"
    assert (hit.prompt_hash, hit.response_hash, hit.model) == (
        miss.prompt_hash,
        miss.response_hash,
        miss.model,
    )


async def test_the_default_cache_is_a_file_under_the_cache_dir(clean_llm_env: Path) -> None:
    with ScriptedServer(always_met) as server:
        spec = f"openai:judge@{server.url}/v1"
        await evaluate(RUBRIC, TARGET, options={"llm": spec})
        again = await evaluate(RUBRIC, TARGET, options={"llm": spec})
        off = await evaluate(RUBRIC, TARGET, options={"llm": spec, "llm_cache": None})
        assert len(server.requests) == 4
    assert (clean_llm_env / "judge-cache.sqlite").is_file()
    assert again.usage()["cache_hits"] == 2 and again.usage()["llm_calls"] == 0
    assert off.usage()["llm_calls"] == 2


async def test_editing_the_rubric_or_the_content_is_never_a_stale_hit() -> None:
    cache = MemoryJudgeCache()
    edited = rubric(
        {"id": "polite", "description": "The reply is polite.", "weight": 2},
        {"id": "accurate", "description": "The reply gives the 30-day refund window."},
        version="1.0.1",
    )
    with ScriptedServer(always_met) as server:
        async with session_for(server, cache=cache) as session:
            await evaluate(RUBRIC, TARGET, options={"llm": session})
            await evaluate(edited, TARGET, options={"llm": session})
            await evaluate(RUBRIC, {"content": "Other content"}, options={"llm": session})
            await evaluate(RUBRIC, TARGET, options={"llm": session, "samples": 1})
        assert len(server.requests) == 6
    assert len(cache) == 6


async def test_only_valid_answers_are_cached_and_a_repaired_answer_serves_the_rerun() -> None:
    cache = MemoryJudgeCache()
    one = rubric({"id": "polite", "description": "The reply is polite."})
    with ScriptedServer() as server:
        server.queue(openai_reply("not json"), openai_reply(verdict("UNMET")))
        async with session_for(server, cache=cache) as session:
            first = await evaluate(one, TARGET, options={"llm": session})
            second = await evaluate(one, TARGET, options={"llm": session})
        assert len(server.requests) == 2
    assert first.criteria[0].verdict == second.criteria[0].verdict == "UNMET"
    assert second.usage()["cache_hits"] == 1
    stored = [json.loads(v)["text"] for v in cache.data.values()]
    assert "not json" not in stored


async def test_unusable_answers_are_not_cached() -> None:
    cache = MemoryJudgeCache()
    with ScriptedServer(lambda request: openai_reply("garbage")) as server:
        async with session_for(server, cache=cache) as session:
            evaluation = await evaluate(RUBRIC, TARGET, options={"llm": session})
    assert {r.status for r in evaluation.criteria} == {"unable_to_evaluate"}
    assert len(cache) == 0


def test_the_cache_key_covers_everything_that_decides_an_answer() -> None:
    base = {
        "provider": "openai:judge@http://h/v1",
        "params": {"temperature": 0.0, "max_tokens": 100, "sample": 0},
        "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}],
        "schema": {"type": "object"},
        "rubric_hash": "abc",
    }
    key = cache_key(**base)  # type: ignore[arg-type]
    assert key == cache_key(**base)  # type: ignore[arg-type]
    variants = [
        {"provider": "openai:other@http://h/v1"},
        {"provider": "openai:judge@http://elsewhere/v1"},
        {"params": {**base["params"], "temperature": 0.7}},  # type: ignore[dict-item]
        {"params": {**base["params"], "max_tokens": 101}},  # type: ignore[dict-item]
        {"params": {**base["params"], "sample": 1}},  # type: ignore[dict-item]
        {"messages": [{"role": "system", "content": "s2"}, {"role": "user", "content": "u"}]},
        {"messages": [{"role": "user", "content": "u"}]},
        {"schema": {"type": "object", "required": ["x"]}},
        {"schema": None},
        {"rubric_hash": "abd"},
    ]
    keys = {cache_key(**{**base, **change}) for change in variants}  # type: ignore[arg-type]
    assert key not in keys and len(keys) == len(variants)


async def test_sqlite_cache_round_trip_and_protocol(tmp_path: Path) -> None:
    cache = SQLiteJudgeCache(tmp_path / "deep" / "folder" / "c.sqlite")
    assert isinstance(cache, JudgeCache) and isinstance(MemoryJudgeCache(), JudgeCache)
    assert await cache.get("k") is None
    await cache.put("k", "v1")
    await cache.put("k", "v2")
    assert await cache.get("k") == "v2"
    assert (await cache.stats())["entries"] == 1
    assert await cache.clear() == 1
    assert await cache.get("k") is None
    cache.close()


async def test_a_broken_cache_never_breaks_judging() -> None:
    class Broken:
        async def get(self, key: str) -> str | None:
            raise OSError("disk on fire")

        async def put(self, key: str, value: str) -> None:
            raise OSError("disk on fire")

    with ScriptedServer(always_met) as server:
        async with session_for(server, cache=Broken()) as session:
            evaluation = await evaluate(RUBRIC, TARGET, options={"llm": session})
    assert {r.status for r in evaluation.criteria} == {"scored"}


async def test_each_call_is_in_the_ledger_with_hashes_tokens_latency_and_cost() -> None:
    with ScriptedServer() as server:
        server.queue(
            Reply(503, "busy"), openai_reply(verdict(), prompt_tokens=1000, completion_tokens=200)
        )
        session = session_for(server, price=Price(0.5, 2.0))
        async with session:
            evaluation = await evaluate(
                rubric({"id": "polite", "description": "polite"}), TARGET, options={"llm": session}
            )
        sent = server.requests[1].json["messages"]
    failed, ok = evaluation.criteria[0].llm_calls
    assert failed.outcome == "http_error" and failed.attempt == 1 and failed.response_hash is None
    assert failed.cost is None and "HTTP 503" in (failed.error or "")
    assert ok.outcome == "ok" and ok.attempt == 2
    assert ok.provider == "openai" and ok.model == "scripted-judge"
    assert ok.criterion_ids == ("polite",)
    assert ok.prompt_hash == hashlib.sha256(canonical_json(sent).encode()).hexdigest()
    answer = json.dumps(verdict())
    assert ok.response_hash == hashlib.sha256(answer.encode()).hexdigest()
    assert (ok.input_tokens, ok.output_tokens) == (1000, 200)
    assert ok.cost == (1000 * 0.5 + 200 * 2.0) / 1_000_000
    assert ok.latency_ms > 0 and ok.created_at
    assert evaluation.usage() == {
        "llm_calls": 2,
        "cache_hits": 0,
        "input_tokens": 1000,
        "output_tokens": 200,
        "cost": ok.cost,
    }


async def test_evaluate_many_shares_one_session_and_its_connection_pool() -> None:
    with ScriptedServer(always_met) as server:
        spec = f"openai:judge@{server.url}/v1"
        targets = [{"id": str(i), "content": f"reply {i}"} for i in range(6)]
        results = [
            e
            async for e in evaluate_many(
                RUBRIC, targets, target_concurrency=2, options={"llm": spec, "llm_cache": None}
            )
        ]
        connections = {r.peer for r in server.requests}
    assert [e.target_id for e in results] == ["0", "1", "2", "3", "4", "5"]
    assert all(e.usage()["llm_calls"] == 2 for e in results)
    # 12 requests over at most 4 pooled keep-alive connections (2 targets x 2 criteria)
    assert len(server.requests) == 12 and len(connections) <= 4


async def test_evaluate_with_a_spec_closes_what_it_opened() -> None:
    with ScriptedServer(always_met) as server:
        session = LLMSession(f"openai:judge@{server.url}/v1", cache=None, settings=fast())
        await evaluate(RUBRIC, TARGET, options={"llm": session})
        provider: Any = session.provider_now()
        (pool,) = provider._pools
        assert pool._pool.connections  # the keep-alive connection the judging used
        await session.aclose()
        assert provider._pools == [] and pool._pool.connections == []


async def test_a_bounded_memory_cache_forgets_the_answers_least_recently_used() -> None:
    """A long-lived process (a Ray actor that serves a trainer for days) keeps at most
    `max_entries` answers; one asked for again stays."""
    from rubricflow.llm.cache import MemoryJudgeCache

    cache = MemoryJudgeCache(max_entries=2)
    await cache.put("a", "answer a")
    await cache.put("b", "answer b")
    assert await cache.get("a") == "answer a"  # now the most recently used
    await cache.put("c", "answer c")
    assert await cache.get("b") is None
    assert await cache.get("a") == "answer a" and await cache.get("c") == "answer c"
    assert len(cache) == 2
    unbounded = MemoryJudgeCache()
    for key in map(str, range(50)):
        await unbounded.put(key, key)
    assert len(unbounded) == 50
