"""A real two-node Ray cluster on loopback for the module's tests
(`rubricflow.ray.local.local_cluster`: `ray start --head` and one more node process,
usage stats off, a small object store). The folder is not named `ray`: as a test
package it would hide the ray library."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("ray", reason="the ray extra (pip install -e '.[ray]') is not installed")


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[str]:
    """The address of a two-node Ray cluster on 127.0.0.1, joined by this process: one
    for every module here (they run in one xdist group, so in one process)."""
    from rubricflow.ray.local import local_cluster

    with local_cluster(nodes=2) as address:
        yield address
