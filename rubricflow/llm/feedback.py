"""An LLM-written feedback summary (3-5 actionable sentences), with the deterministic
summary as the fallback. `Evaluation.feedback` always stays the deterministic text; the
summary goes to `Evaluation.metadata["llm_feedback"]` as
`{"source": "llm" | "deterministic", "text": ..., "error"?: ...}`."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from rubricflow.llm.answers import AnswerError, extract_json, validate_answer
from rubricflow.llm.contracts import FEEDBACK_SCHEMA
from rubricflow.llm.prompts import feedback_prompt, question_about, template_identity
from rubricflow.llm.session import LLMSession, Question, Reading
from rubricflow.model import Rubric
from rubricflow.results import CriterionResult, LLMCall, Target

__all__ = ["llm_feedback"]

_MAX_CONTENT = 6000
MIN_SENTENCES, MAX_SENTENCES = 3, 5
_SENTENCE = re.compile(r"[.!?](?:\s|$)")


def _read(text: str) -> Reading:
    value = extract_json(text)
    validate_answer(value, FEEDBACK_SCHEMA)
    summary = " ".join(str(value["summary"]).split())
    if not summary:
        raise AnswerError("the summary is empty; write 3 to 5 sentences")
    sentences = len(_SENTENCE.findall(summary + " "))
    if not MIN_SENTENCES <= sentences <= MAX_SENTENCES:
        raise AnswerError(
            f"the summary has {sentences} sentence{'s' if sentences != 1 else ''}; "
            f"write {MIN_SENTENCES} to {MAX_SENTENCES}"
        )
    return Reading(summary)


async def llm_feedback(
    session: LLMSession,
    rubric: Rubric,
    target: Target,
    results: Sequence[CriterionResult],
    deterministic: str,
) -> tuple[dict[str, Any], tuple[LLMCall, ...]]:
    """(metadata entry, ledger records) for the feedback summary; never raises."""
    notes = [
        f"{r.criterion_id}: {' '.join(r.reasoning.split())[:400]}" for r in results if r.reasoning
    ]
    content = target.text
    if len(content) > _MAX_CONTENT:
        content = content[:_MAX_CONTENT] + "\n[... content shortened ...]"
    system, user = feedback_prompt(deterministic, notes, content)
    question = Question(
        system=system,
        user=user,
        schema=FEEDBACK_SCHEMA,
        schema_name="feedback",
        read=_read,
        rubric_hash=rubric.content_hash,
        criterion_ids=(),
        about=question_about(rubric, target, (), template_identity("feedback")),
    )
    answer = await session.ask(question)
    if answer.ok:
        return {"source": "llm", "text": str(answer.value)}, tuple(answer.calls)
    return (
        {
            "source": "deterministic",
            "text": deterministic,
            "error": answer.error or "no usable feedback answer",
        },
        tuple(answer.calls),
    )
