"""The `deterministic` scorer: what a check function returns becomes a criterion result, and
every way a check can fail is an `error` result, never a score."""

from __future__ import annotations

import asyncio
import math
import sys
from typing import Any

import pytest

from rubricflow import create_plugin_manager, hookimpl, parse_rubric
from rubricflow.engine import evaluate
from rubricflow.plugins import PluginRegistry
from rubricflow.results import CriterionResult, Evaluation, Target
from rubricflow.scorers.base import CheckResult

LEVELS = [
    {"id": "ok", "score": 0.5},
    {"id": "great", "score": 1.0},
    {"id": "poor", "score": 0.0},
]


def return_config_value(target: Target, value: Any = None) -> Any:
    return value


def level_from_content(target: Target) -> str:
    return target.text


def with_evidence(target: Target) -> CheckResult:
    return CheckResult(False, ["found 3 typos", "line 2 too long"], notes="style problems")


def exploding(target: Target) -> bool:
    raise RuntimeError("the check blew up on purpose")


def exits(target: Target) -> bool:
    sys.exit(3)


async def slow_and_async(target: Target) -> CheckResult:
    await asyncio.sleep(0.01)
    return CheckResult("MET", [f"async saw {target.text!r}"])


def options_echo(target: Target, *, greeting: str, times: int = 1) -> CheckResult:
    return CheckResult(True, [f"{greeting}x{times}"])


def takes_no_options(target: Target) -> bool:
    return True


def imported_check(target: Target) -> CheckResult:
    return CheckResult(0.75, ["imported and run"])


class ChecksPlugin:
    @hookimpl
    def rubricflow_check_functions(self) -> dict[str, Any]:
        return {
            "value": return_config_value,
            "level_from_content": level_from_content,
            "with_evidence": with_evidence,
            "exploding": exploding,
            "exits": exits,
            "slow_and_async": slow_and_async,
            "options_echo": options_echo,
            "takes_no_options": takes_no_options,
        }


@pytest.fixture
def registry() -> PluginRegistry:
    return create_plugin_manager(plugins=[ChecksPlugin()], load_entry_points=False)


def criterion(function: str, *, levels: bool = False, **extra: Any) -> dict[str, Any]:
    scoring: dict[str, Any] = {"method": "deterministic", "function": function}
    if "config" in extra:
        scoring["config"] = extra.pop("config")
    data: dict[str, Any] = {"id": "c", "scoring": scoring, **extra}
    if levels:
        data["levels"] = LEVELS
    return data


async def run(
    registry: PluginRegistry,
    function: str,
    content: Any = "some text",
    *,
    levels: bool = False,
    config: dict[str, Any] | None = None,
    allow_import: bool = False,
) -> tuple[CriterionResult, Evaluation]:
    extra = {} if config is None else {"config": config}
    rubric = parse_rubric({"id": "r", "criteria": [criterion(function, levels=levels, **extra)]})
    evaluation = await evaluate(rubric, content, plugins=registry, allow_import=allow_import)
    return evaluation.criteria[0], evaluation


# --- what a check returns --------------------------------------------------------------


@pytest.mark.parametrize(("level", "score"), [("great", 1.0), ("ok", 0.5), ("poor", 0.0)])
async def test_a_level_id_picks_that_level(
    registry: PluginRegistry, level: str, score: float
) -> None:
    result, _ = await run(registry, "level_from_content", level, levels=True)

    assert result.status == "scored"
    assert result.level == level
    assert result.score == score


@pytest.mark.parametrize(("value", "verdict", "score"), [(True, "MET", 1.0), (False, "UNMET", 0.0)])
async def test_a_bool_is_met_or_unmet_for_a_binary_criterion(
    registry: PluginRegistry, value: bool, verdict: str, score: float
) -> None:
    result, evaluation = await run(registry, "value", config={"value": value})

    assert result.status == "scored"
    assert result.verdict == verdict
    assert result.score == score
    assert result.level is None
    assert evaluation.verdict == ("pass" if value else "fail")


@pytest.mark.parametrize(("value", "level", "score"), [(True, "great", 1.0), (False, "poor", 0.0)])
async def test_a_bool_is_the_highest_or_lowest_level_of_a_graded_criterion(
    registry: PluginRegistry, value: bool, level: str, score: float
) -> None:
    result, _ = await run(registry, "value", levels=True, config={"value": value})

    assert result.status == "scored"
    assert result.level == level
    assert result.score == score


@pytest.mark.parametrize("value", [0.0, 0.25, 1.0, 1])
async def test_a_number_in_0_to_1_is_the_score(registry: PluginRegistry, value: float) -> None:
    result, evaluation = await run(registry, "value", config={"value": value})

    assert result.status == "scored"
    assert result.score == float(value)
    assert evaluation.score == float(value)


async def test_met_and_unmet_strings_work_for_a_binary_criterion(registry: PluginRegistry) -> None:
    met, _ = await run(registry, "value", config={"value": "MET"})
    unmet, _ = await run(registry, "value", config={"value": "UNMET"})

    assert (met.status, met.verdict, met.score) == ("scored", "MET", 1.0)
    assert (unmet.status, unmet.verdict, unmet.score) == ("scored", "UNMET", 0.0)


async def test_a_check_result_keeps_its_evidence_and_notes(registry: PluginRegistry) -> None:
    result, evaluation = await run(registry, "with_evidence")

    assert result.status == "scored"
    assert result.verdict == "UNMET"
    assert result.evidence == ("found 3 typos", "line 2 too long")
    assert result.notes == "style problems"
    assert evaluation.verdict == "fail"


async def test_an_async_check_is_awaited(registry: PluginRegistry) -> None:
    result, _ = await run(registry, "slow_and_async", "hello")

    assert result.status == "scored"
    assert result.verdict == "MET"
    assert result.evidence == ("async saw 'hello'",)


async def test_scoring_config_is_passed_as_keyword_arguments(registry: PluginRegistry) -> None:
    result, _ = await run(registry, "options_echo", config={"greeting": "hi", "times": 3})

    assert result.status == "scored"
    assert result.evidence == ("hix3",)


async def test_config_for_a_check_that_takes_no_options_is_an_error(
    registry: PluginRegistry,
) -> None:
    result, evaluation = await run(registry, "takes_no_options", config={"strict": True})

    assert result.status == "error"
    assert "strict" in result.notes
    assert evaluation.verdict == "incomplete"


# --- what is an error ------------------------------------------------------------------


async def test_an_unknown_level_id_is_an_error_naming_the_valid_ids(
    registry: PluginRegistry,
) -> None:
    result, evaluation = await run(registry, "level_from_content", "excellent", levels=True)

    assert result.status == "error"
    assert result.score is None and result.level is None and result.verdict is None
    assert "'excellent'" in result.notes
    for level_id in ("ok", "great", "poor"):
        assert level_id in result.notes
    assert evaluation.verdict == "incomplete"


async def test_an_unknown_verdict_word_on_a_binary_criterion_is_an_error(
    registry: PluginRegistry,
) -> None:
    result, _ = await run(registry, "value", config={"value": "maybe"})

    assert result.status == "error"
    assert "MET" in result.notes and "UNMET" in result.notes


@pytest.mark.parametrize(
    "value",
    [1.5, -0.1, math.nan, math.inf, 2],
    ids=["above-1", "below-0", "nan", "inf", "int-2"],
)
async def test_a_number_outside_0_to_1_is_an_error(value: float) -> None:
    def returns(target: Target) -> float:
        return value

    class Plugin:
        @hookimpl
        def rubricflow_check_functions(self) -> dict[str, Any]:
            return {"returns": returns}

    own = create_plugin_manager(plugins=[Plugin()], load_entry_points=False)
    result, evaluation = await run(own, "returns")

    assert result.status == "error"
    assert result.score is None
    assert "0..1" in result.notes
    assert evaluation.verdict == "incomplete"
    assert evaluation.passed is False


@pytest.mark.parametrize("value", [None, {"score": 1.0}, [True], b"MET"], ids=repr)
async def test_a_value_of_the_wrong_type_is_an_error(value: Any) -> None:
    def returns(target: Target) -> Any:
        return value

    class Plugin:
        @hookimpl
        def rubricflow_check_functions(self) -> dict[str, Any]:
            return {"returns": returns}

    own = create_plugin_manager(plugins=[Plugin()], load_entry_points=False)
    result, evaluation = await run(own, "returns")

    assert result.status == "error"
    assert result.score is None and result.verdict is None
    assert "level id" in result.notes
    assert evaluation.verdict == "incomplete"


async def test_a_raising_check_is_an_error_with_the_message_and_evaluate_does_not_raise(
    registry: PluginRegistry,
) -> None:
    result, evaluation = await run(registry, "exploding")

    assert result.status == "error"
    assert "the check blew up on purpose" in result.notes
    assert "RuntimeError" in result.notes
    assert evaluation.verdict == "incomplete"
    assert "the check blew up on purpose" in evaluation.feedback


async def test_a_check_calling_sys_exit_is_an_error_not_the_end_of_the_process(
    registry: PluginRegistry,
) -> None:
    result, evaluation = await run(registry, "exits")

    assert result.status == "error"
    assert "SystemExit" in result.notes
    assert evaluation.verdict == "incomplete"


async def test_an_unregistered_module_function_is_refused_without_allow_import(
    registry: PluginRegistry,
) -> None:
    result, evaluation = await run(registry, "os.path:isfile")

    assert result.status == "error"
    assert "allow_import" in result.notes
    assert "'os.path:isfile'" in result.notes
    assert evaluation.verdict == "incomplete"


async def test_allow_import_imports_and_runs_a_module_function(registry: PluginRegistry) -> None:
    name = f"{__name__}:imported_check"

    refused, _ = await run(registry, name)
    result, evaluation = await run(registry, name, allow_import=True)

    assert refused.status == "error"
    assert result.status == "scored"
    assert result.score == 0.75
    assert result.evidence == ("imported and run",)
    assert evaluation.verdict == "pass"


async def test_allow_import_of_a_missing_module_is_an_error(registry: PluginRegistry) -> None:
    result, evaluation = await run(
        registry, "no_such_module_for_rubricflow_tests:check", allow_import=True
    )

    assert result.status == "error"
    assert "no_such_module_for_rubricflow_tests" in result.notes
    assert evaluation.verdict == "incomplete"


async def test_an_unknown_registered_name_is_an_error_listing_what_is_registered(
    registry: PluginRegistry,
) -> None:
    result, evaluation = await run(registry, "is_friendly")

    assert result.status == "error"
    assert "'is_friendly'" in result.notes
    for known in ("non_empty", "word_count_between", "options_echo", "with_evidence"):
        assert known in result.notes
    assert evaluation.verdict == "incomplete"


# --- an error is never a pass ------------------------------------------------------------


async def test_an_error_criterion_never_passes_under_the_default_policy(
    registry: PluginRegistry,
) -> None:
    rubric = parse_rubric(
        {
            "id": "r",
            "pass_threshold": 0.5,
            "criteria": [
                {
                    "id": "heavy",
                    "weight": 10,
                    "scoring": {"method": "deterministic", "function": "non_empty"},
                },
                {"id": "broken", "scoring": {"method": "deterministic", "function": "exploding"}},
            ],
        }
    )

    evaluation = await evaluate(rubric, "plenty of content", plugins=registry)

    assert rubric.unscored_policy == "fail_closed"
    assert evaluation.criterion("heavy").status == "scored"  # type: ignore[union-attr]
    assert evaluation.criterion("broken").status == "error"  # type: ignore[union-attr]
    assert evaluation.verdict == "incomplete"
    assert evaluation.passed is False
    assert evaluation.coverage == pytest.approx(10 / 11)
