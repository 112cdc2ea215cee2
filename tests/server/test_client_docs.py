"""docs/server.md's examples run against a real server: the curl submission (when curl
is installed) and the Python client's blocking example."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from rubricflow.client import Client
from rubricflow.wire import ArtifactTypeIn, RubricBindingIn

from .artifact_setup import prepare
from .conftest import RunningServer

DOC = Path(__file__).parents[2] / "docs" / "server.md"
DOCUMENTED_URL = "http://127.0.0.1:8000"


def _blocks(language: str, after: str) -> list[str]:
    text = DOC.read_text()
    text = text[text.index(after) :]
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


def test_the_documented_examples_submit_to_a_real_server(
    sqlite_db: str, start_server: Callable[..., RunningServer]
) -> None:
    tokens = prepare(sqlite_db)
    server = start_server(sqlite_db)
    with Client(server.url, tokens.admin) as admin:
        admin.set_type("post", ArtifactTypeIn(rubrics=[RubricBindingIn(rubric_id="gate")]))

    curl = _blocks("bash", "### One request per artifact")[0]
    assert curl.startswith("curl") and "/v1/submissions" in curl
    if shutil.which("curl") is None:  # pragma: no cover - the python example still runs
        pytest.skip("curl is not installed")
    if shutil.which("uuidgen") is None:
        curl = curl.replace("$(uuidgen)", str(uuid.uuid4()))
    command = curl.replace(DOCUMENTED_URL, server.url)
    ran = subprocess.run(
        ["bash", "-c", command],
        env={"TOKEN": tokens.admin, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    answer = json.loads(ran.stdout)
    assert answer["status"] == "approved" and answer["artifact"]["title"] == "Hello"

    example = _blocks("python", "## Client")[0].replace(DOCUMENTED_URL, server.url)
    printed: list[tuple[object, ...]] = []
    exec(example, {"token": tokens.admin, "print": lambda *a: printed.append(a)})
    assert len(printed) == 2  # both submissions are listed, newest first
    assert all(title == "Hello" for _, title in printed)
