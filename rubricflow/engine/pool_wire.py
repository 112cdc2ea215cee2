"""The wire between the check pool's parent and a pool process: length-prefixed pickled
frames on pipes, and a small shared-memory record of what the process is scoring."""

from __future__ import annotations

import os
import struct

__all__ = ["HEADER", "PROGRESS", "read_exact", "shared_file", "write_all"]

# a frame's length, ahead of its pickled payload
HEADER = struct.Struct("!I")

# what a pool process is scoring, in memory both processes map: job number, criterion
# index, and when it started (time.monotonic, one clock for every process)
PROGRESS = struct.Struct("=qqd")


def shared_file(size: int) -> int:
    """A file descriptor of `size` zero bytes, to map in two processes."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("rubricflow-check-progress", 0)  # close-on-exec; pass_fds opens it
    else:  # pragma: no cover - not Linux
        import tempfile

        with tempfile.TemporaryFile() as handle:
            fd = os.dup(handle.fileno())
    os.ftruncate(fd, size)
    return fd


def read_exact(fd: int, size: int) -> bytes | None:
    """`size` bytes from a blocking `fd`, or None when it closes first."""
    chunks = bytearray()
    while len(chunks) < size:
        chunk = os.read(fd, size - len(chunks))
        if not chunk:
            return None
        chunks += chunk
    return bytes(chunks)


def write_all(fd: int, payload: bytes) -> None:
    """`payload` as one frame on a blocking `fd`."""
    data = memoryview(HEADER.pack(len(payload)) + payload)
    while data:
        data = data[os.write(fd, data) :]
