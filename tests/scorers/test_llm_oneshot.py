"""`llm_oneshot`: one call for all of a rubric's one-shot criteria; a criterion left out,
repeated or lost to an unknown id is `unable_to_evaluate`, never UNMET."""

from __future__ import annotations

from typing import Any

from llm.fixtures import clean_llm_env, rubric, server, session_for
from llm.scripted import Recorded, Reply, ScriptedServer, oneshot_ids, openai_reply

from rubricflow import evaluate
from rubricflow.llm.judges import apply_strategy, rubric_as_judge

__all__ = ["clean_llm_env", "server"]

ONESHOT = rubric(
    {
        "id": "greets",
        "weight": 1,
        "description": "Greets the customer.",
        "scoring": {"method": "llm_oneshot"},
    },
    {
        "id": "refund",
        "weight": 2,
        "description": "Gives the refund window.",
        "scoring": {"method": "llm_oneshot"},
    },
    {
        "id": "rude",
        "weight": -1,
        "description": "Insults the customer.",
        "scoring": {"method": "llm_oneshot"},
    },
    {
        "id": "short",
        "scoring": {
            "method": "deterministic",
            "function": "word_count_between",
            "config": {"max": 100},
        },
    },
    unscored_policy="exclude",
)


def entries(*items: tuple[str, str]) -> dict[str, Any]:
    return {"criteria": [{"id": i, "reasoning": f"about {i}", "verdict": v} for i, v in items]}


async def judge(server: ScriptedServer, rubric_: Any = ONESHOT, **options: Any) -> Any:
    async with session_for(server) as session:
        return await evaluate(
            rubric_, "Hello! Refunds within 30 days.", options={"llm": session, **options}
        )


async def test_one_call_judges_every_oneshot_criterion(server: ScriptedServer) -> None:
    server.queue(openai_reply(entries(("greets", "MET"), ("refund", "MET"), ("rude", "UNMET"))))
    evaluation = await judge(server)
    assert len(server.requests) == 1
    assert oneshot_ids(server.requests[0]) == ["greets", "refund", "rude"]
    by_id = {r.criterion_id: r for r in evaluation.criteria}
    assert [by_id[c].verdict for c in ("greets", "refund", "rude")] == ["MET", "MET", "UNMET"]
    assert by_id["refund"].reasoning == "about refund"
    assert by_id["short"].status == "scored"  # not part of the group
    assert len(by_id["greets"].llm_calls) == 1 and not by_id["refund"].llm_calls
    assert by_id["greets"].llm_calls[0].criterion_ids == ("greets", "refund", "rude")
    assert evaluation.usage()["llm_calls"] == 1
    assert "judged in one call with greets, refund, rude" in by_id["refund"].notes
    assert evaluation.score == 1.0


async def test_missing_and_repeated_criteria_are_unable_to_evaluate_never_unmet(
    server: ScriptedServer,
) -> None:
    bad = openai_reply(entries(("greets", "MET"), ("refund", "MET"), ("refund", "UNMET")))
    server.queue(bad, bad)
    evaluation = await judge(server)
    by_id = {r.criterion_id: r for r in evaluation.criteria}
    assert by_id["greets"].status == "scored" and by_id["greets"].verdict == "MET"
    assert by_id["refund"].status == "unable_to_evaluate"
    assert "more than once" in by_id["refund"].notes
    assert by_id["rude"].status == "unable_to_evaluate" and by_id["rude"].verdict is None
    assert "left criterion 'rude' out" in by_id["rude"].notes
    reask = server.requests[1].messages[-1]["content"]
    assert "criteria left out: rude" in reask and "given more than once: refund" in reask
    assert [c.outcome for c in by_id["greets"].llm_calls] == ["invalid_answer", "invalid_answer"]
    # the failures abstain: the score is over what was judged (exclude policy)
    assert evaluation.score == 1.0 and evaluation.coverage < 1


async def test_an_unknown_id_is_reported_and_its_criterion_is_not_guessed(
    server: ScriptedServer,
) -> None:
    typo = openai_reply(entries(("greets", "MET"), ("refnud", "MET"), ("rude", "UNMET")))
    server.queue(typo, typo)
    evaluation = await judge(server)
    by_id = {r.criterion_id: r for r in evaluation.criteria}
    assert by_id["refund"].status == "unable_to_evaluate"
    assert "unknown criteria: refnud" in by_id["greets"].notes
    assert "unknown criterion ids: refnud" in server.requests[1].messages[-1]["content"]


async def test_a_repaired_answer_scores_everything(server: ScriptedServer) -> None:
    server.queue(
        openai_reply(entries(("greets", "MET"))),
        openai_reply(entries(("greets", "MET"), ("refund", "UNMET"), ("rude", "MET"))),
    )
    evaluation = await judge(server)
    assert [r.status for r in evaluation.criteria] == ["scored"] * 4
    assert [r.verdict for r in evaluation.criteria[:3]] == ["MET", "UNMET", "MET"]


async def test_no_usable_answer_makes_every_grouped_criterion_unable(
    server: ScriptedServer,
) -> None:
    server.responder = lambda request: Reply(500, "down")
    evaluation = await judge(server)
    statuses = {r.criterion_id: r.status for r in evaluation.criteria}
    assert statuses == {
        "greets": "unable_to_evaluate",
        "refund": "unable_to_evaluate",
        "rude": "unable_to_evaluate",
        "short": "scored",
    }


async def test_graded_criteria_cannot_be_oneshot(server: ScriptedServer) -> None:
    mixed = rubric(
        {"id": "a", "scoring": {"method": "llm_oneshot"}},
        {
            "id": "b",
            "levels": [{"id": "lo", "score": 0}, {"id": "hi", "score": 1}],
            "scoring": {"method": "llm_oneshot"},
        },
    )
    server.queue(openai_reply(entries(("a", "MET"))))
    evaluation = await judge(server, mixed)
    assert evaluation.criteria[0].status == "scored"
    assert (
        evaluation.criteria[1].status == "error"
        and "use llm_decode" in evaluation.criteria[1].notes
    )
    assert oneshot_ids(server.requests[0]) == ["a"]


async def test_oneshot_samples_vote_per_criterion(server: ScriptedServer) -> None:
    answers = [
        entries(("greets", "MET"), ("refund", "MET"), ("rude", "UNMET")),
        entries(("greets", "MET"), ("refund", "UNMET"), ("rude", "UNMET")),
        entries(("greets", "UNMET"), ("refund", "MET")),  # leaves rude out: abstains
    ]

    def respond(request: Recorded) -> Reply:
        return openai_reply(
            answers[len(server.requests) - 1] if len(server.requests) <= 3 else answers[2]
        )

    server.responder = respond
    evaluation = await judge(server, samples=3)
    by_id = {r.criterion_id: r for r in evaluation.criteria}
    assert by_id["greets"].verdict == "MET" and by_id["refund"].verdict == "MET"
    assert by_id["rude"].verdict == "UNMET"
    assert "agreement 100%" in " ".join(by_id["rude"].evidence)
    assert any("abstained" in e for e in by_id["rude"].evidence)


async def test_the_oneshot_strategy_turns_a_rubric_into_one_call(server: ScriptedServer) -> None:
    plain = rubric(
        {"id": "a"},
        {"id": "b", "scoring": {"method": "llm_verdict"}},
        {"id": "c", "levels": [{"id": "x", "score": 0}, {"id": "y", "score": 1}]},
    )
    oneshot = apply_strategy(plain, "oneshot")
    assert oneshot.version == "1.0.0+oneshot"
    assert [c.scoring.method for c in oneshot.criteria] == ["llm_oneshot", "llm_oneshot", "llm"]
    assert apply_strategy(plain, "per-criterion") is plain


async def test_rubric_as_judge_scores_the_whole_rubric_on_0_to_100(server: ScriptedServer) -> None:
    source = rubric(
        {"id": "a", "weight": 10, "description": "States the margin"},
        {"id": "b", "weight": 8, "description": "Uses Shapley"},
        {"id": "c", "weight": -15, "description": "Uses total deliveries"},
    )
    holistic = rubric_as_judge(source)
    server.queue(openai_reply({"reasoning": "mostly there", "score": 85}))
    evaluation = await judge(server, holistic)
    result = evaluation.criteria[0]
    assert result.judge_score == 85 and evaluation.score == 0.85
    assert evaluation.raw_score == 15.3  # (L/100) * total positive weight, exactly
    prompt = server.requests[0].messages[-1]["content"]
    assert (
        "Weight: 10" in prompt
        and "Fault to look for (penalty criterion): Uses total deliveries" in prompt
    )
    assert "from 0 to 100" in server.requests[0].messages[0]["content"]
