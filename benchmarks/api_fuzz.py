"""schemathesis over the live OpenAPI document of a real `rubricflow serve` (uvicorn), on
SQLite and PostgreSQL, with an admin's token and a submitter's, every phase on (examples,
coverage, fuzzing, and stateful, whose links schemathesis infers from the schema and from
`Location` headers), counting what the server answered:

    python -m benchmarks.api_fuzz [--backend sqlite|postgresql ...] [--max-examples N]
        [--seed N] [--phases LIST] [--json FILE] [--keep DIR]

The figures per backend: the requests the server logged (its access log, one line a
request), by status class; the test cases schemathesis generated; its failures by kind
(server errors, status codes, content types and bodies the document does not declare),
with the operations each was seen on; tracebacks in the server's log. The default (20
examples an operation and mode) sends well over 5,000 requests per backend; the test
suite runs a smaller seeded pass (tests/server/test_schema_fuzz.py). The PostgreSQL
server is $RUBRICFLOW_BENCH_PG (default postgresql://postgres@127.0.0.1:5432/test); each
run gets a scratch database, dropped after it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from benchmarks.store_throughput import POSTGRES_ADMIN, _drop, _postgres_url

ROOT = Path(__file__).resolve().parents[1]
#: what the run asserts: no 5xx, and every answer is one the document declares
CHECKS = (
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_schema_conformance",
)
ALL_PHASES = ("examples", "coverage", "fuzzing", "stateful")
TOKENS = {"admin": "fuzz-admin", "submitter": "fuzz-sub"}
#: left out: the live event stream of an artifact that exists never ends (a request-and-
#: response fuzzer would wait out its timeout on every call); tests/server/test_live.py
#: covers it, its refusals included
EXCLUDED_PATHS = ("/v1/artifacts/{artifact_id}/events",)
STARTUP_SECONDS = 90.0

#: a deterministic rubric, and a type the submitter's token may use, so that submitting,
#: scoring and reading give real answers, not only 404s
RUBRIC = {
    "id": "fuzz-gate",
    "name": "Fuzz gate",
    "version": "1.0.0",
    "criteria": [
        {
            "id": "clean",
            "name": "Clean",
            "description": "The content does not say FAIL.",
            "required": True,
            "scoring": {
                "method": "deterministic",
                "function": "contains_none",
                "config": {"terms": ["FAIL"]},
            },
        }
    ],
}
TYPE = "note"


@dataclass
class Figures:
    """One backend's run."""

    backend: str
    requests: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    server_errors: int = 0
    test_cases: int = 0
    failures: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    tracebacks: int = 0
    seconds: float = 0.0
    by_role: dict[str, dict[str, Any]] = field(default_factory=dict)

    def failures_by_kind(self) -> dict[str, int]:
        kinds: Counter[str] = Counter()
        for failure in self.failures:
            kinds[str(failure["title"])] += int(failure["count"])
        return dict(kinds)

    def as_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "requests": self.requests,
            "statuses": dict(sorted(self.statuses.items())),
            "server_errors (5xx)": self.server_errors,
            "test_cases": self.test_cases,
            "failures_by_kind": self.failures_by_kind(),
            "failures": self.failures,
            "errors": self.errors,
            "tracebacks_in_server_log": self.tracebacks,
            "seconds": round(self.seconds, 1),
            "by_role": self.by_role,
        }


def prepare(db_url: str) -> dict[str, str]:
    """The store's rubric, type and tokens; the tokens' secrets by role."""
    from rubricflow.application import Application
    from rubricflow.model import parse_rubric
    from rubricflow.review import ArtifactType, RubricBinding

    async def work() -> dict[str, str]:
        async with await Application.open(db_url) as app:
            await app.store.rubrics.register(parse_rubric(RUBRIC))
            binding = (RubricBinding(rubric_id=str(RUBRIC["id"])),)
            await app.artifacts.set_type(ArtifactType(name=TYPE, rubrics=binding))
            secrets = {}
            for role, name in TOKENS.items():
                types = (TYPE,) if role == "submitter" else ()
                made = await app.store.tokens.create(
                    name, role=role, types=types, created_by="api-fuzz"
                )
                secrets[role] = made.secret
            return secrets

    return asyncio.run(work())


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    url: str
    log: Path


def access_lines(log: Path) -> list[dict[str, Any]]:
    """The server's access log lines (JSON, one a request) in its output `log`."""
    lines = []
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith('{"time"'):
            with contextlib.suppress(ValueError):
                lines.append(json.loads(line))
    return lines


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def serving(db_url: str, log: Path, *args: str) -> Iterator[Server]:
    """`rubricflow serve` on a free port, its output in `log`, until /healthz answers;
    stopped (SIGTERM) at the end."""
    port = _free_port()
    with log.open("wb") as handle:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "rubricflow",
                "serve",
                "--db",
                db_url,
                "--port",
                str(port),
                *args,
            ],
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = Server(process, f"http://127.0.0.1:{port}", log)
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"the server exited: {log.read_text(errors='replace')}")
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{server.url}/healthz", timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"the server did not start: {log.read_text(errors='replace')}")
            time.sleep(0.1)
        yield server
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def schemathesis(
    url: str,
    token: str,
    *,
    seed: int,
    max_examples: int,
    phases: Sequence[str],
    report: Path,
    output: Path,
) -> dict[str, Any]:
    """Run `schemathesis run` against the server's live document with `token`; its JSON
    report (the failures grouped by kind, the test cases generated)."""
    command = [
        str(Path(sys.executable).with_name("schemathesis")),
        "run",
        f"{url}/openapi.json",
        "--header",
        f"Authorization: Bearer {token}",
        "--checks",
        ",".join(CHECKS),
        "--phases",
        ",".join(phases),
        "--max-examples",
        str(max_examples),
        "--seed",
        str(seed),
        "--workers",
        "1",
        "--request-timeout",
        "60",
        "--wait-for-schema",
        "60",
        "--suppress-health-check",
        "all",
        "--generation-database",
        "none",
        "--continue-on-failure",
        "--no-shrink",
        "--no-color",
        *(option for path in EXCLUDED_PATHS for option in ("--exclude-path", path)),
        "--report",
        "json",
        "--report-json-path",
        str(report),
    ]
    environment = {
        **os.environ,
        "SCHEMATHESIS_HOOKS": "benchmarks.api_fuzz_hooks",
        "RUBRICFLOW_FUZZ_TOKENS": ",".join(TOKENS.values()),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    with output.open("w") as handle:
        subprocess.run(
            command, stdout=handle, stderr=subprocess.STDOUT, env=environment, cwd=ROOT, check=False
        )
    try:
        result: dict[str, Any] = json.loads(report.read_text())
    except (OSError, ValueError) as error:
        raise RuntimeError(
            f"schemathesis wrote no report: {output.read_text(errors='replace')[-3000:]}"
        ) from error
    return result


def fuzz_backend(
    backend: str,
    db_url: str,
    folder: Path,
    *,
    seed: int,
    max_examples: int,
    phases: Sequence[str] = ALL_PHASES,
) -> Figures:
    """A prepared store, one server on it, fuzzed with each role's token in turn."""
    secrets = prepare(db_url)
    started = time.monotonic()
    with serving(db_url, folder / f"server-{backend}.log") as server:
        figures = fuzz_server(
            backend,
            server.url,
            server.log,
            secrets,
            folder,
            seed=seed,
            max_examples=max_examples,
            phases=phases,
        )
    figures.tracebacks = server.log.read_text(errors="replace").count("Traceback")
    figures.seconds = time.monotonic() - started
    return figures


def fuzz_server(
    backend: str,
    url: str,
    log: Path,
    secrets: dict[str, str],
    folder: Path,
    *,
    seed: int,
    max_examples: int,
    phases: Sequence[str] = ALL_PHASES,
) -> Figures:
    """Fuzz the server at `url` with each role's token in `secrets` (from `prepare`), in
    turn; what it answered is read from its access log, `log`."""
    figures = Figures(backend)
    for role, token in secrets.items():
        before = len(access_lines(log))
        report = schemathesis(
            url,
            token,
            seed=seed,
            max_examples=max_examples,
            phases=phases,
            report=folder / f"report-{backend}-{role}.json",
            output=folder / f"schemathesis-{backend}-{role}.txt",
        )
        lines = access_lines(log)[before:]
        statuses = Counter(f"{line['status'] // 100}xx" for line in lines)
        figures.by_role[role] = {
            "requests": len(lines),
            "statuses": dict(sorted(statuses.items())),
            "test_cases": report["test_cases"]["generated"],
            "failures_by_kind": {f["title"]: f["count"] for f in report["failures"]},
        }
        figures.requests += len(lines)
        figures.statuses.update(statuses)
        figures.server_errors += sum(1 for line in lines if line["status"] >= 500)
        figures.test_cases += int(report["test_cases"]["generated"])
        figures.failures += [{**f, "role": role} for f in report["failures"]]
        figures.errors += [{**e, "role": role} for e in report["errors"]]
    figures.tracebacks = log.read_text(errors="replace").count("Traceback")
    return figures


@contextlib.contextmanager
def store(backend: str, folder: Path) -> Iterator[str]:
    """A fresh store: a SQLite file in `folder`, or a scratch PostgreSQL database."""
    if backend == "sqlite":
        for leftover in folder.glob("fuzz.db*"):  # a kept folder's last run
            leftover.unlink()
        yield f"sqlite+aiosqlite:///{folder / 'fuzz.db'}"
        return
    made = asyncio.run(_postgres_url())
    if made is None:
        raise RuntimeError(f"no PostgreSQL server at {POSTGRES_ADMIN}")
    url, name = made
    try:
        yield url
    finally:
        asyncio.run(_drop(name))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", action="append", choices=["sqlite", "postgresql"])
    parser.add_argument("--max-examples", type=int, default=20)
    parser.add_argument("--seed", type=int, default=20261128)
    parser.add_argument("--phases", default=",".join(ALL_PHASES))
    parser.add_argument("--json", type=Path, help="write the figures here too")
    parser.add_argument("--keep", type=Path, help="keep logs and reports in this folder")
    options = parser.parse_args(argv)
    results = []
    with contextlib.ExitStack() as stack:
        if options.keep:
            options.keep.mkdir(parents=True, exist_ok=True)
            base = options.keep
        else:
            base = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="api-fuzz-")))
        for backend in options.backend or ["sqlite", "postgresql"]:
            folder = base / backend
            folder.mkdir(exist_ok=True)
            with store(backend, folder) as url:
                figures = fuzz_backend(
                    backend,
                    url,
                    folder,
                    seed=options.seed,
                    max_examples=options.max_examples,
                    phases=options.phases.split(","),
                )
            results.append(figures.as_dict())
            print(json.dumps(figures.as_dict(), indent=2), flush=True)
    if options.json:
        options.json.write_text(json.dumps(results, indent=2))
    clean = all(r["server_errors (5xx)"] == 0 and not r["failures"] for r in results)
    return 0 if clean else 1


if __name__ == "__main__":
    raise SystemExit(main())
