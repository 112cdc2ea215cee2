"""The built-in check functions, each run through a real `evaluate()` of a rubric naming it."""

from __future__ import annotations

import importlib
import re as _re
import subprocess as _subprocess
import sys as _sys
from pathlib import Path as _Path
from typing import Any

import pytest
import yaml as _yaml

from rubricflow import functions as _functions
from rubricflow import parse_rubric
from rubricflow.engine import evaluate
from rubricflow.plugins import PluginRegistry
from rubricflow.results import CriterionResult, Target

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
PRIVATE_KEY = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----"
QUIZ = {
    "title": "Capitals",
    "meta": {"author": {"name": "Ada"}, "tags": []},
    "questions": [{"id": 1, "q": "France?"}, {"id": 2, "q": "Peru?"}],
}


async def check(
    plugins: PluginRegistry, function: str, content: Any, **config: Any
) -> CriterionResult:
    rubric = parse_rubric(
        {
            "id": "builtin-check",
            "criteria": [
                {
                    "id": "c",
                    "scoring": {"method": "deterministic", "function": function, "config": config},
                }
            ],
        }
    )
    evaluation = await evaluate(rubric, Target(content=content), plugins=plugins)
    result = evaluation.criteria[0]
    assert result.status == "scored", result.notes
    expected = "pass" if result.score == 1.0 else "fail"
    assert evaluation.verdict == expected
    return result


def evidence(result: CriterionResult) -> str:
    return " | ".join(result.evidence)


# --- text size ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "score"),
    [("hello", 1.0), ("  \n\t ", 0.0), ("", 0.0), ({"a": 1}, 1.0), ({}, 0.0), ([], 0.0)],
    ids=["text", "whitespace", "empty", "object", "empty-object", "empty-array"],
)
async def test_non_empty(plugins: PluginRegistry, content: Any, score: float) -> None:
    result = await check(plugins, "non_empty", content)

    assert result.score == score
    if score == 0.0:
        assert evidence(result) == "content is empty"


@pytest.mark.parametrize(
    ("content", "score", "shown"),
    [
        ("one two three", 1.0, "3 words (allowed 2..4)"),
        ("one  two\nthree\tfour", 1.0, "4 words (allowed 2..4)"),
        ("one", 0.0, "1 words (allowed 2..4)"),
        ("a b c d e", 0.0, "5 words (allowed 2..4)"),
    ],
)
async def test_word_count_between(
    plugins: PluginRegistry, content: str, score: float, shown: str
) -> None:
    result = await check(plugins, "word_count_between", content, min=2, max=4)

    assert result.score == score
    assert evidence(result) == shown


async def test_word_count_between_with_one_bound(plugins: PluginRegistry) -> None:
    long_text = " ".join(["word"] * 500)

    assert (await check(plugins, "word_count_between", long_text, min=3)).score == 1.0
    assert (await check(plugins, "word_count_between", long_text, max=499)).score == 0.0


@pytest.mark.parametrize(
    ("content", "score", "shown"),
    [
        ("abcde", 1.0, "5 characters (allowed 0..5)"),
        ("abcdef", 0.0, "6 characters (allowed 0..5)"),
    ],
)
async def test_char_count_between(
    plugins: PluginRegistry, content: str, score: float, shown: str
) -> None:
    result = await check(plugins, "char_count_between", content, max=5)

    assert result.score == score
    assert evidence(result) == shown


async def test_char_count_between_minimum(plugins: PluginRegistry) -> None:
    result = await check(plugins, "char_count_between", "short", min=10)

    assert result.score == 0.0
    assert "5 characters" in evidence(result)


# --- terms ---------------------------------------------------------------------------------


async def test_contains_all_scores_the_share_of_terms_found(plugins: PluginRegistry) -> None:
    terms = ["alpha", "beta", "gamma", "delta"]

    half = await check(plugins, "contains_all", "ALPHA and Beta only", terms=terms)
    full = await check(plugins, "contains_all", "alpha beta gamma delta", terms=terms)

    assert half.score == 0.5
    assert evidence(half) == "missing: gamma, delta"
    assert half.passed is False
    assert full.score == 1.0
    assert full.evidence == ()


async def test_contains_all_case_sensitive(plugins: PluginRegistry) -> None:
    result = await check(
        plugins, "contains_all", "Alpha and beta", terms=["alpha", "beta"], case_sensitive=True
    )

    assert result.score == 0.5
    assert evidence(result) == "missing: alpha"


async def test_contains_none(plugins: PluginRegistry) -> None:
    clean = await check(plugins, "contains_none", "all done", terms=["lorem", "TODO"])
    dirty = await check(plugins, "contains_none", "a todo remains", terms=["lorem", "TODO"])
    exact = await check(
        plugins, "contains_none", "a todo remains", terms=["TODO"], case_sensitive=True
    )

    assert clean.verdict == "MET"
    assert dirty.verdict == "UNMET"
    assert evidence(dirty) == "found: TODO"
    assert exact.verdict == "MET"


# --- regular expressions --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "flags", "content", "score"),
    [
        (r"^total: \d+$", "m", "items\ntotal: 5\nthanks", 1.0),
        (r"^total: \d+$", "", "items\ntotal: 5\nthanks", 0.0),
        ("hello", "i", "HELLO there", 1.0),
        ("hello", "", "HELLO there", 0.0),
        ("start.end", "s", "start\nend", 1.0),
        ("start.end", "", "start\nend", 0.0),
        (r"\d{3} # area code", "x", "call 555", 1.0),
    ],
)
async def test_matches_regex_with_flags(
    plugins: PluginRegistry, pattern: str, flags: str, content: str, score: float
) -> None:
    result = await check(plugins, "matches_regex", content, pattern=pattern, flags=flags)

    assert result.score == score
    if score == 0.0:
        assert pattern in evidence(result)


async def test_no_regex_match(plugins: PluginRegistry) -> None:
    hit = await check(plugins, "no_regex_match", "LOREM ipsum, lorem", pattern="lorem", flags="i")
    clean = await check(plugins, "no_regex_match", "all real text", pattern="lorem", flags="i")

    assert hit.verdict == "UNMET"
    assert hit.evidence == ("matched: 'LOREM'", "matched: 'lorem'")
    assert clean.verdict == "MET"


# --- JSON ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "score"),
    [('{"a": [1, 2]}', 1.0), ("[]", 1.0), ('{"a": }', 0.0), ("plain words", 0.0), (QUIZ, 1.0)],
    ids=["object-text", "array-text", "broken", "prose", "parsed"],
)
async def test_valid_json(plugins: PluginRegistry, content: Any, score: float) -> None:
    result = await check(plugins, "valid_json", content)

    assert result.score == score
    if score == 0.0:
        assert "not JSON" in evidence(result)


async def test_json_has_keys_with_dotted_paths(plugins: PluginRegistry) -> None:
    keys = ["title", "meta.author.name", "questions.1.q"]

    parsed = await check(plugins, "json_has_keys", QUIZ, keys=keys)
    as_text = await check(
        plugins, "json_has_keys", '{"title": "t", "meta": {"author": {}}}', keys=keys
    )

    assert parsed.score == 1.0
    assert as_text.score == pytest.approx(1 / 3)
    assert evidence(as_text) == "missing: meta.author.name, questions.1.q"


async def test_json_has_keys_does_not_walk_into_text(plugins: PluginRegistry) -> None:
    result = await check(plugins, "json_has_keys", QUIZ, keys=["title.length", "questions.9"])

    assert result.score == 0.0
    assert evidence(result) == "missing: title.length, questions.9"


@pytest.mark.parametrize(
    ("content", "score", "shown"),
    [
        ({"items": [1]}, 1.0, "1 items (allowed 1..2)"),
        ({"items": [1, 2]}, 1.0, "2 items (allowed 1..2)"),
        ({"items": []}, 0.0, "0 items (allowed 1..2)"),
        ('{"items": [1, 2, 3]}', 0.0, "3 items (allowed 1..2)"),
        ({"other": []}, 0.0, "no value at items"),
        ({"items": "1, 2"}, 0.0, "items is not an array"),
    ],
    ids=["one", "two", "none", "three-as-text", "missing", "not-array"],
)
async def test_json_array_length(
    plugins: PluginRegistry, content: Any, score: float, shown: str
) -> None:
    result = await check(plugins, "json_array_length", content, path="items", min=1, max=2)

    assert result.score == score
    assert evidence(result) == shown


async def test_json_array_length_at_a_nested_path_and_the_root(plugins: PluginRegistry) -> None:
    nested = await check(plugins, "json_array_length", QUIZ, path="meta.tags", max=0)
    root = await check(plugins, "json_array_length", [1, 2, 3], min=3)

    assert nested.score == 1.0
    assert root.score == 1.0


@pytest.mark.parametrize(
    ("function", "config"),
    [
        ("json_has_keys", {"keys": ["title"]}),
        ("json_array_length", {"path": "questions", "min": 1}),
    ],
)
async def test_json_checks_fail_text_that_is_not_json(
    plugins: PluginRegistry, function: str, config: dict[str, Any]
) -> None:
    """Prose where JSON was asked for is the content's fault: UNMET with the reason, like
    `valid_json` and the schema scorer, not an `error` that leaves the evaluation incomplete."""
    result = await check(plugins, function, "Sure! Here is the quiz you asked for.", **config)

    assert result.verdict == "UNMET"
    assert "not JSON" in evidence(result)


# --- personal data and secrets ------------------------------------------------------------


async def test_no_email_addresses(plugins: PluginRegistry) -> None:
    hit = await check(plugins, "no_email_addresses", "write to jane.doe+news@example.co.uk today")
    clean = await check(plugins, "no_email_addresses", "write to us through the contact form")

    assert hit.verdict == "UNMET"
    assert evidence(hit) == "e-mail address: jane.doe+news@example.co.uk"
    assert clean.verdict == "MET"


@pytest.mark.parametrize("number", ["+1 (555) 123-4567", "555-123-4567", "+44 20 7946 0958"])
async def test_no_phone_numbers_finds_phone_numbers(plugins: PluginRegistry, number: str) -> None:
    result = await check(plugins, "no_phone_numbers", f"Call us on {number} after 9.")

    assert result.verdict == "UNMET"
    assert "phone number:" in evidence(result)


async def test_no_phone_numbers_passes_ordinary_numbers(plugins: PluginRegistry) -> None:
    result = await check(
        plugins,
        "no_phone_numbers",
        "The meeting is at 10:30 on 2024-05-01 in room 12; 300 people came, 15% more.",
    )

    assert result.verdict == "MET"


@pytest.mark.parametrize(
    ("content", "kind"),
    [
        (f"aws_access_key_id={AWS_KEY}", "AWS access key"),
        (f"here is the key:\n{PRIVATE_KEY}\n", "private key block"),
        ('db config: password = "hunter22"', "password assignment"),
    ],
    ids=["aws", "private-key", "password"],
)
async def test_no_secrets_finds_secrets(plugins: PluginRegistry, content: str, kind: str) -> None:
    result = await check(plugins, "no_secrets", content)

    assert result.verdict == "UNMET"
    assert evidence(result) == f"looks like a {kind}"


async def test_no_secrets_passes_text_about_secrets(plugins: PluginRegistry) -> None:
    result = await check(
        plugins,
        "no_secrets",
        "Rotate your password every 90 days and never paste an AWS key into a chat.",
    )

    assert result.verdict == "MET"


# --- every built-in check runs in linear time (issue 16, item 6) ------------------------------
# the parser `re` compiles with (private: re._parser from Python 3.11, sre_parse before)
_NEW_RE = _sys.version_info >= (3, 11)
_sre_parse: Any = importlib.import_module("re._parser" if _NEW_RE else "sre_parse")
_sre_constants: Any = importlib.import_module("re._constants" if _NEW_RE else "sre_constants")

_LIBRARY = _Path(__file__).resolve().parents[1] / "rubrics"


def _builtin_patterns() -> dict[str, str]:
    """Every regular expression a built-in check or a library rubric runs on content."""
    found = {
        f"functions.{name}": value.pattern
        for name, value in vars(_functions).items()
        if isinstance(value, _re.Pattern)
    }
    secrets = _functions._SECRETS.items()
    found.update({f"functions._SECRETS[{kind}]": value.pattern for kind, value in secrets})
    for path in sorted(_LIBRARY.glob("*.yaml")):
        document = _yaml.safe_load(path.read_text(encoding="utf-8"))
        for criterion in document.get("criteria", []):
            config = (criterion.get("scoring") or {}).get("config") or {}
            if "pattern" in config:
                found[f"{path.name}:{criterion['id']}"] = config["pattern"]
    return found


def _nested_repeats(items: Any, inside_unbounded: bool = False) -> list[str]:
    """Repeats of variable length inside an unbounded repeat (`(a+)+`, `(?:\\w+ )*`): the
    shape that lets a backtracking engine split one run in exponentially or polynomially
    many ways. Look-arounds are skipped: they match no text the outer repeat can split."""
    found: list[str] = []
    for op, value in items:
        if op in (
            _sre_constants.MAX_REPEAT,
            _sre_constants.MIN_REPEAT,
            getattr(_sre_constants, "POSSESSIVE_REPEAT", None),
        ):
            low, high, sub = value
            if inside_unbounded and low != high:
                found.append(f"{{{low},{'' if high == _sre_constants.MAXREPEAT else high}}}")
            found += _nested_repeats(sub, inside_unbounded or high == _sre_constants.MAXREPEAT)
        elif op == _sre_constants.SUBPATTERN:
            found += _nested_repeats(value[-1], inside_unbounded)
        elif op == _sre_constants.BRANCH:
            for branch in value[1]:
                found += _nested_repeats(branch, inside_unbounded)
        elif op == getattr(_sre_constants, "ATOMIC_GROUP", None):
            found += _nested_repeats(value, inside_unbounded)
    return found


def test_the_structural_check_finds_nested_quantifiers() -> None:
    assert _nested_repeats(_sre_parse.parse(r"^(a+)+$"))
    assert _nested_repeats(_sre_parse.parse(r"-----BEGIN (?:[A-Z]+ )*PRIVATE KEY-----"))
    assert not _nested_repeats(_sre_parse.parse(r"\b(?:\d[ -]?){12,15}\d\b"))  # bounded
    assert not _nested_repeats(_sre_parse.parse(r"(?:(?!token)\w)*"))


@pytest.mark.parametrize("name", sorted(_builtin_patterns()))
def test_no_built_in_pattern_nests_unbounded_quantifiers(name: str) -> None:
    assert _nested_repeats(_sre_parse.parse(_builtin_patterns()[name])) == [], name


_ADVERSARIAL = r"""
import sys, yaml
from pathlib import Path
from rubricflow.functions import BUILTIN_FUNCTIONS
from rubricflow.results import Target

library = Path(sys.argv[1])
checks = [(name, function, {}) for name, function in BUILTIN_FUNCTIONS.items()
          if name in ("no_email_addresses", "no_phone_numbers", "no_secrets")]
for path in sorted(library.glob("*.yaml")):
    for criterion in yaml.safe_load(path.read_text())["criteria"]:
        scoring = criterion.get("scoring") or {}
        if scoring.get("function") in ("matches_regex", "no_regex_match"):
            checks.append((criterion["id"], BUILTIN_FUNCTIONS[scoring["function"]],
                           scoring["config"]))
for fragment in sys.argv[2:]:
    text = (fragment * (1_000_000 // len(fragment) + 1))[:1_000_000]
    for name, function, config in checks:
        function(Target(id="x", content=text), **config)
        print(name, repr(fragment), flush=True)
"""


@pytest.mark.parametrize(
    "fragments",
    [
        ("1-", "ghp_", "a.", "x@1."),  # the e-mail check rescanned each run from each character
        ("secret", "token", "-----BEGIN A "),  # the library's secret pattern, from each keyword
        ("1 ", "(1", "1.", "sk-"),
    ],
)
def test_built_in_checks_finish_on_a_megabyte_of_adversarial_text(
    fragments: tuple[str, ...],
) -> None:
    # one subprocess with a generous timeout, no timing assertion: a linear check does all
    # of this in a few seconds, the quadratic ones took many minutes on 1 MB
    done = _subprocess.run(
        [_sys.executable, "-c", _ADVERSARIAL, str(_LIBRARY), *fragments],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.count("\n") >= 3 * len(fragments)


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("Write to jane.doe+news@example.co.uk today", True),
        ("1-1-1-1-1-1-1-1 then bob@mail.example.org", True),
        ("a@b@c.com", True),
        ("ghp_ghp_ghp_ no address here", False),
        ("user@localhost has no domain dot", False),
    ],
)
def test_the_email_check_still_finds_addresses(text: str, found: bool) -> None:
    result = _functions.no_email_addresses(Target(id="t", content=text))
    assert result.value is (not found), result.evidence


@pytest.mark.parametrize(
    ("text", "flagged"),
    [
        ('my_api_key = "abcd1234efgh"', True),
        ('tokentoken_secret: "abcd1234efgh"', True),
        ("-----BEGIN RSA PRIVATE KEY-----", True),
        ("-----BEGIN PRIVATE KEY-----", True),
        ("-----BEGIN OPENSSH PRIVATE KEY-----", True),
        ("token " * 50 + "is fine", False),
        ('password = "short"', False),
    ],
)
def test_the_library_secret_pattern_keeps_its_meaning(text: str, flagged: bool) -> None:
    document = _yaml.safe_load((_LIBRARY / "code-review.yaml").read_text(encoding="utf-8"))
    (criterion,) = [c for c in document["criteria"] if c["id"] == "hard-coded-secret"]
    result = _functions.matches_regex(
        Target(id="t", content=text), **criterion["scoring"]["config"]
    )
    assert result.value is flagged
