"""`rubricflow types ...`: define artifact types: which rubrics review them, and how."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from rubricflow.cli.judging import PanelOption, judge_spec
from rubricflow.cli.shared import (
    DbOption,
    JsonOption,
    ServerOption,
    TokenOption,
    fail,
    out,
    print_json,
    read_content,
    run_api,
)

__all__ = ["types_app"]


types_app = typer.Typer(
    help="Define artifact types: which rubrics review them, and how.", no_args_is_help=True
)


@types_app.command("set")
def types_set(
    name: Annotated[str, typer.Argument(metavar="TYPE", help="The artifact type's name.")],
    rubric: Annotated[
        list[str] | None,
        typer.Option(
            "--rubric", "-r", help="A rubric reviewing this type: ID (latest) or ID@VERSION."
        ),
    ] = None,
    blocking: Annotated[
        list[str] | None,
        typer.Option(
            "--blocking", help="A rubric whose failure rejects instead of asking for revision."
        ),
    ] = None,
    auto_review: Annotated[
        bool, typer.Option("--auto-review/--no-auto-review", help="Review on submit.")
    ] = True,
    requires_approval: Annotated[
        bool,
        typer.Option("--requires-approval", help="A passing review waits for a human approve."),
    ] = False,
    approval_threshold: Annotated[
        float | None,
        typer.Option(
            "--approval-threshold", min=0.0, max=1.0, help="Overrides the rubrics' pass thresholds."
        ),
    ] = None,
    content_schema: Annotated[
        Path | None,
        typer.Option("--content-schema", help="JSON Schema file the content must match."),
    ] = None,
    description: Annotated[str, typer.Option("--description", help="What this type is.")] = "",
    llm: Annotated[
        list[str] | None,
        typer.Option(
            "--llm",
            metavar="SPEC",
            help="The judge for this type's reviews (default: the reviewer's judge). Once "
            "per judge, with --panel, for a judge panel.",
        ),
    ] = None,
    panel: PanelOption = None,
    route_confidence: Annotated[
        float | None,
        typer.Option(
            "--route-confidence",
            min=0.0,
            max=1.0,
            help="Send the artifact to a reviewer when a criterion's confidence is below X.",
        ),
    ] = None,
    route_margin: Annotated[
        float | None,
        typer.Option(
            "--route-margin",
            min=0.0,
            max=1.0,
            help="Send the artifact to a reviewer when |score - threshold| <= E.",
        ),
    ] = None,
    audit_rate: Annotated[
        float,
        typer.Option(
            "--audit-rate",
            min=0.0,
            max=1.0,
            help="Share P of auto-decided artifacts a reviewer also decides, blind.",
        ),
    ] = 0.0,
    audit_seed: Annotated[
        int, typer.Option("--audit-seed", help="Seeds the per-artifact audit draw.")
    ] = 0,
    escalate_to: Annotated[
        str | None,
        typer.Option(
            "--escalate-to",
            metavar="SPEC",
            help="A stronger judge (or panel) for the criteria the type's judge is unsure of.",
        ),
    ] = None,
    reviewers: Annotated[
        int,
        typer.Option("--reviewers", min=1, max=20, help="Human decisions a routed artifact needs."),
    ] = 1,
    lead: Annotated[
        list[str] | None,
        typer.Option("--lead", help="A reviewer whose decision settles an artifact alone."),
    ] = None,
    max_cost_per_artifact: Annotated[
        float | None,
        typer.Option(
            "--max-cost-per-artifact",
            metavar="USD",
            min=0.0,
            help="The most one artifact's review may spend on judge calls (needs the "
            "judge's price); past it the remaining LLM criteria are unable_to_evaluate "
            '("budget").',
        ),
    ] = None,
    daily_budget: Annotated[
        float | None,
        typer.Option(
            "--daily-budget",
            metavar="USD",
            min=0.0,
            help="The most this type's reviews may spend on judge calls in a UTC day, "
            "counted in the store and shared by every worker and server.",
        ),
    ] = None,
    judge_batch: Annotated[
        bool,
        typer.Option(
            "--batch",
            help="A worker's review sends its judge calls through the provider's batch API "
            "(OpenAI, Anthropic) at the batch price; never an inline review.",
        ),
    ] = False,
    db: DbOption = None,
    server: ServerOption = None,
    token: TokenOption = None,
    as_json: JsonOption = False,
) -> None:
    """Define or replace an artifact type."""
    from rubricflow.review import ArtifactType, ReviewPolicy, RubricBinding

    # `--blocking ID` marks a rubric given with `--rubric` as blocking (or binds it, blocking)
    bindings = {b.rubric_id: b for b in (RubricBinding.parse(spec) for spec in rubric or [])}
    for spec in blocking or []:
        marked = RubricBinding.parse(spec, blocking=True)
        known = bindings.get(marked.rubric_id)
        version = marked.version or (known.version if known else None)
        bindings[marked.rubric_id] = marked.model_copy(update={"version": version})
    schema = read_content(content_schema) if content_schema is not None else None
    if schema is not None and not isinstance(schema, dict):
        fail(f"{content_schema}: a content schema is a JSON/YAML object")
    artifact_type = ArtifactType(
        name=name,
        rubrics=tuple(bindings.values()),
        auto_review=auto_review,
        requires_approval=requires_approval,
        approval_threshold=approval_threshold,
        content_schema=schema,
        description=description,
        judge=judge_spec(llm, panel),
        max_cost_per_artifact=max_cost_per_artifact,
        daily_budget=daily_budget,
        judge_batch=judge_batch,
        review_policy=ReviewPolicy(
            route_confidence=route_confidence,
            route_margin=route_margin,
            audit_rate=audit_rate,
            audit_seed=audit_seed,
            escalate_to=escalate_to,
            reviewers=reviewers,
            leads=tuple(lead or ()),
        ),
    )
    saved = run_api(db, server, token, lambda api: api.set_type(name, artifact_type))
    if as_json:
        print_json(saved.model_dump(mode="json"))
    else:
        bound = ", ".join(escape(str(b)) for b in saved.rubrics) or "no rubrics"
        out.print(f"type {escape(name)}: {bound}")


@types_app.command("show")
def types_show(
    name: Annotated[str, typer.Argument(metavar="TYPE", help="The artifact type's name.")],
    db: DbOption = None,
    server: ServerOption = None,
    token: TokenOption = None,
    as_json: JsonOption = False,
) -> None:
    """One artifact type."""
    artifact_type = run_api(db, server, token, lambda api: api.get_type(name))
    if as_json:
        print_json(artifact_type.model_dump(mode="json"))
        return
    out.print(f"type {escape(artifact_type.name)}")
    for binding in artifact_type.rubrics:
        out.print(f"  rubric {escape(str(binding))}{' (blocking)' if binding.blocking else ''}")
    out.print(
        f"  auto_review={artifact_type.auto_review} "
        f"requires_approval={artifact_type.requires_approval} "
        f"approval_threshold={artifact_type.approval_threshold} "
        f"content_schema={'yes' if artifact_type.content_schema else 'no'}"
    )
    if artifact_type.judge:
        out.print(f"  judge {escape(artifact_type.judge)}")
    if artifact_type.max_cost_per_artifact is not None:
        out.print(f"  max_cost_per_artifact {artifact_type.max_cost_per_artifact:g}")
    if artifact_type.daily_budget is not None:
        out.print(f"  daily_budget {artifact_type.daily_budget:g}")
    if artifact_type.judge_batch:
        out.print("  judge_batch (a worker's review uses the batch API)")
    policy = artifact_type.review_policy
    if policy != type(policy)():
        shown = " ".join(f"{k}={v}" for k, v in policy.model_dump(exclude_defaults=True).items())
        out.print(f"  review policy {escape(shown)}")


@types_app.command("list")
def types_list(
    db: DbOption = None,
    server: ServerOption = None,
    token: TokenOption = None,
    as_json: JsonOption = False,
) -> None:
    """Every artifact type (with --server: those the token's types allow)."""
    found = run_api(db, server, token, lambda api: api.list_types())
    if as_json:
        print_json({"types": [t.model_dump(mode="json") for t in found]})
        return
    for artifact_type in found:
        rubrics = ", ".join(str(b) for b in artifact_type.rubrics)
        out.print(f"{escape(artifact_type.name)}: {escape(rubrics)}")


@types_app.command("agreement")
def types_agreement(
    name: Annotated[str, typer.Argument(metavar="TYPE", help="The artifact type's name.")],
    resamples: Annotated[
        int, typer.Option("--resamples", min=10, max=10_000, help="Bootstrap resamples.")
    ] = 1000,
    seed: Annotated[int, typer.Option("--seed", min=0, help="The bootstrap's seed.")] = 0,
    db: DbOption = None,
    server: ServerOption = None,
    token: TokenOption = None,
    as_json: JsonOption = False,
) -> None:
    """Agreement between the people deciding this type's artifacts: Cohen's kappa for two
    reviewers, Krippendorff's alpha for more, overall and per criterion, with 95% CIs."""
    found = run_api(
        db, server, token, lambda api: api.type_agreement(name, resamples=resamples, seed=seed)
    )
    if as_json:
        print_json(found)
        return
    out.print(f"type {escape(name)}: agreement between reviewers")
    rows = [("overall", found["overall"]), *found["criteria"].items()]
    for what, figure in rows:
        out.print(f"  {escape(what)}: {_figure(figure)}")


def _figure(figure: dict[str, Any]) -> str:
    """`kappa 0.62 (95% CI 0.41..0.80), 4 of 6 unanimous`, or why it is undefined."""
    name = "kappa" if figure["statistic"] == "cohen_kappa" else "alpha"
    counted = f"{figure['agreeing']} of {figure['units']} unanimous"
    if figure["value"] is None:
        return f"{name} undefined ({escape(str(figure['why']))}); {counted}"
    interval = figure["interval"]
    shown = f" (95% CI {interval['low']:.2f}..{interval['high']:.2f})" if interval else ""
    return f"{name} {figure['value']:.2f}{shown}, {counted}"
