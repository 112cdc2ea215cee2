"""Rubrics: register a version (admins), list, get the latest or an exact version, the
versions of one, lint a document (validate + meta-rubric), the diff of two versions,
and per-criterion pass rates.

Every role reads rubrics: a submitter needs to know what its content is judged by. A
rubric sent in a request is a stranger's data (`rubricflow.server.strangers`): it reads
no file and imports no code. A rubric id may hold `/` and `:`; the routes take it as the
rest of the path (`/v1/rubrics/team/tone@1.2.0`).
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field

from rubricflow.errors import Problem, RubricValidationError
from rubricflow.model import Rubric
from rubricflow.rubric_diff import RubricDiff
from rubricflow.server.auth import Admin, AppDep, Reviewer, Submitter
from rubricflow.server.problems import PROBLEM_RESPONSES
from rubricflow.server.scoring import PRINTABLE, IdPath, parse_reference
from rubricflow.server.strangers import load_untrusted, refuse_untrusted
from rubricflow.store.evaluations import CriterionPassRate
from rubricflow.store.rubrics import RubricVersionInfo

__all__ = ["router"]

router = APIRouter(
    prefix="/v1/rubrics",
    tags=["rubrics"],
    responses={k: PROBLEM_RESPONSES[k] for k in (403, 404)},
)

#: the largest rubric document accepted as text (the body limit applies as well)
MAX_DOCUMENT_CHARS = 5_000_000


# --- models ---------------------------------------------------------------------------------
class RubricDocumentIn(BaseModel):
    """A rubric document as text: YAML or JSON, in any supported format (native, or one
    the importers read: OpenRubricRL, AgentV, DataKnobs, RubricJudgeSpec, rubric)."""

    model_config = ConfigDict(extra="forbid")

    document: str = Field(
        min_length=1,
        max_length=MAX_DOCUMENT_CHARS,
        description="The rubric file's text (YAML or JSON); it may hold several rubrics",
    )
    format: str | None = Field(
        default=None, max_length=100, description="The document's format; default: detected"
    )


class RubricSummary(BaseModel):
    """A rubric version in brief."""

    id: str
    version: str
    name: str
    target_type: str | None
    content_hash: str
    criteria: int = Field(description="How many criteria it has")

    @classmethod
    def of(cls, rubric: Rubric) -> RubricSummary:
        return cls(
            id=rubric.id,
            version=rubric.version,
            name=rubric.name,
            target_type=rubric.target_type,
            content_hash=rubric.content_hash,
            criteria=len(rubric.criteria),
        )


class RegisteredRubricOut(RubricSummary):
    created: bool = Field(description="False when this exact content was stored already")


class RegisterResult(BaseModel):
    format: str = Field(description="The format the document was read in")
    registered: list[RegisteredRubricOut]


class RubricList(BaseModel):
    rubrics: list[RubricSummary]


class RubricOut(RubricSummary):
    """One rubric version with its whole native document."""

    document: Rubric = Field(description="The rubric as rubricflow's native document")


class RubricVersionOut(BaseModel):
    id: str
    version: str
    content_hash: str
    name: str
    target_type: str | None
    source_format: str | None
    created_at: datetime
    deleted: bool

    @classmethod
    def of(cls, info: RubricVersionInfo) -> RubricVersionOut:
        return cls(
            id=info.rubric_id,
            version=info.version,
            content_hash=info.content_hash,
            name=info.name,
            target_type=info.target_type,
            source_format=info.source_format,
            created_at=info.created_at,
            deleted=info.deleted,
        )


class RubricVersions(BaseModel):
    versions: list[RubricVersionOut] = Field(description="Lowest to highest version")


class ProblemItem(BaseModel):
    path: str = Field(description="Where: a field path such as criteria[2].weight")
    message: str

    @classmethod
    def of(cls, problem: Problem) -> ProblemItem:
        return cls(path=problem.path, message=problem.message)


class MetaFinding(BaseModel):
    check: str
    level: str
    message: str


class MetaRubricOut(BaseModel):
    """The meta-rubric's judgement of a rubric: five checks of how well it is written."""

    score: float
    passed: bool
    findings: list[MetaFinding]


class MetaRubricTotal(BaseModel):
    score: float = Field(description="The lowest meta-rubric score of the document's rubrics")
    passed: bool


class LintedRubric(BaseModel):
    id: str
    version: str
    content_hash: str
    meta_rubric: MetaRubricOut


class LintReport(BaseModel):
    """What `rubricflow validate` reports for a document: errors (it cannot be used),
    warnings (it can, but reads badly) and the meta-rubric of each rubric."""

    format: str | None
    valid: bool
    errors: list[ProblemItem]
    warnings: list[ProblemItem]
    meta_rubric: MetaRubricTotal | None
    rubrics: list[LintedRubric]


class FieldChangeOut(BaseModel):
    path: str
    kind: Literal["changed", "added", "removed"]
    before: Any = None
    after: Any = None


class CriterionChangeOut(BaseModel):
    criterion_id: str
    change: Literal["added", "removed", "changed"]
    fields: list[FieldChangeOut]


class VersionRef(BaseModel):
    version: str
    content_hash: str


class RubricDiffOut(BaseModel):
    """What changed between two versions, field by field, and whether any change can move
    a score or a verdict (`scoring_changed`), or only the wording did."""

    rubric_id: str
    before: VersionRef
    after: VersionRef
    identical: bool
    scoring_changed: bool
    reordered: bool
    rubric_fields: list[FieldChangeOut]
    criteria: list[CriterionChangeOut]

    @classmethod
    def of(cls, diff: RubricDiff) -> RubricDiffOut:
        return cls.model_validate(diff.to_dict())


class PassRateOut(BaseModel):
    rubric_id: str
    rubric_version: str
    criterion_id: str
    bucket: str | None = Field(description="The first day (UTC) of the week or day, if asked")
    scored: int
    passed: int
    failed: int
    unscored: int = Field(description="Results that could not be scored (error, unable)")
    pass_rate: float | None

    @classmethod
    def of(cls, rate: CriterionPassRate) -> PassRateOut:
        return cls.model_validate(rate.to_dict())


class PassRates(BaseModel):
    rates: list[PassRateOut] = Field(description="Per bucket, the most failed criteria first")


# --- routes ---------------------------------------------------------------------------------
@router.post(
    "",
    status_code=201,
    response_model=RegisterResult,
    summary="Register every rubric of a document (admins)",
    responses={k: PROBLEM_RESPONSES[k] for k in (409, 413, 422)},
)
async def register_rubrics(
    body: RubricDocumentIn, principal: Admin, application: AppDep
) -> RegisterResult:
    """Store each rubric of the document as an immutable version, all or none. The same
    content again is `created: false`; other content under a stored id@version is 409.
    The document may not read files or name code or a judge (422 naming the field)."""
    from rubricflow.validation import refuse_broken_configs

    loaded = await asyncio.to_thread(
        load_untrusted, body.document, format=body.format, plugins=application.plugins
    )
    refuse_broken_configs(loaded.rubrics, application.plugins, "<request>")
    pairs = [(rubric, loaded.format) for rubric in loaded.rubrics]
    results = await application.rubrics.register_pairs(pairs)
    return RegisterResult(
        format=loaded.format,
        registered=[
            RegisteredRubricOut(**RubricSummary.of(r.rubric).model_dump(), created=r.created)
            for r in results
        ],
    )


@router.get("", response_model=RubricList, summary="The latest version of every rubric")
async def list_rubrics(
    principal: Submitter,
    application: AppDep,
    target_type: str | None = Query(
        default=None,
        pattern=PRINTABLE,
        max_length=200,
        description="Only rubrics for this target type",
    ),
) -> RubricList:
    if target_type is not None:
        rubrics = await application.rubrics.get_for_target(target_type)
    else:
        rubrics = await application.rubrics.list_latest()
    return RubricList(rubrics=[RubricSummary.of(rubric) for rubric in rubrics])


@router.post(
    "/lint",
    response_model=LintReport,
    summary="Validate a rubric document and run the meta-rubric over it",
    responses={k: PROBLEM_RESPONSES[k] for k in (413, 422)},
)
async def lint_rubric(
    body: RubricDocumentIn, principal: Submitter, application: AppDep
) -> LintReport:
    """The report `rubricflow validate` gives: a document that breaks the rules is a
    report with `valid: false` (200), not an error. What a stranger's document may not
    do (read a file, name code or a judge) is a 422 problem naming the field."""
    report = await application.lint_rubric_text(
        body.document, source="<request>", format=body.format
    )
    schema_refs = [p for p in report.errors if p.path.endswith("schema_ref")]
    if schema_refs:
        raise RubricValidationError(
            [
                Problem(
                    p.path,
                    "schema_ref names a file, and rubrics sent over HTTP are data: they read "
                    "no file on the server; inline the JSON Schema as `schema`",
                )
                for p in schema_refs
            ],
            "<request>",
        )
    refuse_untrusted([r.rubric for r in report.rubrics], application.plugins)
    return LintReport(
        format=report.format,
        valid=report.valid,
        errors=[ProblemItem.of(p) for p in report.errors],
        warnings=[ProblemItem.of(p) for p in report.warnings],
        meta_rubric=(
            MetaRubricTotal.model_validate(report.meta_rubric) if report.meta_rubric else None
        ),
        rubrics=[
            LintedRubric(
                id=r.rubric.id,
                version=r.rubric.version,
                content_hash=r.rubric.content_hash,
                meta_rubric=MetaRubricOut.model_validate(r.meta.to_dict()),
            )
            for r in report.rubrics
        ],
    )


@router.get(
    "/{rubric_id:path}/versions",
    response_model=RubricVersions,
    summary="Every stored version of a rubric",
)
async def rubric_versions(
    rubric_id: IdPath, principal: Submitter, application: AppDep
) -> RubricVersions:
    infos = await application.rubrics.history(rubric_id)
    return RubricVersions(versions=[RubricVersionOut.of(info) for info in infos])


@router.get(
    "/{rubric_id:path}/diff",
    response_model=RubricDiffOut,
    summary="What changed between two versions of a rubric",
)
async def diff_rubric(
    rubric_id: IdPath,
    principal: Submitter,
    application: AppDep,
    before: str | None = Query(
        default=None,
        pattern=PRINTABLE,
        alias="from",
        max_length=100,
        description="The older version (default: the one below `to`)",
    ),
    after: str | None = Query(
        default=None,
        pattern=PRINTABLE,
        alias="to",
        max_length=100,
        description="The newer version (default: the highest)",
    ),
) -> RubricDiffOut:
    return RubricDiffOut.of(await application.diff_rubric(rubric_id, before, after))


@router.get(
    "/{rubric_id:path}/pass-rates",
    response_model=PassRates,
    summary="Per-criterion pass rates of a rubric over stored evaluations (reviewers)",
)
async def pass_rates(
    rubric_id: IdPath,
    principal: Reviewer,
    application: AppDep,
    version: str | None = Query(default=None, pattern=PRINTABLE, max_length=100),
    run: str | None = Query(
        default=None, pattern=PRINTABLE, max_length=200, description="Only this run"
    ),
    artifact_type: str | None = Query(
        default=None,
        pattern=PRINTABLE,
        max_length=200,
        description="Only reviews of this type's artifacts",
    ),
    since: datetime | None = Query(default=None, description="Inclusive"),
    until: datetime | None = Query(default=None, description="Exclusive"),
    bucket: Literal["week", "day"] | None = Query(default=None, description="Per week or day"),
) -> PassRates:
    rates = await application.evaluations.criterion_pass_rates(
        rubric_id,
        rubric_version=version,
        run_id=run,
        artifact_type=artifact_type,
        since=since,
        until=until,
        bucket=bucket,
    )
    return PassRates(rates=[PassRateOut.of(rate) for rate in rates])


@router.get(
    "/{reference:path}",
    response_model=RubricOut,
    summary="A rubric: the latest version, or an exact one as ID@VERSION",
    responses={422: PROBLEM_RESPONSES[422]},
)
async def get_rubric(reference: IdPath, principal: Submitter, application: AppDep) -> RubricOut:
    rubric_id, version = parse_reference(reference)
    rubric = await application.rubrics.get(rubric_id, version)
    return RubricOut(**RubricSummary.of(rubric).model_dump(), document=rubric)


@router.delete(
    "/{rubric_id:path}",
    response_model=RubricVersions,
    summary="Hide a rubric from latest lookups (admins); its versions stay readable",
)
async def delete_rubric(rubric_id: IdPath, principal: Admin, application: AppDep) -> RubricVersions:
    await application.rubrics.delete(rubric_id)
    infos = await application.rubrics.history(rubric_id)
    return RubricVersions(versions=[RubricVersionOut.of(info) for info in infos])
