"""A real two-node Ray cluster on loopback for the module's tests
(`rubricflow.ray.local.local_cluster`: `ray start --head` and one more node process,
usage stats off, a small object store). The folder is not named `ray`: as a test
package it would hide the ray library.

The cluster is shared by every test here (they run in one xdist group, so in one
process) and stopped as soon as the last of them is done, not at the end of the
session: its dozen processes would otherwise hold gigabytes and a share of the CPU
while the rest of the suite runs in the same process."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray", reason="the ray extra (pip install -e '.[ray]') is not installed")

HERE = Path(__file__).resolve().parent
_cluster: dict[str, object] = {}


def _stop_cluster() -> None:
    stack = _cluster.pop("stack", None)
    if isinstance(stack, contextlib.ExitStack):
        stack.close()
    _cluster.pop("address", None)


@pytest.fixture
def ray_cluster(request: pytest.FixtureRequest) -> str:
    """The address of a two-node Ray cluster on 127.0.0.1, joined by this process,
    started by the first test that asks for it."""
    from rubricflow.ray.local import local_cluster

    if os.environ.get("PYTEST_XDIST_WORKER") and request.config.getoption("dist") == "loadgroup":
        # xdist renames a grouped test `ID@GROUP`; a pytest it does not fit would leave the
        # name alone and spread the tests (and a cluster each) over every worker
        assert request.node.nodeid.endswith("@ray-cluster"), (
            f"{request.node.nodeid} is not in the xdist group ray-cluster: pytest-xdist's "
            "loadgroup does not work with this pytest (see the pin in pyproject.toml)"
        )

    if "address" not in _cluster:
        stack = contextlib.ExitStack()
        _cluster["address"] = stack.enter_context(local_cluster(nodes=2))
        _cluster["stack"] = stack
    return str(_cluster["address"])


@pytest.fixture(autouse=True)
def _no_pool_left_behind() -> Any:
    """Each test's evaluation actors stop at its end: they outlive a Dataset (for the
    driver's later runs), and a test that kills an evaluation actor must find its own."""
    yield
    import ray

    if ray.is_initialized():
        from rubricflow.ray.pool import release_pools

        release_pools()


def _here(item: pytest.Item | None) -> bool:
    return item is not None and HERE in Path(str(item.path)).resolve().parents


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Stop the cluster after the last test of this folder that this process runs."""
    if _here(item) and not _here(nextitem):
        _stop_cluster()


def pytest_sessionfinish() -> None:
    _stop_cluster()
