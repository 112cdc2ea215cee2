"""`rubricflow mcp` over stdio, driven by the MCP SDK's own client: the server is a real
subprocess on a real SQLite store."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from llm.scripted import Recorded, Reply, ScriptedServer, openai_reply, verdict
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_support import FAIL, PASS, error_text, stdio_client, structured
from typer.testing import CliRunner

from rubricflow.cli import app
from rubricflow.tools.models import (
    EvaluateTextParams,
    EvaluationFeedback,
    ReviewResult,
    SubmitForReviewParams,
)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "mcp.md"
TOOLS = {
    "evaluate_text",
    "submit_for_review",
    "get_review",
    "revise_artifact",
    "list_rubrics",
    "explain_rubric",
}


async def test_tools_are_listed_with_typed_schemas(store_db: str) -> None:
    async with stdio_client(store_db) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        templates = (await client.list_resource_templates()).resource_templates
    assert set(tools) == TOOLS
    evaluate = tools["evaluate_text"]
    # the schemas are the operations' models, as a client sees them
    assert evaluate.input_schema == EvaluateTextParams.model_json_schema()
    assert evaluate.output_schema == EvaluationFeedback.model_json_schema(mode="serialization")
    assert evaluate.input_schema["additionalProperties"] is False
    assert "content" in evaluate.input_schema["required"]
    submit = tools["submit_for_review"]
    assert submit.input_schema == SubmitForReviewParams.model_json_schema()
    assert submit.output_schema == ReviewResult.model_json_schema(mode="serialization")
    for tool in tools.values():
        assert tool.description and tool.output_schema is not None
        assert tool.output_schema["type"] == "object"
        assert tool.annotations is not None
    assert tools["get_review"].annotations.read_only_hint is True  # type: ignore[union-attr]
    assert tools["revise_artifact"].annotations.read_only_hint is False  # type: ignore[union-attr]
    assert {t.uri_template for t in templates} == {"rubric://{id}", "rubric://{id}@{version}"}


async def test_a_bot_evaluates_submits_reads_and_revises(store_db: str) -> None:
    async with stdio_client(store_db) as client:
        # evaluate without storing: the failed criterion comes with what to fix
        failed = structured(
            await client.call_tool("evaluate_text", {"rubric": "gate@1.0.0", "content": FAIL})
        )
        assert failed["verdict"] == "fail" and failed["passed"] is False
        assert [f["criterion_id"] for f in failed["fixes"]] == ["clean"]
        assert failed["fixes"][0]["required"] is True
        assert failed["gating_failures"] == ["clean"]
        passed = structured(
            await client.call_tool("evaluate_text", {"rubric": "gate", "content": PASS})
        )
        assert (passed["verdict"], passed["rubric_version"], passed["fixes"]) == (
            "pass",
            "1.1.0",
            [],
        )
        # an inline rubric works the same
        inline = {
            "id": "short",
            "criteria": [
                {
                    "id": "brief",
                    "description": "Does not ramble.",
                    "scoring": {
                        "method": "deterministic",
                        "function": "contains_none",
                        "config": {"terms": ["furthermore"]},
                    },
                }
            ],
        }
        short = structured(
            await client.call_tool(
                "evaluate_text", {"rubric_document": json.dumps(inline), "content": PASS}
            )
        )
        assert (short["rubric_id"], short["verdict"]) == ("short", "pass")

        # submit: the review runs now and sends it back with the fixes
        submitted = structured(
            await client.call_tool(
                "submit_for_review", {"artifact_type": "note", "content": FAIL, "title": "t"}
            )
        )
        artifact = submitted["artifact_id"]
        assert submitted["status"] == "needs_revision" and submitted["verdict"] == "fail"
        assert submitted["evaluations"][0]["fixes"][0]["criterion_id"] == "clean"
        assert "revise_artifact" in submitted["next_step"]

        review = structured(await client.call_tool("get_review", {"artifact_id": artifact}))
        assert review["status"] == "needs_revision"
        assert {step["actor"] for step in review["history"]} >= {"bot"}  # --actor

        revised = structured(
            await client.call_tool(
                "revise_artifact",
                {"artifact_id": artifact, "content": PASS, "expected_version": review["version"]},
            )
        )
        assert (revised["status"], revised["revision"], revised["approved"]) == (
            "approved",
            2,
            True,
        )
        # the text content is the same JSON, for clients that read only text
        again = await client.call_tool("get_review", {"artifact_id": artifact})
        assert json.loads(again.content[0].text) == structured(again)

        listed = structured(await client.call_tool("list_rubrics", {}))
        assert {(r["id"], r["version"]) for r in listed["rubrics"]} == {
            ("gate", "1.1.0"),
            ("tone", "1.0.0"),
        }
        explained = structured(await client.call_tool("explain_rubric", {"rubric": "gate@1.0.0"}))
        assert explained["pass_threshold"] == 0.5
        assert explained["criteria"][0]["required"] is True
        assert "0.5" in explained["passing"]


async def test_bad_calls_are_tool_errors_naming_the_fix(store_db: str) -> None:
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("evaluate_text", {"rubric": "nope", "content": "x"}, "list_rubrics"),
        ("evaluate_text", {"rubric": "gate@9.9.9", "content": "x"}, "1.0.0, 1.1.0"),
        ("evaluate_text", {"content": "x"}, "give either `rubric`"),
        ("evaluate_text", {"rubric": "gate", "content": "x", "colour": 1}, "colour"),
        ("evaluate_text", {"rubric": "gate"}, "content"),
        ("evaluate_text", {"rubric": "tone", "content": "x"}, "'rubricflow mcp --llm SPEC'"),
        ("evaluate_text", {"rubric_document": "criteria: [", "content": "x"}, "YAML"),
        ("submit_for_review", {"artifact_type": "poem", "content": "x"}, "note, secret"),
        (
            "submit_for_review",
            {"artifact_type": "note", "content": "{", "content_format": "json"},
            "not JSON",
        ),
        ("get_review", {"artifact_id": "missing"}, "submit_for_review returned"),
        ("explain_rubric", {"rubric": "a@"}, "ID@VERSION"),
        ("no_such_tool", {}, "evaluate_text"),
    ]
    async with stdio_client(store_db) as client:
        for name, arguments, hint in cases:
            text = error_text(await client.call_tool(name, arguments))
            assert hint in text, (name, arguments, text)
        # a revision based on a stale version is refused, and nothing changes
        approved = structured(
            await client.call_tool("submit_for_review", {"artifact_type": "note", "content": PASS})
        )
        stale = {"artifact_id": approved["artifact_id"], "content": "new", "expected_version": 1}
        text = error_text(await client.call_tool("revise_artifact", stale))
        assert f"version {approved['version']}" in text, text
        unchanged = {"artifact_id": approved["artifact_id"]}
        assert structured(await client.call_tool("get_review", unchanged))["status"] == "approved"
        # the server is still there after every error
        assert structured(await client.call_tool("list_rubrics", {}))["rubrics"]


async def test_rubrics_are_resources(store_db: str) -> None:
    async with stdio_client(store_db) as client:
        listed = (await client.list_resources()).resources
        latest = await client.read_resource("rubric://gate")
        pinned = await client.read_resource("rubric://gate@1.0.0")
        as_yaml = await client.read_resource("rubric://gate@1.0.0?format=yaml")
        with pytest.raises(MCPError) as unknown:
            await client.read_resource("rubric://gate@3.0.0")
        with pytest.raises(MCPError) as wrong:
            await client.read_resource("file:///etc/passwd")
    assert {(r.uri, r.mime_type) for r in listed} == {
        ("rubric://gate", "application/json"),
        ("rubric://tone", "application/json"),
    }
    document = json.loads(latest.contents[0].text)  # type: ignore[union-attr]
    assert (document["id"], document["version"], document["pass_threshold"]) == (
        "gate",
        "1.1.0",
        0.75,
    )
    assert json.loads(pinned.contents[0].text)["version"] == "1.0.0"  # type: ignore[union-attr]
    assert as_yaml.contents[0].mime_type == "application/yaml"
    assert yaml.safe_load(as_yaml.contents[0].text) == json.loads(pinned.contents[0].text)  # type: ignore[union-attr]
    assert "stored versions: 1.0.0, 1.1.0" in str(unknown.value)
    assert "rubric://ID" in str(wrong.value)


def test_without_the_extra_the_command_names_the_install(tmp_path: Any) -> None:
    """`rubricflow mcp` where the SDK cannot be imported: exit 2, one line, no traceback."""
    launcher = (
        "import sys; sys.modules['mcp'] = None; from rubricflow.cli import main; main(sys.argv[1:])"
    )
    done = subprocess.run(
        [sys.executable, "-c", launcher, "mcp", "--db", str(tmp_path / "x.db")],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2, done.stderr
    assert "python -m pip install -e '.[mcp]' in the rubricflow checkout" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_a_judge_that_cannot_work_is_refused_at_start(tmp_path: Path, cli: CliRunner) -> None:
    db = str(tmp_path / "x.db")
    done = cli.invoke(app, ["mcp", "--db", db, "--llm", "nosuch:model"])
    assert done.exit_code == 2, done.output
    assert "--llm nosuch:model" in done.stderr and "Traceback" not in done.output


def _polite(request: Recorded) -> Reply:
    content = str(request.messages[-1]["content"]).split("<content>")[-1].lower()
    return openai_reply(verdict("MET" if "please" in content else "UNMET"))


async def test_the_hosts_judge_scores_llm_criteria(store_db: str) -> None:
    """`--llm` chooses the judge; the tool call only names the rubric."""
    with ScriptedServer(_polite) as judge:
        async with stdio_client(store_db, "--llm", f"openai:judge@{judge.url}/v1") as client:
            polite = structured(
                await client.call_tool("evaluate_text", {"rubric": "tone", "content": "please"})
            )
            rude = structured(
                await client.call_tool("evaluate_text", {"rubric": "tone", "content": "go away"})
            )
            chosen = error_text(
                await client.call_tool(
                    "evaluate_text", {"rubric": "tone", "content": "x", "llm": "python:os:system"}
                )
            )
    assert (polite["verdict"], rude["verdict"]) == ("pass", "fail")
    assert rude["fixes"][0]["criterion_id"] == "polite"
    assert len(judge.requests) == 2
    assert "llm" in chosen and "Extra inputs are not permitted" in chosen


def _json_blocks(markdown: str) -> list[Any]:
    return [json.loads(block) for block in re.findall(r"```json\n(.*?)```", markdown, re.S)]


async def test_the_documented_client_config_starts_the_server(store_db: str) -> None:
    """docs/mcp.md's Claude Desktop entry, with this store: the command and arguments a
    client runs serve the tools."""
    (desktop,) = [b for b in _json_blocks(DOCS.read_text()) if "command" in str(b)]
    entry = desktop["mcpServers"]["rubricflow"]
    args = [store_db if arg.endswith(".db") else arg for arg in entry["args"]]
    command = str(Path(sys.executable).with_name(entry["command"]))
    params = StdioServerParameters(command=command, args=args, env={"RUBRICFLOW_LLM": ""})
    async with Client(params, cache=None) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        submitted = structured(
            await client.call_tool("submit_for_review", {"artifact_type": "note", "content": PASS})
        )
    assert names == TOOLS
    assert submitted["status"] == "approved"
