"""The pytest plugin's tests: pytester runs test files in a scratch folder, judged by
the repo's scripted OpenAI-compatible server over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from llm.scripted import Recorded, Reply, ScriptedServer, openai_reply, verdict

from rubricflow.llm.specs import ENV_VARS

RUBRIC = """\
id: answer-quality
version: 1.0.0
name: Answer quality
pass_threshold: 0.7
criteria:
  - id: correct
    name: Correct
    description: The answer is correct.
    weight: 2
    required: true
    scoring: {method: llm_verdict}
  - id: polite
    name: Polite
    description: The answer is polite.
    weight: 1
    scoring: {method: llm_verdict}
"""

CHECK = """\
id: no-secrets
version: 1.0.0
criteria:
  - id: no-key
    description: Contains no API key.
    scoring: {method: deterministic, function: contains_none, config: {terms: ["sk-"]}}
"""


def judge(request: Recorded) -> Reply:
    """MET unless the content under review says BAD for this criterion's word: an
    answer containing 'wrong' fails `correct`, one containing 'rude' fails `polite`."""
    text = request.text
    content = text.split("<content>")[-1] if "<content>" in text else text
    asks_correct = "The answer is correct." in text
    word = "wrong" if asks_correct else "rude"
    if word in content:
        return openai_reply(verdict("UNMET", f"The answer is {word}."))
    return openai_reply(verdict("MET", "Looks fine."))


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(judge) as running:
        yield running


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No judge or key leaks in; the local judge cache lives in this test's folder."""
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RUBRICFLOW_CACHE_DIR", str(tmp_path / "rf-cache"))


@pytest.fixture
def rubrics(pytester: pytest.Pytester) -> Path:
    folder = pytester.mkdir("rubrics")
    (folder / "answer.yaml").write_text(RUBRIC)
    (folder / "check.yaml").write_text(CHECK)
    return folder


def spec(server: ScriptedServer) -> str:
    return f"openai:judge@{server.url}/v1"


@pytest.fixture(autouse=True)
def inner_ini(request: pytest.FixtureRequest) -> None:
    """The runs pytester makes get this repo's asyncio setting (no deprecation noise)."""
    if "pytester" in request.fixturenames:
        pytester: pytest.Pytester = request.getfixturevalue("pytester")
        pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
