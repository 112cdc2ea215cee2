"""OpenAI graders (the Evals API's `testing_criteria`, and the graders of reinforcement
fine-tuning): the JSON teams export before OpenAI's hosted Evals shut down.

A document is one grader (`{"type": "string_check", "name": ..., ...}`), a list of
graders, or an eval (`{"name": ..., "testing_criteria": [graders]}`). It becomes one
rubric with a criterion per grader. OpenAI reports each testing criterion on its own and
an item passes a criterion when its grader passes, so every criterion that has a pass bar
is required and the rubric's own threshold is 0: the verdict passes exactly when every
grader passes. The score is the mean of the graders' scores.

- `string_check`: the built-in `string_check` check (`eq`, `ne`, `like`: contains,
  `ilike`: contains ignoring case), MET or UNMET.
- `text_similarity`: the metrics plugin's `bleu` and ROUGE (`rouge_1`, `rouge_2`,
  `rouge_l`), passing at `pass_threshold`. OpenAI's other metrics (`fuzzy_match`, `gleu`,
  `meteor`, `cosine`, `rouge_3`..`rouge_5`) are named as not imported.
- `score_model`: an `llm_score` criterion on the grader's `range` (default 0..1), passing
  at `pass_threshold`; without one it scores and does not gate, with a warning.
- `label_model`: an `llm_decode` criterion whose levels are the labels; a passing label
  scores 1 and passes, any other scores 0.
- `python` graders run code: refused, naming the opt-in, unless the caller allows it
  (`--allow-import`, or `rubricflow.formats.allowing_code()` around the load); then a
  criterion whose check (`rubricflow.scorers.python_grader:run_python_grader`, a
  `module:function` name, so it runs only when evaluated with `allow_import=True`) runs
  the grader's `grade(sample, item)` in a subprocess with a timeout, passing at
  `pass_threshold`.
- `multi` graders over `string_check` and `text_similarity` graders: the built-in
  `openai_multi` check grades each and computes `calculate_output` by safe arithmetic
  (`rubricflow.formats.arithmetic`: numbers, names, `+ - * / ^`, `min max abs floor ceil
  exp sqrt log`; never `eval`), passing at `pass_threshold`. A formula with anything else,
  or a multi over model graders, is refused, naming it.

Templates: the text under review is `{{ sample.output_text }}`, and `{{ item.FIELD }}` is
the target's reference field FIELD (`reference_key`). The judge of a model grader is
chosen when rubricflow runs (`--llm`), not by the file: its `model` is kept in the
rubric's metadata (`openai.models`, by criterion), with a warning.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from rubricflow.formats.base import ImportResult, LoadContext, SourceReader, build_rubric, slugify

__all__ = ["GRADER_TYPES", "OpenAIGraderFormat"]

GRADER_TYPES = ("string_check", "text_similarity", "score_model", "label_model", "multi", "python")
_SAMPLE = re.compile(r"^\s*\{\{\s*sample\.output_text\s*\}\}\s*$")
_ITEM = re.compile(r"^\s*\{\{\s*item\.([A-Za-z0-9_]+)\s*\}\}\s*$")
_TEMPLATE = re.compile(r"\{\{.*?\}\}")
#: OpenAI's text_similarity metrics the metrics plugin computes, by its metric name
_METRICS = {"bleu": "bleu", "rouge_1": "rouge_1", "rouge_2": "rouge_2", "rouge_l": "rouge_l"}


def _is_grader(value: Any) -> bool:
    return isinstance(value, Mapping) and value.get("type") in GRADER_TYPES and "name" in value


def _graders_of(document: Any) -> tuple[list[Any], str] | None:
    """The graders a document holds, and the path they are at ('' for a bare list)."""
    if _is_grader(document):
        return [document], ""
    if isinstance(document, list) and document and all(_is_grader(g) for g in document):
        return list(document), ""
    if isinstance(document, Mapping) and isinstance(document.get("testing_criteria"), list):
        return list(document["testing_criteria"]), "testing_criteria"
    return None


class OpenAIGraderFormat:
    name = "openai-graders"
    description = "OpenAI graders: an eval's testing_criteria, or graders as JSON"

    def detect(self, document: Any) -> float:
        found = _graders_of(document)
        return 1.0 if found and all(_is_grader(g) for g in found[0]) else 0.0

    def load(self, document: Any, context: LoadContext) -> ImportResult:
        reader = SourceReader(context.source)
        found = _graders_of(document)
        if found is None:
            reader.problem("", "expected an OpenAI grader, a list of graders or an eval")
            reader.raise_if_problems()
        assert found is not None
        graders, at = found
        criteria: list[dict[str, Any]] = []
        path_map: dict[str, str] = {}
        taken: set[str] = set()
        models: dict[str, str] = {}  # the model each model grader named, by criterion
        for index, raw in enumerate(graders):
            path = f"{at}[{index}]"
            grader = reader.mapping(raw, path)
            if grader is None:
                continue
            criterion = _criterion(reader, grader, path, context.allow_code)
            if criterion is None:
                continue
            base, number = criterion["id"], 2
            while criterion["id"] in taken:
                criterion["id"], number = f"{base}-{number}", number + 1
            taken.add(criterion["id"])
            path_map[f"criteria[{len(criteria)}]"] = path
            criteria.append(criterion)
            if isinstance(grader.get("model"), str):
                models[criterion["id"]] = grader["model"]
        reader.raise_if_problems()
        name = document.get("name") if isinstance(document, Mapping) else None
        if not isinstance(name, str) or not name:
            name = criteria[0]["name"] if len(criteria) == 1 else "openai-graders"
        native = {
            "id": slugify(name, "openai-graders"),
            "name": name,
            "version": "1.0.0",
            "pass_threshold": 0.0,
            "criteria": criteria,
            "metadata": {
                "imported_from": "openai-graders",
                **({"openai": {"models": models}} if models else {}),
            },
        }
        return ImportResult([build_rubric(native, context.source, path_map)], reader.warnings)


def _criterion(
    reader: SourceReader, grader: Mapping[str, Any], path: str, allow_code: bool = False
) -> dict[str, Any] | None:
    kind = grader.get("type")
    name = reader.text(grader, "name", path, required=True) or str(kind)
    base: dict[str, Any] = {"id": slugify(name, "grader"), "name": name, "required": True}
    if kind == "python":
        if allow_code:
            return _python(reader, grader, path, base)
        reader.problem(
            f"{path}.source",
            f"grader {name!r} is a python grader, which runs code; rubricflow runs a "
            "grader's source only when you opt in: --allow-import (or "
            "rubricflow.formats.allowing_code() when loading, and allow_import=True when "
            "evaluating) runs it in a subprocess with a timeout; or port it to a check "
            "function in a plugin (docs/plugins.md) and name it in scoring.function",
        )
        return None
    if kind == "multi":
        return _multi(reader, grader, path, base)
    if kind == "string_check":
        return _string_check(reader, grader, path, base)
    if kind == "text_similarity":
        return _text_similarity(reader, grader, path, base)
    _warn_model(reader, grader, path, name)
    if kind == "score_model":
        return _score_model(reader, grader, path, base)
    return _label_model(reader, grader, path, base)


PYTHON_GRADER = "rubricflow.scorers.python_grader:run_python_grader"


def _python(
    reader: SourceReader, grader: Mapping[str, Any], path: str, base: dict[str, Any]
) -> dict[str, Any]:
    """A python grader the caller allowed: its source run by `PYTHON_GRADER`."""
    source = grader.get("source")
    if not isinstance(source, str) or "def grade" not in source:
        reader.problem(f"{path}.source", "expected Python source defining grade(sample, item)")
        source = ""
    criterion: dict[str, Any] = {
        **base,
        "description": f"The python grader {base['name']!r} scores the output",
        "scoring": {
            "method": "deterministic",
            "function": PYTHON_GRADER,
            "config": {"source": source},
        },
    }
    _gate_by_threshold(reader, grader, path, criterion, "a grader's score")
    return criterion


def _sample_input(reader: SourceReader, grader: Mapping[str, Any], path: str) -> None:
    value = grader.get("input")
    if not isinstance(value, str) or not _SAMPLE.match(value):
        reader.problem(
            f"{path}.input",
            f"rubricflow checks the output under review: the input must be "
            f"{{{{ sample.output_text }}}}, got {value!r}",
        )


def _reference(
    reader: SourceReader, grader: Mapping[str, Any], path: str, config: dict[str, Any]
) -> None:
    """`reference` as a literal, or `{{ item.FIELD }}` as the target's reference field."""
    value = grader.get("reference")
    if not isinstance(value, str):
        reader.problem(f"{path}.reference", f"expected text, got {value!r}")
        return
    item = _ITEM.match(value)
    if item:
        config["reference_key"] = item.group(1)
    elif _TEMPLATE.search(value):
        reader.problem(
            f"{path}.reference",
            f"{value!r} is a template rubricflow does not read: use text, or "
            "{{ item.FIELD }} for a field of each target's reference",
        )
    else:
        config["reference"] = value


def _string_check(
    reader: SourceReader, grader: Mapping[str, Any], path: str, base: dict[str, Any]
) -> dict[str, Any]:
    _sample_input(reader, grader, path)
    operation = grader.get("operation")
    if operation not in ("eq", "ne", "like", "ilike"):
        reader.problem(f"{path}.operation", f"expected eq, ne, like or ilike, got {operation!r}")
    config: dict[str, Any] = {"operation": operation}
    _reference(reader, grader, path, config)
    return {
        **base,
        "description": f"The output {_OPERATION_WORDS.get(str(operation), operation)} "
        "the reference",
        "scoring": {"method": "deterministic", "function": "string_check", "config": config},
    }


_OPERATION_WORDS = {
    "eq": "equals",
    "ne": "differs from",
    "like": "contains",
    "ilike": "contains (ignoring case)",
}


def _text_similarity(
    reader: SourceReader, grader: Mapping[str, Any], path: str, base: dict[str, Any]
) -> dict[str, Any]:
    _sample_input(reader, grader, path)
    metric = grader.get("evaluation_metric")
    if not isinstance(metric, str) or metric not in _METRICS:
        reader.problem(
            f"{path}.evaluation_metric",
            f"evaluation_metric {metric!r} is not imported: rubricflow computes "
            f"{', '.join(_METRICS)} (with the metrics plugin); use one of those, or port "
            "the metric to a check function",
        )
    config: dict[str, Any] = {}
    _reference(reader, grader, path, config)
    criterion = {
        **base,
        "description": f"The output is similar to the reference ({metric})",
        "scoring": {
            "method": "metric",
            "metric": _METRICS.get(str(metric), str(metric)),
            "config": config,
        },
    }
    threshold = reader.number(grader, "pass_threshold", path)
    if threshold is None:
        criterion["required"] = False
        reader.warn(
            f"{path}.pass_threshold", "no pass_threshold: the grader scores and does not gate"
        )
    else:
        criterion["min_score"] = threshold
    return criterion


def _warn_model(reader: SourceReader, grader: Mapping[str, Any], path: str, name: str) -> None:
    model = grader.get("model")
    reader.warn(
        f"{path}.model",
        f"grader {name!r} named model {model!r}; rubricflow's judge is chosen when it runs "
        "(--llm SPEC), not by the file",
    )


def _instructions(reader: SourceReader, grader: Mapping[str, Any], path: str) -> str:
    """The grader's messages as the criterion's description (templates left as written:
    rubricflow shows the judge the output and the reference itself)."""
    messages = reader.sequence(grader.get("input"), f"{path}.input") or []
    parts: list[str] = []
    for index, raw in enumerate(messages):
        message = reader.mapping(raw, f"{path}.input[{index}]")
        if message is None:
            continue
        content = message.get("content")
        if isinstance(content, Mapping):
            content = content.get("text")
        if not isinstance(content, str):
            reader.problem(f"{path}.input[{index}].content", "expected text")
            continue
        parts.append(content.strip())
    return "\n\n".join(p for p in parts if p)


def _score_model(
    reader: SourceReader, grader: Mapping[str, Any], path: str, base: dict[str, Any]
) -> dict[str, Any]:
    bounds = grader.get("range", [0, 1])
    ok = (
        isinstance(bounds, Sequence)
        and len(bounds) == 2
        and all(isinstance(b, int | float) and not isinstance(b, bool) for b in bounds)
        and bounds[1] > bounds[0]
    )
    if not ok:
        reader.problem(f"{path}.range", f"expected [low, high] with low < high, got {bounds!r}")
        bounds = [0, 1]
    low, high = float(bounds[0]), float(bounds[1])
    criterion: dict[str, Any] = {
        **base,
        "description": _instructions(reader, grader, path),
        "scoring": {"method": "llm_score", "config": {"min_score": low, "max_score": high}},
    }
    threshold = reader.number(grader, "pass_threshold", path)
    if threshold is None:
        criterion["required"] = False
        reader.warn(
            f"{path}.pass_threshold", "no pass_threshold: the grader scores and does not gate"
        )
    elif not low <= threshold <= high:
        reader.problem(f"{path}.pass_threshold", f"must be within the range {low:g}..{high:g}")
    else:
        criterion["min_score"] = (threshold - low) / (high - low)
    return criterion


def _label_model(
    reader: SourceReader, grader: Mapping[str, Any], path: str, base: dict[str, Any]
) -> dict[str, Any]:
    labels = list(reader.sequence(grader.get("labels"), f"{path}.labels") or [])
    passing = reader.sequence(grader.get("passing_labels"), f"{path}.passing_labels") or []
    if not labels or not all(isinstance(label, str) and label for label in labels):
        reader.problem(f"{path}.labels", "expected a non-empty list of labels")
        labels = []
    unknown = [label for label in passing if label not in labels]
    if unknown or not passing:
        reader.problem(
            f"{path}.passing_labels",
            f"must be a non-empty subset of labels; {unknown!r} are not labels"
            if unknown
            else "name at least one passing label",
        )
    ids: set[str] = set()
    levels = []
    for number, label in enumerate(labels, start=1):
        ident = slugify(label, f"label-{number}")
        while ident in ids:
            ident = f"{ident}-{number}"
        ids.add(ident)
        levels.append({"id": ident, "label": label, "score": 1.0 if label in passing else 0.0})
    return {
        **base,
        "description": _instructions(reader, grader, path),
        "levels": levels,
        "min_score": 1.0,
        "scoring": {"method": "llm_decode"},
    }


def _multi(
    reader: SourceReader, grader: Mapping[str, Any], path: str, base: dict[str, Any]
) -> dict[str, Any] | None:
    """A multi grader over deterministic graders, as one `openai_multi` check."""
    from rubricflow.formats.arithmetic import FormulaError, check_formula

    name = base["name"]
    inner = reader.mapping(grader.get("graders"), f"{path}.graders")
    if inner is None:
        return None
    graders: dict[str, Any] = {}
    for key, raw in inner.items():
        where = f"{path}.graders.{key}"
        sub = reader.mapping(raw, where)
        if sub is None:
            continue
        if sub.get("type") not in ("string_check", "text_similarity"):
            reader.problem(
                f"{where}.type",
                f"multi grader {name!r}: its grader {key!r} is a {sub.get('type')!r} grader; "
                "a multi grader is imported over string_check and text_similarity graders "
                "only: import model graders as graders of their own",
            )
            continue
        kind, warned = sub["type"], len(reader.warnings)
        made = (_string_check if kind == "string_check" else _text_similarity)(
            reader, sub, where, {"id": key, "name": key}
        )
        del reader.warnings[warned:]  # an inner grader's own pass_threshold is not read
        scoring = made["scoring"]
        entry: dict[str, Any] = {"type": kind, **scoring["config"]}
        if kind == "text_similarity":
            entry["metric"] = scoring["metric"]
        graders[str(key)] = entry
    formula = grader.get("calculate_output")
    try:
        check_formula(str(formula) if formula is not None else "", inner)
    except FormulaError as error:
        reader.problem(f"{path}.calculate_output", f"multi grader {name!r}: {error}")
        return None
    criterion: dict[str, Any] = {
        **base,
        "description": f"{formula} over its graders ({', '.join(graders)})",
        "scoring": {
            "method": "deterministic",
            "function": "openai_multi",
            "config": {"graders": graders, "calculate_output": formula},
        },
    }
    _gate_by_threshold(reader, grader, path, criterion, "a criterion's score")
    return criterion


def _gate_by_threshold(
    reader: SourceReader,
    grader: Mapping[str, Any],
    path: str,
    criterion: dict[str, Any],
    scored: str,
) -> None:
    """A grader's `pass_threshold` as the criterion's `min_score`; without one the
    criterion scores and does not gate (said as a warning)."""
    threshold = reader.number(grader, "pass_threshold", path)
    if threshold is None:
        criterion["required"] = False
        reader.warn(
            f"{path}.pass_threshold", "no pass_threshold: the grader scores and does not gate"
        )
    elif not 0 <= threshold <= 1:
        reader.problem(f"{path}.pass_threshold", f"must be within 0..1 ({scored})")
    else:
        criterion["min_score"] = threshold
