"""A conversation is read once per review, a turn judged on its own sees its images, and
the CLI reads a conversation's image files beside the target file (local use)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from image_bytes import data_url, png
from llm.fixtures import clean_llm_env, fast
from llm.scripted import ScriptedServer, openai_reply, verdict
from typer.testing import CliRunner

import rubricflow.conversation as conversation_module
from rubricflow import evaluate, parse_rubric
from rubricflow.cli import app
from rubricflow.llm import LLMSession, create_provider

__all__ = ["clean_llm_env"]

IMAGE = png(3, 4)
RUN = [
    {"role": "user", "content": "Hello"},
    {"role": "assistant", "content": "Hi, how can I help?"},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "Is this square red?"},
            {"type": "image_url", "image_url": {"url": data_url(IMAGE)}},
        ],
    },
    {"role": "assistant", "content": "Yes, it is red."},
]


async def test_each_turn_judge_sees_the_images_of_its_turn() -> None:
    rubric = parse_rubric(
        {
            "id": "turns",
            "criteria": [
                {
                    "id": "answers",
                    "description": "answers the user",
                    "scope": "each_turn",
                    "scoring": {"method": "llm"},
                }
            ],
        }
    )
    with ScriptedServer(lambda request: openai_reply(verdict("MET"))) as server:
        provider = create_provider(f"openai:gpt-4o@{server.url}/v1", settings=fast())
        async with LLMSession(provider, cache=None) as session:
            evaluation = await evaluate(rubric, {"content": RUN}, options={"llm": session})
        bodies = [request.json for request in server.requests]
    assert evaluation.passed, evaluation.criteria[0].notes
    assert len(bodies) == 2

    def images(body: dict[str, Any]) -> list[Any]:
        return [
            part
            for message in body["messages"]
            if isinstance(message["content"], list)
            for part in message["content"]
            if part.get("type") == "image_url"
        ]

    first, second = sorted(bodies, key=lambda body: len(images(body)))
    assert images(first) == []  # turn 1 holds no image
    assert images(second) == [{"type": "image_url", "image_url": {"url": data_url(IMAGE)}}]
    assert "Yes, it is red." in json.dumps(second)


async def test_a_conversation_is_read_once_per_review(monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[Any] = []
    real = conversation_module.read_conversation

    def counting(content: Any, **options: Any) -> Any:
        if isinstance(content, list):
            reads.append(content)
        return real(content, **options)

    monkeypatch.setattr(conversation_module, "read_conversation", counting)
    rubric = parse_rubric(
        {
            "id": "many",
            "criteria": [
                {"id": f"c{n}", "description": "d", "scope": scope, "scoring": scoring}
                for n, (scope, scoring) in enumerate(
                    [
                        ("conversation", {"method": "deterministic", "function": "non_empty"}),
                        ("each_turn", {"method": "deterministic", "function": "non_empty"}),
                        ("last_turn", {"method": "deterministic", "function": "non_empty"}),
                        ("trajectory", {"method": "deterministic", "function": "non_empty"}),
                        (
                            "conversation",
                            {
                                "method": "deterministic",
                                "function": "trajectory.final_answer_follows_tools",
                            },
                        ),
                    ]
                )
            ],
        }
    )
    evaluation = await evaluate(rubric, {"content": RUN})
    assert [c.status for c in evaluation.criteria] == ["scored"] * 5
    whole = [content for content in reads if len(content) == len(RUN)]
    assert len(whole) == 1, f"read {len(whole)} times"


def test_the_cli_reads_image_files_beside_the_target_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pics").mkdir()
    (tmp_path / "pics" / "square.png").write_bytes(IMAGE)
    target = {
        "id": "post",
        "content": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Post"},
                    {"type": "image", "path": "pics/square.png"},
                ],
            },
            {"role": "assistant", "content": "Posted."},
        ],
    }
    (tmp_path / "post.json").write_text(json.dumps(target))
    (tmp_path / "r.yaml").write_text(
        "id: r\ncriteria:\n  - id: filled\n    description: d\n"
        "    scoring: {method: deterministic, function: non_empty}\n"
    )
    runner = CliRunner()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the path is the target file's, not the cwd's
    result = runner.invoke(
        app, ["eval", str(tmp_path / "r.yaml"), str(tmp_path / "post.json"), "--json"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout.splitlines()[0])["verdict"] == "pass"

    target["content"][0]["content"][1]["path"] = "../outside.png"  # type: ignore[index]
    (tmp_path / "post.json").write_text(json.dumps(target))
    refused = runner.invoke(app, ["eval", str(tmp_path / "r.yaml"), str(tmp_path / "post.json")])
    assert refused.exit_code == 2
    assert "$.messages[0].content[1]" in refused.output and "no image file" in refused.output


def test_artifacts_submit_reads_image_files_beside_the_content_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`artifacts submit --type T FILE` stores the conversation with its image files read
    from beside FILE and put inline; one outside FILE's folder is refused, exit 2."""
    (tmp_path / "pics").mkdir()
    (tmp_path / "pics" / "square.png").write_bytes(IMAGE)
    talk = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Post"},
                {"type": "image", "path": "pics/square.png"},
            ],
        },
        {"role": "assistant", "content": "Posted."},
    ]
    (tmp_path / "talk.json").write_text(json.dumps(talk))
    (tmp_path / "r.yaml").write_text(
        "id: r\ncriteria:\n  - id: filled\n    description: d\n"
        "    scoring: {method: deterministic, function: non_empty}\n"
    )
    db = f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"
    runner = CliRunner()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    for args in (
        ["rubrics", "register", str(tmp_path / "r.yaml"), "--db", db],
        ["types", "set", "post", "--rubric", "r", "--db", db],
    ):
        done = runner.invoke(app, args)
        assert done.exit_code == 0, done.output
    submitted = runner.invoke(
        app,
        [
            "artifacts",
            "submit",
            str(tmp_path / "talk.json"),
            "--type",
            "post",
            "--db",
            db,
            "--json",
        ],
    )
    assert submitted.exit_code == 0, submitted.output
    artifact_id = json.loads(submitted.stdout)["artifact"]["id"]
    shown = runner.invoke(app, ["artifacts", "show", artifact_id, "--db", db, "--json"])
    stored = json.dumps(json.loads(shown.stdout))
    assert "pics/square.png" not in stored and base64.b64encode(IMAGE).decode()[:40] in stored

    talk[0]["content"][1]["path"] = "../outside.png"  # type: ignore[index]
    (tmp_path / "talk.json").write_text(json.dumps(talk))
    refused = runner.invoke(
        app, ["artifacts", "submit", str(tmp_path / "talk.json"), "--type", "post", "--db", db]
    )
    assert refused.exit_code == 2
    assert "no image file" in refused.output
