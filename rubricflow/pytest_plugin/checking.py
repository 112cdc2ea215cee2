"""`assert_passes(rubric, output, **target)`: evaluate `output` against `rubric` and fail
the test, pytest-style, with the feedback (what failed, the evidence, what to fix)
unless it passes. Each check is attached to the test's JUnit properties."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from rubricflow.engine import evaluate
from rubricflow.engine.feedback import next_level_hint
from rubricflow.errors import ConfigurationError, RubricflowError
from rubricflow.model import Criterion, Rubric
from rubricflow.pytest_plugin.state import PluginState, state_of
from rubricflow.results import CriterionResult, Evaluation, Target
from rubricflow.sync_bridge import run_sync

__all__ = [
    "assert_passes",
    "assert_passes_async",
    "bound_assert_passes",
    "failure_message",
]

_TARGET_FIELDS = ("id", "query", "reference", "metadata")
_EXCERPT = 400


def _percent(value: float) -> str:
    return f"{value * 100:.4g}%"


def _target_label(evaluation: Evaluation) -> str:
    return evaluation.target_id or f"sha256:{evaluation.target_hash[:16]}"


def _outcome(result: CriterionResult) -> str:
    if result.status != "scored":
        label = "error" if result.status == "error" else "unable to evaluate"
        return f"{label}: {result.notes}" if result.notes else label
    if result.verdict is not None:
        return f"{result.verdict} (score {result.score:.2f})"
    if result.level is not None:
        return f"level {result.level} (score {result.score:.2f})"
    return f"score {result.score:.2f}"


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _EXCERPT else text[: _EXCERPT - 3] + "..."


def _failed(evaluation: Evaluation) -> list[CriterionResult]:
    return [r for r in evaluation.criteria if r.status != "scored" or r.passed is False]


def failure_message(rubric: Rubric, evaluation: Evaluation) -> str:
    """The assertion message for an evaluation that did not pass: verdict, score against
    the pass mark, each failed criterion with its evidence and what to fix, then the
    evaluation's feedback."""
    verdict = evaluation.verdict.upper()
    head = (
        f"rubric {rubric.id}@{rubric.version} did not pass for target "
        f"{_target_label(evaluation)}: verdict {verdict}, score {_percent(evaluation.score)} "
        f"{'<' if evaluation.score < evaluation.threshold else '>='} pass mark "
        f"{_percent(evaluation.threshold)}"
    )
    lines = [head]
    if evaluation.coverage < 1:
        lines.append(f"  coverage {_percent(evaluation.coverage)}: not every criterion was scored")
    if evaluation.gating_failures:
        lines.append(f"  required criteria failed: {', '.join(evaluation.gating_failures)}")
    by_id: Mapping[str, Criterion] = {c.id: c for c in rubric.criteria}
    failed = _failed(evaluation)
    if failed:
        lines.append("failed criteria:")
    for result in failed:
        criterion = by_id.get(result.criterion_id)
        name = criterion.name if criterion is not None else result.criterion_id
        flag = " [required]" if result.required else ""
        lines.append(f"  - {result.criterion_id} ({name}){flag}: {_outcome(result)}")
        for evidence in result.evidence[:3]:
            lines.append(f"      evidence: {_short(evidence)}")
        if result.reasoning and not any(result.reasoning in e for e in result.evidence):
            lines.append(f"      judge: {_short(result.reasoning)}")
        if criterion is not None and result.status == "scored":
            lines.append(f"      fix: {next_level_hint(criterion, result)}")
        elif result.status != "scored":
            lines.append("      fix: the criterion was not scored; fix the cause and run again")
    summary = evaluation.metadata.get("llm_feedback")
    if isinstance(summary, Mapping) and summary.get("source") == "llm":
        lines.append("summary:")
        lines.append(f"  {summary.get('text')}")
    lines.append("feedback:")
    lines += [f"  {line}" for line in evaluation.feedback.splitlines()]
    return "\n".join(lines)


def _target(output: Any, fields: Mapping[str, Any]) -> Target:
    unknown = sorted(set(fields) - set(_TARGET_FIELDS))
    if unknown:
        raise ConfigurationError(
            f"assert_passes got {', '.join(unknown)}, which a target does not have; it "
            f"takes {', '.join(_TARGET_FIELDS)}"
        )
    try:
        return Target(content=output, **fields)
    except ValidationError as error:
        raise ConfigurationError(f"assert_passes: the target is not valid: {error}") from None


def _properties(item: pytest.Item | None, evaluation: Evaluation) -> None:
    if item is None:
        return
    failed = ",".join(r.criterion_id for r in _failed(evaluation))
    item.user_properties.extend(
        [
            ("rubric", evaluation.rubric_id),
            ("rubric_version", evaluation.rubric_version),
            ("rubric_target", _target_label(evaluation)),
            ("rubric_verdict", evaluation.verdict),
            ("rubric_score", f"{evaluation.score:.6g}"),
            ("rubric_threshold", f"{evaluation.threshold:.6g}"),
            ("rubric_failed_criteria", failed),
        ]
    )


def _resolve(state: PluginState, rubric: Rubric | str | Path, item: pytest.Item | None) -> Rubric:
    if isinstance(rubric, Rubric):
        return rubric
    base = Path(str(item.path)).parent if item is not None else None
    return state.lookup.resolve(rubric, base=base)


def _miss_message(state: PluginState, misses: list[Any], item: pytest.Item | None) -> str:
    replay = state.replay
    assert replay is not None
    test = f" in {item.nodeid}" if item is not None else ""
    lines = [
        f"no recorded judge answer for {len(misses)} question(s){test} "
        f"(replaying {replay.source}; replay never calls the judge):"
    ]
    lines += [f"  - {replay.explain(miss)}" for miss in misses]
    lines.append(
        "record the answers again: run pytest --rubric-record FILE with a judge "
        "(--rubric-llm SPEC or $RUBRICFLOW_LLM), or export a judge cache that has them "
        "with `rubricflow llm cache export FILE`"
    )
    return "\n".join(lines)


async def _check(
    rubric: Rubric | str | Path, output: Any, target: Mapping[str, Any], item: pytest.Item | None
) -> Evaluation:
    __tracebackhide__ = True
    state = state_of(item.config if item is not None else None)
    try:
        resolved = _resolve(state, rubric, item)
        subject = _target(output, target)
        replay = state.replay
        seen = len(replay.misses) if replay is not None else 0
        session = state.session()
    except RubricflowError as error:
        pytest.fail(f"assert_passes: {error}", pytrace=False)
    async with session:
        evaluation = await evaluate(resolved, subject, options={"llm": session})
    _properties(item, evaluation)
    if replay is not None and len(replay.misses) > seen:
        pytest.fail(_miss_message(state, replay.misses[seen:], item), pytrace=False)
    unjudged = [r.criterion_id for r in evaluation.criteria if _no_judge(r)]
    if unjudged and not state.judge_configured:
        pytest.fail(
            f"rubric {resolved.id}@{resolved.version} needs an LLM judge for "
            f"{', '.join(unjudged)} and none is configured: pass --rubric-llm SPEC (e.g. "
            "openai:gpt-4o-mini), set $RUBRICFLOW_LLM, or replay recorded answers with "
            "--rubric-replay FILE",
            pytrace=False,
        )
    if not evaluation.passed:
        raise AssertionError(failure_message(resolved, evaluation))
    return evaluation


def _no_judge(result: CriterionResult) -> bool:
    """The criterion was not scored because no judge is configured (the provider
    layer's own message, as the executor recorded it)."""
    return result.status == "error" and "no LLM judge is configured" in result.notes


def _current() -> pytest.Item | None:
    from rubricflow_pytest import current_item

    return current_item()


async def assert_passes_async(
    rubric: Rubric | str | Path, output: Any, **target: Any
) -> Evaluation:
    """Evaluate `output` (text or JSON content) against `rubric` (a `Rubric`, 'id@version'
    or a rubric file's path) with the run's judge; return the evaluation when it passes,
    else fail the test with the feedback. `target` takes id, query, reference, metadata."""
    __tracebackhide__ = True
    return await _check(rubric, output, target, _current())


def assert_passes(rubric: Rubric | str | Path, output: Any, **target: Any) -> Evaluation:
    """The blocking form of `assert_passes_async` (usable in async tests too)."""
    __tracebackhide__ = True
    return _blocking(rubric, output, target, _current())


def _blocking(
    rubric: Rubric | str | Path, output: Any, target: Mapping[str, Any], item: pytest.Item | None
) -> Evaluation:
    __tracebackhide__ = True
    try:
        return run_sync(_check(rubric, output, target, item))
    except AssertionError as failed:  # raised here: the traceback ends at the test's line
        raise AssertionError(str(failed)) from None


def bound_assert_passes(item: pytest.Item) -> Callable[..., Evaluation]:
    """`assert_passes` for the `assert_passes` fixture: bound to its test."""

    def assert_passes(rubric: Rubric | str | Path, output: Any, **target: Any) -> Evaluation:
        __tracebackhide__ = True
        return _blocking(rubric, output, target, item)

    return assert_passes
