"""The recorded-answers file on its own: any answer text round-trips, the bytes do not
depend on the order answers were recorded in, merging replaces re-recorded cases, and
replay picks the judge the file was recorded with."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rubricflow.errors import ConfigurationError
from rubricflow.llm.replay import (
    RecordedAnswer,
    RecordingCache,
    ReplayCache,
    ReplayProvider,
    merge_answers,
    read_answers,
    recorded_answer,
    write_answers,
)


def answer(
    key: str, text: str = "{}", *, target: str = "t", provider: str = "openai:m"
) -> RecordedAnswer:
    about = {
        "rubric": {"id": "r", "version": "1.0.0", "hash": "h"},
        "criteria": ["c"],
        "target": target,
        "template": {"name": "rubricflow:verdict", "hash": "t1"},
    }
    return RecordedAnswer(
        key=key, answer={"text": text, "model": "m"}, provider=provider, about=about
    )


texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=200)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.text("0123456789abcdef", min_size=1, max_size=8), texts, texts),
        max_size=8,
        unique_by=lambda t: t[0],
    ),
    st.randoms(),
)
def test_any_answers_round_trip_and_the_bytes_ignore_order(
    items: list[tuple[str, str, str]], rnd: object
) -> None:
    answers = [answer(key, text, target=target) for key, text, target in items]
    with tempfile.TemporaryDirectory() as folder:
        first, second = Path(folder) / "a.jsonl", Path(folder) / "b.jsonl"
        write_answers(first, answers)
        shuffled = list(answers)
        rnd.shuffle(shuffled)  # type: ignore[attr-defined]
        write_answers(second, shuffled)
        assert first.read_bytes() == second.read_bytes()
        back = {a.key: a for a in read_answers(first)}
    assert {key: a.answer["text"] for key, a in back.items()} == {k: t for k, t, _ in items}
    assert all(back[k].about["target"] == target for k, _, target in items)


def test_merge_replaces_the_cases_recorded_again() -> None:
    old = [answer("k1", "old", target="a"), answer("k2", "kept", target="b")]
    new = [answer("k3", "new", target="a")]
    merged = {a.key: a.answer["text"] for a in merge_answers(old, new)}
    assert merged == {"k2": "kept", "k3": "new"}


def test_recording_keeps_asked_and_cached_answers() -> None:
    async def scenario() -> RecordingCache:
        from rubricflow.llm.cache import MemoryJudgeCache

        inner = MemoryJudgeCache()
        await inner.put("cached", answer("cached", "from cache").cache_value())
        recording = RecordingCache(inner)
        assert await recording.get("cached") is not None
        assert await recording.get("unknown") is None
        await recording.put("asked", answer("asked", "fresh").cache_value())
        await recording.put("junk", "not json")  # not a judge answer: not recorded
        return recording

    recording = asyncio.run(scenario())
    assert sorted(a.key for a in recording.answers()) == ["asked", "cached"]
    assert recorded_answer("x", '{"no": "text"}') is None


def test_replay_picks_the_recorded_judge() -> None:
    one = ReplayCache([answer("k1", provider="openai:gpt-4o-mini@https://api.openai.com/v1")])
    assert ReplayProvider.for_answers(one, None).identity.startswith("openai:gpt-4o-mini@")
    assert ReplayProvider.for_answers(one, "openai:gpt-4o-mini").identity.endswith("/v1")
    with pytest.raises(ConfigurationError, match="holds no answers of the judge 'anthropic:x'"):
        ReplayProvider.for_answers(one, "anthropic:x")
    two = ReplayCache([answer("k1", provider="openai:a"), answer("k2", provider="ollama:b")])
    with pytest.raises(ConfigurationError, match=r"several judges .* choose one with --rubric-llm"):
        ReplayProvider.for_answers(two, None)
    assert ReplayProvider.for_answers(two, "ollama:b").identity == "ollama:b"
    with pytest.raises(ConfigurationError, match="names no judge"):
        ReplayProvider.for_answers(ReplayCache([answer("k", provider=None)]), None)  # type: ignore[arg-type]
