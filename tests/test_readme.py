"""The README's commands and example are the ones that work."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, re.S)


def test_ci_runs_exactly_the_readme_test_command() -> None:
    test_command = blocks("bash")[1].strip()
    assert "pytest" in test_command
    ci_lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert test_command in ci_lines


def test_main_job_command_approves_the_sample_reply(tmp_path: Path) -> None:
    command = blocks("bash")[0].strip()
    install, _, review = command.partition(" && ")
    assert install == "python -m pip install ."
    entry = f"{sys.executable} -c 'from rubricflow.cli import main; main()'"
    runnable = review.replace("rubricflow ", entry + " ")
    env = {**os.environ, "RUBRICFLOW_DB": str(tmp_path / "gate.db")}
    done = subprocess.run(
        ["bash", "-c", runnable], cwd=ROOT, capture_output=True, text=True, timeout=300, env=env
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "approved" in done.stdout
    assert "Evaluation PASSED for rubric 'Support reply checks'" in done.stdout


def test_python_example_runs_and_prints_what_it_says(tmp_path: Path) -> None:
    (code,) = blocks("python")
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    promised = re.search(r"# (\w+ [\d.]+)", code)
    assert promised is not None
    assert done.stdout.splitlines()[0] == promised.group(1)
    assert "What to fix:" in done.stdout


def test_cli_example_prints_json_for_the_leaky_reply() -> None:
    command = blocks("bash")[2].strip().split()
    done = subprocess.run(
        [sys.executable, "-c", "from rubricflow.cli import main; main()", *command[1:]],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    (line,) = done.stdout.splitlines()
    assert json.loads(line)["verdict"] == "fail"


def test_every_docs_page_is_named_in_the_index_and_the_readme() -> None:
    pages = sorted(p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md"))
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    missing_in_index = [p for p in pages if p != "index.md" and f"]({p})" not in index]
    missing_in_readme = [p for p in pages if f"](docs/{p})" not in README]
    assert not missing_in_index, f"docs/index.md does not link {missing_in_index}"
    assert not missing_in_readme, f"README.md's documentation list misses {missing_in_readme}"


def test_readme_test_command_installs_with_the_pip_a_new_virtualenv_ships(tmp_path: Path) -> None:
    """The README's install steps, as written, in a brand-new virtualenv (its own pip, 23.2
    on this Python): rubricflow comes from the checkout, not an index, and the metrics
    plugin that depends on it installs and registers."""
    command = blocks("bash")[1].strip()
    install, _, run = command.rpartition(" && ")
    assert run == "python -m pytest"
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    bin_dir = venv / "bin"
    # the dependencies this suite runs with are seen by the new venv (a .pth file), so its
    # pip finds them satisfied and installs rubricflow and the plugin themselves: what is
    # proven is the README's steps with the old pip; downloading and building every
    # dependency again took most of a minute and a half, and `.ci/run` does it anyway
    (purelib,) = {sysconfig.get_paths()["purelib"]}
    (site,) = (venv / "lib").glob("python*/site-packages")
    (site / "suite_dependencies.pth").write_text(purelib + "\n", encoding="utf-8")
    env = {
        **os.environ,
        "VIRTUAL_ENV": str(venv),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        # the throw-away venv's packages are not byte-compiled (pip's --no-compile; its
        # PIP_NO_COMPILE reads inverted): what is proven is that the steps install and the
        # plugin registers, and compiling every package was most of the test's time
        "PIP_COMPILE": "0",
    }
    env.pop("PYTHONPATH", None)
    done = subprocess.run(
        ["bash", "-c", install], cwd=ROOT, capture_output=True, text=True, timeout=1800, env=env
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    listed = subprocess.run(
        [str(bin_dir / "rubricflow"), "plugins", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert listed.returncode == 0, listed.stderr
    scorers = {s for info in json.loads(listed.stdout)["plugins"] for s in info["scorers"]}
    assert "metric" in scorers
