"""One labelled data set, the judge's scripted answers for it, and the figures computed by
hand that every calibration test (Python API and CLI) must reproduce.

Rubric `answers`: `tone` (binary, LLM verdict), `depth` (4 ordered levels, LLM level),
`quality` (0..10 bands, LLM score, compared by pass/fail at the 0.7 bar), `refund` and
`safe` (deterministic checks).

The examples and what humans / the judge said (`-`: no human label, `!`: the judge gives
no usable answer):

    id  tone         depth                quality (score)   refund       safe
    e1  MET / MET    thorough / good      MET / 9 (pass)    MET / MET    MET / MET
    e2  MET / MET    good / good          true / 8 (pass)   MET / MET    MET / MET
    e3  UNMET/UNMET  shallow / shallow    false / 3 (fail)  UNMET/UNMET  MET / MET
    e4  UNMET/MET    adequate / good      MET / 6 (fail)    UNMET/UNMET  MET / MET
    e5  MET / UNMET  shallow / adequate   UNMET / 9 (pass)  MET / MET    -
    e6  MET / !      -                    UNMET / 2 (fail)  -            -
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

from rubricflow import parse_rubric
from rubricflow.model import Rubric

RUBRIC_YAML = """\
id: answers
version: 2.0.0
pass_threshold: 0.7
criteria:
  - id: tone
    description: The reply is polite.
  - id: depth
    description: How thorough the answer is.
    levels:
      - {id: thorough, score: 1.0}
      - {id: shallow, score: 0.0}
      - {id: good, score: 0.7}
      - {id: adequate, score: 0.4}
  - id: quality
    description: Overall quality.
    score_ranges: {0: poor, 5: fair, 8: great}
  - id: refund
    description: Gives the 30 days refund window.
    scoring: {method: deterministic, function: contains_all, config: {terms: [30 days]}}
  - id: safe
    description: Leaks no secrets.
    scoring: {method: deterministic, function: no_secrets}
"""

DEPTH_ORDER = ["shallow", "adequate", "good", "thorough"]  # by score, not as declared

EXAMPLES: list[dict[str, Any]] = [
    {
        "id": "e1",
        "content": "[e1] Thanks for asking! You can get a refund within 30 days.",
        "labels": {
            "tone": "MET",
            "depth": "thorough",
            "quality": "MET",
            "refund": "MET",
            "safe": "MET",
        },
    },
    {
        "id": "e2",
        "content": "[e2] Happy to help: refunds are open for 30 days.",
        "query": "How long do I have?",
        "labels": {"tone": "met", "depth": "good", "quality": True, "refund": True, "safe": True},
    },
    {
        "id": "e3",
        "content": "[e3] No.",
        "labels": {
            "tone": "UNMET",
            "depth": "shallow",
            "quality": False,
            "refund": "UNMET",
            "safe": "MET",
        },
    },
    {
        "id": "e4",
        "content": "[e4] Refunds exist. Read the policy.",
        "labels": {
            "tone": False,
            "depth": "adequate",
            "quality": "MET",
            "refund": "UNMET",
            "safe": "MET",
        },
    },
    {
        "id": "e5",
        "content": "[e5] Ugh, fine: 30 days.",
        "labels": {
            "tone": "MET",
            "depth": "shallow",
            "quality": "UNMET",
            "refund": "MET",
            "safe": None,
        },
    },
    {
        "id": "e6",
        "content": "[e6] See above.",
        "labels": {"tone": "MET", "quality": "UNMET"},
    },
]

UNABLE = "unable"
JUDGE: dict[str, dict[str, Any]] = {
    "e1": {"tone": "MET", "depth": "good", "quality": 9},
    "e2": {"tone": "MET", "depth": "good", "quality": 8},
    "e3": {"tone": "UNMET", "depth": "shallow", "quality": 3},
    "e4": {"tone": "MET", "depth": "good", "quality": 6},
    "e5": {"tone": "UNMET", "depth": "adequate", "quality": 9},
    "e6": {"tone": UNABLE, "depth": "shallow", "quality": 2},
}


def rubric() -> Rubric:
    import yaml

    return parse_rubric(yaml.safe_load(RUBRIC_YAML))


def write_files(folder: Path, examples: list[dict[str, Any]] | None = None) -> tuple[Path, Path]:
    rubric_file = folder / "rubric.yaml"
    rubric_file.write_text(RUBRIC_YAML)
    labels = folder / "labels.jsonl"
    rows = EXAMPLES if examples is None else examples
    labels.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return rubric_file, labels


# -- the figures, by hand ---------------------------------------------------------------
#
# tone: 5 compared (e6 unscored). Rows human, columns judge, labels UNMET, MET:
#   UNMET: 1 1      (e3 agree, e4 judge MET)
#   MET:   1 2      (e5 judge UNMET; e1, e2 agree)
#   p_o = 3/5; r = (2, 3), c = (2, 3); p_e = (4 + 9)/25 = 13/25
#   kappa = (15 - 13)/(25 - 13) = 1/6
#
# depth: 5 compared (e6 has no label). Labels shallow < adequate < good < thorough:
#   shallow:  1 1 0 0   (e3; e5 judge adequate)
#   adequate: 0 0 1 0   (e4 judge good)
#   good:     0 0 1 0   (e2)
#   thorough: 0 0 1 0   (e1 judge good)
#   r = (2, 1, 1, 1), c = (1, 1, 3, 0), n = 5
#   Cohen: p_o = 2/5, p_e = (2 + 1 + 3 + 0)/25 = 6/25, kappa = (10 - 6)/(25 - 6) = 4/19
#   linear (W = 3 - |i-j|, D = 3): observed sum W n = 3+2+2+3+2 = 12;
#     expected sum W r c = 2*(3+2+3) + (2+3+6) + (1+2+9) + (0+1+6) = 16+11+12+7 = 46
#     kappa = (5*12 - 46)/(3*25 - 46) = 14/29
#   quadratic (W = 9 - (i-j)^2, D = 9): observed 9+8+8+9+8 = 42;
#     expected 2*(9+8+15) + (8+9+24) + (5+8+27) + (0+5+24) = 64+41+40+29 = 174
#     kappa = (5*42 - 174)/(9*25 - 174) = 36/51 = 12/17
#
# quality (bands, pass/fail at 0.7): judge passes e1 (9), e2 (8), e5 (9); fails e3, e4, e6
#   UNMET: 2 1      (e3, e6 agree; e5 judge passes)
#   MET:   1 2      (e4 judge fails; e1, e2 agree)
#   p_o = 4/6, p_e = (9 + 9)/36 = 1/2, kappa = (2/3 - 1/2)/(1/2) = 1/3
#
# refund: 5 compared, all agree: UNMET 2 0 / MET 0 3, p_e = 13/25, kappa = 1
# safe: 4 compared, all MET on both sides: accuracy 1, kappa undefined (p_e = 1)
#
# overall row: N = 5 + 5 + 6 + 5 + 4 = 25 compared, 26 labelled, 1 unscored
#   accuracy = (3 + 2 + 4 + 5 + 4)/25 = 18/25
#   pooled p_e = (5*13/25 + 5*6/25 + 6*1/2 + 5*13/25 + 4*1)/25 = 13.4/25 = 67/125
#   pooled kappa = (18/25 - 67/125)/(1 - 67/125) = (90 - 67)/(125 - 67) = 23/58

FIGURES: dict[str, dict[str, Any]] = {
    "tone": {
        "n": 5,
        "labelled": 6,
        "unscored": 1,
        "accuracy": Fraction(3, 5),
        "kappa": Fraction(1, 6),
        "counts": [[1, 1], [1, 2]],
        "labels": ["UNMET", "MET"],
    },
    "depth": {
        "n": 5,
        "labelled": 5,
        "unscored": 0,
        "accuracy": Fraction(2, 5),
        "kappa": Fraction(4, 19),
        "linear": Fraction(14, 29),
        "quadratic": Fraction(12, 17),
        "counts": [[1, 1, 0, 0], [0, 0, 1, 0], [0, 0, 1, 0], [0, 0, 1, 0]],
        "labels": DEPTH_ORDER,
    },
    "quality": {
        "n": 6,
        "labelled": 6,
        "unscored": 0,
        "accuracy": Fraction(4, 6),
        "kappa": Fraction(1, 3),
        "counts": [[2, 1], [1, 2]],
        "labels": ["UNMET", "MET"],
    },
    "refund": {
        "n": 5,
        "labelled": 5,
        "unscored": 0,
        "accuracy": Fraction(1),
        "kappa": Fraction(1),
        "counts": [[2, 0], [0, 3]],
        "labels": ["UNMET", "MET"],
    },
    "safe": {
        "n": 4,
        "labelled": 4,
        "unscored": 0,
        "accuracy": Fraction(1),
        "kappa": None,
        "counts": [[0, 0], [0, 4]],
        "labels": ["UNMET", "MET"],
    },
}
OVERALL = {
    "n": 25,
    "labelled": 26,
    "unscored": 1,
    "accuracy": Fraction(18, 25),
    "kappa": Fraction(23, 58),
}
DISAGREEMENTS = {
    ("e4", "tone", "UNMET", "MET"),
    ("e5", "tone", "MET", "UNMET"),
    ("e1", "depth", "thorough", "good"),
    ("e4", "depth", "adequate", "good"),
    ("e5", "depth", "shallow", "adequate"),
    ("e4", "quality", "MET", "UNMET"),
    ("e5", "quality", "UNMET", "MET"),
}


def check_report(report: dict[str, Any]) -> None:
    """Assert a report's JSON form (`CalibrationReport.to_dict()` or `--json`) holds the
    hand-computed figures."""
    assert report["rubric"]["id"] == "answers" and report["rubric"]["version"] == "2.0.0"
    assert report["examples"] == 6
    by_id = {c["id"]: c for c in report["criteria"]}
    assert list(by_id) == ["tone", "depth", "quality", "refund", "safe"]
    for criterion_id, expected in FIGURES.items():
        got = by_id[criterion_id]
        assert got["n"] == expected["n"], criterion_id
        assert got["labelled"] == expected["labelled"], criterion_id
        assert got["unscored"] == expected["unscored"], criterion_id
        assert got["confusion_matrix"]["labels"] == expected["labels"], criterion_id
        assert got["confusion_matrix"]["counts"] == expected["counts"], criterion_id
        assert got["accuracy"]["value"] == _approx(expected["accuracy"]), criterion_id
        if expected["kappa"] is None:
            assert got["kappa"]["value"] is None
            assert got["kappa"]["ci"] is None
            assert "chance agreement is 1" in got["kappa"]["undefined_reason"]
        else:
            assert got["kappa"]["value"] == _approx(expected["kappa"]), criterion_id
            assert got["kappa"]["undefined_reason"] is None
        if "linear" in expected:
            weighted = got["weighted_kappa"]
            assert weighted["linear"]["value"] == _approx(expected["linear"])
            assert weighted["quadratic"]["value"] == _approx(expected["quadratic"])
        else:
            assert got["weighted_kappa"] is None
    assert by_id["quality"]["compared"] == "pass/fail"
    overall = report["overall"]
    for key in ("n", "labelled", "unscored"):
        assert overall[key] == OVERALL[key]
    assert overall["accuracy"]["value"] == _approx(OVERALL["accuracy"])
    assert overall["kappa"]["value"] == _approx(OVERALL["kappa"])
    assert {
        (d["example_id"], d["criterion_id"], d["human"], d["judge"])
        for d in report["disagreements"]
    } == DISAGREEMENTS
    [unscored] = report["unscored"]
    assert (unscored["example_id"], unscored["criterion_id"], unscored["judge"]) == (
        "e6",
        "tone",
        None,
    )
    assert unscored["status"] == "unable_to_evaluate"


def _approx(value: Fraction) -> Any:
    import pytest

    return pytest.approx(float(value), abs=1e-12)
