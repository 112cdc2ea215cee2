"""One worker process of workload 6 (`benchmarks/scaleout.py` starts them): rubricflow's
`Worker` reviewing the queue of a shared store until it is empty, with one judge session
(provider concurrency `--judge-concurrency`, no answer cache) for all its reviews.

Prints `READY` once the store is open, waits for a line on stdin (so every worker starts
at once), and prints its figures as JSON when the queue is empty.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time

from rubricflow import evaluate, parse_rubric
from rubricflow.llm.session import LLMSession
from rubricflow.review import ArtifactRegistry
from rubricflow.review.worker import Worker
from rubricflow.store import Store

WARM_UP = parse_rubric(
    {"id": "warm-up", "criteria": [{"id": "c", "scoring": {"method": "llm_verdict"}}]}
)


async def work(args: argparse.Namespace) -> dict[str, object]:
    store = await Store.open(args.db)
    session = LLMSession(
        f"openai:bench-judge@{args.judge}",
        settings={"max_concurrency": args.judge_concurrency},
        cache=None,
    )
    try:
        registry = ArtifactRegistry(store, evaluate_options={"options": {"llm": session}})
        worker = Worker(registry, concurrency=args.slots, poll_interval=0.05)
        # one judgment first, so imports, prompt templates and the judge connection are
        # ready before the clock starts
        await evaluate(WARM_UP, "warm-up", options={"llm": session})
        print("READY", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        started = time.time()
        stats = await worker.run(once=True)
        finished = time.time()
    finally:
        await session.aclose()
        await store.close()
    return {
        "started": started,
        "finished": finished,
        "reviewed": stats.reviewed,
        "outcomes": stats.outcomes,
        "lost_races": stats.lost_races,
        "errors": stats.errors,
    }


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scaleout_worker")
    parser.add_argument("--db", required=True)
    parser.add_argument("--judge", required=True, help="the judge server's base URL")
    parser.add_argument("--judge-concurrency", type=int, default=4)
    parser.add_argument("--slots", type=int, default=4, help="reviews at once")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(work(args))), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
