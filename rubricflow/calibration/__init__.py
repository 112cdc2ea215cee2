"""Judge calibration: how well does the judge agree with human labels?

`calibrate(rubric, examples)` judges human-labelled examples with the rubric and reports,
per criterion and overall, accuracy, Cohen's kappa, weighted kappa (criteria with ordered
levels), confusion matrices and percentile bootstrap intervals. The statistics live in
`rubricflow.calibration.stats` (stdlib only); see docs/calibration.md.
"""

from rubricflow.calibration.alpha import LevelOfMeasurement, krippendorff_alpha
from rubricflow.calibration.estimates import (
    PassRateEstimate,
    RateInterval,
    estimate_pass_rate,
    estimate_with_labelled,
)
from rubricflow.calibration.labels import (
    CalibrationError,
    LabelledExample,
    LabelScale,
    label_scale,
    parse_examples,
    read_labels,
)
from rubricflow.calibration.propose import (
    CriterionChange,
    Proposal,
    next_version,
    propose_revision,
)
from rubricflow.calibration.reliability import ReliabilityPoint, judge_reliability
from rubricflow.calibration.report import (
    CalibrationReport,
    CriterionAgreement,
    Decision,
    Estimate,
    OverallAgreement,
    build_report,
    judge_label,
)
from rubricflow.calibration.run import calibrate
from rubricflow.calibration.stats import (
    ConfusionMatrix,
    Interval,
    UndefinedStatisticError,
    accuracy,
    bootstrap_interval,
    bootstrap_intervals,
    cohen_kappa,
    confusion_matrix,
    kappa_from_matrix,
    pooled_kappa,
    weighted_kappa,
)

__all__ = [
    "CalibrationError",
    "CalibrationReport",
    "ConfusionMatrix",
    "CriterionAgreement",
    "CriterionChange",
    "Decision",
    "Estimate",
    "Interval",
    "LabelScale",
    "LabelledExample",
    "LevelOfMeasurement",
    "OverallAgreement",
    "PassRateEstimate",
    "Proposal",
    "RateInterval",
    "ReliabilityPoint",
    "UndefinedStatisticError",
    "accuracy",
    "bootstrap_interval",
    "bootstrap_intervals",
    "build_report",
    "calibrate",
    "cohen_kappa",
    "confusion_matrix",
    "estimate_pass_rate",
    "estimate_with_labelled",
    "judge_label",
    "judge_reliability",
    "kappa_from_matrix",
    "krippendorff_alpha",
    "label_scale",
    "next_version",
    "parse_examples",
    "pooled_kappa",
    "propose_revision",
    "read_labels",
    "weighted_kappa",
]
