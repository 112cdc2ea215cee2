"""CLI for the review gate: `rubricflow types ...`, `rubricflow artifacts ...`,
`rubricflow worker`. Every command takes `--db URL` and `--json`."""

from __future__ import annotations

import getpass
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.markup import escape

from rubricflow.cli_store import DbOption, JsonOption, _print_json, _table, err, out, run_with_store
from rubricflow.errors import IllegalTransitionError, ReviewError, RubricflowError

T = TypeVar("T")

__all__ = ["artifacts_app", "types_app", "worker_command"]

types_app = typer.Typer(
    help="Define artifact types: which rubrics review them, and how.", no_args_is_help=True
)
artifacts_app = typer.Typer(
    help="Create, submit, review and decide on artifacts.", no_args_is_help=True
)


def _actor_default() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "cli"


ActorOption = Annotated[
    str | None, typer.Option("--actor", help="Who does this (default: your user name).")
]


def _registry(store: Any) -> Any:
    from rubricflow.review import ArtifactRegistry

    return ArtifactRegistry(store)


def _run_transition(db: str | None, work: Callable[[Any], Awaitable[T]]) -> T:
    """`run_with_store` for commands that move an artifact: a refused trigger is told as a
    person needs it (what they can do, and what to do about a review in progress) rather
    than as the machine's full list of triggers."""

    async def told(store: Any) -> T:
        try:
            return await work(store)
        except IllegalTransitionError as error:
            raise ReviewError(await _registry(store).explain_refusal(error)) from None

    return run_with_store(db, told)


def _read_content(path: Path) -> Any:
    """An artifact's content from a file: JSON or YAML documents are parsed, other text
    is taken as is."""
    from rubricflow.formats.document import parse_text

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        err.print(f"error: {escape(str(path))}: cannot read: {escape(str(error))}")
        raise typer.Exit(2) from None
    if path.suffix.lower() in (".json", ".yaml", ".yml"):
        try:
            return parse_text(text, str(path), suffix=path.suffix)
        except RubricflowError as error:
            err.print(f"error: {escape(str(error))}")
            raise typer.Exit(2) from None
    return text


# --- types ---------------------------------------------------------------------------------
@types_app.command("set")
def types_set(
    name: Annotated[str, typer.Argument(metavar="TYPE", help="The artifact type's name.")],
    rubric: Annotated[
        list[str] | None,
        typer.Option(
            "--rubric", "-r", help="A rubric reviewing this type: ID (latest) or ID@VERSION."
        ),
    ] = None,
    blocking: Annotated[
        list[str] | None,
        typer.Option(
            "--blocking", help="A rubric whose failure rejects instead of asking for revision."
        ),
    ] = None,
    auto_review: Annotated[
        bool, typer.Option("--auto-review/--no-auto-review", help="Review on submit.")
    ] = True,
    requires_approval: Annotated[
        bool,
        typer.Option("--requires-approval", help="A passing review waits for a human approve."),
    ] = False,
    approval_threshold: Annotated[
        float | None,
        typer.Option(
            "--approval-threshold", min=0.0, max=1.0, help="Overrides the rubrics' pass thresholds."
        ),
    ] = None,
    content_schema: Annotated[
        Path | None,
        typer.Option("--content-schema", help="JSON Schema file the content must match."),
    ] = None,
    description: Annotated[str, typer.Option("--description", help="What this type is.")] = "",
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Define or replace an artifact type."""
    from rubricflow.review import ArtifactType, RubricBinding

    # `--blocking ID` marks a rubric given with `--rubric` as blocking (or binds it, blocking)
    bindings = {b.rubric_id: b for b in (RubricBinding.parse(spec) for spec in rubric or [])}
    for spec in blocking or []:
        marked = RubricBinding.parse(spec, blocking=True)
        known = bindings.get(marked.rubric_id)
        version = marked.version or (known.version if known else None)
        bindings[marked.rubric_id] = marked.model_copy(update={"version": version})
    schema = _read_content(content_schema) if content_schema is not None else None
    if schema is not None and not isinstance(schema, dict):
        err.print(f"error: {escape(str(content_schema))}: a content schema is a JSON/YAML object")
        raise typer.Exit(2)
    artifact_type = ArtifactType(
        name=name,
        rubrics=tuple(bindings.values()),
        auto_review=auto_review,
        requires_approval=requires_approval,
        approval_threshold=approval_threshold,
        content_schema=schema,
        description=description,
    )
    saved = run_with_store(db, lambda store: _registry(store).set_type(artifact_type))
    if as_json:
        _print_json(saved.model_dump(mode="json"))
    else:
        bound = ", ".join(escape(str(b)) for b in saved.rubrics) or "no rubrics"
        out.print(f"type {escape(name)}: {bound}")


@types_app.command("show")
def types_show(
    name: Annotated[str, typer.Argument(metavar="TYPE", help="The artifact type's name.")],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """One artifact type."""
    artifact_type = run_with_store(db, lambda store: _registry(store).get_type(name))
    if as_json:
        _print_json(artifact_type.model_dump(mode="json"))
        return
    out.print(f"type {escape(artifact_type.name)}")
    for binding in artifact_type.rubrics:
        out.print(f"  rubric {escape(str(binding))}{' (blocking)' if binding.blocking else ''}")
    out.print(
        f"  auto_review={artifact_type.auto_review} "
        f"requires_approval={artifact_type.requires_approval} "
        f"approval_threshold={artifact_type.approval_threshold} "
        f"content_schema={'yes' if artifact_type.content_schema else 'no'}"
    )


@types_app.command("list")
def types_list(db: DbOption = None, as_json: JsonOption = False) -> None:
    """Every artifact type."""
    found = run_with_store(db, lambda store: _registry(store).list_types())
    if as_json:
        _print_json({"types": [t.model_dump(mode="json") for t in found]})
        return
    for artifact_type in found:
        rubrics = ", ".join(str(b) for b in artifact_type.rubrics)
        out.print(f"{escape(artifact_type.name)}: {escape(rubrics)}")


# --- artifacts -------------------------------------------------------------------------------
def _artifact_json(artifact: Any) -> dict[str, Any]:
    document: dict[str, Any] = artifact.to_dict()
    return document


def _print_artifact(artifact: Any) -> None:
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
    content = _read_content(path)
    artifact = run_with_store(
        db,
        lambda store: _registry(store).create(
            type_name,
            content,
            actor=actor or _actor_default(),
            title=title,
            artifact_id=artifact_id,
        ),
    )
    if as_json:
        _print_json(_artifact_json(artifact))
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
    who = actor or _actor_default()
    content = _read_content(Path(target)) if type_name is not None else None

    async def work(store: Any) -> Any:
        async with _registry(store) as registry:
            artifact_id = target
            if type_name is not None:
                created = await registry.create(type_name, content, actor=who, title=title)
                artifact_id = created.id
            return await registry.submit_for_review(artifact_id, actor=who, defer=defer)

    outcome = _run_transition(db, work)
    if as_json:
        _print_json(outcome.to_dict())
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
    artifact = run_with_store(db, lambda store: _registry(store).get(artifact_id))
    if as_json:
        _print_json(_artifact_json(artifact))
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
    limit: Annotated[int, typer.Option("--limit", min=1)] = 50,
    offset: Annotated[int, typer.Option("--offset", min=0)] = 0,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Artifacts, most recently changed first."""
    from rubricflow.review.lifecycle import STATES

    if status is not None and status not in STATES:
        err.print(
            f"error: --status {escape(status)!r} is not a state; use one of {', '.join(STATES)}"
        )
        raise typer.Exit(2)
    found = run_with_store(
        db,
        lambda store: _registry(store).list_artifacts(
            type_name=type_name, status=status, limit=limit, offset=offset
        ),
    )
    if as_json:
        _print_json({"artifacts": [_artifact_json(a) for a in found]})
        return
    table = _table("id", "type", "status", "revision", "updated")
    # ids are what the other commands take: keep each on one line, whole, to copy it
    table.columns[0].min_width = max((len(a.id) for a in found), default=2)
    for artifact in found:
        table.add_row(
            escape(artifact.id),
            escape(artifact.type),
            artifact.status,
            str(artifact.revision),
            f"{artifact.updated_at:%Y-%m-%d %H:%M:%S}",
        )
    out.print(table)


@artifacts_app.command("history")
def artifacts_history(
    artifact_id: Annotated[str, typer.Argument(metavar="ID", help="The artifact's id.")],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Every transition of an artifact, with who, why and which evaluations."""
    events = run_with_store(db, lambda store: _registry(store).history(artifact_id))
    if as_json:
        _print_json({"events": [e.to_dict() for e in events]})
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
    found = run_with_store(db, lambda store: _registry(store).evaluations(artifact_id, revision))
    if as_json:
        _print_json({"evaluations": [e.to_dict() for e in found]})
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
    content = _read_content(path)
    artifact = _run_transition(
        db,
        lambda store: _registry(store).revise(
            artifact_id, content, actor=actor or _actor_default(), reason=reason
        ),
    )
    if as_json:
        _print_json(_artifact_json(artifact))
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
            err.print(f"error: {name} needs --reason: human decisions are on the record")
            raise typer.Exit(2)
        who = actor or _actor_default()

        async def work(store: Any) -> Any:
            method = getattr(_registry(store), name)
            return await method(artifact_id, actor=who, reason=reason)

        artifact = _run_transition(db, work)
        if as_json:
            _print_json(_artifact_json(artifact))
        else:
            _print_artifact(artifact)

    command.__doc__ = help_text
    artifacts_app.command(name)(command)


_decision("approve", "Approve an artifact whose review passed and awaits a human.", True)
_decision("reject", "Reject an artifact, with a reason.", True)
_decision("override", "Approve despite the rubrics, with a reason.", True)
_decision("withdraw", "Take a queued artifact back to draft.", False)
_decision("archive", "Archive an artifact (final).", False)


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
        err.print("error: supersede needs --reason: human decisions are on the record")
        raise typer.Exit(2)
    who = actor or _actor_default()
    artifact = _run_transition(
        db, lambda store: _registry(store).supersede(artifact_id, actor=who, reason=reason, by=by)
    )
    if as_json:
        _print_json(_artifact_json(artifact))
    else:
        _print_artifact(artifact)


# --- worker ------------------------------------------------------------------------------------
def worker_command(
    concurrency: Annotated[
        int, typer.Option("--concurrency", "-c", min=1, help="Reviews at once.")
    ] = 1,
    once: Annotated[
        bool, typer.Option("--once", help="Review everything waiting, then exit.")
    ] = False,
    lease: Annotated[
        float, typer.Option("--lease", min=1.0, help="Seconds a claimed review stays ours.")
    ] = 300.0,
    poll: Annotated[
        float, typer.Option("--poll", min=0.05, help="Seconds between looks at the queue.")
    ] = 1.0,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Review artifacts waiting in pending_review until stopped (SIGTERM finishes in-flight
    reviews), or with --once until nothing is waiting."""
    from rubricflow.review import ArtifactRegistry
    from rubricflow.review.worker import Worker

    async def work(store: Any) -> Any:
        async with ArtifactRegistry(store, lease_seconds=lease) as registry:
            worker = Worker(registry, concurrency=concurrency, poll_interval=poll)
            worker.install_signal_handlers()
            return await worker.run(once=once)

    stats = run_with_store(db, work)
    summary = {
        "reviewed": stats.reviewed,
        "approved": stats.approved,
        "outcomes": stats.outcomes,
        "lost_races": stats.lost_races,
        "errors": stats.errors,
    }
    if as_json:
        _print_json(summary)
    else:
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(stats.outcomes.items()))
        out.print(
            f"reviewed {stats.reviewed} artifact{'s' * (stats.reviewed != 1)}"
            + (f": {outcomes}" if outcomes else "")
            + (f"; {stats.lost_races} taken by another worker" if stats.lost_races else "")
            + (f"; {stats.errors} error(s)" if stats.errors else "")
        )
