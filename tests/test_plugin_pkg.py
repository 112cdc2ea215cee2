"""A real third-party plugin distribution (tests/plugin_pkg), pip-installed for the running
interpreter and found through the `rubricflow` entry-point group."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rubricflow import create_plugin_manager, parse_rubric
from rubricflow.cli import app
from rubricflow.engine import evaluate
from rubricflow.plugins import BLOCK_ENV, PluginInfo, PluginRegistry

PLUGIN_SOURCE = Path(__file__).parent / "plugin_pkg"
DISTRIBUTION = "rubricflow-testplugin"


def _can_build_without_isolation() -> bool:
    """setuptools builds wheels itself from 70.1; older ones need the `wheel` package."""
    if importlib.util.find_spec("setuptools") is None:
        return False
    if importlib.util.find_spec("wheel") is not None:
        return True
    from importlib.metadata import version

    major, minor, *_ = (int(part) for part in version("setuptools").split(".")[:2])
    return (major, minor) >= (70, 1)


def _pip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pip", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _forget_plugin_module() -> None:
    for name in [n for n in sys.modules if n.split(".")[0] == "rubricflow_testplugin"]:
        del sys.modules[name]
    importlib.invalidate_caches()


@pytest.fixture(scope="module")
def installed_plugin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The plugin pip-installed into a folder of its own that this interpreter (and, through
    PYTHONPATH, every process it starts) imports from: installed as any distribution is and
    found through its entry point, but unseen by the test processes running beside this
    one, which share the virtualenv."""
    # build from a copy, so the build leaves no egg-info or build/ in the repository
    source = tmp_path_factory.mktemp("plugin_src") / "plugin_pkg"
    shutil.copytree(PLUGIN_SOURCE, source)
    site = tmp_path_factory.mktemp("plugin_site")
    base = ["install", "--no-deps", "--disable-pip-version-check", "--target", str(site)]
    done = None
    if _can_build_without_isolation():
        done = _pip(*base, "--no-build-isolation", str(source))
    if done is None or done.returncode != 0:
        done = _pip(*base, str(source))
    assert done.returncode == 0, f"pip install failed:\n{done.stdout}\n{done.stderr}"
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(site))  # also invalidates the import caches
        inherited = os.environ.get("PYTHONPATH")
        patch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(site), inherited])))
        try:
            yield source
        finally:
            _forget_plugin_module()
    importlib.invalidate_caches()


@pytest.fixture
def no_blocking(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BLOCK_ENV, raising=False)


def _info(registry: PluginRegistry, name: str) -> PluginInfo | None:
    return next((info for info in registry.plugins() if info.name == name), None)


def _normalised(name: str | None) -> str:
    return (name or "").replace("_", "-").lower()


RUBRIC = {
    "id": "support-reply",
    "version": "2.0.0",
    "criteria": [
        {"id": "polite", "scoring": {"method": "deterministic", "function": "is_polite"}},
        {"id": "calm", "scoring": {"method": "shouting"}},
    ],
}


@pytest.mark.usefixtures("installed_plugin", "no_blocking")
def test_the_entry_point_plugin_is_discovered_with_its_distribution() -> None:
    registry = create_plugin_manager()

    info = _info(registry, "testplugin")
    assert info is not None, [i.name for i in registry.plugins()]
    assert _normalised(info.distribution) == DISTRIBUTION
    assert info.version == "0.3.1"
    assert info.scorers == ["shouting"]
    assert info.functions == ["is_polite"]
    assert registry.scorers["shouting"].name == "shouting"
    assert callable(registry.functions["is_polite"])
    # the built-ins are still there next to it
    assert {"deterministic", "schema"} <= set(registry.scorers)


@pytest.mark.usefixtures("installed_plugin", "no_blocking")
async def test_the_plugins_scorer_and_function_score_a_real_evaluation() -> None:
    registry = create_plugin_manager()
    rubric = parse_rubric(RUBRIC)

    shouted = await evaluate(rubric, {"id": "t1", "content": "PLEASE HELP"}, plugins=registry)
    calm = await evaluate(rubric, {"id": "t2", "content": "please help, thanks"}, plugins=registry)

    polite = shouted.criterion("polite")
    loud = shouted.criterion("calm")
    assert polite is not None and loud is not None
    assert polite.status == "scored" and polite.verdict == "MET"
    assert polite.scorer == "deterministic"
    assert "polite words: please" in polite.evidence
    assert loud.status == "scored" and loud.score == 0.0
    assert loud.scorer == "shouting"
    assert shouted.verdict == "fail"
    assert calm.verdict == "pass"
    assert calm.score == 1.0


@pytest.mark.usefixtures("installed_plugin", "no_blocking")
def test_rubricflow_plugins_json_lists_the_plugin() -> None:
    result = CliRunner().invoke(app, ["plugins", "--json"])

    assert result.exit_code == 0, result.output
    plugins = {p["name"]: p for p in json.loads(result.stdout)["plugins"]}
    assert plugins["testplugin"]["version"] == "0.3.1"
    assert _normalised(plugins["testplugin"]["distribution"]) == DISTRIBUTION
    assert plugins["testplugin"]["scorers"] == ["shouting"]
    assert plugins["testplugin"]["functions"] == ["is_polite"]


@pytest.mark.usefixtures("installed_plugin")
async def test_disabling_the_plugin_hides_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(BLOCK_ENV, "testplugin")
    registry = create_plugin_manager()

    assert _info(registry, "testplugin") is None
    assert "shouting" not in registry.scorers
    assert "is_polite" not in registry.functions
    evaluation = await evaluate(parse_rubric(RUBRIC), "PLEASE HELP", plugins=registry)
    assert evaluation.verdict == "incomplete"
    assert {r.criterion_id: r.status for r in evaluation.criteria} == {
        "polite": "error",
        "calm": "error",
    }
    result = CliRunner().invoke(app, ["plugins", "--json"], env={BLOCK_ENV: "testplugin"})
    assert result.exit_code == 0, result.output
    assert "testplugin" not in {p["name"] for p in json.loads(result.stdout)["plugins"]}


def test_a_fresh_process_finds_and_can_disable_the_plugin(
    installed_plugin: Path, tmp_path: Path
) -> None:
    executable = shutil.which("rubricflow", path=str(Path(sys.executable).parent))
    assert executable is not None
    rubric = tmp_path / "rubric.json"
    rubric.write_text(json.dumps(RUBRIC), encoding="utf-8")
    target = tmp_path / "target.json"
    target.write_text(json.dumps({"id": "t", "content": "please help, thanks"}), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != BLOCK_ENV}

    found = subprocess.run(
        [executable, "eval", str(rubric), str(target), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    hidden = subprocess.run(
        [executable, "eval", str(rubric), str(target), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, BLOCK_ENV: "testplugin"},
        check=False,
    )

    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["verdict"] == "pass"
    assert hidden.returncode == 1, hidden.stderr
    line = json.loads(hidden.stdout)
    assert line["verdict"] == "incomplete"
    calm = next(c for c in line["criteria"] if c["id"] == "calm")
    assert calm["status"] == "error"
    assert "shouting" in calm["notes"]
    assert "Traceback" not in hidden.stderr
