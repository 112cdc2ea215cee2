"""Judge calls through the providers' batch APIs (issue 31, item 8): `eval --batch` and
`use_batch_api`, against the scripted server's OpenAI Batch API and Anthropic Message
Batches over HTTP on 127.0.0.1. Each line's answer goes back to its criterion; a failed,
expired or cancelled line makes its criterion unable_to_evaluate with the reason, and
the rest still score; an interrupted run polls the batch it already sent; the ledger
holds the batch price."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from rubricflow.cli import app
from rubricflow.engine.executor import evaluate
from rubricflow.errors import ConfigurationError
from rubricflow.llm import LLMSession
from rubricflow.llm.batching import BatchLedger, use_batch_api

from .batch_server import BatchBackend, LineFailure
from .fixtures import rubric, session_for
from .scripted import ScriptedServer, anthropic_reply, openai_reply

CRITERIA = [
    {"id": f"c{n}", "description": f"says {n}", "scoring": {"method": "llm_verdict"}}
    for n in range(3)
]


def _asked(body: dict[str, Any]) -> str:
    """The criterion a line asks about (c0, c1, c2), from its prompt."""
    text = json.dumps(body)
    return next(f"c{n}" for n in range(3) if f"says {n}" in text)


def openai_answers(fail: str | None = None) -> Any:
    def answer(body: dict[str, Any]) -> dict[str, Any] | LineFailure:
        if _asked(body) == fail:
            return LineFailure(400, "the prompt is too long")
        verdict = "UNMET" if _asked(body) == "c2" else "MET"
        return dict(openai_reply({"reasoning": "read it", "verdict": verdict}).body)

    return answer


def anthropic_answers(fail: str | None = None) -> Any:
    def answer(body: dict[str, Any]) -> dict[str, Any] | LineFailure:
        if _asked(body) == fail:
            return LineFailure(400, "bad params")
        verdict = "UNMET" if _asked(body) == "c2" else "MET"
        return dict(anthropic_reply({"reasoning": "read it", "verdict": verdict}).body)

    return answer


def judged(server: ScriptedServer, tmp_path: Path, prefix: str = "openai", **options: Any) -> Any:
    async def go() -> Any:
        async with session_for(server, prefix=prefix) as session:
            use_batch_api(session, poll=0.01, ledger=BatchLedger(tmp_path / "b.json"), **options)
            return await evaluate(
                rubric(*CRITERIA), {"id": "t", "content": "hello"}, options={"llm": session}
            )

    return asyncio.run(go())


def by_id(evaluation: Any) -> dict[str, Any]:
    return {c.criterion_id: c for c in evaluation.criteria}


def test_openai_batch_answers_each_criterion_and_a_failed_line_is_named(
    server: ScriptedServer, tmp_path: Path
) -> None:
    backend = BatchBackend(openai_answers(fail="c1"))
    server.responder = backend
    evaluation = judged(server, tmp_path)
    results = by_id(evaluation)
    assert results["c0"].status == "scored" and results["c0"].score == 1
    assert results["c2"].status == "scored"
    assert {call.provider for call in results["c0"].llm_calls} == {"openai-batch"}
    assert results["c1"].status == "unable_to_evaluate"
    assert "batch line failed (HTTP 400)" in results["c1"].notes
    assert "too long" in results["c1"].notes
    assert evaluation.verdict == "incomplete"
    # one batch of three lines, one upload; no live chat completion
    assert len(backend.batches) == 1
    assert len(next(iter(backend.batches.values())).lines) == 3
    assert not any(r.path.endswith("/chat/completions") for r in server.requests)
    assert json.loads((tmp_path / "b.json").read_text()) == {}  # read: nothing left to resume


def test_anthropic_message_batches_read_results_from_the_judge_s_own_host(
    server: ScriptedServer, tmp_path: Path
) -> None:
    backend = BatchBackend(anthropic_answers())
    server.responder = backend
    evaluation = judged(server, tmp_path, prefix="anthropic")
    assert [c.status for c in evaluation.criteria] == ["scored"] * 3
    assert evaluation.verdict == "fail"  # c2 is UNMET
    results = [r for r in server.requests if r.path.endswith("/results")]
    assert results and all(r.path.startswith("/v1/messages/batches/") for r in results)
    assert not any(r.path == "/v1/messages" for r in server.requests)


def test_anthropic_errored_line_is_unable_to_evaluate(
    server: ScriptedServer, tmp_path: Path
) -> None:
    server.responder = BatchBackend(anthropic_answers(fail="c0"))
    results = by_id(judged(server, tmp_path, prefix="anthropic"))
    assert results["c0"].status == "unable_to_evaluate"
    assert "batch line errored" in results["c0"].notes and "bad params" in results["c0"].notes
    assert results["c1"].status == results["c2"].status == "scored"


@pytest.mark.parametrize("prefix", ["openai", "anthropic"])
def test_an_expired_batch_keeps_its_answers_and_names_the_rest(
    server: ScriptedServer, tmp_path: Path, prefix: str
) -> None:
    backend = BatchBackend(openai_answers() if prefix == "openai" else anthropic_answers())
    backend.expire = 1
    server.responder = backend
    evaluation = judged(server, tmp_path, prefix=prefix)
    statuses = [c.status for c in evaluation.criteria]
    assert statuses.count("scored") == 1 and statuses.count("unable_to_evaluate") == 2
    for result in evaluation.criteria:
        if result.status == "unable_to_evaluate":
            assert "expired" in result.notes
    assert evaluation.verdict == "incomplete"


def test_a_failed_batch_fails_every_call_with_its_reason(
    server: ScriptedServer, tmp_path: Path
) -> None:
    backend = BatchBackend(openai_answers())
    backend.fail_batch = "the input file has a malformed line"
    server.responder = backend
    evaluation = judged(server, tmp_path)
    assert [c.status for c in evaluation.criteria] == ["unable_to_evaluate"] * 3
    assert all("malformed line" in c.notes for c in evaluation.criteria)


def test_an_interrupted_run_polls_the_batch_it_sent(server: ScriptedServer, tmp_path: Path) -> None:
    backend = BatchBackend(openai_answers())
    backend.hold.set()
    server.responder = backend
    ledger = tmp_path / "b.json"

    async def first() -> None:
        async with session_for(server) as session:
            use_batch_api(session, poll=0.01, ledger=BatchLedger(ledger))
            task = asyncio.ensure_future(
                evaluate(rubric(*CRITERIA), {"id": "t", "content": "hi"}, options={"llm": session})
            )
            await asyncio.to_thread(backend.created.wait, 10)
            for _ in range(1000):  # until it is polled: sent and written down
                if any(batch.polls for batch in backend.batches.values()):
                    break
                await asyncio.sleep(0.01)
            task.cancel()  # the crash: the batch is out, nothing has come back
            with pytest.raises(asyncio.CancelledError):
                await task

    asyncio.run(first())
    assert len(backend.batches) == 1
    assert len(json.loads(ledger.read_text())) == 3  # written down before waiting
    backend.hold.clear()

    async def second() -> Any:
        async with session_for(server) as session:
            use_batch_api(session, poll=0.01, ledger=BatchLedger(ledger))
            return await evaluate(
                rubric(*CRITERIA), {"id": "t", "content": "hi"}, options={"llm": session}
            )

    evaluation = asyncio.run(second())
    assert [c.status for c in evaluation.criteria] == ["scored"] * 3
    assert len(backend.batches) == 1  # not sent (nor paid for) twice
    assert json.loads(ledger.read_text()) == {}


def test_a_judge_without_a_batch_api_is_refused(server: ScriptedServer) -> None:
    session = LLMSession(f"ollama:llama3.2@{server.url}", cache=None)
    with pytest.raises(ConfigurationError, match="no batch API"):
        use_batch_api(session)


@pytest.fixture
def files(tmp_path: Path) -> tuple[str, str]:
    (tmp_path / "r.yaml").write_text(yaml.safe_dump({"id": "three", "criteria": CRITERIA}))
    (tmp_path / "t.json").write_text(json.dumps({"id": "t1", "content": "hello"}))
    return str(tmp_path / "r.yaml"), str(tmp_path / "t.json")


def test_eval_batch_costs_the_batch_price_in_the_ledger(
    server: ScriptedServer, files: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RUBRICFLOW_BATCH_POLL", "0.01")
    monkeypatch.setenv("RUBRICFLOW_LLM_PRICE", "1000,1000")  # 120 tokens a call: 0.12 live
    backend = BatchBackend(openai_answers())
    server.responder = backend
    runner = CliRunner()
    spec = f"openai:judge@{server.url}/v1"
    result = runner.invoke(app, ["eval", *files, "--json", "--no-cache", "--llm", spec, "--batch"])
    line = json.loads(next(x for x in result.stdout.splitlines() if x.startswith("{")))
    assert [c["status"] for c in line["criteria"]] == ["scored"] * 3, result.output
    assert line["usage"]["cost"] == pytest.approx(3 * 0.12 * 0.5)
    assert len(backend.batches) == 1
    live = runner.invoke(app, ["eval", *files, "--no-cache", "--llm", spec, "--estimate"])
    batched = runner.invoke(
        app, ["eval", *files, "--no-cache", "--llm", spec, "--estimate", "--batch"]
    )
    costs = [float(r.output.rsplit("cost ", 1)[1].split()[0]) for r in (live, batched)]
    assert costs[1] == pytest.approx(costs[0] * 0.5), (live.output, batched.output)
    assert len(backend.batches) == 1  # an estimate sends nothing
    refused = runner.invoke(
        app, ["eval", *files, "--no-cache", "--llm", f"ollama:m@{server.url}", "--batch"]
    )
    assert refused.exit_code == 2 and "no batch API" in refused.output


def test_self_consistency_samples_are_a_line_each(server: ScriptedServer, tmp_path: Path) -> None:
    """Three samples of one question (same prompt, same temperature) are three batch lines
    and three answers, as they are three calls paid for."""
    said = iter(["MET", "MET", "UNMET"])

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        return dict(openai_reply({"reasoning": "read it", "verdict": next(said)}).body)

    backend = BatchBackend(answer)
    server.responder = backend

    async def go() -> Any:
        async with session_for(server) as session:
            use_batch_api(session, poll=0.01, ledger=BatchLedger(tmp_path / "b.json"))
            return await evaluate(
                rubric(CRITERIA[0]),
                {"id": "t", "content": "hello"},
                options={"llm": session, "samples": 3},
            )

    result = asyncio.run(go()).criteria[0]
    assert len(backend.batches) == 1
    assert len(next(iter(backend.batches.values())).lines) == 3
    assert len(result.llm_calls) == 3
    assert result.verdict == "MET"
    assert result.confidence == pytest.approx(2 / 3)  # three answers: two agree


_RECORDER = """
import sys
from pathlib import Path
from rubricflow.llm.batching import BatchLedger

ledger = BatchLedger(Path(sys.argv[1]))
ledger.batch_of("e", "warm")  # read once, as a run does on its first call
sys.stdin.readline()  # both processes start recording together
for n in range(150):
    ledger.record("e", sys.argv[2], [f"{sys.argv[2]}-{n}"])
"""


def test_two_processes_recording_batches_keep_both(tmp_path: Path) -> None:
    path = tmp_path / "judge-batches.json"
    recorders = [
        subprocess.Popen(
            [sys.executable, "-c", _RECORDER, str(path), name],
            stdin=subprocess.PIPE,
            text=True,
        )
        for name in ("a", "b")
    ]
    for recorder in recorders:
        assert recorder.stdin is not None
        recorder.stdin.write("go\n")
        recorder.stdin.flush()
    assert [recorder.wait(timeout=120) for recorder in recorders] == [0, 0]
    fresh = BatchLedger(path)
    for name in ("a", "b"):
        for n in range(150):
            assert fresh.batch_of("e", f"{name}-{n}") == name, (name, n)


def test_two_ledgers_on_one_file_keep_both_batches(tmp_path: Path) -> None:
    path = tmp_path / "judge-batches.json"
    first, second = BatchLedger(path), BatchLedger(path)
    assert first.batch_of("e", "x") is None and second.batch_of("e", "y") is None
    first.record("e", "batch-1", ["x"])
    second.record("e", "batch-2", ["y"])
    first.forget(["nothing"])
    fresh = BatchLedger(path)
    assert (fresh.batch_of("e", "x"), fresh.batch_of("e", "y")) == ("batch-1", "batch-2")
