"""What the store's human labels say about a rubric's judge: the pass rate of a run
corrected with them, the labels as examples to calibrate (and learn) from, and the
judge's per-criterion reliability over time.

Only people's decisions are labels (`rubricflow.store.labels`): rubricflow's own approvals
and rejects never count.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rubricflow.calibration.estimates import PassRateEstimate, estimate_with_labelled
from rubricflow.calibration.labels import MET, UNMET, LabelledExample
from rubricflow.calibration.reliability import Period, ReliabilityPoint, judge_reliability
from rubricflow.results import Target
from rubricflow.store.labels import JudgeLabels

if TYPE_CHECKING:
    from rubricflow.model import Rubric
    from rubricflow.runs import RunData
    from rubricflow.store import Store

__all__ = ["labelled_examples", "labelled_verdicts", "reliability", "run_pass_rate"]


async def labelled_verdicts(store: Store, rubric_id: str) -> list[tuple[bool, bool]]:
    """(judge passed, person passed) for every person's decision on `rubric_id`."""
    counts = await JudgeLabels(store.database).verdict_counts(rubric_id)
    pairs: list[tuple[bool, bool]] = []
    for count in counts:
        pairs.extend([(count.judge == "pass", count.human == "pass")] * count.count)
    return pairs


async def run_pass_rate(
    store: Store, run: RunData, *, confidence: float = 0.95
) -> PassRateEstimate | None:
    """The run's naive pass rate and the one corrected with the human labels of its
    rubric (any version), with `confidence` intervals; None when nobody labelled the
    rubric or the run has no complete verdict."""
    verdicts = [e.verdict == "pass" for e in run.evaluations if e.verdict in ("pass", "fail")]
    if not verdicts:
        return None
    pairs = await labelled_verdicts(store, run.info.rubric_id)
    if not pairs:
        return None
    return estimate_with_labelled(verdicts, pairs, confidence=confidence)


async def labelled_examples(store: Store, rubric: Rubric) -> list[LabelledExample]:
    """People's decisions on `rubric` as labelled examples, one per decided artifact
    revision (the newest decision wins): binary and band criteria labelled MET/UNMET as
    the person holds them (for a penalty criterion, MET means the fault is there). Level
    criteria get no label: a decision says pass or fail, not which level."""
    labels = await JudgeLabels(store.database).criterion_labels(rubric.id, with_content=True)
    kinds = {criterion.id: criterion for criterion in rubric.criteria}
    examples: dict[tuple[str, int], tuple[str, dict[str, str]]] = {}
    for label in labels:
        criterion = kinds.get(label.criterion_id)
        if criterion is None or criterion.kind == "levels":
            continue
        met = label.human_passed if criterion.weight >= 0 else not label.human_passed
        key = (label.artifact_id, label.revision)
        _content, found = examples.setdefault(key, (label.content or "", {}))
        found[label.criterion_id] = MET if met else UNMET
    return [
        LabelledExample(
            Target(id=f"{artifact_id}@r{revision}", content=content),
            found,
            f"artifact {artifact_id} revision {revision}",
        )
        for (artifact_id, revision), (content, found) in examples.items()
        if found
    ]


async def reliability(
    store: Store, rubric_id: str, *, period: Period = "week"
) -> list[ReliabilityPoint]:
    """The judge's agreement with people per criterion of `rubric_id`, per `period`."""
    labels = await JudgeLabels(store.database).criterion_labels(rubric_id)
    return judge_reliability(
        ((x.criterion_id, x.decided_at, x.judge_passed, x.human_passed) for x in labels),
        period=period,
    )
