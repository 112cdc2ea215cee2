"""The attribute, event and span names rubricflow's telemetry uses: the OpenTelemetry
GenAI semantic conventions where they have a name for the thing, `rubricflow.*` where
they do not."""

from __future__ import annotations

INSTRUMENTATION_NAME = "rubricflow"

# GenAI semantic conventions (gen_ai.*), and the general error.type / server.*
OPERATION_NAME = "gen_ai.operation.name"
CHAT = "chat"
PROVIDER_NAME = "gen_ai.provider.name"
SYSTEM = "gen_ai.system"  # the older name of gen_ai.provider.name, for older backends
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
ERROR_TYPE = "error.type"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"

EVALUATION_RESULT = "gen_ai.evaluation.result"
EVALUATION_NAME = "gen_ai.evaluation.name"
SCORE_VALUE = "gen_ai.evaluation.score.value"
SCORE_LABEL = "gen_ai.evaluation.score.label"
EXPLANATION = "gen_ai.evaluation.explanation"

# rubricflow's own
RUBRIC_ID = "rubricflow.rubric.id"
RUBRIC_VERSION = "rubricflow.rubric.version"
TARGET_ID = "rubricflow.target.id"
VERDICT = "rubricflow.evaluation.verdict"
PASSED = "rubricflow.evaluation.passed"
SCORE = "rubricflow.evaluation.score"
COVERAGE = "rubricflow.evaluation.coverage"
CRITERION_ID = "rubricflow.criterion.id"
CRITERION_IDS = "rubricflow.criterion.ids"
CRITERION_STATUS = "rubricflow.criterion.status"
SCORER = "rubricflow.scorer"
CACHED_CALLS = "rubricflow.judge.cached_calls"
ATTEMPT = "rubricflow.judge.attempt"
OUTCOME = "rubricflow.judge.outcome"

TRANSITION_EVENT = "rubricflow.artifact.transition"
STORED_EVENT = "rubricflow.evaluation.stored"
ARTIFACT_ID = "rubricflow.artifact.id"
TRANSITION_FROM = "rubricflow.transition.from"
TRANSITION_TO = "rubricflow.transition.to"
TRANSITION_TRIGGER = "rubricflow.transition.trigger"
TRANSITION_ACTOR = "rubricflow.transition.actor"
TRANSITION_REASON = "rubricflow.transition.reason"
TRANSITION_SEQ = "rubricflow.transition.seq"
REVISION = "rubricflow.artifact.revision"
EVALUATION_ID = "rubricflow.evaluation.id"
JUDGE_CALLS = "rubricflow.evaluation.judge_calls"
