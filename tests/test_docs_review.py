"""The review guide's Python snippet (docs/review.md) runs as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GUIDE = (ROOT / "docs" / "review.md").read_text(encoding="utf-8")


def test_review_guide_snippet_runs_and_publishes_the_approved_reply(tmp_path: Path) -> None:
    (code, *_) = re.findall(r"```python\n(.*?)```", GUIDE, re.S)
    env = {**os.environ, "RUBRICFLOW_DB": str(tmp_path / "reviews.db")}
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("published: Thanks for getting in touch!"), done.stdout
    assert (tmp_path / "reviews.db").exists()
