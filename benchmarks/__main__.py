"""Run benchmark workloads and print a table and JSON: `python -m benchmarks [NAME ...]`.

Every comparison is a ratio measured within one run on one machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
from typing import Any

from benchmarks import judge_concurrency, store_throughput, streaming

WORKLOADS = {
    "store": store_throughput.run,
    "judge": judge_concurrency.run,
    "cache": judge_concurrency.run_cache,
    "stream": streaming.run,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument(
        "names", nargs="*", help=f"workloads: {', '.join(WORKLOADS)} (default: all)"
    )
    parser.add_argument("--json", dest="json_path", help="also write the results to this file")
    parser.add_argument(
        "--quick",
        action="store_true",
        default=os.environ.get("RUBRICFLOW_BENCH_QUICK", "") not in ("", "0"),
        help="small sizes for a smoke run (also RUBRICFLOW_BENCH_QUICK=1)",
    )
    args = parser.parse_args(argv)
    chosen = args.names or list(WORKLOADS)
    unknown = [name for name in chosen if name not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workload {', '.join(unknown)}; choose from {', '.join(WORKLOADS)}")
    results: dict[str, Any] = {
        "machine": {
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "cpus": _cpus(),
            "load_average": _load(),
        },
        "quick": args.quick,
    }
    for name in chosen:
        print(f"== {name}", flush=True)
        figures = asyncio.run(WORKLOADS[name](quick=args.quick))
        results[name] = figures
        for key, value in figures.items():
            shown = f"{value:,.3f}" if isinstance(value, float) else str(value)
            print(f"  {key:<48} {shown}")
    text = json.dumps(results, indent=2)
    print(text)
    if args.json_path:
        with open(args.json_path, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
    return 0


def _cpus() -> int:
    return os.cpu_count() or 1


def _load() -> list[float] | None:
    try:
        return [round(value, 2) for value in os.getloadavg()]
    except (AttributeError, OSError):
        return None


if __name__ == "__main__":
    raise SystemExit(main())
