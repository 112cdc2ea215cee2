"""A real Ray cluster on loopback for the tests: `ray start --head` and one more node
process, usage stats off, a small object store, each in a process group of its own (the
`--block` form), so stopping it stops only this cluster (`ray stop` would stop every
cluster on the machine, e.g. another test process's). The folder is not named `ray`: as a
test package it would hide the ray library."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="the ray extra (pip install -e '.[ray]') is not installed")

RAY = str(Path(sys.executable).with_name("ray"))
OBJECT_STORE = str(80 * 1024 * 1024)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _start(args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [RAY, "start", "--block", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _stop(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[str]:
    """The address of a two-node Ray cluster on 127.0.0.1, joined by this process."""
    # a cluster on loopback for one module: no token (a token left in ~/.ray by another
    # cluster would otherwise be demanded of this one's driver)
    quiet = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_DEDUP_LOGS": "0", "RAY_AUTH_MODE": "disabled"}
    saved = {name: os.environ.get(name) for name in quiet}
    os.environ.update(quiet)
    env = dict(os.environ)
    port = _free_port()
    address = f"127.0.0.1:{port}"
    # a short folder: Ray's socket paths must fit in 107 bytes
    temp = tempfile.mkdtemp(prefix="rfray-", dir="/tmp")
    common = ["--num-cpus=2", f"--object-store-memory={OBJECT_STORE}", "--disable-usage-stats"]
    head = _start(
        [
            "--head",
            f"--port={port}",
            "--node-ip-address=127.0.0.1",
            "--include-dashboard=false",
            f"--temp-dir={temp}",
            *common,
        ],
        env,
    )
    nodes = [head]
    try:
        _join(address)
        nodes.append(_start([f"--address={address}", "--node-ip-address=127.0.0.1", *common], env))
        _wait_for_nodes(2)
        yield address
    finally:
        if ray.is_initialized():
            ray.shutdown()
        for node in reversed(nodes):
            _stop(node)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _join(address: str) -> None:
    """Wait for the head at `address`, then join it as this process's driver."""
    host, port = address.split(":")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, int(port)), timeout=1):
                break
        except OSError:
            time.sleep(0.2)
    else:
        raise RuntimeError(f"the Ray head at {address} did not start within 120 s")
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            ray.init(address=address, log_to_driver=False, logging_level="WARNING")
            return
        except Exception as error:  # the GCS answers before it takes drivers
            last = error
            time.sleep(0.5)
    raise RuntimeError(f"could not join the Ray head at {address}: {last}")


def _wait_for_nodes(count: int) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if sum(1 for node in ray.nodes() if node.get("Alive")) >= count:
            return
        time.sleep(0.3)
    raise RuntimeError(f"the Ray cluster did not reach {count} nodes within 120 s")
