"""Evaluations stored per second on SQLite (a file) and PostgreSQL, against the cost of
producing them with a deterministic rubric: storing must not dominate evaluating."""

from __future__ import annotations

import os
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from rubricflow import evaluate, parse_rubric
from rubricflow.store import Store

TARGETS = 2000
QUICK_TARGETS = 200
BATCH = 200
POSTGRES_ADMIN = os.environ.get("RUBRICFLOW_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/test")

RUBRIC = parse_rubric(
    {
        "id": "bench-store",
        "criteria": [
            {"id": "not_empty", "scoring": {"method": "deterministic", "function": "non_empty"}},
            {
                "id": "length",
                "scoring": {
                    "method": "deterministic",
                    "function": "word_count_between",
                    "config": {"min": 3, "max": 50},
                },
            },
            {
                "id": "no_email",
                "scoring": {"method": "deterministic", "function": "no_email_addresses"},
            },
            {"id": "no_secrets", "scoring": {"method": "deterministic", "function": "no_secrets"}},
            {
                "id": "polite",
                "scoring": {
                    "method": "deterministic",
                    "function": "contains_any",
                    "config": {"terms": ["please", "thanks"]},
                },
            },
        ],
    }
)


async def _evaluations(count: int) -> tuple[list[Any], float]:
    started = time.perf_counter()
    evaluations = [
        await evaluate(RUBRIC, {"id": f"t{i}", "content": f"Thanks for asking, reply number {i}."})
        for i in range(count)
    ]
    return evaluations, time.perf_counter() - started


async def _store_rate(url: str, evaluations: list[Any]) -> float:
    store = await Store.open(url)
    try:
        started = time.perf_counter()
        for start in range(0, len(evaluations), BATCH):
            await store.evaluations.save_many(evaluations[start : start + BATCH])
        return len(evaluations) / (time.perf_counter() - started)
    finally:
        await store.close()


async def _postgres_url() -> tuple[str, str] | None:
    try:
        import asyncpg
    except ImportError:
        return None
    name = f"rubricflow_bench_{uuid.uuid4().hex[:8]}"
    try:
        admin = await asyncpg.connect(POSTGRES_ADMIN, timeout=5)
    except (OSError, asyncpg.PostgresError):
        return None
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    base = POSTGRES_ADMIN.rsplit("/", 1)[0]
    return f"{base}/{name}", name


async def _drop(name: str) -> None:
    import asyncpg

    admin = await asyncpg.connect(POSTGRES_ADMIN)
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.close()


async def run(quick: bool = False) -> dict[str, Any]:
    count = QUICK_TARGETS if quick else TARGETS
    evaluations, evaluating = await _evaluations(count)
    eval_rate = count / evaluating
    figures: dict[str, Any] = {
        "targets": count,
        "batch": BATCH,
        "evaluations_per_s (5 deterministic criteria)": eval_rate,
    }
    with tempfile.TemporaryDirectory() as folder:
        sqlite_rate = await _store_rate(
            f"sqlite+aiosqlite:///{Path(folder) / 'bench.db'}", evaluations
        )
    figures["sqlite_file_stored_per_s"] = sqlite_rate
    figures["sqlite_store_cost / evaluate_cost"] = eval_rate / sqlite_rate
    postgres = await _postgres_url()
    if postgres is None:
        figures["postgresql_stored_per_s"] = "skipped: no server at " + POSTGRES_ADMIN
    else:
        url, name = postgres
        try:
            pg_rate = await _store_rate(url, evaluations)
        finally:
            await _drop(name)
        figures["postgresql_stored_per_s"] = pg_rate
        figures["postgresql_store_cost / evaluate_cost"] = eval_rate / pg_rate
    return figures
