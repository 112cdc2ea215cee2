"""Evaluation suites: a file of cases to grade against a shared rubric.

A case holds the output to grade, the input (query) that produced it, an optional
reference, and optional criteria that apply to that case only, added to the shared
rubric. Three shapes are read:

- native: `{suite, rubric?, cases: [{id, query|input, output, reference?, criteria?}]}`,
  where `rubric` is a path relative to the suite file or an inline native rubric;
- AgentV v2 `evalcases` and v4 `tests`: each case's inline rubric items plus the file-level
  rubric evaluators become the case's criteria (the AgentV importer does the mapping), its
  `input` becomes the query and its `expected_output` the reference. AgentV files hold no
  outputs (AgentV runs the agent): give each case an `output` key, or an outputs JSONL file
  (`{"id": case id, "output": ...}` per line).
- promptfoo configs (`tests` whose `assert` lists are promptfoo's): each test's assertions
  are its rubric (`rubricflow.formats.promptfoo`); the output is `output` in its vars, or
  an outputs file's line for the test's `description` (else `test-N`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rubricflow.errors import Problem, RubricflowError, RubricValidationError
from rubricflow.jsonl import bounded_lines, json_lines
from rubricflow.model import Criterion, Rubric, parse_rubric
from rubricflow.results import Target

__all__ = [
    "Suite",
    "SuiteCase",
    "SuiteError",
    "case_rubric",
    "is_suite_document",
    "load_suite",
    "read_outputs",
    "suite_targets",
]


class SuiteError(RubricflowError):
    """A suite file cannot be read, or a case in it is not usable."""


@dataclass(frozen=True)
class SuiteCase:
    """One case: the target to grade and the criteria only this case adds."""

    target: Target
    criteria: tuple[Criterion, ...] = ()
    #: an own rubric (AgentV cases), used instead of the shared rubric plus `criteria`
    rubric: Rubric | None = None


@dataclass(frozen=True)
class Suite:
    """A named list of cases and the rubric they share (None when every case has its own)."""

    name: str
    source: str
    cases: list[SuiteCase]
    rubric: Rubric | None = None
    format: str = "native"
    warnings: list[Problem] = field(default_factory=list)

    def rubric_for(self, case: SuiteCase) -> Rubric:
        """The rubric a case is graded with: its own, or the shared one plus its criteria."""
        return case_rubric(self.rubric, case, self.source)


def case_rubric(shared: Rubric | None, case: SuiteCase, source: str) -> Rubric:
    where = f"{source}: case {case.target.id!r}"
    if case.rubric is not None:
        base, extra = case.rubric, ((shared.criteria if shared else ()) + case.criteria)
    elif shared is not None:
        base, extra = shared, case.criteria
    else:
        raise SuiteError(
            f"{where} has no rubric: name one in the suite (`rubric:`), give it on the command "
            "line, or give the case its own `criteria`"
        )
    if not extra:
        return base
    document = base.to_dict()
    document["criteria"] = [*document["criteria"], *(c.model_dump(mode="json") for c in extra)]
    try:
        return parse_rubric(document)
    except RubricValidationError as error:
        shown = "; ".join(str(p) for p in error.problems)
        raise SuiteError(
            f"{where}: its criteria do not fit the shared rubric {base.id!r} ({shown}); give "
            "case criteria ids of their own"
        ) from None


def is_suite_document(document: Any) -> bool:
    """True for a native suite or an AgentV eval file (v2 `evalcases`, v4 `tests`)."""
    if not isinstance(document, Mapping):
        return False
    return any(isinstance(document.get(key), list) for key in ("cases", "evalcases", "tests"))


def _read(path: Path) -> Any:
    """The suite document: a regular file within `RUBRICFLOW_MAX_INPUT_BYTES`."""
    from rubricflow.formats.document import parse_text, read_regular_file

    source = str(path)
    if not path.exists() and not path.is_symlink():
        raise SuiteError(f"{source}: no such suite file; check the path")
    raw = read_regular_file(
        path,
        lambda reason: SuiteError(f"{source}: {reason}"),
        what="suite file (.yaml or .json; give many targets as JSONL, streamed)",
    )
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise SuiteError(f"{source}: not UTF-8 text; save it as UTF-8") from None
    try:
        return parse_text(text, source, suffix=path.suffix)
    except RubricflowError as error:
        raise SuiteError(str(error)) from None


def load_suite(
    path: str | Path,
    *,
    rubric: Rubric | None = None,
    outputs: Mapping[str, Any] | None = None,
    plugins: Any = None,
    document: Any = None,
) -> Suite:
    """Read a suite file. `rubric` (e.g. from the command line) is the shared rubric and
    wins over one the suite names; `outputs` maps case ids to outputs for files that hold
    none (AgentV); `document` is the file's content as already parsed by the caller
    (relative paths in it are still read from the file's folder)."""
    file = Path(path)
    if document is None:
        document = _read(file)
    source = str(file)
    if not is_suite_document(document):
        raise SuiteError(
            f"{source}: not an evaluation suite; a suite holds `cases` (native), `evalcases` "
            "(AgentV v2) or `tests` (AgentV v4)"
        )
    if isinstance(document.get("cases"), list):
        return _native(document, file, rubric, outputs or {}, plugins)
    from rubricflow.formats.promptfoo import is_promptfoo_document

    if is_promptfoo_document(document):
        return _promptfoo(document, file, rubric, outputs or {}, plugins)
    return _agentv(document, file, rubric, outputs or {}, plugins)


def _text(value: Any) -> str | None:
    """A query or reference as text: chat messages become `role: content` lines."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(m, Mapping) for m in value):
        parts = []
        for message in value:
            content = message.get("content")
            text = content if isinstance(content, str) else json.dumps(content)
            parts.append(text if len(value) == 1 else f"{message.get('role', 'user')}: {text}")
        return "\n".join(parts)
    return json.dumps(value, ensure_ascii=False)


def _output(case: Mapping[str, Any], case_id: str, outputs: Mapping[str, Any], where: str) -> Any:
    if case_id in outputs:
        return outputs[case_id]
    for key in ("output", "content"):
        if key in case:
            return case[key]
    variables = case.get("vars")
    if isinstance(variables, Mapping) and "output" in variables:
        return variables["output"]
    raise SuiteError(
        f"{where}: case {case_id!r} has no output to grade; add `output:` to the case, or "
        'give an outputs file (JSONL lines `{"id": ..., "output": ...}`) with --outputs'
    )


def _shared_rubric(
    document: Mapping[str, Any], file: Path, given: Rubric | None, plugins: Any
) -> Rubric | None:
    if given is not None:
        return given
    named = document.get("rubric")
    if named is None:
        return None
    if isinstance(named, Mapping):
        return parse_rubric(dict(named), f"{file}: rubric")
    if isinstance(named, str):
        from rubricflow.formats.loader import load_file

        path = file.parent / named
        if not path.is_file():
            raise SuiteError(
                f"{file}: rubric: {named!r} is not a file (looked for {path}); give a path "
                "relative to the suite file"
            )
        try:
            loaded = load_file(path, plugins=plugins)
        except RubricflowError as error:
            raise SuiteError(f"{file}: rubric: {error}") from None
        if len(loaded.rubrics) != 1:
            ids = ", ".join(r.id for r in loaded.rubrics)
            raise SuiteError(
                f"{file}: rubric: {named} holds {len(loaded.rubrics)} rubrics ({ids}); name a "
                "file with one rubric"
            )
        return loaded.rubrics[0]
    raise SuiteError(
        f"{file}: rubric: expected a path to a rubric file or an inline rubric mapping, got "
        f"{type(named).__name__}"
    )


def _native(
    document: Mapping[str, Any],
    file: Path,
    given: Rubric | None,
    outputs: Mapping[str, Any],
    plugins: Any,
) -> Suite:
    source = str(file)
    shared = _shared_rubric(document, file, given, plugins)
    cases: list[SuiteCase] = []
    seen: set[str] = set()
    for index, raw in enumerate(document["cases"]):
        where = f"{source}: cases[{index}]"
        if not isinstance(raw, Mapping):
            raise SuiteError(f"{where}: a case is a mapping (id, query, output, ...)")
        case_id = str(raw.get("id") if raw.get("id") is not None else f"case-{index + 1}")
        if case_id in seen:
            raise SuiteError(f"{where}.id: case id {case_id!r} is used twice; make ids unique")
        seen.add(case_id)
        criteria = _case_criteria(raw.get("criteria"), where)
        metadata = raw.get("metadata") or {}
        if not isinstance(metadata, Mapping):
            raise SuiteError(f"{where}.metadata: expected a mapping")
        target = Target(
            id=case_id,
            content=_output(raw, case_id, outputs, where),
            query=_text(raw.get("query", raw.get("input"))),
            reference=raw.get("reference", raw.get("expected_output")),
            metadata=dict(metadata),
        )
        cases.append(SuiteCase(target, criteria))
    name = str(document.get("suite") or document.get("name") or file.stem)
    suite = Suite(name, source, cases, shared)
    for case in cases:
        suite.rubric_for(case)  # every case's rubric is checked before anything runs
    return suite


def _case_criteria(raw: Any, where: str) -> tuple[Criterion, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise SuiteError(f"{where}.criteria: expected a list of criteria")
    criteria = []
    for index, item in enumerate(raw):
        try:
            criteria.append(Criterion.model_validate(item))
        except Exception as error:  # pydantic's ValidationError, shown with its paths
            from pydantic import ValidationError

            from rubricflow.model import problems_from_validation_error

            if not isinstance(error, ValidationError):
                raise
            shown = "; ".join(str(p) for p in problems_from_validation_error(error))
            raise SuiteError(f"{where}.criteria[{index}]: {shown}") from None
    return tuple(criteria)


def _agentv(
    document: Mapping[str, Any],
    file: Path,
    given: Rubric | None,
    outputs: Mapping[str, Any],
    plugins: Any,
) -> Suite:
    from rubricflow.formats.loader import load_document

    source = str(file)
    loaded = load_document(
        dict(document), format="agentv", source=source, base_dir=file.parent, plugins=plugins
    )
    key = "evalcases" if isinstance(document.get("evalcases"), list) else "tests"
    raw_cases: dict[str, tuple[int, Mapping[str, Any]]] = {}
    for index, raw in enumerate(document[key]):
        if isinstance(raw, Mapping):
            # the id the importer gives the case's rubric: 0 is an id, not a missing one
            given_id = raw.get("id")
            default = f"test-{index + 1}" if key == "tests" else f"case-{index + 1}"
            name = default if given_id is None or given_id == "" else str(given_id)
            raw_cases[name] = (index, raw)
    cases: list[SuiteCase] = []
    for rubric in loaded.rubrics:
        case_id = rubric.name
        index, raw = raw_cases[case_id]
        extra = rubric.metadata.get("agentv", {})
        target = Target(
            id=case_id,
            content=_output(raw, case_id, outputs, f"{source}: {key}[{index}]"),
            query=_text(extra.get("input")),
            reference=_text(extra.get("expected_output")),
        )
        cases.append(SuiteCase(target, rubric=rubric))
    name = str(document.get("name") or document.get("description") or file.stem)
    suite = Suite(
        name, source, cases, given, format=f"agentv-{'v2' if key == 'evalcases' else 'v4'}"
    )
    suite.warnings.extend(loaded.warnings)
    for case in cases:
        suite.rubric_for(case)
    return suite


def _promptfoo(
    document: Mapping[str, Any],
    file: Path,
    given: Rubric | None,
    outputs: Mapping[str, Any],
    plugins: Any,
) -> Suite:
    """A promptfoo config: each test's assertions are its rubric; its output is `output`
    in its vars (or the test's `output`), else the outputs file's line for the test's id
    (its rubric's name: the test's `description`, else `test-N`)."""
    from rubricflow.formats.loader import load_document

    source = str(file)
    loaded = load_document(
        dict(document), format="promptfoo", source=source, base_dir=file.parent, plugins=plugins
    )
    tests = document["tests"]
    cases: list[SuiteCase] = []
    for rubric in loaded.rubrics:
        extra = rubric.metadata.get("promptfoo", {})
        index = int(extra.get("test", 0))
        raw = tests[index]
        variables = extra.get("vars") or {}
        target = Target(
            id=rubric.name,
            content=_output(raw, rubric.name, outputs, f"{source}: tests[{index}]"),
            query=_text(variables.get("input", variables.get("query"))),
            reference=variables.get("expected_output", variables.get("expected")),
            metadata={"vars": dict(variables)} if variables else {},
        )
        cases.append(SuiteCase(target, rubric=rubric))
    name = str(document.get("description") or document.get("name") or file.stem)
    suite = Suite(name, source, cases, given, format="promptfoo")
    suite.warnings.extend(loaded.warnings)
    for case in cases:
        suite.rubric_for(case)
    return suite


def read_outputs(path: str | Path) -> dict[str, Any]:
    """An outputs file: JSONL lines `{"id": case id, "output": ...}`."""
    from rubricflow.formats.document import open_regular_file

    file = Path(path)
    if not file.exists() and not file.is_symlink():
        raise SuiteError(f"{file}: no such outputs file; check the path")
    outputs: dict[str, Any] = {}

    def refuse(reason: str) -> SuiteError:
        return SuiteError(f"{file}: {reason}")

    try:
        with open_regular_file(file, refuse, what="JSONL outputs file") as stream:
            lines = bounded_lines(stream, str(file), SuiteError)
            for number, value in json_lines(lines, str(file), SuiteError):
                if not isinstance(value, dict) or "id" not in value or "output" not in value:
                    raise SuiteError(
                        f"{file} line {number}: an outputs line is an object with `id` (the "
                        "case id) and `output` (what to grade)"
                    )
                outputs[str(value["id"])] = value["output"]
    except UnicodeDecodeError:
        raise SuiteError(f"{file}: not UTF-8 text; save the outputs file as UTF-8") from None
    return outputs


def suite_targets(suite: Suite) -> Sequence[tuple[Rubric, Target]]:
    """Each case's rubric and target, in suite order."""
    return [(suite.rubric_for(case), case.target) for case in suite.cases]
