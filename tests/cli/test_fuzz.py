"""Fuzzing the CLI's inputs: rubric files with random and garbage fields and values, target
JSONL lines, artifact content and option values. Whatever comes in, the command ends with
exit code 0, 1 or 2 (a clear error), never 3 (an internal error) and never a traceback, on
both backends (a SQLite file and the real PostgreSQL)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
import store.conftest as backends
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner, Result

from rubricflow.cli import app
from rubricflow.errors import RubricflowError
from rubricflow.store import DB_ENV

backend = backends.backend
db_url = backends.db_url
pg_server = backends.pg_server
pg_session_url = backends.pg_session_url
sqlite_template = backends.sqlite_template

GOOD = {
    "id": "good",
    "criteria": [{"id": "text", "scoring": {"method": "deterministic", "function": "non_empty"}}],
}

# text of every kind: NUL and control characters, very long runs, digits by the thousand
texts = st.one_of(
    st.text(st.characters(codec="utf-8"), max_size=40),
    st.sampled_from(["", "\x00", "a\x00b", " ", "1" * 5000, "x" * 600, "../x", "((", "-1"]),
    st.integers(0, 5000).map(lambda n: "9" * n),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=False, allow_infinity=False),
    texts,
)
json_data = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(texts, inner, max_size=3)),
    max_leaves=8,
)
functions = st.sampled_from(
    [
        "non_empty",
        "word_count_between",
        "contains_all",
        "matches_regex",
        "no_regex_match",
        "json_has_keys",
        "json_array_length",
        "valid_json",
        "no_such_check",
    ]
)
configs = st.one_of(
    st.dictionaries(
        st.sampled_from(["min", "max", "terms", "pattern", "flags", "keys", "path", "x"]),
        json_data,
        max_size=3,
    ),
    json_data,
)
criteria = st.fixed_dictionaries(
    {"id": st.one_of(st.just("c"), texts)},
    optional={
        "name": json_data,
        "weight": json_data,
        "required": json_data,
        "levels": json_data,
        "score_ranges": json_data,
        "group": texts,
        "scoring": st.one_of(
            st.fixed_dictionaries(
                {"method": st.just("deterministic"), "function": functions},
                optional={"config": configs},
            ),
            json_data,
        ),
    },
)
rubrics = st.fixed_dictionaries(
    {"id": st.one_of(st.just("fuzz"), texts)},
    optional={
        "version": st.one_of(st.just("1.0.0"), texts, st.integers(0, 10**6).map(str)),
        "name": json_data,
        "target_type": json_data,
        "pass_threshold": json_data,
        "groups": json_data,
        "metadata": json_data,
        "criteria": st.one_of(st.lists(criteria, min_size=1, max_size=3), json_data),
        "junk": json_data,
    },
)
target_lines = st.lists(
    st.one_of(
        st.fixed_dictionaries(
            {"content": json_data},
            optional={"id": json_data, "query": json_data, "metadata": json_data},
        ).map(json.dumps),
        texts,
        json_data.map(json.dumps),
    ),
    min_size=1,
    max_size=3,
)
numbers = st.one_of(st.integers(-(10**25), 10**25).map(str), texts)
counter = itertools.count()


def check(result: Result, argv: list[str]) -> None:
    """Exit 0, 1 or 2 and no traceback. A RubricflowError that leaves the app is what the
    `rubricflow` command (`cli.main`) prints as `error: ...` with exit 2."""
    shown = [a if len(a) < 80 else a[:77] + "..." for a in argv]
    if isinstance(result.exception, RubricflowError):
        return
    assert result.exit_code in (0, 1, 2), (shown, result.exit_code, result.output[-2000:])
    assert "Traceback" not in result.output, (shown, result.output[-2000:])
    assert "internal error" not in result.output, (shown, result.output[-2000:])
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        shown,
        repr(result.exception),
    )


@pytest.fixture
def fuzz_db(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The backend's store with a good rubric and an artifact type `t` bound to it."""
    monkeypatch.delenv(DB_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump(GOOD))
    runner = CliRunner()
    assert runner.invoke(app, ["rubrics", "register", str(good), "--db", db_url]).exit_code == 0
    assert runner.invoke(app, ["types", "set", "t", "-r", "good", "--db", db_url]).exit_code == 0
    return db_url


def _write(folder: Path, suffix: str, text: str) -> Path:
    path = folder / f"in-{next(counter)}{suffix}"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    return path


def _dump(document: Any, suffix: str) -> str:
    if suffix == ".json":
        return json.dumps(document)
    return yaml.safe_dump(document, allow_unicode=True)


@st.composite
def commands(draw: st.DrawFn, folder: Path, db: str) -> list[str]:
    """One CLI command line over fuzzed inputs."""
    kind = draw(
        st.sampled_from(
            ["validate", "convert", "register", "eval", "create", "list", "types", "submit"]
        )
    )
    suffix = draw(st.sampled_from([".yaml", ".json"]))
    if kind in ("validate", "convert", "register", "eval"):
        rubric = _write(folder, suffix, _dump(draw(rubrics), suffix))
        if kind == "validate":
            return ["validate", str(rubric)]
        if kind == "convert":
            return ["convert", str(rubric)]
        if kind == "register":
            return ["rubrics", "register", str(rubric), "--db", db]
        lines = _write(folder, ".jsonl", "\n".join(draw(target_lines)) + "\n")
        run = draw(st.one_of(st.none(), texts.filter(lambda t: not t.startswith("-"))))
        return [
            "eval",
            str(draw(st.sampled_from([rubric, folder / "good.yaml"]))),
            str(lines),
            "--db",
            db,
            *(["--run", run] if run else []),
        ]
    if kind in ("create", "submit"):
        content = _write(
            folder,
            draw(st.sampled_from([".json", ".txt", ".yaml"])),
            draw(st.one_of(json_data.map(json.dumps), texts)),
        )
        options: list[str] = []
        for option in (
            ("--id", "--title", "--actor") if kind == "create" else ("--title", "--actor")
        ):
            value = draw(st.one_of(st.none(), texts.filter(lambda t: not t.startswith("-"))))
            if value:
                options += [option, value]
        return ["artifacts", kind, str(content), "-t", "t", *options]
    if kind == "types":
        name = draw(texts.filter(lambda t: not t.startswith("-")))
        binding = draw(st.one_of(st.just("good"), texts.filter(lambda t: not t.startswith("-"))))
        return ["types", "set", name or "x", "-r", binding or "good", "--db", db]
    command = draw(st.sampled_from([["rubrics", "list"], ["evaluations", "list"]]))
    option = draw(st.sampled_from(["--limit", "--offset"]))
    return [*command, option, draw(numbers), "--db", db]


def test_no_input_makes_the_cli_fail_internally(fuzz_db: str, tmp_path: Path) -> None:
    runner = CliRunner()

    @settings(
        max_examples=60,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        database=None,
    )
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        argv = data.draw(commands(tmp_path, fuzz_db))
        if argv[:2] == ["artifacts", "submit"]:
            argv += ["--db", fuzz_db, "--defer"]
        elif argv[0] == "artifacts":
            argv += ["--db", fuzz_db]
        check(runner.invoke(app, argv), argv)

    run()
