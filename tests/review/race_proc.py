"""One of two racing writer processes, on the public API only.

    python race_proc.py URL ROLE BARRIER_DIR A_ACTION/B_ACTION:ID [...]

For each artifact id, both racers (roles `a` and `b`) meet at a file barrier, then call
their action (`reject`, `override`, `approve` or `claim`) on it at once. Prints one JSON
line: {id: outcome}, the outcome being "won" or the name of the error raised.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

from rubricflow.errors import RubricflowError
from rubricflow.plugins import create_plugin_manager
from rubricflow.review import ArtifactRegistry
from rubricflow.store import Store


def meet(folder: Path, name: str, role: str) -> None:
    (folder / f"{name}.{role}").touch()
    other = folder / f"{name}.{'b' if role == 'a' else 'a'}"
    deadline = time.monotonic() + 20
    while not other.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"barrier {name} timed out")
        time.sleep(0.0005)


async def main(url: str, role: str, barrier: str, items: list[str]) -> dict[str, str]:
    store = await Store.open(url)
    registry = ArtifactRegistry(store, plugins=create_plugin_manager(load_entry_points=False))
    outcomes: dict[str, str] = {}
    try:
        for item in items:
            actions, _, artifact_id = item.partition(":")
            action = actions.split("/")[0 if role == "a" else 1]
            meet(Path(barrier), artifact_id, role)
            try:
                if action == "claim":
                    await registry.claim(artifact_id, worker=f"racer-{role}")
                else:
                    await getattr(registry, action)(
                        artifact_id, actor=f"racer-{role}", reason=f"{action} by {role}"
                    )
                outcomes[artifact_id] = "won"
            except RubricflowError as error:
                outcomes[artifact_id] = type(error).__name__
    finally:
        await store.close()
    return outcomes


if __name__ == "__main__":
    url, role, barrier, *items = sys.argv[1:]
    print(json.dumps(asyncio.run(main(url, role, barrier, items))), flush=True)
