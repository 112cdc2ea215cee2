"""`rubricflow eval`: one target, a JSONL stream, or an evaluation suite, with a progress
bar, a results file, the store, a clean stop on Ctrl-C, `--resume`, and an HTML report."""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from rubricflow.cli.judging import DoublePassOption, JudgesOption, PanelOption, judge_spec
from rubricflow.cli.shared import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    AllowImportOption,
    ConcurrencyOption,
    FormatOption,
    JudgeConcurrencyOption,
    JudgeVisionOption,
    NoCacheOption,
    RubricIdOption,
    SamplesOption,
    err,
    fail,
    judge_session,
    needs_judge,
    out,
    pick_rubric,
    plugin_manager,
    refuse_unregistered_imports,
    table,
    usage_text,
    user_errors,
)

if TYPE_CHECKING:
    from rubricflow.batch import BatchRun
    from rubricflow.llm.session import LLMSession
    from rubricflow.model import Rubric
    from rubricflow.plugins import PluginRegistry
    from rubricflow.results import Evaluation

__all__ = ["eval_command", "sized_windows"]

TargetsInFlightHelp = (
    "Targets evaluated at once (default: enough to keep --judge-concurrency requests "
    "busy, at least 8)."
)


def sized_windows(
    concurrency: int | None,
    in_flight: int | None,
    rubric: Rubric,
    plugins: PluginRegistry,
    judge: LLMSession,
) -> tuple[int, int]:
    """(`--concurrency`, `--targets-in-flight`) as given, else sized from the judge's
    request limit so that it always has questions waiting (see `rubricflow.batch`)."""
    from rubricflow.batch import criteria_in_flight, targets_in_flight
    from rubricflow.errors import RubricflowError

    judged = len(needs_judge(rubric, plugins))
    limit: int | None = None
    if judged:
        try:
            limit = judge.provider_now().settings.max_concurrency
        except RubricflowError:
            limit = None
    per_target = concurrency if concurrency is not None else criteria_in_flight(limit, judged)
    if in_flight is None:
        in_flight = targets_in_flight(limit, min(per_target, judged))
    return per_target, in_flight


def _evaluation_line(evaluation: Evaluation) -> dict[str, Any]:
    return {
        "target_id": evaluation.target_id,
        "rubric_id": evaluation.rubric_id,
        "rubric_version": evaluation.rubric_version,
        "verdict": evaluation.verdict,
        "passed": evaluation.passed,
        "score": evaluation.score,
        "scaled_score": evaluation.scaled_score,
        "raw_score": evaluation.raw_score,
        "coverage": evaluation.coverage,
        "threshold": evaluation.threshold,
        "margin": evaluation.margin,
        "feedback": evaluation.feedback,
        "usage": evaluation.usage(),
        **(
            {"llm_feedback": evaluation.metadata["llm_feedback"]}
            if "llm_feedback" in evaluation.metadata
            else {}
        ),
        "criteria": [
            {
                "id": r.criterion_id,
                "status": r.status,
                "verdict": r.verdict,
                "level": r.level,
                "score": r.score,
                "confidence": r.confidence,
                "confidence_source": r.confidence_source,
                "evidence": list(r.evidence),
                "notes": r.notes,
            }
            for r in evaluation.criteria
        ],
    }


def _print_evaluation(evaluation: Evaluation, rubric: Rubric) -> None:
    colour = {"pass": "green", "fail": "red", "incomplete": "yellow"}[evaluation.verdict]
    out.print(
        f"[bold]{escape(evaluation.target_id or '(target)')}[/bold]: "
        f"[{colour}]{evaluation.verdict.upper()}[/{colour}] score {evaluation.score:.3f} "
        f"({evaluation.scaled_score:g} on {rubric.scale.min:g}..{rubric.scale.max:g}), "
        f"raw {evaluation.raw_score:g}, coverage {evaluation.coverage:.0%}"
        + (f", margin {evaluation.margin:+.3f}" if evaluation.margin is not None else "")
    )
    grid = table("criterion", "weight", "status", "outcome", "score", "evidence / notes")
    for result in evaluation.criteria:
        outcome = result.level or result.verdict or ""
        if result.passed is False:
            outcome = f"[red]{escape(outcome or 'below bar')}[/red]"
        else:
            outcome = escape(outcome)
        if result.confidence is not None:
            outcome += f" ({result.confidence:.0%} {escape(result.confidence_source or '')})"
        # an unscored criterion's notes say why; a scored one's evidence says what was found
        detail = (
            result.notes or "; ".join(result.evidence)
            if not result.scored
            else "; ".join(result.evidence) or result.notes
        )
        grid.add_row(
            escape(result.criterion_id) + (" *" if result.required else ""),
            f"{result.weight:g}",
            result.status,
            outcome,
            "" if result.score is None else f"{result.score:.2f}",
            escape(detail),
        )
    out.print(grid)
    fix_at = evaluation.feedback.find("What to fix:")
    if fix_at < 0:
        fix_at = evaluation.feedback.find("Not scored")
    if fix_at >= 0:
        out.print(escape(evaluation.feedback[fix_at:].rstrip()))
    summary = evaluation.metadata.get("llm_feedback")
    if isinstance(summary, dict) and summary.get("source") == "llm":
        out.print(f"Feedback: {escape(str(summary.get('text', '')))}")
    if evaluation.llm_calls:
        out.print(f"LLM: {escape(usage_text(evaluation.usage()))}")
    out.print()


def _suite_document(path: Path) -> Any:
    """The parsed document when `path` is a suite file (not a target file or JSONL), else
    None; `load_suite` takes it, so the file is read once."""
    if not path.is_file() or path.suffix.lower() not in (".yaml", ".yml", ".json"):
        return None
    from rubricflow.formats.document import parse_text, read_regular_file
    from rubricflow.suites import is_suite_document

    try:  # within the input size cap (a larger file is refused when read as a target)
        text = read_regular_file(path, ValueError).decode("utf-8-sig")
        document = parse_text(text, str(path), suffix=path.suffix)
    except Exception:
        return None  # reading it as a target reports the problem
    return document if is_suite_document(document) else None


def _not_a_suite(path: Path) -> str:
    """Why `path`, given without a TARGET, is not run as a suite."""
    if not path.exists():
        return f"{path}: no such file; check the path"
    if path.is_file() and path.suffix.lower() in (".yaml", ".yml", ".json"):
        from rubricflow.errors import RubricflowError
        from rubricflow.formats.document import parse_text

        try:
            parse_text(path.read_text(encoding="utf-8-sig"), str(path), suffix=path.suffix)
        except RubricflowError as error:
            return str(error)  # it does not parse: say where
        except (OSError, UnicodeDecodeError) as error:
            return f"{path}: cannot read: {error}"
    return (
        f"{path}: give a TARGET to evaluate (a file, JSONL or -), or make this an "
        "evaluation suite (a file with `cases`)"
    )


def _count_lines(path: Path) -> int | None:
    """How many targets a JSONL file holds (non-blank lines), for the progress bar."""
    if not path.is_file():  # a named pipe would block here; reading it refuses it
        return None
    try:
        with path.open("rb") as stream:
            return sum(1 for line in stream if line.strip())
    except OSError:
        return None


class _Cases:
    """What to evaluate: the (rubric, target) pairs, how many, and the run's rubric."""

    def __init__(
        self, pairs: Any, total: int | None, rubric: Any, source: str, shared: bool = True
    ) -> None:
        self.pairs = pairs
        self.total = total
        self.rubric = rubric
        self.source = source
        #: whether `rubric` is shared by every case (and so registered in the store); an
        #: AgentV suite's per-case rubrics are not: its evaluations hold their content hash
        self.shared = shared


def _gather(
    first: Path,
    target: str | None,
    *,
    format: str | None,
    rubric_id: str | None,
    outputs: Path | None,
    plugins: Any,
    allow_import: bool,
    source: str | None = None,
) -> tuple[_Cases, str | None]:
    from rubricflow.suites import load_suite, read_outputs, suite_targets
    from rubricflow.targets import read_targets

    given_outputs = None
    if outputs is not None:
        with user_errors():
            given_outputs = read_outputs(outputs)
    if target is None and source is not None:
        fail(f"--from {source} needs TARGET: the trace or log file to read")
    if target is None:
        document = _suite_document(first)
        if document is None:
            fail(_not_a_suite(first))
        with user_errors():
            suite = load_suite(first, outputs=given_outputs, plugins=plugins, document=document)
        return _suite_cases(suite, suite_targets, plugins, allow_import), None
    rubric, source_format = pick_rubric(first, format, rubric_id, plugins)
    refuse_unregistered_imports(rubric, plugins, allow_import)
    path = Path(target)
    if source is not None:
        return _trace_cases(rubric, target, source, outputs), source_format
    document = None if target == "-" else _suite_document(path)
    if document is not None:
        with user_errors():
            suite = load_suite(
                path, rubric=rubric, outputs=given_outputs, plugins=plugins, document=document
            )
        return _suite_cases(suite, suite_targets, plugins, allow_import), source_format
    if outputs is not None:
        fail("--outputs goes with an evaluation suite; TARGET is not one")
    total = _count_lines(path) if path.suffix.lower() in (".jsonl", ".ndjson") else None
    if total is None and target != "-":
        total = 1
    base_dir = Path.cwd() if target == "-" else path.parent  # image files: local use
    pairs = ((rubric, t) for t in read_targets(target, base_dir=base_dir))
    return _Cases(pairs, total, rubric, target), source_format


def _trace_cases(rubric: Rubric, target: str, source: str, outputs: Path | None) -> _Cases:
    """`--from otel|openai-chat`: one target per trace or logged call, read (and checked)
    before any is judged; the readers name the file, line and field of a problem."""
    from rubricflow.traces import read_trace_targets

    if outputs is not None:
        fail("--outputs goes with an evaluation suite, not --from")
    if target == "-":
        fail(f"--from {source} reads a file; give its path, not -")
    with user_errors():
        found = list(read_trace_targets(target, source))
    return _Cases(iter([(rubric, t) for t in found]), len(found), rubric, target)


def _trace_format(source: str | None) -> str | None:
    from rubricflow.traces import TRACE_FORMATS

    if source is not None and source not in TRACE_FORMATS:
        fail(f"--from {source}: not a trace format; use one of {', '.join(TRACE_FORMATS)}")
    return source


def _suite_cases(suite: Any, suite_targets: Any, plugins: Any, allow_import: bool) -> _Cases:
    for warning in suite.warnings:
        err.print(f"warning: {escape(suite.source)}: {escape(str(warning))}")
    with user_errors():
        pairs = list(suite_targets(suite))
    for rubric, _ in pairs:
        refuse_unregistered_imports(rubric, plugins, allow_import)
    if not pairs:
        fail(f"{suite.source}: the suite holds no case")
    rubric = suite.rubric or pairs[0][0]
    return _Cases(iter(pairs), len(pairs), rubric, suite.source, shared=suite.rubric is not None)


def _remember_rubrics(pairs: Any, rubrics: dict[str, Rubric]) -> Any:
    """`pairs` as they are, noting each rubric by `id@version` for the JUnit file (which
    says what to fix from the rubric's criteria)."""
    from rubricflow.ci.junit import rubric_label

    for rubric, target in pairs:
        rubrics.setdefault(rubric_label(rubric.id, rubric.version), rubric)
        yield rubric, target


def _remember(
    cases: _Cases, rubrics: dict[str, Rubric] | None, contents: dict[str, Any] | None
) -> None:
    """Keep what the --junit file (each rubric) and the --report (each conversation)
    need, as the targets go by."""
    if rubrics is not None:
        cases.pairs = _remember_rubrics(cases.pairs, rubrics)
    if contents is not None:
        cases.pairs = _remember_conversations(cases.pairs, contents)


def _remember_conversations(pairs: Any, contents: dict[str, Any]) -> Any:
    """`pairs` as they are, keeping each conversation target's content by id for the
    --report, which shows it turn by turn (text targets are not kept)."""
    from rubricflow.conversation import conversation_of

    for rubric, target in pairs:
        if target.id is not None and conversation_of(target) is not None:
            contents[target.id] = target.content
        yield rubric, target


def _progress_bar(total: int | None) -> Any:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[verdicts]}"),
        TextColumn("{task.fields[rate]}"),
        TimeRemainingColumn(),
        TextColumn("{task.fields[llm]}"),
        console=err,
        redirect_stdout=sys.stdout.isatty(),
        redirect_stderr=False,
        transient=False,
    )


def _progress_fields(tally: Any) -> dict[str, str]:
    llm = f"LLM {tally.llm_calls:,} calls"
    if tally.cache_hits:
        llm += f" ({tally.cache_hits:,} cached)"
    llm += f", {tally.input_tokens + tally.output_tokens:,} tokens"
    if tally.cost is not None:
        llm += f", cost {tally.cost:.4g}"
    return {
        "verdicts": f"{tally.failed} failed, {tally.incomplete} incomplete",
        "rate": f"{tally.rate:.1f}/s",
        "llm": llm,
    }


class _Screen:
    """What `eval` shows as its run goes (an `EvalObserver`): each evaluation (a table,
    or a JSON line with --json), the progress bar on stderr, the resume and stop lines."""

    def __init__(
        self, rubric: Rubric, *, total: int | None, as_json: bool, quiet: bool, progress: bool
    ) -> None:
        self.rubric = rubric
        self.total = total
        self.as_json = as_json
        self.quiet = quiet
        self.progress = progress
        self._bar: Any = None
        self._task: Any = None

    def stopping(self) -> None:
        err.print(
            "stopping: finishing the targets in flight and writing what is done "
            "(Ctrl-C again to abandon them)"
        )

    def prepared(self, batch: BatchRun) -> None:
        if batch.tally.skipped:
            err.print(
                f"resuming run {escape(batch.info.id)}: {batch.tally.skipped} target(s) "
                "already finished are not judged again"
            )
        if not self.progress:
            return
        remaining = None if self.total is None else max(self.total - batch.tally.skipped, 0)
        self._bar = _progress_bar(self.total)
        self._bar.start()
        self._task = self._bar.add_task(
            f"run {batch.info.id}", total=remaining, **_progress_fields(batch.tally)
        )

    def evaluated(self, evaluation: Evaluation, batch: BatchRun) -> None:
        self._show(evaluation)
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, advance=1, **_progress_fields(batch.tally))

    def closing(self) -> None:
        if self._bar is not None:
            self._bar.stop()

    def _show(self, evaluation: Evaluation) -> None:
        if self.quiet:
            return
        if self.as_json:
            sys.stdout.write(json.dumps(_evaluation_line(evaluation), ensure_ascii=False) + "\n")
            sys.stdout.flush()
        else:
            _print_evaluation(evaluation, self.rubric)
        if getattr(sys.stdout, "reader_gone", False):
            # `eval ... | head -60`: nobody reads on, so stop judging (and paying for)
            # the rest; the run is written as interrupted, to resume
            raise BrokenPipeError


def _write_files(
    batch: BatchRun,
    rubric: Rubric,
    rubrics: dict[str, Rubric],
    *,
    report: Path | None,
    junit: Path | None,
    contents: dict[str, Any] | None = None,
) -> None:
    """The --report and --junit files, from the whole run (earlier sessions' too)."""
    if report is not None:
        from rubricflow.report import write_report

        with user_errors():
            written = write_report(batch.data(), report, contents=contents)
        err.print(f"report: {escape(str(written))}")
    if junit is not None:
        from rubricflow.ci.junit import rubric_label, write_junit

        rubrics.setdefault(rubric_label(rubric.id, rubric.version), rubric)
        with user_errors():
            written = write_junit(batch.data(), junit, rubrics)
        err.print(f"junit: {escape(str(written))}")


def _warn_repeated(batch: BatchRun, source: str) -> None:
    """Target ids met more than once: the run keeps only the last evaluation of each."""
    if not batch.repeated:
        return
    ids = list(batch.repeated)
    shown = ", ".join(repr(i) for i in ids[:5]) + (
        f" and {len(ids) - 5} more" if len(ids) > 5 else ""
    )
    err.print(
        f"warning: {escape(source)}: target id(s) {escape(shown)} appear more than "
        "once; a run keeps only the last evaluation of each id (its summary, report and "
        "--resume): give every target its own id"
    )


def _print_summary(batch: BatchRun) -> None:
    """The closing line: how many targets, how they ended, the run, the LLM usage."""
    tally = batch.tally
    skipped = ""
    if tally.skipped:
        skipped = f" ({tally.skipped} finished earlier"
        skipped += f", {tally.earlier_failed} of them failed)" if tally.earlier_failed else ")"
    out.print(
        f"{tally.done} target(s){skipped}: {tally.passed} passed, {tally.failed} failed, "
        f"{tally.incomplete} incomplete; run {escape(batch.info.id)}"
        + (escape(f" [{batch.info.status}]") if batch.info.status != "finished" else "")
    )
    if tally.llm_calls or tally.cache_hits:
        out.print(f"LLM usage: {escape(usage_text(tally.usage()))}")


def _ray_evaluator(
    address: str | None,
    actors: int,
    spec: str | None,
    judge_concurrency: int | None,
    *,
    db: str | None = None,
    cache: bool = True,
) -> dict[str, Any]:
    """`{"evaluator": ...}` scoring on the Ray cluster at `address`, or nothing without
    --ray; a missing ray extra is a usage error naming the install. The actors share the
    judge cache of a `db` on PostgreSQL; without one each keeps its own, in memory."""
    if address is None:
        return {}
    try:
        from rubricflow.ray import RayEvaluator
    except ImportError:
        fail(
            "--ray needs Ray: pip install -e '.[ray]' from the checkout (ray[data]), on the "
            "driver and on every node"
        )
    from rubricflow.ray.caching import is_shared_store
    from rubricflow.settings import current

    # the spec, not the session, travels: each actor builds its own judge from it
    given = current()
    judge = spec if spec is not None else given.llm
    shared = db if db is not None and is_shared_store(db) else None
    return {
        "evaluator": RayEvaluator(
            address=address,
            actors=actors,
            judge=judge,
            judge_concurrency=judge_concurrency or 8,
            rpm=given.llm_rpm,
            cache=(shared or "memory") if cache else None,
        )
    }


def _print_estimate(
    pairs: Any,
    judge: LLMSession,
    plugins: PluginRegistry,
    concurrency: int | None,
    allow_import: bool,
    samples: int | None,
) -> None:
    """`--estimate`: evaluate every target with a session that counts, never sends."""
    from rubricflow.engine.executor import evaluate
    from rubricflow.llm.estimate import Estimate, EstimateSession

    session = EstimateSession.mirror(judge)
    total, targets = Estimate(), 0

    async def count() -> None:
        nonlocal targets
        for rubric, target in pairs:
            evaluation = await evaluate(
                rubric,
                target,
                plugins=plugins,
                concurrency=concurrency or 8,
                allow_import=allow_import,
                options={"llm": session, "samples": samples},
            )
            total.add(evaluation.usage())
            targets += 1

    with user_errors():
        asyncio.run(count())
    if total.cost is None and total.calls == 0:
        total.cost = 0.0  # every answer from the cache (or no judge): nothing to pay
    cost = "unknown (set RUBRICFLOW_LLM_PRICE)" if total.cost is None else f"{total.cost:.4g}"
    out.print(
        f"estimate for {targets} target(s): {total.calls:,} judge call(s), "
        f"{total.cache_hits:,} cache hit(s), {total.input_tokens:,} input and "
        f"{total.output_tokens:,} output tokens, cost {cost}"
    )


def _use_batches(judge: LLMSession) -> None:
    """`--batch`: the judge's calls go through its provider's batch API."""
    from rubricflow.errors import RubricflowError
    from rubricflow.llm.batching import use_batch_api

    try:
        use_batch_api(judge)
    except RubricflowError as error:
        fail(str(error) if str(error).startswith("--batch") else f"--batch: {error}")
    poll = judge.members()[0].provider_now()
    err.print(
        f"--batch: judge calls go to {escape(poll.label)} as batches at the batch price, "
        f"polled every {getattr(poll, 'poll', 0):g}s until they end (within 24 h); if this "
        "run is interrupted, run it again (--resume) to pick its batches up",
        highlight=False,
    )


def _cap_spend(judge: LLMSession, max_cost: float) -> None:
    """`--max-cost`: the run's judge calls stop at `max_cost` (needs the judge's price)."""
    from rubricflow.errors import RubricflowError
    from rubricflow.llm.budget import CostBudget

    try:
        price = judge.provider_now().settings.price
    except RubricflowError as error:
        fail(f"--max-cost: {error}")
    if price is None:
        fail(
            "--max-cost needs the judge's price to count spend: set RUBRICFLOW_LLM_PRICE="
            "IN,OUT (per million input and output tokens, e.g. 0.15,0.60)"
        )
    judge.budget = CostBudget(max_cost, "the run's --max-cost")
    for member in judge.members():  # a panel's judges: every call counts
        member.budget = judge.budget


def eval_command(
    rubric_path: Annotated[
        Path,
        typer.Argument(
            metavar="RUBRIC",
            help="Rubric file (any format), or an evaluation suite when TARGET is left out.",
        ),
    ],
    target: Annotated[
        str | None,
        typer.Argument(
            metavar="[TARGET]",
            help="A JSON/YAML file with one target, a JSONL file (one per line), - for stdin, "
            "or an evaluation suite (native `cases`, AgentV `evalcases`/`tests`).",
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object per target.")
    ] = False,
    concurrency: ConcurrencyOption = None,
    judge_concurrency: JudgeConcurrencyOption = None,
    judge_vision: JudgeVisionOption = False,
    targets_in_flight: Annotated[
        int | None, typer.Option("--targets-in-flight", min=1, help=TargetsInFlightHelp)
    ] = None,
    allow_import: AllowImportOption = False,
    format: FormatOption = None,
    rubric_id: RubricIdOption = None,
    source: Annotated[
        str | None,
        typer.Option(
            "--from",
            metavar="otel|openai-chat",
            help="Read TARGET as traces: otel, OpenTelemetry GenAI spans as OTLP JSON (one "
            "conversation or trajectory per trace); openai-chat, chat-completion logs (one "
            "per logged call).",
        ),
    ] = None,
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            help="Store the rubric, the run and every evaluation in this database (URL or "
            "SQLite file); without it `eval` stores nothing.",
        ),
    ] = None,
    llm: JudgesOption = None,
    panel: PanelOption = None,
    double_pass: DoublePassOption = False,
    no_cache: NoCacheOption = False,
    samples: SamplesOption = None,
    llm_feedback: Annotated[
        bool,
        typer.Option("--llm-feedback", help="Add a 3-5 sentence feedback summary by the judge."),
    ] = False,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Write the run to this results JSONL file (a header line, then each "
            "evaluation in full, written as it lands).",
        ),
    ] = None,
    run_id: Annotated[
        str | None,
        typer.Option("--run", metavar="ID", help="The run's id (default: a new run-DATE-... id)."),
    ] = None,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume",
            help="Continue an interrupted run (its --output file and/or --db, with --run ID or "
            "the latest run): finished targets are not judged again.",
        ),
    ] = False,
    outputs: Annotated[
        Path | None,
        typer.Option(
            "--outputs",
            help="For a suite whose cases hold no output (AgentV): JSONL lines "
            '{"id": CASE, "output": ...}.',
        ),
    ] = None,
    progress: Annotated[
        bool | None,
        typer.Option(
            "--progress/--no-progress",
            help="Show a progress bar on stderr (default: when stderr is a terminal).",
        ),
    ] = None,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Print only the closing summary.")
    ] = False,
    report: Annotated[
        Path | None,
        typer.Option("--report", help="Write an HTML report of the run to this file at the end."),
    ] = None,
    estimate: Annotated[
        bool,
        typer.Option(
            "--estimate",
            help="Print the expected judge calls, cache hits, tokens and cost, and judge "
            "nothing (no call is sent; the cache is read, not written).",
        ),
    ] = False,
    max_cost: Annotated[
        float | None,
        typer.Option(
            "--max-cost",
            metavar="USD",
            min=0.0,
            help="Spend at most this on judge calls in this run (at the judge's price, "
            "RUBRICFLOW_LLM_PRICE); a call that would pass it is not sent and its criterion "
            'is unable_to_evaluate with the reason "budget", so the target fails closed.',
        ),
    ] = None,
    batch_api: Annotated[
        bool,
        typer.Option(
            "--batch",
            help="Send the judge calls through the provider's batch API (OpenAI Batch API, "
            "Anthropic Message Batches) at the batch price, polled until they end (within "
            "24 h); an interrupted run picks up its batches again (RUBRICFLOW_BATCH_POLL).",
        ),
    ] = False,
    junit: Annotated[
        Path | None,
        typer.Option(
            "--junit",
            metavar="FILE",
            help="Write the run as JUnit XML to this file at the end (one testcase per "
            "target, a failure per failed criterion), for CI test reports.",
        ),
    ] = None,
    ray_address: Annotated[
        str | None,
        typer.Option(
            "--ray",
            metavar="auto|local|ADDRESS",
            help="Score the targets on a Ray cluster (the ray extra): auto joins the one "
            "`ray start` runs here (or RAY_ADDRESS), local starts one in this process, "
            "ADDRESS joins that one. Results, --db and --resume are as a local run's: the "
            "workers write no file.",
        ),
    ] = None,
    ray_actors: Annotated[
        int,
        typer.Option(
            "--ray-actors",
            min=1,
            help="Ray actors scoring targets with --ray, each with one judge session; the "
            "judge's concurrency stays one limit for the whole cluster.",
        ),
    ] = 2,
) -> None:
    """Evaluate targets or an evaluation suite against a rubric.

    Ctrl-C stops taking new targets, lets those in flight finish, writes what is done
    (results, store, --report, --junit) and exits 130; `--resume` continues the run.
    Exit 0 when every target passed, 1 when any failed or was incomplete, 2 on usage or
    input errors, 130 when interrupted.
    """
    from rubricflow.eval_run import EvalRun
    from rubricflow.runs import RunInfo, new_run_id

    if junit is not None:
        from rubricflow.ci.files import check_writable

        with user_errors():  # before any target is judged (and paid for)
            check_writable(junit)
    plugins = plugin_manager()
    from rubricflow.formats.base import allowing_code

    with allowing_code(allow_import):  # a python grader is imported only when allowed
        cases, source_format = _gather(
            rubric_path,
            target,
            format=format,
            rubric_id=rubric_id,
            outputs=outputs,
            plugins=plugins,
            allow_import=allow_import,
            source=_trace_format(source),
        )
    rubric = cases.rubric
    rubrics: dict[str, Rubric] = {}
    conversations: dict[str, Any] = {}
    _remember(cases, rubrics if junit is not None else None, conversations if report else None)
    if resume and output is None and db is None:
        fail("--resume needs the run's --output file or its --db")
    spec = judge_spec(llm, panel)
    judge = judge_session(
        rubric,
        plugins,
        spec,
        allow_import=allow_import,
        no_cache=no_cache,
        feedback=llm_feedback,
        judge_concurrency=judge_concurrency,
        judge_vision=judge_vision,
    )
    if batch_api and (llm is not None or needs_judge(rubric, plugins)):  # estimates too
        _use_batches(judge)
    if estimate:
        _print_estimate(cases.pairs, judge, plugins, concurrency, allow_import, samples)
        raise typer.Exit(EXIT_OK)
    if max_cost is not None and (llm is not None or needs_judge(rubric, plugins)):
        _cap_spend(judge, max_cost)
    concurrency, in_flight = sized_windows(concurrency, targets_in_flight, rubric, plugins, judge)
    info = RunInfo(
        id=run_id or new_run_id(),
        rubric_id=rubric.id if cases.shared else Path(cases.source).stem,
        rubric_version=rubric.version if cases.shared else "per-case",
        source=cases.source,
        started_at=datetime.now(timezone.utc).isoformat(),
        options={
            "llm": spec,
            "samples": samples,
            "double_pass": double_pass or None,
            "concurrency": concurrency,
            "judge_concurrency": judge_concurrency,
            "targets_in_flight": in_flight,
            "llm_feedback": llm_feedback,
            "run_given": run_id is not None,
        },
    )
    evaluation_run = EvalRun(
        info,
        judge=judge,
        db=db,
        rubric=rubric if cases.shared else None,
        source_format=source_format,
        output=output,
        resume=resume,
        keep=report is not None or junit is not None,
        share_cache=not no_cache,
    )
    screen = _Screen(
        rubric,
        total=cases.total,
        as_json=as_json,
        quiet=quiet,
        progress=progress if progress is not None else err.is_terminal,
    )
    with user_errors():
        try:
            asyncio.run(
                evaluation_run.run(
                    cases.pairs,
                    total=cases.total,
                    observer=screen,
                    target_concurrency=in_flight,
                    plugins=plugins,
                    concurrency=concurrency,
                    allow_import=allow_import,
                    options={
                        "llm": judge,
                        "samples": samples,
                        "llm_feedback": llm_feedback,
                        "double_pass": double_pass or None,
                    },
                    **_ray_evaluator(
                        ray_address,
                        ray_actors,
                        spec,
                        judge_concurrency,
                        db=db,
                        cache=not no_cache,
                    ),
                )
            )
        except (asyncio.CancelledError, KeyboardInterrupt):
            evaluation_run.interrupted = True
    batch = evaluation_run.batch
    if batch is None:
        raise typer.Exit(EXIT_FAILED)
    _write_files(batch, rubric, rubrics, report=report, junit=junit, contents=conversations)
    tally = batch.tally
    if tally.done + tally.skipped == 0 and not evaluation_run.interrupted:
        fail(f"{cases.source}: holds no targets; give one target object or JSONL lines")
    _warn_repeated(batch, cases.source)
    if not as_json or quiet:
        _print_summary(batch)
    if evaluation_run.interrupted:
        err.print(
            f"interrupted: {tally.done} target(s) written; continue with --resume"
            + (f" --run {batch.info.id}" if db is not None and output is None else "")
        )
        raise typer.Exit(EXIT_INTERRUPTED)
    all_passed = tally.failed == 0 and tally.incomplete == 0 and tally.earlier_failed == 0
    raise typer.Exit(EXIT_OK if all_passed else EXIT_FAILED)
