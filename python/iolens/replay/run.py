"""`iolens replay run`: a kernel's plan executed by iolens-replay processes (one per rank) in a run directory
of its own, made inside --dir and removed at the end (unless --keep), also when a stop signal comes.

Safety (docs/reliability.md): the run directory is created here (a fresh name, mkdir fails if it exists),
every plan path is relative to it and checked (no absolute path, no '..': kernel.read and the executor
both refuse them), so the kernel writes only its own files; the removal is of that directory alone.
The inputs (files the original read, directories the plan lists, files it unlinks) are made before the
ranks start, by this process: with `profile_out` only the ranks run under the profiler, so the inputs are
not part of the replay's profile.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from iolens.replay.plan import RunPlan

EXE_NAME = "iolens-replay"
ENV_EXE = "IOLENS_REPLAY_EXE"
CHUNK = 1 << 20
# The longest a run may take before its ranks are stopped (a bound on every wait).
DEFAULT_TIMEOUT_S = 24 * 3600.0


class ReplayRunError(Exception):
    """The run could not be done; status 2 for bad input found before any I/O, else 1."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class RunResult:
    run_dir: Path
    ranks: int
    wall_s: float
    statuses: list[int]
    errors: list[str]
    kept: bool


def find_executor() -> Path:
    override = os.environ.get(ENV_EXE)
    if override:
        p = Path(override)
        if not (p.is_file() and os.access(p, os.X_OK)):
            raise ReplayRunError(f"{ENV_EXE}={override}: not an executable file", 2)
        return p
    try:
        p = Path(str(resources.files("iolens") / "_native" / EXE_NAME))
    except (ModuleNotFoundError, TypeError):
        p = Path("/nonexistent")
    if not p.exists():
        raise ReplayRunError(
            f"the replay executor ({EXE_NAME}) is not installed with this iolens package; install with "
            f"`pip install .` or set {ENV_EXE}",
            2,
        )
    return p


def check_dir(text: str) -> Path:
    d = Path(text)
    if not d.is_dir():
        raise ReplayRunError(f"--dir: {text}: not a directory", 2)
    if not os.access(d, os.W_OK | os.X_OK):
        raise ReplayRunError(f"--dir: {text}: not writable", 2)
    return d


def _prepare(run_dir: Path, plan: RunPlan) -> None:
    """The inputs, made unprofiled: files with their sizes (real bytes, so reads move data), the plan's
    directories and the entries of the directories it lists or unlinks from."""
    block = b"i" * CHUNK
    for name, size in sorted(plan.prepare_files.items()):
        path = run_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as f:
            left = size
            while left > 0:
                left -= f.write(block[: min(left, CHUNK)])
    for name in plan.prepare_dirs:
        (run_dir / name).mkdir(parents=True, exist_ok=True)
    for name, entries in plan.scratch.items():
        d = run_dir / name
        d.mkdir(parents=True, exist_ok=True)
        prefix = "u" if name.startswith("gone.") else "e"
        for i in range(entries):
            (d / f"{prefix}.{i}").touch()
    # The parents of every file a rank creates.
    for lines in plan.lines.values():
        for line in lines:
            if line[0] in "OF":
                rel = line.split(" ", 3)[3]
                (run_dir / rel).parent.mkdir(parents=True, exist_ok=True)


def _feed(proc: subprocess.Popen[bytes], lines: list[str], errors: list[str]) -> None:
    assert proc.stdin is not None
    try:
        for at in range(0, len(lines), 4096):
            proc.stdin.write(("\n".join(lines[at : at + 4096]) + "\n").encode())
        proc.stdin.close()
    except (BrokenPipeError, OSError) as exc:
        errors.append(f"plan not fully delivered: {exc}")


def _wait(rank: int, p: subprocess.Popen[bytes], deadline: float, timeout_s: float, errors: list[str]) -> int:
    try:
        p.wait(timeout=max(deadline - time.monotonic(), 0.1))
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait(timeout=10)
        errors.append(f"rank {rank}: stopped after the --timeout of {timeout_s:g} s")
    if p.returncode != 0:
        assert p.stderr is not None
        err = p.stderr.read(4096).decode(errors="replace").strip()
        errors.append(f"rank {rank}: " + (err or f"exit {p.returncode}"))
    return p.returncode


def run(
    plan: RunPlan,
    parent: Path,
    keep: bool = False,
    profile_out: Path | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> RunResult:
    exe = find_executor()
    run_dir = parent / f"iolens-replay-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
    run_dir.mkdir()  # exclusive: never an existing directory
    procs: list[subprocess.Popen[bytes]] = []
    errors: list[str] = []
    statuses: list[int] = []
    t0 = time.monotonic()
    try:
        _prepare(run_dir, plan)
        env: dict[str, Any] = dict(os.environ)
        if profile_out is not None:
            from iolens.profile.run import find_profile_lib, profile_vars

            env.update(profile_vars(find_profile_lib(), profile_out, False, os.environ))
        feeders = []
        t0 = time.monotonic()
        deadline = t0 + timeout_s
        # MPI ranks start together; the processes of a program that is not MPI one after another.
        groups = [sorted(plan.lines)] if plan.concurrent else [[r] for r in sorted(plan.lines)]
        for group in groups:
            started = []
            for rank in group:
                p = subprocess.Popen(
                    [str(exe)], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                    cwd=run_dir, env=env,
                )  # fmt: skip
                procs.append(p)
                started.append((rank, p))
                t = threading.Thread(target=_feed, args=(p, plan.lines[rank], errors), daemon=True)
                t.start()
                feeders.append(t)
            for rank, p in started:
                statuses.append(_wait(rank, p, deadline, timeout_s, errors))
        for t in feeders:
            t.join(timeout=10)
        wall = time.monotonic() - t0
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=10)
            if p.stderr is not None:
                p.stderr.close()
        if not keep:
            shutil.rmtree(run_dir, ignore_errors=True)
    return RunResult(run_dir, len(plan.lines), wall, statuses, errors, keep)
