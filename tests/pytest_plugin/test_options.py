"""The marker, the options and the rubric lookup: files first (--rubric-dir, the ini's
rubric_paths, a path next to the test), then a store (--rubric-db); clear errors; JUnit
properties; async tests. Deterministic rubrics need no judge at all."""

from __future__ import annotations

import asyncio
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from llm.scripted import ScriptedServer

from rubricflow import parse_rubric
from rubricflow.store import Store

from .conftest import CHECK, spec


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess("-p", "no:cacheprovider", *args)


def test_the_marker_is_registered_with_help(pytester: pytest.Pytester) -> None:
    result = _run(pytester, "--markers")
    result.stdout.fnmatch_lines(
        ["@pytest.mark.rubric(ref): the rubric the `rubric` fixture gives*"]
    )
    help_text = _run(pytester, "--help").stdout.str()
    for option in ("--rubric-llm=SPEC", "--rubric-dir=PATH", "--rubric-db=URL"):
        assert option in help_text
    assert "--rubric-replay=FILE" in help_text and "--rubric-record=FILE" in help_text
    assert "rubric_paths" in help_text


def test_ini_paths_a_file_next_to_the_test_and_an_async_test(pytester: pytest.Pytester) -> None:
    """No judge is configured: a deterministic rubric never asks one."""
    (pytester.mkdir("rubrics") / "check.yaml").write_text(CHECK)
    (pytester.path / "local-check.yaml").write_text(CHECK.replace("no-secrets", "local"))
    pytester.makeini(
        "[pytest]\nasyncio_default_fixture_loop_scope = function\nrubric_paths = rubrics\n"
    )
    pytester.makepyfile(
        test_checks="""
        import pytest
        from rubricflow.pytest_plugin import assert_passes, assert_passes_async

        @pytest.mark.rubric("no-secrets")
        def test_from_ini(rubric):
            evaluation = assert_passes(rubric, "All good.")
            assert evaluation.verdict == "pass"

        @pytest.mark.rubric("local-check.yaml")
        def test_by_path(rubric):
            assert rubric.id == "local"
            assert_passes(rubric, "my key is sk-123")

        @pytest.mark.parametrize("rubric", ["no-secrets@1.0.0"], indirect=True)
        def test_indirect(rubric, assert_passes):
            assert_passes(rubric, "fine")

        @pytest.mark.asyncio
        async def test_async():
            await assert_passes_async("no-secrets", "fine")
            assert_passes("no-secrets", "fine")  # the blocking form, inside a running loop
        """
    )
    result = _run(pytester)
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*AssertionError: rubric local@1.0.0 did not pass for target sha256:*: "
            "verdict FAIL, score 0% < pass mark *",
            "*- no-key (no-key): * (score 0.00)",
            "*fix: meet the requirement: Contains no API key.",
        ]
    )


def test_lookup_errors_name_what_to_do(pytester: pytest.Pytester, rubrics: Path) -> None:
    pytester.makepyfile(
        test_errors="""
        import pytest
        from rubricflow.pytest_plugin import assert_passes

        @pytest.mark.rubric("answer-quality@9.9.9")
        def test_unknown_version(rubric):
            pass

        def test_no_marker(rubric):
            pass

        @pytest.mark.rubric("missing.yaml")
        def test_missing_file(rubric):
            pass

        def test_bad_target_field():
            assert_passes("no-secrets", "x", colour="red")
        """
    )
    result = _run(pytester, "--rubric-dir", str(rubrics))
    result.assert_outcomes(errors=3, failed=1)
    text = result.stdout.str()
    assert "rubric answer-quality@9.9.9 not found: looked in rubric files in" in text
    assert "(found answer-quality versions 1.0.0)" in text
    assert "--rubric-dir DIR or the ini option rubric_paths" in text
    assert "uses the `rubric` fixture without a rubric: mark it @pytest.mark.rubric(" in text
    assert "rubric file missing.yaml not found" in text
    assert "assert_passes got colour, which a target does not have" in text
    assert "Traceback" not in text


def test_a_rubric_from_the_store(pytester: pytest.Pytester, tmp_path: Path) -> None:
    db = f"sqlite+aiosqlite:///{tmp_path / 'rubrics.db'}"

    async def register() -> None:
        async with await Store.open(db, upgrade=True) as store:
            for version in ("1.0.0", "1.2.0"):
                text = CHECK.replace("version: 1.0.0", f"version: {version}")
                await store.rubrics.register(parse_rubric(yaml.safe_load(text)))

    asyncio.run(register())
    pytester.makepyfile(
        test_store="""
        import pytest

        @pytest.mark.rubric("no-secrets")
        def test_latest(rubric, assert_passes):
            assert rubric.version == "1.2.0"
            assert_passes(rubric, "fine")

        @pytest.mark.rubric("no-secrets@1.0.0")
        def test_pinned(rubric):
            assert rubric.version == "1.0.0"
        """
    )
    _run(pytester, "--rubric-db", db).assert_outcomes(passed=2)
    # a store that does not exist is an error, and no empty store is created
    missing = tmp_path / "missing.db"
    result = _run(pytester, "--rubric-db", str(missing))
    result.assert_outcomes(errors=2)
    assert f"--rubric-db {missing}: no store at" in result.stdout.str()
    assert not missing.exists()


def test_junit_properties_carry_each_evaluation(
    pytester: pytest.Pytester, server: ScriptedServer, rubrics: Path
) -> None:
    pytester.makepyfile(
        test_junit="""
        import pytest

        @pytest.mark.rubric("answer-quality")
        def test_two_checks(rubric, assert_passes):
            assert_passes(rubric, "Four.", id="one")
            assert_passes("no-secrets", "Four.", id="two")
        """
    )
    junit = pytester.path / "junit.xml"
    # the default junit_family (xunit2) keeps properties too
    result = _run(
        pytester, "--rubric-llm", spec(server), "--rubric-dir", str(rubrics), f"--junitxml={junit}"
    )
    result.assert_outcomes(passed=1)
    case = next(ET.parse(junit).getroot().iter("testcase"))
    props = [(p.get("name"), p.get("value")) for p in case.iter("property")]
    assert props == [
        ("rubric", "answer-quality"),
        ("rubric_version", "1.0.0"),
        ("rubric_target", "one"),
        ("rubric_verdict", "pass"),
        ("rubric_score", "1"),
        ("rubric_threshold", "0.7"),
        ("rubric_failed_criteria", ""),
        ("rubric", "no-secrets"),
        ("rubric_version", "1.0.0"),
        ("rubric_target", "two"),
        ("rubric_verdict", "pass"),
        ("rubric_score", "1"),
        ("rubric_threshold", "0.7"),
        ("rubric_failed_criteria", ""),
    ]
    assert "record_property is incompatible" not in result.stdout.str()


def test_the_judge_from_the_environment(
    pytester: pytest.Pytester,
    server: ScriptedServer,
    rubrics: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No --rubric-llm: $RUBRICFLOW_LLM names the judge, as for `rubricflow eval`."""
    monkeypatch.setenv("RUBRICFLOW_LLM", spec(server))
    pytester.makepyfile(
        test_env="""
        import pytest

        @pytest.mark.rubric("answer-quality")
        class TestAnswers:
            def test_good(self, rubric, assert_passes):
                assert_passes(rubric, "Four.", id="env")
        """
    )
    _run(pytester, "--rubric-dir", str(rubrics)).assert_outcomes(passed=1)
    assert len(server.requests) == 2
