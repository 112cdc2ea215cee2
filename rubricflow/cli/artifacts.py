"""`rubricflow artifacts ...`: create, submit, review and decide on artifacts."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.markup import escape

from rubricflow.cli.shared import (
    MAX_LIMIT,
    MAX_OFFSET,
    ActorOption,
    DbOption,
    JsonOption,
    ServerOption,
    TokenOption,
    actor_default,
    fail,
    out,
    print_json,
    read_content,
    refuse_actor,
    run_api,
    table,
)
from rubricflow.errors import NotFoundError, RubricflowError

if TYPE_CHECKING:
    from rubricflow.application import ArtifactsAPI
    from rubricflow.records import Artifact, SubmissionOutcome

T = TypeVar("T")

__all__ = ["artifacts_app"]

artifacts_app = typer.Typer(
    help="Create, submit, review and decide on artifacts.", no_args_is_help=True
)


def _artifact_content(path: Path) -> Any:
    """An artifact's content from `path`; a conversation's image files are read from
    beside it (never outside its folder) and put inline, as `eval` reads them."""
    from rubricflow.conversation import inline_images

    content = read_content(path)
    try:
        return inline_images(content, path.parent)
    except RubricflowError as error:
        fail(f"{path}: {error}")


def _with_type_hint(error: NotFoundError, target: str) -> NotFoundError:
    """No artifact has this id; when it names a file, say how to submit the file."""
    if not Path(target).is_file():
        return error
    return NotFoundError(
        f"{error}. {target!r} is a file: to create an artifact from it and submit it, add "
        "--type TYPE (`rubricflow types list` shows the types)"
    )


def _artifact_json(artifact: Artifact) -> dict[str, Any]:
    return artifact.to_dict()


def _print_artifact(artifact: Artifact) -> None:
    out.print(
        f"artifact {escape(artifact.id)} ({escape(artifact.type)}) revision {artifact.revision}: "
        f"[bold]{artifact.status}[/bold]"
        + (" (awaiting approval)" if artifact.awaiting_approval else "")
    )
    if artifact.last_reason:
        out.print(f"  {escape(artifact.last_reason)}")


@artifacts_app.command("create")
def artifacts_create(
    path: Annotated[Path, typer.Argument(metavar="FILE", help="The content (JSON, YAML or text).")],
    type_name: Annotated[str, typer.Option("--type", "-t", help="Artifact type.")],
    artifact_id: Annotated[
        str | None, typer.Option("--id", help="Choose the id (default: random).")
    ] = None,
    title: Annotated[str | None, typer.Option("--title", help="A title.")] = None,
    actor: ActorOption = None,
    db: DbOption = None,
    server: ServerOption = None,
    token: TokenOption = None,
    as_json: JsonOption = False,
) -> None:
    """Create an artifact in draft."""
    refuse_actor(server, actor)
    content = _artifact_content(path)
    artifact = run_api(
        db,
        server,
        token,
        lambda api: api.create(type_name, content, title=title, artifact_id=artifact_id),
        actor=actor,
    )
    if as_json:
        print_json(_artifact_json(artifact))
    else:
        _print_artifact(artifact)


@artifacts_app.command("submit")
def artifacts_submit(
    target: Annotated[
        str,
        typer.Argument(metavar="ID|FILE", help="An artifact id, or a content file with --type."),
    ],
    type_name: Annotated[
        str | None,
        typer.Option(
            "--type", "-t", help="Create an artifact of this type from FILE, then submit it."
        ),
    ] = None,
    defer: Annotated[
        bool, typer.Option("--defer", help="Only queue the review for workers.")
    ] = False,
    title: Annotated[str | None, typer.Option("--title", help="A title (with --type).")] = None,
    actor: ActorOption = None,
    db: DbOption = None,
    server: ServerOption = None,
    token: TokenOption = None,
    as_json: JsonOption = False,
) -> None:
    """Submit an artifact for review (and review it now unless --defer).

    Exit 0 when the artifact ends approved (with --defer: when it is queued for a
    worker), 1 otherwise.
    """
    refuse_actor(server, actor)
    who = actor or actor_default()
    content = _artifact_content(Path(target)) if type_name is not None else None

    async def work(api: ArtifactsAPI) -> SubmissionOutcome:
        if type_name is not None:
            return await api.create_and_submit(type_name, content, title=title, defer=defer)
        try:
            return await api.submit_for_review(target, defer=defer)
        except NotFoundError as error:
            raise _with_type_hint(error, target) from None

    outcome = run_api(db, server, token, work, actor=who)
    artifact, document = outcome.artifact, outcome.to_dict()
    if as_json:
        print_json(document)
    else:
        _print_artifact(artifact)
        for evaluation in document["evaluations"]:
            which = escape(f"{evaluation['rubric_id']}@{evaluation['rubric_version']}")
            out.print(f"\nevaluation {evaluation['id']} ({which}):")
            out.print(escape(evaluation["feedback"]))
    queued = defer and artifact.status == "pending_review"
    raise typer.Exit(0 if artifact.status == "approved" or queued else 1)


@artifacts_app.command("show")
def artifacts_show(
    artifact_id: Annotated[str, typer.Argument(metavar="ID", help="The artifact's id.")],
    db: DbOption = None,
    server: ServerOption = None,
    token: TokenOption = None,
    as_json: JsonOption = False,
) -> None:
    """An artifact's state and current content."""
    artifact = run_api(db, server, token, lambda api: api.get(artifact_id))
    if as_json:
        print_json(_artifact_json(artifact))
        return
    _print_artifact(artifact)
    content = (
        artifact.content
        if isinstance(artifact.content, str)
        else json.dumps(artifact.content, indent=2)
    )
    out.print(escape(content))


@artifacts_app.command("list")
def artifacts_list(
    type_name: Annotated[str | None, typer.Option("--type", "-t", help="Only this type.")] = None,
    status: Annotated[str | None, typer.Option("--status", help="Only this status.")] = None,
    dead_letter: Annotated[
        bool,
        typer.Option(
            "--dead-letter",
            help="Only dead-lettered artifacts: their reviews failed too often in a row; "
            "`artifacts retry ID` queues one again.",
        ),
    ] = False,
    limit: Annotated[int, typer.Option("--limit", min=1, max=MAX_LIMIT)] = 50,
    offset: Annotated[int, typer.Option("--offset", min=0, max=MAX_OFFSET)] = 0,
    db: DbOption = None,
    server: ServerOption = None,
    token: TokenOption = None,
    as_json: JsonOption = False,
) -> None:
    """Artifacts, most recently changed first (with --server: most recently created
    first, the API's keyset order)."""
    from rubricflow.errors import ConfigurationError
    from rubricflow.review.listing import listed_status

    try:
        status = listed_status(
            status,
            dead_letter=dead_letter,
            status_option="--status",
            dead_letter_option="--dead-letter",
        )
    except ConfigurationError as refused:
        fail(str(refused))

    async def listed(api: ArtifactsAPI) -> list[Artifact]:
        found = api.list(
            type=type_name, status=status, page_size=min(limit + offset, 200), limit=limit + offset
        )
        return [artifact async for artifact in found][offset:]

    found = run_api(db, server, token, listed)
    if as_json:
        print_json({"artifacts": [_artifact_json(a) for a in found]})
        return
    grid = table("id", "type", "status", "revision", "updated")
    # ids are what the other commands take: keep each on one line, whole, to copy it
    grid.columns[0].min_width = max((len(a.id) for a in found), default=2)
    for artifact in found:
        grid.add_row(
            escape(artifact.id),
            escape(artifact.type),
            artifact.status,
            str(artifact.revision),
            f"{artifact.updated_at:%Y-%m-%d %H:%M:%S}",
        )
    out.print(grid)
    if dead_letter:  # why each one is there, and what to do
        for artifact in found:
            out.print(f"{escape(artifact.id)}: {escape(artifact.last_reason or '')}")


@artifacts_app.command("history")
def artifacts_history(
    artifact_id: Annotated[str, typer.Argument(metavar="ID", help="The artifact's id.")],
    db: DbOption = None,
    server: ServerOption = None,
    token: TokenOption = None,
    as_json: JsonOption = False,
) -> None:
    """Every transition of an artifact, with who, why and which evaluations."""
    events = run_api(db, server, token, lambda api: api.history(artifact_id))
    if as_json:
        print_json({"events": [e.to_dict() for e in events]})
        return
    for event in events:
        evaluations = (
            f" evaluations={','.join(event.evaluation_ids)}" if event.evaluation_ids else ""
        )
        out.print(
            f"{event.seq:>3} r{event.revision} {event.created_at:%Y-%m-%d %H:%M:%S} "
            f"{escape(event.trigger)}: {event.source or '-'} -> {event.dest} "
            f"by {escape(event.actor)}"
            f"{': ' + escape(event.reason) if event.reason else ''}{evaluations}"
        )


@artifacts_app.command("evaluations")
def artifacts_evaluations(
    artifact_id: Annotated[str, typer.Argument(metavar="ID", help="The artifact's id.")],
    revision: Annotated[int | None, typer.Option("--revision", help="Only this revision.")] = None,
    db: DbOption = None,
    server: ServerOption = None,
    token: TokenOption = None,
    as_json: JsonOption = False,
) -> None:
    """The evaluations stored for an artifact."""
    found = run_api(db, server, token, lambda api: api.evaluations(artifact_id, revision))
    if as_json:
        print_json({"evaluations": [e.to_dict() for e in found]})
        return
    for evaluation in found:
        which = escape(f"{evaluation.rubric_id}@{evaluation.rubric_version}")
        out.print(f"{evaluation.id} {which} {evaluation.verdict} {evaluation.score:.3f}")


@artifacts_app.command("revise")
def artifacts_revise(
    artifact_id: Annotated[str, typer.Argument(metavar="ID", help="The artifact's id.")],
    path: Annotated[Path, typer.Argument(metavar="FILE", help="The new content.")],
    reason: Annotated[str, typer.Option("--reason", help="What changed and why.")],
    actor: ActorOption = None,
    db: DbOption = None,
    server: ServerOption = None,
    token: TokenOption = None,
    as_json: JsonOption = False,
) -> None:
    """A new revision with new content (back to draft; the old revision is superseded)."""
    refuse_actor(server, actor)
    content = _artifact_content(path)
    artifact = run_api(
        db,
        server,
        token,
        lambda api: api.revise(artifact_id, content, reason=reason),
        actor=actor,
    )
    if as_json:
        print_json(_artifact_json(artifact))
    else:
        _print_artifact(artifact)


def _decision(
    name: str,
    help_text: str,
    needs_reason: bool,
    decide: Callable[[ArtifactsAPI, str, str | None], Awaitable[Artifact]],
) -> None:
    def command(
        artifact_id: Annotated[str, typer.Argument(metavar="ID", help="The artifact's id.")],
        # a default, not an annotation: the help text depends on this decision
        reason: str | None = typer.Option(
            None,
            "--reason",
            help="Why: required for this decision."
            if needs_reason
            else "Why (optional; kept on the record).",
        ),
        actor: ActorOption = None,
        db: DbOption = None,
        server: ServerOption = None,
        token: TokenOption = None,
        as_json: JsonOption = False,
    ) -> None:
        if needs_reason and not reason:
            fail(f"{name} needs --reason: human decisions are on the record")
        refuse_actor(server, actor)
        artifact = run_api(
            db, server, token, lambda api: decide(api, artifact_id, reason), actor=actor
        )
        if as_json:
            print_json(_artifact_json(artifact))
        else:
            _print_artifact(artifact)

    command.__doc__ = help_text
    artifacts_app.command(name)(command)


_decision(
    "approve",
    "Approve an artifact whose review passed and awaits a human.",
    True,
    lambda api, artifact_id, reason: api.approve(artifact_id, reason=reason or ""),
)
_decision(
    "reject",
    "Reject an artifact, with a reason.",
    True,
    lambda api, artifact_id, reason: api.reject(artifact_id, reason=reason or ""),
)
_decision(
    "override",
    "Approve despite the rubrics, with a reason.",
    True,
    lambda api, artifact_id, reason: api.override(artifact_id, reason=reason or ""),
)
_decision(
    "withdraw",
    "Take a queued artifact back to draft.",
    False,
    lambda api, artifact_id, reason: api.withdraw(artifact_id, reason=reason),
)
_decision(
    "archive",
    "Archive an artifact (final).",
    False,
    lambda api, artifact_id, reason: api.archive(artifact_id, reason=reason),
)
_decision(
    "retry",
    "Queue a dead-lettered artifact for review again, once the cause of its failed reviews "
    "is fixed.",
    False,
    lambda api, artifact_id, reason: api.retry(artifact_id, reason=reason),
)


@artifacts_app.command("supersede")
def artifacts_supersede(
    artifact_id: Annotated[str, typer.Argument(metavar="ID", help="The artifact replaced.")],
    by: Annotated[
        str | None,
        typer.Option("--by", help="The id of the artifact that replaces it (must exist)."),
    ] = None,
    reason: Annotated[
        str | None, typer.Option("--reason", help="Why: required for this decision.")
    ] = None,
    actor: ActorOption = None,
    db: DbOption = None,
    server: ServerOption = None,
    token: TokenOption = None,
    as_json: JsonOption = False,
) -> None:
    """Retire an artifact another one replaces (from draft, needs_revision or approved)."""
    if not reason:
        fail("supersede needs --reason: human decisions are on the record")
    refuse_actor(server, actor)
    given = reason
    artifact = run_api(
        db, server, token, lambda api: api.supersede(artifact_id, reason=given, by=by), actor=actor
    )
    if as_json:
        print_json(_artifact_json(artifact))
    else:
        _print_artifact(artifact)
