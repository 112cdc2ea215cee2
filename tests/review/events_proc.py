"""A live-status watcher in a process of its own, for the tests.

    python events_proc.py --db URL --artifact ID --after SEQ [--timeout S]

Opens the store, starts watching the artifact, says "ready" on stderr once its change feed
watches (PostgreSQL: LISTEN is up), waits for the artifact's first event after SEQ and
prints it as JSON with the wall-clock time it was seen (`seen_at`, time.time()).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time

from rubricflow.application import Application


async def main(options: argparse.Namespace) -> dict[str, object]:
    async with await Application.open(options.db) as app:
        live = app.artifacts.live
        with live.watch(options.artifact):
            await live.feed.wait_ready()
            print("ready", flush=True, file=sys.stderr)
            event = await app.artifacts.wait_for_change(
                options.artifact, after=options.after, timeout=options.timeout
            )
        seen_at = time.time()
    if event is None:
        return {"event": None, "seen_at": seen_at}
    return {"event": event.to_dict(), "seen_at": seen_at}


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", required=True)
    parser.add_argument("--artifact", required=True)
    parser.add_argument("--after", type=int, required=True)
    parser.add_argument("--timeout", type=float, default=20.0)
    print(json.dumps(asyncio.run(main(parser.parse_args()))), flush=True)
