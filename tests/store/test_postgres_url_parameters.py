"""libpq parameters in a PostgreSQL URL (`?sslmode=disable&connect_timeout=5`) work with
asyncpg, and one neither knows is a clear error (exit 2), on the real server."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy.engine import make_url
from typer.testing import CliRunner

from rubricflow.cli import app
from rubricflow.errors import ConfigurationError
from rubricflow.store import Store
from rubricflow.store.url import postgres_connect_args


def _with(url: str, **query: str) -> str:
    return make_url(url).update_query_dict(query).render_as_string(hide_password=False)


def test_libpq_parameters_open_a_store_and_reach_the_server(pg_session_url: str) -> None:
    url = _with(
        pg_session_url, sslmode="disable", connect_timeout="5", application_name="rf-params"
    )

    async def run() -> tuple[list[str], str]:
        async with await Store.open(url) as store:
            rubrics = [r.id for r in await store.rubrics.list_latest()]
            async with store.database.engine.connect() as connection:
                name = (await connection.exec_driver_sql("SHOW application_name")).scalar()
        return rubrics, str(name)

    rubrics, name = asyncio.run(run())
    assert isinstance(rubrics, list)
    assert name == "rf-params"
    result = CliRunner().invoke(app, ["rubrics", "list", "--json", "--db", url])
    assert result.exit_code == 0, result.output


def test_an_unknown_parameter_is_a_clear_error_at_the_cli(pg_session_url: str) -> None:
    url = _with(pg_session_url, sslmode="disable", keepalives_idle="30")
    result = CliRunner().invoke(app, ["rubrics", "list", "--db", url])
    assert result.exit_code == 2, result.output
    assert "keepalives_idle" in result.stderr and "sslmode, connect_timeout" in result.stderr
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"sslmode": "sometimes"}, "not a libpq SSL mode"),
        ({"connect_timeout": "soon"}, "not a number of seconds"),
    ],
)
def test_bad_values_name_the_parameter(query: dict[str, str], message: str) -> None:
    url = _with("postgresql+asyncpg://u@h/db", **query)
    with pytest.raises(ConfigurationError, match=message):
        postgres_connect_args(url)


def test_the_translation() -> None:
    url = _with(
        "postgresql+asyncpg://u:pw@h:5433/db",
        sslmode="require",
        connect_timeout="0",
        target_session_attrs="read-write",
        options="-c statement_timeout=5000",
    )
    plain, args = postgres_connect_args(url)
    assert plain == "postgresql+asyncpg://u:pw@h:5433/db"
    assert args == {
        "ssl": "require",
        "target_session_attrs": "read-write",
        "server_settings": {"options": "-c statement_timeout=5000"},
    }
