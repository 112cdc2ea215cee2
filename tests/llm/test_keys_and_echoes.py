"""Issue 16, secrets: credentials written in a judge URL are never persisted or rendered;
secrets a judge server echoes back are scrubbed from everything it returns; a provider's
ambient key goes only to that provider's own host (or its configured base URL).

Every test talks HTTP to a real server on 127.0.0.1 and, where a store is involved, reads
a real SQLite file back with the standard library."""

from __future__ import annotations

import base64
import json
import sqlite3
import urllib.parse
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from rubricflow.cli import app
from rubricflow.errors import ConfigurationError
from rubricflow.llm import LLMSession, create_provider
from rubricflow.runs import read_results_file

from .fixtures import fast, rubric
from .scripted import (
    Recorded,
    Reply,
    ScriptedServer,
    anthropic_reply,
    ollama_reply,
    openai_reply,
    verdict,
)

KEY = "sk-proj-EchoMe0123456789abcdefXYZ"
OTHER_KEY = "named-for-this-host-0123456789"
USER = "alice"
PASSWORD = "hunter2/Pa$$word+42"
QUERY_KEY = "qk/0123456789+secret"
ENC_PASSWORD = urllib.parse.quote(PASSWORD, safe="")
ENC_QUERY_KEY = urllib.parse.quote(QUERY_KEY, safe="")
BASIC = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()


def forms(*secrets: str) -> list[str]:
    """Every way a secret can be written: raw, URL-encoded, base64 Basic."""
    shown = []
    for secret in secrets:
        shown += [secret, urllib.parse.quote(secret, safe=""), urllib.parse.quote_plus(secret)]
    return [*shown, BASIC, BASIC.rstrip("=")]


ALL_SECRETS = forms(KEY, OTHER_KEY, PASSWORD, QUERY_KEY)


def assert_clean(where: str, text: str) -> None:
    for secret in ALL_SECRETS:
        assert secret not in text, f"{where} shows the secret {secret!r}"


def dump_sqlite(path: Path) -> str:
    """Every value of every column of every table of a SQLite file, as text."""
    connection = sqlite3.connect(path)
    try:
        tables = [
            row[0]
            for row in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")
        ]
        assert tables
        parts = []
        for table in tables:
            for row in connection.execute(f'SELECT * FROM "{table}"'):
                parts += [
                    value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
                    for value in row
                ]
        return "\n".join(parts)
    finally:
        connection.close()


def echoed(request: Recorded) -> str:
    """What a misbehaving gateway echoes: every credential header, decoded too, and the
    request's path and query."""
    auth = request.headers.get("authorization", "")
    token = auth.partition(" ")[2]
    decoded = ""
    if auth.lower().startswith("basic "):
        decoded = base64.b64decode(token).decode()
    xkey = request.headers.get("x-api-key", "")
    return (
        f"authorization={auth} token={token} basic-decoded={decoded} x-api-key={xkey} "
        f"quoted={urllib.parse.quote(token, safe='')} path={request.path}"
    )


def echoing_judge() -> tuple[ScriptedServer, list[int]]:
    """A judge that first fails with the credentials in its error body, then answers MET
    with them in its reasoning and in its model name, in the wire format of the path."""
    seen = [0]

    def respond(request: Recorded) -> Reply:
        seen[0] += 1
        echo = echoed(request)
        if seen[0] == 1:
            return Reply(503, {"error": {"message": f"gateway busy; you sent {echo}"}})
        if request.path.endswith("/messages"):
            return anthropic_reply(verdict("MET", f"Polite. {echo}"), model=f"claude {echo}")
        if request.path.endswith("/api/chat"):
            return ollama_reply(verdict("MET", f"Polite. {echo}"), model=f"llama {echo}")
        return openai_reply(verdict("MET", f"Polite. {echo}"), model=f"judge {echo}")

    return ScriptedServer(respond), seen


def write_inputs(tmp_path: Path) -> tuple[Path, Path]:
    rubric_file = tmp_path / "r.yaml"
    rubric_file.write_text(
        "id: r\nversion: 1.0.0\ncriteria:\n  - id: polite\n    description: The reply is polite.\n"
    )
    targets = tmp_path / "t.jsonl"
    targets.write_text(
        '{"id": "t1", "content": "Thanks!"}\n{"id": "t2", "content": "Thank you."}\n'
    )
    return rubric_file, targets


def run_everything(tmp_path: Path, spec: str) -> dict[str, str]:
    """`eval` into a results file, a SQLite store and an HTML report, then `llm check`
    (human and JSON); every text a user or a later reader can see."""
    rubric_file, targets = write_inputs(tmp_path)
    results, report, db = tmp_path / "results.jsonl", tmp_path / "report.html", tmp_path / "s.db"
    runner = CliRunner()
    evaluated = runner.invoke(
        app,
        [
            "eval",
            str(rubric_file),
            str(targets),
            "--llm",
            spec,
            "--no-cache",
            "--json",
            "--db",
            str(db),
            "-o",
            str(results),
            "--report",
            str(report),
            "--targets-in-flight",
            "1",
        ],
    )
    assert evaluated.exit_code == 0, evaluated.output
    check_human = runner.invoke(app, ["llm", "check", spec])
    check_json = runner.invoke(app, ["llm", "check", spec, "--json"])
    assert check_json.exit_code in (0, 1), check_json.output
    return {
        "eval output": evaluated.output,
        "results file": results.read_text(),
        "HTML report": report.read_text(),
        "SQLite store": dump_sqlite(db),
        "llm check": check_human.output,
        "llm check --json": check_json.output,
    }


# -- 1. credentials written in a judge URL -------------------------------------------------


def test_url_credentials_are_used_but_never_persisted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RUBRICFLOW_LLM_MAX_ATTEMPTS", "1")
    with ScriptedServer(lambda request: openai_reply(verdict("MET"))) as server:
        host = server.url.removeprefix("http://")
        spec = f"openai:judge@http://{USER}:{ENC_PASSWORD}@{host}/v1?key={ENC_QUERY_KEY}"
        seen = run_everything(tmp_path, spec)
        sent = server.requests[0]
    # the secrets were sent, from memory: Basic auth, and the query parameter where it
    # belongs (after the path, not glued into it)
    assert sent.headers["authorization"] == f"Basic {BASIC}"
    assert sent.path == f"/v1/chat/completions?key={ENC_QUERY_KEY}"
    for where, text in seen.items():
        assert_clean(where, text)
    # the run's options keep the judge, readable but masked
    info = read_results_file(tmp_path / "results.jsonl").info
    assert info.options["llm"] == f"openai:judge@http://***@{host}/v1?key=***"
    assert "key=***" in seen["HTML report"]


# -- 2. secrets a judge server echoes back ------------------------------------------------


@pytest.mark.parametrize("how", ["bearer", "basic", "x-api-key", "named key"])
def test_echoed_secrets_are_scrubbed_everywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    server, _ = echoing_judge()
    with server:
        host = server.url.removeprefix("http://")
        if how == "bearer":
            monkeypatch.setenv("OPENAI_API_KEY", KEY)
            monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
            spec = "openai:judge"
        elif how == "basic":
            spec = f"openai:judge@http://{USER}:{ENC_PASSWORD}@{host}/v1?key={ENC_QUERY_KEY}"
        elif how == "x-api-key":
            monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
            monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
            spec = "anthropic:judge"
        else:
            monkeypatch.setenv("RUBRICFLOW_LLM_API_KEY", OTHER_KEY)
            spec = f"ollama:judge@{server.url}"
        seen = run_everything(tmp_path, spec)
        echoes = [echoed(request) for request in server.requests]
    # the server did get (and echo) a credential, so there was something to scrub
    assert any(secret in echo for echo in echoes for secret in ALL_SECRETS)
    for where, text in seen.items():
        assert_clean(where, text)
    stored = read_results_file(tmp_path / "results.jsonl").evaluations[0].criteria[0]
    assert stored.verdict == "MET" and stored.reasoning.startswith("Polite. authorization=")
    assert "***" in stored.reasoning and "***" in stored.llm_calls[-1].model


async def test_the_session_scrubs_answers_models_and_errors() -> None:
    server, _ = echoing_judge()
    with server:
        host = server.url.removeprefix("http://")
        spec = f"openai:judge@http://{USER}:{ENC_PASSWORD}@{host}/v1"
        from rubricflow import evaluate

        async with LLMSession(spec, cache=None, settings=fast()) as session:
            evaluation = await evaluate(
                rubric({"id": "polite", "description": "polite"}),
                "Thanks!",
                options={"llm": session},
            )
    text = json.dumps(evaluation.to_dict())
    assert evaluation.criteria[0].verdict == "MET"
    assert [call.outcome for call in evaluation.criteria[0].llm_calls] == ["http_error", "ok"]
    assert_clean("evaluation", text)


def test_the_scrubber_knows_every_encoding() -> None:
    from rubricflow.llm.secrets import SecretScrubber

    scrubber = SecretScrubber.of(KEY, PASSWORD, basic=(USER, PASSWORD))
    for form in [*forms(KEY, PASSWORD), f"Bearer {KEY}", json.dumps(PASSWORD)[1:-1]]:
        assert scrubber.scrub(f"<{form}>") in ("<***>", "<Bearer ***>"), form
    assert scrubber.scrub("nothing secret") == "nothing secret"
    assert SecretScrubber.of("ab").scrub("a cab") == "a cab"  # too short to be told apart


# a lone surrogate cannot be sent over HTTP (it has no UTF-8 form), so no secret holds one
@given(
    secret=st.text(
        st.characters(blacklist_characters="*", blacklist_categories=("Cs",)),
        min_size=4,
        max_size=40,
    ),
    user=st.text(
        st.characters(blacklist_characters="*:", blacklist_categories=("Cs",)), max_size=12
    ),
    before=st.text(st.characters(blacklist_characters="*"), max_size=20),
    after=st.text(st.characters(blacklist_characters="*"), max_size=20),
)
def test_no_encoding_of_any_secret_survives(
    secret: str, user: str, before: str, after: str
) -> None:
    from rubricflow.llm.secrets import SecretScrubber

    scrubber = SecretScrubber.of(secret, basic=(user, secret))
    pair = base64.b64encode(f"{user}:{secret}".encode()).decode()
    sent = [
        secret,
        f"Bearer {secret}",
        urllib.parse.quote(secret, safe=""),
        urllib.parse.quote_plus(secret),
        json.dumps(secret)[1:-1],
        pair,
        f"Basic {pair}",
    ]
    for form in sent:
        assert form not in scrubber.scrub(f"{before}{form}{after}")


# -- 3. which host gets which key ---------------------------------------------------------


def ask_once(spec: str) -> None:
    import asyncio

    from rubricflow.llm.check import check_provider

    async def run() -> None:
        provider = create_provider(spec, settings={"max_attempts": 1})
        try:
            await check_provider(provider)
        finally:
            await provider.aclose()

    asyncio.run(run())


def reply_for(request: Recorded) -> Reply:
    if request.path.endswith("/messages"):
        return anthropic_reply(verdict())
    if request.path.endswith("/api/chat"):
        return ollama_reply(verdict())
    return openai_reply(verdict())


def test_the_ambient_key_goes_only_to_its_providers_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with ScriptedServer(reply_for) as server:
        ask_once(f"openai:m@{server.url}/v1")
        ask_once(f"anthropic:m@{server.url}")
        ask_once(f"ollama:m@{server.url}")
        got = [
            (r.headers.get("authorization"), r.headers.get("x-api-key")) for r in server.requests
        ]
    assert got == [(None, None)] * 3


def test_the_configured_base_url_gets_the_providers_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with ScriptedServer(reply_for) as server, ScriptedServer(reply_for) as elsewhere:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        ask_once("openai:m")
        ask_once(f"openai:m@{server.url}/v1")  # the same host, written out
        ask_once("anthropic:m")
        ask_once(f"openai:m@{elsewhere.url}/v1")
        ask_once(f"anthropic:m@{elsewhere.url}")
        here = [
            r.headers.get("authorization") or r.headers.get("x-api-key") for r in server.requests
        ]
        there = [
            r.headers.get("authorization") or r.headers.get("x-api-key") for r in elsewhere.requests
        ]
    assert here == [f"Bearer {KEY}", f"Bearer {KEY}", KEY]
    assert there == [None, None]


def test_another_host_gets_only_the_key_named_for_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("RUBRICFLOW_LLM_API_KEY", OTHER_KEY)
    with ScriptedServer(reply_for) as server:
        ask_once(f"openai:m@{server.url}/v1")
        ask_once(f"anthropic:m@{server.url}")
        ask_once(f"ollama:m@{server.url}")
        got = [
            r.headers.get("authorization") or r.headers.get("x-api-key") for r in server.requests
        ]
    assert got == [f"Bearer {OTHER_KEY}", OTHER_KEY, f"Bearer {OTHER_KEY}"]


@pytest.mark.parametrize(
    "spec",
    [
        f"openai:gpt-4o-mini?api_key={KEY}",
        f"openai:gpt-4o-mini;key={KEY}",
        f"anthropic:claude,api-key={KEY}",
        f"openai:m key={KEY}@http://127.0.0.1:9/v1",
    ],
)
def test_a_key_is_never_read_from_a_spec(spec: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-key-0123456789")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-env-key-0123456789")
    with pytest.raises(ConfigurationError, match="never read from a spec") as raised:
        create_provider(spec)
    message = str(raised.value)
    assert KEY not in message
    assert "RUBRICFLOW_LLM_API_KEY" in message
    assert ("OPENAI_API_KEY" in message) or ("ANTHROPIC_API_KEY" in message)


def test_the_cli_refuses_a_key_in_a_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    result = CliRunner().invoke(app, ["llm", "check", f"openai:gpt-4o-mini?api_key={KEY}"])
    assert result.exit_code == 2
    assert "never read from a spec" in result.output and KEY not in result.output
