"""Every input path refuses what is not a regular file and reads within a size cap (issue
16, item 7): a named pipe (which used to hang the reader), `/dev/zero` (which used to fill
memory), a JSONL line over the line cap (refused with its number after reading at most the
cap), a document over the input cap. Each runs the real command in a subprocess with a
timeout, so a reader that blocks or runs away fails the test instead of hanging it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

RUBRIC = {
    "id": "filled",
    "name": "Filled",
    "criteria": [
        {
            "id": "text",
            "description": "Has text",
            "scoring": {"method": "deterministic", "function": "non_empty"},
        }
    ],
}

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")


def _run(
    *args: str,
    cwd: Path,
    stdin: bytes | Path | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    source = open(stdin, "rb") if isinstance(stdin, Path) else None  # noqa: SIM115
    try:
        return subprocess.run(
            [sys.executable, "-m", "rubricflow", *args],
            cwd=cwd,
            input=stdin.decode() if isinstance(stdin, bytes) else None,
            stdin=source,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, **(env or {})},
            check=False,
        )
    finally:
        if source is not None:
            source.close()


def _refused(done: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    for fragment in fragments:
        assert fragment in done.stderr, done.stderr


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "rubric.yaml").write_text(yaml.safe_dump(RUBRIC))
    for name in ("pipe.json", "pipe.jsonl", "pipe.yaml"):
        os.mkfifo(tmp_path / name)
    return tmp_path


@pytest.mark.parametrize("content", ["pipe.json", "/dev/zero"])
def test_artifact_content_that_is_a_pipe_or_a_device_is_refused(folder: Path, content: str) -> None:
    done = _run("artifacts", "create", "--type", "post", content, "--db", "s.db", cwd=folder)
    _refused(done, f"{content}: is a ", "not a file")


@pytest.mark.parametrize("schema", ["pipe.json", "/dev/zero"])
def test_a_content_schema_that_is_a_pipe_or_a_device_is_refused(folder: Path, schema: str) -> None:
    done = _run("types", "set", "post", "--content-schema", schema, "--db", "s.db", cwd=folder)
    _refused(done, f"{schema}: is a ", "not a file")


def test_a_rubric_file_that_is_a_pipe_is_refused(folder: Path) -> None:
    (folder / "targets.jsonl").write_text(json.dumps({"content": "text"}) + "\n")
    done = _run("eval", "pipe.yaml", "targets.jsonl", cwd=folder)
    _refused(done, "pipe.yaml: is a named pipe (FIFO), not a file")


@pytest.mark.parametrize("targets", ["pipe.jsonl", "pipe.json", "/dev/zero"])
def test_a_target_file_that_is_a_pipe_or_a_device_is_refused(folder: Path, targets: str) -> None:
    done = _run("eval", "rubric.yaml", targets, cwd=folder)
    _refused(done, f"{targets}: is a ", "not a file")


def test_stdin_of_endless_bytes_stops_at_the_line_cap(folder: Path) -> None:
    done = _run(
        "eval",
        "rubric.yaml",
        "-",
        cwd=folder,
        stdin=Path("/dev/zero"),
        env={"RUBRICFLOW_MAX_LINE_BYTES": "64k"},
    )
    _refused(done, "stdin line 1: longer than 65,536 bytes", "RUBRICFLOW_MAX_LINE_BYTES")


def test_a_jsonl_line_over_the_cap_is_refused_with_its_number(folder: Path) -> None:
    lines = [
        json.dumps({"id": "a", "content": "fine"}),
        "",
        json.dumps({"id": "b", "content": "x" * 5000}),
        json.dumps({"id": "c", "content": "fine"}),
    ]
    (folder / "targets.jsonl").write_text("\n".join(lines) + "\n")
    done = _run(
        "eval",
        "rubric.yaml",
        "targets.jsonl",
        cwd=folder,
        env={"RUBRICFLOW_MAX_LINE_BYTES": "4096"},
    )
    _refused(done, "targets.jsonl line 3: longer than 4,096 bytes")


def test_a_line_exactly_at_the_cap_is_read(folder: Path) -> None:
    line = json.dumps({"id": "a", "content": "x" * 100})
    (folder / "targets.jsonl").write_text(line + "\n")
    done = _run(
        "eval",
        "rubric.yaml",
        "targets.jsonl",
        cwd=folder,
        env={"RUBRICFLOW_MAX_LINE_BYTES": str(len(line))},
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_target_document_over_the_input_cap_is_refused(folder: Path) -> None:
    (folder / "target.json").write_text(json.dumps({"content": "x" * 4000}))
    done = _run(
        "eval", "rubric.yaml", "target.json", cwd=folder, env={"RUBRICFLOW_MAX_INPUT_BYTES": "1k"}
    )
    _refused(done, "target.json: the file is larger than 1 KB", "RUBRICFLOW_MAX_INPUT_BYTES")


def test_a_stdin_document_over_the_input_cap_is_refused(folder: Path) -> None:
    body = "content: " + "x" * 4000 + "\n"
    done = _run(
        "eval",
        "rubric.yaml",
        "-",
        cwd=folder,
        stdin=("id: big\n" + body).encode(),
        env={"RUBRICFLOW_MAX_INPUT_BYTES": "1k"},
    )
    _refused(done, "stdin: the document is larger than", "RUBRICFLOW_MAX_INPUT_BYTES")


def test_artifact_content_over_the_input_cap_is_refused(folder: Path) -> None:
    (folder / "post.txt").write_text("word " * 1000)
    done = _run(
        "artifacts",
        "create",
        "--type",
        "post",
        "post.txt",
        "--db",
        "s.db",
        cwd=folder,
        env={"RUBRICFLOW_MAX_INPUT_BYTES": "1k"},
    )
    _refused(done, "post.txt: the file is larger than 1 KB")
    assert not (folder / "s.db").exists()


def test_a_rubric_file_over_the_input_cap_is_refused(folder: Path) -> None:
    (folder / "targets.jsonl").write_text(json.dumps({"content": "text"}) + "\n")
    done = _run(
        "eval",
        "rubric.yaml",
        "targets.jsonl",
        cwd=folder,
        env={"RUBRICFLOW_MAX_INPUT_BYTES": "64"},
    )
    _refused(done, "rubric.yaml: the file is larger than 64 bytes")


def test_a_cap_that_is_not_a_size_is_a_clear_error(folder: Path) -> None:
    (folder / "targets.jsonl").write_text(json.dumps({"content": "text"}) + "\n")
    done = _run(
        "eval",
        "rubric.yaml",
        "targets.jsonl",
        cwd=folder,
        env={"RUBRICFLOW_MAX_LINE_BYTES": "lots"},
    )
    _refused(done, "RUBRICFLOW_MAX_LINE_BYTES='lots' is not a size")


_LIBRARY = """
import sys
from pathlib import Path
from rubricflow import Criterion, Rubric
from rubricflow.errors import RubricflowError
from rubricflow.calibration.labels import read_labels
from rubricflow.suites import read_outputs

rubric = Rubric(id="r", name="R", criteria=[Criterion(id="c", description="d")])
kind, path = sys.argv[1], sys.argv[2]
try:
    read_labels(path, rubric) if kind == "labels" else read_outputs(path)
except RubricflowError as error:
    print(error)
    sys.exit(2)
"""


@pytest.mark.parametrize("kind", ["labels", "outputs"])
@pytest.mark.parametrize("source", ["pipe.jsonl", "/dev/zero", "long.jsonl"])
def test_calibration_labels_and_suite_outputs_are_guarded(
    folder: Path, kind: str, source: str
) -> None:
    (folder / "long.jsonl").write_text('{"id": "a", "output": "' + "x" * 5000 + '"}\n')
    done = subprocess.run(
        [sys.executable, "-c", _LIBRARY, kind, source],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "RUBRICFLOW_MAX_LINE_BYTES": "4096"},
        check=False,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    expected = "line 1: longer than 4,096 bytes" if source == "long.jsonl" else "not a file"
    assert done.stdout.startswith(source) and expected in done.stdout, done.stdout
