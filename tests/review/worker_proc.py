"""A review worker process for the tests, built on the public API only.

    python worker_proc.py --db URL [--once] [--concurrency N] [--lease S] [--poll S]
        [--name NAME] [--barrier DIR --parties N] [--marker DIR] [--slow-factor F]
        [--grace S] [--max-failures N] [--retry-delay S] [--submit ARTIFACT_ID]

It registers the tests' check plugin (`review.checks_plugin.ReviewChecks`, so rubrics can
use `score_field` and the slow check), waits at the barrier until every party is ready,
runs a `Worker` (SIGTERM lets in-flight reviews finish) and prints its stats as JSON.
With `--submit` it is a submitter instead: it submits that artifact and reviews it inline,
and prints where the review left it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from review.checks_plugin import ReviewChecks
from rubricflow.plugins import create_plugin_manager
from rubricflow.review import ArtifactRegistry
from rubricflow.review.worker import Worker
from rubricflow.store import Store


def wait_at_barrier(folder: Path, name: str, parties: int) -> None:
    (folder / f"{name}.ready").touch()
    deadline = time.monotonic() + 30
    while len(list(folder.glob("*.ready"))) < parties:
        if time.monotonic() > deadline:
            raise SystemExit(f"{name}: barrier timed out")
        time.sleep(0.005)


async def main(options: argparse.Namespace) -> dict[str, object]:
    plugins = create_plugin_manager(
        plugins=[ReviewChecks(marker=options.marker, slow_factor=options.slow_factor)],
        load_entry_points=False,
    )
    store = await Store.open(options.db)
    try:
        registry = ArtifactRegistry(
            store,
            plugins=plugins,
            lease_seconds=options.lease,
            retry_delay_seconds=options.retry_delay,
        )
        worker = Worker(
            registry,
            concurrency=options.concurrency,
            poll_interval=options.poll,
            name=options.name,
            grace_seconds=options.grace,
            max_failures=options.max_failures,
        )
        if options.submit:
            outcome = await registry.submit_for_review(options.submit, actor="submitter")
            return {"status": outcome.artifact.status}
        worker.install_signal_handlers()
        if options.barrier:
            wait_at_barrier(Path(options.barrier), options.name, options.parties)
        print("ready", flush=True, file=sys.stderr)
        stats = await worker.run(once=options.once)
    finally:
        await store.close()
    return {
        "name": options.name,
        "reviewed": stats.reviewed,
        "approved": stats.approved,
        "lost_races": stats.lost_races,
        "errors": stats.errors,
        "outcomes": stats.outcomes,
        "handed_back": stats.handed_back,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", required=True)
    parser.add_argument("--once", action="store_true")
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--lease", type=float, default=30.0)
    parser.add_argument("--poll", type=float, default=0.05)
    parser.add_argument("--name", default="worker")
    parser.add_argument("--barrier")
    parser.add_argument("--parties", type=int, default=1)
    parser.add_argument("--marker")
    parser.add_argument("--slow-factor", type=float, default=1.0)
    parser.add_argument("--grace", type=float, default=30.0)
    parser.add_argument("--max-failures", type=int, default=None)
    # the wait before a failed review is tried again (doubling with each failure)
    parser.add_argument("--retry-delay", type=float, default=30.0)
    parser.add_argument("--submit")
    arguments = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    print(json.dumps(asyncio.run(main(arguments))), flush=True)
