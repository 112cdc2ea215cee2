"""What a CI job publishes: a run as a JUnit XML file (one testcase per target, a
failure per failed criterion) and a comparison of two runs as a markdown PR comment.

    from rubricflow.ci import write_junit, comparison_markdown
    write_junit(read_results_file("results.jsonl"), "rubricflow.xml")
    comment = comparison_markdown(compare_runs(base, head))
"""

from __future__ import annotations

from rubricflow.ci.comment import COMMENT_LIMIT, COMMENT_MARKER, comparison_markdown
from rubricflow.ci.files import CIOutputError, check_writable, write_atomically
from rubricflow.ci.junit import junit_xml, write_junit

__all__ = [
    "COMMENT_LIMIT",
    "COMMENT_MARKER",
    "CIOutputError",
    "check_writable",
    "comparison_markdown",
    "junit_xml",
    "write_atomically",
    "write_junit",
]
