"""One artifact's page: its content as text (JSON pretty-printed), the current
revision's evaluations (verdict, score, coverage, every criterion with its status, level,
score, evidence and the judge's reasoning, the judge calls with tokens and cost), the
history of transitions, a diff between revisions, and the decisions a reviewer may take
now (approve, reject, override, retry), each with a reason on the record and recorded as
the signed-in token's name.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, HTTPException, Path, Query, Request, Response
from fastapi.responses import RedirectResponse

from rubricflow.application import Application
from rubricflow.results import Evaluation, LLMCall
from rubricflow.server.ui.access import (
    Viewer,
    posted_form,
    readable_artifact,
    require_decider,
)
from rubricflow.server.ui.agreement import judged_wrong as _judged_wrong
from rubricflow.server.ui.agreement import record_corrections
from rubricflow.server.ui.security import UiRoute
from rubricflow.server.ui.templating import render

__all__ = ["DECISIONS", "content_text", "revision_diff", "router"]

#: the decisions the page offers, in the order of its buttons; each needs a reason
DECISIONS = ("approve", "override", "reject")
#: the biggest content shown in full (a bigger one is cut, saying so)
MAX_SHOWN_CHARS = 200_000
_MAX_DIFF_LINES = 2000
DONE_MESSAGES = {
    "approve": "Approved.",
    "override": "Approved by override.",
    "reject": "Rejected.",
    "retry": "Sent back to the review queue.",
}

router = APIRouter(route_class=UiRoute)

_ArtifactId = Annotated[str, Path(min_length=1, max_length=200)]


def content_text(content: Any) -> str:
    """Content as people read it: text as it is, anything else as indented JSON."""
    if isinstance(content, str):
        return content
    return json.dumps(content, indent=2, ensure_ascii=False, sort_keys=False)


@dataclass(frozen=True)
class DiffLine:
    kind: str  # "add", "del", "hunk", "same", "file"
    text: str


def revision_diff(before: Any, after: Any, *, names: tuple[str, str]) -> list[DiffLine]:
    """A unified diff of two revisions' content, line by line, for escaped display."""
    lines = difflib.unified_diff(
        content_text(before).splitlines(),
        content_text(after).splitlines(),
        fromfile=names[0],
        tofile=names[1],
        lineterm="",
    )
    out: list[DiffLine] = []
    for line in lines:
        if len(out) >= _MAX_DIFF_LINES:
            out.append(DiffLine("hunk", f"… cut at {_MAX_DIFF_LINES} lines"))
            break
        if line.startswith(("+++", "---")):
            kind = "file"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        else:
            kind = "same"
        out.append(DiffLine(kind, line))
    return out


@dataclass(frozen=True)
class JudgeCall:
    criterion: str
    call: LLMCall


def _judge_calls(evaluation: Evaluation) -> list[JudgeCall]:
    calls = [
        JudgeCall(result.criterion_id, call)
        for result in evaluation.criteria
        for call in result.llm_calls
    ]
    calls += [JudgeCall("(feedback)", call) for call in evaluation.feedback_llm_calls]
    return calls


def _evaluation_view(evaluation: Evaluation) -> dict[str, Any]:
    calls = _judge_calls(evaluation)
    costs = [c.call.cost for c in calls if c.call.cost is not None]
    return {
        "evaluation": evaluation,
        "calls": calls,
        "input_tokens": sum(c.call.input_tokens or 0 for c in calls),
        "output_tokens": sum(c.call.output_tokens or 0 for c in calls),
        "cost": sum(costs) if costs else None,
    }


@router.get("/artifacts/{artifact_id}", summary="An artifact")
async def artifact_page(
    request: Request,
    viewer: Viewer,
    artifact_id: _ArtifactId,
    diff_from: Annotated[int | None, Query(alias="from", ge=1, le=2**31 - 1)] = None,
    diff_to: Annotated[int | None, Query(alias="to", ge=1, le=2**31 - 1)] = None,
    done: Annotated[str, Query(max_length=20)] = "",
) -> Response:
    application: Application = request.app.state.application
    artifacts = application.artifacts
    principal = viewer.principal
    artifact = await readable_artifact(application, principal, artifact_id)
    history = await artifacts.history(artifact_id)
    evaluations = await artifacts.evaluations(artifact_id, artifact.revision)
    open_now = artifacts.lifecycle.open_to_people(artifact)
    decider = principal.allows_role("reviewer") and principal.allows_type(artifact.type)
    decisions = [d for d in DECISIONS if d in open_now] if decider else []
    retry = decider and "retry" in open_now

    diff: list[DiffLine] = []
    revisions: list[int] = list(range(1, artifact.revision + 1))
    after = diff_to if diff_to in revisions else artifact.revision
    before = diff_from if diff_from in revisions else max(1, after - 1)
    if artifact.revision > 1 and before != after:
        found = {
            r.revision: r.content
            for r in await application.dashboard.revisions(artifact_id, numbers=(before, after))
        }
        if before in found and after in found:
            diff = revision_diff(
                found[before], found[after], names=(f"revision {before}", f"revision {after}")
            )

    text = content_text(artifact.content)
    cut = len(text) > MAX_SHOWN_CHARS
    return render(
        request,
        "artifact.html",
        {
            "artifact": artifact,
            "content": text[:MAX_SHOWN_CHARS],
            "content_cut": cut,
            "content_kind": "text" if isinstance(artifact.content, str) else "JSON",
            "evaluations": [_evaluation_view(e) for e in evaluations],
            "history": history,
            "decisions": decisions,
            "retry": retry,
            "revisions": revisions,
            "diff": diff,
            "diff_from": before,
            "diff_to": after,
            "done": DONE_MESSAGES.get(done, ""),
            "active": "queue",
        },
    )


@router.post("/artifacts/{artifact_id}/decision", summary="Decide on an artifact")
async def decide(request: Request, viewer: Viewer, artifact_id: _ArtifactId) -> Response:
    form = await posted_form(request, viewer, multi=frozenset({"wrong"}))
    application: Application = request.app.state.application
    artifacts = application.artifacts
    principal = viewer.principal
    artifact = await readable_artifact(application, principal, artifact_id)
    require_decider(principal, artifact)
    action = form.get("action", "")
    reason = form.get("reason", "").strip()
    version_text = form.get("version", "")
    expected = int(version_text) if version_text.isdigit() else None
    if action in DECISIONS:
        if not reason:
            raise HTTPException(422, f"{action} needs a reason: human decisions are on the record")
        marks = await _judged_wrong(application, artifact_id, artifact.revision, form)
        decision = getattr(artifacts, action)
        await decision(artifact_id, actor=principal.name, reason=reason, expected_version=expected)
        if marks:
            await record_corrections(application, artifact_id, action, principal.name, marks)
    elif action == "retry":
        await artifacts.retry(
            artifact_id, actor=principal.name, reason=reason or None, expected_version=expected
        )
    else:
        raise HTTPException(
            422, f"unknown decision {action[:40]!r}; use approve, override, reject or retry"
        )
    return RedirectResponse(
        f"/ui/artifacts/{quote(artifact_id, safe='')}?done={action}", status_code=303
    )
