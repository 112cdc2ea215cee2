"""RubricJudgeSpec: a free-text rubric judged holistically on min_score..max_score.

Becomes one `llm_score` criterion on a rubric whose scale is min..max. The prescript and
postscript (with `${min_score}`, `${max_score}`, `${content}`) are kept in the scoring
config; the defaults are the ones the spec documents.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rubricflow.formats.base import ImportResult, SourceReader, build_rubric, slugify

__all__ = ["DEFAULT_POSTSCRIPT", "DEFAULT_PRESCRIPT", "RubricJudgeSpecFormat"]

DEFAULT_PRESCRIPT = (
    "You are a helpful assistant that scores responses between ${min_score} and ${max_score} "
    "according to the following rubric:"
)
DEFAULT_POSTSCRIPT = (
    "Here's the conversation you are judging:\n<content>\n${content}\n</content>\n\n"
    "Please evaluate the assistant's response in the conversation above according to the "
    "rubric.\nThink step-by-step to produce a score, and please provide a rationale for your "
    "score.\nYour score should be between ${min_score} and ${max_score}.\n\n"
    "Your response MUST include:\n1. A <rationale>...</rationale> tag containing your "
    "explanation\n2. A <score>...</score> tag containing your numerical score\n"
)


class RubricJudgeSpecFormat:
    name = "rubricjudgespec"
    description = "RubricJudgeSpec (`model_type: rubric_judge`): a free-text holistic rubric"

    def detect(self, document: Any) -> float:
        if not isinstance(document, Mapping):
            return 0.0
        if document.get("model_type") == "rubric_judge":
            return 1.0
        if isinstance(document.get("rubric"), str) and {"min_score", "max_score"} <= set(document):
            return 0.8
        return 0.0

    def load(self, document: Any, *, source: str | None, base_dir: Path | None) -> ImportResult:
        reader = SourceReader(source)
        doc = reader.mapping(document, "")
        reader.raise_if_problems()
        assert doc is not None
        if doc.get("model_type", "rubric_judge") != "rubric_judge":
            reader.problem("model_type", "must be rubric_judge")
        text = reader.text(doc, "rubric", "", required=True)
        if text is not None and not text.strip():
            reader.problem("rubric", "the rubric text is empty; write what the judge checks")
        model = reader.text(doc, "model", "", required=True)
        low = reader.number(doc, "min_score", "", required=True, default=0.0)
        high = reader.number(doc, "max_score", "", required=True, default=1.0)
        prescript = reader.text(doc, "prescript", "")
        postscript = reader.text(doc, "postscript", "")
        for key in ("extract_variables", "extract_judgement"):
            if doc.get(key) is not None:
                reader.mapping(doc[key], key)
        if low is not None and high is not None and not high > low:
            reader.problem(
                "max_score", f"max_score ({high:g}) must be greater than min_score ({low:g})"
            )
        if (
            postscript is not None
            and "extract_variables" not in doc
            and "${content}" not in (prescript or "") + postscript
        ):
            reader.warn(
                "postscript",
                "neither prescript nor postscript contains ${content}; the judge will not "
                "see the content under review",
            )
        reader.raise_if_problems()
        stem = Path(source).stem if source and not source.startswith("<") else "rubric-judge"
        config: dict[str, Any] = {
            "prescript": prescript if prescript is not None else DEFAULT_PRESCRIPT,
            "postscript": postscript if postscript is not None else DEFAULT_POSTSCRIPT,
            "min_score": low,
            "max_score": high,
            "response_format": "tags",
        }
        for key in ("extract_variables", "extract_judgement"):
            if doc.get(key) is not None:
                config[key] = dict(doc[key])
        native = {
            "id": slugify(stem, "rubric-judge"),
            "version": "1.0.0",
            "description": (text or "").strip().splitlines()[0] if text and text.strip() else "",
            "scale": {"min": low, "max": high, "type": "continuous"},
            "criteria": [
                {
                    "id": "judgement",
                    "name": "Rubric judgement",
                    "description": text,
                    "scoring": {"method": "llm_score", "model": model, "config": config},
                }
            ],
            "metadata": {"imported_from": "rubricjudgespec"},
        }
        path_map = {
            "criteria[0].description": "rubric",
            "criteria[0].scoring.model": "model",
            "scale.max": "max_score",
            "scale.min": "min_score",
        }
        return ImportResult([build_rubric(native, source, path_map)], reader.warnings)
