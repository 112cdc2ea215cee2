"""OpenRLHF's remote reward model: `rubricflow serve` answers `POST /get_reward`.

Starts a tiny offline judge (an OpenAI-compatible stand-in on 127.0.0.1 that says MET when
the content mentions the criterion's keyword), then `rubricflow serve --no-auth` on
loopback with a fresh store, registers a rubric, and posts a batch exactly as OpenRLHF's
`remote_rm_fn` does: `{"query": [...], "prompts": [...], "labels": [...]}`. In training,
pass `--remote_rm_url http://127.0.0.1:PORT/get_reward?rubric=capital-answer`.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

RUBRIC = {
    "id": "capital-answer",
    "criteria": [
        {"id": "names_city", "description": "The answer names paris", "weight": 3},
        {"id": "names_river", "description": "The answer names the seine", "weight": 1},
    ],
}


class Judge(BaseHTTPRequestHandler):
    """OpenAI chat completions: MET when the content has the requirement's last word."""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        user = body["messages"][-1]["content"]
        content = user.split("<content>")[-1].split("</content>")[0].lower()
        keyword = re.search(r"Requirement: .*?(\w+)\s*\n", user)
        met = bool(keyword) and keyword.group(1).lower() in content
        answer = {"reasoning": "keyword check", "verdict": "MET" if met else "UNMET"}
        reply = json.dumps(
            {
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": json.dumps(answer)}}
                ],
                "model": "stand-in",
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)


def post(url: str, data: Any) -> Any:
    request = urllib.request.Request(
        url, json.dumps(data).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.load(response)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


judge = ThreadingHTTPServer(("127.0.0.1", 0), Judge)
threading.Thread(target=judge.serve_forever, daemon=True).start()
with tempfile.TemporaryDirectory() as folder:
    db = f"sqlite+aiosqlite:///{Path(folder) / 'rewards.db'}"
    port = free_port()
    llm = f"openai:stand-in@http://127.0.0.1:{judge.server_address[1]}/v1"
    command = ["serve", "--db", db, "--port", str(port), "--no-auth", "--llm", llm]
    server = subprocess.Popen(
        [sys.executable, "-m", "rubricflow", *command],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=folder,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(f"{base}/healthz", timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        post(f"{base}/v1/rubrics", {"document": json.dumps(RUBRIC)})
        prompts = ["Q: capital of France? A:", "Q: capital of France? A:"]
        responses = [" Paris, on the Seine.", " Lyon."]
        # what OpenRLHF's remote_rm_fn posts
        answer = post(
            f"{base}/get_reward?rubric=capital-answer",
            {
                "query": [p + r for p, r in zip(prompts, responses, strict=True)],
                "prompts": prompts,
                "labels": ["Paris", "Paris"],
            },
        )
        print(f"rewards: {answer['rewards']}")
    finally:
        server.terminate()
        server.wait(timeout=30)
        judge.shutdown()
