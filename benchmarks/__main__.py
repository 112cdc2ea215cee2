"""Run benchmark workloads and print their figures, a table of the bars and JSON:
`python -m benchmarks [NAME ...] [--quick] [--no-peers] [--json FILE]`.

Every comparison is a ratio measured within one run on one machine. The peer packages
(dataknobs-bots, `rubric`) are installed by the workloads that need them into their own
venvs under `benchmarks/.peers/`, never into rubricflow's environment.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from benchmarks import (
    builtin_checks,
    cli_judge,
    conversations,
    dashboard_queue,
    gate,
    http_gate,
    http_scaleout,
    http_webhooks,
    judge_concurrency,
    live_status,
    otel_overhead,
    pytest_startup,
    ray_scale,
    rewards,
    rubric_pkg,
    scaleout,
    store_throughput,
    streaming,
    trust,
)

Runner = Callable[[argparse.Namespace], Awaitable[dict[str, Any]]]

WORKLOADS: dict[str, Runner] = {
    "store": lambda a: store_throughput.run(quick=a.quick),
    "gate": lambda a: gate.run(quick=a.quick, peers_enabled=a.peers),
    "judge": lambda a: judge_concurrency.run(quick=a.quick),
    "cli-judge": lambda a: cli_judge.run(quick=a.quick),
    "rubric-pkg": lambda a: rubric_pkg.run(quick=a.quick, peers_enabled=a.peers),
    "cache": lambda a: judge_concurrency.run_cache(quick=a.quick),
    "stream": lambda a: streaming.run(quick=a.quick),
    "scaleout": lambda a: scaleout.run(quick=a.quick),
    "checks": lambda a: builtin_checks.run(quick=a.quick),
    "live": lambda a: live_status.run(quick=a.quick),
    "dashboard-queue": lambda a: dashboard_queue.run(quick=a.quick),
    "http-gate": lambda a: http_gate.run(quick=a.quick),
    "http-scaleout": lambda a: http_scaleout.run(quick=a.quick),
    "http-webhooks": lambda a: http_webhooks.run(quick=a.quick),
    "rewards": lambda a: rewards.run(quick=a.quick),
    "rewards-per-prompt": lambda a: rewards.run_per_prompt(quick=a.quick),
    "otel": lambda a: otel_overhead.run(quick=a.quick),
    "pytest-startup": lambda a: pytest_startup.run(quick=a.quick),
    "trust": lambda a: trust.run(quick=a.quick),
    "ray": lambda a: ray_scale.run(quick=a.quick),
    "conversations": lambda a: conversations.run(quick=a.quick),
}

# (workload, issue item, figure key, the bar as text, the test of the bar)
BARS: list[tuple[str, str, str, str, Callable[[Any], bool]]] = [
    ("gate", "9.1", "rubricflow / dataknobs speed (bar >= 1.0)", ">= 1.0", lambda v: v >= 1.0),
    ("gate", "9.1", "same_outcomes", "true", lambda v: v is True),
    ("judge", "9.2", "ratio (bar >= 0.9)", ">= 0.90", lambda v: v >= 0.9),
    # issue 15, first contact 5: the same through `rubricflow eval --judge-concurrency 32`
    ("cli-judge", "15.5", "ratio (bar >= 0.9)", ">= 0.90", lambda v: v >= 0.9),
    ("rubric-pkg", "9.3", "rubric/speedup (bar >= 5)", ">= 5", lambda v: v >= 5),
    ("rubric-pkg", "9.3", "rubric/same_scores", "true", lambda v: v is True),
    ("rubric-pkg", "31.5", "rubric2/speedup (bar >= 5)", ">= 5", lambda v: v >= 5),
    ("rubric-pkg", "31.5", "rubric2/same_scores", "true", lambda v: v is True),
    ("cache", "9.4", "second_run_judge_calls (bar 0)", "0", lambda v: v == 0),
    ("cache", "9.4", "second / first (bar <= 0.10)", "<= 0.10", lambda v: v <= 0.10),
    ("stream", "9.5", "peak_rss_mb (bar < 200)", "< 200 MB", lambda v: v < 200),
    ("stream", "9.5", "targets_per_s", "reported", lambda v: v > 0),
    ("scaleout", "9.6", "4 / 1 throughput (bar >= 3)", ">= 3", lambda v: v >= 3),
    # issue 16, item 6: every built-in check is linear on adversarial text
    ("checks", "16.6", "max 1mb / 100kb (bar <= 12)", "<= 12", lambda v: v <= 12),
    # issue 17: a decision reaches an SSE client (another process) on PostgreSQL
    ("live", "17", "sse_p99_ms (bar < 200)", "< 200 ms", lambda v: v < 200),
    ("live", "17", "missed_events (bar 0)", "0", lambda v: v == 0),
    # issue 18: the review queue page with 10,000 artifacts against 100 (server time)
    (
        "dashboard-queue",
        "18",
        "queue 10000 / 100 server time (bar <= 1.5)",
        "<= 1.5",
        lambda v: v <= 1.5,
    ),
    # issue 17: the HTTP API against the same work in process, and its scale-out
    ("http-gate", "17.p1", "http / in-process (bar >= 0.6)", ">= 0.6", lambda v: v >= 0.6),
    ("http-gate", "17.p1", "same_decisions", "true", lambda v: v is True),
    ("http-scaleout", "17.p2", "4 / 1 throughput (bar >= 3)", ">= 3", lambda v: v >= 3),
    # a decision reaches a local webhook receiver through the server's deliverer
    ("http-webhooks", "17.p3", "webhook_p99_ms (target < 1000)", "< 1000 ms", lambda v: v < 1000),
    ("http-webhooks", "17.p3", "missed_deliveries (bar 0)", "0", lambda v: v == 0),
    # issue 19: rewards through the TRL-shaped callable from synchronous code
    ("rewards", "19.p1", "ratio (bar >= 0.9)", ">= 0.90", lambda v: v >= 0.9),
    ("rewards", "19.p2", "second_pass_judge_calls (bar 0)", "0", lambda v: v == 0),
    ("rewards", "19.p2", "second / first (bar <= 0.10)", "<= 0.10", lambda v: v <= 0.10),
    (
        "rewards-per-prompt",
        "19.p3",
        "per-prompt / shared (bar <= 1.1)",
        "<= 1.1",
        lambda v: v <= 1.1,
    ),
    # issue 20: the gate with opentelemetry-api installed (no SDK) against it absent
    (
        "otel",
        "20.5",
        "with api / without (bar >= 0.97)",
        ">= 0.97",
        lambda v: v >= 0.97,
    ),
    # issue 20, item 3: the pytest plugin, loaded in every pytest run, costs its start-up
    ("pytest-startup", "20.3", "added_ms (bar <= 50)", "<= 50 ms", lambda v: v <= 50),
    # issue 28, item 8: routing, the cascade, corrected intervals and panels
    (
        "trust",
        "28.8",
        "errors_caught_at_20 (confidence / random, bar >= 2)",
        ">= 2",
        lambda v: v >= 2,
    ),
    ("trust", "28.8", "accuracy_gap_points (bar <= 1)", "<= 1", lambda v: v <= 1),
    ("trust", "28.8", "cost cascade / strong (bar <= 0.5)", "<= 0.5", lambda v: v <= 0.5),
    ("trust", "28.8", "corrected_coverage (bar >= 0.93)", ">= 0.93", lambda v: v >= 0.93),
    (
        "trust",
        "28.8",
        "panel / one judge wall time (bar <= 1.3)",
        "<= 1.3",
        lambda v: v <= 1.3,
    ),
    # issue 32: evaluation on a Ray cluster against the 100 ms judge
    ("ray", "32.p1", "two nodes / one (bar >= 1.8)", ">= 1.8", lambda v: v >= 1.8),
    ("ray", "32.p2", "ray one node / local (bar >= 0.85)", ">= 0.85", lambda v: v >= 0.85),
    ("ray", "32.p3", "same_results", "true", lambda v: v is True),
    # issue 30: 50-turn conversations judged turn by turn keep the judge as busy as single
    # targets, and 100,000 OTel spans read into trajectories in bounded memory
    ("conversations", "30.p1", "ratio (bar >= 0.9)", ">= 0.90", lambda v: v >= 0.9),
    (
        "conversations",
        "30.p2",
        "otel/peak_rss_mb (bar < 200)",
        "< 200 MB",
        lambda v: v < 200,
    ),
    # issue 5: storing an evaluation must not dominate the cost of making it
    ("store", "5", "sqlite_store_cost / evaluate_cost", "<= 1.0", lambda v: v <= 1.0),
    ("store", "5", "postgresql_store_cost / evaluate_cost", "<= 1.0", lambda v: v <= 1.0),
]


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
    parser.add_argument(
        "--no-peers",
        dest="peers",
        action="store_false",
        help="rubricflow's side only: no peer venv is made or run (gate, rubric-pkg)",
    )
    args = parser.parse_args(argv)
    chosen = args.names or list(WORKLOADS)
    unknown = [name for name in chosen if name not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workload {', '.join(unknown)}; choose from {', '.join(WORKLOADS)}")
    results: dict[str, Any] = {
        "machine": machine(),
        "quick": args.quick,
        "peers": args.peers,
    }
    for name in chosen:
        print(f"== {name}", flush=True)
        figures = asyncio.run(WORKLOADS[name](args))
        results[name] = figures
        for key, value in figures.items():
            shown = f"{value:,.3f}" if isinstance(value, float) else str(value)
            print(f"  {key:<48} {shown}")
    results["bars"] = bars(results)
    print_table(results["bars"])
    text = json.dumps(results, indent=2)
    print(text)
    if args.json_path:
        with open(args.json_path, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
    return 0


def _figure(figures: dict[str, Any], key: str) -> Any:
    """A workload's figure by its key; `peer/key` for a figure under one peer's part."""
    part, slash, rest = key.partition("/")
    if slash and isinstance(figures.get(part), dict):
        return figures[part].get(rest)
    return figures.get(key)


def bars(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Each bar of the workloads that ran: the figure, the bar and whether it is met."""
    rows = []
    for workload, item, key, bar, test in BARS:
        figures = results.get(workload)
        if not isinstance(figures, dict):
            continue
        value = _figure(figures, key)
        rows.append(
            {
                "workload": workload,
                "issue_item": item,
                "figure": key,
                "measured": value,
                "bar": bar,
                "met": None if value is None else bool(test(value)),
            }
        )
    return rows


def print_table(rows: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="bars (issue.item)")
    for column in ("#", "workload", "figure", "measured", "bar", "met"):
        table.add_column(column)
    for row in rows:
        value = row["measured"]
        shown = (
            "-" if value is None else f"{value:,.3f}" if isinstance(value, float) else str(value)
        )
        met = {True: "met", False: "NOT MET", None: "not measured"}[row["met"]]
        table.add_row(row["issue_item"], row["workload"], row["figure"], shown, row["bar"], met)
    Console(width=140).print(table)


def machine() -> dict[str, Any]:
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count() or 1,
        "cpu_model": _cpu_model(),
        "sqlite": _sqlite_version(),
        "load_average": _load(),
    }


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _sqlite_version() -> str:
    import sqlite3

    return sqlite3.sqlite_version


def _load() -> list[float] | None:
    try:
        return [round(value, 2) for value in os.getloadavg()]
    except (AttributeError, OSError):
        return None


if __name__ == "__main__":
    raise SystemExit(main())
