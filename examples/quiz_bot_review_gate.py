"""A quiz bot behind a review gate, with the Python async API.

The bot writes a quiz as JSON and submits it as an artifact of the `quiz` type. The
rubric bound to the type is fully deterministic: exactly 3 questions, each with an
answer, and no question asked twice (a check function added by a tiny in-script
plugin). The first draft goes back with feedback; the bot revises it; the second
passes and, because the type requires approval, waits for a named human.

Run from anywhere: python examples/quiz_bot_review_gate.py
"""

import asyncio
import tempfile
from pathlib import Path

from rubricflow import CheckResult, Target, create_plugin_manager, hookimpl, parse_rubric
from rubricflow.review import ArtifactRegistry, ArtifactType, RubricBinding
from rubricflow.store import Store


class QuizChecks:
    """A plugin is any object with @hookimpl methods; packages ship them via entry points."""

    @hookimpl
    def rubricflow_check_functions(self):
        return {"quiz.unique_questions": unique_questions}


def unique_questions(target: Target) -> CheckResult:
    """MET when no question is asked twice (ignoring case and surrounding spaces)."""
    seen, repeated = set(), []
    for item in target.content.get("questions", []):
        key = str(item.get("question", "")).strip().casefold()
        if key in seen:
            repeated.append(item.get("question"))
        seen.add(key)
    return CheckResult(not repeated, [f"asked twice: {q!r}" for q in repeated])


QUIZ_RUBRIC = parse_rubric(
    {
        "id": "quiz-basics",
        "name": "Quiz basics",
        "version": "1.0.0",
        "target_type": "quiz",
        "pass_threshold": 1.0,
        "criteria": [
            {
                "id": "three-questions",
                "description": "The quiz has exactly 3 questions.",
                "weight": 1,
                "required": True,
                "scoring": {
                    "method": "deterministic",
                    "function": "json_array_length",
                    "config": {"path": "questions", "min": 3, "max": 3},
                },
            },
            {
                "id": "answers",
                "description": "Every question has a non-empty answer.",
                "weight": 1,
                "required": True,
                "scoring": {
                    "method": "schema",
                    "schema": {
                        "type": "object",
                        "required": ["questions"],
                        "properties": {
                            "questions": {
                                "type": "array",
                                "items": {
                                    "type": "object",
                                    "required": ["question", "answer"],
                                    "properties": {"answer": {"type": "string", "minLength": 1}},
                                },
                            }
                        },
                    },
                },
            },
            {
                "id": "no-duplicates",
                "description": "No question is asked twice.",
                "weight": 1,
                "required": True,
                "scoring": {"method": "deterministic", "function": "quiz.unique_questions"},
            },
        ],
    }
)

FIRST_DRAFT = {
    "title": "Capitals",
    "questions": [
        {"question": "What is the capital of France?", "answer": "Paris"},
        {"question": "What is the capital of Japan?"},
        {"question": "what is the capital of France? ", "answer": "Paris"},
    ],
}
REVISED = {
    "title": "Capitals",
    "questions": [
        {"question": "What is the capital of France?", "answer": "Paris"},
        {"question": "What is the capital of Japan?", "answer": "Tokyo"},
        {"question": "What is the capital of Kenya?", "answer": "Nairobi"},
    ],
}


async def main() -> None:
    plugins = create_plugin_manager(plugins=[QuizChecks()])
    with tempfile.TemporaryDirectory() as folder:
        async with await Store.open(str(Path(folder) / "reviews.db")) as store:
            await store.rubrics.register(QUIZ_RUBRIC)
            reviews = ArtifactRegistry(store, plugins=plugins)
            await reviews.set_type(
                ArtifactType(
                    name="quiz",
                    rubrics=(RubricBinding.parse("quiz-basics"),),
                    requires_approval=True,  # a passing review waits for a human
                )
            )

            quiz = await reviews.create("quiz", FIRST_DRAFT, actor="quiz-bot", title="Capitals")
            outcome = await reviews.submit_for_review(quiz.id, actor="quiz-bot")
            print(f"revision 1: {outcome.artifact.status}")
            for result in outcome.evaluations[0].criteria:
                evidence = "; ".join(result.evidence)
                print(f"  {result.criterion_id}: {result.verdict} {evidence}".rstrip())
            print("feedback for the bot:")
            fix_at = outcome.evaluations[0].feedback.find("What to fix:")
            print(outcome.evaluations[0].feedback[fix_at:])

            await reviews.revise(quiz.id, REVISED, actor="quiz-bot", reason="fixed per feedback")
            outcome = await reviews.submit_for_review(quiz.id, actor="quiz-bot")
            waiting = outcome.artifact
            print(
                f"revision 2: {waiting.status}, awaiting approval: {waiting.awaiting_approval}, "
                f"score {outcome.evaluations[0].score:.2f}"
            )

            approved = await reviews.approve(quiz.id, actor="alice", reason="answers checked")
            print(f"after alice's approval: {approved.status}")

            print("history:")
            for event in await reviews.history(quiz.id):
                reason = f" ({event.reason})" if event.reason else ""
                print(
                    f"  r{event.revision} {event.trigger}: {event.source or '-'} -> "
                    f"{event.dest} by {event.actor}{reason}"
                )


if __name__ == "__main__":
    asyncio.run(main())
