"""A `rubricflow webhooks deliver` process killed with SIGKILL mid-delivery loses no event:
the deliveries it held come back when their lease runs out, and a new process sends
them, under the same webhook-id. SIGTERM stops a delivery process promptly, exit 0. Real
processes, a real receiver, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from collections import Counter

from rubricflow.review import ArtifactRegistry
from rubricflow.store import Store
from rubricflow.webhooks import WebhookService

from .conftest import PYTHON, doc_types, reach, subprocess_env
from .webhook_receiver import Received, Receiver, running_receiver

TIMEOUT, LEASE = 1.0, 1.5


def deliver(db_url: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            PYTHON,
            "-m",
            "rubricflow",
            "webhooks",
            "deliver",
            "--db",
            db_url,
            "--timeout",
            str(TIMEOUT),
            "--lease",
            str(LEASE),
            "--retry-delay",
            "0.05",
            "--poll",
            "0.05",
            "--json",
        ],
        env=subprocess_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def until(receiver: Receiver, check: object, timeout: float = 30.0) -> bool:
    return await asyncio.to_thread(receiver.wait_for, check, timeout)  # type: ignore[arg-type]


async def test_a_delivery_process_killed_mid_delivery_loses_no_event(
    db_url: str, store: Store, registry: ArtifactRegistry
) -> None:
    service = WebhookService(store)
    await doc_types(registry)
    with running_receiver() as receiver:
        created = await service.add(receiver.url, ["all"], actor="admin", allow_private=True)
        receiver.secret = created.secret
        for _ in range(10):
            await reach(registry, "approved")
        wanted = {d.message_id for d in await service.deliveries(limit=100)}
        assert len(wanted) == 20

        receiver.hang.set()  # the receiver holds every request: the worker is mid-delivery
        first = deliver(db_url)
        try:
            assert await until(receiver, lambda r: len(r.received) >= 5)
            in_flight = {r.message_id for r in receiver.received}
            first.send_signal(signal.SIGKILL)
            first.wait(10)
        finally:
            if first.poll() is None:
                first.kill()
        assert first.returncode == -signal.SIGKILL
        receiver.hang.clear()
        receiver.released.set()  # the held requests answer a process that is gone
        backlog = await service.backlog()
        assert backlog["pending"] == 20, backlog  # nothing was recorded as delivered

        second = deliver(db_url)
        try:
            got_all = await until(
                receiver, lambda r: len({x.message_id for x in _after(r, in_flight)} & wanted) == 20
            )
            assert got_all, f"{second.returncode} {second.stderr.read() if second.poll() else ''}"
            while (await service.backlog())["pending"]:
                await asyncio.sleep(0.05)
            stopping = time.monotonic()
            second.send_signal(signal.SIGTERM)
            out, err = second.communicate(timeout=10)
        finally:
            if second.poll() is None:
                second.kill()
        assert second.returncode == 0, err
        assert time.monotonic() - stopping < 5
        assert '"delivered": 20' in out

    assert await service.backlog() == {"pending": 0, "delivered": 20, "failed": 0}
    seen = Counter(r.message_id for r in receiver.received if r.verified)
    assert set(seen) == wanted
    # what the killed process had in flight was sent again, under the same webhook-id
    assert all(seen[message_id] >= 2 for message_id in in_flight)
    for delivery in await service.deliveries(limit=100):
        (attempt,) = await service.attempts(delivery.id)  # the killed attempts left no log
        assert attempt.status_code == 200


def _after(receiver: Receiver, held: set[str]) -> list[Received]:
    """Requests answered 2xx by the second process: those not held, and the second
    arrival of each held one."""
    counts: Counter[str] = Counter()
    answered = []
    for request in receiver.delivered():
        counts[request.message_id] += 1
        if request.message_id not in held or counts[request.message_id] >= 2:
            answered.append(request)
    return answered
