"""rubricflow.testing: the helpers a plugin's own tests use work as documented."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from rubricflow import (
    ConfigurationError,
    Criterion,
    CriterionResult,
    PluginConflictError,
    Scorer,
    ScoringContext,
    Target,
    evaluate,
    hookimpl,
    parse_rubric,
)
from rubricflow.plugins import BLOCK_ENV, BUILTIN_PLUGINS, create_plugin_manager
from rubricflow.scorers.base import result_from_value
from rubricflow.testing import (
    JUDGE_SCORERS,
    UNABLE,
    JudgeCall,
    ScriptedJudge,
    Unable,
    make_plugins,
    make_target,
)

BUILTINS = [name for name, _ in BUILTIN_PLUGINS]


@pytest.fixture(autouse=True)
def _no_blocking_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BLOCK_ENV, raising=False)


# --- make_target ----------------------------------------------------------------------------


def test_make_target_builds_a_target_with_any_field() -> None:
    target = make_target(
        "Hello", id=7, query="Say hello", reference=["Hi", "Hello"], metadata={"lang": "en"}
    )

    assert isinstance(target, Target)
    assert target.content == "Hello"
    assert target.id == "7"
    assert target.query == "Say hello"
    assert target.reference == ["Hi", "Hello"]
    assert target.metadata == {"lang": "en"}


def test_make_target_takes_json_content_and_defaults() -> None:
    target = make_target({"answer": 42})

    assert target.content == {"answer": 42}
    assert '"answer": 42' in target.text
    assert target.id is None and target.reference is None and target.metadata == {}
    assert make_target().content == ""


def test_make_target_rejects_unknown_fields() -> None:
    with pytest.raises(ConfigurationError, match="refrence"):
        make_target("x", refrence="typo")


# --- make_plugins ---------------------------------------------------------------------------


class Shouting:
    """A minimal scorer plugin object, as a plugin author would write one."""

    __name__ = "shouting-plugin"

    class Scorer:
        name = "shouting"
        description = "share of letters that are not upper case"

        async def score(
            self, criterion: Criterion, target: Target, context: ScoringContext
        ) -> CriterionResult:
            letters = [ch for ch in target.text if ch.isalpha()]
            calm = sum(not ch.isupper() for ch in letters) / len(letters) if letters else 1.0
            return result_from_value(criterion, context, self.name, calm, what="shouting")

    @hookimpl
    def rubricflow_scorers(self) -> Sequence[Scorer]:
        return [self.Scorer()]

    @hookimpl
    def rubricflow_check_functions(self) -> dict[str, Any]:
        return {"says_please": lambda target: "please" in target.text.lower()}


def test_make_plugins_registers_the_builtins_and_the_given_plugins_only() -> None:
    registry = make_plugins(Shouting())

    names = [info.name for info in registry.plugins()]
    assert names == [*BUILTINS, "shouting-plugin"]  # no installed entry-point plugin leaks in
    assert {"deterministic", "schema", "shouting"} <= set(registry.scorers)
    assert "says_please" in registry.functions and "non_empty" in registry.functions


def test_make_plugins_without_arguments_is_just_the_builtins() -> None:
    assert [info.name for info in make_plugins().plugins()] == BUILTINS


def test_make_plugins_can_leave_out_builtins_or_load_entry_points() -> None:
    alone = make_plugins(Shouting(), builtins=False)
    installed = make_plugins(entry_points=True)

    assert [info.name for info in alone.plugins()] == ["shouting-plugin"]
    assert set(alone.scorers) == {"shouting"}
    assert [i.name for i in installed.plugins()] == [
        i.name for i in create_plugin_manager().plugins()
    ]


def test_a_given_plugin_replaces_a_builtin_of_the_same_name() -> None:
    """So a ScriptedJudge can stand in for built-in LLM judges in tests."""

    class FakeDeterministic:
        name = "deterministic"
        description = "always 0.5"

        async def score(
            self, criterion: Criterion, target: Target, context: ScoringContext
        ) -> CriterionResult:
            return result_from_value(criterion, context, self.name, 0.5, what="fake")

    class Replacement:
        __name__ = "replacement"

        @hookimpl
        def rubricflow_scorers(self) -> Sequence[Scorer]:
            return [FakeDeterministic()]

        @hookimpl
        def rubricflow_check_functions(self) -> dict[str, Any]:
            return {"non_empty": lambda target: False}

    registry = make_plugins(Replacement())

    assert isinstance(registry.scorers["deterministic"], FakeDeterministic)
    assert registry.functions["non_empty"](make_target("x")) is False
    assert "schema" in registry.scorers and "no_secrets" in registry.functions
    infos = {info.name: info for info in registry.plugins()}
    assert "deterministic" not in infos["builtin-scorers"].scorers
    assert "schema" in infos["builtin-scorers"].scorers
    assert infos["replacement"].scorers == ["deterministic"]
    assert infos["builtin-scorers"].distribution == "rubricflow"
    plain = make_plugins()
    assert set(registry.formats) == set(plain.formats)
    assert set(registry.providers) == set(plain.providers)
    assert set(registry.scorers) == set(plain.scorers)
    assert set(registry.functions) == set(plain.functions)
    assert [i.name for i in registry.plugins()] == [*BUILTINS, "replacement"]


def test_a_clash_between_given_plugins_is_still_a_conflict() -> None:
    class Other(Shouting):
        __name__ = "other-plugin"

    with pytest.raises(PluginConflictError, match="shouting"):
        make_plugins(Shouting(), Other())


def test_make_plugins_honours_the_disable_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(BLOCK_ENV, "shouting-plugin,builtin-formats")

    registry = make_plugins(Shouting())

    assert [info.name for info in registry.plugins()] == [
        name for name in BUILTINS if name != "builtin-formats"
    ]


# --- ScriptedJudge --------------------------------------------------------------------------

RUBRIC = parse_rubric(
    {
        "id": "judged",
        "pass_threshold": 0.7,
        "criteria": [
            {"id": "polite", "description": "The reply is polite."},
            {
                "id": "depth",
                "levels": [
                    {"id": "shallow", "score": 0.0},
                    {"id": "adequate", "score": 0.6},
                    {"id": "thorough", "score": 1.0},
                ],
            },
            {"id": "helpful", "score_ranges": {"0": "no", "5": "partly", "8": "yes"}},
            {"id": "calm", "weight": 2, "scoring": {"method": "shouting"}},
        ],
    }
)


def test_the_judge_registers_the_llm_scorer_names() -> None:
    judge = ScriptedJudge()
    registry = make_plugins(judge)

    assert JUDGE_SCORERS == ("llm_verdict", "llm_oneshot", "llm_decode", "llm_score")
    assert set(JUDGE_SCORERS) <= set(registry.scorers)
    for name in JUDGE_SCORERS:  # it stands in for any built-in LLM judge of that name
        assert registry.scorers[name].description.startswith("scripted stand-in")
        for info in registry.plugins():
            if info.name != "scripted-judge":
                assert name not in info.scorers
    info = next(i for i in registry.plugins() if i.name == "scripted-judge")
    assert info.scorers == list(JUDGE_SCORERS)
    assert all(isinstance(registry.scorers[name], Scorer) for name in JUDGE_SCORERS)


async def test_the_judge_answers_each_kind_of_llm_criterion_and_records_calls() -> None:
    judge = ScriptedJudge({"polite": "MET", "depth": "adequate", "helpful": 8})
    plugins = make_plugins(Shouting(), judge)

    evaluation = await evaluate(RUBRIC, make_target("thank you, sir", id="t1"), plugins=plugins)

    by_id = {r.criterion_id: r for r in evaluation.criteria}
    assert (by_id["polite"].scorer, by_id["polite"].verdict, by_id["polite"].score) == (
        "llm_verdict",
        "MET",
        1.0,
    )
    assert (by_id["depth"].scorer, by_id["depth"].level, by_id["depth"].score) == (
        "llm_decode",
        "adequate",
        0.6,
    )
    helpful = by_id["helpful"]
    assert (helpful.scorer, helpful.score, helpful.judge_score) == ("llm_score", 0.8, 8.0)
    assert by_id["calm"].score == 1.0
    # weights 1, 1, 1, 2: (1 + 0.6 + 0.8 + 2) / 5
    assert evaluation.score == pytest.approx(0.88)
    assert evaluation.verdict == "pass"
    assert sorted(judge.calls, key=lambda c: c.criterion_id) == [
        JudgeCall("llm_decode", "depth", "t1", "thank you, sir", "adequate"),
        JudgeCall("llm_score", "helpful", "t1", "thank you, sir", 8),
        JudgeCall("llm_verdict", "polite", "t1", "thank you, sir", "MET"),
    ]
    assert judge.calls_for("helpful")[0].answer == 8


@pytest.mark.parametrize(
    ("answer", "status", "score"),
    [
        ("MET", "scored", 1.0),
        ("met", "scored", 1.0),
        ("UNMET", "scored", 0.0),
        (True, "scored", 1.0),
        (False, "scored", 0.0),
        (7, "scored", 0.7),
        (0, "scored", 0.0),
        (10.0, "scored", 1.0),
        (11, "unable_to_evaluate", None),
        (-1, "unable_to_evaluate", None),
        (float("nan"), "unable_to_evaluate", None),
        ("maybe", "unable_to_evaluate", None),
        ("unable", "unable_to_evaluate", None),
        (UNABLE, "unable_to_evaluate", None),
        (Unable("rate limited three times"), "unable_to_evaluate", None),
        (RuntimeError("provider down"), "error", None),
        (TimeoutError, "error", None),
    ],
)
async def test_scripted_answers_map_to_results(answer: Any, status: str, score: Any) -> None:
    rubric = parse_rubric({"id": "one", "criteria": [{"id": "c"}]})
    plugins = make_plugins(ScriptedJudge({"c": answer}))

    evaluation = await evaluate(rubric, "text", plugins=plugins)

    (result,) = evaluation.criteria
    assert result.status == status, result.notes
    assert result.score == score
    if status != "scored":
        assert result.verdict is None and result.notes
        assert evaluation.verdict == "incomplete"


async def test_failures_say_what_happened() -> None:
    rubric = parse_rubric({"id": "r", "criteria": [{"id": "a"}, {"id": "b"}, {"id": "c"}]})
    judge = ScriptedJudge(
        {"a": RuntimeError("provider down"), "b": Unable("no JSON after 3 tries")}
    )

    evaluation = await evaluate(rubric, "text", plugins=make_plugins(judge))

    notes = {r.criterion_id: r.notes for r in evaluation.criteria}
    assert "RuntimeError: provider down" in notes["a"]
    assert notes["b"] == "no JSON after 3 tries"
    assert "no answer for criterion 'c'" in notes["c"]  # left out of the script


async def test_an_unknown_level_id_is_unable_to_evaluate_naming_the_valid_ones() -> None:
    judge = ScriptedJudge({"depth": "excellent", "polite": "MET", "helpful": 5})
    plugins = make_plugins(Shouting(), judge)

    evaluation = await evaluate(RUBRIC, "calm text", plugins=plugins)

    depth = evaluation.criterion("depth")
    assert depth is not None and depth.status == "unable_to_evaluate"
    assert "shallow, adequate, thorough" in depth.notes


async def test_default_and_callable_answers() -> None:
    rubric = parse_rubric({"id": "r", "criteria": [{"id": "a"}, {"id": "b"}]})

    def by_target(criterion: Criterion, target: Target) -> str:
        return "MET" if "good" in target.text else "UNMET"

    judge = ScriptedJudge({"a": by_target}, default=UNABLE)
    plugins = make_plugins(judge)

    good = await evaluate(rubric, make_target("good text", id="g"), plugins=plugins)
    bad = await evaluate(rubric, make_target("bad text", id="b"), plugins=plugins)

    assert good.criterion("a").verdict == "MET"  # type: ignore[union-attr]
    assert bad.criterion("a").verdict == "UNMET"  # type: ignore[union-attr]
    assert good.criterion("b").status == "unable_to_evaluate"  # type: ignore[union-attr]
    assert [(c.target_id, c.criterion_id) for c in judge.calls if c.criterion_id == "a"] == [
        ("g", "a"),
        ("b", "a"),
    ]


async def test_the_judge_scores_in_a_mixed_rubric_with_deterministic_checks() -> None:
    rubric = parse_rubric(
        {
            "id": "mixed",
            "criteria": [
                {"id": "tone", "weight": 3},
                {
                    "id": "length",
                    "weight": 1,
                    "scoring": {
                        "method": "deterministic",
                        "function": "word_count_between",
                        "config": {"min": 1, "max": 3},
                    },
                },
            ],
        }
    )
    plugins = make_plugins(ScriptedJudge({"tone": 6}))

    evaluation = await evaluate(rubric, "far too many words here", plugins=plugins)

    assert evaluation.criterion("length").verdict == "UNMET"  # type: ignore[union-attr]
    assert evaluation.score == pytest.approx((3 * 0.6 + 0) / 4)


async def test_one_shot_criteria_are_answered_together_from_the_script() -> None:
    rubric = parse_rubric(
        {
            "id": "oneshot",
            "criteria": [
                {"id": "a", "scoring": {"method": "llm_oneshot"}},
                {"id": "b", "scoring": {"method": "llm_oneshot"}},
                {"id": "c", "scoring": {"method": "llm_oneshot"}},
            ],
        }
    )
    judge = ScriptedJudge({"a": "MET", "b": False})

    evaluation = await evaluate(rubric, "text", plugins=make_plugins(judge))

    assert [(r.criterion_id, r.status, r.verdict) for r in evaluation.criteria] == [
        ("a", "scored", "MET"),
        ("b", "scored", "UNMET"),
        ("c", "unable_to_evaluate", None),  # left out of the answer
    ]
    assert [(c.scorer, c.criterion_id) for c in judge.calls] == [
        ("llm_oneshot", "a"),
        ("llm_oneshot", "b"),
        ("llm_oneshot", "c"),
    ]


def test_a_judge_can_be_named_so_two_can_coexist_in_different_registries() -> None:
    first = make_plugins(ScriptedJudge(name="judge-a"))
    second = make_plugins(ScriptedJudge(name="judge-b"))

    assert "judge-a" in [i.name for i in first.plugins()]
    assert "judge-b" in [i.name for i in second.plugins()]


# --- the plugin author guide's example ------------------------------------------------------

DOCS = Path(__file__).resolve().parent.parent / "docs" / "plugins.md"


def _docs_files() -> dict[str, str]:
    """The guide's example files: Python blocks whose first line is `# <path>`."""
    files = {}
    for block in re.findall(r"```python\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.S):
        first = block.splitlines()[0]
        if first.startswith("# ") and first.endswith(".py"):
            files[first[2:]] = block
    return files


def test_the_plugin_guides_example_plugin_passes_its_example_tests(tmp_path: Path) -> None:
    files = _docs_files()
    assert set(files) == {"my_checks/__init__.py", "tests/test_my_checks.py"}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != BLOCK_ENV}
    env["PYTHONPATH"] = str(tmp_path)

    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout
