"""Running the engine from tests (or a stand-in for it), and the canary that proves a run touched nothing it
did not create."""

from __future__ import annotations

import ctypes
import json
import mmap as mm
import os
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest

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
    workload: str = "ior",
) -> EngineResult:
    """Runs `iolens-bench WORKLOAD ARGS` locally (--np) or under a launcher, and loads its JSON document."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        # Engine options first, so the test's own arguments end the line (e.g. a flag without its value).
        cmd = [str(engine), workload, "--json", str(out)]
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


@contextmanager
def long_write(engine: Path, json_out: Path, path: Path, deadline_s: int) -> Iterator[subprocess.Popen[str]]:
    """Starts a write by 2 local ranks, a file each, that lasts until the -D deadline (8 GiB per rank of 4 KiB
    transfers), for a test to interrupt; its document goes to json_out. Kills it if the test leaves first."""
    proc = subprocess.Popen(
        [
            str(engine),
            "ior",
            "--np",
            "2",
            "--json",
            str(json_out),
            "--quiet",
            "-F",
            "-t",
            "4k",
            "-b",
            "8g",
            "-w",
            "-D",
            str(deadline_s),
            "-o",
            str(path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()


def stand_in_engine(directory: Path, script: str, doc: dict[str, Any]) -> dict[str, str]:
    """Environment in which `iolens` runs `script` (a Python stand-in for the engine, `#!{python}` its first
    line) as its engine: FAKE_DOC holds `doc`, the document it is to write, and FAKE_LOG is where it may log
    its arguments."""
    exe = directory / "iolens-bench"
    exe.write_text(script.replace("{python}", sys.executable))
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    doc_path = directory / "doc.json"
    doc_path.write_text(json.dumps(doc))
    return dict(
        os.environ,
        IOLENS_BENCH=str(exe),
        FAKE_DOC=str(doc_path),
        FAKE_LOG=str(directory / "calls.log"),
        COLUMNS="200",
    )


def place_canary(directory: Path) -> Path:
    canary = directory / "canary.txt"
    canary.write_text(CANARY_TEXT)
    return canary


def assert_only_canary_left(directory: Path, canary: Path) -> None:
    """The run removed everything it created (files, -u directories, its ledger) and nothing else."""
    assert canary.read_text() == CANARY_TEXT
    assert sorted(p.name for p in directory.iterdir()) == [canary.name]


def resident_bytes(path: Path) -> int:
    """Bytes of the file in the page cache now, from the kernel (mmap + mincore, as fincore does)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    c = ctypes
    libc.mmap.argtypes = [c.c_void_p, c.c_size_t, c.c_int, c.c_int, c.c_int, c.c_long]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    size = path.stat().st_size
    if size == 0:
        return 0
    page = mm.PAGESIZE
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = libc.mmap(None, size, mm.PROT_READ, mm.MAP_SHARED, fd, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), f"mmap {path}")
        try:
            vec = ctypes.create_string_buffer((size + page - 1) // page)
            if libc.mincore(addr, size, vec) != 0:
                raise OSError(ctypes.get_errno(), f"mincore {path}")
            pages = sum(b & 1 for b in vec.raw)
        finally:
            libc.munmap(addr, size)
    finally:
        os.close(fd)
    return min(pages * page, size)


@cache
def engine_version(engine: Path) -> str:
    """The engine's `--version` line (it says which optional libraries the engine was built with)."""
    return subprocess.run([str(engine), "--version"], capture_output=True, text=True, timeout=60).stdout


def require_engine_feature(engine: Path, feature: str, header: Path) -> None:
    """Skips a test whose backend the engine lacks (`feature=no` in its --version line); fails it when the
    library's header is installed with MPI, as CI has it: there the backend must have been built."""
    if f"{feature}=yes" in engine_version(engine):
        return
    if header.exists() and "mpi=yes" in engine_version(engine):
        pytest.fail(f"{header} is installed but the engine was built without {feature}")
    pytest.skip(f"the engine was built without {feature}")


def run_mpirun(engine: Path, env: dict[str, str], np: int, args: list[str]) -> EngineResult:
    """`mpirun --oversubscribe -np NP iolens-bench ior ARGS` (env: the mpi_env fixture's)."""
    return run_engine(engine, args, launcher=["mpirun", "--oversubscribe", "-np", str(np)], env=env)


def io500_exe_and_scores(result_txt: Path) -> tuple[dict[str, str], dict[str, str]]:
    """The `exe` and `score` line of every phase section of an io500 result.txt, by phase."""
    exe: dict[str, str] = {}
    score: dict[str, str] = {}
    section = ""
    for line in result_txt.read_text().splitlines():
        if line.startswith("["):
            section = line.strip("[]")
        elif line.startswith(("exe ", "score ")):
            (exe if line.startswith("exe") else score)[section] = line.split("= ", 1)[1]
    return exe, score
