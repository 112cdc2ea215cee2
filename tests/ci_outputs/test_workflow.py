"""The GitHub Actions workflow in docs/ci.md: it parses, has the shape GitHub runs, and
its rubricflow commands work.

The rule for what runs here: a step that `uses:` an action (checkout, setup-python, the
JUnit report, the artifact upload, the PR comment) or whose name starts with "Check out"
(a git checkout of the base branch) needs GitHub and is skipped. Of every other step,
each line of its `run:` script that starts with `rubricflow ` is run, in order, with
bash (so its `|| ...` tail works) in a repository the test writes, with the job's `env`,
`${{ ... }}` expressions replaced by the values a pull request would give, and no API
key. Other lines (`pip install`, shell bookkeeping) are not run.

The rubric has an LLM criterion. Its answers are recorded first, as the docs say, from a
scripted OpenAI-compatible judge on 127.0.0.1 (`rubricflow eval --db`, then
`rubricflow llm cache export`); the judge is then stopped, and the workflow's commands
run with `RUBRICFLOW_LLM` naming it: every verdict must come from the recording.
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
from llm.scripted import Recorded, Reply, ScriptedServer, openai_reply, verdict
from typer.testing import CliRunner

from rubricflow.ci import COMMENT_LIMIT, COMMENT_MARKER
from rubricflow.cli import app

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
#: the replies on each branch: the PR makes "b" too long (pass -> fail), fixes "c"
#: (fail -> pass) and makes "d" rude (the judge's criterion: pass -> fail)
BASE_REPLIES = {
    "a": "hello",
    "b": "hello there",
    "c": "one two three four five six seven",
    "d": "hello friend",
}
PR_REPLIES = {
    "a": "hello",
    "b": "one two three four five six",
    "c": "short now",
    "d": "you are rude",
}
POLITE = "\n".join(
    [
        "  - id: polite",
        "    description: The reply is polite",
        "    scoring: {method: llm_verdict}",
        "",
    ]
)


def polite_judge(request: Recorded) -> Reply:
    """UNMET when the reply under review is rude."""
    met = "UNMET" if "rude" in request.text else "MET"
    return openai_reply(verdict(met, f"the reply reads as {met}"))


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
    rubric = RUBRIC.read_text(encoding="utf-8").rstrip("\n") + "\n" + POLITE
    (root / "rubrics" / "reply.yaml").write_text(rubric, encoding="utf-8")
    (root / "evals" / "replies.jsonl").write_text(
        "".join(json.dumps({"id": k, "content": v}) + "\n" for k, v in replies.items()),
        encoding="utf-8",
    )


def record_answers(root: Path, judge: str) -> None:
    """What a developer does with the key: evaluate both branches into a store, then
    export its judge cache to the file each branch commits."""
    cli = CliRunner()
    record = str(root.parent / "record.db")
    for branch in (root / "base", root):
        rubric, replies = branch / "rubrics" / "reply.yaml", branch / "evals" / "replies.jsonl"
        done = cli.invoke(
            app, ["eval", str(rubric), str(replies), "--db", record, "--llm", judge, "-q"]
        )
        assert done.exit_code in (0, 1), done.output
        assert "0 incomplete" in done.stdout, done.output
    answers = root / "evals" / "judge-answers.jsonl"
    done = cli.invoke(app, ["llm", "cache", "export", str(answers), "--db", record])
    assert done.exit_code == 0, done.output
    shutil.copy(answers, root / "base" / "evals" / "judge-answers.jsonl")


def test_the_workflow_s_rubricflow_commands_run_and_give_the_outputs(tmp_path: Path) -> None:
    assert RUBRICFLOW.exists(), f"{RUBRICFLOW}: the rubricflow command is not installed"
    repo = tmp_path / "repo"
    write_branch(repo, PR_REPLIES)
    write_branch(repo / "base", BASE_REPLIES)  # where `git worktree add base` puts it
    with ScriptedServer(polite_judge) as judge_server:
        judge = f"openai:judge@{judge_server.url}/v1"
        record_answers(repo, judge)
        asked = len(judge_server.requests)
    assert asked == len(set(BASE_REPLIES.values()) | set(PR_REPLIES.values()))
    outputs = tmp_path / "github_output"
    outputs.touch()
    (job,) = workflow()["jobs"].values()
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.endswith(("_API_KEY", "_TOKEN")) and not key.startswith("RUBRICFLOW_")
    }
    env.update({k: str(v) for k, v in job.get("env", {}).items()})
    assert "RUBRICFLOW_LLM" in env  # the workflow names the judge; here, the stopped one
    env.update(
        RUBRICFLOW_LLM=judge,
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
        assert not [c for c in cases if c.find("error") is not None]  # every answer replayed
    pr_cases = {
        c.attrib["name"]: c for c in ET.parse(repo / "rubricflow-junit.xml").iter("testcase")
    }
    assert pr_cases["c"].find("failure") is None
    assert [f.attrib["message"] for f in pr_cases["b"].iter("failure")] == [
        "short: meet the requirement: At most five words"
    ]
    assert [f.attrib["message"] for f in pr_cases["d"].iter("failure")] == [
        "polite: meet the requirement: The reply is polite"
    ]

    comment = (repo / "comment.md").read_text(encoding="utf-8")
    assert len(comment) < COMMENT_LIMIT
    assert comment.startswith(COMMENT_MARKER)
    assert comment.splitlines()[1] == "### ❌ rubricflow: pass rate 75.0% → 50.0% (-25.0 pts)"
    flips = [line for line in comment.splitlines() if line.startswith("| `")]
    assert flips[:3] == [
        "| `b` | ✅ pass | ❌ fail | 1.000 | 0.667 |",
        "| `d` | ✅ pass | ❌ fail | 1.000 | 0.667 |",
        "| `c` | ❌ fail | ✅ pass | 0.667 | 1.000 |",
    ]
    assert flips[3] == "| `polite` | 100.0% | 75.0% | -25.0 pts |"  # the worst criterion
    assert "[CI run](https://github.com/acme/bot/actions/runs/42)" in comment
    assert (repo / "report.html").exists() and (repo / "pr.db").exists()
