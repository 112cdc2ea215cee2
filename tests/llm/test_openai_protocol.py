"""The OpenAI-compatible provider against a scripted server: the request it sends, and
every fault: garbage, fenced JSON, wrong schema, 429 with Retry-After, 500s, slow
answers past the timeout, dropped connections, and servers that refuse json_schema."""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
import ssl
import subprocess
import time
from pathlib import Path

import pytest

from rubricflow import evaluate
from rubricflow.llm import LLMSession
from rubricflow.llm.http import environment_proxy
from rubricflow.llm.providers.openai import OpenAIProvider

from .fixtures import fast, rubric, session_for
from .scripted import Reply, ScriptedServer, openai_reply, verdict

ONE = rubric({"id": "polite", "description": "The reply is polite."})
TARGET = {"id": "t", "content": "Thank you for writing!"}


async def judge_once(server: ScriptedServer, **settings: object):  # type: ignore[no-untyped-def]
    async with session_for(server, **settings) as session:
        return await evaluate(ONE, TARGET, options={"llm": session})


async def test_request_asks_for_strict_json_schema(server: ScriptedServer) -> None:
    server.queue(openai_reply(verdict("MET")))
    evaluation = await judge_once(server, max_tokens=321)
    assert evaluation.criteria[0].verdict == "MET"
    request = server.requests[0]
    assert request.path == "/v1/chat/completions"
    body = request.json
    assert body["model"] == "judge"
    assert body["max_tokens"] == 321 and body["temperature"] == 0.0
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    schema = fmt["json_schema"]["schema"]
    assert list(schema["properties"]) == ["reasoning", "verdict"]
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert "authorization" not in request.headers  # no key configured, none sent


async def test_api_key_goes_in_the_bearer_header(server: ScriptedServer, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-abcdef123456")
    monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")  # the key goes only there
    server.queue(openai_reply(verdict()))
    await judge_once(server)
    assert server.requests[0].headers["authorization"] == "Bearer sk-test-abcdef123456"


async def test_fenced_json_is_accepted_without_a_reask(server: ScriptedServer) -> None:
    server.queue(
        openai_reply('Here you go:\n```json\n{"reasoning": "kind", "verdict": "MET"}\n```')
    )
    evaluation = await judge_once(server)
    result = evaluation.criteria[0]
    assert result.status == "scored" and result.verdict == "MET" and result.reasoning == "kind"
    assert len(server.requests) == 1


async def test_garbage_is_reasked_with_the_error_and_the_second_answer_counts(
    server: ScriptedServer,
) -> None:
    server.queue(openai_reply("I would say it is polite."), openai_reply(verdict("UNMET")))
    evaluation = await judge_once(server)
    result = evaluation.criteria[0]
    assert result.status == "scored" and result.verdict == "UNMET"
    assert len(server.requests) == 2
    reask = server.requests[1].messages
    assert [m["role"] for m in reask] == ["system", "user", "assistant", "user"]
    assert reask[2]["content"] == "I would say it is polite."
    assert "the answer is not JSON" in reask[3]["content"]
    assert '"verdict"' in reask[3]["content"]  # the schema is repeated
    assert [c.outcome for c in result.llm_calls] == ["invalid_answer", "ok"]
    assert [c.attempt for c in result.llm_calls] == [1, 2]


async def test_wrong_schema_twice_is_unable_to_evaluate_with_the_reason(
    server: ScriptedServer,
) -> None:
    wrong = openai_reply({"reasoning": "fine", "verdict": "PASS"})
    server.queue(wrong, wrong)
    evaluation = await judge_once(server)
    result = evaluation.criteria[0]
    assert result.status == "unable_to_evaluate"
    assert result.score is None and result.verdict is None
    assert "no valid judge answer after 2 answers" in result.notes
    assert "$.verdict: 'PASS' is not one of ['MET', 'UNMET']" in result.notes
    assert "'PASS' is not one of" in server.requests[1].messages[-1]["content"]
    assert evaluation.verdict == "incomplete" and not evaluation.passed


async def test_429_with_retry_after_is_honoured(server: ScriptedServer) -> None:
    server.queue(
        Reply(429, {"error": {"message": "slow down"}}, headers={"Retry-After": "1"}),
        openai_reply(verdict()),
    )
    started = time.perf_counter()
    evaluation = await judge_once(server)
    waited = time.perf_counter() - started
    result = evaluation.criteria[0]
    assert result.status == "scored"
    assert waited >= 1.0, f"retried after {waited:.2f}s despite Retry-After: 1"
    assert [c.outcome for c in result.llm_calls] == ["rate_limited", "ok"]
    assert "Retry-After 1s" in (result.llm_calls[0].error or "")


async def test_retry_after_past_the_deadline_gives_up_at_once(server: ScriptedServer) -> None:
    server.queue(Reply(429, {"error": "busy"}, headers={"Retry-After": "120"}))
    started = time.perf_counter()
    evaluation = await judge_once(server, deadline=5.0)
    assert time.perf_counter() - started < 4.5  # not the 120 s, nor the 5 s deadline
    result = evaluation.criteria[0]
    assert result.status == "unable_to_evaluate"
    assert "would pass the 5s deadline" in result.notes


async def test_500s_are_retried_with_backoff_until_an_answer(server: ScriptedServer) -> None:
    server.queue(Reply(500, {"error": "boom"}), Reply(503, "unavailable"), openai_reply(verdict()))
    evaluation = await judge_once(server)
    result = evaluation.criteria[0]
    assert result.status == "scored"
    assert [c.outcome for c in result.llm_calls] == ["http_error", "http_error", "ok"]
    assert [c.attempt for c in result.llm_calls] == [1, 2, 3]


async def test_attempts_are_bounded(server: ScriptedServer) -> None:
    server.responder = lambda request: Reply(500, {"error": "down"})
    evaluation = await judge_once(server, max_attempts=3)
    result = evaluation.criteria[0]
    assert result.status == "unable_to_evaluate"
    assert len(server.requests) == 3
    assert "failed after 3 attempts: HTTP 500" in result.notes
    assert evaluation.usage()["llm_calls"] == 3


async def test_a_4xx_is_not_retried(server: ScriptedServer) -> None:
    server.queue(Reply(404, {"error": {"message": "model 'judge' not found"}}))
    evaluation = await judge_once(server)
    assert len(server.requests) == 1
    assert "model 'judge' not found" in evaluation.criteria[0].notes


async def test_a_slow_answer_times_out_and_is_retried(server: ScriptedServer) -> None:
    server.queue(openai_reply(verdict(), delay=30), openai_reply(verdict("UNMET")))
    started = time.perf_counter()
    evaluation = await judge_once(server, timeout=0.5)
    elapsed = time.perf_counter() - started
    result = evaluation.criteria[0]
    assert result.status == "scored" and result.verdict == "UNMET"
    assert [c.outcome for c in result.llm_calls] == ["timeout", "ok"]
    assert 0.45 <= result.llm_calls[0].latency_ms / 1000 < 10  # cut at 0.5 s, not 30 s
    assert elapsed < 10


async def test_the_deadline_bounds_a_question_across_retries(server: ScriptedServer) -> None:
    server.responder = lambda request: openai_reply(verdict(), delay=1.0)
    started = time.perf_counter()
    evaluation = await judge_once(server, timeout=0.4, deadline=1.0, max_attempts=50)
    assert time.perf_counter() - started < 8  # 50 attempts of 0.4 s would take 20 s
    assert evaluation.criteria[0].status == "unable_to_evaluate"


async def test_a_dropped_connection_is_retried(server: ScriptedServer) -> None:
    server.queue(Reply(drop=True), openai_reply(verdict()))
    evaluation = await judge_once(server)
    result = evaluation.criteria[0]
    assert result.status == "scored"
    assert [c.outcome for c in result.llm_calls] == ["connection_error", "ok"]


async def test_a_refused_connection_is_a_connection_error() -> None:
    with ScriptedServer() as gone:
        url = gone.url
    async with LLMSession(
        f"openai:judge@{url}/v1", cache=None, settings=fast(max_attempts=2)
    ) as session:
        evaluation = await evaluate(ONE, TARGET, options={"llm": session})
    result = evaluation.criteria[0]
    assert result.status == "unable_to_evaluate"
    assert [c.outcome for c in result.llm_calls] == ["connection_error", "connection_error"]


async def test_a_body_that_is_not_json_is_a_transport_error(server: ScriptedServer) -> None:
    server.queue(Reply(200, "<html>proxy error</html>"), openai_reply(verdict()))
    evaluation = await judge_once(server)
    assert [c.outcome for c in evaluation.criteria[0].llm_calls] == ["error", "ok"]


async def test_llama_cpp_style_refusal_of_json_schema_downgrades_to_json_object(
    server: ScriptedServer,
) -> None:
    refusal = Reply(
        500,
        {
            "error": {
                "message": "Input should be 'text' or 'json_object'",
                "loc": ["response_format"],
            }
        },
    )
    server.queue(refusal, openai_reply(verdict()), openai_reply(verdict()))
    async with session_for(server) as session:
        first = await evaluate(ONE, TARGET, options={"llm": session})
        second = await evaluate(ONE, {"content": "another"}, options={"llm": session})
        assert session.provider_now().structured_output.startswith("response_format json_object")
    assert first.criteria[0].status == second.criteria[0].status == "scored"
    formats = [r.json["response_format"]["type"] for r in server.requests]
    assert formats == ["json_schema", "json_object", "json_object"]  # remembered
    assert "schema" in server.requests[1].json["response_format"]


async def test_a_400_about_response_format_falls_back_to_plain_prompting(
    server: ScriptedServer,
) -> None:
    server.queue(
        Reply(400, {"error": {"message": "response_format is not supported"}}),
        Reply(400, {"error": {"message": "Unknown parameter: response_format"}}),
        openai_reply(verdict()),
    )
    evaluation = await judge_once(server)
    assert evaluation.criteria[0].status == "scored"
    assert "response_format" not in server.requests[2].json


async def test_a_refused_temperature_is_dropped(server: ScriptedServer) -> None:
    server.queue(
        Reply(400, {"error": {"message": "Unsupported value: 'temperature' does not support 0"}}),
        openai_reply(verdict()),
    )
    evaluation = await judge_once(server)
    assert evaluation.criteria[0].status == "scored"
    assert "temperature" not in server.requests[1].json


async def test_the_request_carries_the_usual_headers(server: ScriptedServer) -> None:
    server.queue(openai_reply(verdict()))
    await judge_once(server)
    headers = server.requests[0].headers
    assert headers["content-type"] == "application/json"
    assert headers["user-agent"] == "rubricflow"
    assert headers["host"] == server.url.split("://")[1]
    assert "gzip" in headers["accept-encoding"]


async def test_a_compressed_answer_is_decoded(server: ScriptedServer) -> None:
    body = json.dumps(openai_reply(verdict("UNMET")).body).encode()
    server.queue(Reply(200, gzip.compress(body), headers={"content-encoding": "gzip"}))
    evaluation = await judge_once(server)
    assert evaluation.criteria[0].verdict == "UNMET"


async def test_a_proxy_from_the_environment_is_used(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The judge's host does not resolve; the request reaches it only through the proxy
    named in HTTP_PROXY (the scripted server, which sees the absolute URL)."""
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", server.url)
    server.queue(openai_reply(verdict()))
    async with LLMSession("openai:judge@http://judge.invalid/v1", cache=None, settings=fast()) as s:
        evaluation = await evaluate(ONE, TARGET, options={"llm": s})
    assert evaluation.criteria[0].verdict == "MET"
    (request,) = server.requests
    assert request.path == "http://judge.invalid/v1/chat/completions"


def test_no_proxy_exempts_a_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "internal.example")
    for name in ("https_proxy", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    assert environment_proxy("https://api.example.com/v1") == "http://proxy.example:3128"
    assert environment_proxy("https://internal.example/v1") is None
    assert environment_proxy("http://api.example.com/v1") is None  # no HTTP_PROXY set


def test_a_proxy_without_a_scheme_is_taken_as_http(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "https_proxy", "no_proxy", "NO_PROXY", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", "proxy.example:3128")
    assert environment_proxy("https://api.example.com/v1") == "http://proxy.example:3128"


async def test_an_unusable_proxy_is_a_clear_judge_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", "ftp://proxy.example:21")
    async with LLMSession("openai:judge@http://judge.invalid/v1", cache=None, settings=fast()) as s:
        evaluation = await evaluate(ONE, TARGET, options={"llm": s})
    result = evaluation.criteria[0]
    assert result.status == "unable_to_evaluate"
    assert "cannot be used" in result.notes and "HTTP_PROXY" in result.notes


async def test_credentials_in_the_base_url_are_sent_as_basic_auth(server: ScriptedServer) -> None:
    server.queue(openai_reply(verdict()))
    host = server.url.split("://")[1]
    async with LLMSession(
        f"openai:judge@http://alice:s3cret@{host}/v1", cache=None, settings=fast()
    ) as session:
        evaluation = await evaluate(ONE, TARGET, options={"llm": session})
    assert evaluation.criteria[0].verdict == "MET"
    (request,) = server.requests
    expected = "Basic " + base64.b64encode(b"alice:s3cret").decode()
    assert request.headers["authorization"] == expected
    assert request.path == "/v1/chat/completions"
    assert "s3cret" not in json.dumps(evaluation.to_dict())


@pytest.fixture
def self_signed_tls(tmp_path: Path) -> ssl.SSLContext:
    """A server-side TLS context with a certificate no CA signed (made by openssl)."""
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-subj", "/CN=127.0.0.1", "-keyout", str(key), "-out", str(cert)),
        ],
        check=True,
        capture_output=True,
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return context


async def test_an_https_judge_is_verified_and_a_plain_http_one_loads_no_ca_bundle(
    self_signed_tls: ssl.SSLContext,
) -> None:
    """Only an https judge pays for loading the CA bundle, and it still checks the
    certificate: a judge whose certificate nobody signed gets no request."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=self_signed_tls)
    port = server.sockets[0].getsockname()[1]
    try:
        async with LLMSession(f"openai:judge@https://127.0.0.1:{port}/v1", settings=fast()) as s:
            evaluation = await evaluate(ONE, TARGET, options={"llm": s, "llm_cache": None})
    finally:
        server.close()
        await server.wait_closed()
    (result,) = evaluation.criteria
    assert result.status == "unable_to_evaluate"
    assert f"certificate of https://127.0.0.1:{port}/v1 did not verify" in result.notes
    assert "self-signed certificate" in result.notes and "SSL_CERT_FILE" in result.notes
    # the same certificate comes back on every attempt: asked once, not retried
    assert [call.outcome for call in result.llm_calls] == ["connection_error"]

    plain = _shared_tls_context(OpenAIProvider("judge", base_url="http://127.0.0.1:9/v1"))
    assert plain.cert_store_stats()["x509_ca"] == 0
    secure = _shared_tls_context(OpenAIProvider("judge", base_url=f"https://127.0.0.1:{port}/v1"))
    assert secure.verify_mode == ssl.CERT_REQUIRED and secure.check_hostname


def _shared_tls_context(provider: OpenAIProvider) -> ssl.SSLContext:
    """The one TLS context all of `provider`'s connection pools share."""
    contexts = {pool._pool._ssl_context for pool in provider._open_pools()}  # type: ignore[attr-defined]
    assert len(contexts) == 1  # one context shared by the pools
    (context,) = contexts
    return context  # type: ignore[no-any-return]
