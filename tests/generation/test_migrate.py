"""`rubricflow migrate`: OpenRubricRL's missing command, for its files and older native
documents; prints what changed, writes only with -o, and round-trips."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner, Result

from rubricflow.formats.loader import load_file
from rubricflow.generation import migrate_file, parse_target

OPENRUBRICRL = {
    "name": "Answer Quality",
    "version": "2.1.0",
    "description": "How well a support bot answers a billing question",
    "domain": "dialogue",
    "scale": {"min": 0, "max": 10, "type": "continuous"},
    "criteria": [
        {"name": "Correctness", "description": "States the policy correctly.", "weight": 0.6},
        {"name": "Clarity", "description": "Easy to follow.", "weight": 0.4},
    ],
}


def run(*args: str) -> Result:
    from rubricflow.cli import app

    return CliRunner().invoke(app, list(args))


def test_an_openrubricrl_file_is_upgraded_reported_and_written_only_with_o(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    source = tmp_path / "answer-quality.json"
    source.write_text(json.dumps(OPENRUBRICRL), encoding="utf-8")
    before = set(tmp_path.iterdir())
    shown = run("migrate", str(source))
    assert shown.exit_code == 0, shown.output
    text = shown.stdout
    assert "openrubricrl -> native@1" in text
    assert "+ id: 'answer_quality'" in text
    assert "+ criteria[0].scoring.method: 'llm_score'" in text
    assert "- domain (was 'dialogue')\n" in text
    assert (
        "- scale.min (was 0: the default, left out)" in text
        and "+ metadata.domain: 'dialogue'" in text
    )
    assert "not written (pass -o FILE" in shown.stderr
    assert set(tmp_path.iterdir()) == before
    target = tmp_path / "answer-quality.yaml"
    assert run("migrate", str(source), "-o", str(target)).exit_code == 0
    migrated = load_file(target)
    assert migrated.format == "native"
    assert migrated.rubrics == load_file(source).rubrics  # the same rubric, now native
    # the upgraded file is current: migrating it again changes nothing
    again = run("migrate", str(target), "--to", "native@1")
    assert "already current: nothing changes" in again.stdout
    assert migrate_file(target).changes == []


def test_an_older_native_document_loses_what_the_current_format_leaves_out(
    tmp_path: Path,
) -> None:
    source = tmp_path / "old.yaml"
    source.write_text(
        "$schema: https://rubricflow.dev/schema/rubric.schema.json\n"
        "id: old\nversion: 1.0.0\npass_threshold: 0.7\n"
        "criteria:\n- id: a\n  weight: 1.0\n  required: false\n  scoring: {method: llm}\n",
        encoding="utf-8",
    )
    migration = migrate_file(source)
    assert migration.source_format == "native"
    assert "- criteria[0].weight (was 1.0: the default, left out)" in migration.changes
    assert "- pass_threshold (was 0.7: the default, left out)" in migration.changes
    output = tmp_path / "new.json"
    result = run("migrate", str(source), "-o", str(output), "--json")
    assert result.exit_code == 0
    report = json.loads(result.stdout)
    assert report["target"] == "native@1" and report["rubrics"] == ["old@1.0.0"]
    assert load_file(output).rubrics == migration.rubrics


def test_unknown_targets_and_broken_files_are_user_errors(tmp_path: Path) -> None:
    assert parse_target("native") == parse_target("native@1") == 1
    source = tmp_path / "r.yaml"
    source.write_text("id: r\ncriteria: [{id: a}]\n", encoding="utf-8")
    future = run("migrate", str(source), "--to", "native@2")
    assert future.exit_code == 2 and "version '2' does not exist" in future.output
    other = run("migrate", str(source), "--to", "openrubricrl")
    assert other.exit_code == 2 and "native[@VERSION]" in other.output
    broken = tmp_path / "broken.yaml"
    broken.write_text("id: r\ncriteria: [{id: a, weight: heavy}]\n", encoding="utf-8")
    failed = run("migrate", str(broken))
    assert failed.exit_code == 1 and "criteria[0].weight" in failed.output


FIXTURES = [HealthCheck.function_scoped_fixture]  # tmp_path is reused: each file is rewritten
_texts = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=20)
_ids = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)
_criteria = st.lists(
    st.fixed_dictionaries(
        {"id": _ids},
        optional={
            "weight": st.sampled_from([1.0, 0.5, 0.25, -0.5, 2]),
            "required": st.booleans(),
            "description": _texts,
            "scoring": st.sampled_from([{"method": "llm"}, {"method": "llm_verdict"}]),
        },
    ),
    min_size=1,
    max_size=4,
    unique_by=lambda c: c["id"],
)
_native = st.fixed_dictionaries(
    {"id": _ids, "criteria": _criteria},
    optional={
        "version": st.sampled_from(["1.0.0", "2.0.0"]),
        "pass_threshold": st.sampled_from([0.7, 0.5, 1.0]),
        "description": _texts,
        "unscored_policy": st.sampled_from(["fail_closed", "exclude"]),
    },
)


@settings(max_examples=40, deadline=None, suppress_health_check=FIXTURES)
@given(document=_native)
def test_migrating_a_native_document_round_trips(tmp_path: Path, document: dict[str, Any]) -> None:
    source = tmp_path / "in.json"
    source.write_text(json.dumps(document), encoding="utf-8")
    migration = migrate_file(source)
    target = tmp_path / "out.yaml"
    target.write_text(migration.text(), encoding="utf-8")
    assert load_file(target).rubrics == load_file(source).rubrics == migration.rubrics
    assert migrate_file(target).changes == []  # a migrated file is current


@settings(max_examples=20, deadline=None, suppress_health_check=FIXTURES)
@given(document=st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                             lambda inner: st.lists(inner, max_size=3)
                             | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                             max_leaves=12))  # fmt: skip
def test_migrate_never_fails_internally(tmp_path: Path, document: Any) -> None:
    source = tmp_path / "any.json"
    source.write_text(json.dumps(document), encoding="utf-8")
    result = run("migrate", str(source))
    assert result.exit_code in (0, 1, 2), result.output
    assert "internal error" not in result.output and "Traceback" not in result.output
