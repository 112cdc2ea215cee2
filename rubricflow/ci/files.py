"""Writing an output file whole or not at all: a CI step that reads a half-written
JUnit file would report a parse error instead of the run."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from rubricflow.errors import RubricflowError

__all__ = ["CIOutputError", "check_writable", "write_atomically"]


class CIOutputError(RubricflowError):
    """An output file (JUnit XML, a PR comment) cannot be written where it was asked."""


def _cannot_write(path: Path, error: OSError) -> CIOutputError:
    reason = error.strerror or str(error)
    return CIOutputError(
        f"{path}: cannot write it ({reason}); give a path in a folder you can write to"
    )


def check_writable(path: str | Path) -> Path:
    """Fail now, before any target is judged, when `path` could not be written at the
    end: its folder cannot be created or written to, or it names a folder."""
    target = Path(path)
    if target.is_dir():
        raise CIOutputError(f"{target}: is a folder; give a file name, e.g. {target}/junit.xml")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=target.parent, prefix=f".{target.name}.", delete=True):
            pass
    except OSError as error:
        raise _cannot_write(target, error) from None
    return target


def write_atomically(path: str | Path, data: bytes) -> Path:
    """Write `data` to `path` through a temporary file in the same folder and a rename,
    so a reader sees the old file or the new one, never part of it."""
    target = Path(path)
    if target.is_dir():
        raise CIOutputError(f"{target}: is a folder; give a file name, e.g. {target}/junit.xml")
    temporary: str | None = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, 0o644)
        os.replace(temporary, target)
        temporary = None
    except OSError as error:
        raise _cannot_write(target, error) from None
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
    return target
