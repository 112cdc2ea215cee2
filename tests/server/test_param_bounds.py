"""Every integer a route takes in its path, query or headers is bounded to the store's
INTEGER columns (rubricflow.server.params): past 2^31 - 1, PostgreSQL refused the query (a
500) where SQLite found nothing. This holds the whole OpenAPI document to it, so a new
route with an unbounded integer fails here; tests/server/test_text_at_the_door.py drives
the bounds over HTTP on both backends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rubricflow.server.app import create_app
from rubricflow.server.params import INT4_MAX
from rubricflow.server.settings import ServerSettings


def _integers(schema: Any) -> list[dict[str, Any]]:
    if not isinstance(schema, dict):
        return []
    found = [schema] if schema.get("type") == "integer" else []
    for key in ("anyOf", "oneOf", "allOf"):
        for part in schema.get(key, []):
            found += _integers(part)
    return found


def test_every_integer_parameter_fits_an_integer_column(tmp_path: Path) -> None:
    document = create_app(ServerSettings(db=f"sqlite+aiosqlite:///{tmp_path / 's.db'}")).openapi()
    seen: list[str] = []
    unbounded: list[str] = []
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            for parameter in operation.get("parameters", []):
                for schema in _integers(parameter.get("schema", {})):
                    where = f"{method.upper()} {path} {parameter['in']}:{parameter['name']}"
                    seen.append(where)
                    low, high = schema.get("minimum"), schema.get("maximum")
                    if low is None or high is None or low < -INT4_MAX - 1 or high > INT4_MAX:
                        unbounded.append(f"{where} in [{low}, {high}]")
    assert "GET /v1/webhooks/deliveries/{delivery_id} path:delivery_id" in seen
    assert "GET /v1/webhooks/deliveries query:before" in seen
    assert not unbounded, "integers past a PostgreSQL INTEGER:\n" + "\n".join(unbounded)
