"""Path and query parameter types the routes share, bounded to what the store can hold.

Every integer column of the store is a 32-bit INTEGER on PostgreSQL: a value past
2^31 - 1 bound to a query is an error there (SQLite takes it and finds nothing). So an
integer a route compares with a column is declared with one of these types, and a value
beyond the column's range is a 422 before the store is asked, on both backends.
`tests/server/test_param_bounds.py` holds every route of the OpenAPI document to it.

Ids in paths follow the id rule of `rubricflow.identifiers` (one rule for the API, the
CLI and the library), with its message.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Path, Query
from pydantic import AfterValidator

from rubricflow.identifiers import ID_PATTERN, valid_id
from rubricflow.model import MAX_ID_LENGTH

__all__ = [
    "INT4_MAX",
    "ArtifactIdPath",
    "DeliveryIdPath",
    "RowIdQuery",
    "TypeNamePath",
    "VersionQuery",
]

INT4_MAX = 2**31 - 1
"""The largest value of a PostgreSQL INTEGER column (every integer column of the store)."""


def _id_path(description: str) -> object:
    return Path(
        min_length=1,
        max_length=MAX_ID_LENGTH,
        description=description,
        json_schema_extra={"pattern": ID_PATTERN},
    )


ArtifactIdPath = Annotated[str, _id_path("The artifact's id"), AfterValidator(valid_id)]
"""An artifact's id in a path, under the id rule."""
TypeNamePath = Annotated[str, _id_path("The type's name"), AfterValidator(valid_id)]
"""An artifact type's name in a path, under the id rule."""
DeliveryIdPath = Annotated[
    int, Path(ge=1, le=INT4_MAX, description="The delivery's number (from the delivery log)")
]
"""A webhook delivery's number, within its column's range."""
RowIdQuery = Annotated[
    int | None, Query(ge=1, le=INT4_MAX, description="Page back from this row number")
]
"""A row number to page back from (`before=`), within the column's range."""
VersionQuery = Annotated[
    int | None, Query(ge=0, le=INT4_MAX, description="The artifact version the client holds")
]
"""An artifact version (`after=`), within the column's range."""
