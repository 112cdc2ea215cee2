"""docs/tools.md says what the code does: its first snippet runs as written, its error
example is what the dispatcher answers, and its table lists every error type."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from rubricflow.application import Application
from rubricflow.tools import ToolDispatcher

ROOT = Path(__file__).resolve().parents[2]
GUIDE = (ROOT / "docs" / "tools.md").read_text(encoding="utf-8")


def test_the_guide_s_snippet_runs(tmp_path: Path) -> None:
    code = re.findall(r"```python\n(.*?)```", GUIDE, re.S)[0]
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "6 tools; approved"


async def test_the_error_example_is_what_the_dispatcher_answers(app: Application) -> None:
    (example,) = re.findall(r"```json\n(.*?)```", GUIDE, re.S)
    call = {"type": "tool_use", "id": "t", "name": "submit_for_review", "input": {"content": "x"}}
    block = await ToolDispatcher(app).dispatch(call)
    assert json.loads(block["content"]) == json.loads(example)


def test_the_error_table_lists_every_error_type() -> None:
    source = (ROOT / "rubricflow" / "tools" / "dispatch.py").read_text(encoding="utf-8")
    produced = set(
        re.findall(
            r'"(invalid_\w+|unknown_tool|not_\w+|version_conflict|refused|store_error|internal_error)"',
            source,
        )
    )
    documented = set(re.findall(r"^\| `(\w+)` \|", GUIDE, re.M))
    assert produced and produced <= documented, produced - documented
