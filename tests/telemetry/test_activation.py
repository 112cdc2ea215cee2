"""When telemetry turns itself on, and that it costs nothing when it does not: each case
runs in a fresh interpreter (the global tracer provider can be set once per process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def run(mode: str, **env: str) -> dict[str, Any]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("RUBRICFLOW_OTEL", "OTEL_"))}
    done = subprocess.run(
        [sys.executable, str(HERE / "activation_proc.py"), mode],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_without_the_api_nothing_imports_it_and_instrument_says_how_to_get_it() -> None:
    found = run("absent")
    assert found["verdict"] == "pass"
    assert found["modules"] == []
    assert found["enabled"] is False
    assert "pip install 'rubricflow[otel]'" in found["instrument_error"]


def test_asking_for_it_without_the_api_warns_and_evaluates() -> None:
    found = run("absent", RUBRICFLOW_OTEL="1")
    assert found["verdict"] == "pass" and found["modules"] == [] and not found["enabled"]


def test_with_the_api_but_no_sdk_rubricflow_imports_nothing_and_stays_off() -> None:
    found = run("api")
    assert found["modules"] == []  # nobody imported it, so rubricflow did not either
    assert found["instrumentation"] == "Instrumentation" and found["enabled"] is False
    # imported by the program but with no SDK provider: still the do-nothing probes
    assert found["after_import"] == "Instrumentation"


def test_an_sdk_tracer_provider_turns_it_on_by_itself() -> None:
    found = run("sdk")
    assert found["enabled"] is True
    assert found["spans"] == ["criterion filled", "evaluate filled"]


def test_rubricflow_otel_0_keeps_it_off_even_with_an_sdk() -> None:
    found = run("sdk", RUBRICFLOW_OTEL="0")
    assert found["enabled"] is False and found["spans"] == []
