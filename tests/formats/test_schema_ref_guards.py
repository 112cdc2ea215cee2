"""`schema_ref` reads only what the rubric's caller allows (issue 16, item 5): by default a
file inside the rubric file's own folder, through the rubric file's guards (a regular file,
the size cap, the alias budget); never a file outside it, never anything for a rubric given
as text, nothing at all under `schema_refs="refuse"`; and a parse error never quotes the
referenced file's lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rubricflow.errors import RubricValidationError
from rubricflow.formats.loader import load_file, load_text

SECRET = "s3cr3t-Value-42"


def _rubric(folder: Path, ref: str) -> Path:
    path = folder / "rubric.yaml"
    path.write_text(
        "id: shaped\nname: Shaped\ncriteria:\n"
        f"  - id: c\n    description: d\n    scoring: {{method: schema, schema_ref: '{ref}'}}\n"
    )
    return path


def _problem(path: Path, **options: str) -> str:
    with pytest.raises(RubricValidationError) as caught:
        load_file(path, **options)  # type: ignore[arg-type]
    (problem,) = caught.value.problems
    assert problem.path == "criteria[0].scoring.schema_ref"
    return problem.message


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder holding a secret next to the rubric's folder."""
    (tmp_path / "secret.yaml").write_text(f"type: object\ntoken: {SECRET}\n")
    (tmp_path / "rubrics").mkdir()
    return tmp_path / "rubrics"


@pytest.mark.parametrize("ref", ["../secret.yaml", "sub/../../secret.yaml", "{abs}"])
def test_a_reference_outside_the_rubric_folder_is_refused(outside: Path, ref: str) -> None:
    ref = ref.format(abs=outside.parent / "secret.yaml")
    message = _problem(_rubric(outside, ref))
    assert "outside the rubric file's folder" in message
    assert SECRET not in message


def test_a_link_leading_out_of_the_folder_is_refused(outside: Path) -> None:
    (outside / "link.yaml").symlink_to(outside.parent / "secret.yaml")
    assert "outside the rubric file's folder" in _problem(_rubric(outside, "link.yaml"))


def test_a_reference_inside_the_folder_is_read(outside: Path) -> None:
    (outside / "shapes").mkdir()
    (outside / "shapes" / "out.json").write_text(json.dumps({"type": "object"}))
    (rubric,) = load_file(_rubric(outside, "shapes/out.json")).rubrics
    assert rubric.criteria[0].scoring.schema_ == {"type": "object"}


def test_the_caller_may_allow_references_anywhere(outside: Path) -> None:
    (rubric,) = load_file(_rubric(outside, "../secret.yaml"), schema_refs="anywhere").rubrics
    assert rubric.criteria[0].scoring.schema_ == {"type": "object", "token": SECRET}


def test_the_caller_may_refuse_every_reference(outside: Path) -> None:
    (outside / "in.json").write_text(json.dumps({"type": "object"}))
    message = _problem(_rubric(outside, "in.json"), schema_refs="refuse")
    assert "schema_ref is not allowed here" in message and "inline" in message


def test_a_rubric_given_as_text_reads_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "secret.yaml").write_text(f"type: object\ntoken: {SECRET}\n")
    text = _rubric(tmp_path, "secret.yaml").read_text()
    with pytest.raises(RubricValidationError) as caught:
        load_text(text)
    assert "not read from a file" in str(caught.value)
    assert SECRET not in str(caught.value)


@pytest.mark.parametrize(
    ("content", "suffix"),
    [
        (f"type: object\nkey: [{SECRET}\n", ".yaml"),  # unclosed flow sequence
        (f"type: object\n{SECRET}: 1\n{SECRET}: 2\n", ".yaml"),  # duplicate key names itself
        (f'{{"type": "object", "{SECRET}": }}', ".json"),
        (f"type: !{SECRET} object\n", ".yaml"),  # a tag is quoted by PyYAML
    ],
)
def test_a_parse_error_does_not_quote_the_referenced_file(
    outside: Path, content: str, suffix: str
) -> None:
    (outside / f"bad{suffix}").write_text(content)
    message = _problem(_rubric(outside, f"bad{suffix}"))
    assert "not valid JSON/YAML" in message and "at line" in message
    assert SECRET not in message


def test_an_alias_bomb_is_refused(outside: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    (outside / "bomb.yaml").write_text("\n".join(lines) + "\n")
    assert "aliases" in _problem(_rubric(outside, "bomb.yaml"))


def test_a_reference_over_the_input_cap_is_refused(
    outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (outside / "big.json").write_text(json.dumps({"type": "object", "x": "y" * 4000}))
    monkeypatch.setenv("RUBRICFLOW_MAX_INPUT_BYTES", "1k")
    rubric = _rubric(outside, "big.json")
    assert "larger than 1 KB" in _problem(rubric)


_LOAD = """
import sys
from rubricflow.errors import RubricflowError
from rubricflow.formats.loader import load_file
try:
    load_file(sys.argv[1], schema_refs=sys.argv[2])
except RubricflowError as error:
    print(error)
    sys.exit(2)
"""


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
@pytest.mark.parametrize("target", ["pipe.json", "/dev/zero"])
def test_a_reference_to_a_pipe_or_a_device_is_refused(outside: Path, target: str) -> None:
    os.mkfifo(outside / "pipe.json")
    rubric = _rubric(outside, target)
    policy = "inside" if target == "pipe.json" else "anywhere"  # /dev/zero is outside anyway
    done = subprocess.run(
        [sys.executable, "-c", _LOAD, str(rubric), policy],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "not a file" in done.stdout and "criteria[0].scoring.schema_ref" in done.stdout


def test_convert_does_not_print_a_file_outside_the_rubric_folder(outside: Path) -> None:
    rubric = _rubric(outside, "../secret.yaml")
    done = subprocess.run(
        [sys.executable, "-m", "rubricflow", "convert", str(rubric)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0
    assert SECRET not in done.stdout + done.stderr
    assert "outside the rubric file's folder" in done.stdout + done.stderr
