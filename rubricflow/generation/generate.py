"""Draft a rubric from a task description, a reference answer or example outputs.

The judge answers in a JSON shape (`contract.DRAFT_SCHEMA`); the answer is validated into
a native `Rubric` (an invalid one is sent back once by the session). The draft is then
linted by the meta-rubric and `lint_rubric`; when the lint finds anything, the findings
are fed back for one revision round. The result carries the draft and its lint: nothing
here stores or writes a rubric, so a draft is never silently accepted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rubricflow.engine.meta import MetaReport, assess_rubric
from rubricflow.errors import Problem, RubricflowError
from rubricflow.formats.native import dump_rubric
from rubricflow.generation.contract import DRAFT_SCHEMA, read_draft
from rubricflow.generation.prompts import DRAFT_SYSTEM, draft_prompt, revision_prompt
from rubricflow.generation.session import JudgeOption, judge_scope
from rubricflow.generation.usage import call_usage
from rubricflow.llm.session import LLMSession, Question
from rubricflow.model import Rubric
from rubricflow.results import LLMCall
from rubricflow.sync_bridge import run_sync
from rubricflow.validation import lint_rubric

__all__ = [
    "GeneratedRubric",
    "GenerationError",
    "count_findings",
    "generate_rubric",
    "generate_rubric_sync",
    "lint_findings",
]

#: part of every generation question's cache key: a new contract is a new question
CONTRACT_VERSION = "rubricflow-generate/1"


class GenerationError(RubricflowError):
    """The judge gave no usable draft (after the session's re-ask)."""


@dataclass
class GeneratedRubric:
    """A draft rubric and its lint. `revised` says whether the first draft's
    `first_findings` were fed back; `findings` are what the lint says of this draft
    (empty: clean). `calls` are the judge calls it took (the ledger)."""

    rubric: Rubric
    meta: MetaReport
    warnings: list[Problem]
    revised: bool = False
    first_findings: tuple[str, ...] = ()
    calls: list[LLMCall] = field(default_factory=list)
    criteria: tuple[int, int] | None = None
    """How many criteria were asked for (min, max); a draft outside it has a finding."""

    @property
    def findings(self) -> tuple[str, ...]:
        found = lint_findings(self.meta, self.warnings)
        if self.criteria is not None:
            found += count_findings(self.rubric, self.criteria)
        return found

    @property
    def clean(self) -> bool:
        return not self.findings

    def text(self, fmt: str = "yaml") -> str:
        """The draft as a native rubric document (YAML or JSON)."""
        return dump_rubric(self.rubric, fmt)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rubric": self.rubric.to_dict(),
            "meta_rubric": self.meta.to_dict(),
            "warnings": [w.to_dict() for w in self.warnings],
            "findings": list(self.findings),
            "revised": self.revised,
            "first_findings": list(self.first_findings),
            "usage": call_usage(self.calls),
        }


def lint_findings(meta: MetaReport, warnings: Sequence[Problem]) -> tuple[str, ...]:
    """What the meta-rubric (every check below pass) and the linter say, one line each."""
    found = [f"{f.check}: {f.message}" for f in meta.findings if f.level != "pass"]
    found += [str(warning) for warning in warnings]
    return tuple(found)


def count_findings(rubric: Rubric, criteria: tuple[int, int]) -> tuple[str, ...]:
    """A finding when the draft has fewer or more criteria than were asked for."""
    low, high = criteria
    count = len(rubric.criteria)
    if low <= count <= high:
        return ()
    fix = "add criteria for what it misses" if count < low else "merge or drop the least important"
    return (f"criteria_count: the draft has {count} criteria; write {low} to {high} ({fix})",)


def _check_range(criteria: tuple[int, int]) -> tuple[int, int]:
    try:
        low, high = (int(n) for n in criteria)
    except (TypeError, ValueError):
        low, high = 0, -1
    if not 1 <= low <= high:
        raise GenerationError(
            f"criteria={criteria!r} is not a range of criteria counts; give (min, max) with "
            "1 <= min <= max, for example (7, 20)"
        )
    return low, high


def _hash(*parts: str) -> str:
    digest = hashlib.sha256(CONTRACT_VERSION.encode())
    for part in parts:
        digest.update(b"\0" + part.encode("utf-8"))
    return digest.hexdigest()


def _as_draft(rubric: Rubric) -> dict[str, Any]:
    """`rubric` in the shape the judge answers in (`DRAFT_SCHEMA`), to send it back."""
    return {
        "id": rubric.id,
        "name": rubric.name,
        "description": rubric.description,
        "pass_threshold": rubric.pass_threshold,
        "criteria": [
            {
                "id": c.id,
                "name": c.name,
                "description": c.description,
                "weight": c.weight,
                "required": c.required,
            }
            for c in rubric.criteria
        ],
    }


def _criteria_hint(criteria: tuple[int, int]) -> str:
    low, high = criteria
    return f"Write {low} to {high} criteria."


async def _ask(session: LLMSession, user: str, rubric_id: str | None, calls: list[LLMCall]) -> Any:
    question = Question(
        user=user,
        system=DRAFT_SYSTEM,
        read=lambda text: read_draft(text, rubric_id),
        rubric_hash=_hash(user, rubric_id or ""),
        schema=DRAFT_SCHEMA,
        schema_name="rubric_draft",
        temperature=0.0,
        max_tokens=4096,
    )
    answer = await session.ask(question)
    calls.extend(answer.calls)
    if not answer.ok:
        raise GenerationError(
            f"the judge gave no usable rubric draft: {answer.error or 'no answer'}; "
            "check the judge with `rubricflow llm check`, or use a model that follows "
            "JSON schemas"
        )
    return answer.value


async def generate_rubric(
    *,
    task: str | None = None,
    reference: str | None = None,
    examples: Sequence[str] = (),
    judge: JudgeOption = None,
    rubric_id: str | None = None,
    criteria: tuple[int, int] = (7, 20),
    revise: bool = True,
    cache: Any = "default",
) -> GeneratedRubric:
    """Draft a rubric with the judge (`judge`: an `LLMSession`, a spec such as
    `openai:gpt-4o-mini`, or None for $RUBRICFLOW_LLM), lint it, and (with `revise`) feed
    the lint's findings back for one revision. `criteria` is the (min, max) number of
    criteria asked for: a draft outside it has a `criteria_count` finding, fed back like
    the lint's. Raises `GenerationError` when the judge
    gives no usable draft, `ValueError`-like `RubricflowError` when nothing to work from
    is given."""
    if not (task or reference or examples):
        raise GenerationError(
            "nothing to generate a rubric from: give a task description, a reference "
            "answer or example outputs"
        )
    criteria = _check_range(criteria)
    calls: list[LLMCall] = []
    async with judge_scope(judge, cache) as session:
        session.provider_now()  # no judge configured is a usage error, not a bad draft
        user = draft_prompt(task, reference, list(examples), _criteria_hint(criteria))
        rubric: Rubric = await _ask(session, user, rubric_id, calls)
        meta, warnings = assess_rubric(rubric), lint_rubric(rubric)
        first = lint_findings(meta, warnings) + count_findings(rubric, criteria)
        if not first or not revise:
            return GeneratedRubric(rubric, meta, warnings, False, first, calls, criteria)
        again = user + "\n\n" + revision_prompt(_as_draft(rubric), first)
        revised: Rubric = await _ask(session, again, rubric_id, calls)
        meta, warnings = assess_rubric(revised), lint_rubric(revised)
        return GeneratedRubric(revised, meta, warnings, True, first, calls, criteria)


def generate_rubric_sync(**options: Any) -> GeneratedRubric:
    """`generate_rubric` from synchronous code, also inside a running event loop (see
    `rubricflow.sync_bridge`)."""
    return run_sync(generate_rubric(**options))
