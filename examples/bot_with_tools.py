"""A bot loop with rubricflow as its tools: the model submits its draft for review by
calling a tool, reads the feedback, revises, and publishes only what was approved.

`rubricflow.tools` gives the tool definitions (`dispatcher.openai_tools()`, or
`anthropic_tools()`) and runs the model's tool calls (`dispatcher.dispatch_all`), answering
each with the provider's tool result message. Here the "model" is a scripted
OpenAI-compatible stand-in on 127.0.0.1 (no key, no network): it drafts a post that is too
long and not friendly, submits it, then follows the review's `fixes`. The same stand-in
judges the rubric's LLM criterion (MET when the post says "please" or "thanks"). With a
real model, point BASE_URL at it (and give the store a real judge).

Run from anywhere: python examples/bot_with_tools.py
"""

import asyncio
import json
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

from rubricflow import parse_rubric
from rubricflow.application import Application
from rubricflow.review import ArtifactType, RubricBinding
from rubricflow.tools import ToolDispatcher

RUBRIC = parse_rubric(
    {
        "id": "announcement",
        "name": "Announcement",
        "pass_threshold": 1.0,
        "criteria": [
            {
                "id": "short",
                "name": "Short",
                "description": "At most 80 characters",
                "required": True,
                "scoring": {
                    "method": "deterministic",
                    "function": "char_count_between",
                    "config": {"max": 80},
                },
            },
            {"id": "friendly", "name": "Friendly", "description": "The post is friendly"},
        ],
    }
)

FIRST_DRAFT = (
    "Version 2.0 is out. It has a new editor, faster sync, dark mode and a redesigned "
    "settings page. Upgrade now."
)
REVISED = "Version 2.0 is out, thanks for waiting! Please try the new editor."


def tool_call(call_id: str, name: str, arguments: dict) -> dict:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def model_turn(body: dict) -> dict:
    """The scripted model: the next assistant message, from the conversation so far."""
    last = body["messages"][-1]
    if last["role"] == "user":
        arguments = {"artifact_type": "announcement", "content": FIRST_DRAFT, "submitter": "bot"}
        return {
            "role": "assistant",
            "tool_calls": [tool_call("c1", "submit_for_review", arguments)],
        }
    result = json.loads(last["content"])
    if result.get("status") == "needs_revision":
        arguments = {
            "artifact_id": result["artifact_id"],
            "content": REVISED,
            "reason": "; ".join(f["name"] for e in result["evaluations"] for f in e["fixes"]),
            "expected_version": result["version"],
        }
        return {"role": "assistant", "tool_calls": [tool_call("c2", "revise_artifact", arguments)]}
    if result.get("approved"):
        return {"role": "assistant", "content": f"Published: {REVISED}"}
    return {"role": "assistant", "content": f"Not published ({result.get('status')})."}


def judge_turn(body: dict) -> dict:
    """The scripted judge: MET when the content under review says please or thanks."""
    content = body["messages"][-1]["content"].split("<content>")[-1].lower()
    met = "please" in content or "thanks" in content
    answer = {"reasoning": "courtesy words", "verdict": "MET" if met else "UNMET"}
    return {"role": "assistant", "content": json.dumps(answer)}


class StandIn(BaseHTTPRequestHandler):
    """OpenAI chat completions: a request with `tools` is the bot's, else the judge's."""

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        message = model_turn(body) if "tools" in body else judge_turn(body)
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        reply = json.dumps(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)


async def bot_loop(base_url: str, dispatcher: ToolDispatcher) -> str:
    """The usual tool loop: ask the model; run the tool calls it makes; send the results
    back; stop when it answers in words."""
    messages: list[dict] = [
        {"role": "system", "content": "Publish only content the review approved."},
        {"role": "user", "content": "Announce version 2.0."},
    ]
    async with httpx.AsyncClient(base_url=base_url, timeout=10) as http:
        for _ in range(5):
            response = await http.post(
                "/chat/completions",
                json={"model": "bot", "messages": messages, "tools": dispatcher.openai_tools()},
            )
            message = response.json()["choices"][0]["message"]
            messages.append(message)
            if not message.get("tool_calls"):
                return str(message["content"])
            for call in message["tool_calls"]:
                print(f"model -> {call['function']['name']}")
            for result in await dispatcher.dispatch_all(message["tool_calls"]):
                outcome = json.loads(result["content"])
                print(f"tool  <- {outcome['status']}: {outcome['next_step']}")
                for evaluation in outcome["evaluations"]:
                    for fix in evaluation["fixes"]:
                        print(f"  fix {fix['criterion_id']}: {fix['what_to_fix']}")
                messages.append(result)
    return "gave up"


async def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), StandIn)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        with tempfile.TemporaryDirectory() as folder:
            db = f"sqlite+aiosqlite:///{Path(folder) / 'bot.db'}"
            async with await Application.open(db) as app:
                await app.rubrics.register(RUBRIC)
                await app.artifacts.set_type(
                    ArtifactType(name="announcement", rubrics=(RubricBinding(rubric_id=RUBRIC.id),))
                )
                # reviews judge with the host's judge (here, the stand-in)
                app.artifacts.evaluate_options = {"options": {"llm": f"openai:judge@{base_url}"}}
                dispatcher = ToolDispatcher(app, actor="announce-bot")
                names = [tool["function"]["name"] for tool in dispatcher.openai_tools()]
                print("tools offered:", ", ".join(names))
                print("bot:", await bot_loop(base_url, dispatcher))
                (artifact,) = await app.artifacts.list_artifacts()
                print(f"stored: {artifact.status}, revision {artifact.revision}")
    finally:
        server.shutdown()
        server.server_close()


if __name__ == "__main__":
    asyncio.run(main())
