"""Every script in examples/ runs and prints what it promises."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))

EXPECTED = {
    "quickstart.py": ["good: pass (1.00)", "leaky: fail", "REQUIRED No phone numbers"],
    "custom_check_plugin.py": [
        "'Your order shipped today.': pass 1.00",
        "fail 0.50 | 6 exclamation mark(s), limit 1",
    ],
    "import_agentv.py": [
        "format=agentv rubric=refund-policy threshold=0.8",
        "accuracy: weight=2 required=True kind=bands method=llm_score",
    ],
}


def test_every_example_has_expectations() -> None:
    assert {path.name for path in EXAMPLES} == set(EXPECTED)


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(script: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    for line in EXPECTED[script.name]:
        assert line in done.stdout
