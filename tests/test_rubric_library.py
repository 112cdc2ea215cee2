"""The rubric library in `rubrics/`: every file loads, validates cleanly and passes the
meta-rubric with a perfect score, and names only documented check functions with the
options they take."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from rubricflow import Rubric, dump_rubric, load_file, parse_rubric
from rubricflow.engine.meta import assess_rubric
from rubricflow.model import semver_key
from rubricflow.plugins import PluginRegistry
from rubricflow.results import Target
from rubricflow.scorers.base import CheckResult
from rubricflow.validation import validate_file

RUBRICS_DIR = Path(__file__).resolve().parent.parent / "rubrics"
RUBRIC_SUFFIXES = {".yaml", ".yml", ".json"}
RUBRIC_FILES = sorted(
    p for p in RUBRICS_DIR.iterdir() if p.is_file() and not p.name.startswith(".")
)
EXPECTED_FILES = {
    "answer-quality.yaml",
    "safety-gate.yaml",
    "code-review.yaml",
    "quiz-content.yaml",
    "summarisation.yaml",
}

# The documented built-in check functions and the `scoring.config` options each takes
# (name -> (required options, optional options)). docs/rubric-format.md lists the same.
DOCUMENTED_FUNCTIONS: dict[str, tuple[set[str], set[str]]] = {
    "non_empty": (set(), set()),
    "word_count_between": (set(), {"min", "max"}),
    "char_count_between": (set(), {"min", "max"}),
    "contains_all": ({"terms"}, {"case_sensitive"}),
    "contains_none": ({"terms"}, {"case_sensitive"}),
    "matches_regex": ({"pattern"}, {"flags"}),
    "no_regex_match": ({"pattern"}, {"flags"}),
    "valid_json": (set(), set()),
    "json_has_keys": ({"keys"}, set()),
    "json_array_length": ({"path"}, {"min", "max"}),
    "no_email_addresses": (set(), set()),
    "no_phone_numbers": (set(), set()),
    "no_secrets": (set(), set()),
    # trajectory checks (docs/conversations.md)
    "trajectory.tool_used": ({"name"}, {"min", "max"}),
    "trajectory.tool_not_used": ({"names"}, set()),
    "trajectory.tool_args": ({"name"}, {"schema", "partial"}),
    "trajectory.tool_sequence": ({"expected"}, {"mode"}),
    "trajectory.step_count": ({"max"}, {"min"}),
    "trajectory.final_answer_follows_tools": (set(), set()),
}
KNOWN_METHODS = {
    "llm",
    "llm_verdict",
    "llm_decode",
    "llm_score",
    "deterministic",
    "schema",
    "metric",
}
STRICT_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$"
)


def _ids(paths: list[Path]) -> list[str]:
    return [path.name for path in paths]


def _load(path: Path) -> Rubric:
    loaded = load_file(path)
    assert loaded.format == "native", f"{path.name} is read as {loaded.format}, not native"
    assert len(loaded.rubrics) == 1, f"{path.name} should hold exactly one rubric"
    return loaded.rubrics[0]


def _library() -> dict[str, Rubric]:
    return {path.name: _load(path) for path in RUBRIC_FILES}


def _deterministic(rubric: Rubric) -> list[Any]:
    return [c for c in rubric.criteria if c.scoring.method == "deterministic"]


def test_library_holds_the_core_rubrics() -> None:
    names = {path.name for path in RUBRIC_FILES}
    assert names >= EXPECTED_FILES, f"missing: {sorted(EXPECTED_FILES - names)}"
    assert len(names) >= 5


def test_library_holds_only_rubric_files() -> None:
    """`rubricflow validate rubrics/*` must see rubric files only (no schema side files)."""
    others = [path.name for path in RUBRIC_FILES if path.suffix.lower() not in RUBRIC_SUFFIXES]
    assert not others, f"not rubric files: {others}"
    assert not [p for p in RUBRICS_DIR.iterdir() if p.is_dir()], "rubrics/ holds folders"


@pytest.mark.parametrize("path", RUBRIC_FILES, ids=_ids(RUBRIC_FILES))
def test_rubric_validates_without_errors_or_meta_findings(
    path: Path, plugins: PluginRegistry
) -> None:
    report = validate_file(path, plugins=plugins)
    assert report.valid, [str(problem) for problem in report.errors]
    assert report.format == "native"
    meta_warnings = [str(w) for w in report.warnings if w.path.startswith("meta_rubric")]
    assert not meta_warnings
    assert report.meta_rubric == {"score": 1.0, "passed": True}


@pytest.mark.parametrize("path", RUBRIC_FILES, ids=_ids(RUBRIC_FILES))
def test_rubric_passes_every_meta_rubric_check(path: Path) -> None:
    meta = assess_rubric(_load(path))
    assert meta.score == 1.0
    assert meta.passed
    assert {finding.check: finding.level for finding in meta.findings} == {
        "criteria_coverage": "pass",
        "criteria_independence": "pass",
        "weight_distribution": "pass",
        "threshold_reasonableness": "pass",
        "level_ordering": "pass",
    }


def test_rubric_ids_are_unique_and_match_file_names() -> None:
    library = _library()
    ids = [rubric.id for rubric in library.values()]
    assert len(ids) == len(set(ids)), f"duplicate ids: {ids}"
    for name, rubric in library.items():
        assert rubric.id == Path(name).stem, f"{name} holds rubric id {rubric.id!r}"


@pytest.mark.parametrize("path", RUBRIC_FILES, ids=_ids(RUBRIC_FILES))
def test_rubric_has_a_semver_version(path: Path) -> None:
    rubric = _load(path)
    assert STRICT_SEMVER.match(rubric.version), rubric.version
    semver_key(rubric.version)  # raises for a version the registry could not order


@pytest.mark.parametrize("path", RUBRIC_FILES, ids=_ids(RUBRIC_FILES))
def test_rubric_is_documented_for_judges_and_readers(path: Path) -> None:
    rubric = _load(path)
    assert rubric.name and rubric.name != rubric.id
    assert rubric.description.strip()
    assert rubric.target_type
    for criterion in rubric.criteria:
        assert criterion.name != criterion.id, f"{criterion.id} has no name"
        assert criterion.description.strip(), f"{criterion.id} has no description"
        assert criterion.scoring.method in KNOWN_METHODS, criterion.scoring.method
        for level in criterion.levels:
            assert level.description.strip(), f"{criterion.id}.{level.id} has no description"
        for band in criterion.score_ranges:
            assert band.description.strip(), f"{criterion.id} band {band.min}-{band.max}"


@pytest.mark.parametrize("path", RUBRIC_FILES, ids=_ids(RUBRIC_FILES))
def test_rubric_names_only_documented_check_functions(path: Path) -> None:
    for criterion in _deterministic(_load(path)):
        function = criterion.scoring.function
        assert function in DOCUMENTED_FUNCTIONS, (
            f"{path.name}: {criterion.id} names {function!r}, which is not a documented "
            f"built-in check ({', '.join(sorted(DOCUMENTED_FUNCTIONS))})"
        )
        required, optional = DOCUMENTED_FUNCTIONS[function]
        options = set(criterion.scoring.config)
        assert required <= options, f"{criterion.id}: {function} needs {sorted(required)}"
        assert options <= required | optional, f"{criterion.id}: unknown options {options}"


def test_documented_check_functions_are_registered_and_take_their_options(
    plugins: PluginRegistry,
) -> None:
    for name, (required, optional) in DOCUMENTED_FUNCTIONS.items():
        function = plugins.functions.get(name)
        assert function is not None, f"check function {name!r} is not registered"
        parameters = inspect.signature(function).parameters
        assert (required | optional) <= set(parameters), (name, list(parameters))


@pytest.mark.parametrize("path", RUBRIC_FILES, ids=_ids(RUBRIC_FILES))
def test_rubric_regex_patterns_compile(path: Path) -> None:
    for criterion in _deterministic(_load(path)):
        pattern = criterion.scoring.config.get("pattern")
        if pattern is not None:
            re.compile(pattern)


@pytest.mark.parametrize("path", RUBRIC_FILES, ids=_ids(RUBRIC_FILES))
def test_rubric_json_schemas_are_draft_2020_12(path: Path) -> None:
    for criterion in _load(path).criteria:
        schema = criterion.scoring.schema_
        if criterion.scoring.method == "schema":
            assert schema is not None
            assert schema.get("$schema") == "https://json-schema.org/draft/2020-12/schema"
            Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize("path", RUBRIC_FILES, ids=_ids(RUBRIC_FILES))
def test_rubric_examples_name_existing_levels(path: Path) -> None:
    for criterion in _load(path).criteria:
        for example in criterion.examples:
            if example.level is not None:
                assert criterion.level(example.level) is not None, (criterion.id, example.level)


@pytest.mark.parametrize("path", RUBRIC_FILES, ids=_ids(RUBRIC_FILES))
def test_rubric_round_trips_through_the_native_dump(path: Path) -> None:
    rubric = _load(path)
    again = parse_rubric(yaml.safe_load(dump_rubric(rubric)))
    assert again == rubric
    assert again.content_hash == rubric.content_hash


def test_core_rubrics_use_the_features_they_demonstrate() -> None:
    library = _library()
    answer = library["answer-quality.yaml"]
    assert all(c.kind == "levels" and c.scoring.method == "llm" for c in answer.criteria)
    assert any(c.examples for c in answer.criteria)

    safety = library["safety-gate.yaml"]
    assert safety.pass_threshold >= 0.9
    assert sum(c.required for c in safety.criteria) >= 3
    methods = {c.scoring.method for c in safety.criteria if c.required}
    assert {"deterministic", "llm"} <= methods

    code = library["code-review.yaml"]
    assert [c for c in code.criteria if c.weight < 0], "code-review needs penalty criteria"
    assert [c for c in code.criteria if c.weight > 0]

    quiz = library["quiz-content.yaml"]
    quiz_methods = {c.scoring.method for c in quiz.criteria}
    assert {"schema", "deterministic", "llm"} <= quiz_methods
    assert any(c.kind == "bands" for c in quiz.criteria)

    summary = library["summarisation.yaml"]
    metrics = {c.scoring.metric for c in summary.criteria if c.scoring.method == "metric"}
    assert {"rouge_l", "bleu"} <= metrics
    assert any(c.scoring.function == "word_count_between" for c in summary.criteria)
    assert any(c.required and c.scoring.method == "llm" for c in summary.criteria)


# What each deterministic library criterion should make of typical content:
# (file, criterion id, content, expected check value).
CHECK_SAMPLES: list[tuple[str, str, Any, Any]] = [
    ("safety-gate.yaml", "no-email-addresses", "Use the contact form in the app.", True),
    ("safety-gate.yaml", "no-email-addresses", "Write to jane.doe@example.com.", False),
    ("safety-gate.yaml", "no-phone-numbers", "Open Settings and tap Reset.", True),
    ("safety-gate.yaml", "no-phone-numbers", "Call us on +44 20 7946 0958.", False),
    ("safety-gate.yaml", "no-payment-card-numbers", "Order 12345 ships today.", True),
    ("safety-gate.yaml", "no-payment-card-numbers", "Card 4111 1111 1111 1111 on file.", False),
    ("safety-gate.yaml", "no-credentials", "Set your key in the dashboard.", True),
    ("safety-gate.yaml", "no-credentials", "api_key = 'sk-live-abcdefghijklmnopqrstuvwx'", False),
    ("code-review.yaml", "hard-coded-secret", "key = os.environ['API_KEY']", False),
    ("code-review.yaml", "hard-coded-secret", 'API_KEY = "abcd1234efgh5678"', True),
    ("code-review.yaml", "hard-coded-secret", "-----BEGIN RSA PRIVATE KEY-----", True),
    ("code-review.yaml", "disabled-tests", "@pytest.mark.skipif(sys.platform == 'win32')", False),
    ("code-review.yaml", "disabled-tests", "@pytest.mark.skip(reason='flaky')", True),
    ("code-review.yaml", "disabled-tests", "it.skip('parses dates', () => {})", True),
    ("product-description.yaml", "banned-claims", "A sturdy oak desk with two drawers.", True),
    ("product-description.yaml", "banned-claims", "Guaranteed results, risk-free!", False),
    ("product-description.yaml", "no-placeholders", "Made of [MATERIAL] in {{ country }}.", False),
    ("product-description.yaml", "no-placeholders", "Made from oak [solid] in Portugal.", True),
    ("support-reply-tone.yaml", "no-blame-language", "Obviously you should have read it.", False),
    ("support-reply-tone.yaml", "no-blame-language", "Thanks for flagging this.", True),
    ("summarisation.yaml", "length", "word " * 39, False),
    ("summarisation.yaml", "length", "word " * 80, True),
    ("quiz-content.yaml", "valid-json", '{"title": "x"', False),
    ("quiz-content.yaml", "question-count", {"questions": [{}] * 4}, False),
    ("quiz-content.yaml", "question-count", {"questions": [{}] * 5}, True),
    ("quiz-content.yaml", "recommended-metadata", {"topic": "t", "difficulty": "easy"}, 0.5),
]


@pytest.mark.parametrize(
    ("file", "criterion_id", "content", "expected"),
    CHECK_SAMPLES,
    ids=[f"{f}:{c}:{i}" for i, (f, c, _, _) in enumerate(CHECK_SAMPLES)],
)
def test_deterministic_criteria_behave_as_described(
    file: str, criterion_id: str, content: Any, expected: Any, plugins: PluginRegistry
) -> None:
    rubric = _load(RUBRICS_DIR / file)
    criterion = rubric.criterion(criterion_id)
    assert criterion is not None and criterion.scoring.function is not None
    function = plugins.functions[criterion.scoring.function]
    value = function(Target(content=content), **criterion.scoring.config)
    if isinstance(value, CheckResult):
        value = value.value
    assert value == expected, (file, criterion_id, content)


def test_quiz_schema_accepts_a_good_quiz_and_rejects_a_broken_one() -> None:
    quiz = _load(RUBRICS_DIR / "quiz-content.yaml")
    criterion = quiz.criterion("quiz-schema")
    assert criterion is not None and criterion.scoring.schema_ is not None
    validator = Draft202012Validator(criterion.scoring.schema_)
    question = {
        "id": "q1",
        "prompt": "Which gas do plants take in for photosynthesis?",
        "choices": ["Oxygen", "Carbon dioxide", "Nitrogen"],
        "answer_index": 1,
        "explanation": "Plants take in carbon dioxide and release oxygen.",
    }
    good = {"title": "Photosynthesis", "difficulty": "easy", "questions": [question]}
    assert not list(validator.iter_errors(good))
    broken = {"title": "Photosynthesis", "questions": [{**question, "choices": ["Oxygen"]}]}
    assert list(validator.iter_errors(broken))


def test_format_reference_example_is_the_library_rubric() -> None:
    """docs/rubric-format.md shows rubrics/summarisation.yaml in full; keep them in step."""
    docs = Path(__file__).resolve().parent.parent / "docs" / "rubric-format.md"
    text = docs.read_text(encoding="utf-8")
    section = text.split("## A complete example", 1)[1]
    block = section.split("```yaml\n", 1)[1].split("\n```", 1)[0]
    shown = parse_rubric(yaml.safe_load(block))
    assert shown == _load(RUBRICS_DIR / "summarisation.yaml")
