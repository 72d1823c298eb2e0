"""What the monitor tests share: running `python -m iolens` from this source tree as a real process, the
engine to give it, and the shared Lustre samples (tests/data/lustre, copied from shared/data/lustre)."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest

from iolens.engine import EngineNotFound, find_engine

from .conftest import REPO

LUSTRE_DATA = REPO / "tests" / "data" / "lustre"


def sample_text(name: str) -> str:
    return (LUSTRE_DATA / name).read_text()


def iolens_env(**extra: str) -> dict[str, str]:
    """The environment for `python -m iolens` running this source tree's code."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "python"), env.get("PYTHONPATH")]))
    env.update(extra)
    return env


def run_iolens(args: list[str], timeout: float = 120, **kw: Any) -> subprocess.CompletedProcess[str]:
    env = kw.pop("env", None) or iolens_env()
    return subprocess.run(
        [sys.executable, "-m", "iolens", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
        **kw,
    )


def engine_path() -> Path:
    """An engine binary: $IOLENS_BENCH or the installed package's, else the one installed in this Python's
    site-packages or built in build/native (the source tree has none of its own); skips when there is
    none."""
    try:
        return find_engine()
    except EngineNotFound:
        pass
    for cand in (
        Path(sysconfig.get_paths()["purelib"]) / "iolens" / "_native" / "iolens-bench",
        REPO / "build" / "native" / "iolens-bench",
    ):
        if cand.is_file() and os.access(cand, os.X_OK):
            return cand
    pytest.skip("no iolens-bench engine built or installed")
