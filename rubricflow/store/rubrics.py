"""The versioned rubric registry.

A version, once stored, is immutable: registering the same id, version and content
again is a no-op, the same id and version with other content is refused. "Latest" is
the highest semantic version (pre-releases ordered as semver says), never the last
write; versions semver ranks equal (build metadata only) go to the later registration,
then the higher version string. `delete` hides a rubric from latest lookups and keeps
every version readable by exact version; registering a new version restores it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from rubricflow.errors import NotFoundError, RubricVersionConflictError
from rubricflow.formats.loader import load_document, load_file
from rubricflow.model import Rubric, parse_rubric, semver_key
from rubricflow.records.rubrics import RegisteredRubric, RubricVersionInfo
from rubricflow.store._sql import as_utc, insert_ignoring_duplicates, utcnow
from rubricflow.store.database import Database
from rubricflow.store.tables import RubricGenerationRow, RubricRow, RubricVersionRow

if TYPE_CHECKING:
    from rubricflow.plugins import PluginRegistry

__all__ = ["RegisteredRubric", "RubricRegistry", "RubricVersionInfo"]

_rubrics = RubricRow.__table__  # type: ignore[attr-defined]
_versions = RubricVersionRow.__table__  # type: ignore[attr-defined]
_typed = _versions.alias("typed")
# the (id, version) pairs of the rubrics not deleted, without their documents: "latest" is
# picked in Python (semver order is not SQL's) and only the winners' documents are read.
# Built once: `get` runs it on every review.
_LIVE_VERSIONS = (
    sa.select(
        _versions.c.rubric_id,
        _versions.c.version,
        _versions.c.content_hash,
        _versions.c.target_type,
        _versions.c.created_at,
    )
    .join(_rubrics, _rubrics.c.rubric_id == _versions.c.rubric_id)
    .where(_rubrics.c.deleted_at.is_(None))
)
_LIVE_VERSIONS_OF = _LIVE_VERSIONS.where(
    _versions.c.rubric_id.in_(sa.bindparam("ids", expanding=True))
)
# one rubric's: without the list, the statement is compiled once (a review looks one up)
_LIVE_VERSIONS_OF_ONE = _LIVE_VERSIONS.where(_versions.c.rubric_id == sa.bindparam("id"))
_generation = RubricGenerationRow.__table__  # type: ignore[attr-defined]
#: the rubric writers' first statement on PostgreSQL: they take the count's row lock
#: before any rubric row's, all in the same order (each row written moves the count, so
#: two writers taking the two in opposite orders would deadlock)
_LOCK_GENERATION = (
    sa.select(_generation.c.generation).where(_generation.c.id == 1).with_for_update()
)
# every version of the rubrics that have one targeting :target_type (found through the
# target_type index): whether the *latest* version targets it is decided in Python
_LIVE_VERSIONS_FOR_TARGET = _LIVE_VERSIONS.where(
    _versions.c.rubric_id.in_(
        sa.select(_typed.c.rubric_id).where(_typed.c.target_type == sa.bindparam("target_type"))
    )
)
_DOCUMENTS_OF = sa.select(
    _versions.c.rubric_id, _versions.c.version, _versions.c.content_hash, _versions.c.document
).where(
    sa.tuple_(_versions.c.rubric_id, _versions.c.version).in_(sa.bindparam("pairs", expanding=True))
)
_DOCUMENTS_AT_ONCE = 500  # (id, version) pairs per query: well under any bind-parameter limit


def _latest_key(version: str, created_at: datetime) -> tuple[Any, ...]:
    """How the registry orders the versions of one rubric, lowest first: by semver
    precedence (pre-releases before the release, build metadata ignored), then, for
    versions semver ranks equal (`1.0.0+a`, `1.0.0+b`), by registration time (the later
    wins), then by the version string, so "latest" never depends on row order."""
    return (semver_key(version), as_utc(created_at), version)


def _document(rubric: Rubric) -> str:
    return json.dumps(rubric.to_dict(), sort_keys=True, ensure_ascii=False)


_PARSED_MAX = 256
#: latest versions a registry remembers at one write count
_LATEST_REMEMBERED = 1024
_parsed: dict[str, Rubric] = {}


async def _lock_generation(connection: AsyncConnection) -> None:
    """Take the rubrics' write count's row lock first (PostgreSQL; SQLite's transaction
    holds the whole file already)."""
    if connection.dialect.name == "postgresql":
        await connection.execute(_LOCK_GENERATION)


def _cached_rubric(content_hash: str) -> Rubric | None:
    return _parsed.get(content_hash)


def _parsed_document(content_hash: str, document: str) -> Rubric:
    """The rubric a stored document holds. A stored version never changes, a `Rubric` is
    frozen and its content hash is the sha256 of the document's content, so the parse
    (JSON Schemas checked, templates compiled: milliseconds) is done once per content
    hash and the result shared; a hash already parsed need not even be read again."""
    rubric = _parsed.get(content_hash)
    if rubric is None:
        rubric = parse_rubric(json.loads(document))
        if len(_parsed) >= _PARSED_MAX:
            _parsed.pop(next(iter(_parsed)))
        _parsed[content_hash] = rubric
    return rubric


class RubricRegistry:
    """Rubric versions in a `Database`."""

    def __init__(self, database: Database) -> None:
        self.database = database
        #: latest versions read at the rubrics' write count `_remembered_at`; a lookup at
        #: any other count (a later one, or an earlier one: a backup restored) forgets them
        self._remembered: dict[str, Rubric] = {}
        self._remembered_at: int | None = None

    async def register(
        self, rubric: Rubric, *, source_format: str | None = None
    ) -> RegisteredRubric:
        """Store `rubric` as an immutable version (a no-op when identical content is stored)."""
        (result,) = await self.register_many([rubric], source_format=source_format)
        return result

    async def register_many(
        self, rubrics: Iterable[Rubric], *, source_format: str | None = None
    ) -> list[RegisteredRubric]:
        """Register several rubrics in one transaction: all are stored, or none."""
        return await self.register_pairs([(rubric, source_format) for rubric in rubrics])

    async def register_pairs(
        self, pairs: Iterable[tuple[Rubric, str | None]]
    ) -> list[RegisteredRubric]:
        """Register (rubric, source format) pairs in one transaction: all, or none."""
        items = list(pairs)
        async with self.database.transaction() as connection:
            await _lock_generation(connection)
            return [await self._register(connection, r, fmt) for r, fmt in items]

    async def _register(
        self, connection: AsyncConnection, rubric: Rubric, source_format: str | None
    ) -> RegisteredRubric:
        now = utcnow()
        await connection.execute(
            insert_ignoring_duplicates(connection, _rubrics).values(
                rubric_id=rubric.id, created_at=now, deleted_at=None
            )
        )
        inserted = await connection.execute(
            insert_ignoring_duplicates(connection, _versions).values(
                rubric_id=rubric.id,
                version=rubric.version,
                content_hash=rubric.content_hash,
                name=rubric.name,
                target_type=rubric.target_type,
                source_format=source_format,
                document=_document(rubric),
                created_at=now,
            )
        )
        if inserted.rowcount == 1:
            await connection.execute(
                _rubrics.update().where(_rubrics.c.rubric_id == rubric.id).values(deleted_at=None)
            )
            return RegisteredRubric(rubric, True, source_format)
        stored = (
            await connection.execute(
                sa.select(_versions.c.content_hash).where(
                    _versions.c.rubric_id == rubric.id, _versions.c.version == rubric.version
                )
            )
        ).scalar_one()
        if stored != rubric.content_hash:
            raise RubricVersionConflictError(
                f"rubric {rubric.id!r} version {rubric.version} is already stored with other "
                f"content (hash {stored[:12]}, yours {rubric.content_hash[:12]}); a stored "
                "version never changes: bump the version (e.g. to "
                f"{_next_patch(rubric.version)}) and register again"
            )
        return RegisteredRubric(rubric, False, source_format)

    async def register_file(
        self, path: str | Path, *, format: str | None = None, plugins: PluginRegistry | None = None
    ) -> list[RegisteredRubric]:
        """Register every rubric in a file of any supported format, in one transaction."""
        loaded = load_file(path, format=format, plugins=plugins)
        return await self.register_many(loaded.rubrics, source_format=loaded.format)

    async def register_config(
        self,
        config: Mapping[str, Any] | Sequence[Any],
        *,
        format: str | None = None,
        plugins: PluginRegistry | None = None,
    ) -> list[RegisteredRubric]:
        """Register every rubric of a config document (e.g. `{rubrics: [...]}`) at once."""
        loaded = load_document(config, format=format, source="<config>", plugins=plugins)
        return await self.register_many(loaded.rubrics, source_format=loaded.format)

    async def get(
        self,
        rubric_id: str,
        version: str | None = None,
        *,
        connection: AsyncConnection | None = None,
        generation: int | None = None,
    ) -> Rubric:
        """The highest version of `rubric_id` (not deleted), or exactly `version` (even if
        the rubric was deleted: old versions stay readable for audit).

        `generation`: the rubrics' write count (table `rubric_generation`, kept by
        triggers) as `connection`'s transaction read it. The latest version read at the
        same count is taken from memory: no rubric was written since."""
        if connection is None:
            async with self.database.read() as own:
                return await self.get(rubric_id, version, connection=own)
        if version is None and generation is not None:
            if generation != self._remembered_at:
                self._remembered.clear()
                self._remembered_at = generation
            elif rubric_id in self._remembered:
                return self._remembered[rubric_id]
        if version is not None:
            row = (
                await connection.execute(
                    sa.select(_versions.c.content_hash, _versions.c.document).where(
                        _versions.c.rubric_id == rubric_id, _versions.c.version == version
                    )
                )
            ).first()
            if row is None:
                known = await self._versions_of(connection, rubric_id)
                hint = f"stored versions: {', '.join(known)}" if known else "no such rubric"
                raise NotFoundError(f"rubric {rubric_id!r} has no version {version} ({hint})")
            return _parsed_document(row.content_hash, row.document)
        latest = await self._latest(connection, _LIVE_VERSIONS_OF_ONE, {"id": rubric_id})
        if rubric_id not in latest:
            raise NotFoundError(
                f"no rubric {rubric_id!r} is registered (or it was deleted); "
                "`rubricflow rubrics list` shows what is"
            )
        if generation is not None and len(self._remembered) < _LATEST_REMEMBERED:
            self._remembered[rubric_id] = latest[rubric_id]
        return latest[rubric_id]

    async def history(self, rubric_id: str) -> list[RubricVersionInfo]:
        """Every stored version of `rubric_id`, lowest to highest semver."""
        async with self.database.transaction() as connection:
            deleted_at = (
                await connection.execute(
                    sa.select(_rubrics.c.deleted_at).where(_rubrics.c.rubric_id == rubric_id)
                )
            ).first()
            rows = (
                await connection.execute(
                    sa.select(_versions).where(_versions.c.rubric_id == rubric_id)
                )
            ).all()
        if deleted_at is None:
            raise NotFoundError(f"no rubric {rubric_id!r} was ever registered")
        infos = [
            RubricVersionInfo(
                row.rubric_id,
                row.version,
                row.content_hash,
                row.name,
                row.target_type,
                row.source_format,
                as_utc(row.created_at),
                deleted_at.deleted_at is not None,
            )
            for row in rows
        ]
        return sorted(infos, key=lambda info: _latest_key(info.version, info.created_at))

    async def list_latest(self) -> list[Rubric]:
        """The latest version of every rubric that is not deleted, by id."""
        async with self.database.read() as connection:
            latest = await self._latest(connection, _LIVE_VERSIONS, {})
        return [latest[key] for key in sorted(latest)]

    async def get_for_target(self, target_type: str) -> list[Rubric]:
        """The latest, non-deleted rubrics whose latest version targets `target_type`, by
        id (a rubric whose older versions targeted it but whose latest does not is left
        out)."""
        async with self.database.read() as connection:
            latest = await self._latest(
                connection,
                _LIVE_VERSIONS_FOR_TARGET,
                {"target_type": target_type},
                target_type=target_type,
            )
        return [latest[key] for key in sorted(latest)]

    async def delete(self, rubric_id: str) -> None:
        """Hide `rubric_id` from latest lookups; every version stays readable by version."""
        async with self.database.transaction() as connection:
            await _lock_generation(connection)
            done = await connection.execute(
                _rubrics.update()
                .where(_rubrics.c.rubric_id == rubric_id, _rubrics.c.deleted_at.is_(None))
                .values(deleted_at=utcnow())
            )
            if done.rowcount == 0:
                exists = (
                    await connection.execute(
                        sa.select(_rubrics.c.rubric_id).where(_rubrics.c.rubric_id == rubric_id)
                    )
                ).first()
                if exists is None:
                    raise NotFoundError(f"no rubric {rubric_id!r} is registered")

    async def _versions_of(self, connection: AsyncConnection, rubric_id: str) -> list[str]:
        rows = await connection.execute(
            sa.select(_versions.c.version, _versions.c.created_at).where(
                _versions.c.rubric_id == rubric_id
            )
        )
        ordered = sorted(rows, key=lambda row: _latest_key(row.version, row.created_at))
        return [row.version for row in ordered]

    async def _latest(
        self,
        connection: AsyncConnection,
        query: sa.Select[Any],
        params: dict[str, Any],
        *,
        target_type: str | None = None,
    ) -> dict[str, Rubric]:
        """The latest version of each rubric `query` lists (optionally only those whose
        latest version targets `target_type`). Versions are ordered in Python; only the
        winners' documents are read, and only those not parsed already."""
        best: dict[str, tuple[tuple[Any, ...], Any]] = {}
        for row in await connection.execute(query, params):
            key = _latest_key(row.version, row.created_at)
            if row.rubric_id not in best or key > best[row.rubric_id][0]:
                best[row.rubric_id] = (key, row)
        winners = [row for _, row in best.values()]
        if target_type is not None:
            winners = [row for row in winners if row.target_type == target_type]
        found: dict[str, Rubric] = {}
        missing: list[tuple[str, str]] = []
        for row in winners:
            rubric = _cached_rubric(row.content_hash)
            if rubric is None:
                missing.append((row.rubric_id, row.version))
            else:
                found[row.rubric_id] = rubric
        for start in range(0, len(missing), _DOCUMENTS_AT_ONCE):
            chunk = missing[start : start + _DOCUMENTS_AT_ONCE]
            for doc in await connection.execute(_DOCUMENTS_OF, {"pairs": chunk}):
                found[doc.rubric_id] = _parsed_document(doc.content_hash, doc.document)
        return found


def _next_patch(version: str) -> str:
    """A version to suggest after `version`: the next pre-release for a pre-release
    (1.0.0-rc.1 -> 1.0.0-rc.2, 1.0.0-alpha -> 1.0.0-alpha.1), else the next patch."""
    core, _, _build = version.partition("+")
    release, dash, pre = core.partition("-")
    if dash:
        parts = pre.split(".")
        if parts[-1].isdigit():
            parts[-1] = str(int(parts[-1]) + 1)
        else:
            parts.append("1")
        return f"{release}-{'.'.join(parts)}"
    major, minor, patch = release.split(".")
    return f"{major}.{minor}.{int(patch) + 1}"
