"""Issue 20, item 5: OpenTelemetry costs nothing without an SDK.

The deterministic review gate (`benchmarks/gate.py`'s rubricflow side: create and review
artifacts against five checks and a JSON Schema, on a SQLite file) in fresh interpreters,
in rounds that alternate between:

- `api`: `opentelemetry-api` installed and imported by the program (as a library it uses
  might), no SDK tracer provider configured: rubricflow's instrumentation seam looks, finds
  the API's proxy provider, and keeps its do-nothing probes;
- `absent`: a meta-path finder makes `import opentelemetry` fail, as if it were not
  installed.

Each round is its own process (a warm-up of 20 artifacts, then the timed ones), so
neither side inherits the other's imports or caches. A round's cost is the CPU time its
process spent on the timed artifacts (wall time on a shared, loaded machine mostly
measures the neighbours; both are reported). The figure is the median over pairs of
(CPU seconds absent / CPU seconds with the API): 1.0 means no cost, and the bar is 0.97.
"""

from __future__ import annotations

import asyncio
import importlib.abc
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ARTIFACTS = 300
QUICK_ARTIFACTS = 60
PAIRS = 15
QUICK_PAIRS = 2
ROOT = Path(__file__).resolve().parents[1]


class _NoOpenTelemetry(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: Any, target: Any = None) -> None:
        if name == "opentelemetry" or name.startswith("opentelemetry."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


async def _round(mode: str, count: int, folder: Path) -> dict[str, Any]:
    if mode == "absent":
        sys.meta_path.insert(0, _NoOpenTelemetry())
    else:
        import opentelemetry.trace  # noqa: F401  (the program uses the API, no SDK)
    from benchmarks.gate import SEED, rubricflow_round
    from benchmarks.gate_checks import artifacts

    contents = artifacts(count, SEED)
    await rubricflow_round(folder, contents[:20], -1)
    cpu = time.process_time()
    timed = await rubricflow_round(folder, contents, 0)
    cpu = time.process_time() - cpu
    import rubricflow.instrumentation as instrumentation

    return {
        "seconds": timed["seconds"],
        "cpu_seconds": cpu,
        "instrumentation": type(instrumentation.current()).__name__,
        "otel_imported": "opentelemetry.trace" in sys.modules,
    }


def _run_round(mode: str, count: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.otel_overhead", mode, str(count), folder],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
            timeout=900,
        )
    if done.returncode != 0:
        raise RuntimeError(f"the {mode} round failed: {done.stderr[-2000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def seam_microseconds(criteria: int = 6, repeat: int = 20_000) -> float:
    """What the do-nothing probes cost one evaluation of `criteria` criteria, in
    microseconds: the executor's calls into the seam, done `repeat` times."""
    import time

    import rubricflow.instrumentation as instrumentation
    from benchmarks.gate_checks import RUBRIC
    from rubricflow import load_document
    from rubricflow.results import Target

    (rubric,) = load_document(RUBRIC, format="dataknobs").rubrics
    target = Target(content="x")
    chosen = instrumentation.current()
    started = time.perf_counter()
    for _ in range(repeat):
        with instrumentation.current().evaluation(rubric, target) as probe:
            for criterion in rubric.criteria[:criteria]:
                with instrumentation.current().criteria((criterion,), "deterministic") as one:
                    one.finish([])
            probe.finish(None)
    elapsed = time.perf_counter() - started
    instrumentation.install(chosen)
    return elapsed / repeat * 1e6


async def run(quick: bool = False) -> dict[str, Any]:
    count = QUICK_ARTIFACTS if quick else ARTIFACTS
    pairs = QUICK_PAIRS if quick else PAIRS
    with_api: list[float] = []
    absent: list[float] = []
    wall_api: list[float] = []
    wall_absent: list[float] = []
    ratios: list[float] = []
    for index in range(pairs):
        # alternate which side goes first, so neither always follows the other
        order = ("api", "absent") if index % 2 == 0 else ("absent", "api")
        got = {mode: await asyncio.to_thread(_run_round, mode, count) for mode in order}
        if got["api"]["instrumentation"] != "Instrumentation" or got["absent"]["otel_imported"]:
            raise RuntimeError(f"a round did not run as intended: {got}")
        with_api.append(got["api"]["cpu_seconds"])
        absent.append(got["absent"]["cpu_seconds"])
        wall_api.append(got["api"]["seconds"])
        wall_absent.append(got["absent"]["seconds"])
        ratios.append(got["absent"]["cpu_seconds"] / got["api"]["cpu_seconds"])
    seam_us = seam_microseconds()
    per_artifact_us = statistics.median(with_api) / count * 1e6  # CPU
    return {
        "artifacts": count,
        "seam_us_per_evaluation": round(seam_us, 3),
        "seam_share_of_an_artifact": seam_us / per_artifact_us,
        "pairs": pairs,
        "api_no_sdk_cpu_s": [round(s, 3) for s in with_api],
        "api_absent_cpu_s": [round(s, 3) for s in absent],
        "api_no_sdk_wall_s": [round(s, 3) for s in wall_api],
        "api_absent_wall_s": [round(s, 3) for s in wall_absent],
        "median_cpu_ratio": statistics.median(absent) / statistics.median(with_api),
        "median_wall_ratio": statistics.median(wall_absent) / statistics.median(wall_api),
        "pair_ratios": [round(r, 4) for r in ratios],
        "best_round_ratio": min(absent) / min(with_api),
        "with api / without (bar >= 0.97)": statistics.median(ratios),
    }


if __name__ == "__main__":
    mode, count, folder = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
    print(json.dumps(asyncio.run(_round(mode, count, folder))))
