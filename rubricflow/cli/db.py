"""`rubricflow db upgrade`: the store's database schema."""

from __future__ import annotations

import asyncio

import typer
from rich.markup import escape

from rubricflow.cli.shared import DbOption, JsonOption, fail, out, print_json
from rubricflow.errors import RubricflowError

__all__ = ["db_app"]

db_app = typer.Typer(help="Manage the store's database schema.", no_args_is_help=True)


@db_app.command("upgrade")
def db_upgrade(db: DbOption = None, as_json: JsonOption = False) -> None:
    """Apply every pending schema migration."""
    from rubricflow.store import Database, resolve_url
    from rubricflow.store.url import display_url

    async def main() -> tuple[str | None, str | None, bool]:
        database = await Database.open(db, upgrade=True)
        try:
            now = await database.current_revision()
            before = database.migrated[0] if database.migrated else now
            return before, now, database.migrated is not None
        finally:
            await database.close()

    try:
        where = display_url(resolve_url(db))
        before, now, upgraded = asyncio.run(main())
    except RubricflowError as error:
        fail(str(error))
    head = Database.head_revision()
    if as_json:
        print_json(
            {
                "database": where,
                "before": before,
                "revision": now,
                "head": head,
                "upgraded": upgraded,
            }
        )
    elif upgraded:
        out.print(f"upgraded {escape(where)} from schema {before or 'none'} to {now} (current)")
    else:
        out.print(f"{escape(where)} is at schema {now} (current); nothing to do")
