"""Recorded judge answers: a file meant to be committed, so tests and CI replay a judge's
answers offline, with no key and the same verdicts.

The file is JSON Lines, written deterministically (sorted, one entry per line, sorted
keys, no timestamps) so it diffs well:

    {"format": "rubricflow-judge-answers", "format_version": 1}
    {"answer": {...}, "criteria": ["accuracy"], "key": "<cache key>", "provider": "openai:...",
     "rubric": {"hash": ..., "id": "qa", "version": "1.0.0"}, "target": "t1",
     "template": {"hash": ..., "name": "rubricflow:verdict"}}

One entry per judge call, keyed as the judge cache keys it (`rubricflow.llm.cache`), so a
replayed question finds its answer by the same key; the rest identifies the case for
people and for replay: when a question misses, `ReplayCache.explain` names the rubric,
criteria and target and says whether the prompt template or the rubric changed since the
answer was recorded. `rubricflow llm cache export/import` and the pytest plugin's
`--rubric-record/--rubric-replay` read and write it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rubricflow.errors import ConfigurationError, RubricflowError
from rubricflow.llm.base import LLMProvider, ProviderRequest, ProviderResponse, TransportError

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "RecordedAnswer",
    "RecordingCache",
    "ReplayCache",
    "ReplayFileError",
    "ReplayMiss",
    "ReplayProvider",
    "merge_answers",
    "read_answers",
    "recorded_answer",
    "write_answers",
]

FORMAT_NAME = "rubricflow-judge-answers"
FORMAT_VERSION = 1
# what of a cached answer a recorded one keeps: no timestamps, so re-recording the same
# answers writes the same file
_ANSWER_FIELDS = ("text", "model", "input_tokens", "output_tokens")


class ReplayFileError(RubricflowError):
    """A recorded-answers file cannot be read or written."""


@dataclass(frozen=True)
class RecordedAnswer:
    """One judge call's answer under its cache `key`, with what it was about."""

    key: str
    answer: Mapping[str, Any]
    provider: str | None = None
    about: Mapping[str, Any] = field(default_factory=dict)

    @property
    def rubric_label(self) -> str:
        rubric = self.about.get("rubric") or {}
        if not rubric:
            return "(unknown rubric)"
        return f"{rubric.get('id')}@{rubric.get('version')}"

    @property
    def case(self) -> tuple[str, str, tuple[str, ...], str]:
        """(rubric id, template name, criteria, target): what a re-recording replaces."""
        rubric = self.about.get("rubric") or {}
        template = self.about.get("template") or {}
        return (
            str(rubric.get("id", "")),
            str(template.get("name", "")),
            tuple(str(c) for c in self.about.get("criteria") or ()),
            str(self.about.get("target", "")),
        )

    def sort_key(self) -> tuple[Any, ...]:
        rubric = self.about.get("rubric") or {}
        _, template, criteria, target = self.case
        return (
            str(rubric.get("id", "")),
            str(rubric.get("version", "")),
            target,
            criteria,
            template,
            self.key,
        )

    def to_json(self) -> dict[str, Any]:
        line: dict[str, Any] = {"key": self.key, "answer": dict(self.answer)}
        if self.provider is not None:
            line["provider"] = self.provider
        for name in ("rubric", "criteria", "target", "template"):
            if name in self.about:
                line[name] = self.about[name]
        return line

    def cache_value(self) -> str:
        """The value a judge cache keeps for this answer (see LLMSession)."""
        value: dict[str, Any] = dict(self.answer)
        if self.provider is not None:
            value["provider"] = self.provider
        if self.about:
            value["about"] = dict(self.about)
        return json.dumps(value, ensure_ascii=False)


def recorded_answer(key: str, value: str) -> RecordedAnswer | None:
    """A cache entry as a recorded answer, or None when the value is not a judge answer
    this version can read."""
    try:
        stored = json.loads(value)
    except ValueError:
        return None
    if not isinstance(stored, dict) or not isinstance(stored.get("text"), str):
        return None
    about = stored.get("about")
    provider = stored.get("provider")
    return RecordedAnswer(
        key=key,
        answer={name: stored.get(name) for name in _ANSWER_FIELDS},
        provider=provider if isinstance(provider, str) else None,
        about=about if isinstance(about, dict) else {},
    )


def _from_line(line: Mapping[str, Any], where: str) -> RecordedAnswer:
    key, answer = line.get("key"), line.get("answer")
    if not isinstance(key, str) or not key:
        raise ReplayFileError(f"{where}: an entry needs a 'key' (the judge cache key)")
    if not isinstance(answer, dict) or not isinstance(answer.get("text"), str):
        raise ReplayFileError(f"{where}: an entry needs an 'answer' with the judge's 'text'")
    provider = line.get("provider")
    about = {
        name: line[name] for name in ("rubric", "criteria", "target", "template") if name in line
    }
    return RecordedAnswer(
        key=key,
        answer={name: answer.get(name) for name in _ANSWER_FIELDS},
        provider=provider if isinstance(provider, str) else None,
        about=about,
    )


def read_answers(path: str | Path) -> list[RecordedAnswer]:
    """The answers recorded in `path`; raises `ReplayFileError` naming the file, the line
    and the fix when it is not a recorded-answers file this version reads."""
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ReplayFileError(
            f"{source}: no such recorded-answers file; record one with "
            "`pytest --rubric-record FILE` or `rubricflow llm cache export FILE`"
        ) from None
    except (OSError, UnicodeDecodeError) as error:
        raise ReplayFileError(f"{source}: cannot be read: {error}") from None
    # only "\n" ends a line: str.splitlines() would also split inside an answer's text
    # at U+2028 and the like, which JSON leaves unescaped
    lines = [(number, raw) for number, raw in enumerate(text.split("\n"), 1) if raw.strip()]
    if not lines:
        raise ReplayFileError(f"{source}: the file is empty; it has no recorded-answers header")
    parsed: list[tuple[int, Any]] = []
    for number, raw in lines:
        try:
            parsed.append((number, json.loads(raw)))
        except ValueError as error:
            raise ReplayFileError(f"{source}:{number}: not JSON: {error}") from None
    number, header = parsed[0]
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        raise ReplayFileError(
            f"{source}:{number}: not a recorded-answers file (the first line must be "
            f'{{"format": "{FORMAT_NAME}", "format_version": {FORMAT_VERSION}}})'
        )
    version = header.get("format_version")
    if version != FORMAT_VERSION:
        raise ReplayFileError(
            f"{source}: format_version {version!r} is not one this rubricflow reads "
            f"({FORMAT_VERSION}); record the answers again with this version"
        )
    answers = []
    for number, line in parsed[1:]:
        if not isinstance(line, dict):
            raise ReplayFileError(f"{source}:{number}: an entry must be a JSON object")
        answers.append(_from_line(line, f"{source}:{number}"))
    return answers


def merge_answers(
    old: Iterable[RecordedAnswer], new: Iterable[RecordedAnswer]
) -> list[RecordedAnswer]:
    """`old` with `new` recorded over it: a case (rubric, template, criteria, target) that
    `new` answers keeps only `new`'s answers, so re-recording after a change leaves no
    stale entry; other cases stay."""
    fresh = list(new)
    recorded = {answer.case for answer in fresh if answer.about}
    kept = [answer for answer in old if not (answer.about and answer.case in recorded)]
    return [*kept, *fresh]


def write_answers(path: str | Path, answers: Iterable[RecordedAnswer]) -> int:
    """Write `answers` (one per key, sorted) to `path` atomically; returns how many."""
    by_key = {answer.key: answer for answer in answers}
    ordered = sorted(by_key.values(), key=RecordedAnswer.sort_key)
    header = {"format": FORMAT_NAME, "format_version": FORMAT_VERSION}
    lines = [json.dumps(header, sort_keys=True)]
    lines += [
        json.dumps(answer.to_json(), sort_keys=True, ensure_ascii=False) for answer in ordered
    ]
    target = Path(path)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text("\n".join(lines) + "\n", encoding="utf-8")
        os.replace(temporary, target)
    except OSError as error:
        temporary.unlink(missing_ok=True)
        raise ReplayFileError(f"{target}: cannot be written: {error}") from None
    return len(ordered)


@dataclass(frozen=True)
class ReplayMiss:
    """A question replay had no answer for."""

    key: str
    about: Mapping[str, Any]


def _case_text(about: Mapping[str, Any]) -> str:
    rubric = about.get("rubric") or {}
    criteria = ", ".join(str(c) for c in about.get("criteria") or ()) or "(feedback summary)"
    return (
        f"rubric {rubric.get('id')}@{rubric.get('version')}, criterion {criteria}, "
        f"target {about.get('target')}"
    )


class ReplayCache:
    """A read-only judge cache over recorded answers. A question it has no answer for is
    noted (`misses`) so the caller can fail naming the case; nothing is ever sent."""

    def __init__(self, answers: Iterable[RecordedAnswer], *, source: str = "") -> None:
        self.answers = {answer.key: answer for answer in answers}
        self.source = source
        self.misses: list[ReplayMiss] = []

    @classmethod
    def from_file(cls, path: str | Path) -> ReplayCache:
        return cls(read_answers(path), source=str(path))

    async def get(self, key: str) -> str | None:
        found = self.answers.get(key)
        return None if found is None else found.cache_value()

    async def put(self, key: str, value: str) -> None:
        """Replay never records (no judge answers while replaying)."""

    def note_miss(self, key: str, about: Mapping[str, Any] | None) -> None:
        self.misses.append(ReplayMiss(key, dict(about or {})))

    def providers(self) -> list[str]:
        return sorted({a.provider for a in self.answers.values() if a.provider})

    def explain(self, miss: ReplayMiss) -> str:
        """Which case has no recorded answer, and why: the prompt template or the rubric
        changed since recording, or the case was never recorded."""
        about = miss.about
        if not about:
            return "a judge question with no recorded answer"
        case = _case_text(about)
        rubric = about.get("rubric") or {}
        template = about.get("template") or {}
        same_case = [
            a
            for a in self.answers.values()
            if (a.about.get("rubric") or {}).get("id") == rubric.get("id")
            and list(a.about.get("criteria") or ()) == list(about.get("criteria") or ())
            and a.about.get("target") == about.get("target")
        ]
        for recorded in same_case:
            was = recorded.about.get("template") or {}
            if was.get("name") == template.get("name") and was.get("hash") != template.get("hash"):
                return (
                    f"{case}: the prompt template {template.get('name')} changed since the "
                    f"answer was recorded (recorded {str(was.get('hash'))[:12]}, now "
                    f"{str(template.get('hash'))[:12]})"
                )
        for recorded in same_case:
            was = recorded.about.get("rubric") or {}
            if was.get("hash") != rubric.get("hash"):
                return (
                    f"{case}: the rubric changed since the answer was recorded (recorded "
                    f"{recorded.rubric_label}, content {str(was.get('hash'))[:12]}; now "
                    f"{str(rubric.get('hash'))[:12]})"
                )
        if same_case:
            return f"{case}: the question changed since recording (judge, settings or target)"
        return f"{case}: no answer was recorded for it"


class RecordingCache:
    """A judge cache that keeps every answer used (asked or found in `inner`, the cache
    that otherwise applies) so they can be written to a recorded-answers file."""

    def __init__(self, inner: Any = None) -> None:
        self.inner = inner
        self.recorded: dict[str, RecordedAnswer] = {}

    def _keep(self, key: str, value: str) -> None:
        answer = recorded_answer(key, value)
        if answer is not None:
            self.recorded[key] = answer

    async def get(self, key: str) -> str | None:
        value = None if self.inner is None else await self.inner.get(key)
        if value is not None:
            self._keep(key, value)
        return value

    async def put(self, key: str, value: str) -> None:
        self._keep(key, value)
        if self.inner is not None:
            await self.inner.put(key, value)

    def answers(self) -> list[RecordedAnswer]:
        return list(self.recorded.values())


class ReplayProvider(LLMProvider):
    """Stands in for the judge the answers were recorded with: it has that judge's
    identity (part of every cache key) and never sends anything."""

    kind = "replay"

    def __init__(self, identity: str, *, source: str = "") -> None:
        from rubricflow.llm.base import ProviderSettings

        base = None
        if identity.startswith("local"):
            from rubricflow.llm.providers.local import LOCAL_SETTINGS

            base = LOCAL_SETTINGS
        super().__init__(identity.partition(":")[2].partition("@")[0], settings=None)
        self.settings = ProviderSettings.from_env(base)
        self._identity = identity
        self._source = source

    @property
    def identity(self) -> str:
        return self._identity

    @property
    def label(self) -> str:
        return f"replay of {self._identity}"

    async def _send(self, request: ProviderRequest, timeout: float) -> ProviderResponse:
        raise TransportError(
            "error",
            f"no recorded answer in {self._source or 'the recorded-answers file'} for this "
            "question (replay never calls the judge); record the answers again",
            retryable=False,
        )

    @classmethod
    def for_answers(cls, cache: ReplayCache, spec: str | None) -> ReplayProvider:
        """The judge to replay: the one provider the file was recorded with, or, when it
        holds several, the one `spec` (`kind:model[@url]`) names."""
        providers = cache.providers()
        where = cache.source or "the recorded-answers file"
        if spec:
            from rubricflow.llm.specs import parse_spec

            kind, model, url = parse_spec(spec)
            wanted = f"{kind}:{model}" if model else kind
            matching = [
                p
                for p in providers
                if p == wanted or p.startswith(wanted + "@") or (url is not None and p == spec)
            ]
            if len(matching) == 1:
                return cls(matching[0], source=where)
            if not matching and providers:
                raise ConfigurationError(
                    f"{where} holds no answers of the judge {spec!r} (it holds "
                    f"{', '.join(providers)}); record with that judge or drop --rubric-llm"
                )
        if len(providers) == 1:
            return cls(providers[0], source=where)
        if not providers:
            raise ConfigurationError(
                f"{where} names no judge (no entry has a 'provider'); record it again"
            )
        raise ConfigurationError(
            f"{where} holds answers of several judges ({', '.join(providers)}); choose one "
            "with --rubric-llm SPEC"
        )
