"""The peer packages' own environments: a venv per peer under `benchmarks/.peers/<name>/`,
created on first use and pip-installed from PyPI, so rubricflow's environment never holds
them. The peer side of a workload runs as a script (`benchmarks/peer_scripts/`) in that
venv, with the repository root on its path (for `benchmarks.gate_checks`) and nothing of
rubricflow importable.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import venv
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PEERS_DIR = Path(os.environ.get("RUBRICFLOW_BENCH_PEERS_DIR") or ROOT / "benchmarks" / ".peers")
SCRIPTS = ROOT / "benchmarks" / "peer_scripts"

# name -> the requirements pip installs into that peer's venv
PEERS: dict[str, tuple[str, ...]] = {
    "dataknobs": ("dataknobs-bots==0.6.9", "jsonschema"),
    "rubric": ("rubric==1.3.2",),
    # 2.x: a generate_fn returns the package's Pydantic models, not text
    "rubric2": ("rubric==2.0.1",),
}


class PeerError(RuntimeError):
    """A peer environment could not be made or its script failed."""


def _python(folder: Path) -> Path:
    return folder / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def installed(name: str) -> bool:
    """True when the peer's venv exists with exactly its requirements installed."""
    folder = PEERS_DIR / name
    marker = folder / "rubricflow-bench.json"
    if not marker.exists() or not _python(folder).exists():
        return False
    try:
        recorded = json.loads(marker.read_text(encoding="utf-8"))
    except ValueError:
        return False
    return bool(recorded.get("requirements") == list(PEERS[name]))


def ensure(name: str) -> tuple[Path, float]:
    """The peer's Python (its venv made and filled if needed) and the seconds setup took."""
    folder = PEERS_DIR / name
    if installed(name):
        return _python(folder), 0.0
    started = time.perf_counter()
    print(f"  setting up the {name} peer environment in {folder} ...", flush=True)
    venv.EnvBuilder(with_pip=True, clear=True).create(folder)
    python = _python(folder)
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", *PEERS[name]],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise PeerError(
            f"pip install {' '.join(PEERS[name])} into {folder} failed:\n{done.stderr[-3000:]}"
        )
    (folder / "rubricflow-bench.json").write_text(
        json.dumps({"requirements": list(PEERS[name])}), encoding="utf-8"
    )
    return python, time.perf_counter() - started


def versions(name: str) -> dict[str, str]:
    """The installed versions of the peer's requirements (as pip reports them)."""
    python = _python(PEERS_DIR / name)
    wanted = [requirement.split("==")[0].lower() for requirement in PEERS[name]]
    code = (
        "import json, sys\n"
        "from importlib.metadata import version\n"
        "print(json.dumps({n: version(n) for n in sys.argv[1:]}))"
    )
    done = subprocess.run(
        [str(python), "-c", code, *wanted], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        return {}
    result: dict[str, str] = json.loads(done.stdout)
    return result


def run_script(name: str, script: str, request: dict[str, Any], timeout: float = 1800) -> Any:
    """Run `peer_scripts/<script>` in the peer's venv with `request` as JSON on stdin; its
    last stdout line is its JSON answer."""
    python, _ = ensure(name)
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")
    }
    env["PYTHONPATH"] = str(ROOT)
    env["PYTHONHASHSEED"] = "0"
    done = subprocess.run(
        [str(python), str(SCRIPTS / script)],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        cwd=str(ROOT),
        env=env,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise PeerError(
            f"{script} in the {name} peer exited {done.returncode}:\n{done.stderr[-3000:]}"
        )
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    if not lines:
        raise PeerError(f"{script} in the {name} peer printed nothing:\n{done.stderr[-3000:]}")
    return json.loads(lines[-1])
