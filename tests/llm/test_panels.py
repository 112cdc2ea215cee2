"""Judge panels, confidence and the double pass (issue 28, items 2 and 3), against the
scripted OpenAI-compatible judge: each panel judge is a model name the server answers
for; parallelism is shown by the server seeing the judges' requests in flight together."""

from __future__ import annotations

import json
import math
import statistics
import threading
from collections import Counter
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rubricflow import evaluate
from rubricflow.errors import ConfigurationError
from rubricflow.llm import LLMSession
from rubricflow.llm.panel import Panel, PanelVote, decide, panel_spec, parse_panel

from .fixtures import FAST, clean_llm_env, rubric
from .scripted import Recorded, Reply, ScriptedServer, oneshot_ids, openai_reply, verdict

__all__ = ["clean_llm_env"]


@pytest.fixture(scope="module")
def running() -> Iterator[ScriptedServer]:
    """One scripted judge for the module (stopping a server takes half a second)."""
    with ScriptedServer() as started:
        yield started


@pytest.fixture
def server(running: ScriptedServer) -> ScriptedServer:
    """The module's scripted judge, with no requests, queue or responder left over."""
    running.requests.clear()
    with running._lock:
        running._queue.clear()
    running.responder = ScriptedServer().responder
    return running


VERDICT = rubric({"id": "cites", "description": "Cites a source.", "scoring": {"method": "llm"}})
SCORED = rubric(
    {
        "id": "clarity",
        "description": "Clear.",
        "scoring": {"method": "llm_score", "config": {"min_score": 0, "max_score": 10}},
    }
)


def model_of(request: Recorded) -> str:
    return str(request.json["model"])


def by_model(answers: dict[str, Reply | dict[str, Any]]) -> Any:
    def respond(request: Recorded) -> Reply:
        answer = answers[model_of(request)]
        return answer if isinstance(answer, Reply) else openai_reply(answer)

    return respond


def panel_of(server: ScriptedServer, policy: str, *models: str) -> LLMSession:
    specs = [f"openai:{model}@{server.url}/v1" for model in models]
    return LLMSession(Panel(specs, policy), cache=None, settings=FAST)


async def judged(session: LLMSession, subject: Any = VERDICT, **options: Any) -> Any:
    async with session:
        return await evaluate(
            subject, "Per the 2024 census, ...", options={"llm": session, **options}
        )


# -- the policies, exactly --------------------------------------------------------------------

verdict_votes = st.lists(st.sampled_from(["MET", "UNMET"]), min_size=0, max_size=7)


def _verdict_vote(value: str, penalty: bool = False) -> PanelVote:
    unit = Fraction(1 if value == "MET" else 0)
    return PanelVote(value, unit, 1 - unit if penalty else unit, binary=True)


@settings(max_examples=200, deadline=None)
@given(verdict_votes, st.integers(min_value=0, max_value=3), st.booleans())
def test_categorical_policies_decide_exactly(
    values: list[str], abstaining: int, penalty: bool
) -> None:
    votes = [_verdict_vote(v, penalty) for v in values]
    members = len(votes) + abstaining
    if members == 0:
        return
    counts = Counter(values)
    # majority: more than half of the votes, and more than half of the panel voted
    got = decide("majority", votes, members)
    if not votes or 2 * len(votes) <= members:
        assert isinstance(got, str)
    else:
        top, count = counts.most_common(1)[0]
        if 2 * count > len(votes):
            assert not isinstance(got, str) and got.value == top
            assert got.confidence == Fraction(count, members)
        else:
            assert isinstance(got, str) and "split" in got
    # unanimous: every judge voted, all alike
    got = decide("unanimous", votes, members)
    if abstaining or not votes or len(counts) > 1:
        assert isinstance(got, str)
    else:
        assert not isinstance(got, str) and got.value == values[0] and got.confidence == 1
    # any_unmet: one judge seeing the problem is enough, whoever abstained
    problem = "MET" if penalty else "UNMET"
    got = decide("any_unmet", votes, members)
    if problem in counts:
        assert not isinstance(got, str) and got.value == problem
        assert got.confidence == Fraction(counts[problem], members)
    elif abstaining or not votes:
        assert isinstance(got, str)
    else:
        assert not isinstance(got, str) and got.value != problem


scores = st.lists(
    st.fractions(min_value=0, max_value=1, max_denominator=100), min_size=1, max_size=7
)


@settings(max_examples=200, deadline=None)
@given(scores, st.integers(min_value=0, max_value=3))
def test_mean_and_median_are_exact(units: list[Fraction], abstaining: int) -> None:
    votes = [PanelVote(u * 10, u, u) for u in units]
    members = len(votes) + abstaining
    for policy, expected in (
        ("mean", sum(units) / len(units)),
        ("median", statistics.median(units)),
    ):
        got = decide(policy, votes, members)
        if 2 * len(votes) <= members:
            assert isinstance(got, str) and "more than half" in got
            continue
        assert not isinstance(got, str)
        assert got.unit == expected and got.value == expected * 10
        spread = sum(abs(u - expected) for u in units) / len(units)
        assert got.confidence == (1 - spread) * Fraction(len(units), members)
        assert 0 <= got.confidence <= 1


def test_panel_specs_round_trip_and_refuse_what_is_not_a_panel() -> None:
    spec = panel_spec(["openai:a@http://h/v1", "ollama:b"], "any_unmet")
    assert spec == "panel:any_unmet(openai:a@http://h/v1 | ollama:b)"
    assert parse_panel(spec) == Panel(["openai:a@http://h/v1", "ollama:b"], "any_unmet")
    assert panel_spec(["openai:a"], None) == "openai:a"
    assert panel_spec(None, None) is None
    for specs, policy, words in (
        (["openai:a", "openai:b"], None, "--panel"),
        (["openai:a"], "majority", "at least two"),
        (["openai:a", "openai:b"], "plurality", "unknown panel policy"),
    ):
        with pytest.raises(ConfigurationError, match=words):
            panel_spec(specs, policy)
    with pytest.raises(ConfigurationError, match="cannot itself be a panel"):
        parse_panel("panel:mean(openai:a | panel:mean(openai:b | openai:c))")


# -- panels over HTTP -------------------------------------------------------------------------


async def test_a_majority_panel_asks_every_judge_at_once_and_records_each(
    server: ScriptedServer,
) -> None:
    seen: list[str] = []
    together = threading.Barrier(3, timeout=30)  # released only by three requests in flight

    def respond(request: Recorded) -> Reply:
        together.wait()
        seen.append(model_of(request))
        said = {"a": "MET", "b": "MET", "c": "UNMET"}[model_of(request)]
        return openai_reply(verdict(said, f"judge {model_of(request)} says {said}"))

    server.responder = respond
    evaluation = await judged(panel_of(server, "majority", "a", "b", "c"))
    result = evaluation.criterion("cites")
    assert sorted(seen) == ["a", "b", "c"]
    assert result.verdict == "MET" and result.score == 1.0
    assert result.confidence == pytest.approx(2 / 3) and result.confidence_source == "panel"
    assert result.evidence[0].startswith("panel (majority): MET; 2 of 3 judges")
    lines = result.evidence[1:]
    assert len(lines) == 3 and any("judge openai:c@" in ln and "UNMET" in ln for ln in lines)
    assert all("1 call, 120 tokens" in ln for ln in lines)
    ledger = {call.judge.split(":")[1].split("@")[0]: call.verdict for call in result.llm_calls}
    assert ledger == {"a": "MET", "b": "MET", "c": "UNMET"}
    assert evaluation.margin == pytest.approx(evaluation.score - evaluation.threshold)


@pytest.mark.parametrize(
    ("policy", "answers", "expected"),
    [
        ("any_unmet", {"a": "MET", "b": "UNMET", "c": "MET"}, "UNMET"),
        ("unanimous", {"a": "MET", "b": "MET", "c": "MET"}, "MET"),
        ("unanimous", {"a": "MET", "b": "UNMET", "c": "MET"}, None),
        ("majority", {"a": "MET", "b": "UNMET"}, None),  # a tie is a split
    ],
)
async def test_policies_over_http(
    server: ScriptedServer, policy: str, answers: dict[str, str], expected: str | None
) -> None:
    server.responder = by_model({m: verdict(v) for m, v in answers.items()})
    result = (await judged(panel_of(server, policy, *answers))).criterion("cites")
    if expected is None:
        assert result.status == "unable_to_evaluate" and "split" in result.notes
    else:
        assert result.verdict == expected


async def test_a_failing_judge_abstains_and_too_few_votes_decide_nothing(
    server: ScriptedServer,
) -> None:
    broken = Reply(400, {"error": {"message": "no such model"}})
    server.responder = by_model({"a": verdict("UNMET"), "b": verdict("UNMET"), "c": broken})
    result = (await judged(panel_of(server, "majority", "a", "b", "c"))).criterion("cites")
    assert result.verdict == "UNMET"  # 2 votes of 3: enough, and the abstention is no vote
    assert result.confidence == pytest.approx(2 / 3)
    assert any("abstained" in line and "openai:c@" in line for line in result.evidence)

    server.responder = by_model({"a": verdict("MET"), "b": broken, "c": broken})
    result = (await judged(panel_of(server, "majority", "a", "b", "c"))).criterion("cites")
    assert result.status == "unable_to_evaluate"
    assert "only 1 of the panel's 3 judges voted" in result.notes

    # a safety gate: the judge that saw the problem decides even beside a failed one...
    server.responder = by_model({"a": verdict("MET"), "b": verdict("UNMET"), "c": broken})
    result = (await judged(panel_of(server, "any_unmet", "a", "b", "c"))).criterion("cites")
    assert result.verdict == "UNMET"
    # ... but it clears content only when every judge voted
    server.responder = by_model({"a": verdict("MET"), "b": verdict("MET"), "c": broken})
    result = (await judged(panel_of(server, "any_unmet", "a", "b", "c"))).criterion("cites")
    assert result.status == "unable_to_evaluate" and "every judge" in result.notes


@pytest.mark.parametrize(
    ("policy", "expected"), [("mean", Fraction(6, 10)), ("median", Fraction(7, 10))]
)
async def test_scores_combine_by_mean_or_median(
    server: ScriptedServer, policy: str, expected: Fraction
) -> None:
    server.responder = by_model(
        {m: {"reasoning": "ok", "score": s} for m, s in (("a", 3), ("b", 7), ("c", 8))}
    )
    result = (await judged(panel_of(server, policy, "a", "b", "c"), SCORED)).criterion("clarity")
    assert result.exact_score == expected
    assert result.judge_score == pytest.approx(float(expected * 10))
    assert result.confidence_source == "panel"


async def test_a_panel_spec_string_works_wherever_a_spec_does(server: ScriptedServer) -> None:
    server.responder = by_model({"a": verdict("MET"), "b": verdict("MET")})
    spec = panel_spec([f"openai:a@{server.url}/v1", f"openai:b@{server.url}/v1"], "unanimous")
    evaluation = await evaluate(
        VERDICT, "text", options={"llm": spec, "llm_cache": None, "llm_settings": FAST}
    )
    assert evaluation.criterion("cites").verdict == "MET"
    assert evaluation.criterion("cites").confidence == 1.0


# -- confidence from one judge ----------------------------------------------------------------


def with_logprobs(answer: dict[str, Any], sure: float) -> Reply:
    """An answer whose tokens spell its text, the verdict's first token at `sure`."""
    text = json.dumps(answer)
    value = answer["verdict"]
    at = text.rindex(f'"{value}"') + 1
    tokens = [
        (text[:at], -0.01),
        (value[:2], math.log(sure)),
        (value[2:], -0.0),
        (text[at + len(value) :], -0.02),
    ]
    reply = openai_reply(text)
    reply.body["choices"][0]["logprobs"] = {
        "content": [{"token": t, "logprob": lp, "top_logprobs": []} for t, lp in tokens if t]
    }
    return reply


async def test_token_logprobs_give_a_single_judges_confidence(server: ScriptedServer) -> None:
    server.queue(with_logprobs(verdict("UNMET"), 0.8))
    session = LLMSession(
        f"openai:judge@{server.url}/v1", cache=None, settings=FAST.with_overrides(logprobs=True)
    )
    result = (await judged(session)).criterion("cites")
    assert server.requests[0].json["logprobs"] is True
    assert result.verdict == "UNMET"
    assert result.confidence == pytest.approx(0.8) and result.confidence_source == "logprobs"


async def test_without_logprobs_a_single_answer_has_no_confidence(server: ScriptedServer) -> None:
    server.queue(openai_reply(verdict("MET")))
    session = LLMSession(f"openai:judge@{server.url}/v1", cache=None, settings=FAST)
    result = (await judged(session)).criterion("cites")
    assert "logprobs" not in server.requests[0].json
    assert result.confidence is None and result.confidence_source is None


async def test_samples_agreement_is_the_confidence(server: ScriptedServer) -> None:
    server.queue(*(openai_reply(verdict(v)) for v in ("MET", "UNMET", "MET")))
    session = LLMSession(f"openai:judge@{server.url}/v1", cache=None, settings=FAST)
    result = (await judged(session, samples=3)).criterion("cites")
    assert result.verdict == "MET"
    assert result.confidence == pytest.approx(2 / 3) and result.confidence_source == "samples"


# -- the double pass --------------------------------------------------------------------------

ONESHOT = rubric(
    {"id": "greets", "description": "Greets.", "scoring": {"method": "llm_oneshot"}},
    {"id": "refund", "description": "Refund window.", "scoring": {"method": "llm_oneshot"}},
    {"id": "rude", "weight": -1, "description": "Insults.", "scoring": {"method": "llm_oneshot"}},
)


def answer_by_order(request: Recorded) -> Reply:
    """The judge sides with whatever comes first: `greets` is MET only in the given order,
    `rude` is found only in the reversed one; `refund` is MET both times."""
    ids = oneshot_ids(request)
    given = ids[0] == "greets"
    said = {
        "greets": "MET" if given else "UNMET",
        "refund": "MET",
        "rude": "UNMET" if given else "MET",
    }
    return openai_reply(
        {"criteria": [{"id": i, "reasoning": "r", "verdict": said[i]} for i in ids]}
    )


async def test_the_double_pass_keeps_the_problem_either_pass_found(server: ScriptedServer) -> None:
    server.responder = answer_by_order
    session = LLMSession(f"openai:judge@{server.url}/v1", cache=None, settings=FAST)
    evaluation = await judged(session, ONESHOT, double_pass=True)
    orders = [oneshot_ids(r) for r in server.requests]
    assert sorted(orders) == [["greets", "refund", "rude"], ["rude", "refund", "greets"]]
    greets, refund, rude = (evaluation.criterion(c) for c in ("greets", "refund", "rude"))
    assert greets.verdict == "UNMET" and rude.verdict == "MET" and refund.verdict == "MET"
    assert "position bias flip" in greets.evidence[-1] and "position bias flip" in rude.evidence[-1]
    assert greets.confidence == 0.5 and greets.confidence_source == "double_pass"
    assert "both passes agree" in refund.evidence[-1]
    assert len(evaluation.llm_calls) == 2


async def test_without_the_double_pass_one_call_is_made(server: ScriptedServer) -> None:
    server.responder = answer_by_order
    session = LLMSession(f"openai:judge@{server.url}/v1", cache=None, settings=FAST)
    evaluation = await judged(session, ONESHOT)
    assert len(server.requests) == 1 and evaluation.criterion("greets").verdict == "MET"


async def test_a_panels_judges_share_its_cache(server: ScriptedServer) -> None:
    from .fixtures import memory_cache

    server.responder = by_model({"a": verdict("MET"), "b": verdict("UNMET"), "c": verdict("MET")})
    session = panel_of(server, "majority", "a", "b", "c")
    session.provider_now()  # the judges exist before the cache is chosen (as eval does)
    session.cache = memory_cache()
    async with session:
        first = await evaluate(VERDICT, "text", options={"llm": session})
        again = await evaluate(VERDICT, "text", options={"llm": session})
    assert len(server.requests) == 3
    assert [c.outcome for c in again.llm_calls] == ["cached"] * 3
    assert again.criterion("cites").verdict == first.criterion("cites").verdict == "MET"


def test_a_one_shot_entrys_value_is_found_for_its_logprob() -> None:
    from rubricflow.llm.logprobs import value_probability, value_span

    text = json.dumps(
        {
            "criteria": [
                {"id": "a", "reasoning": "x", "verdict": "UNMET"},
                {"id": "b", "reasoning": "y", "verdict": "MET"},
            ]
        }
    )
    low, high = value_span(text, "verdict", "MET", scope="b")
    assert text[low:high] == "MET" and low > text.index('"b"')
    tokens = [(text[:low], 0.0), (text[low:high], math.log(0.9)), (text[high:], 0.0)]
    assert value_probability(text, tokens, "verdict", "MET", "b") == pytest.approx(0.9)
    assert value_probability(text, tokens[:-1], "verdict", "MET", "b") is None  # not the text
    assert value_span(text, "verdict", "MET", scope="missing") is None


async def test_a_double_pass_with_a_pass_missing_a_criterion(server: ScriptedServer) -> None:
    """The reversed pass leaves `greets` out (twice: the re-ask too) and finds `rude`; the
    given pass says greets MET and rude absent: greets cannot be confirmed (MET needs both
    passes), and the flipped penalty is kept."""

    def respond(request: Recorded) -> Reply:
        ids = oneshot_ids(request)
        if ids[0] == "greets":
            said = {"greets": "MET", "refund": "MET", "rude": "UNMET"}
        else:
            said = {"refund": "MET", "rude": "MET"}
        return openai_reply(
            {"criteria": [{"id": i, "reasoning": "r", "verdict": v} for i, v in said.items()]}
        )

    server.responder = respond
    session = LLMSession(f"openai:judge@{server.url}/v1", cache=None, settings=FAST)
    evaluation = await judged(session, ONESHOT, double_pass=True)
    greets, rude = evaluation.criterion("greets"), evaluation.criterion("rude")
    assert greets.status == "unable_to_evaluate" and "double pass" in greets.evidence[-1]
    assert rude.verdict == "MET" and "position bias flip" in rude.evidence[-1]
    assert evaluation.verdict == "incomplete"


async def test_a_panel_judges_one_shot_criteria_too(server: ScriptedServer) -> None:
    def respond(request: Recorded) -> Reply:
        model = model_of(request)
        greets = "UNMET" if model == "c" else "MET"
        said = {"greets": greets, "refund": "MET", "rude": "UNMET"}
        ids = oneshot_ids(request)
        return openai_reply(
            {"criteria": [{"id": i, "reasoning": model, "verdict": said[i]} for i in ids]}
        )

    server.responder = respond
    evaluation = await judged(panel_of(server, "any_unmet", "a", "b", "c"), ONESHOT)
    greets = evaluation.criterion("greets")
    assert greets.verdict == "UNMET" and greets.confidence == pytest.approx(1 / 3)
    assert evaluation.criterion("refund").confidence == 1.0
    assert len(server.requests) == 3
