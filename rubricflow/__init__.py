"""rubricflow: review machine-made content against versioned rubrics."""

from importlib import metadata as _metadata
from typing import TYPE_CHECKING, Any

from rubricflow.batch import BatchRun
from rubricflow.calibration import (
    CalibrationError,
    CalibrationReport,
    LabelledExample,
    bootstrap_interval,
    calibrate,
    cohen_kappa,
    confusion_matrix,
    estimate_pass_rate,
    read_labels,
    weighted_kappa,
)
from rubricflow.conversation import (
    Conversation,
    ConversationBounds,
    ImagePart,
    Message,
    TextPart,
    ToolCall,
    read_conversation,
)
from rubricflow.engine import evaluate, evaluate_many, evaluate_sync
from rubricflow.engine.executor import evaluate_cases
from rubricflow.engine.meta import MetaReport, assess_rubric
from rubricflow.errors import (
    ArtifactConflictError,
    AuthenticationError,
    ConfigurationError,
    ContentBoundsError,
    ContentValidationError,
    DecisionTimeoutError,
    FormatDetectionError,
    IllegalTransitionError,
    NotFoundError,
    PermissionDeniedError,
    PluginConflictError,
    PluginError,
    PreconditionFailedError,
    Problem,
    ReviewError,
    RewardError,
    RubricflowError,
    RubricLoadError,
    RubricValidationError,
    RubricVersionConflictError,
    SchemaOutdatedError,
    ScoringError,
    ServerError,
    StoreError,
    UnsafeImportError,
    WebhookError,
)
from rubricflow.formats import (
    LoadedFile,
    RubricFormat,
    dump_rubric,
    load_document,
    load_file,
    load_rubric,
)
from rubricflow.hookspecs import hookimpl, hookspec
from rubricflow.model import (
    Criterion,
    Example,
    Level,
    Rubric,
    Scale,
    ScoreRange,
    Scoring,
    Subcriterion,
    parse_rubric,
)
from rubricflow.plugins import PluginRegistry, create_plugin_manager
from rubricflow.results import CriterionResult, Evaluation, Target
from rubricflow.runs import RunData, RunInfo, RunSummary, read_results_file, summarize
from rubricflow.scorers.base import CheckResult, Scorer, ScoringContext
from rubricflow.suites import Suite, SuiteCase, SuiteError, load_suite
from rubricflow.targets import TargetInputError
from rubricflow.validation import FileReport, validate_file

if TYPE_CHECKING:
    from rubricflow.compare import RunComparison, compare_runs
    from rubricflow.generation import (
        GeneratedRubric,
        GroupRanking,
        generate_rubric,
        generate_rubric_sync,
        rank_group,
    )
    from rubricflow.llm.panel import Panel
    from rubricflow.report import render_report, write_report
    from rubricflow.review import ArtifactRegistry, ArtifactType, RubricBinding
    from rubricflow.store import RubricRegistry, Store
    from rubricflow.traces import read_openai_chat, read_otel

__version__ = _metadata.version("rubricflow")

# The store and the review service pull in SQLAlchemy, the report Jinja; they load on
# first use.
_LAZY = {
    "RunComparison": "rubricflow.compare",
    "compare_runs": "rubricflow.compare",
    "GeneratedRubric": "rubricflow.generation",
    "GroupRanking": "rubricflow.generation",
    "generate_rubric": "rubricflow.generation",
    "generate_rubric_sync": "rubricflow.generation",
    "rank_group": "rubricflow.generation",
    "Panel": "rubricflow.llm.panel",
    "render_report": "rubricflow.report",
    "write_report": "rubricflow.report",
    "ArtifactRegistry": "rubricflow.review",
    "ArtifactType": "rubricflow.review",
    "RubricBinding": "rubricflow.review",
    "RubricRegistry": "rubricflow.store",
    "Store": "rubricflow.store",
    "read_openai_chat": "rubricflow.traces",
    "read_otel": "rubricflow.traces",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'rubricflow' has no attribute {name!r}")


__all__ = [
    "ArtifactConflictError",
    "ArtifactRegistry",
    "ArtifactType",
    "AuthenticationError",
    "BatchRun",
    "CalibrationError",
    "CalibrationReport",
    "CheckResult",
    "ConfigurationError",
    "ContentBoundsError",
    "ContentValidationError",
    "Conversation",
    "ConversationBounds",
    "Criterion",
    "CriterionResult",
    "DecisionTimeoutError",
    "Evaluation",
    "Example",
    "FileReport",
    "FormatDetectionError",
    "GeneratedRubric",
    "GroupRanking",
    "IllegalTransitionError",
    "ImagePart",
    "LabelledExample",
    "Level",
    "LoadedFile",
    "Message",
    "MetaReport",
    "NotFoundError",
    "Panel",
    "PermissionDeniedError",
    "PluginConflictError",
    "PluginError",
    "PluginRegistry",
    "PreconditionFailedError",
    "Problem",
    "ReviewError",
    "RewardError",
    "Rubric",
    "RubricBinding",
    "RubricFormat",
    "RubricLoadError",
    "RubricRegistry",
    "RubricValidationError",
    "RubricVersionConflictError",
    "RubricflowError",
    "RunComparison",
    "RunData",
    "RunInfo",
    "RunSummary",
    "Scale",
    "SchemaOutdatedError",
    "ScoreRange",
    "Scorer",
    "Scoring",
    "ScoringContext",
    "ScoringError",
    "ServerError",
    "Store",
    "StoreError",
    "Subcriterion",
    "Suite",
    "SuiteCase",
    "SuiteError",
    "Target",
    "TargetInputError",
    "TextPart",
    "ToolCall",
    "UnsafeImportError",
    "WebhookError",
    "__version__",
    "assess_rubric",
    "bootstrap_interval",
    "calibrate",
    "cohen_kappa",
    "compare_runs",
    "confusion_matrix",
    "create_plugin_manager",
    "dump_rubric",
    "estimate_pass_rate",
    "evaluate",
    "evaluate_cases",
    "evaluate_many",
    "evaluate_sync",
    "generate_rubric",
    "generate_rubric_sync",
    "hookimpl",
    "hookspec",
    "load_document",
    "load_file",
    "load_rubric",
    "load_suite",
    "parse_rubric",
    "rank_group",
    "read_conversation",
    "read_labels",
    "read_openai_chat",
    "read_otel",
    "read_results_file",
    "render_report",
    "summarize",
    "validate_file",
    "weighted_kappa",
    "write_report",
]
