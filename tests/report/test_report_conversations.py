"""Reports show a conversation turn by turn: each turn's text escaped, its tool calls
folded open with their arguments, and images inline (checked image types as data URLs)
up to a size, a larger one named instead."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from image_bytes import data_url, png
from typer.testing import CliRunner

from rubricflow import evaluate_sync, parse_rubric
from rubricflow.cli import app
from rubricflow.report import render_report
from rubricflow.report.conversation import MAX_IMAGE_BYTES
from rubricflow.runs import RunData, RunInfo

from .dom import parse

RUBRIC = parse_rubric(
    {
        "id": "run",
        "criteria": [
            {
                "id": "answered",
                "description": "answers after its tools",
                "scoring": {
                    "method": "deterministic",
                    "function": "trajectory.final_answer_follows_tools",
                },
            }
        ],
    }
)
SMALL = png(3, 4)
BIG = SMALL + b"\x00" * (MAX_IMAGE_BYTES + 10)  # a PNG header over the report's cap
HOSTILE = '</pre><script>alert("x")</script><img src=x onerror=alert(1)>'
TALK = [
    {
        "role": "user",
        "content": [
            {"type": "text", "text": HOSTILE},
            {"type": "image_url", "image_url": {"url": data_url(SMALL)}},
            {"type": "image", "media_type": "image/png", "data": base64.b64encode(BIG).decode()},
        ],
    },
    {
        "role": "assistant",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "search", "arguments": '{"q": "<b>"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "found"},
    {"role": "assistant", "content": "Here it is."},
]


def test_a_conversation_is_shown_turn_by_turn_escaped_with_images_capped() -> None:
    evaluation = evaluate_sync(RUBRIC, {"id": "t1", "content": TALK})
    run = RunData(RunInfo(id="r", rubric_id="run", rubric_version="1.0.0"), [evaluation])
    page = render_report(run, contents={"t1": TALK})
    assert "<script>alert" not in page and "<img src=x" not in page  # escaped, not markup
    tree = parse(page)
    (conversation,) = tree.by_class("conversation")
    turns = conversation.by_class("turn")
    assert [t.attrs["data-message"] for t in turns] == ["0", "1", "2", "3"]
    assert HOSTILE in turns[0].text  # shown as the text it is
    (image,) = turns[0].by_tag("img")
    assert image.attrs["src"] == data_url(SMALL)
    (omitted,) = turns[0].by_class("turn-omitted")
    assert "over the report's" in omitted.text
    (call,) = turns[1].by_class("tool-call")
    assert call.attrs.get("open") is not None or "open" in call.attrs
    assert "search" in call.text and '"q": "<b>"' in call.text
    assert "result of call c1" in turns[2].text
    # the page's policy lets data: images in and nothing else
    assert "img-src data:" in page


def test_eval_report_shows_the_conversations_it_judged(tmp_path: Path) -> None:
    rubric_file = tmp_path / "run.yaml"
    rubric_file.write_text(json.dumps(RUBRIC.to_dict()))
    targets = tmp_path / "runs.jsonl"
    targets.write_text(
        json.dumps({"id": "one", "content": TALK})
        + "\n"
        + json.dumps({"id": "two", "content": "plain text"})
        + "\n"
    )
    report = tmp_path / "report.html"
    result = CliRunner().invoke(
        app, ["eval", str(rubric_file), str(targets), "--report", str(report), "-q"]
    )
    assert report.exists(), result.output
    tree = parse(report.read_text())
    (conversation,) = tree.by_class("conversation")  # the text target has none
    assert "Here it is." in conversation.text


def test_a_report_embeds_images_up_to_its_total_budget_then_names_them() -> None:
    """Each image is under the per-image cap, but together they pass the report's budget:
    the ones past it are named, not embedded, so the file stays bounded."""
    from rubricflow.report.conversation import ImageBudget, conversation_view

    picture = SMALL + b"\x00" * 1000
    talk = [
        {
            "role": "user",
            "content": [{"type": "image_url", "image_url": {"url": data_url(picture)}}],
        }
    ]
    budget = ImageBudget(total=len(picture) * 2 + 10)  # room for two
    views = [conversation_view(talk, budget) for _ in range(3)]
    kinds = [view[0]["parts"][0]["kind"] for view in views if view is not None]
    assert kinds == ["image", "image", "omitted"]
    assert "used up" in views[2][0]["parts"][0]["text"]  # type: ignore[index]
