"""How many threads the in-process `local` judge computes with."""

from __future__ import annotations

import os

import pytest

from rubricflow.errors import ConfigurationError
from rubricflow.llm.providers.local import LocalProvider, default_threads
from rubricflow.settings import Settings, use


def test_the_setting_chooses_the_threads_and_an_argument_overrides_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RUBRICFLOW_LOCAL_THREADS", "3")
    assert LocalProvider("model.gguf").n_threads == 3
    assert LocalProvider("model.gguf", n_threads=5).n_threads == 5
    with use(Settings.from_environment({"RUBRICFLOW_LOCAL_THREADS": "2"})):
        assert LocalProvider("model.gguf").n_threads == 2


def test_by_default_half_the_usable_cpus_and_at_least_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("RUBRICFLOW_LOCAL_THREADS", raising=False)
    for usable, threads in ((8, 4), (4, 2), (3, 1), (2, 1), (1, 1)):
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid, n=usable: set(range(n)))
        assert default_threads() == threads
        assert LocalProvider("model.gguf").n_threads == threads


def test_a_bad_thread_count_names_the_variable_and_the_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RUBRICFLOW_LOCAL_THREADS", "0")
    with pytest.raises(ConfigurationError) as caught:
        LocalProvider("model.gguf")
    assert "RUBRICFLOW_LOCAL_THREADS" in str(caught.value)
    assert "e.g. 1" in str(caught.value)
