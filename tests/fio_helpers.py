"""Running the engine's fio workload from tests and reading what it did: its document, fio's iolog, and what
/proc shows of the rank process while it runs (its threads, the flags of its open files)."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from .ior_helpers import EngineResult, run_engine

T = TypeVar("T")


def run_fio(engine: Path, args: list[str], np: int = 1, **kw: Any) -> EngineResult:
    return run_engine(engine, args, np=np, workload="fio", **kw)


def job(res: EngineResult, index: int = 0) -> dict[str, Any]:
    assert res.doc is not None, res.stderr
    assert res.doc["status"] == "ok", res.doc.get("error") or res.stderr
    jobs: list[dict[str, Any]] = res.doc["fio"]["jobs"]
    return jobs[index]


def iolog_ios(path: Path) -> list[tuple[str, str, int, int]]:
    """The I/Os of a fio version 2 iolog: (file, action, offset, length) in issue order."""
    lines = path.read_text().splitlines()
    assert lines[0] == "fio version 2 iolog"
    out = []
    for line in lines[1:]:
        parts = line.rsplit(" ", 3)
        if len(parts) == 4 and parts[1] in ("read", "write"):
            out.append((parts[0], parts[1], int(parts[2]), int(parts[3])))
    return out


def offsets_count(ios: list[tuple[str, str, int, int]]) -> Counter[int]:
    return Counter(off for _, _, off, _ in ios)


def rank_pids(engine_pid: int) -> list[int]:
    """The engine's rank processes: its children (`--np N` forks N ranks, even for N = 1)."""
    try:
        text = Path(f"/proc/{engine_pid}/task/{engine_pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


def thread_names(pid: int) -> list[str]:
    """The comm of every thread of a process (kernel threads working for it, such as io_uring's iou-sqp-*
    and iou-wrk-*, are threads of its group)."""
    names = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            names.append((task / "comm").read_text().strip())
        except OSError:
            continue
    return names


def open_flags(pid: int, path: Path) -> int | None:
    """The open(2) flags with which a process holds path open (/proc/PID/fdinfo); None when it does not."""
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return None
    for fd in fds:
        try:
            if os.readlink(fd) != str(path):
                continue
            for line in Path(f"/proc/{pid}/fdinfo/{fd.name}").read_text().splitlines():
                if line.startswith("flags:"):
                    return int(line.split()[1], 8)
        except OSError:
            continue
    return None


def watch_run(
    engine: Path,
    args: list[str],
    probe: Callable[[int], T | None],
    timeout: float = 60,
    to_the_end: bool = False,
) -> tuple[T | None, EngineResult]:
    """Runs the engine (one rank) and calls probe(rank pid) while it runs, until probe returns something (with
    to_the_end, until the run ends, keeping the last thing it returned); returns that and the run's result.
    The job must last long enough to be seen (a time_based run)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        cmd = [str(engine), "fio", "--json", str(out), "--quiet", "--np", "1", *args]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        seen: T | None = None
        try:
            deadline = time.monotonic() + timeout
            while proc.poll() is None and time.monotonic() < deadline and (seen is None or to_the_end):
                for pid in rank_pids(proc.pid):
                    got = probe(pid)
                    if got is not None:
                        seen = got
                        break
                time.sleep(0.005)
            stdout, stderr = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        doc = json.loads(out.read_text()) if out.exists() else None
    return seen, EngineResult(proc.returncode, stdout, stderr, doc)


def proc_cpu_s(pid: int, tid: int | None = None) -> float:
    """User + system CPU seconds of a process (or of one of its threads) so far, from /proc."""
    stat = Path(f"/proc/{pid}/task/{tid}/stat" if tid else f"/proc/{pid}/stat")
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def kernel_worker_cpu(pid: int) -> dict[str, float]:
    """CPU seconds so far of each io_uring kernel thread of a process (iou-sqp-*, iou-wrk-*), by thread id."""
    out = {}
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            if (task / "comm").read_text().startswith("iou-"):
                out[(task / "comm").read_text().strip() + "/" + task.name] = proc_cpu_s(pid, int(task.name))
        except (OSError, ValueError):
            continue
    return out
