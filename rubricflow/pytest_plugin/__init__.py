"""rubricflow in pytest: check model output against rubrics as ordinary test assertions.

    from rubricflow.pytest_plugin import assert_passes

    @pytest.mark.rubric("qa-answer@1.0.0")
    def test_answer(rubric):
        assert_passes(rubric, my_bot("What is 2+2?"), query="What is 2+2?")

The hooks, options and fixtures live in the `rubricflow_pytest` module (the `pytest11`
entry point, which imports nothing heavy); this package is what they call. See
docs/pytest.md.
"""

from __future__ import annotations

from rubricflow.pytest_plugin.checking import (
    assert_passes,
    assert_passes_async,
    failure_message,
)

__all__ = ["assert_passes", "assert_passes_async", "failure_message"]
