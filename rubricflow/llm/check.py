"""`rubricflow llm check SPEC`: one tiny request that shows whether a judge works."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from rubricflow.llm.answers import extract_json, validate_answer
from rubricflow.llm.base import LLMProvider, ProviderRequest, TransportError
from rubricflow.llm.contracts import VERDICT_SCHEMA
from rubricflow.llm.secrets import scrubber_of
from rubricflow.llm.session import LLMSession

__all__ = ["CheckReport", "check_provider", "check_session"]

_SYSTEM = (
    "You check whether content meets a requirement. Answer with one JSON object and nothing "
    'else, reasoning first: {"reasoning": "<one short sentence>", "verdict": "MET" or "UNMET"}'
)
_USER = "Requirement: the content names a colour.\n<content>\nThe sky is blue.\n</content>"


@dataclass
class CheckReport:
    """What the check found. `ok` means the judge answered with a schema-valid verdict."""

    provider: str
    structured_output: str
    model: str | None = None
    latency_ms: float | None = None
    answered: bool = False
    schema_valid: bool = False
    verdict: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    error: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.answered and self.schema_valid

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "provider": self.provider,
            "model": self.model,
            "structured_output": self.structured_output,
            "latency_ms": self.latency_ms,
            "answered": self.answered,
            "schema_valid": self.schema_valid,
            "verdict": self.verdict,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "error": self.error,
            "notes": self.notes,
        }


async def check_provider(provider: LLMProvider, *, max_tokens: int = 128) -> CheckReport:
    """Send one small verdict question (no cache, no re-ask) and report model, latency and
    whether the answer came back schema-valid. Whatever the server returns is scrubbed of
    the credentials it was sent, in case it echoes them."""
    scrubber = scrubber_of(provider)
    report = CheckReport(provider=provider.label, structured_output=provider.structured_output)
    request = ProviderRequest(
        messages=({"role": "system", "content": _SYSTEM}, {"role": "user", "content": _USER}),
        schema=VERDICT_SCHEMA,
        schema_name="verdict",
        max_tokens=max_tokens,
        temperature=0.0,
    )
    started = time.perf_counter()
    try:
        response = await provider.send(request)
    except TransportError as error:
        report.latency_ms = round((time.perf_counter() - started) * 1000, 1)
        report.structured_output = provider.structured_output
        report.error = str(scrubber.error(error))
        return report
    report.latency_ms = round((time.perf_counter() - started) * 1000, 1)
    report.structured_output = provider.structured_output
    report.answered = True
    response = scrubber.response(response)
    report.model = response.model
    report.input_tokens = response.input_tokens
    report.output_tokens = response.output_tokens
    try:
        value = extract_json(response.text)
        validate_answer(value, VERDICT_SCHEMA)
    except Exception as error:
        report.error = f"the answer is not a schema-valid verdict: {error}"
        shown = " ".join(response.text.split())[:160]
        report.notes.append(f"answer began: {shown!r}")
        return report
    report.schema_valid = True
    report.verdict = value["verdict"]
    if report.verdict != "MET":
        report.notes.append("the judge answered UNMET to an obvious MET (answer quality is low)")
    if not response.structured:
        report.notes.append("the provider did not enforce the schema; answers are validated")
    return report


async def check_session(session: LLMSession) -> CheckReport:
    """`check_provider` for a session's provider."""
    return await check_provider(session.provider_now())
