"""The HTML report of a run: one self-contained file (inline CSS, JS and SVG, no external
URL) with the run's figures, a score histogram, per-criterion pass rates and every
target's criterion results, filterable by verdict and by failed criterion.

    from rubricflow.report import write_report
    write_report(read_results_file("results.jsonl"), "report.html")
"""

from __future__ import annotations

from rubricflow.report.html import render_report, write_report

__all__ = ["render_report", "write_report"]
