"""A judge's confidence from its token log-probabilities: the probability the model gave
to the value it wrote (the tokens of `"verdict": "MET"`'s MET, a level id, a score),
given everything before it. OpenAI-compatible servers (OpenAI, vLLM, llama.cpp's server)
return them when asked (`logprobs: true`); see `ProviderSettings.logprobs`.

MET and UNMET differ in their first token, so the probability of the value's tokens is
how sure the judge was of its verdict rather than of the other. When the tokens do not
spell the answer text exactly, or the value cannot be found in it, there is no
confidence (None), never a guess.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any

__all__ = ["TokenLogprob", "value_probability", "value_span"]

TokenLogprob = tuple[str, float]
"""One token of the answer and its natural-log probability."""


def _entry_span(text: str, scope: str) -> tuple[int, int] | None:
    """The flat JSON object of a one-shot answer whose `id` is `scope`."""
    wanted = re.compile(r'"id"\s*:\s*' + re.escape(json.dumps(scope)))
    for found in re.finditer(r"\{[^{}]*\}", text):
        if wanted.search(found.group(0)):
            return found.span()
    return None


def value_span(text: str, key: str, value: Any, scope: str | None = None) -> tuple[int, int] | None:
    """Where the answer text writes `key`'s value (the last time, or within the one-shot
    entry of criterion `scope`): the characters of the value, quotes left out."""
    start, end = 0, len(text)
    if scope is not None:
        entry = _entry_span(text, scope)
        if entry is None:
            return None
        start, end = entry
    written = value if isinstance(value, str) else None
    if written is not None:
        pattern = r'"' + re.escape(key) + r'"\s*:\s*"(' + re.escape(written) + r')"'
    else:
        pattern = r'"' + re.escape(key) + r'"\s*:\s*(-?[0-9][0-9.eE+-]*)'
    matches = list(re.finditer(pattern, text[start:end]))
    if not matches:
        return None
    found = matches[-1]
    return start + found.start(1), start + found.end(1)


def value_probability(
    text: str,
    tokens: Sequence[TokenLogprob] | None,
    key: str,
    value: Any,
    scope: str | None = None,
) -> float | None:
    """The probability of the tokens that write `key`'s value in `text` (the product of
    their probabilities), or None when it cannot be told."""
    if not tokens:
        return None
    if "".join(token for token, _ in tokens) != text:
        return None
    span = value_span(text, key, value, scope)
    if span is None:
        return None
    low, high = span
    total, position, covered = 0.0, 0, False
    for token, logprob in tokens:
        following = position + len(token)
        if following > low and position < high:
            total += logprob
            covered = True
        position = following
        if position >= high:
            break
    if not covered or not math.isfinite(total):
        return None
    return min(1.0, max(0.0, math.exp(total)))
