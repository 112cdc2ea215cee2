"""Rubrics: register a version (admins), list, get the latest or an exact version, the
versions of one, lint a document (validate + meta-rubric), the diff of two versions,
and per-criterion pass rates.

Every role reads rubrics: a submitter needs to know what its content is judged by. A
rubric sent in a request is a stranger's data (`rubricflow.server.strangers`): it reads
no file and imports no code. A rubric id may hold `/` and `:`; the routes take it as the
rest of the path (`/v1/rubrics/team/tone@1.2.0`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from fastapi import APIRouter, Query

from rubricflow.core import refuse_untrusted
from rubricflow.errors import Problem, RubricValidationError
from rubricflow.server.auth import Admin, AppDep, Reviewer, Submitter
from rubricflow.server.problems import PROBLEM_RESPONSES
from rubricflow.server.scoring import PRINTABLE, IdPath, parse_reference
from rubricflow.wire.rubrics import (
    LintedRubric,
    LintReport,
    MetaRubricOut,
    MetaRubricTotal,
    PassRateOut,
    PassRates,
    ProblemItem,
    RegisteredRubricOut,
    RegisterResult,
    RubricDiffOut,
    RubricDocumentIn,
    RubricList,
    RubricOut,
    RubricSummary,
    RubricVersionOut,
    RubricVersions,
)

__all__ = ["router"]

router = APIRouter(
    prefix="/v1/rubrics",
    tags=["rubrics"],
    responses={k: PROBLEM_RESPONSES[k] for k in (403, 404)},
)


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
    from rubricflow.core import RubricText

    results = await application.register_rubrics(
        [RubricText(body.document, "<request>")], format=body.format, trust="stranger"
    )
    return RegisterResult(
        format=results[0].source_format or "",
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
        # a reviewer limited to types counts only reviews of those types' artifacts
        artifact_types=principal.types or None,
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
