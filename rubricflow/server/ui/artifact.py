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
import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Annotated, Any
from urllib.parse import quote, urlencode

from fastapi import APIRouter, HTTPException, Path, Query, Request, Response
from fastapi.responses import JSONResponse, RedirectResponse

from rubricflow.application import Application
from rubricflow.errors import IllegalTransitionError, PreconditionFailedError, RubricflowError
from rubricflow.results import Evaluation, LLMCall
from rubricflow.review.reviewers import votes_of
from rubricflow.server.ui.access import (
    Viewer,
    posted_form,
    readable_artifact,
    require_decider,
)
from rubricflow.server.ui.agreement import judged_wrong as _judged_wrong
from rubricflow.server.ui.agreement import record_corrections
from rubricflow.server.ui.content import render_content
from rubricflow.server.ui.queue import CLAIM_SECONDS, claim_signal, next_in_queue, state_of
from rubricflow.server.ui.rubrics import side_by_side
from rubricflow.server.ui.security import UiRoute
from rubricflow.server.ui.templating import render

__all__ = [
    "DECISIONS",
    "content_text",
    "revision_diff",
    "router",
    "side_by_side_diff",
    "word_pieces",
]

#: the decisions the page offers, in the order of its buttons; each needs a reason
DECISIONS = ("approve", "override", "reject")
#: the biggest content shown in full (a bigger one is cut, saying so)
MAX_SHOWN_CHARS = 200_000
_MAX_DIFF_LINES = 2000
DECISION_LABELS = {"approve": "Approve", "override": "Override and approve", "reject": "Reject"}
DONE_MESSAGES = {
    "approve": "Approved.",
    "override": "Approved by override.",
    "reject": "Rejected.",
    "retry": "Sent back to the review queue.",
}

router = APIRouter(route_class=UiRoute)
#: a claim this long was just taken (a renewed one is longer: it keeps its start)
CLAIM_TERM = timedelta(seconds=CLAIM_SECONDS)

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
class Piece:
    """A run of words on one side of a changed line; `changed` marks what differs."""

    text: str
    changed: bool


@dataclass(frozen=True)
class DiffRow:
    """One row of the side-by-side diff, each side cut into marked pieces."""

    kind: str  # "same", "changed", "added", "removed", "skip"
    left_number: int | None
    left: tuple[Piece, ...] | None
    right_number: int | None
    right: tuple[Piece, ...] | None


_WORDS = re.compile(r"\s+|\w+|[^\w\s]")
_MAX_SIDE_ROWS = 2000


def word_pieces(before: str, after: str) -> tuple[tuple[Piece, ...], tuple[Piece, ...]]:
    """Two versions of a line cut into pieces, the words that differ marked changed."""
    a, b = _WORDS.findall(before), _WORDS.findall(after)
    left: list[Piece] = []
    right: list[Piece] = []
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if i2 > i1:
            left.append(Piece("".join(a[i1:i2]), tag != "equal"))
        if j2 > j1:
            right.append(Piece("".join(b[j1:j2]), tag != "equal"))
    return tuple(left), tuple(right)


def side_by_side_diff(before: Any, after: Any) -> list[DiffRow]:
    """Two revisions side by side, changed lines paired and marked word by word."""
    rows: list[DiffRow] = []
    left: tuple[Piece, ...] | None
    right: tuple[Piece, ...] | None
    for row in side_by_side(content_text(before).splitlines(), content_text(after).splitlines())[
        :_MAX_SIDE_ROWS
    ]:
        if row.kind == "changed" and row.left is not None and row.right is not None:
            left, right = word_pieces(row.left, row.right)
        else:
            changed = row.kind in ("added", "removed")
            left = (Piece(row.left, changed),) if row.left is not None else None
            right = (Piece(row.right, changed),) if row.right is not None else None
        rows.append(DiffRow(row.kind, row.left_number, left, row.right_number, right))
    return rows


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
    votes: dict[str, list[LLMCall]] = {}
    for item in calls:
        if item.call.verdict is not None:
            votes.setdefault(item.criterion, []).append(item.call)
    costs = [c.call.cost for c in calls if c.call.cost is not None]
    return {
        "evaluation": evaluation,
        "calls": calls,
        "votes": votes,
        "input_tokens": sum(c.call.input_tokens or 0 for c in calls),
        "output_tokens": sum(c.call.output_tokens or 0 for c in calls),
        "cost": sum(costs) if costs else None,
    }


@dataclass(frozen=True)
class Kept:
    """What a refused decision posted, shown again so that nothing typed is lost."""

    action: str = ""
    reason: str = ""
    wrong: frozenset[str] = frozenset()
    #: the version the reviewer was looking at when it decided
    version: int | None = None


async def _criterion_names(
    application: Application, evaluations: list[Evaluation]
) -> dict[str, Any]:
    """Each evaluated rubric version's criteria by id (names and level labels), or
    nothing for a rubric no longer stored."""
    found: dict[str, Any] = {}
    for evaluation in evaluations:
        key = f"{evaluation.rubric_id}@{evaluation.rubric_version}"
        if key in found:
            continue
        try:
            rubric = await application.rubrics.get(evaluation.rubric_id, evaluation.rubric_version)
        except RubricflowError:
            found[key] = {}
            continue
        found[key] = {c.id: c for c in rubric.criteria}
    return found


async def _diff_view(
    application: Application, artifact: Any, diff_from: int | None, diff_to: int | None
) -> dict[str, Any]:
    diff: list[DiffLine] = []
    rows: list[DiffRow] = []
    revisions: list[int] = list(range(1, artifact.revision + 1))
    after = diff_to if diff_to in revisions else artifact.revision
    before = diff_from if diff_from in revisions else max(1, after - 1)
    if artifact.revision > 1 and before != after:
        found = {
            r.revision: r.content
            for r in await application.dashboard.revisions(artifact.id, numbers=(before, after))
        }
        if before in found and after in found:
            diff = revision_diff(
                found[before], found[after], names=(f"revision {before}", f"revision {after}")
            )
            rows = side_by_side_diff(found[before], found[after])
    return {
        "revisions": revisions,
        "diff": diff,
        "diff_rows": rows,
        "diff_from": before,
        "diff_to": after,
    }


async def _page(
    request: Request,
    viewer: Any,
    artifact_id: str,
    *,
    diff: tuple[int | None, int | None] = (None, None),
    done: str = "",
    queue: str = "",
    kept: Kept | None = None,
    refusal: str = "",
    status_code: int = 200,
) -> Response:
    """The artifact page; after a refused decision, with the refusal and what was posted."""
    application: Application = request.app.state.application
    artifacts = application.artifacts
    principal = viewer.principal
    artifact = await readable_artifact(application, principal, artifact_id)
    history = await artifacts.history(artifact_id, viewer=principal.name)
    evaluations = await artifacts.evaluations(artifact_id, artifact.revision)
    open_now = artifacts.lifecycle.open_to_people(artifact)
    decider = principal.allows_role("reviewer") and principal.allows_type(artifact.type)
    decisions = [d for d in DECISIONS if d in open_now] if decider else []
    retry = decider and "retry" in open_now
    # several reviewers: who has voted on the pending decision sees it, and may not vote
    # again (only override)
    my_vote = next(
        (v for v in votes_of(history, artifact.revision) if v.actor == principal.name), None
    )
    if my_vote is not None and artifact.awaiting_approval:
        decisions = [d for d in decisions if d == "override"]
    kept = kept or Kept()
    diff_view = await _diff_view(application, artifact, *diff)
    if kept.version is not None and kept.version != artifact.version and artifact.revision > 1:
        diff_view = await _diff_view(application, artifact, artifact.revision - 1, None)

    text = content_text(artifact.content)
    cut = len(text) > MAX_SHOWN_CHARS
    # opening an item a reviewer may decide on claims it (or shows who holds it)
    claim = (
        await application.workbench.claim(artifact_id, principal.name, seconds=CLAIM_SECONDS)
        if decisions
        else await application.workbench.holder_of(artifact_id, principal.name)
    )
    if claim is not None and claim.mine and claim.expires_at - claim.claimed_at == CLAIM_TERM:
        claim_signal(request.app).notify()  # a new claim: others' open queues drop it
    comments = await application.workbench.comments(artifact_id)
    state = state_of(artifact.status, artifact.awaiting_approval, bool(artifact.failures))
    return render(
        request,
        "artifact.html",
        {
            "artifact": artifact,
            "content": text[:MAX_SHOWN_CHARS],
            "content_cut": cut,
            "content_view": render_content(artifact.content, text=text[:MAX_SHOWN_CHARS], cut=cut),
            "evaluations": [_evaluation_view(e) for e in evaluations],
            "criteria": await _criterion_names(application, evaluations),
            "state_name": state[0],
            "state_label": state[1],
            "last_reason": _for_people(artifact.last_reason or "", retry=retry),
            "history": history,
            "timeline": _timeline(history, comments),
            "comments": comments,
            "comment_problem": "",
            "comment_draft": "",
            "claim": claim,
            "decisions": decisions,
            "retry": retry,
            "my_vote": my_vote if artifact.awaiting_approval else None,
            **diff_view,
            "done": DONE_MESSAGES.get(done, ""),
            "queue": queue[:2000],
            "kept": kept,
            "refusal": refusal,
            "moved_on": kept.version is not None and kept.version != artifact.version,
            "active": "queue",
        },
        status_code=status_code,
    )


def _timeline(history: list[Any], comments: list[Any]) -> list[tuple[str, Any]]:
    """The history and the comments in one list, oldest first."""
    entries = [("event", e) for e in history] + [("comment", c) for c in comments]
    return sorted(entries, key=lambda entry: entry[1].created_at)


@router.get("/artifacts/{artifact_id}", summary="An artifact")
async def artifact_page(
    request: Request,
    viewer: Viewer,
    artifact_id: _ArtifactId,
    diff_from: Annotated[int | None, Query(alias="from", ge=1, le=2**31 - 1)] = None,
    diff_to: Annotated[int | None, Query(alias="to", ge=1, le=2**31 - 1)] = None,
    done: Annotated[str, Query(max_length=20)] = "",
    queue: Annotated[str, Query(max_length=2000)] = "",
) -> Response:
    return await _page(
        request, viewer, artifact_id, diff=(diff_from, diff_to), done=done, queue=queue
    )


@router.get("/artifacts/{artifact_id}/next", summary="The next item of a queue")
async def next_item(
    request: Request,
    viewer: Viewer,
    artifact_id: _ArtifactId,
    queue: Annotated[str, Query(max_length=2000)] = "",
) -> Response:
    """Skip: the queue's next artifact after this one (or the queue when none is left)."""
    application: Application = request.app.state.application
    following = await next_in_queue(application, viewer.principal, queue, artifact_id)
    if following is None:
        return RedirectResponse(f"/ui/queue{'?' + queue if queue else ''}", status_code=303)
    return RedirectResponse(
        f"/ui/artifacts/{quote(following, safe='')}?{urlencode({'queue': queue})}",
        status_code=303,
    )


_RETRY_COMMAND = re.compile(r"(?:run |use )?`rubricflow artifacts retry[^`]*`")


def _for_people(reason: str, *, retry: bool) -> str:
    """A stored reason as the page shows it: where the page has a Retry button, a hint to
    run the CLI's retry speaks of the button instead."""
    if not retry:
        return reason
    return _RETRY_COMMAND.sub("press Retry the review below", reason)


@router.get("/artifacts/{artifact_id}/content", summary="An artifact's whole content")
async def artifact_content(request: Request, viewer: Viewer, artifact_id: _ArtifactId) -> Response:
    """The current revision's content in full, as a download (the page cuts a long one):
    text as text, anything else as JSON."""
    application: Application = request.app.state.application
    artifact = await readable_artifact(application, viewer.principal, artifact_id)
    text = isinstance(artifact.content, str)
    name = f"artifact-revision-{artifact.revision}.{'txt' if text else 'json'}"
    return Response(
        content_text(artifact.content).encode("utf-8"),
        media_type="text/plain; charset=utf-8" if text else "application/json",
        headers={
            "Content-Disposition": f'attachment; filename="{name}"',
            "Cache-Control": "no-store",
        },
    )


@router.get("/artifacts/{artifact_id}/version", summary="An artifact's version (live page)")
async def artifact_version(request: Request, viewer: Viewer, artifact_id: _ArtifactId) -> Response:
    """The artifact's current version and state as JSON: the page polls it to say when
    someone else changed the artifact."""
    application: Application = request.app.state.application
    principal = viewer.principal
    artifact = await readable_artifact(application, principal, artifact_id)
    # the open page asks every few seconds: that renews its reviewer's claim
    workbench = application.workbench
    claim = await workbench.holder_of(artifact_id, principal.name)
    if claim is not None and claim.mine:
        claim = await workbench.claim(artifact_id, principal.name, seconds=CLAIM_SECONDS)
    return JSONResponse(
        {
            "version": artifact.version,
            "status": artifact.status,
            "revision": artifact.revision,
            "claimed_by": claim.holder if claim is not None else None,
        },
        headers={"Cache-Control": "no-store"},
    )


async def _apply(
    request: Request, viewer: Any, artifact_id: str, form: dict[str, str], kept: Kept
) -> str:
    """Take the posted decision; its action's name."""
    application: Application = request.app.state.application
    artifacts = application.artifacts
    principal = viewer.principal
    artifact = await readable_artifact(application, principal, artifact_id)
    require_decider(principal, artifact)
    action = kept.action
    if action in DECISIONS:
        if not kept.reason:
            raise _Refused(
                422,
                f"{DECISION_LABELS[action]} needs a reason: human decisions are on the "
                "record; write one and decide again",
            )
        marks = await _judged_wrong(application, artifact_id, artifact.revision, form)
        decision = getattr(artifacts, action)
        await decision(
            artifact_id, actor=principal.name, reason=kept.reason, expected_version=kept.version
        )
        if marks:
            await record_corrections(application, artifact_id, action, principal.name, marks)
    elif action == "retry":
        await artifacts.retry(
            artifact_id,
            actor=principal.name,
            reason=kept.reason or None,
            expected_version=kept.version,
        )
    else:
        raise HTTPException(
            422, f"unknown decision {action[:40]!r}; use approve, override, reject or retry"
        )
    return action


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


async def _refusal(request: Request, error: Exception) -> tuple[int, str]:
    """A refused decision's status and its words for a person."""
    if isinstance(error, _Refused):
        return error.status, error.message
    if isinstance(error, PreconditionFailedError):
        return 412, (
            "Someone else changed this artifact while you were deciding, so nothing was "
            "recorded. Your reason and ticks are kept below: read what changed and decide "
            "again on the current version."
        )
    assert isinstance(error, IllegalTransitionError)
    application: Application = request.app.state.application
    return 409, await application.artifacts.explain_refusal(error)


@router.post("/artifacts/{artifact_id}/decision", summary="Decide on an artifact")
async def decide(request: Request, viewer: Viewer, artifact_id: _ArtifactId) -> Response:
    form = await posted_form(request, viewer, multi=frozenset({"wrong"}))
    version_text = form.get("version", "")
    kept = Kept(
        action=form.get("action", ""),
        reason=form.get("reason", "").strip(),
        wrong=frozenset(w for w in form.get("wrong", "").split("\n") if w),
        version=int(version_text) if version_text.isdigit() else None,
    )
    queue = form.get("queue", "")[:2000]
    try:
        action = await _apply(request, viewer, artifact_id, form, kept)
    except (_Refused, PreconditionFailedError, IllegalTransitionError) as error:
        status, message = await _refusal(request, error)
        return await _page(
            request,
            viewer,
            artifact_id,
            kept=kept,
            refusal=message,
            status_code=status,
            queue=queue,
        )
    application: Application = request.app.state.application
    await application.workbench.release(artifact_id, viewer.principal.name)
    after = {"done": action}
    if queue:
        after["queue"] = queue
    following = None
    if action in DECISIONS:
        following = await next_in_queue(application, viewer.principal, queue, artifact_id)
    target = following or artifact_id
    return RedirectResponse(
        f"/ui/artifacts/{quote(target, safe='')}?{urlencode(after)}", status_code=303
    )
