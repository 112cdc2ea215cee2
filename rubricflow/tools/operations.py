"""The operations an agent (or an MCP client) calls, as typed async functions over an
`Application`: evaluate text, submit an artifact for review, read where its review
stands, revise it, list rubrics and explain one.

Each takes its parameters model (`rubricflow.tools.models`) and returns a result model
that carries the feedback a bot acts on: the verdict, every criterion, and the fixes.
They call the same `Application` / `ArtifactRegistry` operations as the CLI and the HTTP
API. Who acts (`actor`) and which judge scores (`judge`) are the host's to choose, never
the tool call's. Failures are `RubricflowError`s naming the field and the fix; the
dispatcher (`rubricflow.tools.dispatch`) turns them into error tool results.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rubricflow.engine.executor import resolve_method
from rubricflow.engine.feedback import next_level_hint
from rubricflow.errors import ConfigurationError, ContentValidationError, NotFoundError
from rubricflow.scorers.llm import LLM_SCORER_NAMES
from rubricflow.tools.models import (
    CriterionExplained,
    CriterionOutcome,
    EvaluateTextParams,
    EvaluationFeedback,
    ExplainRubricParams,
    Fix,
    GetReviewParams,
    GetReviewResult,
    HistoryStep,
    LevelExplained,
    ListRubricsParams,
    ListRubricsResult,
    ReviewResult,
    ReviseArtifactParams,
    RubricExplained,
    SubmitForReviewParams,
    content_value,
)
from rubricflow.tools.rubrics import inline_rubric, registered_rubric
from rubricflow.wire.artifacts import EvaluationSummary
from rubricflow.wire.rubrics import RubricSummary

if TYPE_CHECKING:
    from rubricflow.application import Application
    from rubricflow.llm.session import LLMSession
    from rubricflow.model import Rubric
    from rubricflow.results import Evaluation
    from rubricflow.review import Artifact, ReviewOutcome

__all__ = [
    "DEFAULT_ACTOR",
    "evaluate_text",
    "evaluation_feedback",
    "explain_rubric",
    "get_review",
    "list_rubrics",
    "revise_artifact",
    "submit_for_review",
]

#: who the artifact operations act as when the host names no one
DEFAULT_ACTOR = "agent"

NO_JUDGE = (
    "this host has no judge: the host gives one (ToolDispatcher(app, judge=SPEC); for the "
    "MCP server `rubricflow mcp --llm SPEC` or $RUBRICFLOW_LLM); a tool call cannot choose one"
)


# --- feedback --------------------------------------------------------------------------------
def _fixes(evaluation: Evaluation, rubric: Rubric | None) -> list[Fix]:
    """Every criterion that held the content back, with what would lift it (as the
    feedback text's "What to fix" says it), then those that could not be scored."""
    by_id = {c.id: c for c in rubric.criteria} if rubric is not None else {}
    fixes: list[Fix] = []
    unscored: list[Fix] = []
    for result in evaluation.criteria:
        criterion = by_id.get(result.criterion_id)
        name = (criterion.name if criterion else "") or result.criterion_id
        if result.status != "scored" or result.score is None:
            why = result.notes or result.status
            unscored.append(
                Fix(
                    criterion_id=result.criterion_id,
                    name=name,
                    required=result.required,
                    what_to_fix=f"not scored ({why}): fix the cause and evaluate again",
                )
            )
            continue
        below_bar = result.weight >= 0 and result.score < evaluation.threshold
        if result.passed is False or below_bar:
            if criterion is not None:
                hint = next_level_hint(criterion, result)
            else:
                hint = "meet the criterion"
            if result.evidence:
                hint += f" (evidence: {'; '.join(result.evidence[:3])})"
            fixes.append(
                Fix(
                    criterion_id=result.criterion_id,
                    name=name,
                    required=result.criterion_id in evaluation.gating_failures,
                    what_to_fix=hint,
                )
            )
    fixes.sort(key=lambda fix: not fix.required)  # gating failures first
    return fixes + unscored


def evaluation_feedback(evaluation: Evaluation, rubric: Rubric | None) -> EvaluationFeedback:
    """`evaluation` with its feedback: each criterion and the fixes (`rubric` gives the
    criteria's names and levels; without it, ids stand in)."""
    names = {c.id: c.name for c in rubric.criteria} if rubric is not None else {}
    criteria = [
        CriterionOutcome(
            criterion_id=r.criterion_id,
            name=names.get(r.criterion_id) or r.criterion_id,
            status=r.status,
            score=r.score,
            verdict=r.verdict,
            level=r.level,
            passed=r.passed,
            required=r.required,
            weight=r.weight,
            evidence=list(r.evidence),
            notes=r.notes,
            confidence=r.confidence,
            confidence_source=r.confidence_source,
        )
        for r in evaluation.criteria
    ]
    return EvaluationFeedback(
        **EvaluationSummary.of(evaluation).model_dump(),
        threshold=evaluation.threshold,
        criteria=criteria,
        fixes=_fixes(evaluation, rubric),
        gating_failures=list(evaluation.gating_failures),
    )


# --- evaluate --------------------------------------------------------------------------------
def _judged(application: Application, rubric: Rubric) -> list[str]:
    """Ids of the criteria of `rubric` an LLM judge scores."""
    scorers = application.plugins.scorers
    return [
        c.id
        for c in rubric.criteria
        if (method := resolve_method(c)) in LLM_SCORER_NAMES and method in scorers
    ]


async def evaluate_text(
    application: Application,
    params: EvaluateTextParams,
    *,
    judge: str | LLMSession | None = None,
) -> EvaluationFeedback:
    """Score `params.content` against a registered or inline rubric; nothing is stored.

    `judge` (a spec such as `openai:gpt-4o-mini`, or an open `LLMSession`) scores the
    criteria an LLM judges; a rubric with such criteria and no judge is a
    `ConfigurationError` naming them. An inline rubric is a stranger's data
    (`rubricflow.tools.rubrics`), and no rubric imports code here.
    """
    from rubricflow.results import Target

    if params.rubric is not None:
        rubric = await registered_rubric(application, params.rubric)
    else:
        assert params.rubric_document is not None
        rubric = await inline_rubric(
            application, params.rubric_document, format=None, rubric_id=params.rubric_id
        )
    target = Target(content=_content(params), query=params.query)  # refused before a judge
    judged = _judged(application, rubric)
    session: LLMSession | None = None
    options: dict[str, Any] = {"llm_cache": None}
    if judged:
        if judge is None:
            shown = ", ".join(judged[:5]) + (" ..." if len(judged) > 5 else "")
            raise ConfigurationError(
                f"criteria {shown} of rubric {rubric.id!r} need a judge, but {NO_JUDGE}"
            )
        if isinstance(judge, str):
            from rubricflow.llm.session import LLMSession

            session = LLMSession(
                judge,
                plugins=application.plugins,
                allow_import=False,
                cache=application.judge_cache,
            )
            options = {"llm": session}
        else:
            options = {"llm": judge}
    try:
        (evaluation,) = await application.evaluate(rubric, [target], options=options)
    finally:
        if session is not None:
            await session.aclose()
    return evaluation_feedback(evaluation, rubric)


# --- artifacts -------------------------------------------------------------------------------
def _next_step(artifact: Artifact, queued: bool) -> str:
    status = artifact.status
    if status == "approved":
        return "approved: the content may be published"
    if status == "needs_revision":
        return (
            "change the content as `fixes` says, then call revise_artifact with the new "
            "content (it is reviewed again)"
        )
    if status == "rejected":
        return "rejected: do not publish it; a new attempt is a new submission"
    if status == "in_review" and artifact.awaiting_approval:
        return "the rubrics passed; it waits for a human reviewer's approval: call get_review later"
    if queued or status in ("pending_review", "in_review"):
        return "the review is queued or running: call get_review later"
    if status == "draft":
        return "a draft: call revise_artifact with resubmit true to submit it for review"
    if status == "dead_lettered":
        return "its reviews kept failing; a reviewer must retry it: call get_review later"
    return f"{status}: nothing more to do with this artifact"


async def _rubric_of(
    application: Application, evaluation: Evaluation, seen: dict[tuple[str, str], Rubric | None]
) -> Rubric | None:
    key = (evaluation.rubric_id, evaluation.rubric_version)
    if key not in seen:
        try:
            seen[key] = await application.rubrics.get(*key)
        except NotFoundError:
            seen[key] = None
    return seen[key]


def _overall(evaluations: list[EvaluationFeedback]) -> str | None:
    verdicts = {e.verdict for e in evaluations}
    for verdict in ("fail", "incomplete", "pass"):
        if verdict in verdicts:
            return verdict
    return None


async def _status(
    application: Application,
    artifact: Artifact,
    evaluations: list[Evaluation],
    *,
    queued: bool = False,
    reason: str | None = None,
) -> dict[str, Any]:
    """The fields of a `ReviewStatus` for `artifact` and its current evaluations (the
    newest of each rubric)."""
    newest: dict[str, Evaluation] = {}
    for evaluation in evaluations:
        newest.setdefault(evaluation.rubric_id, evaluation)
    seen: dict[tuple[str, str], Rubric | None] = {}
    feedback = [
        evaluation_feedback(e, await _rubric_of(application, e, seen)) for e in newest.values()
    ]
    return {
        "artifact_id": artifact.id,
        "artifact_type": artifact.type,
        "status": artifact.status,
        "revision": artifact.revision,
        "version": artifact.version,
        "approved": artifact.status == "approved",
        "awaiting_approval": artifact.awaiting_approval,
        "verdict": _overall(feedback),
        "reason": reason if reason is not None else artifact.last_reason,
        "next_step": _next_step(artifact, queued),
        "evaluations": feedback,
    }


async def _review_result(application: Application, outcome: ReviewOutcome) -> ReviewResult:
    fields = await _status(
        application,
        outcome.artifact,
        list(outcome.evaluations),
        queued=outcome.queued,
        reason=outcome.reason,
    )
    return ReviewResult(**fields, queued=outcome.queued)


def _content(params: EvaluateTextParams | SubmitForReviewParams | ReviseArtifactParams) -> Any:
    try:
        return content_value(params.content, params.content_format)
    except ValueError as error:
        raise ContentValidationError(
            "content: not what content_format says", [str(error)]
        ) from None


async def submit_for_review(
    application: Application,
    params: SubmitForReviewParams,
    *,
    actor: str = DEFAULT_ACTOR,
) -> ReviewResult:
    """Create an artifact of `params.artifact_type` and submit it for review, in one step
    (`Application.create_and_submit`). The review runs now unless the type defers it; the
    result says the decision, or that it is queued."""
    metadata: dict[str, Any] = {item.key: item.value for item in params.metadata or ()}
    if params.submitter is not None:
        metadata["submitter"] = params.submitter
    try:
        await application.artifacts.get_type(params.artifact_type)
    except NotFoundError:
        names = [t.name for t in await application.artifacts.list_types()]
        raise NotFoundError(
            f"artifact_type: no artifact type {params.artifact_type!r}; use one of: "
            + (", ".join(names) or "(none is defined: define one first)")
        ) from None
    outcome = await application.create_and_submit(
        params.artifact_type,
        _content(params),
        actor=actor,
        title=params.title,
        metadata=metadata,
    )
    return await _review_result(application, outcome)


async def _artifact(application: Application, artifact_id: str) -> Artifact:
    try:
        return await application.artifacts.get(artifact_id)
    except NotFoundError:
        raise NotFoundError(
            f"artifact_id: no artifact {artifact_id!r}; use the id submit_for_review returned"
        ) from None


async def get_review(application: Application, params: GetReviewParams) -> GetReviewResult:
    """Where the artifact's review stands: status, the current revision's evaluations with
    their fixes, what to do next, and its history in brief."""
    artifact = await _artifact(application, params.artifact_id)
    evaluations = await application.artifacts.evaluations(artifact.id, artifact.revision)
    history = [
        HistoryStep(
            revision=event.revision,
            action=event.trigger,
            from_status=event.source,
            to_status=event.dest,
            actor=event.actor,
            reason=event.reason,
            at=event.created_at.isoformat(),
        )
        for event in await application.artifacts.history(artifact.id)
    ]
    fields = await _status(application, artifact, evaluations)
    return GetReviewResult(**fields, history=history)


async def revise_artifact(
    application: Application,
    params: ReviseArtifactParams,
    *,
    actor: str = DEFAULT_ACTOR,
) -> ReviewResult:
    """New content as a new revision and, unless `resubmit` is false, its review. Content
    the type's review would refuse (its content schema) is refused before the revision is
    stored, so a refused call changes nothing and a corrected retry still matches
    `expected_version`."""
    current = await _artifact(application, params.artifact_id)
    content = _content(params)
    if params.resubmit:
        from rubricflow.content_bounds import check_content_bounds
        from rubricflow.review.submission import check_submittable_off_loop

        check_content_bounds(content, "artifact content")
        artifact_type = await application.artifacts.get_type(current.type)
        await check_submittable_off_loop(artifact_type, content)
    artifact = await application.artifacts.revise(
        params.artifact_id,
        content,
        actor=actor,
        reason=params.reason,
        expected_version=params.expected_version,
    )
    if not params.resubmit:
        return ReviewResult(**await _status(application, artifact, []))
    outcome = await application.artifacts.submit_for_review(
        artifact.id, actor=actor, expected_version=artifact.version
    )
    return await _review_result(application, outcome)


# --- rubrics ---------------------------------------------------------------------------------
async def list_rubrics(application: Application, params: ListRubricsParams) -> ListRubricsResult:
    """The registered rubrics, each at its latest version (those for one target type)."""
    if params.target_type is not None:
        rubrics = await application.rubrics.get_for_target(params.target_type)
    else:
        rubrics = await application.rubrics.list_latest()
    return ListRubricsResult(rubrics=[RubricSummary.of(r) for r in rubrics])


def _passing(rubric: Rubric) -> str:
    required = [c.name or c.id for c in rubric.criteria if c.required]
    text = (
        f"The weighted score (0..1) must reach {rubric.pass_threshold:g}"
        + (f", and every required criterion must pass ({', '.join(required)})" if required else "")
        + "."
    )
    bars = [f"{c.name or c.id} >= {c.min_score:g}" for c in rubric.criteria if c.min_score]
    if bars:
        text += f" Criteria with their own bar: {', '.join(bars)}."
    if rubric.unscored_policy == "fail_closed":
        text += " A criterion that cannot be scored makes the evaluation incomplete, not a pass."
    return text


async def explain_rubric(application: Application, params: ExplainRubricParams) -> RubricExplained:
    """What a rubric checks (criteria, weights, levels, how each is scored) and what
    passing means."""
    rubric = await registered_rubric(application, params.rubric)
    criteria = [
        CriterionExplained(
            id=c.id,
            name=c.name,
            description=c.description,
            weight=c.weight,
            required=c.required,
            min_score=c.min_score,
            method=resolve_method(c),
            levels=[
                LevelExplained(id=lv.id, label=lv.label, score=lv.score, description=lv.description)
                for lv in c.levels
            ],
        )
        for c in rubric.criteria
    ]
    return RubricExplained(
        id=rubric.id,
        version=rubric.version,
        name=rubric.name,
        description=rubric.description,
        target_type=rubric.target_type,
        pass_threshold=rubric.pass_threshold,
        score_formula=rubric.score_formula,
        unscored_policy=rubric.unscored_policy,
        criteria=criteria,
        passing=_passing(rubric),
    )
