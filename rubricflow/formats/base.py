"""What a rubric format plugin is, and helpers importers share for reading foreign documents.

Importers read other systems' documents defensively: any shape may arrive, and every
problem is reported with its path in the *source* document and how to fix it.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, get_args, runtime_checkable

from rubricflow.errors import ConfigurationError, Problem, RubricValidationError
from rubricflow.formats.document import SchemaRefPolicy
from rubricflow.model import Rubric, parse_rubric

__all__ = [
    "FormatRegistry",
    "ImportResult",
    "LoadContext",
    "RubricFormat",
    "SourceReader",
    "build_rubric",
    "shown",
    "slugify",
]


@dataclass
class ImportResult:
    """The rubrics a document holds, and warnings about how it was read."""

    rubrics: list[Rubric] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)


class FormatRegistry(Protocol):
    """Where the loader finds rubric formats by name (`PluginRegistry` is one)."""

    @property
    def formats(self) -> Mapping[str, RubricFormat]: ...


#: whether the caller lets an importer take a grader that runs code (`allowing_code`)
_code_allowed: ContextVar[bool] = ContextVar("rubricflow_allow_code", default=False)


def code_allowed() -> bool:
    """Whether the load in progress may import graders that run code (`allowing_code`)."""
    return _code_allowed.get()


@contextlib.contextmanager
def allowing_code(allowed: bool = True) -> Iterator[None]:
    """Let the rubric loads inside import graders that run code (an OpenAI `python`
    grader), as criteria whose check runs the code in a subprocess only when evaluated
    with `allow_import=True` (`--allow-import`). Off by default: rubric files are data."""
    token = _code_allowed.set(allowed)
    try:
        yield
    finally:
        _code_allowed.reset(token)


@dataclass(frozen=True)
class LoadContext:
    """What a format's `load` is told about the load in progress.

    - `source`: the document's name in messages (a file path, `<text>`), or None;
    - `base_dir`: the folder of the file the document came from (None for text, a request
      body, a parsed document), which relative references such as `schema_ref` start from;
    - `schema_refs`: where such references may read files (`SchemaRefPolicy`: `inside`
      `base_dir` only, `anywhere`, or `refuse` for documents from the network);
    - `plugins`: the format registry the load runs under (the plugin registry), for a
      format that hands part of a document to another format.

    New fields may be added (with defaults); a format reads the ones it needs.
    """

    source: str | None = None
    base_dir: Path | None = None
    schema_refs: SchemaRefPolicy = "inside"
    plugins: FormatRegistry | None = None
    allow_code: bool = field(default_factory=code_allowed)
    """Whether graders that run code may be imported (`allowing_code`; default: refused)."""

    def __post_init__(self) -> None:
        if self.schema_refs not in get_args(SchemaRefPolicy):
            raise ConfigurationError(
                f"schema_refs={self.schema_refs!r}; use one of "
                + ", ".join(get_args(SchemaRefPolicy))
            )


@runtime_checkable
class RubricFormat(Protocol):
    """A rubric format plugin (registered through the `rubricflow_formats` hook).

    `load(document, context)` is the contract; a format written for the earlier
    `load(document, *, source, base_dir)` is still called that way (it cannot see the
    schema-ref policy or the registry). See docs/plugins.md, "Rubric formats".
    """

    name: str
    description: str

    def detect(self, document: Any) -> float:
        """Confidence in 0..1 that `document` (parsed YAML/JSON) is in this format."""
        ...

    def load(self, document: Any, context: LoadContext) -> ImportResult:
        """The rubrics in `document`; raises `RubricValidationError` naming source paths."""
        ...


_SLUG = re.compile(r"[^A-Za-z0-9_.:/-]+")


def slugify(text: str, fallback: str) -> str:
    """An id made from free text (`Code Quality` -> `code_quality`)."""
    slug = _SLUG.sub("_", text.strip().lower()).strip("_.:/-")
    return slug or fallback


class SourceReader:
    """Reads a foreign document field by field, collecting problems with their paths."""

    def __init__(self, source: str | None) -> None:
        self.source = source
        self.problems: list[Problem] = []
        self.warnings: list[Problem] = []

    def problem(self, path: str, message: str) -> None:
        self.problems.append(Problem(path, message))

    def warn(self, path: str, message: str) -> None:
        self.warnings.append(Problem(path, message))

    def raise_if_problems(self) -> None:
        if self.problems:
            raise RubricValidationError(self.problems, self.source)

    def mapping(self, value: Any, path: str) -> Mapping[str, Any] | None:
        if isinstance(value, Mapping):
            return value
        self.problem(path, f"expected a mapping (key: value pairs), got {_kind(value)}")
        return None

    def sequence(self, value: Any, path: str) -> Sequence[Any] | None:
        if isinstance(value, list | tuple):
            return value
        self.problem(path, f"expected a list, got {_kind(value)}")
        return None

    def text(
        self, data: Mapping[str, Any], key: str, path: str, *, required: bool = False
    ) -> str | None:
        value = data.get(key)
        where = _join(path, key)
        if value is None:
            if required:
                self.problem(where, "required field is missing; add it")
            return None
        if isinstance(value, str):
            return value
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        self.problem(where, f"expected text, got {_kind(value)}")
        return None

    def number(
        self,
        data: Mapping[str, Any],
        key: str,
        path: str,
        *,
        required: bool = False,
        default: float | None = None,
    ) -> float | None:
        value = data.get(key)
        where = _join(path, key)
        if value is None:
            if required:
                self.problem(where, "required field is missing; add a number")
            return default
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            self.problem(where, f"expected a number, got {_kind(value)}")
            return default
        try:
            number = float(value)
        except ValueError:
            self.problem(where, f"expected a number, got {_kind(value)}")
            return default
        except OverflowError:
            self.problem(where, "number too large; use a value that fits a float")
            return default
        if not math.isfinite(number):
            self.problem(where, f"expected a finite number, got {_kind(value)}")
            return default
        return number

    def flag(self, data: Mapping[str, Any], key: str, path: str, default: bool) -> bool:
        value = data.get(key)
        if value is None:
            return default
        if isinstance(value, bool):
            return value
        self.problem(_join(path, key), f"expected true or false, got {_kind(value)}")
        return default


def shown(value: Any) -> str:
    """`repr(value)` cut to a readable length; never fails (huge ints, odd objects)."""
    if isinstance(value, int) and value.bit_length() > 4000:
        return "a number too large to show"
    try:
        text = repr(value)
    except Exception:  # a repr that fails must not hide the real problem
        return f"a {type(value).__name__}"
    return text if len(text) <= 60 else text[:57] + "..."


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _kind(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"a boolean ({value})"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"text ({shown!r})"
    if isinstance(value, int) and value.bit_length() > 4000:
        return "a number too large to show"
    if isinstance(value, int | float):
        return f"a number ({value})"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    return type(value).__name__


def build_rubric(
    native: Mapping[str, Any], source: str | None, path_map: Mapping[str, str]
) -> Rubric:
    """Validate an importer's native document, reporting problems at *source* paths.

    `path_map` maps native path prefixes (`criteria[2]`, `pass_threshold`) to where that
    value came from in the source document (`evalcases[0].rubrics[2]`).
    """
    try:
        return parse_rubric(native, source)
    except RubricValidationError as error:
        raise RubricValidationError(
            [
                Problem(_map_path(p.path, path_map), _map_message(p.message, path_map))
                for p in error.problems
            ],
            source,
        ) from None


_NATIVE_REFERENCE = re.compile(r"\(also criteria\[(\d+)\]\)")


def _map_message(message: str, path_map: Mapping[str, str]) -> str:
    """Messages that point at another criterion ("also criteria[0]") point at the source."""
    return _NATIVE_REFERENCE.sub(
        lambda m: f"(also {_map_path(f'criteria[{m.group(1)}]', path_map)})", message
    )


def _map_path(path: str, path_map: Mapping[str, str]) -> str:
    for prefix in sorted(path_map, key=len, reverse=True):
        if path == prefix or path.startswith(prefix + ".") or path.startswith(prefix + "["):
            return path_map[prefix] + path[len(prefix) :]
    return path
