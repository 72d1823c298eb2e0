"""What the monitor tests share: running `python -m iolens` from this source tree as a real process, the
engine to give it, and the shared Lustre samples (tests/data/lustre, copied from shared/data/lustre)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from iolens.engine import EngineNotFound, find_engine

from .conftest import REPO

LUSTRE_DATA = REPO / "tests" / "data" / "lustre"
# Inputs the fuzz tests (tests/faults/test_fuzz_*.py) once found failing: one directory per parser, each file
# one input, replayed by a parametrized test of that parser.
FUZZ_DATA = REPO / "tests" / "data" / "fuzz"


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


def fuzz_cases(parser: str) -> list[Path]:
    """The kept inputs of one parser (tests/data/fuzz/PARSER/*), sorted; README files are not inputs."""
    d = FUZZ_DATA / parser
    return sorted(p for p in d.iterdir() if p.is_file() and not p.name.startswith("README"))


class TooSlow(AssertionError):
    pass


@contextlib.contextmanager
def time_limit(seconds: float, what: str) -> Iterator[None]:
    """Fails (TooSlow) when the body runs longer than `seconds` instead of hanging the suite: SIGALRM
    interrupts Python code and regular expressions alike. Main thread only (as pytest runs tests)."""

    def expired(signum: int, frame: Any) -> None:
        raise TooSlow(f"{what} took more than {seconds} s (a hang, or a parse that grows too fast)")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# --- servers the monitor's outputs are checked against (Prometheus, InfluxDB) -------------------------


def server_binary(name: str, package: str) -> str:
    """A server program Debian's `package` installs: its path. Missing, the test fails in CI (.ci/run installs
    it) and is skipped elsewhere."""
    path = shutil.which(name)
    if path is None:
        if os.environ.get("CI") or os.environ.get("IOLENS_REQUIRE_MPI") == "1":
            pytest.fail(f"{name} is not installed (Debian package {package}, in .ci/run's packages)")
        pytest.skip(f"{name} is not installed (apt-get install {package})")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stop_process(proc: subprocess.Popen[Any], timeout: float = 30) -> None:
    """SIGTERM, then SIGKILL if it has not exited within `timeout` seconds."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
