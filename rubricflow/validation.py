"""Validate rubric files: format, model rules, the meta-rubric, and suspicious-but-legal things.

`validate_file` never raises for a bad rubric: it returns a `FileReport` whose
`errors` name each problem's field path and fix, so the CLI can report every file.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rubricflow.engine.meta import MetaReport, assess_rubric
from rubricflow.errors import (
    FormatDetectionError,
    Problem,
    RubricLoadError,
    RubricValidationError,
)
from rubricflow.formats.document import (
    check_rubric_size,
    parse_rubric_text,
    parse_text,
    read_document,
)
from rubricflow.formats.loader import detect_format, load_document
from rubricflow.model import Rubric
from rubricflow.settings import current

if TYPE_CHECKING:
    from rubricflow.plugins import PluginRegistry

__all__ = [
    "UNRESOLVED_PATHS",
    "FileReport",
    "RubricReport",
    "config_problems",
    "lint_file",
    "lint_rubric",
    "refuse_broken_configs",
    "refuse_over_budget_templates",
    "template_problems",
    "untrusted_problems",
    "validate_document",
    "validate_file",
    "validate_text",
]

LLM_METHODS = ("llm", "llm_verdict", "llm_decode", "llm_score", "llm_oneshot")


@dataclass
class RubricReport:
    rubric: Rubric
    meta: MetaReport
    warnings: list[Problem]


@dataclass
class FileReport:
    """The outcome of validating one file."""

    path: str
    format: str | None = None
    errors: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    rubrics: list[RubricReport] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return not self.errors

    @property
    def unresolved(self) -> list[Problem]:
        """Warnings of checks or scorers no installed plugin provides (a misspelt name,
        a missing plugin): they cannot run as written."""
        return [w for w in self.warnings if w.path.endswith(UNRESOLVED_PATHS)]

    @property
    def meta_rubric(self) -> dict[str, Any] | None:
        if not self.rubrics:
            return None
        worst = min(self.rubrics, key=lambda r: r.meta.score)
        return {"score": worst.meta.score, "passed": all(r.meta.passed for r in self.rubrics)}

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "format": self.format,
            "valid": self.valid,
            "errors": [p.to_dict() for p in self.errors],
            "warnings": [p.to_dict() for p in self.warnings],
            "meta_rubric": self.meta_rubric,
            "rubrics": [
                {
                    "id": r.rubric.id,
                    "version": r.rubric.version,
                    "content_hash": r.rubric.content_hash,
                    "meta_rubric": r.meta.to_dict(),
                }
                for r in self.rubrics
            ],
        }


def _weight_warnings(rubric: Rubric, warnings: list[Problem]) -> set[str | None]:
    """Warn where every weight of a scope (the rubric, or a group) is 0: those criteria are
    then the whole verdict (their plain mean) or score 0 (`zero_weights: zero`), so
    "cannot affect the verdict" would be false. Returns the scopes (group ids; None for
    an ungrouped rubric) whose criteria all weigh 0."""
    scopes: dict[str | None, list[float]] = {}
    for criterion in rubric.criteria:
        scopes.setdefault(criterion.group, []).append(criterion.weight)
    all_zero = {scope for scope, weights in scopes.items() if all(w == 0 for w in weights)}
    for scope in sorted(all_zero, key=str):
        group = rubric.group(scope) if scope is not None else None
        policy = (group.zero_weights if group else None) or rubric.zero_weights
        where = "criteria" if group is None else f"groups[{rubric.groups.index(group)}]"
        what = "every criterion" if group is None else f"every criterion of group {scope!r}"
        if policy == "zero":
            effect = (
                "so it scores 0 whatever the verdicts (zero_weights: zero); give the "
                "criteria weights"
            )
        else:
            effect = (
                "so the score is the plain mean of their scores: these criteria are the "
                "whole verdict, equally weighted; give weights if some matter more"
            )
        warnings.append(Problem(where, f"{what} weighs 0, {effect}"))
    if rubric.groups and any(g.weight > 0 for g in rubric.groups):
        for index, group in enumerate(rubric.groups):
            if group.weight == 0 and not group.required:
                warnings.append(
                    Problem(
                        f"groups[{index}].weight",
                        "group weight 0 and not required: it cannot affect the verdict",
                    )
                )
    return all_zero


UNRESOLVED_PATHS = (".scoring.function", ".scoring.method")
"""Where `lint_rubric` warns of a check or scorer no installed plugin provides: `validate
--strict` fails a file with such a warning."""


def _did_you_mean(name: str, known: Iterable[str]) -> str:
    """The hint " (did you mean 'x'?)" for the closest known name, if one is close."""
    import difflib

    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close else ""


def lint_rubric(rubric: Rubric, plugins: PluginRegistry | None = None) -> list[Problem]:
    """Warnings for what is legal but suspicious, and meta-rubric findings below pass."""
    warnings: list[Problem] = []
    scorers = set(plugins.scorers) if plugins is not None else None
    functions = set(plugins.functions) if plugins is not None else None
    all_zero = _weight_warnings(rubric, warnings)
    for index, criterion in enumerate(rubric.criteria):
        where = f"criteria[{index}]"
        if criterion.weight == 0 and not criterion.required and criterion.group not in all_zero:
            warnings.append(
                Problem(
                    f"{where}.weight", "weight 0 and not required: it cannot affect the verdict"
                )
            )
        method = criterion.scoring.method
        if scorers is not None and method not in scorers and method not in LLM_METHODS:
            warnings.append(
                Problem(
                    f"{where}.scoring.method",
                    f"no installed plugin provides scorer {method!r}"
                    f"{_did_you_mean(method, [*scorers, *LLM_METHODS])} (installed: "
                    f"{', '.join(sorted(scorers)) or 'none'}); install the plugin that provides it",
                )
            )
        function = criterion.scoring.function
        if method == "deterministic" and function and functions is not None:
            if function not in functions and ":" in function:
                warnings.append(
                    Problem(
                        f"{where}.scoring.function",
                        f"{function!r} is not a registered check; it runs only when the caller "
                        "allows importing code (--allow-import); register it in a plugin instead",
                    )
                )
            elif function not in functions:
                warnings.append(
                    Problem(
                        f"{where}.scoring.function",
                        f"no installed plugin registers check {function!r}"
                        f"{_did_you_mean(function, functions)}; "
                        "install the plugin that provides it",
                    )
                )
        if (
            criterion.min_score is not None
            and criterion.kind == "binary"
            and method in ("llm", "llm_verdict")
        ):
            warnings.append(
                Problem(
                    f"{where}.min_score",
                    "min_score on a MET/UNMET criterion only distinguishes MET (1) from UNMET (0)",
                )
            )
    return warnings


def config_problems(rubric: Rubric, plugins: PluginRegistry) -> list[Problem]:
    """Errors in the check functions' options: each deterministic criterion's
    `scoring.config` against the schema its function declares (and the function's further
    check, e.g. that a regular expression compiles), with the path of each problem
    (`criteria[2].scoring.config.min`). Functions that declare no schema are not checked."""
    problems: list[Problem] = []
    for index, criterion in enumerate(rubric.criteria):
        scoring = criterion.scoring
        if scoring.method != "deterministic" or not scoring.function:
            continue
        for field_path, message in plugins.check_function_config(scoring.function, scoring.config):
            where = f"criteria[{index}].scoring.config" + (f".{field_path}" if field_path else "")
            problems.append(Problem(where, f"{message} (options of check {scoring.function!r})"))
    return problems


def template_problems(rubric: Rubric) -> list[Problem]:
    """The first criterion template that runs past its render budget (`Limits.template_*`;
    the time budget is shared by the whole rubric) even before it sees a target: it is
    rendered once with empty content, any name it uses standing for nothing, so
    `'x' * 10**9` or `'%0999999999d' | format(1)` is found at lint and registration, not
    at the first evaluation."""
    from jinja2 import ChainableUndefined

    from rubricflow.llm.prompts import (
        PromptError,
        TemplateBudgetError,
        render_rubric_template,
        template_budget,
    )
    from rubricflow.results import Target

    problems: list[Problem] = []
    budget = template_budget()
    # one render's time budget for the whole document, not one per criterion: a rubric of
    # 500 slow templates would otherwise cost 500 budgets per request
    deadline = time.monotonic() + budget.seconds
    for index, criterion in enumerate(rubric.criteria):
        template = criterion.scoring.template
        if not template:
            continue
        remaining = round(deadline - time.monotonic(), 3)
        left = dataclasses.replace(budget, seconds=max(remaining, 0.001))
        try:
            render_rubric_template(
                template, Target(content=""), budget=left, undefined=ChainableUndefined
            )
        except TemplateBudgetError as error:
            problems.append(
                Problem(
                    f"criteria[{index}].scoring.template",
                    f"criterion {criterion.id!r}: {error}"
                    + (
                        f" (the rubric's templates share one budget of {budget.seconds:g} "
                        "seconds when it is checked)"
                        if left.seconds < budget.seconds
                        else ""
                    ),
                )
            )
            break  # the first is enough to refuse the rubric; the rest would cost more
        except PromptError:
            pass  # it may need the target's content: it is rendered for each target
    return problems


def refuse_over_budget_templates(rubrics: Sequence[Rubric], source: str) -> None:
    """`RubricValidationError` naming every criterion whose template is over its budget
    (`template_problems`); a rubric that cannot be judged is not registered either."""
    problems: list[Problem] = []
    for rubric in rubrics:
        found = template_problems(rubric)
        if len(rubrics) > 1:
            found = [Problem(f"{rubric.id}: {p.path}", p.message) for p in found]
        problems.extend(found)
    if problems:
        raise RubricValidationError(problems, source)


def refuse_broken_configs(rubrics: Sequence[Rubric], plugins: PluginRegistry, source: str) -> None:
    """`RubricValidationError` listing every check-function option that `validate` would
    report: a rubric whose checks cannot run is not registered either."""
    problems: list[Problem] = []
    for rubric in rubrics:
        found = config_problems(rubric, plugins)
        if len(rubrics) > 1:
            found = [Problem(f"{rubric.id}: {p.path}", p.message) for p in found]
        problems.extend(found)
    if problems:
        raise RubricValidationError(problems, source)


def validate_file(
    path: str | Path, *, format: str | None = None, plugins: PluginRegistry | None = None
) -> FileReport:
    """Check one file. Never raises for a bad file: problems land in `errors`.

    `format` names the file's format; by default it is detected. The report names the
    format even when the rubric in it is invalid, so a reader knows which rules applied.
    """
    source = str(path)
    try:
        document = read_document(path)
    except (RubricValidationError, RubricLoadError) as error:
        return _unreadable(source, error)
    return validate_document(
        document,
        source=source,
        base_dir=Path(path).resolve().parent,
        format=format,
        plugins=plugins,
    )


def _unreadable(source: str, error: RubricValidationError | RubricLoadError) -> FileReport:
    """The report of a document that could not be read or parsed."""
    report = FileReport(source)
    if isinstance(error, RubricValidationError):
        report.errors.extend(error.problems)
    else:
        report.errors.append(Problem("", error.detail))
    return report


def validate_text(
    text: str,
    *,
    source: str = "<text>",
    suffix: str = "",
    format: str | None = None,
    plugins: PluginRegistry | None = None,
) -> FileReport:
    """`validate_file` for a rubric given as text (an upload, a request body): `source`
    names it in messages, `suffix` (`.json`, `.yaml`) says how to parse it. A rubric
    given as text cannot refer to files next to it (a JSON Schema by `schema_ref`)."""
    try:
        check_rubric_size(len(text.encode("utf-8", "surrogatepass")), source)
        document = (
            parse_text(text, source, suffix=suffix) if suffix else parse_rubric_text(text, source)
        )
    except (RubricValidationError, RubricLoadError) as error:
        return _unreadable(source, error)
    return validate_document(document, source=source, format=format, plugins=plugins)


def validate_document(
    document: Any,
    *,
    source: str,
    base_dir: Path | None = None,
    format: str | None = None,
    plugins: PluginRegistry | None = None,
) -> FileReport:
    """Check one parsed document: format detection, loading, model rules and the
    meta-rubric. Never raises for a bad rubric: problems land in `errors`."""
    report = FileReport(source)
    try:
        name = format or detect_format(document, plugins=plugins, source=source).name
        report.format = name
        loaded = load_document(
            document, format=name, source=source, base_dir=base_dir, plugins=plugins
        )
    except RubricValidationError as error:
        report.errors.extend(error.problems)
        return report
    except FormatDetectionError as error:
        report.format = None
        report.errors.append(Problem("", error.detail))
        return report
    except RubricLoadError as error:
        report.errors.append(Problem("", error.detail))
        return report
    report.format = loaded.format
    report.warnings.extend(loaded.warnings)
    many = len(loaded.rubrics) > 1
    if plugins is None:
        from rubricflow.plugins import default_plugins

        registry = default_plugins()
    else:
        registry = plugins
    for rubric in loaded.rubrics:
        report.errors.extend(
            Problem(f"{rubric.id}: {p.path}", p.message) if many else p
            for p in [*config_problems(rubric, registry), *template_problems(rubric)]
        )
        meta = assess_rubric(rubric)
        warnings = lint_rubric(rubric, plugins)
        warnings.extend(
            Problem(
                "meta_rubric",
                f"{finding.check}: {finding.level.replace('_', ' ')}: {finding.message}",
            )
            for finding in meta.findings
            if finding.level != "pass"
        )
        if many:
            warnings = [
                Problem(f"{rubric.id}: {w.path}" if w.path else rubric.id, w.message)
                for w in warnings
            ]
        report.warnings.extend(warnings)
        report.rubrics.append(RubricReport(rubric, meta, warnings))
    return report


def lint_file(
    path: str | Path, *, format: str | None = None, plugins: PluginRegistry | None = None
) -> FileReport:
    """`validate_file` for a front door: an unexpected failure (a bug, or a plugin's)
    is reported as a problem of that file, so one file cannot stop a batch of checks.
    Set RUBRICFLOW_DEBUG=1 to let it raise instead."""
    try:
        return validate_file(path, format=format, plugins=plugins)
    except Exception as error:
        if current().debug:
            raise
        report = FileReport(str(path))
        report.errors.append(
            Problem(
                "",
                f"internal error while validating: {type(error).__name__}: {error} "
                "(please report it; set RUBRICFLOW_DEBUG=1 for a traceback)",
            )
        )
        return report


def untrusted_problems(
    rubric: Rubric, plugins: PluginRegistry, *, why: str, host: str
) -> list[Problem]:
    """What a rubric from a stranger (an HTTP request, a tool call) asks for that it may
    not: a file (`schema_ref`), code to import (a `module:function` no plugin registered)
    or a judge (`python:` specs). `why` says whose data it is ("rubrics sent over HTTP
    are data"); `host` who runs it ("the server")."""
    problems: list[Problem] = []
    for index, criterion in enumerate(rubric.criteria):
        where = f"criteria[{index}].scoring"
        scoring = criterion.scoring
        if scoring.schema_ref:
            problems.append(
                Problem(
                    f"{where}.schema_ref",
                    f"criterion {criterion.id!r}: schema_ref names a file, and {why}: they "
                    f"read no file on {host}; inline the JSON Schema as `schema`",
                )
            )
        function = scoring.function or ""
        if ":" in function and function not in plugins.functions:
            problems.append(
                Problem(
                    f"{where}.function",
                    f"criterion {criterion.id!r}: {function!r} names code to import, and "
                    f"{why}: {host} runs only check functions its plugins register",
                )
            )
        for field_name in ("model", "metric"):
            value = getattr(scoring, field_name) or ""
            if value.strip().lower().startswith("python:"):
                problems.append(
                    Problem(
                        f"{where}.{field_name}",
                        f"criterion {criterion.id!r}: {value!r} names a python: judge, and "
                        f"{why}: {host}'s configuration alone chooses the judge",
                    )
                )
    return problems
