"""Read a rubric document from disk: YAML or JSON, with line and column on syntax errors."""

from __future__ import annotations

import codecs
import errno
import gc
import json
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, Literal

import yaml

from rubricflow.errors import RubricLoadError
from rubricflow.settings import current, env_name

__all__ = [
    "INPUT_SETTING",
    "LINE_SETTING",
    "MAX_BYTES",
    "MAX_DEPTH",
    "MAX_LINE_BYTES",
    "MAX_VALUES",
    "SchemaRefPolicy",
    "check_rubric_size",
    "lone_surrogate",
    "max_input_bytes",
    "max_line_bytes",
    "open_regular_file",
    "parse_rubric_text",
    "parse_text",
    "read_capped",
    "read_document",
    "read_regular_file",
]

MAX_BYTES = 10 * 1024 * 1024
"""Default of the largest file read whole (a rubric, a schema, artifact content, a target
document); `RUBRICFLOW_MAX_INPUT_BYTES` overrides it. A rubric file is a few kilobytes."""
MAX_LINE_BYTES = 10 * 1024 * 1024
"""Default of the longest JSONL line read (targets, suite outputs, labels);
`RUBRICFLOW_MAX_LINE_BYTES` overrides it. The file itself is streamed, of any length."""
INPUT_SETTING = env_name("max_input_bytes")
LINE_SETTING = env_name("max_line_bytes")
MAX_DEPTH = 100
"""Deepest nesting of mappings and lists accepted; a rubric nests a handful of levels."""
MAX_VALUES = 1_000_000
"""Most values a YAML document may expand to through aliases (stops "billion laughs")."""


class _TooDeep(yaml.MarkedYAMLError):
    pass


class _PlainLoader(yaml.SafeLoader):
    """SafeLoader that keeps timestamps as text, so documents stay JSON-compatible, and
    stops composing past `MAX_DEPTH` levels (before Python's recursion limit does)."""

    _depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH + 1:
                raise _TooDeep(
                    problem=f"the document nests mappings and lists more than {MAX_DEPTH} "
                    "levels deep; a rubric needs only a few levels, so flatten it",
                    problem_mark=self.peek_event().start_mark,  # type: ignore[no-untyped-call]
                )
            node: yaml.Node | None = super().compose_node(parent, index)
            return node
        finally:
            self._depth -= 1


_PlainLoader.yaml_implicit_resolvers = {
    key: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _no_duplicate_keys(loader: _PlainLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: set[Any] = set()
    for key_node, _value in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if isinstance(key, list | dict):
            raise yaml.constructor.ConstructorError(
                None, None, "a mapping key must be text or a number", key_node.start_mark
            )
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"duplicate key {key!r}; each key may appear once in a mapping",
                key_node.start_mark,
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_PlainLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _no_duplicate_keys)


def _expanded_size(root: yaml.Node, source: str) -> int:
    """How many values the node graph becomes once aliases are expanded (a node used twice
    counts twice); stops counting past `MAX_VALUES`. A node inside itself is an error."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if key in sizes or (key in open_nodes and not children_done):
            continue
        if isinstance(node, yaml.ScalarNode):
            sizes[key] = 1
            continue
        children: list[yaml.Node] = (
            [part for pair in node.value for part in pair]
            if isinstance(node, yaml.MappingNode)
            else list(node.value)
        )
        if not children_done:
            for child in children:
                if id(child) in open_nodes or child is node:
                    mark = child.start_mark
                    raise RubricLoadError(
                        f"malformed YAML at line {mark.line + 1}, column {mark.column + 1}: "
                        + _YAML_PROBLEMS["found unconstructable recursive node"],
                        source,
                    )
            open_nodes.add(key)
            stack.append((node, True))
            stack.extend((child, False) for child in children)
            continue
        open_nodes.discard(key)
        total = 1 + sum(sizes.get(id(child), 1) for child in children)
        sizes[key] = min(total, MAX_VALUES + 1)
    return sizes[id(root)]


@contextmanager
def _no_cyclic_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while a document is built: a large document is
    hundreds of thousands of live nodes, which each collection would walk again, making
    the parse superlinear (about 15x the time for 10x the text; 10x with the pause)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _load_yaml(text: str, source: str) -> Any:
    with _no_cyclic_gc():
        return _load_yaml_nodes(text, source)


def _load_yaml_nodes(text: str, source: str) -> Any:
    loader = _PlainLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _expanded_size(node, source) > MAX_VALUES:
            raise RubricLoadError(
                f"the YAML document expands to more than {MAX_VALUES:,} values through "
                "aliases (*name repeats what &name marks); a rubric is far smaller, so "
                "remove the aliases that repeat large parts",
                source,
            )
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _too_deep(source: str) -> RubricLoadError:
    return RubricLoadError(
        f"the document nests mappings and lists more than {MAX_DEPTH} levels deep; "
        "a rubric needs only a few levels, so flatten it",
        source,
    )


def _check_depth(document: Any, source: str) -> None:
    """Refuse documents nested deeper than `MAX_DEPTH` (later steps recurse over them)."""
    stack: list[tuple[Any, int, str]] = [(document, 0, "")]
    while stack:
        value, depth, path = stack.pop()
        if not isinstance(value, dict | list):
            continue
        if depth >= MAX_DEPTH:
            shown = path if len(path) <= 60 else path[:57] + "..."
            raise RubricLoadError(
                f"the document nests mappings and lists more than {MAX_DEPTH} levels deep "
                f"(at {shown}); a rubric needs only a few levels, so flatten it",
                source,
            )
        if isinstance(value, dict):
            for key, item in value.items():
                stack.append((item, depth + 1, f"{path}.{key}" if path else str(key)))
        else:
            for index, item in enumerate(value):
                stack.append((item, depth + 1, f"{path}[{index}]"))


def _unreadable_value(kind: str, error: ValueError) -> str:
    if "digits" in str(error):  # int() refuses numbers longer than sys.get_int_max_str_digits()
        return f"malformed {kind}: a number has thousands of digits; write a shorter number"
    return f"malformed {kind}: a value cannot be read ({error})"


_YAML_PROBLEMS = {
    "found unconstructable recursive node": (
        "an alias (*name) refers to a mapping or list that contains it; a rubric cannot "
        "contain itself, so remove that alias"
    ),
    "but found another document": (
        "the file holds several YAML documents (separated by ---); put the rubrics in one "
        "document as `rubrics: [...]`, or one rubric per file"
    ),
}


def _yaml_message(error: yaml.MarkedYAMLError) -> str:
    mark = error.problem_mark or error.context_mark
    if isinstance(error, _TooDeep) and mark is not None:
        return f"{error.problem} (at line {mark.line + 1}, column {mark.column + 1})"
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    what = error.problem or error.context or "syntax error"
    what = _YAML_PROBLEMS.get(what, what)
    if what.startswith("found character '\\t'"):
        what += "; YAML indents with spaces, so replace the tab with spaces"
    elif what.startswith("could not determine a constructor for the tag"):
        what += "; rubric files are plain YAML, so remove the tag"
    context_mark = error.context_mark
    if (
        error.context
        and context_mark is not None
        and mark is not None
        and (context_mark.line, context_mark.column) != (mark.line, mark.column)
        and not what.startswith("the file holds several")
    ):
        what += (
            f" ({error.context} that starts at line {context_mark.line + 1}, "
            f"column {context_mark.column + 1})"
        )
    return f"malformed YAML{where}: {what}"


def parse_text(text: str, source: str, *, suffix: str = "") -> Any:
    """Parse YAML or JSON text (JSON for `.json`, a list of one JSON value per non-blank
    line for `.jsonl`, YAML otherwise; YAML accepts JSON too).

    Every failure is a `RubricLoadError` naming `source`, with line and column for syntax
    errors; documents nested deeper than `MAX_DEPTH` or expanding past `MAX_VALUES`
    through YAML aliases are refused.
    """
    if suffix.lower() == ".jsonl":
        document = [
            parse_text(line, f"{source} line {number}", suffix=".json")
            for number, line in enumerate(text.splitlines(), start=1)
            if line.strip()
        ]
    elif suffix.lower() == ".json":
        document = _parse_json(text, source)
    else:
        document = _parse_yaml(text, source)
    _check_depth(document, source)
    surrogate = lone_surrogate(document)
    if surrogate is not None:
        raise RubricLoadError(
            f"holds a lone surrogate ({surrogate}): half of a character, e.g. an emoji cut in "
            "two by an escape; repair or drop that text",
            source,
        )
    return document


def _parse_json(text: str, source: str) -> Any:
    """`text` as JSON; a failure is a `RubricLoadError` saying where."""
    try:
        return json.loads(text, object_pairs_hook=_json_object(source))
    except json.JSONDecodeError as error:
        raise RubricLoadError(
            f"malformed JSON at line {error.lineno}, column {error.colno}: {error.msg}",
            source,
        ) from None
    except RecursionError:
        raise _too_deep(source) from None
    except ValueError as error:  # e.g. an integer with thousands of digits
        raise RubricLoadError(_unreadable_value("JSON", error), source) from None
    except RubricLoadError as error:  # a duplicate key: find its line with the YAML reader
        raise _locate_duplicate_json_key(text, source) or error from None


def _parse_yaml(text: str, source: str) -> Any:
    """`text` as YAML; a failure is a `RubricLoadError` saying where."""
    try:
        return _load_yaml(text, source)
    except yaml.MarkedYAMLError as error:
        raise RubricLoadError(_yaml_message(error), source) from None
    except yaml.reader.ReaderError as error:
        line = text.count("\n", 0, error.position) + 1
        column = error.position - (text.rfind("\n", 0, error.position) + 1) + 1
        raise RubricLoadError(
            f"malformed YAML at line {line}, column {column}: the control character "
            f"#x{error.character:04x} is not allowed in YAML; remove it (is this a "
            "binary file?)"
            if isinstance(error.character, int)
            else f"malformed YAML at line {line}, column {column}: {error.reason}",
            source,
        ) from None
    except yaml.YAMLError as error:
        raise RubricLoadError(f"malformed YAML: {error}", source) from None
    except RecursionError:
        raise _too_deep(source) from None
    except ValueError as error:  # e.g. an integer with thousands of digits
        raise RubricLoadError(_unreadable_value("YAML", error), source) from None


def lone_surrogate(value: Any) -> str | None:
    """The first lone surrogate (`\\ud800`, half of a UTF-16 pair) in text anywhere in
    `value`, escaped for a message; None when there is none. Such text cannot be encoded
    as UTF-8, so it cannot be hashed, stored or sent to a judge: refuse it on the way in."""
    try:
        json.dumps(value, ensure_ascii=False, default=str).encode("utf-8")
    except UnicodeEncodeError as error:
        bad = error.object[error.start : error.end]
        return "".join(f"\\u{ord(c):04x}" for c in bad)
    return None


def _json_object(source: str) -> Any:
    def build(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, value in pairs:
            if key in result:
                raise RubricLoadError(
                    f"malformed JSON: duplicate key {key!r}; each key may appear once", source
                )
            result[key] = value
        return result

    return build


def _stat(file: Path, source: str) -> os.stat_result:
    try:
        return file.stat()
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise RubricLoadError(
                "is a symbolic link that loops back on itself; point it at a rubric file",
                source,
            ) from None
        if error.errno in (errno.ENOENT, errno.ENOTDIR):
            if file.is_symlink():
                raise RubricLoadError(
                    f"is a symbolic link to {os.readlink(file)!r}, which does not exist; "
                    "fix the link or name the rubric file itself",
                    source,
                ) from None
            raise RubricLoadError("no such file; check the path", source) from None
        raise RubricLoadError(_cannot_read(error), source) from None


def _cannot_read(error: OSError) -> str:
    reason = error.strerror or str(error)
    if error.errno in (errno.EACCES, errno.EPERM):
        return f"cannot read file: {reason}; check the file's permissions"
    return f"cannot read file: {reason}"


_UTF16_32_BOMS = (
    codecs.BOM_UTF32_LE,
    codecs.BOM_UTF32_BE,
    codecs.BOM_UTF16_LE,
    codecs.BOM_UTF16_BE,
)


def _not_utf8(raw: bytes, error: UnicodeDecodeError) -> str:
    if raw.startswith(_UTF16_32_BOMS):
        return "is UTF-16 or UTF-32 text, not UTF-8; save the file as UTF-8"
    start = error.start
    line = raw.count(b"\n", 0, start) + 1
    column = start - (raw.rfind(b"\n", 0, start) + 1) + 1
    return (
        f"not UTF-8 text: byte 0x{raw[start]:02x} at line {line}, column {column} is not "
        "valid UTF-8; save the file as UTF-8"
    )


def _locate_duplicate_json_key(text: str, source: str) -> RubricLoadError | None:
    try:
        _load_yaml(text, source)
    except yaml.MarkedYAMLError as error:
        if error.problem and error.problem.startswith("duplicate key") and error.problem_mark:
            mark = error.problem_mark
            return RubricLoadError(
                f"malformed JSON at line {mark.line + 1}, column {mark.column + 1}: "
                f"{error.problem}",
                source,
            )
    except (yaml.YAMLError, RubricLoadError, ValueError, RecursionError):
        pass
    return None


# --- bounded reading of any input file ----------------------------------------------------
def max_input_bytes() -> int:
    """The largest file read whole: `Settings.max_input_bytes`, default 10 MiB."""
    return current().max_input_bytes or MAX_BYTES


def max_line_bytes() -> int:
    """The longest JSONL line read: `Settings.max_line_bytes`, default 10 MiB."""
    return current().max_line_bytes or MAX_LINE_BYTES


def _shown_size(size: int) -> str:
    for unit, factor in (("GB", 1024**3), ("MB", 1024**2), ("KB", 1024)):
        if size >= factor and size % factor == 0:
            return f"{size // factor} {unit}"
    return f"{size:,} bytes"


def _kind(mode: int) -> str | None:
    """What a non-regular file is, for a message; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a special file"


def open_regular_file(
    path: str | Path, error: Callable[[str], Exception], *, what: str = "file"
) -> BinaryIO:
    """Open `path` for reading in binary, refusing anything but a regular file.

    The file's type is checked before it is opened (and again on the open file), so a
    named pipe or `/dev/zero` can neither hang the reader nor fill memory. `error(reason)`
    builds the exception raised (the caller names the file); `what` says what was expected.
    """
    file = Path(path)
    source = str(path)
    try:
        mode = _stat(file, source).st_mode
    except RubricLoadError as failure:
        raise error(failure.detail) from None
    kind = _kind(mode)
    if kind is None:
        try:
            stream = file.open("rb")
        except OSError as failure:
            raise error(_cannot_read(failure)) from None
        except ValueError as failure:  # a NUL byte in the path
            raise error(f"cannot read file: {failure}") from None
        kind = _kind(os.fstat(stream.fileno()).st_mode)  # swapped since the stat?
        if kind is None:
            return stream
        stream.close()
    if kind == "a directory":
        raise error(f"is a directory; name a {what}")
    raise error(f"is {kind}, not a file; name a {what}")


def read_capped(
    stream: BinaryIO, error: Callable[[str], Exception], *, what: str = "file"
) -> bytes:
    """At most the input cap's bytes of `stream` (a file, stdin); more is `error(reason)`."""
    limit = max_input_bytes()
    try:
        raw = stream.read(limit + 1)
    except OSError as failure:
        raise error(_cannot_read(failure)) from None
    if len(raw) > limit:
        raise error(
            f"{what} is larger than {_shown_size(limit)}, the input size cap; check that "
            f"this is the right file, or raise the cap with {INPUT_SETTING}"
        )
    return raw


def read_regular_file(
    path: str | Path, error: Callable[[str], Exception], *, what: str = "file"
) -> bytes:
    """The bytes of regular file `path`, at most `max_input_bytes()` of them; a FIFO, a
    device, a directory, a missing file or a larger file is `error(reason)`."""
    with open_regular_file(path, error, what=what) as stream:
        return read_capped(stream, error, what="the file")


# --- what a rubric's file references (scoring.schema_ref) may read ------------------------
SchemaRefPolicy = Literal["inside", "anywhere", "refuse"]
"""Where a rubric's `schema_ref` may point: `inside` the rubric file's own folder (the
default; a rubric given as text or a document has no folder, so none is read), `anywhere`
the caller's process can read, or nowhere (`refuse`: rubrics from the network)."""


def read_document(path: str | Path) -> Any:
    """Read and parse a rubric file; every failure is a `RubricLoadError` naming the file."""
    file = Path(path)
    source = str(path)
    raw = read_regular_file(
        file,
        lambda reason: RubricLoadError(reason, source),
        what="rubric file (.yaml, .yml or .json)",
    )
    check_rubric_size(len(raw), source)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise RubricLoadError(_not_utf8(raw, error), source) from None
    if not text.strip():
        raise RubricLoadError("file is empty; a rubric file holds a YAML or JSON document", source)
    document = parse_text(text, source, suffix=file.suffix)
    if document is None:
        raise RubricLoadError(
            "holds no document, only comments, blank lines or null; a rubric file holds "
            "a YAML or JSON mapping",
            source,
        )
    return document


def check_rubric_size(size: int, source: str) -> None:
    """Refuse a rubric document of `size` bytes over `Limits.max_rubric_bytes`, before it
    is parsed (parsing megabytes of YAML takes seconds)."""
    from rubricflow.model import Limits, limit_setting

    limit = Limits.current().max_rubric_bytes
    if size > limit:
        raise RubricLoadError(
            f"the rubric document is {size:,} bytes; the limit is {limit:,} bytes (setting "
            f"{limit_setting('max_rubric_bytes')}): split it into several documents",
            source,
        )


def parse_rubric_text(text: str, source: str) -> Any:
    """Parse a rubric document given as text (a request body, a tool call), within the
    size limit: as JSON when it starts like JSON and parses as JSON (fast, and JSON's
    `1e-06` is a number, not YAML 1.1's text), otherwise as YAML."""
    check_rubric_size(len(text.encode("utf-8", "surrogatepass")), source)
    if text.lstrip().startswith(("{", "[")):
        try:
            return parse_text(text, source, suffix=".json")
        except RubricLoadError:
            pass  # YAML flow style, or broken: the YAML reader says where
    return parse_text(text, source)
