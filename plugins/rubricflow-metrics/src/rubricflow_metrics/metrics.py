"""The metrics: each turns the content, its references and the criterion's options into a
value in 0..1 with evidence, or raises `MetricError` saying why it cannot.

The text-similarity metrics are computed by the field's own libraries (sacrebleu for BLEU,
chrF and TER; rouge-score for ROUGE; textstat for readability), never re-implemented
here. Where a library's scale is not 0..1 the mapping is fixed and documented:

- BLEU and chrF: score / 100;
- TER (an edit rate, lower is better, may exceed 100): max(0, 1 - TER / 100);
- Flesch reading ease (about 0..100, can leave that range): clamp(FRE / 100, 0, 1).

Nothing here downloads anything: only sacrebleu tokenizers that need no model or extra
package are allowed, ROUGE never splits sentences with NLTK, and textstat is refused when
its installed version would fetch NLTK's cmudict corpus at run time.
"""

from __future__ import annotations

import importlib
import json
import math
import re
import threading
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import metadata
from typing import Any, Literal

__all__ = [
    "METRICS",
    "SAFE_TOKENIZERS",
    "Metric",
    "MetricError",
    "MetricInput",
    "MetricValue",
    "known_metric_names",
    "register_metric",
    "resolve_metric",
]

#: sacrebleu tokenizers that run offline with sacrebleu's own dependencies. `ja-mecab` and
#: `ko-mecab` need extra packages; `spm`, `flores101`, `flores200` and `spBLEU-1K` download
#: a SentencePiece model on first use, so they are refused.
SAFE_TOKENIZERS = ("13a", "none", "intl", "zh", "char")
ROUGE_MEASURES = ("fmeasure", "precision", "recall")
COMMON_OPTIONS = frozenset({"reference", "reference_key"})

ReferenceMode = Literal["text", "json", "none"]


class MetricError(Exception):
    """The metric cannot give a score (no reference, a bad option, an unknown name): the
    criterion gets an `error` result carrying this message, never a score."""


@dataclass(frozen=True)
class MetricInput:
    """What a metric is computed on.

    `text` is the content as text (JSON content serialised), `content` the content as
    given, `references` the reference texts (several for multi-reference metrics),
    `reference` the reference as given (JSON for `json_path_equals`), `config` the
    criterion's `scoring.config`, `reference_source` where the reference came from.
    """

    text: str
    content: Any = None
    references: tuple[str, ...] = ()
    reference: Any = None
    config: Mapping[str, Any] = field(default_factory=dict)
    reference_source: str = ""


@dataclass(frozen=True)
class MetricValue:
    """A metric's result: `score` in 0..1 and the evidence behind it."""

    score: float
    evidence: tuple[str, ...] = ()
    notes: str = ""


@dataclass(frozen=True)
class Metric:
    """One named metric.

    `reference` says what it compares against: `text` (needs reference texts), `json`
    (a JSON reference or `config.expected`) or `none`; `options` are the `scoring.config`
    keys it accepts besides `reference` and `reference_key`.
    """

    name: str
    compute: Callable[[MetricInput], MetricValue]
    description: str
    reference: ReferenceMode = "none"
    options: frozenset[str] = frozenset()


# --- small helpers ------------------------------------------------------------------------


@cache
def library_version(distribution: str) -> str:
    """The installed version of a distribution, for evidence lines."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "unknown"


def _unit(value: float) -> float:
    """Clamp a finite value into 0..1 (library rounding can give 100.00000000000004)."""
    if not math.isfinite(value):
        raise MetricError(f"the library returned {value}, which is not a finite number")
    return min(1.0, max(0.0, value))


def _clip(text: str, width: int = 60) -> str:
    shown = repr(text)
    return shown if len(shown) <= width else shown[: width - 4] + "...'"


def _shown_json(value: Any, width: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= width else text[: width - 3] + "..."


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


class _Options:
    """Typed, validated access to `scoring.config`, naming the key in every error."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.config = config

    def _shown(self, key: str) -> str:
        return f"config.{key} ({_clip(str(self.config[key]), 40)})"

    def flag(self, key: str, default: bool) -> bool:
        value = self.config.get(key, default)
        if not isinstance(value, bool):
            raise MetricError(f"{self._shown(key)} must be true or false")
        return value

    def integer(self, key: str, default: int, minimum: int = 0) -> int:
        value = self.config.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise MetricError(f"{self._shown(key)} must be a whole number >= {minimum}")
        return value

    def number(self, key: str, default: float | None, minimum: float = 0.0) -> float | None:
        value = self.config.get(key, default)
        if value is None:
            return None
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or value < minimum
        ):
            raise MetricError(f"{self._shown(key)} must be a number >= {minimum:g}")
        return float(value)

    def choice(self, key: str, default: str, choices: Sequence[str], why: str = "") -> str:
        value = self.config.get(key, default)
        if value not in choices:
            raise MetricError(f"{self._shown(key)} must be one of {', '.join(choices)}{why}")
        return str(value)

    def text(self, key: str) -> str:
        value = self.config.get(key)
        if not isinstance(value, str) or not value:
            raise MetricError(f"config.{key} is required: a non-empty text")
        return value

    def texts(self, key: str) -> list[str]:
        value = self.config.get(key)
        if (
            not isinstance(value, list | tuple)
            or not value
            or not all(isinstance(item, str) and item for item in value)
        ):
            raise MetricError(f"config.{key} is required: a non-empty list of non-empty texts")
        return list(value)


# --- sacrebleu: BLEU, chrF, TER ------------------------------------------------------------


_IMPORT_LOCK = threading.Lock()


def _imported(module: str, attribute: str | None = None) -> Any:
    """Import a metric library on first use, one thread at a time: metrics run in worker
    threads, and two threads importing sacrebleu's submodules at once deadlock Python's
    import locks (`_DeadlockError`)."""
    with _IMPORT_LOCK:
        loaded = importlib.import_module(module)
    return getattr(loaded, attribute) if attribute else loaded


def _sacrebleu_tag() -> str:
    return f"sacrebleu {library_version('sacrebleu')}"


def _bleu(data: MetricInput) -> MetricValue:
    BLEU = _imported("sacrebleu.metrics.bleu", "BLEU")

    options = _Options(data.config)
    tokenize = options.choice(
        "tokenize",
        "13a",
        SAFE_TOKENIZERS,
        " (the others need extra packages or download a model)",
    )
    smooth_method = options.choice("smooth_method", "exp", ("exp", "floor", "add-k", "none"))
    if "smooth" in data.config:
        if "smooth_method" in data.config:
            raise MetricError("give config.smooth (true/false) or config.smooth_method, not both")
        smooth_method = "exp" if options.flag("smooth", True) else "none"
    if "max_order" in data.config and "max_ngram_order" in data.config:
        raise MetricError("give config.max_order or config.max_ngram_order, not both")
    order_key = "max_order" if "max_order" in data.config else "max_ngram_order"
    bleu = BLEU(
        lowercase=options.flag("lowercase", False),
        tokenize=tokenize,
        smooth_method=smooth_method,
        smooth_value=options.number("smooth_value", None),
        max_ngram_order=options.integer(order_key, 4, minimum=1),
        effective_order=options.flag("effective_order", True),
    )
    result = bleu.sentence_score(data.text, list(data.references))
    return MetricValue(
        _unit(result.score / 100),
        (
            f"bleu={result.score:.2f} ({_sacrebleu_tag()}, {tokenize} tokenizer, "
            f"{_plural(len(data.references), 'reference')})",
            str(result),
            f"signature {bleu.get_signature()}",
        ),
    )


def _chrf(data: MetricInput) -> MetricValue:
    CHRF = _imported("sacrebleu.metrics.chrf", "CHRF")

    options = _Options(data.config)
    chrf = CHRF(
        char_order=options.integer("char_order", 6, minimum=1),
        word_order=options.integer("word_order", 0),
        beta=options.integer("beta", 2),
        lowercase=options.flag("lowercase", False),
        whitespace=options.flag("whitespace", False),
        eps_smoothing=options.flag("eps_smoothing", False),
    )
    result = chrf.sentence_score(data.text, list(data.references))
    return MetricValue(
        _unit(result.score / 100),
        (
            f"chrf={result.score:.2f} ({_sacrebleu_tag()}, {result.name}, "
            f"{_plural(len(data.references), 'reference')})",
            f"signature {chrf.get_signature()}",
        ),
    )


def _ter(data: MetricInput) -> MetricValue:
    TER = _imported("sacrebleu.metrics.ter", "TER")

    options = _Options(data.config)
    ter = TER(
        normalized=options.flag("normalized", False),
        no_punct=options.flag("no_punct", False),
        asian_support=options.flag("asian_support", False),
        case_sensitive=options.flag("case_sensitive", False),
    )
    result = ter.sentence_score(data.text, list(data.references))
    score = max(0.0, 1.0 - result.score / 100)
    return MetricValue(
        _unit(score),
        (
            f"ter={result.score:.2f} ({_sacrebleu_tag()}, tercom tokenizer, "
            f"{_plural(len(data.references), 'reference')}) -> {score:.4f} = max(0, 1 - TER/100)",
            f"signature {ter.get_signature()}",
        ),
    )


# --- rouge-score: ROUGE-1, ROUGE-2, ROUGE-L -------------------------------------------------


def _rouge(variant: str) -> Callable[[MetricInput], MetricValue]:
    def compute(data: MetricInput) -> MetricValue:
        rouge_scorer = _imported("rouge_score.rouge_scorer")

        options = _Options(data.config)
        measure = options.choice("measure", "fmeasure", ROUGE_MEASURES)
        stemmer = options.flag("use_stemmer", False)
        scorer = rouge_scorer.RougeScorer([variant], use_stemmer=stemmer)
        # rouge-score's signature is score(target, prediction): the reference comes first
        scores = [scorer.score(reference, data.text)[variant] for reference in data.references]
        best_index = max(range(len(scores)), key=lambda i: getattr(scores[i], measure))
        best = scores[best_index]
        value = float(getattr(best, measure))
        which = f", best of {len(scores)} references: #{best_index + 1}" if len(scores) > 1 else ""
        evidence = [
            f"{variant} {measure}={value:.4f} (rouge-score {library_version('rouge-score')}, "
            f"stemmer {'on' if stemmer else 'off'}{which})",
            f"precision={best.precision:.4f} recall={best.recall:.4f} fmeasure={best.fmeasure:.4f}",
        ]
        notes = ""
        if not re.search(r"[a-z0-9]", data.text.lower()):
            notes = (
                "rouge-score's tokenizer keeps only ASCII letters and digits, and the content "
                "has none; for other scripts use chrf"
            )
        return MetricValue(_unit(value), tuple(evidence), notes)

    return compute


# --- textstat: readability ------------------------------------------------------------------


def _textstat_would_download(lang: str) -> bool:
    """textstat 0.7.9 reads NLTK's cmudict corpus for English and 0.7.10+ downloads it when
    it is missing; 0.7.7-0.7.8 read it from the `cmudict` package (no download)."""
    try:
        from textstat.backend.utils import _get_cmudict as module
    except ImportError:  # pragma: no cover - an older layout without cmudict
        return False
    held = vars(module)
    uses_nltk = "nltk" in held or type(held.get("cmudict")).__module__.startswith("nltk")
    if not uses_nltk or lang.split("_")[0] != "en":
        return False
    import nltk

    try:
        nltk.data.find("corpora/cmudict")
    except LookupError:
        return True
    return False


def _readability(data: MetricInput) -> MetricValue:
    # a fresh instance per call: set_lang on the module-level one would be shared state
    textstatistics = _imported("textstat.textstat", "textstatistics")

    lang = data.config.get("lang", "en_US")
    if not isinstance(lang, str) or not lang:
        raise MetricError(f"config.lang ({lang!r}) must be a locale id such as en_US")
    if _textstat_would_download(lang):
        raise MetricError(
            f"textstat {library_version('textstat')} would download NLTK's cmudict corpus at "
            "run time, and rubricflow-metrics never downloads data; install the textstat "
            "version rubricflow-metrics requires (>=0.7.7,<0.7.9) or install the corpus "
            "beforehand with nltk.download('cmudict')"
        )
    stats = textstatistics()
    stats.set_lang(lang)
    ease = float(stats.flesch_reading_ease(data.text))
    score = _unit(ease / 100)
    notes = "" if data.text.strip() else "empty content: there is nothing to read, so it scores 0"
    return MetricValue(
        score,
        (
            f"flesch_reading_ease={ease:.2f} -> {score:.4f} = clamp(FRE/100, 0, 1) "
            f"(textstat {library_version('textstat')}, {lang})",
        ),
        notes,
    )


# --- matching ------------------------------------------------------------------------------


def _exact_match(data: MetricInput) -> MetricValue:
    strip = _Options(data.config).flag("strip", True)
    text = data.text.strip() if strip else data.text
    for index, reference in enumerate(data.references):
        if text == (reference.strip() if strip else reference):
            where = f" {index + 1} of {len(data.references)}" if len(data.references) > 1 else ""
            return MetricValue(1.0, (f"exact match with reference{where}",))
    return MetricValue(
        0.0,
        (
            f"no exact match: content {_clip(text)} vs "
            f"{', '.join(_clip(r) for r in data.references[:3])}"
            + (" ..." if len(data.references) > 3 else ""),
        ),
    )


_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_text(text: str, *, remove_articles: bool = False) -> str:
    """Case-, punctuation- and whitespace-insensitive form: NFKC, casefold, punctuation
    removed, optionally English articles removed, whitespace collapsed."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    kept = "".join(" " if unicodedata.category(ch).startswith("P") else ch for ch in folded)
    if remove_articles:
        kept = _ARTICLES.sub(" ", kept)
    return " ".join(kept.split())


def _normalized_match(data: MetricInput) -> MetricValue:
    remove_articles = _Options(data.config).flag("remove_articles", False)
    text = normalize_text(data.text, remove_articles=remove_articles)
    normalised = [normalize_text(r, remove_articles=remove_articles) for r in data.references]
    for index, reference in enumerate(normalised):
        if text == reference:
            where = f" {index + 1} of {len(normalised)}" if len(normalised) > 1 else ""
            return MetricValue(1.0, (f"normalised match with reference{where}: {_clip(text)}",))
    return MetricValue(
        0.0,
        (
            f"no normalised match: {_clip(text)} vs "
            f"{', '.join(_clip(r) for r in normalised[:3])}"
            + (" ..." if len(normalised) > 3 else ""),
        ),
    )


_REGEX_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE}


def _regex(data: MetricInput) -> MetricValue:
    options = _Options(data.config)
    pattern = options.text("pattern")
    mode = options.choice("mode", "partial", ("partial", "full"))
    flag_text = data.config.get("flags", "")
    if not isinstance(flag_text, str) or any(ch not in _REGEX_FLAGS for ch in flag_text):
        raise MetricError(f"config.flags ({flag_text!r}) may hold only the letters i, m, s, x")
    flags = 0
    for ch in flag_text:
        flags |= _REGEX_FLAGS[ch]
    try:
        compiled = re.compile(pattern, flags)
    except re.error as error:
        raise MetricError(f"config.pattern is not a valid regular expression: {error}") from None
    found = compiled.fullmatch(data.text) if mode == "full" else compiled.search(data.text)
    shown = f"/{pattern}/{flag_text}"
    if found is None:
        what = "does not match the whole content" if mode == "full" else "matches nowhere"
        return MetricValue(0.0, (f"regex {shown} {what}",))
    return MetricValue(
        1.0, (f"regex {shown} {mode} match {_clip(found.group(0))} at {found.start()}",)
    )


def _keyword_coverage(data: MetricInput) -> MetricValue:
    options = _Options(data.config)
    keywords = options.texts("keywords")
    case_sensitive = options.flag("case_sensitive", False)
    whole_word = options.flag("whole_word", True)
    flags = 0 if case_sensitive else re.IGNORECASE
    found: list[str] = []
    missing: list[str] = []
    for keyword in keywords:
        escaped = re.escape(keyword)
        pattern = rf"(?<!\w){escaped}(?!\w)" if whole_word else escaped
        (found if re.search(pattern, data.text, flags) else missing).append(keyword)
    score = len(found) / len(keywords)
    evidence = [f"keywords found {len(found)}/{len(keywords)}: {', '.join(found) or 'none'}"]
    if missing:
        evidence.append(f"missing: {', '.join(missing)}")
    return MetricValue(score, tuple(evidence))


def _length(data: MetricInput) -> MetricValue:
    options = _Options(data.config)
    unit = options.choice("unit", "words", ("words", "characters", "chars"))
    low = options.number("min", None)
    high = options.number("max", None)
    ramp = options.number("ramp", None)
    if low is None and high is None:
        raise MetricError("the length metric needs config.min, config.max or both")
    if low is not None and high is not None and low > high:
        raise MetricError(f"config.min ({low:g}) is above config.max ({high:g})")
    if ramp is not None and ramp <= 0:
        raise MetricError("config.ramp must be a number > 0 (the distance over which 1 falls to 0)")
    count = len(data.text.split()) if unit == "words" else len(data.text)
    unit_name = "words" if unit == "words" else "characters"
    bounds = f"{'' if low is None else f'{low:g}'}..{'' if high is None else f'{high:g}'}"
    outside = 0.0
    if low is not None and count < low:
        outside = low - count
    elif high is not None and count > high:
        outside = count - high
    if outside == 0:
        score = 1.0
    elif ramp is None:
        score = 0.0
    else:
        score = max(0.0, 1.0 - outside / ramp)
    evidence = f"{count} {unit_name}; bounds {bounds}"
    if outside:
        evidence += f"; {outside:g} outside" + (f", ramp {ramp:g} -> {score:.4f}" if ramp else "")
    return MetricValue(score, (evidence,))


# --- JSON path ------------------------------------------------------------------------------

_MISSING = object()
_PATH_PART = re.compile(r"[^.\[\]]+|\[(\d+)\]")


def split_path(path: str) -> list[str | int]:
    """`a.b[0].c`, `a.b.0.c` and `$.a.b` all address the same value; indices are ints."""
    body = path[1:] if path.startswith("$") else path
    parts: list[str | int] = []
    for match in _PATH_PART.finditer(body):
        if match.group(1) is not None:
            parts.append(int(match.group(1)))
        else:
            parts.append(match.group(0))
    if not parts:
        raise MetricError(f"config.path ({path!r}) names no key; write e.g. answer.value")
    return parts


def lookup_path(document: Any, parts: Sequence[str | int]) -> Any:
    """The value at `parts`, or `_MISSING`."""
    node = document
    for part in parts:
        if isinstance(node, Mapping) and str(part) in node:
            node = node[str(part)]
        elif isinstance(node, list) and (
            isinstance(part, int) or (isinstance(part, str) and part.isdigit())
        ):
            index = int(part)
            if index >= len(node):
                return _MISSING
            node = node[index]
        else:
            return _MISSING
    return node


def json_equal(left: Any, right: Any) -> bool:
    """JSON equality: numbers compare by value (1 == 1.0) but true is not 1, and lists and
    objects compare item by item."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, int | float) and isinstance(right, int | float):
        return left == right
    if isinstance(left, Mapping) and isinstance(right, Mapping):
        return left.keys() == right.keys() and all(json_equal(left[k], right[k]) for k in left)
    if isinstance(left, list | tuple) and isinstance(right, list | tuple):
        return len(left) == len(right) and all(
            json_equal(a, b) for a, b in zip(left, right, strict=True)
        )
    return type(left) is type(right) and bool(left == right)


def _as_json(value: Any) -> tuple[Any, str]:
    """(document, why not) for JSON content or JSON text."""
    if not isinstance(value, str):
        return value, ""
    try:
        return json.loads(value), ""
    except (json.JSONDecodeError, RecursionError) as error:
        return _MISSING, str(error)


def _json_path_equals(data: MetricInput) -> MetricValue:
    options = _Options(data.config)
    path = options.text("path")
    parts = split_path(path)
    if "expected" in data.config:
        expected = data.config["expected"]
        source = "config.expected"
    else:
        if data.reference is None:
            raise MetricError(
                "json_path_equals compares with config.expected or with the reference's "
                "value at the same path, and neither was given"
            )
        reference, why = _as_json(data.reference)
        if reference is _MISSING:
            raise MetricError(f"the reference is not JSON ({why})")
        expected = lookup_path(reference, parts)
        if expected is _MISSING:
            raise MetricError(f"the reference has no value at {path}")
        source = "the reference"
    content, why = _as_json(data.content)
    if content is _MISSING:
        return MetricValue(0.0, (f"content is not JSON ({why})",))
    actual = lookup_path(content, parts)
    if actual is _MISSING:
        return MetricValue(0.0, (f"{path}: not found in the content",))
    shown_actual = _shown_json(actual)
    shown_expected = _shown_json(expected)
    if json_equal(actual, expected):
        return MetricValue(1.0, (f"{path} = {shown_actual}, equal to {source}",))
    return MetricValue(0.0, (f"{path} = {shown_actual}, but {source} has {shown_expected}",))


# --- numbers --------------------------------------------------------------------------------

_NUMBER = re.compile(
    r"(?<![\w.])[-+\u2212]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?"
)


def numbers_in(text: str) -> list[float]:
    """Every number in `text`, in order: signs, decimals, exponents and 1,234 groups."""
    found = []
    for match in _NUMBER.finditer(text):
        token = match.group(0).replace(",", "").replace("\u2212", "-")
        value = float(token)
        if math.isfinite(value):
            found.append(value)
    return found


def _numeric_tolerance(data: MetricInput) -> MetricValue:
    options = _Options(data.config)
    abs_tol = options.number("abs_tol", 1e-9)
    rel_tol = options.number("rel_tol", 0.0)
    which = options.choice("which", "first", ("first", "last"))
    assert abs_tol is not None and rel_tol is not None
    expected_values: list[float] = []
    for reference in data.references:
        numbers = numbers_in(reference)
        if numbers:
            expected_values.append(numbers[0])
    if not expected_values:
        raise MetricError(
            f"the reference has no number ({', '.join(_clip(r) for r in data.references[:3])})"
        )
    numbers = numbers_in(data.text)
    if not numbers:
        return MetricValue(0.0, ("no number found in the content",))
    value = numbers[0] if which == "first" else numbers[-1]
    tolerance = f"abs_tol {abs_tol:g}, rel_tol {rel_tol:g}"
    for expected in expected_values:
        if math.isclose(value, expected, rel_tol=rel_tol, abs_tol=abs_tol):
            return MetricValue(
                1.0,
                (f"{which} number {value:g} is within tolerance of {expected:g} ({tolerance})",),
            )
    shown = ", ".join(f"{v:g}" for v in expected_values)
    return MetricValue(
        0.0, (f"{which} number {value:g} is not within tolerance of {shown} ({tolerance})",)
    )


# --- the registry ---------------------------------------------------------------------------

METRICS: dict[str, Metric] = {}
_ALIASES: dict[str, str] = {
    "rouge_l": "rougeL",
    "rouge-l": "rougeL",
    "rouge_1": "rouge1",
    "rouge-1": "rouge1",
    "rouge_2": "rouge2",
    "rouge-2": "rouge2",
    "flesch_reading_ease": "readability",
}
#: OpenRubricRL metric types handled by name resolution rather than a registry entry.
SPECIAL_NAMES = ("rouge", "custom", "perplexity")


def register_metric(metric: Metric, *aliases: str) -> None:
    """Add a metric (and aliases) to the registry; a name already taken is a `ValueError`."""
    for name in (metric.name, *aliases):
        key = name.lower()
        if key in _lookup() or key in SPECIAL_NAMES:
            raise ValueError(f"metric name {name!r} is already registered")
    METRICS[metric.name] = metric
    for alias in aliases:
        _ALIASES[alias] = metric.name


def _lookup() -> dict[str, str]:
    table = {name.lower(): name for name in METRICS}
    table.update({alias.lower(): target for alias, target in _ALIASES.items()})
    return table


def known_metric_names() -> list[str]:
    """Every name `scoring.metric` accepts, canonical names first, then aliases."""
    return [*METRICS, *sorted(_ALIASES), *SPECIAL_NAMES]


for _metric in (
    Metric(
        "bleu",
        _bleu,
        "sentence BLEU (sacrebleu) / 100; several references allowed",
        "text",
        frozenset(
            {
                "tokenize",
                "lowercase",
                "smooth_method",
                "smooth_value",
                "smooth",
                "max_ngram_order",
                "max_order",
                "effective_order",
            }
        ),
    ),
    Metric(
        "chrf",
        _chrf,
        "sentence chrF (sacrebleu) / 100; word_order 2 gives chrF++",
        "text",
        frozenset({"char_order", "word_order", "beta", "lowercase", "whitespace", "eps_smoothing"}),
    ),
    Metric(
        "ter",
        _ter,
        "translation edit rate (sacrebleu) as max(0, 1 - TER/100)",
        "text",
        frozenset({"normalized", "no_punct", "asian_support", "case_sensitive"}),
    ),
    *(
        Metric(
            variant,
            _rouge(variant),
            f"{variant} (rouge-score), F-measure by default; best of several references",
            "text",
            frozenset({"measure", "use_stemmer"}),
        )
        for variant in ("rouge1", "rouge2", "rougeL")
    ),
    Metric(
        "readability",
        _readability,
        "Flesch reading ease (textstat) as clamp(FRE/100, 0, 1)",
        "none",
        frozenset({"lang"}),
    ),
    Metric(
        "exact_match",
        _exact_match,
        "1 when the content equals a reference (surrounding whitespace ignored)",
        "text",
        frozenset({"strip"}),
    ),
    Metric(
        "accuracy",
        _exact_match,
        "OpenRubricRL accuracy: exact match against the reference (an error without one)",
        "text",
        frozenset({"strip"}),
    ),
    Metric(
        "normalized_match",
        _normalized_match,
        "1 when the content equals a reference ignoring case, punctuation and whitespace",
        "text",
        frozenset({"remove_articles"}),
    ),
    Metric(
        "regex",
        _regex,
        "1 when config.pattern matches (mode partial: anywhere; full: the whole content)",
        "none",
        frozenset({"pattern", "mode", "flags"}),
    ),
    Metric(
        "keyword_coverage",
        _keyword_coverage,
        "share of config.keywords present in the content",
        "none",
        frozenset({"keywords", "case_sensitive", "whole_word"}),
    ),
    Metric(
        "length",
        _length,
        "1 when the word or character count is within min..max (optionally a soft ramp)",
        "none",
        frozenset({"unit", "min", "max", "ramp"}),
    ),
    Metric(
        "json_path_equals",
        _json_path_equals,
        "1 when the JSON value at config.path equals config.expected or the reference's",
        "json",
        frozenset({"path", "expected"}),
    ),
    Metric(
        "numeric_tolerance",
        _numeric_tolerance,
        "1 when the first number in the content is within abs/rel tolerance of the reference",
        "text",
        frozenset({"abs_tol", "rel_tol", "which"}),
    ),
):
    register_metric(_metric)


def _rouge_variant(value: Any) -> str:
    key = re.sub(r"[^a-z0-9]", "", str(value).lower())
    key = key.removeprefix("rouge")
    variant = {"1": "rouge1", "2": "rouge2", "l": "rougeL"}.get(key)
    if variant is None:
        raise MetricError(
            f"config.variant ({value!r}) must name a ROUGE variant: rouge1, rouge2 or rougeL"
        )
    return variant


def resolve_metric(name: str, config: Mapping[str, Any]) -> tuple[Metric, frozenset[str]]:
    """The metric `scoring.metric` names, and the config keys its name resolution used.

    Handles OpenRubricRL's types: `rouge` (config.variant, default rougeL), `custom`
    (config.metric, or OpenRubricRL's config.metric_function, must name a metric) and
    `perplexity` (needs a language model: always a `MetricError`).
    """
    key = name.strip()
    used: set[str] = set()
    if key.lower() == "custom":
        inner = config.get("metric") or config.get("metric_function")
        used |= {"metric", "metric_function"}
        if not isinstance(inner, str) or not inner.strip() or inner.strip().lower() == "custom":
            raise MetricError(
                "OpenRubricRL's `custom` metric computes nothing by itself: set "
                "scoring.config.metric to the metric to compute (one of "
                f"{', '.join(METRICS)}), or install a plugin that provides it"
            )
        key = inner.strip()
    if key.lower() == "rouge":
        key = _rouge_variant(config.get("variant", "rougeL"))
        used.add("variant")
    if key.lower() == "perplexity":
        raise MetricError(
            "perplexity needs a language model to compute token probabilities, and "
            "rubricflow-metrics ships none, so it gives no score; judge fluency with an LLM "
            "criterion instead, or install a plugin that provides a perplexity metric"
        )
    canonical = _lookup().get(key.lower())
    if canonical is None:
        via = f" (named by config of {name!r})" if key != name.strip() else ""
        raise MetricError(
            f"unknown metric {key!r}{via}; known metrics: {', '.join(known_metric_names())}"
        )
    if isinstance(config.get("metric"), str) and config["metric"].strip().lower() in (
        name.strip().lower(),
        canonical.lower(),
    ):
        used.add("metric")  # OpenRubricRL imports keep config.metric next to scoring.metric
    return METRICS[canonical], frozenset(used)
