"""The trust benchmark's world: items with a known ground truth, and scripted judges of
known error rates and confidences, served over HTTP as OpenAI-compatible models.

Every figure of the simulation is here (stdlib only), so the server process and the
benchmark compute the same script from the same seed:

- an item passes in truth with probability PREVALENCE;
- the cheap judge's confidence is c = 0.5 + 0.5 u, u ~ Beta(CONF_ALPHA, CONF_BETA)
  (mostly sure), and it errs with probability
  p(c) = ERR_FLOOR + ERR_AMPLITUDE ((1 - c) / 0.5) ** ERR_POWER, times LENIENCY on items
  that fail in truth and divided by it on items that pass (it passes failures more
  often, so its raw pass rate is biased). Errors are far likelier where it is unsure,
  but not certain there: at c >= 0.9 it still errs about 3% of the time;
- the strong judge errs with probability STRONG_ERROR wherever it is, and is sure;
- the panel's three members (panel-a, -b, -c) err independently with PANEL_ERROR.

A request names its judge by model (`cheap`, `strong`, `panel-a`...) and its item by the
`item-N` marker in the content. The answer is `{"reasoning", "verdict"}` with OpenAI
`logprobs` whose verdict token carries log(confidence), after DELAY seconds (`--delay`).
`python -m benchmarks.trust_judges --items N --seed S --delay D` prints `PORT <n>`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import random
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

from benchmarks.judge_server import JudgeServer

PREVALENCE = 0.7
CONF_ALPHA, CONF_BETA = 2.0, 1.0
ERR_FLOOR, ERR_AMPLITUDE, ERR_POWER = 0.015, 0.7, 3
LENIENCY = 3.0
STRONG_ERROR, STRONG_CONFIDENCE = 0.03, 0.97
PANEL_ERROR = 0.1
#: what a call costs, per million tokens (input, output): a small and a large model
PRICES = {"cheap": (0.15, 0.60), "strong": (2.50, 10.00)}

_ITEM = re.compile(r"item-(\d+)")


@dataclass(frozen=True)
class Item:
    """One artifact: its truth, and each judge's (verdict, confidence)."""

    index: int
    truth: bool
    cheap: tuple[bool, float]
    strong: tuple[bool, float]
    panel: tuple[tuple[bool, float], ...]


def error_probability(confidence: float, truth: bool) -> float:
    """The cheap judge's chance of a wrong verdict at `confidence` on an item whose true
    verdict is `truth`."""
    base = ERR_FLOOR + ERR_AMPLITUDE * ((1.0 - confidence) / 0.5) ** ERR_POWER
    return min(0.5, base / LENIENCY if truth else base * LENIENCY)


def cheap_verdict(generator: random.Random, truth: bool) -> tuple[bool, float]:
    confidence = 0.5 + 0.5 * generator.betavariate(CONF_ALPHA, CONF_BETA)
    wrong = generator.random() < error_probability(confidence, truth)
    return (truth != wrong), confidence


def script(items: int, seed: int) -> list[Item]:
    """The world of `items` items for `seed`: the same in every process."""
    generator = random.Random(seed)
    world = []
    for index in range(items):
        truth = generator.random() < PREVALENCE
        cheap = cheap_verdict(generator, truth)
        strong = (truth != (generator.random() < STRONG_ERROR), STRONG_CONFIDENCE)
        panel = tuple(
            (truth != (generator.random() < PANEL_ERROR), 1.0 - PANEL_ERROR) for _ in range(3)
        )
        world.append(Item(index, truth, cheap, strong, panel))
    return world


def answer_for(item: Item, model: str) -> tuple[bool, float]:
    if model == "strong":
        return item.strong
    if model.startswith("panel-"):
        return item.panel["abc".index(model[-1])]
    return item.cheap


class TrustJudges(JudgeServer):
    """The scripted judges of `script(items, seed)`, answering after `delay` seconds."""

    def __init__(self, delay: float, items: int, seed: int) -> None:
        super().__init__(delay)
        self.world = script(items, seed)
        self.by_model: dict[str, int] = {}

    def _completion(self, body: bytes) -> dict[str, Any]:
        request = json.loads(body)
        model = str(request.get("model", "cheap"))
        self.by_model[model] = self.by_model.get(model, 0) + 1
        text = "\n".join(str(m.get("content", "")) for m in request.get("messages", []))
        content = text.rsplit("<content>", 1)[-1]
        found = _ITEM.search(content)
        item = self.world[int(found.group(1)) if found else 0]
        verdict, confidence = answer_for(item, model)
        word = "MET" if verdict else "UNMET"
        head = '{"reasoning": "Scripted.", "verdict": "'
        tokens = [(head, 0.0), (word, math.log(confidence)), ('"}', 0.0)]
        return {
            "id": f"chatcmpl-trust-{self.requests}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": head + word + '"}'},
                    "logprobs": {
                        "content": [
                            {"token": token, "logprob": logprob, "top_logprobs": []}
                            for token, logprob in tokens
                        ]
                    },
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 200, "completion_tokens": 20, "total_tokens": 220},
        }


async def _serve(delay: float, items: int, seed: int) -> None:
    judges = TrustJudges(delay, items, seed)
    server = await asyncio.start_server(judges.handle, "127.0.0.1", 0, backlog=1024)
    print(f"PORT {server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.trust_judges")
    parser.add_argument("--delay", type=float, default=0.02)
    parser.add_argument("--items", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(args.delay, args.items, args.seed))
    return 0


class RunningJudges:
    """`with RunningJudges(items, seed, delay) as judges:` ... `judges.spec("cheap")`:
    the scripted judges in a child process, stopped on exit."""

    def __init__(self, items: int, seed: int, delay: float) -> None:
        self.args = ["--items", str(items), "--seed", str(seed), "--delay", str(delay)]
        self.process: subprocess.Popen[str] | None = None
        self.port = 0

    def spec(self, model: str) -> str:
        return f"openai:{model}@http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> RunningJudges:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.trust_judges", *self.args],
            stdout=subprocess.PIPE,
            text=True,
            cwd=root,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith("PORT "):
            self.__exit__()
            raise RuntimeError(f"the scripted judges did not start: {line!r}")
        self.port = int(line.split()[1])
        return self

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
