"""A local OpenAI-compatible chat-completions server that answers every request after a
fixed delay with a valid verdict (`{"reasoning": ..., "verdict": "MET"}`).

A minimal HTTP/1.1 server on stdlib asyncio: keep-alive, Content-Length bodies, one
coroutine per connection, so hundreds of concurrent connections cost nothing. It runs in
its own process (`python -m benchmarks.judge_server --delay 0.1`), so the judge does not
share the benchmarked process's interpreter lock; it prints `PORT <n>` when listening and
counts the completions it answered (`GET /stats` -> `{"requests": n}`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
from typing import Any

ANSWER = json.dumps({"reasoning": "The content meets the criterion.", "verdict": "MET"})


class JudgeServer:
    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.requests = 0
        #: completions being answered now, and the integral of that count over time
        #: (seconds x requests): its growth over a run divided by the run's length is the
        #: mean number of calls the client kept in flight
        self.in_flight = 0
        self._area = 0.0
        self._since = time.perf_counter()

    def _count(self, change: int) -> None:
        now = time.perf_counter()
        self._area += self.in_flight * (now - self._since)
        self._since = now
        self.in_flight += change

    def stats(self) -> dict[str, Any]:
        self._count(0)
        return {"requests": self.requests, "in_flight_seconds": self._area}

    def _completion(self, body: bytes) -> dict[str, Any]:
        try:
            model = json.loads(body).get("model", "bench-judge")
        except (ValueError, AttributeError):
            model = "bench-judge"
        return {
            "id": f"chatcmpl-bench-{self.requests}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": ANSWER},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 200, "completion_tokens": 20, "total_tokens": 220},
        }

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, path = lines[0].split(" ")[:2]
                headers = {}
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
                length = int(headers.get("content-length") or 0)
                body = await reader.readexactly(length) if length else b""
                if method == "GET" and path.endswith("/stats"):
                    status, payload = 200, self.stats()
                elif method == "POST" and path.endswith("/chat/completions"):
                    self.requests += 1
                    self._count(+1)
                    try:
                        await asyncio.sleep(self.delay)
                    finally:
                        self._count(-1)
                    status, payload = 200, self._completion(body)
                else:
                    status, payload = 404, {"error": {"message": f"no route {method} {path}"}}
                data = json.dumps(payload).encode()
                close = headers.get("connection", "").lower() == "close"
                writer.write(
                    f"HTTP/1.1 {status} {'OK' if status == 200 else 'Not Found'}\r\n"
                    f"content-type: application/json\r\ncontent-length: {len(data)}\r\n"
                    f"connection: {'close' if close else 'keep-alive'}\r\n\r\n".encode()
                    + data
                )
                await writer.drain()
                if close:
                    return
        except (ConnectionError, ValueError):
            return
        finally:
            with contextlib.suppress(Exception):
                writer.close()


async def _serve(delay: float, port: int) -> None:
    judge = JudgeServer(delay)
    server = await asyncio.start_server(judge.handle, "127.0.0.1", port, backlog=1024)
    print(f"PORT {server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.judge_server")
    parser.add_argument("--delay", type=float, default=0.1, help="seconds before each answer")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(args.delay, args.port))
    return 0


class RunningJudge:
    """`with RunningJudge(0.1) as judge:` ... `judge.base_url`, `judge.requests()`: the
    server in a child process, stopped on exit."""

    def __init__(self, delay: float = 0.1) -> None:
        self.delay = delay
        self.process: subprocess.Popen[str] | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> RunningJudge:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.judge_server", "--delay", str(self.delay)],
            stdout=subprocess.PIPE,
            text=True,
            cwd=root,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith("PORT "):
            self.__exit__()
            raise RuntimeError(f"the judge server did not start: {line!r}")
        self.port = int(line.split()[1])
        return self

    def stats(self) -> dict[str, Any]:
        """`requests` (chat completions answered so far) and `in_flight_seconds` (their
        time in flight, summed): the difference between two readings over the seconds
        between them is the mean number of calls held in flight."""
        import urllib.request

        with urllib.request.urlopen(f"{self.base_url}/stats", timeout=10) as response:
            stats: dict[str, Any] = json.load(response)
        return stats

    def requests(self) -> int:
        """Chat completions answered so far."""
        return int(self.stats()["requests"])

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            if self.process.stdout is not None:
                self.process.stdout.close()
            self.process = None


if __name__ == "__main__":
    raise SystemExit(main())
