"""Options that `eval` and `calibrate` share: one definition, one help text."""

from __future__ import annotations

from typing import Annotated

import typer

__all__ = [
    "AllowImportOption",
    "ConcurrencyOption",
    "FormatOption",
    "LLMOption",
    "NoCacheOption",
    "RubricIdOption",
    "SamplesOption",
]

LLMOption = Annotated[
    str | None,
    typer.Option(
        "--llm",
        metavar="SPEC",
        help="LLM judge: openai:MODEL[@URL], anthropic:MODEL, ollama:MODEL[@URL], local, "
        "python:module:function (default: $RUBRICFLOW_LLM).",
    ),
]
NoCacheOption = Annotated[
    bool, typer.Option("--no-cache", help="Ask the judge again; do not use cached answers.")
]
SamplesOption = Annotated[
    int | None,
    typer.Option(
        "--samples", min=1, help="Judge each LLM criterion N times (majority vote / mean)."
    ),
]
ConcurrencyOption = Annotated[
    int, typer.Option("--concurrency", "-c", min=1, help="Criteria scored at once per target.")
]
AllowImportOption = Annotated[
    bool,
    typer.Option(
        "--allow-import",
        help="Let the rubric's deterministic criteria import `module:function` code.",
    ),
]
FormatOption = Annotated[
    str | None, typer.Option("--format", "-f", help="Rubric format (default: detect).")
]
RubricIdOption = Annotated[
    str | None, typer.Option("--rubric-id", help="Which rubric, when the file holds several.")
]
