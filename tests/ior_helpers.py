"""Running the engine from tests, and the canary that proves a run touched nothing it did not create."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CANARY_TEXT = "canary: iolens must never touch this file\n"


@dataclass
class EngineResult:
    returncode: int
    stdout: str
    stderr: str
    doc: dict[str, Any] | None


def run_engine(
    engine: Path,
    args: list[str],
    np: int = 1,
    quiet: bool = True,
    launcher: list[str] | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 300,
) -> EngineResult:
    """Runs `iolens-bench ior ARGS` locally (--np) or under a launcher, and loads its JSON document."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        # Engine options first, so the test's own arguments end the line (e.g. a flag without its value).
        cmd = [str(engine), "ior", "--json", str(out)]
        if quiet:
            cmd.append("--quiet")
        if launcher is None:
            cmd += ["--np", str(np)]
        cmd += args
        if launcher is not None:
            cmd = [*launcher, *cmd]
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, env=env or os.environ.copy()
        )
        doc = json.loads(out.read_text()) if out.exists() else None
    return EngineResult(proc.returncode, proc.stdout, proc.stderr, doc)


def place_canary(directory: Path) -> Path:
    canary = directory / "canary.txt"
    canary.write_text(CANARY_TEXT)
    return canary


def assert_only_canary_left(directory: Path, canary: Path) -> None:
    """The run removed everything it created (files, -u directories, its ledger) and nothing else."""
    assert canary.read_text() == CANARY_TEXT
    assert sorted(p.name for p in directory.iterdir()) == [canary.name]
