"""The judging strategies behind the LLM scorers, and multi-sample voting.

- verdict (`llm_verdict`): one question per criterion, MET/UNMET;
- one-shot (`llm_oneshot`): one question for all of a rubric's one-shot criteria; a
  criterion the answer leaves out, repeats (or that is lost to an unknown id) is
  `unable_to_evaluate`, never UNMET;
- level (`llm_decode`): classify into the criterion's levels, optionally through the
  rubric's own Jinja2 template rendered in the sandbox with the target as context;
- score (`llm_score`): AgentV bands 0..10 (/10), a `min_score..max_score` range,
  RubricJudgeSpec's tags (`config.response_format: tags`) or the `rubric` package's
  0..100 rubric-as-judge (`config.mode: rubric_as_judge`). The number the judge wrote is
  mapped onto 0..1 exactly (8.7 on 0..10 is 87/100), so the bar sees no float error.

With `samples: n`, n answers are asked for (concurrently, at a non-zero temperature):
verdicts and levels go by majority (a tie is `unable_to_evaluate`), scores by the mean;
a sample without a usable answer abstains. Agreement is reported in the evidence.
"""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, TypedDict

from rubricflow.formats import judgespec
from rubricflow.llm.answers import (
    AnswerError,
    escape_delimiters,
    extract_json,
    extract_tag,
    parse_number,
    reject_placeholders,
    validate_answer,
)
from rubricflow.llm.ballots import (
    Tally,
    Vote,
    ask_all,
    calls_of,
    majority,
    mean,
    sample_confidence,
    tally,
)
from rubricflow.llm.base import redact
from rubricflow.llm.contracts import VERDICT_SCHEMA, level_schema, oneshot_schema, score_schema
from rubricflow.llm.panel_verdict import decide_panel
from rubricflow.llm.prompts import (
    PromptError,
    build_prompt,
    criterion_view,
    question_about,
    render_template_async,
    requirement_view,
    template_identity,
)
from rubricflow.llm.session import Answer, LLMSession, Question, Reading
from rubricflow.llm.transcript import target_images
from rubricflow.model import Criterion, Rubric, parse_rubric
from rubricflow.results import CriterionResult, LLMCall, Target, exact_number
from rubricflow.scoring import ScoringContext, error_result, result_from_value, scored_result

__all__ = [
    "SAMPLE_TEMPERATURE",
    "STRATEGIES",
    "apply_strategy",
    "judge_level",
    "judge_oneshot",
    "judge_scale",
    "judge_score",
    "judge_verdict",
    "rubric_as_judge",
    "samples_for",
]

SAMPLE_TEMPERATURE = 0.7
_EXCERPT = 300
STRATEGIES = ("per-criterion", "oneshot", "rubric-as-judge")


class JudgeConfigError(ValueError):
    """A criterion's LLM options cannot be used (reported as an `error` result)."""


def _judgespec_template() -> dict[str, str]:
    """RubricJudgeSpec's prompt is the rubric's (pre/postscript) around these defaults."""
    import hashlib

    source = "\0".join(
        (judgespec.SYSTEM_PROMPT, judgespec.DEFAULT_PRESCRIPT, judgespec.DEFAULT_POSTSCRIPT)
    )
    return {"name": "judgespec", "hash": hashlib.sha256(source.encode()).hexdigest()}


# -- options ------------------------------------------------------------------------


def _positive_int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise JudgeConfigError(f"{what} must be a whole number, got {value!r}")
    if int(value) < 1:
        raise JudgeConfigError(f"{what} must be at least 1, got {value!r}")
    return int(value)


def samples_for(criterion: Criterion, context: ScoringContext) -> int:
    """How many answers to ask for: the caller's `samples` option, else the criterion's
    `scoring.config.samples`, else the rubric's `metadata.samples`, else 1."""
    for value, what in (
        (context.options.get("samples"), "the samples option"),
        (
            criterion.scoring.config.get("samples"),
            f"criterion {criterion.id}: scoring.config.samples",
        ),
        (context.rubric.metadata.get("samples"), "the rubric's metadata.samples"),
    ):
        if value is not None:
            return _positive_int(value, what)
    return 1


def _temperature(criterion: Criterion, samples: int) -> float | None:
    value = criterion.scoring.config.get("temperature")
    if value is not None:
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 2:
            raise JudgeConfigError(
                f"criterion {criterion.id}: scoring.config.temperature must be 0..2, got {value!r}"
            )
        return float(value)
    return SAMPLE_TEMPERATURE if samples > 1 else None


def _max_tokens(criterion: Criterion) -> int | None:
    value = criterion.scoring.config.get("max_tokens")
    return None if value is None else _positive_int(value, "scoring.config.max_tokens")


def _number(config: Mapping[str, Any], key: str, default: float) -> float:
    value = config.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise JudgeConfigError(f"scoring.config.{key} must be a number, got {value!r}")
    return float(value)


# -- results ------------------------------------------------------------------------


def _excerpt(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _EXCERPT else text[: _EXCERPT - 3] + "..."


def _unable(
    criterion: Criterion,
    scorer: str,
    notes: str,
    calls: Sequence[LLMCall],
    evidence: Sequence[str] = (),
) -> CriterionResult:
    return CriterionResult(
        criterion_id=criterion.id,
        status="unable_to_evaluate",
        weight=criterion.weight,
        required=criterion.required,
        scorer=scorer,
        notes=redact(notes),
        evidence=tuple(evidence),
        llm_calls=tuple(calls),
    )


def _with(result: CriterionResult, **update: Any) -> CriterionResult:
    return result.model_copy(update=update)


def _judge_note(session: LLMSession) -> str:
    try:
        return f"judged by {session.provider_now().label}"
    except Exception:
        return ""


# -- asking -------------------------------------------------------------------------


def _json_reader(
    schema: Mapping[str, Any], *extra: Mapping[str, Any] | None
) -> Callable[[str], Reading]:
    def read(text: str) -> Reading:
        value = extract_json(text)
        validate_answer(value, schema)
        for other in extra:
            if other is not None:
                validate_answer(value, other)
        return Reading(value)

    return read


def _reasoning_limit(session: LLMSession) -> int | None:
    try:
        return session.provider_now().settings.reasoning_max_chars
    except Exception:
        return None


def _setup(criterion: Criterion, context: ScoringContext) -> tuple[int, float | None, int | None]:
    samples = samples_for(criterion, context)
    return samples, _temperature(criterion, samples), _max_tokens(criterion)


# -- strategies ---------------------------------------------------------------------


async def judge_verdict(
    session: LLMSession, criterion: Criterion, target: Target, context: ScoringContext, scorer: str
) -> CriterionResult:
    """MET/UNMET for one criterion (a graded criterion maps MET/UNMET to its highest and
    lowest level)."""
    try:
        samples, temperature, max_tokens = _setup(criterion, context)
    except JudgeConfigError as error:
        return error_result(criterion, scorer, str(error))
    system, user = build_prompt(
        "verdict",
        context.rubric,
        [criterion_view(criterion)],
        target,
        reasoning_max_chars=_reasoning_limit(session),
    )
    question = Question(
        system=system,
        user=user,
        schema=VERDICT_SCHEMA,
        schema_name="verdict",
        read=_json_reader(VERDICT_SCHEMA),
        rubric_hash=context.rubric.content_hash,
        criterion_ids=(criterion.id,),
        max_tokens=max_tokens,
        images=target_images(target),
        about=question_about(context.rubric, target, (criterion.id,), template_identity("verdict")),
    )
    ballots = await ask_all(session, question, samples, temperature)
    tallies = [
        tally(ballot, lambda value: Vote(value["verdict"], value["reasoning"]), key="verdict")
        for ballot in ballots
    ]
    return _decide(criterion, context, scorer, session, tallies, calls_of(ballots), kind="verdict")


def _decide(
    criterion: Criterion,
    context: ScoringContext,
    scorer: str,
    session: LLMSession,
    tallies: Sequence[Tally],
    calls: Sequence[LLMCall],
    *,
    kind: str,
    extra_notes: Sequence[str] = (),
    to_unit: Callable[[Fraction], Fraction] | None = None,
) -> CriterionResult:
    panel = session.panel
    if panel is not None:
        notes = [_judge_note(session), *extra_notes]
        return decide_panel(
            criterion,
            context,
            scorer,
            panel.policy,
            tallies,
            calls,
            kind=kind,
            notes=notes,
            to_unit=to_unit,
        )
    return _decide_one(
        criterion,
        context,
        scorer,
        session,
        tallies[0],
        calls,
        kind=kind,
        extra_notes=extra_notes,
        to_unit=to_unit,
    )


def _confidence(
    tally: Tally,
    vote: Vote,
    decided: Any,
    to_unit: Callable[[Fraction], Fraction] | None,
) -> dict[str, Any]:
    """A single judge's confidence: its samples' agreement when it gave several, else the
    probability its tokens gave the value (log-probabilities), else none."""
    if tally.total > 1:
        agreement = sample_confidence(tally, decided, _clamped(to_unit))
        return {"confidence": float(agreement), "confidence_source": "samples"}
    if vote.probability is not None:
        return {"confidence": vote.probability, "confidence_source": "logprobs"}
    return {}


def _clamped(
    to_unit: Callable[[Fraction], Fraction] | None,
) -> Callable[[Fraction], Fraction] | None:
    if to_unit is None:
        return None
    scale = to_unit
    return lambda value: min(Fraction(1), max(Fraction(0), scale(value)))


def _decide_one(
    criterion: Criterion,
    context: ScoringContext,
    scorer: str,
    session: LLMSession,
    tally: Tally,
    calls: Sequence[LLMCall],
    *,
    kind: str,
    extra_notes: Sequence[str] = (),
    to_unit: Callable[[Fraction], Fraction] | None = None,
) -> CriterionResult:
    notes = [note for note in (_judge_note(session), *extra_notes) if note]
    abstention = tally.abstention_note()
    if not tally.votes:
        reasons = "; ".join(dict.fromkeys(tally.abstained)) or "no answer"
        prefix = f"none of {tally.total} samples gave a usable answer: " if tally.total > 1 else ""
        return _unable(criterion, scorer, prefix + reasons, calls, notes)
    if kind in ("verdict", "level"):
        decided = majority(tally, lambda value: str(value))
        if isinstance(decided, str):
            return _unable(criterion, scorer, decided, calls)
        winner, vote, evidence = decided
        value: Any = winner == "MET" if kind == "verdict" else winner
        result = result_from_value(criterion, context, scorer, value, what="the judge")
        judge_score = None
        sure = _confidence(tally, vote, winner, None)
    else:
        average, vote, evidence = mean(tally)
        unit = to_unit(average) if to_unit else average
        unit = min(Fraction(1), max(Fraction(0), unit))
        result = scored_result(criterion, context, scorer, unit, judge_score=average)
        judge_score = float(average)
        sure = _confidence(tally, vote, average, to_unit or (lambda v: v))
    if abstention:
        evidence.append(abstention)
    return _with(
        result,
        reasoning=vote.reasoning,
        evidence=(f"judge: {_excerpt(vote.reasoning)}", *evidence)
        if vote.reasoning
        else tuple(evidence),
        notes="; ".join(notes),
        llm_calls=tuple(calls),
        **({"judge_score": judge_score} if judge_score is not None else {}),
        **sure,
    )


async def judge_oneshot(
    session: LLMSession,
    criteria: Sequence[Criterion],
    target: Target,
    context: ScoringContext,
    scorer: str,
) -> list[CriterionResult]:
    """One question for all `criteria` (binary ones); results in the same order. The
    ledger records go on the first criterion's result."""
    results: dict[str, CriterionResult] = {}
    judged: list[Criterion] = []
    for criterion in criteria:
        if criterion.kind != "binary":
            results[criterion.id] = error_result(
                criterion,
                scorer,
                f"llm_oneshot judges MET/UNMET criteria; this one is graded by "
                f"{criterion.kind}: use llm_decode (levels) or llm_score (bands)",
            )
        else:
            judged.append(criterion)
    if not judged:
        return [results[c.id] for c in criteria]
    try:
        settings = [_setup(c, context) for c in judged]
    except JudgeConfigError as error:
        return [results.get(c.id) or error_result(c, scorer, str(error)) for c in criteria]
    samples = max(s for s, _t, _m in settings)
    temperature = next((t for _s, t, _m in settings if t is not None), None)
    max_tokens = max((m for _s, _t, m in settings if m is not None), default=None)
    asking = _OneshotAsk(session, target, context, scorer, samples, temperature, max_tokens)
    if double_pass(context) and len(judged) > 1:
        given, reversed_ = await asyncio.gather(
            asking.one_pass(judged), asking.one_pass(list(reversed(judged)))
        )
        for criterion in judged:
            results[criterion.id] = combine_passes(
                criterion, given[criterion.id], reversed_[criterion.id]
            )
    else:
        results.update(await asking.one_pass(judged))
    return [results[c.id] for c in criteria]


def double_pass(context: ScoringContext) -> bool:
    """Whether `llm_oneshot` asks twice, the second time in reversed criterion order: the
    caller's `double_pass` option, else the rubric's `metadata.double_pass`."""
    chosen = context.options.get("double_pass")
    if chosen is None:
        chosen = context.rubric.metadata.get("double_pass")
    return bool(chosen)


@dataclass(frozen=True)
class _OneshotAsk:
    """What asking one one-shot question needs, for one or two passes."""

    session: LLMSession
    target: Target
    context: ScoringContext
    scorer: str
    samples: int
    temperature: float | None
    max_tokens: int | None

    async def one_pass(self, judged: Sequence[Criterion]) -> dict[str, CriterionResult]:
        """One question with `judged` in this order; the ledger on the first's result."""
        session, context = self.session, self.context
        ids = [c.id for c in judged]
        system, user = build_prompt(
            "oneshot",
            context.rubric,
            [criterion_view(c) for c in judged],
            self.target,
            reasoning_max_chars=_reasoning_limit(session),
        )
        question = Question(
            system=system,
            user=user,
            schema=oneshot_schema(ids),
            schema_name="criteria_verdicts",
            read=_oneshot_reader(ids),
            rubric_hash=context.rubric.content_hash,
            criterion_ids=tuple(ids),
            max_tokens=self.max_tokens or _oneshot_tokens(session, len(ids)),
            images=target_images(self.target),
            about=question_about(context.rubric, self.target, ids, template_identity("oneshot")),
        )
        ballots = await ask_all(session, question, self.samples, self.temperature)
        calls = calls_of(ballots)
        answers = [answer for ballot in ballots for answer in ballot.answers]
        together = f"judged in one call with {', '.join(ids)}" if len(ids) > 1 else ""
        unknown = sorted({u for reading in _oneshot_readings(answers) for u in reading["unknown"]})
        results: dict[str, CriterionResult] = {}
        for index, criterion in enumerate(judged):
            extra = [together] if together else []
            if unknown:
                extra.append(f"the answer also named unknown criteria: {', '.join(unknown)}")
            if index > 0 and calls:
                extra.append(f"ledger on {ids[0]}")
            tallies = [
                tally(ballot, _oneshot_pick(criterion.id), key="verdict", scope=criterion.id)
                for ballot in ballots
            ]
            results[criterion.id] = _decide(
                criterion,
                context,
                self.scorer,
                session,
                tallies,
                calls if index == 0 else [],
                kind="verdict",
                extra_notes=extra,
            )
        return results


def _oneshot_pick(cid: str) -> Callable[[OneshotReading], Vote | str]:
    def pick(value: OneshotReading) -> Vote | str:
        entry = value["entries"].get(cid)
        if entry is not None:
            return Vote(entry["verdict"], entry["reasoning"])
        if cid in value["repeated"]:
            return f"the one-shot answer gave criterion {cid!r} more than once"
        return f"the one-shot answer left criterion {cid!r} out"

    return pick


def _problem(criterion: Criterion, result: CriterionResult) -> bool:
    """Whether a scored verdict finds the problem: UNMET, or a penalty present (MET)."""
    if not result.scored or result.verdict is None:
        return False
    return (result.verdict == "UNMET") == (criterion.weight >= 0)


def _goodness(criterion: Criterion, result: CriterionResult) -> Fraction:
    score = result.exact_score or Fraction(0)
    return score if criterion.weight >= 0 else 1 - score


def combine_passes(
    criterion: Criterion, given: CriterionResult, reversed_: CriterionResult
) -> CriterionResult:
    """The double pass's result: a positive criterion is MET only if both passes say so,
    a penalty is present if either pass finds it (the pass worse for the content wins);
    a pass without a verdict leaves the criterion `unable_to_evaluate` unless the other
    found the problem. A flip (the passes disagree) is recorded in the evidence and
    halves the confidence (0.5, source `double_pass`, when there was none)."""
    calls = given.llm_calls + reversed_.llm_calls
    said = "; ".join(
        f"pass {n} ({order} order): {r.verdict or r.level or r.score or r.status}"
        for n, order, r in ((1, "given", given), (2, "reversed", reversed_))
    )
    sure = [r.confidence for r in (given, reversed_) if r.confidence is not None]
    if given.scored and reversed_.scored:
        if given.exact_score == reversed_.exact_score:
            shown = given.verdict or given.level or given.score
            evidence = (*given.evidence, f"double pass: both passes agree ({shown})")
            source = given.confidence_source or reversed_.confidence_source
            update: dict[str, Any] = {
                "confidence": min(sure) if sure else None,
                "confidence_source": source if sure else None,
            }
            return given.model_copy(update={"evidence": evidence, "llm_calls": calls, **update})
        chosen = min((given, reversed_), key=lambda r: _goodness(criterion, r))
        note = "position bias flip"
    else:
        chosen = next((r for r in (given, reversed_) if _problem(criterion, r)), None) or (
            given if not given.scored else reversed_
        )
        if not chosen.scored:
            evidence = (*chosen.evidence, f"double pass: {said}")
            return chosen.model_copy(update={"evidence": evidence, "llm_calls": calls})
        note = "one pass gave no verdict"
    kept = chosen.verdict or chosen.level or chosen.score
    evidence = (*chosen.evidence, f"double pass: {note}: {said}; kept {kept}")
    confidence = (min(sure) / 2, chosen.confidence_source) if sure else (0.5, "double_pass")
    return chosen.model_copy(
        update={
            "evidence": evidence,
            "llm_calls": calls,
            "confidence": confidence[0],
            "confidence_source": confidence[1],
        }
    )


def _oneshot_tokens(session: LLMSession, count: int) -> int:
    """Room for `count` entries: the provider's max_tokens, or more for many criteria."""
    try:
        base = session.provider_now().settings.max_tokens
    except Exception:
        base = 1024
    return max(base, 150 * count)


class OneshotEntry(TypedDict):
    """One criterion's verdict in a one-shot answer, as the judge wrote it."""

    id: str
    reasoning: str
    verdict: str  # MET | UNMET


class OneshotReading(TypedDict):
    """A one-shot answer read (a `Reading`'s value): the entry of each asked criterion
    the judge named exactly once, and the asked ids it left out or repeated, and the
    ids it named that were not asked. A plain dict at runtime, so the answer's text is
    cleaned and cached like any other reading."""

    entries: dict[str, OneshotEntry]
    missing: list[str]
    repeated: list[str]
    unknown: list[str]


def _oneshot_readings(answers: Sequence[Answer]) -> list[OneshotReading]:
    """The one-shot readings among `answers` (those that were read at all)."""
    return [answer.value for answer in answers if answer.value]


def _oneshot_reader(ids: Sequence[str]) -> Callable[[str], Reading]:
    generic = oneshot_schema()
    known = set(ids)

    def read(text: str) -> Reading:
        value = extract_json(text)
        validate_answer(value, generic)
        items = value["criteria"]
        counts = Counter(item["id"] for item in items)
        missing = [cid for cid in ids if counts[cid] == 0]
        repeated = [cid for cid in ids if counts[cid] > 1]
        unknown = sorted(cid for cid in counts if cid not in known)
        entries: dict[str, OneshotEntry] = {
            item["id"]: item for item in items if item["id"] in known and counts[item["id"]] == 1
        }
        problems = []
        if missing:
            problems.append(f"criteria left out: {', '.join(missing)}")
        if repeated:
            problems.append(f"criteria given more than once: {', '.join(repeated)}")
        if unknown:
            problems.append(
                f"unknown criterion ids: {', '.join(unknown)} (valid: {', '.join(ids)})"
            )
        reading = OneshotReading(
            entries=entries, missing=missing, repeated=repeated, unknown=unknown
        )
        return Reading(reading, tuple(problems))

    return read


async def judge_level(
    session: LLMSession, criterion: Criterion, target: Target, context: ScoringContext, scorer: str
) -> CriterionResult:
    """Classify into one of the criterion's levels (`llm_decode`)."""
    if not criterion.levels:
        return error_result(
            criterion,
            scorer,
            "llm_decode classifies into levels and this criterion has none; "
            "use llm_verdict (MET/UNMET) or llm_score (bands)",
        )
    try:
        samples, temperature, max_tokens = _setup(criterion, context)
        rendered = (
            await render_template_async(criterion.scoring.template, target)
            if criterion.scoring.template
            else None
        )
    except (JudgeConfigError, PromptError) as error:
        return error_result(criterion, scorer, str(error))
    ids = [level.id for level in sorted(criterion.levels, key=lambda level: level.score)]
    schema = level_schema(ids)
    system, user = build_prompt(
        "level",
        context.rubric,
        [criterion_view(criterion)],
        target,
        content_rendered=rendered,
        reasoning_max_chars=_reasoning_limit(session),
    )
    question = Question(
        system=system,
        user=user,
        schema=schema,
        schema_name="level",
        read=_json_reader(schema, criterion.scoring.output_schema),
        rubric_hash=context.rubric.content_hash,
        criterion_ids=(criterion.id,),
        max_tokens=max_tokens,
        images=target_images(target),
        about=question_about(context.rubric, target, (criterion.id,), template_identity("level")),
    )
    ballots = await ask_all(session, question, samples, temperature)
    tallies = [
        tally(ballot, lambda value: Vote(value["level_id"], value["reasoning"]), key="level_id")
        for ballot in ballots
    ]
    return _decide(criterion, context, scorer, session, tallies, calls_of(ballots), kind="level")


@dataclass(frozen=True)
class _Scale:
    """The judge's scale, exactly: a rubric's `min_score: 0.1` is 1/10."""

    mode: str  # bands | range | tags | holistic
    low: Fraction
    high: Fraction
    integer: bool
    complement: bool = False  # a holistic penalty: the share incurred is 1 - L/100

    def to_unit(self, value: Fraction) -> Fraction:
        """`value` on this scale as a share of it, exactly: 8.7 on 0..10 is 87/100."""
        share = (value - self.low) / (self.high - self.low)
        return 1 - share if self.complement else share

    @property
    def bounds(self) -> tuple[float, float]:
        """low and high as floats, for prompts and schemas (the nearest doubles)."""
        return float(self.low), float(self.high)


def _scale(criterion: Criterion) -> _Scale:
    config = criterion.scoring.config
    if config.get("response_format") == "tags":
        low, high = _number(config, "min_score", 0.0), _number(config, "max_score", 10.0)
        mode = "tags"
    elif config.get("mode") == "rubric_as_judge":
        # on a penalty criterion (an all-penalty rubric's judgement) the judge's 0..100
        # says how free the content is of the faults, so the share incurred is 1 - L/100
        return _Scale("holistic", Fraction(0), Fraction(100), False, criterion.weight < 0)
    elif criterion.score_ranges:
        return _Scale("bands", Fraction(0), Fraction(10), True)
    else:
        low, high = _number(config, "min_score", 0.0), _number(config, "max_score", 10.0)
        mode = "range"
    if not high > low:
        raise JudgeConfigError(
            f"scoring.config.max_score ({high:g}) must be greater than min_score ({low:g})"
        )
    return _Scale(mode, exact_number(low), exact_number(high), bool(config.get("integer", False)))


def judge_scale(criterion: Criterion) -> tuple[Fraction, Fraction] | None:
    """The scale the judge writes an `llm_score` criterion's number on (0..10 bands,
    0..100 for rubric-as-judge, else its `min_score`..`max_score`), or None when its
    configuration is unusable."""
    try:
        scale = _scale(criterion)
    except JudgeConfigError:
        return None
    return scale.low, scale.high


def _requirements(criterion: Criterion) -> list[dict[str, Any]]:
    raw = criterion.scoring.config.get("requirements")
    if raw is None:
        return [requirement_view(criterion.description or criterion.name, 1.0, 1)]
    if not isinstance(raw, list) or not raw:
        raise JudgeConfigError(
            "scoring.config.requirements must be a list of {requirement, weight}"
        )
    views = []
    for index, item in enumerate(raw, start=1):
        if isinstance(item, str):
            views.append(requirement_view(item, 1.0, index))
        elif isinstance(item, Mapping) and isinstance(item.get("requirement"), str):
            views.append(requirement_view(item["requirement"], _number(item, "weight", 1.0), index))
        else:
            raise JudgeConfigError(
                f"scoring.config.requirements[{index - 1}] must be text or {{requirement, weight}}"
            )
    return views


def _tags_reader(
    scale: _Scale, judgement: judgespec.Extractors | None = None
) -> Callable[[str], Reading]:
    """RubricJudgeSpec's answer: the last `<score>` and `<rationale>` tags, or the fields
    of the spec's `extract_judgement` patterns when it has them. The score is read
    exactly as written (a Fraction)."""
    low, high = scale.low, scale.high
    shown_scale = f"{float(low):g}..{float(high):g}"
    fallback = score_schema(*scale.bounds)
    score_field = judgement.field("score") if judgement else None
    rationale_field = judgement.field("rationale") if judgement else None

    def rationale(text: str) -> str:
        found = judgespec.find_value(rationale_field, text) if rationale_field else None
        written = (found or "").strip() or extract_tag(text, "rationale") or ""
        reject_placeholders(written, "the <rationale>")  # `...` copied from the prompt
        return written

    def read(text: str) -> Reading:
        if score_field is not None:
            number = _custom_score(text, score_field)
            if not low <= number <= high:
                raise AnswerError(f"the score {float(number):g} is outside {shown_scale}")
            return Reading({"score": number, "reasoning": rationale(text)})
        raw = extract_tag(text, "score")
        if raw is None:
            return _json_score(text, fallback)
        try:
            number = parse_number(raw)
        except AnswerError:
            raise AnswerError(f"the <score> tag holds no number ({raw[:40]!r})") from None
        if not low <= number <= high:
            raise AnswerError(f"the score {float(number):g} is outside {shown_scale}")
        return Reading({"score": number, "reasoning": rationale(text)})

    return read


def _custom_score(text: str, field: judgespec.ExtractionField) -> Fraction:
    """The score a RubricJudgeSpec `extract_judgement` pattern finds in the answer."""
    shown = field.pattern.pattern if field.pattern is not None else "(the whole answer)"
    raw = judgespec.find_value(field, text)
    if raw is None:
        raise AnswerError(
            f"the answer has no match for the score pattern `{shown}` "
            f"(match_index {field.match_index})"
        )
    try:
        number = parse_number(raw)
    except AnswerError:
        raise AnswerError(
            f"the score pattern `{shown}` found {raw.strip()[:40]!r}, which holds no number"
        ) from None
    if field.field_type == "INT" and number.denominator != 1:
        raise AnswerError(f"the score {float(number):g} is not a whole number")
    return number


def _json_score(text: str, schema: dict[str, Any]) -> Reading:
    """A tags answer without a <score> tag, read as the JSON score answer if it is one."""
    try:
        value = extract_json(text)
        validate_answer(value, schema)
    except AnswerError:
        raise AnswerError(
            "the answer has no <score>...</score> tag; give your rationale in "
            "<rationale>...</rationale> and one number in <score>...</score>"
        ) from None
    score = exact_number(value["score"])
    return Reading({"score": score, "reasoning": value["reasoning"]})


def _judgespec_question(
    criterion: Criterion,
    target: Target,
    context: ScoringContext,
    scale: _Scale,
    max_tokens: int | None,
) -> Question | str:
    """RubricJudgeSpec's question (prescript + rubric + postscript, every `${name}` filled
    in one pass from the built-ins and the `extract_variables` values), or why it cannot
    be asked: the criterion is then `unable_to_evaluate` and no call is made."""
    from rubricflow.llm.prompts import reask_message

    config = criterion.scoring.config
    low, high = scale.bounds
    try:
        variables, judgement = judgespec.extractors_from_config(config)
    except ValueError as error:
        raise JudgeConfigError(str(error)) from None
    prescript = str(config.get("prescript") or judgespec.DEFAULT_PRESCRIPT)
    postscript = str(config.get("postscript") or judgespec.DEFAULT_POSTSCRIPT)
    try:
        extracted = (
            judgespec.extract_values(variables, content=target.text, query=target.query)
            if variables is not None
            else {}
        )
    except judgespec.ExtractionFailure as failure:
        return str(failure)
    values = {name: escape_delimiters(value) for name, value in extracted.items()}
    values.update(
        min_score=f"{low:g}", max_score=f"{high:g}", content=escape_delimiters(target.text)
    )
    parts = {"prescript": prescript, "rubric": criterion.description, "postscript": postscript}
    for where, text in parts.items():
        unknown = [name for name in judgespec.placeholders(text) if name not in values]
        if unknown:
            return (
                f"the {where} uses ${{{unknown[0]}}}, which is neither built in nor defined by "
                "scoring.config.extract_variables; the judge was not asked (a placeholder is "
                "never sent as written)"
            )
    prompt = judgespec.render_prompt(prescript, criterion.description, postscript, values)
    custom = judgement is not None and judgement.field("score") is not None

    def reask(error: str) -> str:
        if not custom:
            return reask_message(error, None, low=low, high=high)
        return (
            f"Your previous answer could not be used: {error}\nReply again as the "
            f"instructions above ask, with one score from {low:g} to {high:g}."
        )

    return Question(
        system=judgespec.SYSTEM_PROMPT,
        user=prompt,
        schema=None,
        read=_tags_reader(scale, judgement),
        rubric_hash=context.rubric.content_hash,
        criterion_ids=(criterion.id,),
        max_tokens=max_tokens,
        reask_text=reask,
        about=question_about(context.rubric, target, (criterion.id,), _judgespec_template()),
    )


async def judge_score(
    session: LLMSession, criterion: Criterion, target: Target, context: ScoringContext, scorer: str
) -> CriterionResult:
    """A number on the criterion's scale, mapped onto 0..1 (`llm_score`)."""
    try:
        samples, temperature, max_tokens = _setup(criterion, context)
        scale = _scale(criterion)
        requirements = _requirements(criterion) if scale.mode == "holistic" else []
    except JudgeConfigError as error:
        return error_result(criterion, scorer, f"criterion {criterion.id}: {error}")
    low, high = scale.bounds
    limit = _reasoning_limit(session)
    if scale.mode == "tags":
        try:
            asked = _judgespec_question(criterion, target, context, scale, max_tokens)
        except JudgeConfigError as error:
            return error_result(criterion, scorer, f"criterion {criterion.id}: {error}")
        if isinstance(asked, str):
            return _unable(criterion, scorer, asked, [])
        question = asked
    else:
        schema = score_schema(low, high, integer=scale.integer)
        if scale.mode == "holistic":
            system, user = build_prompt(
                "holistic", context.rubric, requirements, target, reasoning_max_chars=limit
            )
        else:
            system, user = build_prompt(
                "score",
                context.rubric,
                [criterion_view(criterion)],
                target,
                low=low,
                high=high,
                integer=scale.integer,
                reasoning_max_chars=limit,
            )
        question = Question(
            system=system,
            user=user,
            schema=schema,
            schema_name="score",
            read=_json_reader(schema, criterion.scoring.output_schema),
            rubric_hash=context.rubric.content_hash,
            criterion_ids=(criterion.id,),
            max_tokens=max_tokens,
            images=target_images(target),
            about=question_about(
                context.rubric,
                target,
                (criterion.id,),
                template_identity("holistic" if scale.mode == "holistic" else "score"),
            ),
        )
    ballots = await ask_all(session, question, samples, temperature)
    # a JSON number is read as the decimal it prints as (the judge's `8.7` is 87/10); a
    # tag's number is already exact
    tallies = [
        tally(
            ballot,
            lambda value: Vote(exact_number(value["score"]), value["reasoning"]),
            key="score",
        )
        for ballot in ballots
    ]
    return _decide(
        criterion,
        context,
        scorer,
        session,
        tallies,
        calls_of(ballots),
        kind="score",
        to_unit=scale.to_unit,
    )


# -- rubric-level strategies --------------------------------------------------------


def rubric_as_judge(rubric: Rubric) -> Rubric:
    """The `rubric` package's rubric-as-judge grader as a rubric: one `llm_score`
    criterion (`mode: rubric_as_judge`, 0..100) whose requirements are `rubric`'s criteria
    with their weights. Its weight is the total positive weight P, so the evaluation's
    score is clamp(L/100) and its raw_score (L/100)*P, as the package computes them. An
    all-penalty rubric's criterion is a penalty of weight -N incurred to 1 - L/100: the
    score is L/100 and the raw score -N(1 - L/100), as the package's 1.3.2 code has it."""
    # summed exactly: weights 0.1 and 0.2 make P = 0.3, not 0.30000000000000004
    positive = sum((exact_number(c.weight) for c in rubric.criteria if c.weight > 0), Fraction(0))
    penalty = sum((-exact_number(c.weight) for c in rubric.criteria if c.weight < 0), Fraction(0))
    weight = float(positive if positive > 0 else -penalty if penalty > 0 else 1)
    requirements = [
        {"requirement": c.description or c.name, "weight": c.weight} for c in rubric.criteria
    ]
    document = rubric.to_dict()
    document["criteria"] = [
        {
            "id": "rubric_as_judge",
            "name": "Rubric as judge",
            "description": f"Holistic 0..100 judgement against every requirement of {rubric.name}",
            "weight": weight,
            "scoring": {
                "method": "llm_score",
                "config": {"mode": "rubric_as_judge", "requirements": requirements},
            },
        }
    ]
    document["version"] = _derived_version(rubric.version, "rubric-as-judge")
    document["metadata"] = {
        **rubric.metadata,
        "strategy": "rubric-as-judge",
        "derived_from": f"{rubric.id}@{rubric.version}",
    }
    return parse_rubric(document)


def _derived_version(version: str, tag: str) -> str:
    """`1.2.0` -> `1.2.0+oneshot`: same precedence, a distinct version string, so a store
    never mistakes the derived rubric for the original."""
    return f"{version}.{tag}" if "+" in version else f"{version}+{tag}"


def apply_strategy(rubric: Rubric, strategy: str) -> Rubric:
    """The rubric judged by a `rubric`-package-style strategy: `per-criterion` (as is),
    `oneshot` (every MET/UNMET LLM criterion in one call) or `rubric-as-judge`."""
    if strategy == "per-criterion":
        return rubric
    if strategy == "rubric-as-judge":
        return rubric_as_judge(rubric)
    if strategy != "oneshot":
        raise ValueError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    document = rubric.to_dict()
    document["version"] = _derived_version(rubric.version, "oneshot")
    for item, criterion in zip(document["criteria"], rubric.criteria, strict=True):
        if criterion.kind == "binary" and criterion.scoring.method in ("llm", "llm_verdict"):
            item.setdefault("scoring", {})["method"] = "llm_oneshot"
    return parse_rubric(document)
