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
    actor_default,
    fail,
    out,
    print_json,
    read_content,
    run_with_app,
    table,
)
from rubricflow.errors import IllegalTransitionError, ReviewError

if TYPE_CHECKING:
    from rubricflow.application import Application
    from rubricflow.review import Artifact, ReviewOutcome

T = TypeVar("T")

__all__ = ["artifacts_app"]

artifacts_app = typer.Typer(
    help="Create, submit, review and decide on artifacts.", no_args_is_help=True
)


def _run_transition(db: str | None, work: Callable[[Application], Awaitable[T]]) -> T:
    """`run_with_app` for commands that move an artifact: a refused trigger is told as a
    person needs it (what they can do, and what to do about a review in progress) rather
    than as the machine's full list of triggers."""

    async def told(app: Application) -> T:
        try:
            return await work(app)
        except IllegalTransitionError as error:
            raise ReviewError(await app.artifacts.explain_refusal(error)) from None

    return run_with_app(db, told)


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
    as_json: JsonOption = False,
) -> None:
    """Create an artifact in draft."""
    content = read_content(path)
    artifact = run_with_app(
        db,
        lambda app: app.artifacts.create(
            type_name,
            content,
            actor=actor or actor_default(),
            title=title,
            artifact_id=artifact_id,
        ),
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
    as_json: JsonOption = False,
) -> None:
    """Submit an artifact for review (and review it now unless --defer).

    Exit 0 when the artifact ends approved (with --defer: when it is queued for a
    worker), 1 otherwise.
    """
    who = actor or actor_default()
    content = read_content(Path(target)) if type_name is not None else None

    async def work(app: Application) -> ReviewOutcome:
        if type_name is not None:
            return await app.create_and_submit(
                type_name, content, actor=who, title=title, defer=defer
            )
        return await app.artifacts.submit_for_review(target, actor=who, defer=defer)

    outcome = _run_transition(db, work)
    if as_json:
        print_json(outcome.to_dict())
    else:
        _print_artifact(outcome.artifact)
        for evaluation in outcome.evaluations:
            which = escape(f"{evaluation.rubric_id}@{evaluation.rubric_version}")
            out.print(f"\nevaluation {evaluation.id} ({which}):")
            out.print(escape(evaluation.feedback))
    queued = defer and outcome.artifact.status == "pending_review"
    raise typer.Exit(0 if outcome.approved or queued else 1)


@artifacts_app.command("show")
def artifacts_show(
    artifact_id: Annotated[str, typer.Argument(metavar="ID", help="The artifact's id.")],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """An artifact's state and current content."""
    artifact = run_with_app(db, lambda app: app.artifacts.get(artifact_id))
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
    as_json: JsonOption = False,
) -> None:
    """Artifacts, most recently changed first."""
    from rubricflow.review.lifecycle import DEAD_LETTERED, STATES

    if dead_letter:
        if status not in (None, DEAD_LETTERED):
            fail(f"--dead-letter lists {DEAD_LETTERED} artifacts; drop --status {status}")
        status = DEAD_LETTERED
    if status is not None and status not in STATES:
        fail(f"--status {status!r} is not a state; use one of {', '.join(STATES)}")
    found = run_with_app(
        db,
        lambda app: app.artifacts.list_artifacts(
            type_name=type_name, status=status, limit=limit, offset=offset
        ),
    )
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
    as_json: JsonOption = False,
) -> None:
    """Every transition of an artifact, with who, why and which evaluations."""
    events = run_with_app(db, lambda app: app.artifacts.history(artifact_id))
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
    as_json: JsonOption = False,
) -> None:
    """The evaluations stored for an artifact."""
    found = run_with_app(db, lambda app: app.artifacts.evaluations(artifact_id, revision))
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
    as_json: JsonOption = False,
) -> None:
    """A new revision with new content (back to draft; the old revision is superseded)."""
    content = read_content(path)
    artifact = _run_transition(
        db,
        lambda app: app.artifacts.revise(
            artifact_id, content, actor=actor or actor_default(), reason=reason
        ),
    )
    if as_json:
        print_json(_artifact_json(artifact))
    else:
        _print_artifact(artifact)


def _decision(name: str, help_text: str, needs_reason: bool) -> None:
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
        as_json: JsonOption = False,
    ) -> None:
        if needs_reason and not reason:
            fail(f"{name} needs --reason: human decisions are on the record")
        who = actor or actor_default()

        async def work(app: Application) -> Artifact:
            decide: Callable[..., Awaitable[Artifact]] = getattr(app.artifacts, name)
            return await decide(artifact_id, actor=who, reason=reason)

        artifact = _run_transition(db, work)
        if as_json:
            print_json(_artifact_json(artifact))
        else:
            _print_artifact(artifact)

    command.__doc__ = help_text
    artifacts_app.command(name)(command)


_decision("approve", "Approve an artifact whose review passed and awaits a human.", True)
_decision("reject", "Reject an artifact, with a reason.", True)
_decision("override", "Approve despite the rubrics, with a reason.", True)
_decision("withdraw", "Take a queued artifact back to draft.", False)
_decision("archive", "Archive an artifact (final).", False)
_decision(
    "retry",
    "Queue a dead-lettered artifact for review again, once the cause of its failed reviews "
    "is fixed.",
    False,
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
    as_json: JsonOption = False,
) -> None:
    """Retire an artifact another one replaces (from draft, needs_revision or approved)."""
    if not reason:
        fail("supersede needs --reason: human decisions are on the record")
    who = actor or actor_default()
    artifact = _run_transition(
        db, lambda app: app.artifacts.supersede(artifact_id, actor=who, reason=reason, by=by)
    )
    if as_json:
        print_json(_artifact_json(artifact))
    else:
        _print_artifact(artifact)
