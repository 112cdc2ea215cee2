"""A judge that learns from people: draft the rubric's next version from the labels.

`propose_revision(rubric, examples, llm=session)` looks at where the judge and the human
labels disagree and drafts the next version of the rubric:

- graded few-shot examples per LLM-judged criterion, taken from the labels (the
  disagreements first, then agreements with the other label for balance), each with the
  person's grade;
- clearer descriptions of the criterion and its levels, written by the judge LLM from
  the disagreements it made (level ids, scores and everything else are kept).

Whether the draft is better is measured on labels it did not use: k-fold
cross-validation builds a draft from the other folds and judges each fold with it, so
every example is judged once by the current rubric and once by a draft that never saw
it. The pooled kappa of both, and their difference with a paired bootstrap interval
(the same resampled examples for both), say by how much it improved; `improved` is true
only when the whole interval of the difference is above 0. The draft returned is built
from every label.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rubricflow.calibration.labels import MET, LabelledExample, LabelScale, label_scale
from rubricflow.calibration.report import (
    Decision,
    Estimate,
    _decisions,
    _matrix,
    _usage,
)
from rubricflow.calibration.stats import (
    Interval,
    UndefinedStatisticError,
    bootstrap_intervals,
    kappa_from_matrix,
    pooled_kappa,
)
from rubricflow.engine.executor import DEFAULT_CONCURRENCY, evaluate_many
from rubricflow.llm.answers import AnswerError, extract_json, validate_answer
from rubricflow.llm.session import LLMSession, Question, Reading
from rubricflow.model import Criterion, Example, Rubric
from rubricflow.plugins import PluginRegistry
from rubricflow.results import Evaluation, LLMCall

__all__ = ["CriterionChange", "Proposal", "next_version", "propose_revision"]

#: characters of an example's content kept in a few-shot example or a prompt
EXAMPLE_CHARS = 1500
_DISAGREEMENTS_SHOWN = 8
_VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)(.*)$")

CLARIFY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reasoning": {"type": "string"},
        "description": {"type": "string"},
        "levels": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"id": {"type": "string"}, "description": {"type": "string"}},
                "required": ["id", "description"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["reasoning", "description", "levels"],
    "additionalProperties": False,
}

_SYSTEM = (
    "You maintain the rubric an LLM judge grades with. People graded some outputs "
    "differently from the judge. Rewrite the criterion's description (and the description "
    "of each level, if it has levels) so that a judge reading it would grade those outputs "
    "the way the people did. Keep the meaning people apply; state the boundary cases "
    "explicitly. Do not add or rename levels. Answer with JSON only: "
    '{"reasoning": "...", "description": "...", "levels": [{"id": "...", "description": '
    '"..."}]} (an empty "levels" list for a criterion without levels).'
)


@dataclass(frozen=True)
class CriterionChange:
    """What the draft changed on one criterion, from how many disagreements, and the
    criterion's held-out kappa before and after."""

    criterion_id: str
    labelled: int
    disagreements: int
    examples_added: int
    description_changed: bool
    levels_changed: tuple[str, ...]
    baseline_kappa: Estimate
    draft_kappa: Estimate
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.criterion_id,
            "labelled": self.labelled,
            "disagreements": self.disagreements,
            "examples_added": self.examples_added,
            "description_changed": self.description_changed,
            "levels_changed": list(self.levels_changed),
            "baseline_kappa": self.baseline_kappa.to_dict(),
            "draft_kappa": self.draft_kappa.to_dict(),
            "note": self.note,
        }


@dataclass(frozen=True)
class Proposal:
    """The drafted next version and how it agrees with people on labels it did not use.

    `baseline` is the current rubric's pooled kappa, `held_out` the cross-validated
    drafts' on the same examples, `difference` held_out - baseline with its paired
    bootstrap interval; `improved` is true when that interval lies above 0."""

    rubric_id: str
    from_version: str
    draft: Rubric
    examples: int
    folds: int
    baseline: Estimate
    held_out: Estimate
    difference: Estimate
    criteria: tuple[CriterionChange, ...]
    resamples: int
    confidence: float
    seed: int
    usage: Mapping[str, Any] = field(default_factory=dict)

    @property
    def improved(self) -> bool:
        interval = self.difference.interval
        return interval is not None and interval.low > 0

    @property
    def changed(self) -> bool:
        return any(
            c.examples_added or c.description_changed or c.levels_changed for c in self.criteria
        )

    def verdict(self) -> str:
        """One sentence: whether the draft improved on held-out labels, and by how much."""
        diff, interval = self.difference.value, self.difference.interval
        if diff is None:
            return f"kappa cannot be compared: {self.difference.reason}"
        level = f"{self.confidence:.0%}"
        if interval is None:
            return f"held-out kappa changed by {diff:+.3f} (no interval: --resamples 0)"
        shown = f"{diff:+.3f} [{level} CI {interval.low:+.3f}, {interval.high:+.3f}]"
        if self.improved:
            return f"held-out kappa improved by {shown}, beyond the interval of the difference"
        return f"held-out kappa changed by {shown}: not an improvement beyond the interval"

    def to_dict(self) -> dict[str, Any]:
        return {
            "rubric": {
                "id": self.rubric_id,
                "from_version": self.from_version,
                "draft_version": self.draft.version,
                "draft_hash": self.draft.content_hash,
            },
            "examples": self.examples,
            "folds": self.folds,
            "bootstrap": {
                "resamples": self.resamples,
                "confidence": self.confidence,
                "seed": self.seed,
                "method": "paired percentile bootstrap, resampling examples",
            },
            "baseline_kappa": self.baseline.to_dict(),
            "held_out_kappa": self.held_out.to_dict(),
            "difference": self.difference.to_dict(),
            "improved": self.improved,
            "verdict": self.verdict(),
            "criteria": [c.to_dict() for c in self.criteria],
            "usage": dict(self.usage),
        }


def next_version(version: str) -> str:
    """The next minor version (2.0.0 -> 2.1.0; a pre-release or build tag is dropped)."""
    found = _VERSION.match(version)
    if found is None:
        return version
    return f"{found[1]}.{int(found[2]) + 1}.0"


def learns(criterion: Criterion) -> bool:
    """An LLM judges the criterion, so examples and descriptions can change its grades."""
    return criterion.scoring.method.startswith("llm")


@dataclass(frozen=True)
class _Learned:
    criterion: Criterion
    disagreements: int
    examples_added: int
    description_changed: bool
    levels_changed: tuple[str, ...]
    note: str = ""
    calls: tuple[LLMCall, ...] = ()


def _clip(text: str | None) -> str:
    """`text` cut to EXAMPLE_CHARS, without NULs (no store keeps one in a rubric)."""
    text = (text or "").replace("\x00", "")
    return text if len(text) <= EXAMPLE_CHARS else text[:EXAMPLE_CHARS] + " [...]"


def _grade(scale: LabelScale, label: str) -> dict[str, Any]:
    if scale.kind == "levels":
        return {"level": label}
    if scale.kind == "bands":
        return {"label": "passes" if label == MET else "fails"}
    return {"label": label}


def _few_shot(
    criterion: Criterion,
    scale: LabelScale,
    examples: Sequence[LabelledExample],
    decisions: Sequence[Decision],
    per_criterion: int,
) -> list[Example]:
    """Graded examples from the labels: disagreements fill half the places first, then
    agreements (those with a label the disagreements do not show first), then the other
    disagreements; never one the criterion already holds."""
    by_id = {example.target.id: example for example in examples}
    known = {example.output for example in criterion.examples}
    wrong = [d for d in decisions if d.judge is not None and d.judge != d.human]
    right = [d for d in decisions if d.judge is not None and d.judge == d.human]
    half = (per_criterion + 1) // 2
    shown = {d.human for d in wrong[:half]}
    order = [*wrong[:half], *sorted(right, key=lambda d: d.human in shown), *wrong[half:]]
    picked: list[Example] = []
    for decision in order:
        if len(picked) >= per_criterion:
            break
        example = by_id.get(decision.example_id)
        if example is None:
            continue
        output = _clip(example.target.text)
        if output in known:
            continue
        known.add(output)
        explanation = "a person graded it so" + (
            f" (the judge had said {decision.judge})" if decision.judge != decision.human else ""
        )
        picked.append(
            Example(
                input=_clip(example.target.query) if example.target.query else None,
                output=output,
                explanation=explanation,
                **_grade(scale, decision.human),
            )
        )
    return picked


def _clarify_prompt(
    criterion: Criterion,
    examples: Mapping[str | None, LabelledExample],
    wrong: Sequence[Decision],
    reasoning: Mapping[tuple[str, str], str],
) -> str:
    lines = [
        f"Criterion `{criterion.id}` ({criterion.kind}): {criterion.description or criterion.name}",
    ]
    for level in sorted(criterion.levels, key=lambda item: item.score):
        lines.append(f"- level `{level.id}` (score {level.score:g}): {level.description}")
    for band in criterion.score_ranges:
        lines.append(f"- scores {band.min}-{band.max}: {band.description}")
    lines.append("")
    lines.append("Outputs the judge graded differently from the people:")
    for decision in wrong[:_DISAGREEMENTS_SHOWN]:
        example = examples.get(decision.example_id)
        if example is None:
            continue
        why = reasoning.get((decision.example_id, criterion.id), "")
        lines.append(
            f"---\nOutput: {_clip(example.target.text)}\nPeople: {decision.human}; "
            f"judge: {decision.judge}" + (f" (judge's reasoning: {_clip(why)})" if why else "")
        )
    return "\n".join(lines)


def _reader(criterion: Criterion) -> Any:
    level_ids = {level.id for level in criterion.levels}

    def read(text: str) -> Reading:
        value = extract_json(text)
        validate_answer(value, CLARIFY_SCHEMA)
        description = " ".join(str(value["description"]).split())
        if not description:
            raise AnswerError("the description is empty; write the clearer description")
        levels: dict[str, str] = {}
        for item in value["levels"]:
            if item["id"] not in level_ids:
                raise AnswerError(
                    f"level {item['id']!r} is not a level of the criterion; use only "
                    f"{', '.join(sorted(level_ids)) or 'none (leave levels empty)'}"
                )
            text_ = " ".join(str(item["description"]).split())
            if text_:
                levels[item["id"]] = text_
        return Reading({"description": description, "levels": levels})

    return read


async def _clarified(
    llm: LLMSession,
    rubric: Rubric,
    criterion: Criterion,
    prompt: str,
) -> tuple[Criterion, bool, tuple[str, ...], str, tuple[LLMCall, ...]]:
    """The criterion with the judge's clearer descriptions (unchanged, with a note, when
    no usable answer came), and the calls asking cost."""
    question = Question(
        system=_SYSTEM,
        user=prompt,
        schema=CLARIFY_SCHEMA,
        schema_name="clarification",
        read=_reader(criterion),
        rubric_hash=rubric.content_hash,
        criterion_ids=(criterion.id,),
    )
    answer = await llm.ask(question)
    calls = tuple(answer.calls)
    if not answer.ok:
        why = f"descriptions kept: {answer.error or 'no usable answer'}"
        return criterion, False, (), why, calls
    new: dict[str, Any] = answer.value
    levels = tuple(
        level.model_copy(update={"description": new["levels"][level.id]})
        if level.id in new["levels"]
        else level
        for level in criterion.levels
    )
    changed_levels = tuple(
        level.id
        for level, old in zip(levels, criterion.levels, strict=True)
        if level.description != old.description
    )
    described = new["description"] != criterion.description
    updated = criterion.model_copy(update={"description": new["description"], "levels": levels})
    return updated, described, changed_levels, "", calls


async def _learn_criterion(
    llm: LLMSession,
    rubric: Rubric,
    criterion: Criterion,
    examples: Sequence[LabelledExample],
    rows: Sequence[Mapping[str, Decision]],
    reasoning: Mapping[tuple[str, str], str],
    per_criterion: int,
) -> _Learned:
    decisions = [row[criterion.id] for row in rows if criterion.id in row]
    wrong = [d for d in decisions if d.judge is not None and d.judge != d.human]
    if not learns(criterion) or not wrong:
        return _Learned(criterion, len(wrong), 0, False, ())
    scale = label_scale(criterion)
    shots = _few_shot(criterion, scale, examples, decisions, per_criterion)
    by_id = {example.target.id: example for example in examples}
    prompt = _clarify_prompt(criterion, by_id, wrong, reasoning)
    clarified, described, levels, note, calls = await _clarified(llm, rubric, criterion, prompt)
    updated = clarified.model_copy(update={"examples": (*criterion.examples, *shots)})
    return _Learned(updated, len(wrong), len(shots), described, levels, note, calls)


def _reasoning(
    examples: Sequence[LabelledExample], evaluations: Sequence[Evaluation]
) -> dict[tuple[str, str], str]:
    found: dict[tuple[str, str], str] = {}
    for example, evaluation in zip(examples, evaluations, strict=True):
        for result in evaluation.criteria:
            if result.reasoning:
                found[(example.target.id or "", result.criterion_id)] = result.reasoning
    return found


async def _draft(
    llm: LLMSession,
    rubric: Rubric,
    examples: Sequence[LabelledExample],
    evaluations: Sequence[Evaluation],
    per_criterion: int,
) -> tuple[Rubric, list[_Learned]]:
    """The rubric's next version learned from `examples` and the current rubric's
    `evaluations` of them."""
    scales = {criterion.id: label_scale(criterion) for criterion in rubric.criteria}
    rows = _decisions(rubric, scales, examples, evaluations)
    reasoning = _reasoning(examples, evaluations)
    learned = [
        await _learn_criterion(llm, rubric, criterion, examples, rows, reasoning, per_criterion)
        for criterion in rubric.criteria
    ]
    metadata = dict(rubric.metadata)
    metadata["calibration"] = {
        "proposed_from": f"{rubric.id}@{rubric.version}",
        "labelled_examples": len(examples),
    }
    draft = rubric.model_copy(
        update={
            "version": next_version(rubric.version),
            "criteria": tuple(item.criterion for item in learned),
            "metadata": metadata,
        }
    )
    return draft, learned


def _folds(size: int, folds: int, seed: int) -> list[list[int]]:
    order = list(range(size))
    random.Random(seed).shuffle(order)
    count = max(2, min(folds, size))
    return [sorted(order[start::count]) for start in range(count)]


def _kappas(
    scales: Sequence[LabelScale],
    baseline: Sequence[Mapping[str, Decision]],
    draft: Sequence[Mapping[str, Decision]],
    weights: Sequence[int] | None,
) -> dict[str, float | None]:
    figures: dict[str, float | None] = {}
    for name, rows in (("baseline", baseline), ("draft", draft)):
        matrices = [_matrix(scale, rows, weights) for scale in scales]
        try:
            figures[name] = pooled_kappa(matrices)
        except UndefinedStatisticError:
            figures[name] = None
        for scale, matrix in zip(scales, matrices, strict=True):
            try:
                figures[f"{scale.criterion_id}/{name}"] = kappa_from_matrix(matrix)
            except UndefinedStatisticError:
                figures[f"{scale.criterion_id}/{name}"] = None
    a, b = figures["baseline"], figures["draft"]
    figures["difference"] = None if a is None or b is None else b - a
    return figures


async def _evaluate(
    rubric: Rubric, examples: Sequence[LabelledExample], settings: Mapping[str, Any]
) -> list[Evaluation]:
    return [
        evaluation
        async for evaluation in evaluate_many(
            rubric, [example.target for example in examples], **settings
        )
    ]


async def propose_revision(
    rubric: Rubric,
    examples: Iterable[LabelledExample | Mapping[str, Any]],
    *,
    llm: LLMSession,
    plugins: PluginRegistry | None = None,
    options: Mapping[str, Any] | None = None,
    folds: int = 5,
    per_criterion: int = 4,
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    concurrency: int = DEFAULT_CONCURRENCY,
    target_concurrency: int = DEFAULT_CONCURRENCY,
    allow_import: bool = False,
) -> Proposal:
    """Draft the next version of `rubric` from the labelled `examples` (checked as
    `calibrate` checks them) and measure it by `folds`-fold cross-validation.

    `llm` judges the examples (unless `options` names another judge) and writes the
    clearer descriptions; `per_criterion` caps the few-shot examples added to each
    criterion; `resamples` (0: no interval, so never `improved`), `seed` and
    `confidence` set the paired bootstrap of the kappa difference."""
    from rubricflow.calibration.labels import parse_examples

    if resamples < 0:
        raise ValueError(f"resamples must be 0 (off) or more, got {resamples}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1 (exclusive), got {confidence}")
    if folds < 2:
        raise ValueError(f"cross-validation needs at least 2 folds, got {folds}")
    checked = parse_examples(examples, rubric)
    if len(checked) < 2:
        raise UndefinedStatisticError(
            "cross-validation needs at least 2 labelled examples; label more"
        )
    settings: dict[str, Any] = {
        "plugins": plugins,
        "concurrency": concurrency,
        "target_concurrency": target_concurrency,
        "allow_import": allow_import,
        "options": {"llm": llm, **dict(options or {})},
    }
    baseline = await _evaluate(rubric, checked, settings)
    held_out: list[Evaluation | None] = [None] * len(checked)
    asked: list[LLMCall] = []
    for fold in _folds(len(checked), folds, seed):
        inside = set(fold)
        train = [i for i in range(len(checked)) if i not in inside]
        draft, learned_here = await _draft(
            llm,
            rubric,
            [checked[i] for i in train],
            [baseline[i] for i in train],
            per_criterion,
        )
        asked += [call for item in learned_here for call in item.calls]
        judged = await _evaluate(draft, [checked[i] for i in fold], settings)
        for index, evaluation in zip(fold, judged, strict=True):
            held_out[index] = evaluation
    final, learned = await _draft(llm, rubric, checked, baseline, per_criterion)
    asked += [call for item in learned for call in item.calls]
    evaluations = [evaluation for evaluation in held_out if evaluation is not None]
    proposal = _proposal(
        rubric, final, learned, checked, baseline, evaluations, folds, resamples, confidence, seed
    )
    return replace(proposal, usage=_with_calls(proposal.usage, asked))


def _with_calls(usage: Mapping[str, Any], calls: Sequence[LLMCall]) -> dict[str, Any]:
    """`usage` with the clarification calls added (cache hits are not calls)."""
    total = dict(usage)
    for call in calls:
        if call.outcome == "cached":
            total["cache_hits"] += 1
            continue
        total["llm_calls"] += 1
        total["input_tokens"] += call.input_tokens or 0
        total["output_tokens"] += call.output_tokens or 0
        if call.cost is not None:
            total["cost"] = (total["cost"] or 0.0) + call.cost
    return total


def _proposal(
    rubric: Rubric,
    final: Rubric,
    learned: Sequence[_Learned],
    examples: Sequence[LabelledExample],
    baseline: Sequence[Evaluation],
    held_out: Sequence[Evaluation],
    folds: int,
    resamples: int,
    confidence: float,
    seed: int,
) -> Proposal:
    scales = [label_scale(criterion) for criterion in rubric.criteria]
    by_id = {scale.criterion_id: scale for scale in scales}
    before = _decisions(rubric, by_id, examples, baseline)
    after = _decisions(rubric, by_id, examples, held_out)
    points = _kappas(scales, before, after, None)
    intervals: dict[str, Interval] = {}
    if resamples > 0:

        def resampled(picked: Sequence[int]) -> dict[str, float | None]:
            times = [0] * len(examples)
            for index in picked:
                times[index] += 1
            return _kappas(scales, before, after, times)

        intervals = bootstrap_intervals(
            len(examples), resampled, resamples=resamples, confidence=confidence, seed=seed
        )

    def estimate(name: str) -> Estimate:
        value = points[name]
        if value is None:
            return Estimate(None, None, "kappa is undefined on these labels")
        return Estimate(value, intervals.get(name))

    criteria = tuple(
        CriterionChange(
            criterion_id=item.criterion.id,
            labelled=sum(1 for row in before if item.criterion.id in row),
            disagreements=item.disagreements,
            examples_added=item.examples_added,
            description_changed=item.description_changed,
            levels_changed=item.levels_changed,
            baseline_kappa=estimate(f"{item.criterion.id}/baseline"),
            draft_kappa=estimate(f"{item.criterion.id}/draft"),
            note=item.note,
        )
        for item in learned
    )
    usage = _usage([*baseline, *held_out])
    return Proposal(
        rubric_id=rubric.id,
        from_version=rubric.version,
        draft=final,
        examples=len(examples),
        folds=max(2, min(folds, len(examples))),
        baseline=estimate("baseline"),
        held_out=estimate("draft"),
        difference=estimate("difference"),
        criteria=criteria,
        resamples=resamples,
        confidence=confidence,
        seed=seed,
        usage=usage,
    )
