"""A real webhook receiver for the tests: an HTTP server on 127.0.0.1 (a thread of its own,
so it serves a worker in this process or in another) that verifies every request's
Standard Webhooks signature with the `standardwebhooks` library and records it.

`answer` decides each response from the request's number for its message id (1 for the
first time a message arrives): 200 by default; `FLAKY` fails every other request; `hang`
holds requests until released (a worker killed mid-delivery)."""

from __future__ import annotations

import json
import random
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks import Webhook, WebhookVerificationError


@dataclass
class Received:
    """One request as the receiver saw it."""

    headers: dict[str, str]
    body: str
    payload: dict[str, Any] | None
    verified: bool
    status: int
    started: float
    ended: float = 0.0

    @property
    def message_id(self) -> str:
        return self.headers.get("webhook-id", "")


@dataclass
class Receiver:
    """The server's state: its URL, the secret to verify with, what it received."""

    url: str = ""
    secret: str | None = None
    received: list[Received] = field(default_factory=list)
    #: (message id, how many times it arrived, counting this one) -> status to answer
    answer: Callable[[str, int], int] = lambda _id, _n: 200
    #: seconds each request is held before the answer
    delay: float = 0.0
    #: while set, requests are held until it is cleared (or 30 s)
    hang: threading.Event = field(default_factory=threading.Event)
    released: threading.Event = field(default_factory=threading.Event)
    arrived: threading.Condition = field(default_factory=threading.Condition)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def delivered(self) -> list[Received]:
        """Requests answered 2xx whose signature verified."""
        with self.lock:
            return [r for r in self.received if r.verified and 200 <= r.status < 300]

    def wait_for(self, check: Callable[[Receiver], bool], timeout: float = 20.0) -> bool:
        """Wait until `check(self)` holds after a request (or `timeout` seconds)."""
        deadline = time.monotonic() + timeout
        with self.arrived:
            while not check(self):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.arrived.wait(left)
        return True

    def delivered_ids(self) -> set[str]:
        return {r.message_id for r in self.delivered()}


def flaky(seed: int = 7) -> Callable[[str, int], int]:
    """Fail half the requests at random (500), from a seeded generator."""
    rng = random.Random(seed)
    lock = threading.Lock()

    def answer(_message_id: str, _count: int) -> int:
        with lock:
            return 500 if rng.random() < 0.5 else 200

    return answer


def _handler(state: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        wbufsize = -1  # the answer goes out in one write, when the request is done

        def setup(self) -> None:
            super().setup()
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            started = time.monotonic()
            length = int(self.headers.get("content-length", "0"))
            body = self.rfile.read(length).decode("utf-8")
            headers = {k.lower(): v for k, v in self.headers.items()}
            verified, payload = False, None
            if state.secret is not None:
                try:
                    payload = Webhook(state.secret).verify(body, headers)
                    verified = True
                except WebhookVerificationError:
                    verified = False
            else:
                payload = json.loads(body)
            with state.lock:
                count = 1 + sum(
                    1 for r in state.received if r.message_id == headers.get("webhook-id")
                )
                record = Received(headers, body, payload, verified, 0, started)
                state.received.append(record)
            if state.hang.is_set():
                with state.arrived:
                    state.arrived.notify_all()
                state.released.wait(30)
            if state.delay:
                time.sleep(state.delay)
            status = state.answer(headers.get("webhook-id", ""), count) if verified else 401
            answer = b"ok" if status < 300 else b"receiver says no"
            self.send_response(status)
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)
            with state.lock:
                record.status = status
                record.ended = time.monotonic()
            with state.arrived:
                state.arrived.notify_all()

    return Handler


class _Server(ThreadingHTTPServer):
    request_queue_size = 128  # a worker opens a connection per send in flight


@contextmanager
def running_receiver(secret: str | None = None) -> Iterator[Receiver]:
    """A receiver listening on 127.0.0.1 (a free port) for the block's duration."""
    state = Receiver(secret=secret)
    server = _Server(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}/hooks"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield state
    finally:
        state.released.set()
        server.shutdown()
        server.server_close()
        thread.join(5)
