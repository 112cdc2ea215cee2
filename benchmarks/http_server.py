"""Running `rubricflow serve` for the HTTP workloads, with the gate workload's checks.

The gate workload's rubric names its checks as `module:function` imports, which a server
refuses (a rubric over HTTP is data). Here the same functions are a check plugin
(`GateChecks`, check names `bench_gate_<name>`), registered in the server's processes by
this module's launcher, and `gate_rubric()` is the same rubric naming them: the review
does the same work in process and over HTTP.

    python -m benchmarks.http_server serve --db URL ...   (what `start` runs)
"""

from __future__ import annotations

import copy
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from benchmarks import gate_checks
from rubricflow.hookspecs import hookimpl

ROOT = Path(__file__).resolve().parents[1]
CHECKS = ("title_ok", "body_length", "no_email", "polite", "tags_ok")


class GateChecks:
    """The gate workload's check functions as a plugin."""

    __name__ = "bench-gate-checks"

    @hookimpl
    def rubricflow_check_functions(self) -> Mapping[str, Callable[..., Any]]:
        return {f"bench_gate_{name}": getattr(gate_checks, name) for name in CHECKS}


def gate_rubric() -> dict[str, Any]:
    """The gate rubric (dataknobs format) naming the plugin's checks instead of imports."""
    rubric = copy.deepcopy(gate_checks.RUBRIC)
    for criterion in rubric["criteria"]:
        method = criterion["scoring_method"]
        if method["type"] == "deterministic":
            method["function_ref"] = "bench_gate_" + method["function_ref"].split(":")[1]
    return rubric


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    url: str

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start(db: str, *args: str, env: Mapping[str, str] | None = None) -> Server:
    """`rubricflow serve` (with the gate checks) on a free port, once /readyz answers."""
    port = free_port()
    command = [
        *(sys.executable, "-m", "benchmarks.http_server", "serve"),
        *("--db", db, "--port", str(port), "--no-access-log", "--log-level", "warning"),
        *args,
    ]
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        stdout=subprocess.DEVNULL,
    )
    server = Server(process, f"http://127.0.0.1:{port}")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}")
        try:
            if httpx.get(f"{server.url}/readyz", timeout=1).status_code == 200:
                return server
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    server.stop()
    raise RuntimeError("the server did not answer within 60 s")


def _install() -> None:
    """Every plugin registry the server makes gets the gate checks."""
    import rubricflow.plugins as plugins

    create = plugins.create_plugin_manager

    def with_gate(*args: Any, **kwargs: Any) -> Any:
        extra = [*(kwargs.pop("plugins", None) or []), GateChecks()]
        return create(*args, plugins=extra, **kwargs)

    plugins.create_plugin_manager = with_gate  # type: ignore[assignment]


if __name__ == "__main__":
    _install()
    from rubricflow.cli import main

    sys.argv[0] = "rubricflow"
    profile = os.environ.get("RUBRICFLOW_BENCH_PROFILE")
    if not profile:
        main()
    else:  # a cProfile of the server process, written when it stops
        import cProfile

        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        profiler = cProfile.Profile()
        try:
            profiler.runcall(main)
        finally:
            profiler.dump_stats(profile)
