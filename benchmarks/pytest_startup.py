"""Issue 20, item 3: the pytest plugin costs pytest's start-up at most 50 ms.

The plugin is loaded in every pytest run of an environment where rubricflow is installed
(the `pytest11` entry point), so its module must import nothing heavy. Each round is a
fresh `python -m pytest --collect-only` of a folder with one trivial test (its own ini,
so no conftest of this repository is read), in rounds alternating between the plugin
disabled (`-p no:rubricflow`) and loaded. Each round's cost is the CPU time (user +
system) of its process: on a shared, loaded machine wall time mostly measures the
neighbours. The figure is the median over pairs of (with - without), in milliseconds;
the bar is 50 ms. Also reported: the plugin module's own import time (`-X importtime`).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

PAIRS = 15
QUICK_PAIRS = 3


def _once(folder: Path, *, plugin: bool) -> float:
    """CPU seconds (user + system) of one pytest collection: on a shared, loaded machine
    wall time mostly measures the neighbours."""
    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
    if not plugin:
        command += ["-p", "no:rubricflow"]
    process = subprocess.Popen(
        command, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(f"pytest --collect-only failed ({process.returncode}) in {folder}")
    return usage.ru_utime + usage.ru_stime


def _plugin_import_ms() -> float:
    """The plugin module's own import time (pytest already imported), from -X importtime."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import pytest; import rubricflow_pytest"],
        capture_output=True,
        text=True,
        check=True,
    )
    line = next(
        row for row in done.stderr.splitlines() if row.rstrip().endswith("| rubricflow_pytest")
    )
    return int(line.split("|")[1]) / 1000


async def run(*, quick: bool = False) -> dict[str, Any]:
    pairs = QUICK_PAIRS if quick else PAIRS
    with tempfile.TemporaryDirectory(prefix="rf-pytest-startup-") as name:
        folder = Path(name)
        (folder / "pytest.ini").write_text(
            "[pytest]\nasyncio_default_fixture_loop_scope = function\n"
        )
        (folder / "test_trivial.py").write_text("def test_nothing():\n    pass\n")
        _once(folder, plugin=True)  # warm the file system caches
        without, with_plugin, added = [], [], []
        for index in range(pairs):
            order = (False, True) if index % 2 == 0 else (True, False)
            seconds = {plugin: _once(folder, plugin=plugin) for plugin in order}
            without.append(seconds[False])
            with_plugin.append(seconds[True])
            added.append((seconds[True] - seconds[False]) * 1000)
    imports = sorted(_plugin_import_ms() for _ in range(5))
    return {
        "pairs": pairs,
        "without_plugin_cpu_ms (median)": round(statistics.median(without) * 1000, 1),
        "with_plugin_cpu_ms (median)": round(statistics.median(with_plugin) * 1000, 1),
        "added_ms (bar <= 50)": round(statistics.median(added), 1),
        "with / without": round(statistics.median(with_plugin) / statistics.median(without), 3),
        "plugin_import_ms (median of 5)": imports[2],
    }
