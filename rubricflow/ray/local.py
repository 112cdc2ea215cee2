"""A throwaway Ray cluster on loopback, for tests and benchmarks: `ray start --head` and
more node processes, usage stats and token auth off, a small object store.

Each node runs `ray start --block` in a process group of its own, so stopping the cluster
stops only its own processes (`ray stop` would stop every cluster on the machine, such
as another test process's)."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import ray

__all__ = ["local_cluster"]

OBJECT_STORE_BYTES = 80 * 1024 * 1024
#: what the nodes and this driver run with while the cluster lives
QUIET = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_DEDUP_LOGS": "0", "RAY_AUTH_MODE": "disabled"}


@contextlib.contextmanager
def local_cluster(nodes: int = 2, cpus_per_node: int = 2) -> Iterator[str]:
    """`with local_cluster(2) as address:` a cluster of `nodes` node processes on
    127.0.0.1, joined by this process as its driver; left and stopped on exit."""
    saved = {name: os.environ.get(name) for name in QUIET}
    os.environ.update(QUIET)
    port = _free_port()
    address = f"127.0.0.1:{port}"
    # a short folder: Ray's socket paths must fit in 107 bytes
    temp = tempfile.mkdtemp(prefix="rfray-", dir="/tmp")
    common = [
        f"--num-cpus={cpus_per_node}",
        f"--object-store-memory={OBJECT_STORE_BYTES}",
        "--disable-usage-stats",
        "--node-ip-address=127.0.0.1",
    ]
    head = ["--head", f"--port={port}", "--include-dashboard=false", f"--temp-dir={temp}"]
    started = [_start([*head, *common])]
    try:
        _join(address)
        started += [_start([f"--address={address}", *common]) for _ in range(nodes - 1)]
        _wait_for_nodes(nodes)
        yield address
    finally:
        if ray.is_initialized():
            ray.shutdown()
        _stop_all(list(reversed(started)))
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _start(args: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [str(Path(sys.executable).with_name("ray")), "start", "--block", *args],
        env=dict(os.environ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _stop_all(processes: list[subprocess.Popen[bytes]], within: float = 2.0) -> None:
    """SIGTERM every node's process group at once, then SIGKILL what is left after
    `within` seconds (a throwaway cluster: `ray start --block` can take 30 s to leave)."""
    for process in processes:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + within
    for process in processes:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # the group's raylet and workers too
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=5)


def _join(address: str, within: float = 60.0) -> None:
    """Wait for the head at `address`, then join it as this process's driver."""
    host, port = address.split(":")
    deadline = time.monotonic() + within
    while True:
        try:
            with socket.create_connection((host, int(port)), timeout=1):
                break
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the Ray head at {address} did not start") from None
            time.sleep(0.2)
    while True:
        try:
            ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
            return
        except Exception as error:  # the GCS listens before it takes drivers
            if time.monotonic() > deadline:
                raise RuntimeError(f"could not join the Ray head at {address}: {error}") from None
            time.sleep(0.5)


def _alive_nodes() -> int:
    nodes: list[dict[str, object]] = ray.nodes()  # type: ignore[no-untyped-call]
    return len([node for node in nodes if node.get("Alive")])


def _wait_for_nodes(count: int, within: float = 120.0) -> None:
    deadline = time.monotonic() + within
    while _alive_nodes() < count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the Ray cluster did not reach {count} nodes")
        time.sleep(0.3)
