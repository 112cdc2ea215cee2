"""The `rubric` fixture's work: which rubric a test asked for, loaded."""

from __future__ import annotations

from pathlib import Path

import pytest

from rubricflow.errors import RubricflowError
from rubricflow.model import Rubric
from rubricflow.pytest_plugin.state import state_of

__all__ = ["rubric_for"]


def rubric_for(request: pytest.FixtureRequest) -> Rubric:
    """The rubric of `@pytest.mark.rubric(ref)` (the closest marker), or of
    `request.param` when the fixture is parametrized indirectly. A rubric that cannot be
    found or loaded errors the test at setup, saying why and what to do."""
    __tracebackhide__ = True
    ref = getattr(request, "param", None)
    if ref is None:
        marker = request.node.get_closest_marker("rubric")
        if marker is None or len(marker.args) != 1:
            pytest.fail(
                f"{request.node.nodeid} uses the `rubric` fixture without a rubric: mark it "
                "@pytest.mark.rubric('id@version') (or a rubric file's path)",
                pytrace=False,
            )
        ref = marker.args[0]
    if isinstance(ref, Rubric):
        return ref
    if not isinstance(ref, str | Path):
        pytest.fail(
            f"@pytest.mark.rubric takes 'id@version' or a path, not {type(ref).__name__}",
            pytrace=False,
        )
    base = Path(str(request.node.path)).parent
    try:
        return state_of(request.config).lookup.resolve(ref, base=base)
    except RubricflowError as error:
        pytest.fail(f"rubric {ref}: {error}", pytrace=False)
