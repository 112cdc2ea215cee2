"""Writes run straight on `sqlite3`, with the SQL and value conversions SQLAlchemy
compiles for them.

A review writes a dozen rows. Through SQLAlchemy's execution machinery each INSERT or
UPDATE cost several times what SQLite takes to run it; a statement used again and
again (a module-level constant, seen twice by identity) is compiled here once instead,
with SQLAlchemy's SQLite compiler and its types' bind processors, and run on the
`sqlite3` connection directly. Only plain writes qualify: no RETURNING, no column
defaults computed in Python, no expanding parameters, and nothing that SQLAlchemy would
do around the statement (event listeners, `echo`, execution options); anything else,
and any statement seen only once, takes SQLAlchemy's own path. The result offers
`rowcount` and `lastrowid`, all rubricflow's writes read (not `inserted_primary_key`:
a statement whose caller needs it must not be a repeated plain write).

Every write that misses this path on a fast-path engine is counted, with why
(`FastPathStats`, `Database.fast_path_stats`): a repository write that stops running
directly (a new SQLAlchemy release, a statement rebuilt per call) shows up there, and
`tests/store/test_fast_path_misses.py` fails on it.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql.dml import Delete, Insert, Update

__all__ = ["DirectWrites", "FastPathStats", "WriteResult"]

# how many statements are remembered: those built anew on every call are seen once
# each, so the memory is dropped when it fills up
_MEMORY = 512
_UNSET = object()

# why a write took SQLAlchemy's path (`FastPathStats.reasons`)
FIRST_USE = "first use of this statement object (one built anew per call never runs directly)"
NOT_DML = "not an INSERT, UPDATE or DELETE construct (text, or SQLAlchemy's own statement)"
NO_MAPPING = "no parameters, or parameters that are not a mapping"
MIXED_BATCH = "a batch whose rows have different keys"
NOT_COMPILABLE = "SQLAlchemy cannot compile it with these parameters (it names what is wrong)"
NOT_PLAIN = "RETURNING, a Python-side default or expanding/literal parameters"
MISSING_VALUE = "a required parameter is missing (SQLAlchemy's path names it)"


class FastPathStats:
    """How the writes of one fast-path SQLite engine ran: `direct_hits` ran directly on
    `sqlite3`; `slow_path` counts, by SQL text, the writes (INSERT, UPDATE, DELETE,
    REPLACE) that went through SQLAlchemy's own execution path instead, and `reasons`
    says why each did (a statement's first use always does; after that, a statement
    used again should not)."""

    __slots__ = ("direct_hits", "reasons", "slow_path")

    #: distinct statement texts kept; later ones are counted under `OTHER`
    LIMIT = 512
    OTHER = "<other statements>"

    def __init__(self) -> None:
        self.direct_hits = 0
        self.slow_path: Counter[str] = Counter()
        self.reasons: dict[str, set[str]] = {}

    def missed(self, sql: str, reason: str) -> None:
        """Count a write SQLAlchemy's path ran (called by the connection adapter)."""
        if sql not in self.slow_path and len(self.slow_path) >= self.LIMIT:
            sql = self.OTHER
        self.slow_path[sql] += 1
        self.reasons.setdefault(sql, set()).add(reason)

    def reset(self) -> None:
        self.direct_hits = 0
        self.slow_path.clear()
        self.reasons.clear()

    def report(self) -> str:
        """The slow-path writes, most frequent first, each with its reasons."""
        return "\n".join(
            f"{count} x {sql}\n    because: {'; '.join(sorted(self.reasons.get(sql, ())))}"
            for sql, count in self.slow_path.most_common()
        )


class WriteResult:
    """What a direct write returns: the number of rows it changed and, for an INSERT,
    SQLite's rowid of the last row."""

    __slots__ = ("lastrowid", "rowcount")

    def __init__(self, rowcount: int, lastrowid: int | None) -> None:
        self.rowcount = rowcount
        self.lastrowid = lastrowid

    def close(self) -> None:
        """Nothing to close: the SQLite cursor is closed already."""


class _Bind(NamedTuple):
    key: str  # the parameter that gives the value (the bind's key, or its compiled name)
    process: Callable[[Any], Any] | None
    fixed: Any  # the value compiled into the statement, or _UNSET: from the parameters


class _Compiled(NamedTuple):
    sql: str
    binds: tuple[_Bind, ...]


class DirectWrites:
    """The direct-write statements of one SQLite dialect."""

    def __init__(self, dialect: Dialect, stats: FastPathStats | None = None) -> None:
        self._dialect = dialect
        #: statements run directly so far (for tests and diagnostics)
        self.executed = 0
        self.stats = stats if stats is not None else FastPathStats()
        #: why the last statement `run` declined took SQLAlchemy's path
        self.miss = ""
        self._seen: dict[tuple[int, frozenset[str], bool], Any] = {}
        self._compiled: dict[tuple[int, frozenset[str], bool], tuple[Any, _Compiled | str]] = {}

    def run(
        self, connection: sqlite3.Connection, statement: Any, parameters: Any
    ) -> WriteResult | None:
        """Run `statement` with `parameters` directly when it qualifies (None when it
        does not: the caller takes SQLAlchemy's path, and `miss` says why)."""
        if not isinstance(statement, (Insert, Update, Delete)):
            self.miss = NOT_DML
            return None
        many = isinstance(parameters, list)
        first = parameters[0] if many and parameters else parameters
        if not isinstance(first, Mapping):
            self.miss = NO_MAPPING
            return None
        keys = frozenset(first)
        compiled = self._lookup(statement, keys, many)
        if isinstance(compiled, str):
            self.miss = compiled
            return None
        if many and any(row.keys() != keys for row in parameters):
            self.miss = MIXED_BATCH
            return None  # SQLAlchemy's rule for such batches applies
        try:
            if many:
                rows = [_values(compiled, row) for row in parameters]
                cursor = connection.executemany(compiled.sql, rows)
            else:
                cursor = connection.execute(compiled.sql, _values(compiled, first))
        except Exception as error:
            # SQLAlchemy's exception, as its own path raises it: a driver error as its
            # DBAPIError subclass (IntegrityError, ...), a value no type accepts as a
            # StatementError
            raise DBAPIError.instance(
                compiled.sql,
                parameters,
                error,
                sqlite3.Error,
                dialect=self._dialect,
                ismulti=many,
            ) from error
        self.executed += 1
        self.stats.direct_hits += 1
        try:
            return WriteResult(cursor.rowcount, cursor.lastrowid)
        finally:
            cursor.close()

    def _lookup(self, statement: Any, keys: frozenset[str], many: bool) -> _Compiled | str:
        """The statement compiled for these keys, or why it is not run directly."""
        key = (id(statement), keys, many)
        known = self._compiled.get(key)
        if known is not None and known[0] is statement:
            return known[1]
        if self._seen.get(key) is not statement:
            if len(self._seen) >= _MEMORY:
                self._seen.clear()
            self._seen[key] = statement  # held, so its id is not reused meanwhile
            return FIRST_USE
        if len(self._compiled) >= _MEMORY:
            self._compiled.clear()
        compiled = self._compile(statement, keys, many)
        self._compiled[key] = (statement, compiled)
        return compiled

    def _compile(self, statement: Any, keys: frozenset[str], many: bool) -> _Compiled | str:
        dialect = self._dialect
        try:
            compiled: Any = statement.compile(
                dialect=dialect, column_keys=sorted(keys), for_executemany=many
            )
        except Exception:  # e.g. a key that names no column: SQLAlchemy says so
            return NOT_COMPILABLE
        if (
            compiled.insert_prefetch
            or compiled.update_prefetch
            or compiled.effective_returning
            or compiled.post_compile_params
            or compiled.literal_execute_params
            or compiled.positiontup is None
        ):
            return NOT_PLAIN
        binds = []
        for name in compiled.positiontup:
            bind = compiled.binds[name]
            # SQLAlchemy's precedence: the bind's key, then its compiled name, then the
            # value in the statement
            source, fixed = bind.key, _UNSET
            if bind.key not in keys:
                if name in keys:
                    source = name
                elif bind.required or bind.callable is not None:
                    return MISSING_VALUE  # SQLAlchemy's path names what is missing
                else:
                    fixed = bind.value
            process = bind.type.dialect_impl(dialect).bind_processor(dialect)
            binds.append(_Bind(source, process, fixed))
        return _Compiled(str(compiled), tuple(binds))


def _values(compiled: _Compiled, row: Mapping[str, Any]) -> tuple[Any, ...]:
    values = []
    for key, process, fixed in compiled.binds:
        value = row[key] if fixed is _UNSET else fixed
        values.append(process(value) if process is not None else value)
    return tuple(values)
