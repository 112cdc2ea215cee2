"""The scripted judge server's batch endpoints: the OpenAI Batch API (`POST /v1/files`,
`POST /v1/batches`, `GET /v1/batches/{id}`, `GET /v1/files/{id}/content`) and Anthropic
Message Batches (`POST /v1/messages/batches`, `GET /v1/messages/batches/{id}`, `GET
/v1/messages/batches/{id}/results`), served by `ScriptedServer` on 127.0.0.1.

`BatchBackend(answer)` is the server's responder: `answer(body)` gets one line's request
body (a chat completion's or a Messages call's) and returns the reply body, or a
`LineFailure` for a failed line. A batch stays in progress while `hold` is set; `expire`
ends the next batches as expired after their first `answered` lines; `fail_batch` fails
them whole.
"""

from __future__ import annotations

import email.parser
import email.policy
import itertools
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .scripted import Recorded, Reply


@dataclass
class LineFailure:
    status: int = 400
    message: str = "invalid request"


Answerer = Callable[[dict[str, Any]], "dict[str, Any] | LineFailure"]


@dataclass
class Batch:
    id: str
    wire: str  # "openai" | "anthropic"
    lines: list[dict[str, Any]]
    polls: int = 0
    status: str = "in_progress"
    output: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)


def _multipart_file(request: Recorded) -> bytes:
    kind = request.headers.get("content-type", "")
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"content-type: " + kind.encode() + b"\r\n\r\n" + request.raw
    )
    for part in message.iter_parts():  # type: ignore[attr-defined]
        if part.get_filename():
            return bytes(part.get_payload(decode=True))
    raise AssertionError("no file in the upload")


class BatchBackend:
    def __init__(self, answer: Answerer) -> None:
        self.answer = answer
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, Batch] = {}
        self.hold = threading.Event()
        self.created = threading.Event()
        self.expire: int | None = None  # lines answered before the batch expires
        self.fail_batch: str | None = None
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def _id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids)}"

    def __call__(self, request: Recorded) -> Reply:
        with self._lock:
            return self._route(request)

    def _route(self, request: Recorded) -> Reply:
        path = request.path.split("?")[0]
        parts = [p for p in path.split("/") if p]
        if request.method == "POST" and parts == ["v1", "files"]:
            file_id = self._id("file")
            self.files[file_id] = _multipart_file(request)
            return Reply(200, {"id": file_id, "object": "file", "purpose": "batch"})
        if request.method == "POST" and parts == ["v1", "batches"]:
            return self._create_openai(request.json)
        if parts[:2] == ["v1", "batches"] and len(parts) == 3:
            return self._poll_openai(parts[2])
        if parts[:2] == ["v1", "files"] and parts[-1] == "content":
            return Reply(200, self.files[parts[2]])
        if request.method == "POST" and parts == ["v1", "messages", "batches"]:
            return self._create_anthropic(request.json)
        if parts[:3] == ["v1", "messages", "batches"] and len(parts) == 4:
            return self._poll_anthropic(parts[3])
        if parts[:3] == ["v1", "messages", "batches"] and parts[-1] == "results":
            return self._results_anthropic(parts[3])
        return Reply(404, {"error": {"message": f"no route {request.method} {path}"}})

    # -- running a batch ----------------------------------------------------------------

    def _run(self, batch: Batch) -> None:
        """Answer the batch's lines (all, or the first `expire` when it expires)."""
        batch.polls += 1
        if self.hold.is_set() or batch.status != "in_progress":
            return
        if self.fail_batch is not None:
            batch.status = "failed"
            return
        for number, line in enumerate(batch.lines):
            if self.expire is not None and number >= self.expire:
                batch.status = "expired"
                return
            body = line["body"] if batch.wire == "openai" else line["params"]
            got = self.answer(body)
            batch.output.append({"line": line, "answer": got})
        batch.status = "completed" if batch.wire == "openai" else "ended"

    def _create_openai(self, body: dict[str, Any]) -> Reply:
        assert body["endpoint"] == "/v1/chat/completions"
        assert body["completion_window"] == "24h"
        text = self.files[body["input_file_id"]].decode()
        lines = [json.loads(line) for line in text.splitlines() if line.strip()]
        batch = Batch(self._id("batch"), "openai", lines)
        self.batches[batch.id] = batch
        self.created.set()
        return Reply(200, {"id": batch.id, "object": "batch", "status": "validating"})

    def _poll_openai(self, batch_id: str) -> Reply:
        batch = self.batches.get(batch_id)
        if batch is None:
            return Reply(404, {"error": {"message": f"no batch {batch_id}"}})
        self._run(batch)
        reply: dict[str, Any] = {"id": batch.id, "object": "batch", "status": batch.status}
        if batch.status == "failed":
            reply["errors"] = {"data": [{"code": "invalid_request", "message": self.fail_batch}]}
        if batch.status in ("completed", "expired"):
            out, errors = [], []
            for done in batch.output:
                line, got = done["line"], done["answer"]
                if isinstance(got, LineFailure):
                    errors.append(
                        {
                            "custom_id": line["custom_id"],
                            "response": {
                                "status_code": got.status,
                                "body": {"error": {"message": got.message}},
                            },
                            "error": None,
                        }
                    )
                else:
                    out.append(
                        {
                            "custom_id": line["custom_id"],
                            "response": {"status_code": 200, "body": got},
                            "error": None,
                        }
                    )
            for line in batch.lines[len(batch.output) :]:
                errors.append(
                    {
                        "custom_id": line["custom_id"],
                        "response": None,
                        "error": {"code": "batch_expired", "message": "This request expired"},
                    }
                )
            reply["output_file_id"] = self._file(out)
            reply["error_file_id"] = self._file(errors) if errors else None
        return Reply(200, reply)

    def _file(self, rows: list[dict[str, Any]]) -> str:
        file_id = self._id("file")
        self.files[file_id] = "".join(json.dumps(row) + "\n" for row in rows).encode()
        return file_id

    def _create_anthropic(self, body: dict[str, Any]) -> Reply:
        batch = Batch(self._id("msgbatch"), "anthropic", list(body["requests"]))
        self.batches[batch.id] = batch
        self.created.set()
        return Reply(200, self._anthropic_view(batch))

    def _anthropic_view(self, batch: Batch) -> dict[str, Any]:
        ended = batch.status != "in_progress"
        return {
            "id": batch.id,
            "type": "message_batch",
            "processing_status": "ended" if ended else "in_progress",
            "results_url": f"https://elsewhere.invalid/v1/messages/batches/{batch.id}/results"
            if ended
            else None,
        }

    def _poll_anthropic(self, batch_id: str) -> Reply:
        batch = self.batches.get(batch_id)
        if batch is None:
            return Reply(404, {"type": "error", "error": {"message": f"no batch {batch_id}"}})
        self._run(batch)
        return Reply(200, self._anthropic_view(batch))

    def _results_anthropic(self, batch_id: str) -> Reply:
        batch = self.batches[batch_id]
        rows = []
        for done in batch.output:
            line, got = done["line"], done["answer"]
            if isinstance(got, LineFailure):
                result: dict[str, Any] = {
                    "type": "errored",
                    "error": {
                        "type": "error",
                        "error": {"type": "invalid_request_error", "message": got.message},
                    },
                }
            else:
                result = {"type": "succeeded", "message": got}
            rows.append({"custom_id": line["custom_id"], "result": result})
        for line in batch.lines[len(batch.output) :]:
            kind = "canceled" if batch.status == "failed" else "expired"
            rows.append({"custom_id": line["custom_id"], "result": {"type": kind}})
        return Reply(200, "".join(json.dumps(row) + "\n" for row in rows))
