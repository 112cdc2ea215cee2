"""Check functions declare the options they take (a JSON Schema, plus further checks such as
a regular expression that must compile), and `validate` checks each criterion's
`scoring.config` against them: a broken config is an error with its path, exit 1, instead
of passing `validate` and failing every evaluation. Functions that declare nothing are
accepted as before (the plugin API stays backward compatible)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from rubricflow.cli import app
from rubricflow.errors import PluginError
from rubricflow.hookspecs import config_schema, hookimpl
from rubricflow.plugins import create_plugin_manager
from rubricflow.validation import validate_document


def rubric(function: str, config: Any) -> dict[str, Any]:
    return {
        "id": "checks",
        "criteria": [
            {
                "id": "c",
                "scoring": {"method": "deterministic", "function": function, "config": config},
            }
        ],
    }


def test_validate_reports_broken_configs_with_their_paths(tmp_path: Path) -> None:
    document = {
        "id": "broken",
        "criteria": [
            {
                "id": f"c{index}",
                "scoring": {"method": "deterministic", "function": function, "config": config},
            }
            for index, (function, config) in enumerate(
                [
                    ("matches_regex", {"pattern": "(("}),
                    ("no_regex_match", {"pattern": "a", "flags": "q"}),
                    ("word_count_between", {"min": "abc"}),
                    ("contains_all", {"term": ["x"]}),
                    ("char_count_between", {"min": 5, "max": 2}),
                ]
            )
        ],
    }
    path = tmp_path / "broken.yaml"
    path.write_text(yaml.safe_dump(document))
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()

    def line(where: str) -> str:
        found = [text for text in lines if f"{path}: {where}:" in text]
        assert found, (where, result.stdout)
        return found[0]

    assert "invalid regex '(('" in line("criteria[0].scoring.config.pattern")
    assert "flags from i, m, s and x" in line("criteria[1].scoring.config.flags")
    assert "'abc' is not of type 'integer'" in line("criteria[2].scoring.config.min")
    assert "'terms' is a required property" in line("criteria[3].scoring.config")
    assert "'term' was unexpected" in result.stdout
    assert "swap them" in line("criteria[4].scoring.config.min")


@pytest.mark.parametrize(
    ("function", "config"),
    [
        ("matches_regex", {"pattern": "^a+$", "flags": "im"}),
        ("word_count_between", {"min": 1, "max": 5}),
        ("json_array_length", {"path": "items", "max": 3}),
        ("contains_all", {"terms": ["a"], "case_sensitive": True}),
        ("json_has_keys", {"keys": ["a.b"]}),
        ("non_empty", {}),
    ],
)
def test_good_configs_stay_valid(function: str, config: Any) -> None:
    report = validate_document(rubric(function, config), source="good.yaml")
    assert report.errors == []


def test_a_function_without_a_schema_is_accepted_as_before() -> None:
    class Plugin:
        @hookimpl
        def rubricflow_check_functions(self) -> Mapping[str, Callable[..., Any]]:
            return {"legacy": lambda target, **options: True}

    plugins = create_plugin_manager(plugins=[Plugin()], load_entry_points=False)
    report = validate_document(
        rubric("legacy", {"anything": [1, 2]}), source="r.yaml", plugins=plugins
    )
    assert report.errors == []


def test_a_plugin_declares_its_schema_and_check() -> None:
    def no_shouting(config: Mapping[str, Any]) -> list[tuple[str, str]]:
        return [("word", "write it in lower case")] if config["word"].isupper() else []

    @config_schema(
        {
            "type": "object",
            "properties": {"word": {"type": "string", "description": "one word"}},
            "required": ["word"],
        },
        check=no_shouting,
    )
    def has_word(target: Any, word: str) -> bool:
        return word in target.text

    class Plugin:
        @hookimpl
        def rubricflow_check_functions(self) -> Mapping[str, Callable[..., Any]]:
            return {"has_word": has_word}

    plugins = create_plugin_manager(plugins=[Plugin()], load_entry_points=False)

    def errors(config: Any) -> list[tuple[str, str]]:
        report = validate_document(rubric("has_word", config), source="r.yaml", plugins=plugins)
        return [(p.path, p.message) for p in report.errors]

    assert errors({"word": "ok"}) == []
    [(where, message)] = errors({"word": 3})
    assert where == "criteria[0].scoring.config.word"
    assert "3 is not of type 'string'; expected one word" in message
    assert errors({"word": "LOUD"}) == [
        ("criteria[0].scoring.config.word", "write it in lower case (options of check 'has_word')")
    ]


def test_a_broken_schema_is_the_plugins_error_at_registration() -> None:
    @config_schema({"type": "no-such-type"})
    def check(target: Any) -> bool:
        return True

    class Broken:
        @hookimpl
        def rubricflow_check_functions(self) -> Mapping[str, Callable[..., Any]]:
            return {"broken_check": check}

    with pytest.raises(PluginError, match="config schema of check function 'broken_check'"):
        create_plugin_manager(plugins=[Broken()], load_entry_points=False)
