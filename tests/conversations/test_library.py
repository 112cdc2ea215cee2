"""The conversation rubrics of the library score a sample run as they describe (their
deterministic criteria; the judged ones need a judge and are left unscored here)."""

from __future__ import annotations

from pathlib import Path

from rubricflow import load_file
from rubricflow.engine import evaluate
from rubricflow.plugins import create_plugin_manager
from rubricflow.results import Target

RUBRICS = Path(__file__).resolve().parents[2] / "rubrics"
RUN = [
    {"role": "user", "content": "Book me a flight to Lisbon on Friday."},
    {
        "role": "assistant",
        "tool_calls": [{"id": "1", "name": "search_flights", "arguments": {"to": "LIS"}}],
    },
    {"role": "tool", "tool_call_id": "1", "content": "TP123 at 09:40, 120 EUR"},
    {
        "role": "assistant",
        "tool_calls": [
            {"id": "2", "name": "book_flight", "arguments": {"flight_id": "TP123", "passengers": 1}}
        ],
    },
    {"role": "tool", "tool_call_id": "2", "content": "booked, reference ABC123"},
    {"role": "assistant", "content": "Booked TP123 at 09:40 for 120 EUR, reference ABC123."},
]


def _deterministic(rubric_file: str, content: object) -> dict[str, float | None]:
    import asyncio

    rubric = load_file(RUBRICS / rubric_file).rubrics[0]
    evaluation = asyncio.run(
        evaluate(rubric, Target(content=content), plugins=create_plugin_manager())
    )
    return {c.criterion_id: c.score for c in evaluation.criteria if c.scorer == "deterministic"}


def test_agent_run_checks_a_good_run_and_a_destructive_one() -> None:
    assert set(_deterministic("agent-run.yaml", RUN).values()) == {1.0}
    bad = [
        *RUN[:-1],
        {
            "role": "assistant",
            "tool_calls": [{"id": "3", "name": "delete_account", "arguments": {}}],
        },
    ]
    scores = _deterministic("agent-run.yaml", bad)
    assert scores["no_destructive_tools"] == 0.0
    assert scores["answer_after_tools"] == 0.0


def test_support_conversation_finds_pii_in_any_turn() -> None:
    talk = [
        {"role": "user", "content": "I was charged twice."},
        {"role": "assistant", "content": "Sorry about that! I see two charges."},
        {"role": "user", "content": "Can you fix it?"},
        {"role": "assistant", "content": "Refunded; write to ana@example.com if not."},
    ]
    scores = _deterministic("support-conversation.yaml", talk)
    assert scores == {"no_email_in_any_turn": 0.0, "no_phone_in_any_turn": 1.0}


def test_a_conversation_is_a_target_as_it_is() -> None:
    """`evaluate_sync(rubric, messages)` and the pytest plugin's `assert_passes(rubric,
    conversation)` take a list of messages as the content."""
    from rubricflow import evaluate_sync
    from rubricflow.pytest_plugin import assert_passes

    rubric = load_file(RUBRICS / "agent-run.yaml").rubrics[0]
    evaluation = evaluate_sync(rubric, RUN)
    assert evaluation.target_hash == Target(content=RUN).content_hash
    checks = rubric.model_copy(
        update={"criteria": tuple(c for c in rubric.criteria if c.scoring.method != "llm")}
    )
    assert assert_passes(checks, RUN).verdict == "pass"
