"""`rubricflow serve` on an address it cannot listen on says so, naming the address and
the fix, and exits 2 before it announces that it is serving (uvicorn used to print its
`[Errno 98]` after our "serving ..." banner, and exit 3)."""

from __future__ import annotations

import socket
import subprocess
import sys

from .conftest import free_port


def _serve(db: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rubricflow", "serve", "--db", db, *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_port_in_use_is_a_clear_error_and_exit_2_before_serving(sqlite_db: str) -> None:
    with socket.socket() as holder:  # another server listens there
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        done = _serve(sqlite_db, "--port", str(port))
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert f"127.0.0.1:{port}" in done.stderr and "already in use" in done.stderr
    assert "--port" in done.stderr
    assert "serving rubricflow" not in done.stderr
    assert "Traceback" not in done.stderr and "Errno" not in done.stderr


def test_an_address_not_of_this_machine_is_a_clear_error(sqlite_db: str) -> None:
    # TEST-NET-1 (RFC 5737): never an address of this machine
    done = _serve(sqlite_db, "--host", "192.0.2.1", "--port", str(free_port()))
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "192.0.2.1" in done.stderr and "--host" in done.stderr
    assert "serving rubricflow" not in done.stderr and "Traceback" not in done.stderr
