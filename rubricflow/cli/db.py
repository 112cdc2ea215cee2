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
    from rubricflow.application import Application

    try:
        where = Application.display_db(db)
        done = asyncio.run(Application.upgrade_db(db))
    except RubricflowError as error:
        fail(str(error))
    if as_json:
        print_json(
            {
                "database": where,
                "before": done.before,
                "revision": done.revision,
                "head": done.head,
                "upgraded": done.upgraded,
            }
        )
    elif done.upgraded:
        out.print(
            f"upgraded {escape(where)} from schema {done.before or 'none'} to "
            f"{done.revision} (current)"
        )
    else:
        out.print(f"{escape(where)} is at schema {done.revision} (current); nothing to do")
