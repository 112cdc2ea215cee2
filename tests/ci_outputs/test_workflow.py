"""The GitHub Actions workflow in docs/ci.md: it parses, has the shape GitHub runs, and
its rubricflow commands work.

The rule for what runs here: a step that `uses:` an action (checkout, setup-python, the
JUnit report, the artifact upload, the PR comment) or whose name starts with "Check out"
(a git checkout of the base branch) needs GitHub and is skipped. Of every other step,
each line of its `run:` script that starts with `rubricflow ` is run, in order, with
bash (so its `|| ...` tail works) in a repository the test writes, with the job's `env`,
`${{ ... }}` expressions replaced by the values a pull request would give, and no API
key. Other lines (`pip install`, shell bookkeeping) are not run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import yaml

from rubricflow.ci import COMMENT_LIMIT, COMMENT_MARKER

DOC = Path(__file__).parents[2] / "docs" / "ci.md"
RUBRIC = Path(__file__).parent.parent / "fixtures" / "eval" / "rubric.yaml"
RUBRICFLOW = Path(sys.executable).parent / "rubricflow"

#: what `${{ ... }}` stands for on a pull request
CONTEXT = {
    "github.event.pull_request.base.sha": "0a1b2c3d",
    "github.event.pull_request.head.sha": "4e5f6a7b",
    "github.event.pull_request.number": "7",
    "github.server_url": "https://github.com",
    "github.repository": "acme/bot",
    "github.run_id": "42",
}
#: the replies on each branch: the PR makes "b" too long (pass -> fail) and fixes "c"
BASE_REPLIES = {"a": "hello", "b": "hello there", "c": "one two three four five six seven"}
PR_REPLIES = {"a": "hello", "b": "one two three four five six", "c": "short now"}
ANSWERS_HEADER = {"format": "rubricflow-judge-answers", "format_version": 1}


def workflow() -> dict[Any, Any]:
    blocks = re.findall(r"```yaml\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)
    assert len(blocks) == 1, "docs/ci.md holds one YAML block: the workflow"
    loaded = yaml.safe_load(blocks[0])
    assert isinstance(loaded, dict)
    return loaded


def steps() -> list[dict[str, Any]]:
    (job,) = workflow()["jobs"].values()
    found = job["steps"]
    assert isinstance(found, list)
    return found


def runs_here(step: dict[str, Any]) -> bool:
    return "uses" not in step and not str(step.get("name", "")).startswith("Check out")


def substitute(line: str) -> str:
    def value(match: re.Match[str]) -> str:
        expression = match.group(1).strip()
        assert expression in CONTEXT, f"the test gives no value for ${{{{ {expression} }}}}"
        return CONTEXT[expression]

    return re.sub(r"\$\{\{(.*?)\}\}", value, line)


def test_the_workflow_has_the_shape_github_runs() -> None:
    flow = workflow()
    triggers = flow.get("on", flow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert isinstance(triggers, dict) and "pull_request" in triggers
    assert flow["permissions"]["pull-requests"] == "write"
    assert flow["permissions"]["checks"] == "write"
    (job,) = flow["jobs"].values()
    assert job["runs-on"] == "ubuntu-latest"
    found = steps()
    assert all(("uses" in s) != ("run" in s) for s in found), "a step runs or uses, not both"
    uses = [str(s["uses"]).split("@")[0] for s in found if "uses" in s]
    assert uses[0] == "actions/checkout"
    assert "actions/github-script" in uses  # posts or updates the comment
    report = next(s for s in found if str(s.get("uses", "")).startswith("mikepenz/"))
    assert report["with"]["report_paths"] == "rubricflow-junit.xml"
    script = next(s for s in found if "github-script" in str(s.get("uses")))["with"]["script"]
    assert COMMENT_MARKER in script and "updateComment" in script and "createComment" in script
    commands = [
        line
        for s in found
        if runs_here(s)
        for line in str(s["run"]).splitlines()
        if line.startswith("rubricflow ")
    ]
    assert [c.split()[1] for c in commands] == ["db", "db", "llm", "llm", "eval", "eval", "compare"]
    assert all("--junit" in c and "--db" in c for c in commands if c.startswith("rubricflow eval"))
    assert "--format markdown" in commands[-1] and "> comment.md" in commands[-1]


def write_branch(root: Path, replies: dict[str, str]) -> None:
    (root / "rubrics").mkdir(parents=True)
    (root / "evals").mkdir()
    shutil.copy(RUBRIC, root / "rubrics" / "reply.yaml")
    (root / "evals" / "replies.jsonl").write_text(
        "".join(json.dumps({"id": k, "content": v}) + "\n" for k, v in replies.items()),
        encoding="utf-8",
    )
    (root / "evals" / "judge-answers.jsonl").write_text(
        json.dumps(ANSWERS_HEADER) + "\n", encoding="utf-8"
    )


def test_the_workflow_s_rubricflow_commands_run_and_give_the_outputs(tmp_path: Path) -> None:
    assert RUBRICFLOW.exists(), f"{RUBRICFLOW}: the rubricflow command is not installed"
    repo = tmp_path / "repo"
    write_branch(repo, PR_REPLIES)
    write_branch(repo / "base", BASE_REPLIES)  # where `git worktree add base` puts it
    outputs = tmp_path / "github_output"
    outputs.touch()
    (job,) = workflow()["jobs"].values()
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.endswith(("_API_KEY", "_TOKEN")) and not key.startswith("RUBRICFLOW_")
    }
    env.update({k: str(v) for k, v in job.get("env", {}).items()})
    env.update(
        PATH=f"{RUBRICFLOW.parent}{os.pathsep}{env.get('PATH', '')}",
        GITHUB_OUTPUT=str(outputs),
        RUBRICFLOW_CACHE_DIR=str(tmp_path / "cache"),
    )
    ran = []
    for step in steps():
        if not runs_here(step):
            continue
        for line in str(step["run"]).splitlines():
            if not line.startswith("rubricflow "):
                continue
            command = substitute(line)
            done = subprocess.run(
                ["bash", "-c", command],
                cwd=repo,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert done.returncode == 0, f"{step['name']}: {command}\n{done.stderr}"
            assert "Traceback" not in done.stderr
            ran.append(command.split()[1])
    assert ran == ["db", "db", "llm", "llm", "eval", "eval", "compare"]

    for name, replies in (("rubricflow-junit.xml", PR_REPLIES), ("base-junit.xml", BASE_REPLIES)):
        cases = list(ET.parse(repo / name).getroot().iter("testcase"))
        assert [c.attrib["name"] for c in cases] == list(replies)
        assert {c.attrib["classname"] for c in cases} == {"reply-check@1.2.0"}
    pr_cases = {
        c.attrib["name"]: c for c in ET.parse(repo / "rubricflow-junit.xml").iter("testcase")
    }
    assert pr_cases["b"].find("failure") is not None and pr_cases["c"].find("failure") is None

    comment = (repo / "comment.md").read_text(encoding="utf-8")
    assert len(comment) < COMMENT_LIMIT
    assert comment.startswith(COMMENT_MARKER)
    assert "pass rate 66.7% → 66.7% (±0.0 pts)" in comment
    assert "| `b` | ✅ pass | ❌ fail |" in comment and "| `c` | ❌ fail | ✅ pass |" in comment
    assert "[CI run](https://github.com/acme/bot/actions/runs/42)" in comment
    # the gate: the criterion `short` lost "b" and won "c", so nothing dropped
    assert comment.splitlines()[1].startswith("### ✅ ")
    assert "No regression beyond threshold 0." in comment
    assert (repo / "report.html").exists() and (repo / "pr.db").exists()
