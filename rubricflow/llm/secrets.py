"""Secrets a judge could echo back, and the options a run records, made safe to keep.

Some judge servers and gateways echo the request's headers in their answers, their model
field or their error bodies: the `Authorization` bearer, `x-api-key`, the base64 of Basic
credentials. A `SecretScrubber` knows every secret a provider sends, in every encoding it
was sent in (raw, URL-encoded, JSON-escaped, Basic base64 of `user:password`), and
replaces each with `***` in whatever the judge returns before anything is stored or
printed (`rubricflow.llm.session`, `rubricflow.llm.check`). An HTTP provider builds its
own from its key and its base URL (`HTTPProvider.scrubber`); a plugin provider may set a
`scrubber` attribute too.

`redact_options` masks URL credentials and key-like query parameters in a run's options
(the `--llm` spec as typed), so a results file, the store's `runs.options` and a report
keep which judge was used but never its secret.
"""

from __future__ import annotations

import base64
import json
import re
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import Any

from rubricflow.llm.base import ProviderResponse, Secret, TransportError, redact

__all__ = [
    "EMPTY_SCRUBBER",
    "MIN_SECRET",
    "SecretScrubber",
    "key_like_parameter",
    "redact_options",
    "scrubber_of",
]

MIN_SECRET = 4
"""Shorter values are not scrubbed: they would mangle ordinary words (a 3-letter password
is also in its Basic base64, which is scrubbed)."""

_KEY_NAME = re.compile(r"(?i)(key|token|secret|passw(or)?d|signature|sig|auth|credential)")


def key_like_parameter(name: str) -> bool:
    """Whether a URL query parameter's name says it holds a credential (`key`, `api_key`,
    `access_token`, `sig`, ...)."""
    return bool(_KEY_NAME.search(name))


def _encodings(value: str) -> set[str]:
    """Every way `value` can travel or come back: raw, URL-encoded (both styles),
    JSON-escaped (ASCII or not), and base64."""
    forms = {
        value,
        urllib.parse.quote(value, safe="", errors="surrogatepass"),
        urllib.parse.quote(value, errors="surrogatepass"),
        urllib.parse.quote_plus(value, errors="surrogatepass"),
        json.dumps(value)[1:-1],
        json.dumps(value, ensure_ascii=False)[1:-1],
    }
    # surrogatepass: a lone surrogate cannot go over HTTP anyway, but must not crash this
    encoded = base64.b64encode(value.encode("utf-8", "surrogatepass")).decode("ascii")
    forms |= {encoded, encoded.rstrip("="), urllib.parse.quote(encoded, safe="")}
    return forms


class SecretScrubber:
    """Replaces every known secret, in every encoding it was sent in, with `***`.
    Its `repr` never shows them."""

    __slots__ = ("_forms", "_pattern", "count")

    def __init__(self, forms: Iterable[str] = ()) -> None:
        kept = sorted({form for form in forms if len(form) >= MIN_SECRET}, key=len, reverse=True)
        # longest first: a regex alternation takes the first alternative that matches
        self._forms = tuple(kept)
        self._pattern = re.compile("|".join(map(re.escape, kept))) if kept else None
        self.count = len(kept)

    @classmethod
    def of(
        cls, *secrets: str | Secret | None, basic: tuple[str, str] | None = None
    ) -> SecretScrubber:
        """A scrubber for `secrets` (keys, passwords, tokens) and, with `basic`, the Basic
        credentials `(user, password)` as sent: base64 of `user:password`."""
        forms: set[str] = set()
        for secret in secrets:
            value = secret.reveal() if isinstance(secret, Secret) else secret
            if value and len(value) >= MIN_SECRET:
                forms |= _encodings(value)
        if basic is not None and basic[1]:
            forms |= _encodings(f"{basic[0]}:{basic[1]}")
        return cls(forms)

    def register(self) -> None:
        """Make `rubricflow.llm.redact` (every error message and log line of the LLM layer)
        scrub these values too."""
        for form in self._forms:
            Secret(form)

    def __bool__(self) -> bool:
        return self._pattern is not None

    def __repr__(self) -> str:
        return f"<SecretScrubber of {self.count} encoded secret(s)>"

    def scrub(self, text: str) -> str:
        """`text` with every known secret replaced by `***`."""
        if self._pattern is None or not text:
            return text
        return self._pattern.sub("***", text)

    def scrub_optional(self, text: str | None) -> str | None:
        return None if text is None else self.scrub(text)

    def error(self, error: TransportError) -> TransportError:
        """A failed attempt with its message scrubbed (it may quote an error body)."""
        message = str(error)
        scrubbed = self.scrub(message)
        if scrubbed == message:
            return error
        return TransportError(
            error.outcome,
            scrubbed,
            retryable=error.retryable,
            retry_after=error.retry_after,
            status=error.status,
        )

    def response(self, response: ProviderResponse) -> ProviderResponse:
        """A provider's answer with its text and model name scrubbed."""
        if self._pattern is None:
            return response
        text, model = self.scrub(response.text), self.scrub_optional(response.model)
        if text == response.text and model == response.model:
            return response
        return ProviderResponse(
            text=text,
            model=model,
            input_tokens=response.input_tokens,
            output_tokens=response.output_tokens,
            structured=response.structured,
        )


EMPTY_SCRUBBER = SecretScrubber()


def scrubber_of(provider: Any) -> SecretScrubber:
    """The provider's scrubber (its `scrubber` attribute), or one that changes nothing."""
    scrubber = getattr(provider, "scrubber", None)
    return scrubber if isinstance(scrubber, SecretScrubber) else EMPTY_SCRUBBER


def redact_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """A run's options with every text passed through `redact` (URL credentials, key-like
    query parameters, bearer tokens, known keys), nested mappings and lists included."""

    def clean(value: Any) -> Any:
        if isinstance(value, str):
            return redact(value)
        if isinstance(value, Mapping):
            return {key: clean(item) for key, item in value.items()}
        if isinstance(value, list):
            return [clean(item) for item in value]
        return value

    return {key: clean(value) for key, value in options.items()}
