"""The CLI reference, generated from the typer app so it cannot drift from the code.

    python -m rubricflow.cli.docs > docs/cli.md

`render_cli_reference()` walks the click command tree typer builds from
`rubricflow.cli.app` (every command and every sub-app `rubricflow/cli/__init__.py` adds,
and whatever is added later) and renders markdown: each command's
help, its usage line, every argument and option with its type, default and help, and the
exit codes its docstring states. `tests/test_cli_docs.py` fails when docs/cli.md differs
from what this prints.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Union, get_args, get_origin

__all__ = ["main", "render_cli_reference"]

PROG = "rubricflow"
COMMAND = "python -m rubricflow.cli.docs > docs/cli.md"

# "Exit 0 when ..., 1 when ..., 2 on ..." or "Exit codes: 0 success, 1 ..., 2 ...": the
# sentence runs to the first full stop that ends it (not one inside "e.g." or a number)
_EXIT_SENTENCE = re.compile(r"\bExit(?: codes?)?:?\s+(\d.*?[^.\s]\.)(?=\s|$)", re.S)
_EXIT_ITEM = re.compile(r"(?:^|,\s*|;\s*|\s+and\s+)(\d{1,3})\s+(?=\S)")


# --- walking the command tree ------------------------------------------------------------------
def _root_command(app: Any) -> Any:
    import typer

    return typer.main.get_command(app)


def _context(command: Any, name: str, parent: Any = None) -> Any:
    """A click context for `command` (typer ships its own copy of click in newer versions,
    so the command's own context class is used rather than `click.Context`)."""
    context_class = getattr(command, "context_class", None)
    if context_class is None:  # pragma: no cover - every click command has one
        import click

        context_class = click.Context
    return context_class(command, info_name=name, parent=parent)


def _is_group(command: Any) -> bool:
    return callable(getattr(command, "list_commands", None))


def _walk(command: Any, path: tuple[str, ...], ctx: Any) -> Iterator[tuple[tuple[str, ...], Any]]:
    """(path, command) for `command` and every command under it, in registration order."""
    yield path, command
    if not _is_group(command):
        return
    for name in command.list_commands(ctx):
        sub = command.get_command(ctx, name)
        if sub is None or getattr(sub, "hidden", False):
            continue
        yield from _walk(sub, (*path, name), _context(sub, name, ctx))


# --- text helpers ------------------------------------------------------------------------------
def _paragraphs(text: str | None) -> list[str]:
    """Docstring paragraphs, each reflowed onto one line."""
    if not text:
        return []
    cut = text.split("\f", 1)[0]  # click's marker: what follows is not help
    return [" ".join(p.split()) for p in re.split(r"\n\s*\n", cut.strip()) if p.strip()]


def _split_exit_codes(text: str) -> tuple[str, list[tuple[str, str]]]:
    """The text without its exit-code sentence, and the codes that sentence lists."""
    flat = " ".join(text.split())
    match = _EXIT_SENTENCE.search(flat)
    if match is None:
        return text, []
    sentence = match.group(1).rstrip(".")
    starts = list(_EXIT_ITEM.finditer(sentence))
    codes = []
    for index, item in enumerate(starts):
        end = starts[index + 1].start() if index + 1 < len(starts) else len(sentence)
        codes.append((item.group(1), sentence[item.end() : end].strip(" ,;")))
    rest = (flat[: match.start()] + flat[match.end() :]).strip()
    return rest, codes


def _cell(text: str) -> str:
    """Text safe inside a markdown table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def _code(text: str) -> str:
    return f"`{text}`"


def _anchor(title: str) -> str:
    """GitHub's heading anchor for `title`."""
    slug = re.sub(r"[^\w\- ]", "", title.lower())
    return slug.replace(" ", "-")


def _first_sentence(text: str) -> str:
    paragraphs = _paragraphs(text)
    if not paragraphs:
        return ""
    first = paragraphs[0]
    # the first full stop that ends a sentence: not one of "...", nor "e.g." mid-sentence
    match = re.match(r"(.+?[^.]\.)(?=\s+[A-Z(`]|$)", first)
    return (match.group(1) if match else first).rstrip(".") + "."


# --- parameters ------------------------------------------------------------------------------
_CLICK_TYPE_WORDS = {
    "text": "text",
    "string": "text",
    "integer": "integer",
    "int": "integer",
    "float": "number",
    "boolean": "boolean",
    "bool": "boolean",
    "path": "path",
    "file": "file",
    "filename": "file",
    "choice": "choice",
}
_PY_TYPE_WORDS = {
    str: "text",
    int: "integer",
    float: "number",
    bool: "boolean",
    Path: "path",
}


def _unwrap_optional(annotation: Any) -> Any:
    origin = get_origin(annotation)
    if origin is Union or type(annotation).__name__ == "UnionType":
        parts = [a for a in get_args(annotation) if a is not type(None)]
        if len(parts) == 1:
            return parts[0]
    return annotation


def _range_text(word: str, low: Any, high: Any) -> str:
    if low is not None and high is not None:
        return f"{word} {low:g}..{high:g}" if word == "number" else f"{word} {low}..{high}"
    if low is not None:
        return f"{word} ≥ {low:g}" if word == "number" else f"{word} ≥ {low}"
    if high is not None:
        return f"{word} ≤ {high:g}" if word == "number" else f"{word} ≤ {high}"
    return word


def _type_text(param: Any) -> str:
    """`text`, `integer ≥ 1`, `number 0..1`, `path`, `flag`, `choice: a, b`, ..."""
    if getattr(param, "is_flag", False) and not getattr(param, "count", False):
        return "flag"
    if getattr(param, "count", False):
        return "count"
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is not None:  # typer >= 0.2x: the annotation is the source
        choices = getattr(descriptor, "choices", None)
        if choices:
            return "choice: " + ", ".join(str(getattr(c, "value", c)) for c in choices)
        annotation = _unwrap_optional(descriptor.annotation)
        if get_origin(annotation) is list:
            (annotation,) = get_args(annotation) or (str,)
            annotation = _unwrap_optional(annotation)
        word = _PY_TYPE_WORDS.get(annotation)
        if word is None:
            word = getattr(annotation, "__name__", str(annotation)).lower()
        info = descriptor.parameter_info
        return _range_text(word, getattr(info, "min", None), getattr(info, "max", None))
    click_type = getattr(param, "type", None)  # classic typer: a click ParamType
    if click_type is None:
        return "text"
    choices = getattr(click_type, "choices", None)
    if choices:
        return "choice: " + ", ".join(str(getattr(c, "value", c)) for c in choices)
    name = str(getattr(click_type, "name", "text")).lower()
    word = _CLICK_TYPE_WORDS.get(name.split()[0], name)
    if "range" in name:
        word = "number" if "float" in name else "integer"
    return _range_text(word, getattr(click_type, "min", None), getattr(click_type, "max", None))


def _default_text(param: Any) -> str:
    if getattr(param, "required", False):
        return "**required**"
    default = getattr(param, "default", None)
    if callable(default):
        return "(computed)"
    if getattr(param, "is_flag", False):
        secondary = getattr(param, "secondary_opts", None) or []
        if default is None:
            return ""  # neither: decided at run time (the help says how)
        if secondary:
            return _code(param.opts[0] if default else secondary[0])
        return "off" if not default else "on"
    if default is None or default == () or default == []:
        return ""
    if isinstance(default, str):
        return _code(default) if default else '`""`'
    if isinstance(default, (list, tuple)):
        return ", ".join(_code(str(d)) for d in default)
    if isinstance(default, float):
        return _code(f"{default:g}")
    return _code(str(getattr(default, "value", default)))


def _argument_metavar(param: Any) -> str:
    name = param.metavar or (param.name or "ARG").upper()
    repeated = getattr(param, "nargs", 1) == -1 or getattr(param, "multiple", False)
    if not repeated:
        descriptor = getattr(param, "type_descriptor", None)
        annotation = _unwrap_optional(getattr(descriptor, "annotation", None))
        repeated = get_origin(annotation) is list
    text = f"{name}..." if repeated and not name.endswith("...") else name
    if getattr(param, "required", False) or text.startswith("["):
        return text  # a metavar may say "[TARGET]" itself
    return f"[{text}]"


def _option_names(param: Any) -> str:
    """`--format`, `-f` (long names first); `--llm SPEC` with a metavar; `--a` / `--no-a`."""
    opts = sorted(param.opts, key=lambda o: (not o.startswith("--"), o))
    metavar = getattr(param, "metavar", None)
    if metavar and not getattr(param, "is_flag", False):
        opts[0] = f"{opts[0]} {metavar}"
    text = ", ".join(_code(o) for o in opts)
    secondary = getattr(param, "secondary_opts", None) or []
    if secondary:
        text += " / " + ", ".join(_code(o) for o in secondary)
    return text


def _visible(params: list[Any], kind: str) -> list[Any]:
    return [
        p
        for p in params
        if getattr(p, "param_type_name", None) == kind and not getattr(p, "hidden", False)
    ]


_TABLE_HEAD = "| {} | type | default | description |"
_TABLE_RULE = "|---|---|---|---|"


# --- rendering -------------------------------------------------------------------------------
def _usage(path: tuple[str, ...], command: Any) -> str:
    pieces = [" ".join(path)]
    if _is_group(command):
        if getattr(command, "invoke_without_command", False):  # runs on its own too
            options = ["[OPTIONS]"] if _visible(command.params, "option") else []
            return " ".join([*pieces, *options, "[COMMAND [ARGS]...]"])
        return " ".join([*pieces, "COMMAND", "[ARGS]..."])
    if _visible(command.params, "option"):
        pieces.append("[OPTIONS]")
    pieces.extend(_argument_metavar(p) for p in _visible(command.params, "argument"))
    return " ".join(pieces)


def _render_command(path: tuple[str, ...], command: Any, ctx: Any) -> list[str]:
    title = " ".join(path)
    lines = [f"{'#' * min(len(path) + 1, 4)} `{title}`", ""]
    if getattr(command, "deprecated", False):
        lines += ["**Deprecated.**", ""]
    described, codes = [], []
    for paragraph in _paragraphs(command.help):
        rest, found = _split_exit_codes(paragraph)
        codes.extend(found)
        if rest:
            described.append(rest)
    for paragraph in described:
        lines += [paragraph, ""]
    lines += ["```", _usage(path, command), "```", ""]
    if _is_group(command):
        lines += _render_subcommands(title, command, ctx)
        if not getattr(command, "invoke_without_command", False):
            return lines
    lines += _render_params(command)
    if codes:
        lines += ["Exit codes:", ""]
        lines += [f"- `{code}`: {meaning}" for code, meaning in codes]
        lines.append("")
    else:
        lines += ["Exit codes: the [common ones](#exit-codes).", ""]
    return lines


def _render_subcommands(title: str, command: Any, ctx: Any) -> list[str]:
    """A group's table of its visible commands, each linked to its section."""
    rows = []
    for name in command.list_commands(ctx):
        sub = command.get_command(ctx, name)
        if sub is None or getattr(sub, "hidden", False):
            continue
        sub_title = f"{title} {name}"
        summary = _first_sentence(sub.help or sub.short_help or "")
        rows.append(f"| [`{name}`](#{_anchor(sub_title)}) | {_cell(summary)} |")
    return ["| command | what it does |", "|---|---|", *rows, ""]


def _render_params(command: Any) -> list[str]:
    """A command's tables of visible arguments and options."""
    lines: list[str] = []
    arguments = _visible(command.params, "argument")
    if arguments:
        lines += ["Arguments:", "", _TABLE_HEAD.format("argument"), _TABLE_RULE]
        for param in arguments:
            lines.append(
                f"| `{_argument_metavar(param)}` | {_cell(_type_text(param))} | "
                f"{_cell(_default_text(param))} | {_cell(getattr(param, 'help', None) or '')} |"
            )
        lines.append("")
    options = _visible(command.params, "option")
    if options:
        lines += ["Options:", "", _TABLE_HEAD.format("option"), _TABLE_RULE]
        for param in options:
            kind = _type_text(param)
            if getattr(param, "multiple", False):
                kind += ", repeatable"
            lines.append(
                f"| {_cell(_option_names(param))} | {_cell(kind)} | "
                f"{_cell(_default_text(param))} | {_cell(getattr(param, 'help', None) or '')} |"
            )
        lines.append("")
    return lines


def _render_exit_codes() -> list[str]:
    """The exit codes every command shares, from the `rubricflow.cli` docstring."""
    from rubricflow import cli

    lines = ["## Exit codes", ""]
    codes: list[tuple[str, str]] = []
    notes: list[str] = []
    for paragraph in _paragraphs(cli.__doc__)[1:]:
        rest, found = _split_exit_codes(paragraph)
        codes.extend(found)
        if rest:
            notes.append(rest)
    internal = getattr(cli, "EXIT_INTERNAL", None)
    if internal is not None and str(internal) not in {code for code, _ in codes}:
        codes.append(
            (str(internal), "an internal error (a bug): the message says so; please report it")
        )
    lines += [f"- `{code}`: {meaning}" for code, meaning in codes]
    lines += ["", *[line for note in notes for line in (note, "")]]
    lines += [
        "A command whose docstring states its own exit codes lists them in its section.",
        "",
    ]
    return lines


def render_cli_reference(app: Any = None) -> str:
    """The markdown reference of every command of `app` (default: `rubricflow.cli.app`)."""
    if app is None:
        from rubricflow.cli import app as default_app

        app = default_app
    root = _root_command(app)
    root_ctx = _context(root, PROG)
    commands = list(_walk(root, (PROG,), root_ctx))
    contexts: dict[tuple[str, ...], Any] = {(PROG,): root_ctx}

    lines = [
        "# CLI reference",
        "",
        f"<!-- Generated from the typer app (rubricflow/cli/) by `{COMMAND}`.",
        "     Do not edit by hand: tests/test_cli_docs.py fails when this file is out of date. -->",
        "",
        *[line for p in _paragraphs(root.help) for line in (p, "")],
        "Every command takes `--help`; `rubricflow --version` prints the version. Commands",
        "that use the store take `--db URL` (default: `$RUBRICFLOW_DB`, else",
        "`./rubricflow.db`); most take `--json` for output a program can read.",
        "",
        "## Commands",
        "",
    ]
    for path, command in commands[1:]:
        title = " ".join(path)
        indent = "  " * (len(path) - 2)
        summary = _first_sentence(command.help or command.short_help or "")
        lines.append(f"{indent}- [`{title}`](#{_anchor(title)}): {summary}")
    lines.append("")
    lines += _render_exit_codes()
    for path, command in commands[1:]:
        parent_ctx = contexts[path[:-1]]
        ctx = _context(command, path[-1], parent_ctx)
        contexts[path] = ctx
        lines += _render_command(path, command, ctx)
    text = "\n".join(lines).rstrip("\n") + "\n"
    return text


def main() -> None:
    sys.stdout.write(render_cli_reference())


if __name__ == "__main__":
    main()
