"""Issue 9, workload 5: 1,000,000 JSONL targets through a deterministic rubric with
`rubricflow eval ... --json` (a subprocess, its output to /dev/null): the child's peak
resident memory (bar: under 200 MB) and targets per second.

`--quick` (or RUBRICFLOW_BENCH_QUICK=1) uses 20,000 targets; RUBRICFLOW_BENCH_STREAM_TARGETS
sets the count outright.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.store_throughput import RUBRIC

TARGETS = 1_000_000
QUICK_TARGETS = 20_000
MEMORY_BAR_MB = 200


def _write_inputs(folder: Path, count: int) -> tuple[Path, Path]:
    rubric = folder / "rubric.json"
    rubric.write_text(
        json.dumps(RUBRIC.model_dump(mode="json", exclude_none=True)), encoding="utf-8"
    )
    targets = folder / "targets.jsonl"
    with targets.open("w", encoding="utf-8") as handle:
        for i in range(count):
            handle.write(
                json.dumps({"id": f"t{i}", "content": f"Thanks for asking, reply number {i}."})
            )
            handle.write("\n")
    return rubric, targets


def _cli() -> list[str]:
    script = Path(sys.executable).with_name("rubricflow")
    if script.exists():
        return [str(script)]
    found = shutil.which("rubricflow")
    if found is None:
        raise RuntimeError("the rubricflow command is not installed next to this Python")
    return [found]


def _run_child(command: list[str], output: str = os.devnull) -> tuple[int, float, int]:
    """(exit status, seconds, peak RSS in KiB) of one child.

    Linux counts the high-water mark of the forked copy of *this* process (before exec)
    in the child's maxrss, so a child forked from here would report at least our own
    size. /usr/bin/time (a small process) forks the child instead and reports its peak.
    """
    timer = shutil.which("time") or "/usr/bin/time"
    with tempfile.NamedTemporaryFile("r", suffix=".rss", encoding="utf-8") as report:
        wrapped = [timer, "-f", "%M", "-o", report.name, *command]
        started = time.perf_counter()
        with open(output, "wb") as sink:
            process = subprocess.run(wrapped, stdout=sink, stderr=subprocess.PIPE, check=False)
        elapsed = time.perf_counter() - started
        error = process.stderr.decode(errors="replace")
        if process.returncode not in (0, 1):
            raise RuntimeError(f"rubricflow eval exited {process.returncode}: {error[-2000:]}")
        peak_kib = int(report.read().strip().splitlines()[-1])
    return process.returncode, elapsed, peak_kib


def measure(count: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        rubric, targets = _write_inputs(Path(folder), count)
        size_mb = targets.stat().st_size / 1e6
        command = [*_cli(), "eval", str(rubric), str(targets), "--json"]
        # the interpreter and rubricflow imported, one target: the floor of the memory figure
        one = Path(folder) / "one.jsonl"
        with targets.open(encoding="utf-8") as source:
            one.write_text(source.readline(), encoding="utf-8")
        seen = Path(folder) / "one.out"
        _, startup_s, baseline_kib = _run_child(
            [*_cli(), "eval", str(rubric), str(one), "--json"], str(seen)
        )
        line = json.loads(seen.read_text(encoding="utf-8").splitlines()[0])
        if "verdict" not in line:
            raise RuntimeError(f"rubricflow eval --json printed no evaluation: {line}")
        status, elapsed, peak_kib = _run_child(command)
    peak_mb = peak_kib / 1024
    return {
        "targets": count,
        "input_jsonl_mb": size_mb,
        "exit_status": status,
        "seconds": elapsed,
        "startup_s (one target)": startup_s,
        "targets_per_s": count / elapsed,
        "baseline_rss_mb (one target)": baseline_kib / 1024,
        "peak_rss_mb (bar < 200)": peak_mb,
        "memory_bar_met": peak_mb < MEMORY_BAR_MB,
    }


async def run(quick: bool = False) -> dict[str, Any]:
    configured = os.environ.get("RUBRICFLOW_BENCH_STREAM_TARGETS", "").strip()
    count = int(configured) if configured else QUICK_TARGETS if quick else TARGETS
    return await asyncio.to_thread(measure, count)
