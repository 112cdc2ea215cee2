"""The installed distribution is found through the `rubricflow` entry-point group, shows in
`rubricflow plugins`, can be disabled, and rubricflow's own code never names it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
import rubricflow_metrics
from typer.testing import CliRunner

import rubricflow
from rubricflow import create_plugin_manager, evaluate, parse_rubric
from rubricflow.cli import app
from rubricflow.plugins import BLOCK_ENV, ENTRY_POINT_GROUP

DISTRIBUTION = "rubricflow-metrics"
PLUGIN_ROOT = Path(__file__).resolve().parent.parent


def _normalised(name: str | None) -> str:
    return (name or "").replace("_", "-").lower()


def test_the_distribution_declares_the_entry_point_and_its_version() -> None:
    dist = metadata.distribution(DISTRIBUTION)
    points = [ep for ep in dist.entry_points if ep.group == ENTRY_POINT_GROUP]

    assert [(ep.name, ep.value) for ep in points] == [("metrics", "rubricflow_metrics")]
    assert dist.version == "0.1.0" == rubricflow_metrics.__version__
    requires = " ".join(dist.requires or [])
    for dependency in ("rubricflow", "sacrebleu", "rouge-score", "textstat"):
        assert dependency in requires


def test_create_plugin_manager_discovers_the_metric_scorer() -> None:
    registry = create_plugin_manager()

    info = next((i for i in registry.plugins() if i.name == "metrics"), None)
    assert info is not None, [i.name for i in registry.plugins()]
    assert _normalised(info.distribution) == DISTRIBUTION
    assert info.version == "0.1.0"
    assert info.scorers == ["metric"]
    assert isinstance(registry.scorers["metric"], rubricflow_metrics.MetricScorer)


def test_rubricflow_plugins_json_shows_the_plugin_its_version_and_scorers() -> None:
    result = CliRunner().invoke(app, ["plugins", "--json"])

    assert result.exit_code == 0, result.output
    plugins = {p["name"]: p for p in json.loads(result.stdout)["plugins"]}
    metrics = plugins["metrics"]
    assert _normalised(metrics["distribution"]) == DISTRIBUTION
    assert metrics["version"] == "0.1.0"
    assert metrics["scorers"] == ["metric"]
    assert metrics["functions"] == [] and metrics["formats"] == []


def test_rubricflow_plugins_table_shows_the_plugin() -> None:
    result = CliRunner().invoke(app, ["plugins"])

    assert result.exit_code == 0, result.output
    for fragment in ("metrics", "metric", "0.1.0"):
        assert fragment in result.stdout


async def test_the_default_registry_scores_metric_criteria() -> None:
    rubric = parse_rubric(
        {
            "id": "answer",
            "criteria": [{"id": "exact", "scoring": {"method": "metric", "metric": "exact_match"}}],
        }
    )

    evaluation = await evaluate(
        rubric, {"content": "42", "reference": "42"}, plugins=create_plugin_manager()
    )

    assert evaluation.verdict == "pass"
    assert evaluation.criteria[0].scorer == "metric"


async def test_disabling_the_plugin_leaves_metric_criteria_unscored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(BLOCK_ENV, "metrics")
    registry = create_plugin_manager()
    rubric = parse_rubric(
        {"id": "a", "criteria": [{"id": "b", "scoring": {"method": "metric", "metric": "bleu"}}]}
    )

    evaluation = await evaluate(rubric, {"content": "x", "reference": "x"}, plugins=registry)

    assert "metric" not in registry.scorers
    assert evaluation.verdict == "incomplete"
    assert "no scorer 'metric' is installed" in evaluation.criteria[0].notes


def test_rubricflow_itself_never_names_the_plugin() -> None:
    package = Path(rubricflow.__file__).resolve().parent
    naming = [
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if "rubricflow_metrics" in path.read_text(encoding="utf-8")
        or "rubricflow-metrics" in path.read_text(encoding="utf-8")
    ]

    assert naming == []


def test_a_fresh_process_scores_a_metric_rubric_from_the_command_line(tmp_path: Path) -> None:
    executable = shutil.which("rubricflow", path=str(Path(sys.executable).parent))
    assert executable is not None
    rubric = tmp_path / "rubric.yaml"
    rubric.write_text(
        "id: translation\n"
        "pass_threshold: 0.5\n"
        "criteria:\n"
        "  - id: chrf\n"
        "    scoring: {method: metric, metric: chrf}\n"
        "  - id: bleu\n"
        "    scoring: {method: metric, metric: bleu}\n",
        encoding="utf-8",
    )
    targets = tmp_path / "targets.jsonl"
    targets.write_text(
        json.dumps(
            {
                "id": "t1",
                "content": "The cat sat on the mat.",
                "reference": "The cat sat on the mat.",
            }
        )
        + "\n"
        + json.dumps(
            {
                "id": "t2",
                "content": "Dogs bark loudly.",
                "reference": ["The cat sat on the mat.", "A cat is on a mat."],
            }
        )
        + "\n",
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if k != BLOCK_ENV}

    done = subprocess.run(
        [executable, "eval", str(rubric), str(targets), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )

    assert "Traceback" not in done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(line["target_id"], line["verdict"]) for line in lines] == [
        ("t1", "pass"),
        ("t2", "fail"),
    ]
    assert done.returncode == 1
    first = {c["id"]: c for c in lines[0]["criteria"]}
    assert first["bleu"]["score"] == 1.0
    assert first["bleu"]["evidence"][0].startswith("bleu=100.00 (sacrebleu")


def test_the_readme_documents_every_metric() -> None:
    readme = (PLUGIN_ROOT / "README.md").read_text(encoding="utf-8")

    for name in rubricflow_metrics.METRICS:
        assert f"`{name}`" in readme, name
    for name in ("rouge_l", "rouge", "perplexity", "custom"):
        assert f"`{name}`" in readme, name


def test_first_use_of_several_metrics_at_once_does_not_deadlock_imports() -> None:
    """Metrics run in worker threads; their libraries load on first use. Several threads
    loading sacrebleu's submodules at once must not trip Python's import deadlock check."""
    script = (
        "import threading\n"
        "from rubricflow_metrics.metrics import _imported\n"
        "names = [('sacrebleu.metrics.bleu','BLEU'), ('sacrebleu.metrics.chrf','CHRF'),\n"
        "         ('sacrebleu.metrics.ter','TER'), ('rouge_score.rouge_scorer', None)] * 2\n"
        "start = threading.Barrier(len(names)); errors = []\n"
        "def load(pair):\n"
        "    start.wait()\n"
        "    try: _imported(*pair)\n"
        "    except Exception as error: errors.append(repr(error))\n"
        "threads = [threading.Thread(target=load, args=(p,)) for p in names]\n"
        "[t.start() for t in threads]; [t.join() for t in threads]\n"
        "print('errors', errors)\n"
    )
    for _ in range(3):
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "errors []"
