"""A scripted HTTP server on 127.0.0.1 for judge tests: real sockets, real HTTP/1.1, no
mocking of httpx. Each request is recorded; the answer comes from a queue of scripted
replies, else from a responder function. A reply can be delayed, can drop the connection
without answering, or can be garbage.

Wire formats: OpenAI chat completions, Anthropic Messages (tool use) and Ollama /api/chat.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # dict/list -> JSON; str/bytes -> sent as is
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    drop: bool = False  # close the connection without answering


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    raw: bytes
    peer: int = 0  # the client's port: one per TCP connection

    @property
    def json(self) -> Any:
        return json.loads(self.raw)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.json.get("messages", []))

    @property
    def text(self) -> str:
        """Everything the judge was told (system, messages), as one string."""
        body = self.json
        parts = [str(body.get("system", ""))]
        parts += [str(m.get("content", "")) for m in body.get("messages", [])]
        return "\n".join(parts)


Responder = Callable[[Recorded], Reply]


def _default(request: Recorded) -> Reply:
    return Reply(500, {"error": {"message": "the test scripted no reply for this request"}})


class ScriptedServer:
    """`with ScriptedServer() as server:` ... `server.url`, `server.queue(...)`,
    `server.requests`."""

    def __init__(self, responder: Responder | None = None) -> None:
        self.responder = responder or _default
        self.requests: list[Recorded] = []
        self._queue: list[Reply] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def queue(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def _next(self, request: Recorded) -> Reply:
        with self._lock:
            self.requests.append(request)
            if self._queue:
                return self._queue.pop(0)
        return self.responder(request)

    def start(self) -> ScriptedServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                request = Recorded(
                    self.command,
                    self.path,
                    {k.lower(): v for k, v in self.headers.items()},
                    raw,
                    self.client_address[1],
                )
                reply = owner._next(request)
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.drop:
                    self.close_connection = True
                    with contextlib.suppress(OSError):
                        self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if isinstance(reply.body, bytes):
                    payload = reply.body
                    kind = "application/octet-stream"
                elif isinstance(reply.body, str):
                    payload = reply.body.encode()
                    kind = "text/plain"
                else:
                    payload = json.dumps(reply.body).encode()
                    kind = "application/json"
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", kind)
                    self.send_header("content-length", str(len(payload)))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True

            do_POST = _handle
            do_GET = _handle

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            block_on_close = False

        self._server = Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextmanager
def scripted(responder: Responder | None = None) -> Iterator[ScriptedServer]:
    server = ScriptedServer(responder).start()
    try:
        yield server
    finally:
        server.stop()


# -- wire formats ---------------------------------------------------------------------


def openai_reply(
    content: str | dict[str, Any],
    *,
    model: str = "scripted-judge",
    prompt_tokens: int = 100,
    completion_tokens: int = 20,
    **reply: Any,
) -> Reply:
    text = content if isinstance(content, str) else json.dumps(content)
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
    return Reply(200, body, **reply)


def anthropic_reply(
    answer: dict[str, Any] | str, *, model: str = "claude-scripted", **reply: Any
) -> Reply:
    if isinstance(answer, str):
        content = [{"type": "text", "text": answer}]
    else:
        content = [{"type": "tool_use", "id": "toolu_1", "name": "submit_answer", "input": answer}]
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 80, "output_tokens": 15},
    }
    return Reply(200, body, **reply)


def ollama_reply(content: str | dict[str, Any], *, model: str = "llama3.2", **reply: Any) -> Reply:
    text = content if isinstance(content, str) else json.dumps(content)
    body = {
        "model": model,
        "created_at": "2026-01-01T00:00:00Z",
        "message": {"role": "assistant", "content": text},
        "done": True,
        "prompt_eval_count": 60,
        "eval_count": 12,
    }
    return Reply(200, body, **reply)


def verdict(v: str = "MET", reasoning: str = "The content says so.") -> dict[str, Any]:
    return {"reasoning": reasoning, "verdict": v}


def schema_of(request: Recorded) -> dict[str, Any] | None:
    """The answer schema an OpenAI-style request asked for."""
    fmt = request.json.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return dict(fmt["json_schema"]["schema"])
    if fmt.get("type") == "json_object":
        return fmt.get("schema")
    return None


def oneshot_ids(request: Recorded) -> list[str]:
    schema = schema_of(request) or {}
    return list(schema["properties"]["criteria"]["items"]["properties"]["id"]["enum"])
