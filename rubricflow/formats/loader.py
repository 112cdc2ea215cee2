"""Load rubric files in any registered format: detection, an explicit override, warnings.

The formats come from a `FormatRegistry` (anything with a `formats` mapping, such as the
plugin registry) the caller passes as `plugins=`. When it passes none, the default
registry is used: this layer sits below the plugin manager and cannot build one, so
`rubricflow.plugins` installs its `default_plugins` here with `use_default_registry`
(importing any part of rubricflow imports the package, which imports the plugins).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rubricflow.errors import (
    ConfigurationError,
    FormatDetectionError,
    Problem,
    RubricLoadError,
    RubricValidationError,
)
from rubricflow.formats.base import FormatRegistry, ImportResult, LoadContext, RubricFormat
from rubricflow.formats.document import (
    SchemaRefPolicy,
    check_rubric_size,
    parse_text,
    read_document,
)
from rubricflow.model import Rubric

__all__ = [
    "FormatRegistry",
    "LoadContext",
    "LoadedFile",
    "SchemaRefPolicy",
    "detect_format",
    "load_document",
    "load_file",
    "load_rubric",
    "use_default_registry",
]

DETECTION_THRESHOLD = 0.5


@dataclass
class LoadedFile:
    """What one file held: its format, its rubrics, and import warnings."""

    path: str
    format: str
    rubrics: list[Rubric]
    warnings: list[Problem] = field(default_factory=list)


_default_registry: Callable[[], FormatRegistry] | None = None


def use_default_registry(factory: Callable[[], FormatRegistry]) -> None:
    """Make `factory()` the registry a load uses when the caller passes no `plugins`."""
    global _default_registry
    _default_registry = factory


def _registry(plugins: FormatRegistry | None) -> FormatRegistry:
    if plugins is not None:
        return plugins
    if _default_registry is None:  # only when rubricflow.plugins was never imported
        raise ConfigurationError(
            "no rubric format registry: pass plugins=rubricflow.create_plugin_manager()"
        )
    return _default_registry()


def detect_format(
    document: Any, *, plugins: FormatRegistry | None = None, source: str | None = None
) -> RubricFormat:
    """The registered format most confident it can read `document`."""
    formats = _registry(plugins).formats
    best_name, best_score = None, 0.0
    for name, fmt in formats.items():
        try:
            score = float(fmt.detect(document))
        except Exception:  # a detector that chokes simply does not match
            score = 0.0
        if score > best_score:
            best_name, best_score = name, score
    if best_name is None or best_score < DETECTION_THRESHOLD:
        raise FormatDetectionError(
            "matches no known rubric format (known: "
            + ", ".join(sorted(formats))
            + "); a native rubric needs `id` and `criteria` with an `id` each, "
            "or pass --format to say which format the file is in",
            source,
        )
    return formats[best_name]


def _format_named(name: str, plugins: FormatRegistry | None, source: str | None) -> RubricFormat:
    formats = _registry(plugins).formats
    if name not in formats:
        raise FormatDetectionError(
            f"unknown format {name!r}; known formats: {', '.join(sorted(formats))}", source
        )
    return formats[name]


def load_document(
    document: Any,
    *,
    format: str | None = None,
    source: str | None = None,
    base_dir: Path | None = None,
    plugins: FormatRegistry | None = None,
    schema_refs: SchemaRefPolicy = "inside",
) -> LoadedFile:
    """Load rubrics from an already parsed document (a dict or list).

    `schema_refs` says which files a criterion's `schema_ref` may read: `inside` (the
    default) only files inside `base_dir`, the rubric file's folder (with no `base_dir`,
    none); `anywhere` any path, relative ones from `base_dir` or the working directory;
    `refuse` none (for rubrics that come from the network).
    """
    context = LoadContext(source, base_dir, schema_refs, _registry(plugins))
    fmt = (
        _format_named(format, context.plugins, source)
        if format
        else detect_format(document, plugins=context.plugins, source=source)
    )
    result = _load_with(fmt, document, context)
    if not result.rubrics:
        raise RubricLoadError(f"holds no rubric in the {fmt.name} format", source)
    seen: set[tuple[str, str]] = set()
    for rubric in result.rubrics:
        key = (rubric.id, rubric.version)
        if key in seen:
            raise RubricValidationError(
                [
                    Problem(
                        "",
                        f"rubric {rubric.id!r} version {rubric.version} appears twice; "
                        "a file may hold each rubric version once",
                    )
                ],
                source,
            )
        seen.add(key)
    return LoadedFile(source or "<document>", fmt.name, result.rubrics, result.warnings)


def _load_with(fmt: RubricFormat, document: Any, context: LoadContext) -> ImportResult:
    """`fmt.load(document, context)`; a format written for the earlier contract,
    `load(document, *, source, base_dir)`, is called that way."""
    if _takes_context(fmt):
        return fmt.load(document, context)
    legacy: Any = fmt
    result: ImportResult = legacy.load(document, source=context.source, base_dir=context.base_dir)
    return result


def _takes_context(fmt: RubricFormat) -> bool:
    try:
        parameters = inspect.signature(fmt.load).parameters
    except (TypeError, ValueError):  # no signature to read: assume the current contract
        return True
    return "context" in parameters or "source" not in parameters


def load_file(
    path: str | Path,
    *,
    format: str | None = None,
    plugins: FormatRegistry | None = None,
    schema_refs: SchemaRefPolicy = "inside",
) -> LoadedFile:
    """Read a rubric file and load every rubric it holds.

    Raises `RubricLoadError` (unreadable, malformed, no matching format) or
    `RubricValidationError` (the document breaks the rules), each naming the file.
    A `schema_ref` is read from inside the file's folder unless `schema_refs` says
    otherwise (see `load_document`).
    """
    document = read_document(path)
    return load_document(
        document,
        format=format,
        source=str(path),
        base_dir=Path(path).resolve().parent,
        plugins=plugins,
        schema_refs=schema_refs,
    )


def load_text(
    text: str,
    *,
    format: str | None = None,
    source: str = "<text>",
    plugins: FormatRegistry | None = None,
    schema_refs: SchemaRefPolicy = "inside",
) -> LoadedFile:
    """Load rubrics from YAML or JSON text.

    Text is read as JSON when `source` ends in `.json`, or when it starts like JSON and
    parses as JSON; otherwise as YAML. (A YAML 1.1 reader would take JSON's `1e-06` for
    text, not a number.) Text has no folder, so a `schema_ref` in it reads no file unless
    `schema_refs="anywhere"` (then relative to the working directory).
    """
    check_rubric_size(len(text.encode("utf-8", "surrogatepass")), source)
    suffix = Path(source).suffix.lower()
    if suffix not in (".json", ".yaml", ".yml"):
        suffix = ".json" if _looks_like_json(text) else ""
    return load_document(
        parse_text(text, source, suffix=suffix),
        format=format,
        source=source,
        plugins=plugins,
        schema_refs=schema_refs,
    )


def _looks_like_json(text: str) -> bool:
    if not text.lstrip().startswith(("{", "[")):
        return False
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def load_rubric(
    path: str | Path,
    *,
    format: str | None = None,
    plugins: FormatRegistry | None = None,
    schema_refs: SchemaRefPolicy = "inside",
) -> Rubric:
    """Load the single rubric a file holds (an error if it holds several)."""
    loaded = load_file(path, format=format, plugins=plugins, schema_refs=schema_refs)
    if len(loaded.rubrics) != 1:
        ids = ", ".join(rubric.id for rubric in loaded.rubrics)
        raise RubricLoadError(
            f"holds {len(loaded.rubrics)} rubrics ({ids}); use load_file() to read them all",
            str(path),
        )
    return loaded.rubrics[0]
