"""`python -m iolens.monitor.node_wrap --dir DIR [--interval S] [--tag T] -- ENGINE ARGS…`: how `--monitor`
samples every node of an MPI run (docs/monitor.md "Which nodes").

Under `--launcher mpirun|srun` the launcher starts this wrapper in place of each rank's engine. On each node,
the rank that is local rank 0 (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID, PMIX_LOCAL_RANK …)
samples its own node: it writes the monitor's JSON-lines stream to DIR/monitor-HOST[-TAG].jsonl (DIR is the
run's temporary directory, under IOLENS_TMPDIR: a directory every node shares) from before its engine starts
to just after it ends, and runs the engine as its child, passing signals on and exiting as the engine did.
Every other rank replaces itself with its engine at once (exec): nothing of the wrapper stays behind.

Monitoring never costs the benchmark its run: a node that cannot write its stream (DIR not shared, disk full)
says so once on standard error and runs its engine unsampled.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any, NoReturn

from iolens.monitor.schedule import MonitorRequest

MODULE = "iolens.monitor.node_wrap"
PREFIX = "iolens node monitor"
# Where launchers say which rank of its node a process is, in the order they are looked at.
LOCAL_RANK_VARS = (
    "OMPI_COMM_WORLD_LOCAL_RANK",  # Open MPI
    "MPI_LOCALRANKID",  # MPICH (Hydra), Intel MPI
    "SLURM_LOCALID",  # srun
    "PMIX_LOCAL_RANK",  # any PMIx launcher
    "MV2_COMM_WORLD_LOCAL_RANK",  # MVAPICH2
    "PALS_LOCAL_RANKID",  # HPE Cray PALS
)
# Signals a launcher sends to stop or poke its ranks: handed on to the engine unchanged.
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
_PR_SET_PDEATHSIG = 1
# The stream files in the run's directory (nodes.py reads them back).
PATTERN = "monitor-*.jsonl"


def command(directory: Path, req: MonitorRequest, tag: str | None = None) -> list[str]:
    """The prefix that goes before the engine's command under a launcher (ends with `--`)."""
    cmd = [sys.executable, "-m", MODULE, "--dir", str(directory)]
    if req.interval_s is not None:
        cmd += ["--interval", repr(req.interval_s)]
    if tag:
        cmd += ["--tag", tag]
    return [*cmd, "--"]


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", text) or "_"


def file_name(host: str, tag: str | None = None) -> str:
    """`monitor-HOST.jsonl`, or `monitor-HOST-TAG.jsonl` for one of several launches (an IO500 phase)."""
    return f"monitor-{_safe(host)}" + (f"-{_safe(tag)}" if tag else "") + ".jsonl"


def create(path: Path) -> IO[str] | None:
    """The stream file, created for writing; None when another process already created it (another rank of
    the node got there first). OSError when it cannot be created."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    except FileExistsError:
        return None
    return os.fdopen(fd, "w", encoding="utf-8")


def local_rank(env: Mapping[str, str]) -> tuple[str, int] | None:
    """(variable, value) of the first launcher variable that gives this process's rank on its node."""
    for name in LOCAL_RANK_VARS:
        value = env.get(name, "").strip()
        if value.isdigit():
            return name, int(value)
    return None


def _say(message: str) -> None:
    with contextlib.suppress(OSError):
        sys.stderr.write(f"{PREFIX} on {socket.gethostname()}: {message}\n")
        sys.stderr.flush()


def _exec(cmd: Sequence[str]) -> NoReturn:
    try:
        os.execvp(cmd[0], list(cmd))
    except OSError as exc:
        _say(f"cannot run {cmd[0]}: {exc.strerror}")
        os._exit(127)


def _die_with_parent() -> None:
    # If the launcher kills the wrapper outright (SIGKILL), the engine must not run on alone.
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class _Out:
    """The node's stream: records written and flushed one by one; after a write fails, nothing more is
    written and the failure is said once (the run goes on)."""

    def __init__(self, f: IO[str], path: Path) -> None:
        self.f = f
        self.path = path
        self.broken = False

    def write(self, record: dict[str, Any]) -> None:
        from iolens.monitor import stream

        if self.broken:
            return
        try:
            self.f.write(stream.dumps(record) + "\n")
            self.f.flush()
        except (OSError, ValueError) as exc:
            self.broken = True
            _say(f"cannot write {self.path}: {exc}; the rest of the run is not sampled")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.f.close()


def run_sampled(cmd: Sequence[str], out: _Out, req: MonitorRequest, rank: tuple[str, int] | None) -> int:
    """Sample this node while the engine runs as our child; the engine's exit status (negative: the signal
    that ended it)."""
    from iolens.monitor import stream
    from iolens.monitor.sampler import SOURCES, Sampler, SourceOptions, make_collectors

    # Every rank of this node is a child of the launcher's process here (mpirun, orted, slurmstepd): its tree
    # is the node's ranks, this wrapper left out.
    watch = os.getppid()
    sampler = Sampler(make_collectors(SOURCES, SourceOptions(pid_trees=[watch])))
    first, events = sampler.sample()
    node = {
        "local_rank": {"variable": rank[0], "value": rank[1]} if rank is not None else None,
        "watching": watch,
        "command": list(cmd),
    }
    out.write(stream.header(first["time"], req.describe(), sampler.availability(), node=node))
    for ev in events:
        out.write(ev)
    out.write(first)
    try:
        child = subprocess.Popen(list(cmd), preexec_fn=_die_with_parent)  # noqa: PLW1509 - no thread runs yet
    except OSError as exc:
        _say(f"cannot run {cmd[0]}: {exc.strerror}")
        return 127

    def forward(signum: int, _frame: Any) -> None:
        with contextlib.suppress(OSError):
            os.kill(child.pid, signum)

    for sig in FORWARDED:
        signal.signal(sig, forward)

    def loop() -> None:
        if not sampler.wait(req.schedule(0.0)):
            sampler.run(req.schedule, out.write, out.write)

    thread = threading.Thread(target=loop, name="iolens-node-monitor", daemon=True)
    thread.start()
    try:
        # Exited but not reaped: its /proc/PID/io still holds everything it did, for one more sample.
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
        sampler.take(out.write, out.write)
    except ChildProcessError:
        pass
    status = child.wait()
    sampler.stop()
    thread.join()
    sampler.take(out.write, out.write)
    skipped = {c.name: c.skipped for c in sampler.collectors if c.skipped}
    end: dict[str, Any] = {"type": "end", "time": round(time.time(), 6), "samples": sampler.seq}
    if skipped:
        end["skipped_lines"] = skipped
    out.write(end)
    return status


def _usage(message: str) -> NoReturn:
    _say(f"{message} (usage: python -m {MODULE} --dir DIR [--interval S] [--tag T] -- COMMAND ...)")
    sys.exit(2)


def _args(argv: Sequence[str]) -> tuple[Path, MonitorRequest, str | None, list[str]]:
    args = list(argv)
    if "--" not in args:
        _usage("no command after --")
    split = args.index("--")
    opts, cmd = args[:split], args[split + 1 :]
    if not cmd:
        _usage("no command after --")
    values: dict[str, str] = {}
    i = 0
    while i < len(opts):
        if opts[i] not in ("--dir", "--interval", "--tag") or i + 1 >= len(opts):
            _usage(f"unexpected argument {opts[i]!r}")
        values[opts[i]] = opts[i + 1]
        i += 2
    if "--dir" not in values:
        _usage("--dir is required")
    interval = None
    if "--interval" in values:
        try:
            interval = float(values["--interval"])
        except ValueError:
            _usage(f"--interval: expected seconds, got {values['--interval']!r}")
        if not interval > 0:
            _usage(f"--interval: must be more than zero, got {values['--interval']!r}")
    return Path(values["--dir"]), MonitorRequest(interval), values.get("--tag"), cmd


def main(argv: Sequence[str]) -> int:
    directory, req, tag, cmd = _args(argv)
    rank = local_rank(os.environ)
    if rank is not None and rank[1] != 0:
        _exec(cmd)
    host = socket.gethostname()
    path = directory / file_name(host, tag)
    try:
        # Exclusive: without a local-rank variable the first rank of the node to get here samples it.
        f = create(path)
    except OSError as exc:
        _say(f"cannot write {path}: {exc.strerror or exc} (IOLENS_TMPDIR must name a directory every node "
             "shares); this node is not sampled")  # fmt: skip
        _exec(cmd)
    if f is None:
        _exec(cmd)
    out = _Out(f, path)
    try:
        status = run_sampled(cmd, out, req, rank)
    finally:
        out.close()
    if status < 0:
        # Ended by a signal: end the same way, so the launcher sees what the engine did.
        with contextlib.suppress(OSError, ValueError):
            signal.signal(-status, signal.SIG_DFL)
            os.kill(os.getpid(), -status)
        return 128 - status
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
