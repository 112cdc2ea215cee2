"""`rubricflow.__all__` is the public API: sorted, and everything in it imports."""

from __future__ import annotations

import subprocess
import sys

import rubricflow


def test_all_is_sorted_and_unique() -> None:
    assert rubricflow.__all__ == sorted(set(rubricflow.__all__))


def test_every_public_name_imports() -> None:
    for name in rubricflow.__all__:
        assert getattr(rubricflow, name) is not None, name


def test_errors_form_one_tree() -> None:
    errors = [getattr(rubricflow, n) for n in rubricflow.__all__ if n.endswith("Error")]
    assert errors
    assert all(issubclass(e, rubricflow.RubricflowError) for e in errors)


def test_importing_builds_no_plugin_manager() -> None:
    code = (
        "import rubricflow, rubricflow.plugins as p; print(p._cached_default.cache_info().currsize)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "0"
