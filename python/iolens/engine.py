"""Where the C engine binary (iolens-bench) lives.

The wheel carries the engine inside the package (iolens/_native/iolens-bench, installed there by CMake).
IOLENS_BENCH overrides that, so a developer can point at a fresh build/native/iolens-bench or tests can
put a stand-in in its place.
"""

from __future__ import annotations

import os
import subprocess
from importlib import resources
from pathlib import Path

ENV_VAR = "IOLENS_BENCH"
ENGINE_NAME = "iolens-bench"


class EngineNotFound(RuntimeError):
    """The engine binary is missing or not executable; the message says how to fix it."""


def _packaged_engine() -> Path | None:
    try:
        res = resources.files("iolens") / "_native" / ENGINE_NAME
    except (ModuleNotFoundError, TypeError):
        return None
    # An installed package is a plain directory; a zipped one could not exec the binary anyway.
    path = Path(str(res))
    return path if path.exists() else None


def find_engine() -> Path:
    """Return the path of the engine binary, or raise EngineNotFound with a helpful message."""
    override = os.environ.get(ENV_VAR)
    if override:
        path = Path(override).expanduser()
        if not path.is_file():
            raise EngineNotFound(f"{ENV_VAR}={override}: no such file")
        if not os.access(path, os.X_OK):
            raise EngineNotFound(f"{ENV_VAR}={override}: not executable")
        return path.resolve()
    path = _packaged_engine()
    if path is None:
        raise EngineNotFound(
            f"the engine binary ({ENGINE_NAME}) is not installed with this iolens package; "
            f"install with `pip install .` (not editable), or set {ENV_VAR} to a built {ENGINE_NAME}"
        )
    if not os.access(path, os.X_OK):
        raise EngineNotFound(f"{path}: not executable")
    return path


def engine_version(engine: Path | None = None) -> str:
    """The engine's own `--version` line, e.g. 'iolens-bench 0.1.0 (mpi=yes liburing=yes)'."""
    exe = engine if engine is not None else find_engine()
    try:
        out = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=30, check=False)
    except OSError as exc:
        raise EngineNotFound(f"{exe}: cannot run: {exc.strerror}") from None
    except subprocess.TimeoutExpired:
        raise EngineNotFound(f"{exe} --version did not answer in 30 s") from None
    line = out.stdout.strip().splitlines()
    if out.returncode != 0 or not line:
        raise EngineNotFound(f"{exe} --version failed (exit {out.returncode}): {out.stderr.strip()}")
    return line[0]
