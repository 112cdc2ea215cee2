"""`rubricflow tokens ...`: API tokens for `rubricflow serve`: create (the secret is
printed once), list, revoke."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from rubricflow.cli.shared import (
    DbOption,
    JsonOption,
    actor_default,
    fail,
    out,
    print_json,
    run_with_app,
    table,
)

if TYPE_CHECKING:
    from rubricflow.application import Application
    from rubricflow.records import ApiToken, IssuedToken

__all__ = ["parse_expiry", "tokens_app"]

tokens_app = typer.Typer(
    help="API tokens for 'rubricflow serve': create, list, revoke.", no_args_is_help=True
)

_DURATION = re.compile(r"^(\d{1,6})([mhdw])$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_expiry(text: str, *, now: datetime | None = None) -> datetime:
    """`30d`, `12h`, `90m`, `2w`, or an ISO 8601 time (UTC when it names no zone)."""
    now = now or datetime.now(timezone.utc)
    match = _DURATION.match(text.strip())
    if match:
        return now + timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        fail(
            f"--expires {text!r} is neither a duration (30d, 12h, 90m, 2w) nor an ISO 8601 "
            "time (2027-01-31T12:00:00Z)"
        )
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def _as_dict(token: ApiToken) -> dict[str, object]:
    return {
        "id": token.id,
        "name": token.name,
        "role": token.role,
        "types": list(token.types),
        "created_by": token.created_by,
        "created_at": token.created_at.isoformat() if token.created_at else None,
        "expires_at": token.expires_at.isoformat() if token.expires_at else None,
        "revoked_at": token.revoked_at.isoformat() if token.revoked_at else None,
    }


@tokens_app.command("create")
def tokens_create(
    name: Annotated[
        str, typer.Argument(help="The token's name: the actor its actions are recorded as.")
    ],
    role: Annotated[
        str,
        typer.Option(
            "--role", help="submitter, reviewer or admin (each may do what the one before may)."
        ),
    ],
    types: Annotated[
        str | None,
        typer.Option(
            "--types", help="Artifact types it may act on, comma-separated (default all)."
        ),
    ] = None,
    expires: Annotated[
        str | None,
        typer.Option("--expires", help="When it stops working: 30d, 12h, 2w, or an ISO time."),
    ] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Create an API token and print it once: the store keeps only its hash."""
    type_names = [t.strip() for t in (types or "").split(",") if t.strip()]
    expires_at = parse_expiry(expires) if expires else None

    async def work(app: Application) -> IssuedToken:
        return await app.tokens.create(
            name, role=role, types=type_names, expires_at=expires_at, created_by=actor_default()
        )

    issued = run_with_app(db, work)
    if as_json:
        print_json({**_as_dict(issued.token), "token": issued.secret})
        return
    out.print(issued.secret)
    scope = ", ".join(issued.token.types) or "all types"
    typer.echo(
        f"created {issued.token.role} token {issued.token.name!r} ({scope}); it is shown "
        "only now: store it in a secret manager",
        err=True,
    )


@tokens_app.command("list")
def tokens_list(
    include_revoked: Annotated[bool, typer.Option("--all", help="Include revoked tokens.")] = False,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """List API tokens (never their secrets)."""

    async def work(app: Application) -> list[ApiToken]:
        return await app.tokens.list(include_revoked=include_revoked)

    tokens = run_with_app(db, work)
    if as_json:
        print_json([_as_dict(token) for token in tokens])
        return
    if not tokens:
        out.print("no tokens; create one with 'rubricflow tokens create NAME --role ROLE'")
        return
    grid = table("name", "role", "types", "expires", "state")
    for token in tokens:
        state = "revoked" if token.revoked_at else ("active" if token.active() else "expired")
        grid.add_row(
            escape(token.name),
            token.role,
            escape(", ".join(token.types) or "all"),
            token.expires_at.isoformat(timespec="seconds") if token.expires_at else "never",
            state,
        )
    out.print(grid)


@tokens_app.command("revoke")
def tokens_revoke(
    name: Annotated[str, typer.Argument(help="The token's name (or id).")],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Revoke an API token: running servers refuse it within a second (they remember a
    verified token for one second)."""

    async def work(app: Application) -> ApiToken:
        return await app.tokens.revoke(name)

    token = run_with_app(db, work)
    if as_json:
        print_json(_as_dict(token))
    else:
        out.print(f"revoked token {escape(token.name)!r}")
