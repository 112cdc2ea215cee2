"""The judge options the commands share: `--llm` once per judge and `--panel POLICY` to
combine several (a panel is a judge), and `--double-pass` for one-shot criteria."""

from __future__ import annotations

from typing import Annotated

import typer

from rubricflow.cli.shared import fail

__all__ = ["DoublePassOption", "JudgesOption", "PanelOption", "check_judge", "judge_spec"]

JudgesOption = Annotated[
    list[str] | None,
    typer.Option(
        "--llm",
        metavar="SPEC",
        help="LLM judge: openai:MODEL[@URL], anthropic:MODEL, ollama:MODEL[@URL], local, "
        "python:module:function (default: $RUBRICFLOW_LLM). Give it once per judge, with "
        "--panel, for a judge panel.",
    ),
]
PanelOption = Annotated[
    str | None,
    typer.Option(
        "--panel",
        metavar="POLICY",
        help="Combine the --llm judges' verdicts: majority, unanimous, any_unmet (one judge "
        "seeing a problem is enough), mean or median. The judges are asked at once; a "
        "failing judge abstains (docs/llm.md#judge-panels).",
    ),
]
DoublePassOption = Annotated[
    bool,
    typer.Option(
        "--double-pass",
        help="Ask llm_oneshot criteria twice, the second time in reversed order: MET only if "
        "both passes say so, a penalty if either finds it; flips are in the evidence.",
    ),
]


def judge_spec(specs: list[str] | None, panel: str | None) -> str | None:
    """The one judge spec `--llm ... --panel ...` name (None: the default judge); exits 2
    with the reason when they do not make one."""
    from rubricflow.errors import ConfigurationError
    from rubricflow.llm.panel import panel_spec

    try:
        return panel_spec(specs, panel)
    except ConfigurationError as error:
        fail(str(error))


def check_judge(spec: str) -> None:
    """Exit 2 when `spec` cannot make a judge (each judge of a panel is made), before any
    work is claimed."""
    from rubricflow.errors import RubricflowError
    from rubricflow.llm.session import LLMSession

    try:
        LLMSession(spec, cache=None).provider_now()
    except RubricflowError as error:
        fail(f"--llm {spec}: {error}")
