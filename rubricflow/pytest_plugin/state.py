"""One pytest run's rubricflow state: the judge options, the replay or recording cache,
and the rubric lookup, made on first use and kept in `config.stash`."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rubricflow.llm.cache import JudgeCache, SQLiteJudgeCache, default_cache
from rubricflow.llm.replay import (
    RecordingCache,
    ReplayCache,
    ReplayProvider,
    merge_answers,
    read_answers,
    write_answers,
)
from rubricflow.llm.session import LLMSession
from rubricflow.pytest_plugin.lookup import RubricLookup
from rubricflow_pytest import STATE

__all__ = ["PluginState", "state_of"]

logger = logging.getLogger("rubricflow.pytest")


class PluginState:
    """What every rubric check of a run shares."""

    def __init__(self, config: pytest.Config | None) -> None:
        option = config.getoption if config is not None else (lambda name, default=None: default)
        self.spec: str | None = option("rubric_llm", None)
        replay = option("rubric_replay", None)
        record = option("rubric_record", None)
        self.replay_path = Path(replay) if replay else None
        self.record_path = Path(record) if record else None
        paths: list[Path] = []
        if config is not None:
            paths += [Path(p) for p in config.getini("rubric_paths")]
            paths += [Path(p) for p in option("rubric_dir", [])]
        self.lookup = RubricLookup(paths, db=option("rubric_db", None))
        self._replay: ReplayCache | None = None
        self._provider: ReplayProvider | None = None
        self._recording: RecordingCache | None = None
        self._local: SQLiteJudgeCache | None = None

    @property
    def replay(self) -> ReplayCache | None:
        """The recorded answers when replaying (read once), else None."""
        if self.replay_path is None:
            return None
        if self._replay is None:
            self._replay = ReplayCache.from_file(self.replay_path)
            self._provider = ReplayProvider.for_answers(self._replay, self.spec)
        return self._replay

    @property
    def judge_configured(self) -> bool:
        """A judge was given (--rubric-llm, $RUBRICFLOW_LLM) or answers are replayed."""
        from rubricflow.llm.specs import default_spec

        return bool(self.spec or self.replay_path or default_spec())

    def _local_cache(self) -> SQLiteJudgeCache:
        if self._local is None:
            self._local = default_cache()
        return self._local

    def session(self) -> LLMSession:
        """A judge session for one check (providers are bound to the event loop they
        ran in, so each check gets its own; the caches are shared)."""
        replay = self.replay
        if replay is not None:
            assert self._provider is not None
            return LLMSession(self._provider, cache=replay)
        cache: JudgeCache = self._local_cache()
        if self.record_path is not None:
            if self._recording is None:
                self._recording = RecordingCache(cache)
            cache = self._recording
        return LLMSession(self.spec, cache=cache)

    def finish(self) -> None:
        """At the end of the run: write the recorded answers, close the local cache."""
        if self._recording is not None and self.record_path is not None:
            with _locked(self.record_path):  # pytest-xdist workers each write theirs
                old: list[Any] = []
                if self.record_path.exists():
                    try:
                        old = read_answers(self.record_path)
                    except Exception as error:  # a broken file is replaced, and said so
                        logger.warning(
                            "%s could not be read, replaced: %s", self.record_path, error
                        )
                fresh = self._recording.answers()
                count = write_answers(self.record_path, merge_answers(old, fresh))
            logger.info("recorded %d judge answer(s) in %s", count, self.record_path)
        if self._local is not None:
            self._local.close()
            self._local = None


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock for writing `path` (POSIX; elsewhere none). The lock file is in
    the temporary folder, not beside a file meant to be committed."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    import hashlib
    import tempfile

    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]
    lock = Path(tempfile.gettempdir()) / f"rubricflow-record-{digest}.lock"
    with open(lock, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


_fallback: list[PluginState] = []


def state_of(config: pytest.Config | None) -> PluginState:
    """The run's state (made on first use); without a pytest config (assert_passes
    called outside a test) a process-wide default from the environment."""
    if config is None:
        if not _fallback:
            _fallback.append(PluginState(None))
        return _fallback[0]
    state = config.stash.get(STATE, None)
    if state is None:
        state = PluginState(config)
        config.stash[STATE] = state
    assert isinstance(state, PluginState)
    return state
