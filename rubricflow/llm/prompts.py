"""Judge prompts, rendered from the package's Jinja2 templates in the sandbox.

Everything a template prints passes through `escape_delimiters`, so neither the content
under review nor any rubric text can open or close the prompt's delimiter tags. The
content is always a variable's *value*; it is never template source. A rubric's own
`llm_decode` template (rubric data) is rendered in the same sandbox with StrictUndefined.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from functools import lru_cache
from typing import Any

from jinja2 import PackageLoader, StrictUndefined, TemplateError, Undefined
from jinja2.sandbox import SandboxedEnvironment

from rubricflow.llm.answers import escape_delimiters
from rubricflow.llm.sandbox import BudgetedSandbox, PromptError, TemplateBudget, TemplateBudgetError
from rubricflow.llm.transcript import judged_text
from rubricflow.model import Criterion, Limits, Rubric
from rubricflow.results import Target

_DEFAULTS = Limits()

__all__ = [
    "TEMPLATE_MAX_ITERATIONS",
    "TEMPLATE_MAX_OUTPUT",
    "PromptError",
    "TemplateBudget",
    "TemplateBudgetError",
    "build_prompt",
    "criterion_view",
    "feedback_prompt",
    "judgespec_prompt",
    "question_about",
    "reask_message",
    "render_rubric_template",
    "render_template_async",
    "template_budget",
    "template_identity",
]


def _finalize(value: Any) -> Any:
    return escape_delimiters(value) if isinstance(value, str) else value


@lru_cache(maxsize=1)
def _environment() -> SandboxedEnvironment:
    return SandboxedEnvironment(
        loader=PackageLoader("rubricflow.llm", "templates"),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        auto_reload=False,  # package templates do not change: no stat per render
        autoescape=False,
        keep_trailing_newline=True,
        finalize=_finalize,
    )


# the package templates each kind of question is built from (reask.j2 shapes re-asks)
_JUDGE_TEMPLATES = (
    "system.j2",
    "user_head.j2",
    "criterion.j2",
    "user_target.j2",
    "user_tail.j2",
    "reask.j2",
)
_FEEDBACK_TEMPLATES = ("feedback_system.j2", "feedback_user.j2")


@lru_cache(maxsize=16)
def template_identity(task: str) -> dict[str, str]:
    """The prompt template a judging `task` (`verdict`, `oneshot`, `level`, `score`,
    `holistic`, `feedback`) is rendered from: its name (`rubricflow:<task>`) and the
    sha256 of the package template sources, so a recorded answer can say which version of
    the prompt it answered (see rubricflow.llm.replay)."""
    names = _FEEDBACK_TEMPLATES if task == "feedback" else _JUDGE_TEMPLATES
    environment = _environment()
    assert environment.loader is not None
    digest = hashlib.sha256()
    for name in names:
        source = environment.loader.get_source(environment, name)[0]
        digest.update(f"{name}\0{source}\0".encode())
    return {"name": f"rubricflow:{task}", "hash": digest.hexdigest()}


def question_about(
    rubric: Rubric, target: Target, criterion_ids: Sequence[str], template: Mapping[str, str]
) -> dict[str, Any]:
    """What a judge question is about (`Question.about`): the rubric, the criteria, the
    target (its id, else its content hash) and the prompt template's name and hash."""
    return {
        "rubric": {"id": rubric.id, "version": rubric.version, "hash": rubric.content_hash},
        "criteria": list(criterion_ids),
        "target": target.id or f"sha256:{target.content_hash[:16]}",
        "template": dict(template),
    }


def _tidy(text: str) -> str:
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


def _render_raw(name: str, **context: Any) -> str:
    return _environment().get_template(name).render(**context)


def _render(name: str, **context: Any) -> str:
    return _tidy(_render_raw(name, **context))


def _as_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=2)


def _example_grade(example: Any) -> str:
    parts = []
    if example.level:
        parts.append(f'level "{example.level}"')
    if example.label:
        parts.append(str(example.label))
    if example.score is not None:
        parts.append(f"score {example.score:g}")
    return ", ".join(parts) or "(no grade given)"


def criterion_view(criterion: Criterion, *, weight_shown: bool = False) -> dict[str, Any]:
    """The criterion as plain data for the templates."""
    return {
        "id": criterion.id,
        "name": criterion.name,
        "description": criterion.description or criterion.name,
        "weight": f"{criterion.weight:g}",
        "weight_shown": weight_shown,
        "penalty": criterion.weight < 0,
        "subcriteria": [
            {"name": s.name, "description": s.description} for s in criterion.subcriteria
        ],
        "examples": [
            {
                "input": e.input,
                "output": e.output,
                "grade": _example_grade(e),
                "explanation": e.explanation,
            }
            for e in criterion.examples
        ],
        "levels": [
            {
                "id": level.id,
                "label": level.label,
                "score": f"{level.score:g}",
                "description": level.description,
                "indicators": list(level.indicators),
            }
            for level in sorted(criterion.levels, key=lambda item: item.score)
        ],
        "bands": [
            {"min": band.min, "max": band.max, "description": band.description}
            for band in sorted(criterion.score_ranges, key=lambda item: item.min)
        ],
    }


def requirement_view(requirement: str, weight: float, index: int) -> dict[str, Any]:
    """A bare `{requirement, weight}` (the `rubric` package's shape) for holistic prompts."""
    return {
        "id": f"r{index}",
        "name": f"requirement {index}",
        "description": requirement,
        "weight": f"{weight:g}",
        "weight_shown": True,
        "penalty": weight < 0,
        "subcriteria": [],
        "examples": [],
        "levels": [],
        "bands": [],
    }


def _context_fields(rubric: Rubric, target: Target) -> tuple[str | None, str | None]:
    """The query and reference answer for the judge: the target's, else what an AgentV
    import kept in the rubric's metadata."""
    agentv = rubric.metadata.get("agentv")
    agentv = agentv if isinstance(agentv, Mapping) else {}
    query = target.query if target.query is not None else _as_text(agentv.get("input"))
    reference = target.reference if target.reference is not None else agentv.get("expected_output")
    return query, _as_text(reference)


def build_prompt(
    task: str,
    rubric: Rubric,
    criteria: Sequence[dict[str, Any]],
    target: Target,
    *,
    low: float | None = None,
    high: float | None = None,
    integer: bool = False,
    content_rendered: str | None = None,
    reasoning_max_chars: int | None = None,
) -> tuple[str, str]:
    """(system, user) messages for a judging task: `verdict`, `oneshot`, `level`, `score`
    or `holistic`."""
    query, reference = _context_fields(rubric, target)
    shared = {
        "task": task,
        "low": f"{low:g}" if low is not None else None,
        "high": f"{high:g}" if high is not None else None,
        "integer": integer,
        "bands": any(c["bands"] for c in criteria),
        "reasoning_max_chars": reasoning_max_chars,
    }
    system = _system_prompt(rubric.name, **shared)
    description = rubric.description or None
    try:
        criteria_json = json.dumps(list(criteria), sort_keys=True)
    except (TypeError, ValueError):  # a YAML date in an example, say: render it uncached
        head, tail = _render_rubric_parts(description, list(criteria), **shared)
    else:
        head, tail = _rubric_parts(description, criteria_json, **shared)
    middle = _render_raw(
        "user_target.j2",
        query=query,
        reference=reference,
        content=judged_text(target),
        content_rendered=content_rendered,
    )
    return system, _tidy(head + middle + tail)


@lru_cache(maxsize=1024)
def _rubric_parts(
    rubric_description: str | None, criteria_json: str, **shared: Any
) -> tuple[str, str]:
    """The user message's rubric part and closing instruction: the same for every target
    judged on these criteria, so they are rendered once (the target's part in between is
    rendered for each target)."""
    return _render_rubric_parts(rubric_description, json.loads(criteria_json), **shared)


def _render_rubric_parts(
    rubric_description: str | None, criteria: list[dict[str, Any]], **shared: Any
) -> tuple[str, str]:
    context = {
        "rubric_description": rubric_description,
        "criteria": criteria,
        "instructions": None,
        **shared,
    }
    return _render_raw("user_head.j2", **context), _render_raw("user_tail.j2", **context)


@lru_cache(maxsize=256)
def _system_prompt(rubric_name: str, **shared: Any) -> str:
    """The system message depends on the task and the rubric's name only: rendered once."""
    return _render("system.j2", rubric_name=rubric_name, **shared)


# the defaults of a rubric template's budget per render (`Limits.template_*` settings)
TEMPLATE_MAX_ITERATIONS = _DEFAULTS.template_iterations
TEMPLATE_MAX_OUTPUT = _DEFAULTS.template_output


def template_budget(limits: Limits | None = None) -> TemplateBudget:
    """The budget of one render of a rubric template, from `limits` (default: the
    settings in force)."""
    limits = limits or Limits.current()
    return TemplateBudget(
        iterations=limits.template_iterations,
        output=limits.template_output,
        built=limits.template_built,
        seconds=limits.template_seconds,
    )


def _bounded_output(chunks: Iterator[str], limit: int) -> str:
    """The rendered text, refused once it passes `limit` characters."""
    parts: list[str] = []
    size = 0
    for chunk in chunks:
        size += len(chunk)
        if size > limit:
            raise TemplateBudgetError(
                f"the criterion's template exceeded its budget of {limit:,} "
                "characters of output per render; print less"
            )
        parts.append(chunk)
    return "".join(parts)


def _template_context(target: Target) -> dict[str, Any]:
    context: dict[str, Any] = {
        "content": target.content,
        "text": target.text,
        "query": target.query,
        "reference": target.reference,
        "metadata": target.metadata,
    }
    if isinstance(target.content, Mapping):
        context.update({str(k): v for k, v in target.content.items()})
    return context


def render_rubric_template(
    template: str,
    target: Target,
    *,
    budget: TemplateBudget | None = None,
    undefined: type[Undefined] = StrictUndefined,
) -> str:
    """Render a rubric's own (dataknobs `decode_prompt`) template with the target as context:
    the content's keys when it is a mapping, plus `content`, `text`, `query`, `reference`
    and `metadata`. Undefined names are errors; printed values are delimiter-escaped. A
    render has a budget (`template_budget()`: time, loop iterations, characters built and
    printed, see rubricflow.llm.sandbox): past it, `TemplateBudgetError` names the limit.
    This blocks for up to the budget's time: from async code, use `render_template_async`."""
    budget = budget or template_budget()
    environment = BudgetedSandbox(budget, _finalize, undefined=undefined, autoescape=False)
    context = _template_context(target)
    try:
        compiled = environment.from_string(template)
        environment.start(context.values())
        return _bounded_output(compiled.generate(**context), budget.output).strip()
    except TemplateBudgetError:
        raise
    except TemplateError as error:
        raise PromptError(
            f"the criterion's template cannot be rendered for this target: "
            f"{type(error).__name__}: {error}"
        ) from None
    except MemoryError:
        raise TemplateBudgetError(
            "the criterion's template ran out of memory; build smaller strings and lists"
        ) from None
    except (RecursionError, TypeError, ValueError, AttributeError, LookupError) as error:
        raise PromptError(
            f"the criterion's template failed for this target: {type(error).__name__}: {error}"
        ) from None
    except OverflowError as error:
        raise PromptError(f"the criterion's template failed for this target: {error}") from None


async def render_template_async(template: str, target: Target) -> str:
    """`render_rubric_template` in a worker thread, so the event loop (a server's other
    requests, `/healthz`) is never held up by a template; past its time budget (plus a
    second's grace) the caller stops waiting and gets `TemplateBudgetError`."""
    budget = template_budget()
    work = asyncio.to_thread(render_rubric_template, template, target, budget=budget)
    try:
        return await asyncio.wait_for(work, timeout=budget.seconds + 1.0)
    except TimeoutError:
        raise TemplateBudgetError(
            f"the criterion's template exceeded its budget of {budget.seconds:g} seconds "
            "per render; do less work in it"
        ) from None


_PLACEHOLDER = re.compile(r"\$\{(min_score|max_score|content)\}")


def judgespec_prompt(
    prescript: str, rubric_text: str, postscript: str, *, low: float, high: float, content: str
) -> str:
    """RubricJudgeSpec's prompt: prescript + `<rubric>...</rubric>` + postscript, with
    `${min_score}`, `${max_score}` and `${content}` substituted in one pass (a value that
    itself contains `${...}` is not substituted again). The content is delimiter-escaped;
    the rubric text (rubric data) is kept as written."""
    values = {
        "min_score": f"{low:g}",
        "max_score": f"{high:g}",
        "content": escape_delimiters(content),
    }

    def fill(text: str) -> str:
        return _PLACEHOLDER.sub(lambda match: values[match.group(1)], text)

    rubric_body = rubric_text.strip("\n")
    return f"{fill(prescript)}\n<rubric>\n{fill(rubric_body)}\n</rubric>\n{fill(postscript)}"


def reask_message(
    error: str,
    schema: Mapping[str, Any] | None,
    *,
    low: float | None = None,
    high: float | None = None,
) -> str:
    return _render(
        "reask.j2",
        error=error,
        schema=json.dumps(schema, ensure_ascii=False) if schema is not None else None,
        low=f"{low:g}" if low is not None else "",
        high=f"{high:g}" if high is not None else "",
    )


def feedback_prompt(review: str, judge_notes: Sequence[str], content: str) -> tuple[str, str]:
    system = _render("feedback_system.j2")
    user = _render(
        "feedback_user.j2", review=review, judge_notes=list(judge_notes), content=content
    )
    return system, user
