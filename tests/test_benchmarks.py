"""Smoke test of the benchmark harness: the workloads without peer packages run at their
quick sizes and report sane figures. Speed bars are measured by `python -m benchmarks`,
not asserted here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_judge_cache_and_stream_workloads_report_their_figures(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    env = {**os.environ, "RUBRICFLOW_BENCH_STREAM_TARGETS": "2000"}
    command = ["judge", "cache", "stream", "--quick", "--json", str(out)]
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", *command],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(out.read_text(encoding="utf-8"))
    assert results["quick"] is True

    judge = results["judge"]
    assert judge["judge_calls"] == judge["judgments"] == judge["verdicts_met"] > 0
    assert judge["judgments_per_s"] > 0 and judge["ideal_per_s (32 / 0.1 s)"] == 320

    cache = results["cache"]
    assert cache["first_run_judge_calls"] == cache["judgments"]
    assert cache["second_run_judge_calls (bar 0)"] == 0
    assert cache["second_run_cache_hits"] == cache["second_run_verdicts_met"] == cache["judgments"]
    assert cache["second / first (bar <= 0.10)"] > 0

    stream = results["stream"]
    assert stream["targets"] == 2000 and stream["exit_status"] in (0, 1)
    assert stream["targets_per_s"] > 0
    assert stream["peak_rss_mb (bar < 200)"] >= stream["baseline_rss_mb (one target)"] * 0.9 > 0
