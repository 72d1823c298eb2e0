"""Turn a run request into engine processes: local fork, mpirun or srun.

This module knows how to start the engine and how to read its standard error; it knows nothing of what
a workload's flags mean (they pass through untouched).
"""

from __future__ import annotations

import collections
import contextlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from iolens import interrupt, lost_node

LAUNCHERS = ("local", "mpirun", "srun")
PROGRESS_TOKEN = "IOLENS-PROGRESS "
ERROR_TOKEN = "iolens-bench: error: "
# Exit status the engine uses for bad input (nothing was done).
EXIT_BAD_INPUT = 2

ProgressCallback = Callable[[dict[str, Any]], None]
LineCallback = Callable[[str], None]
# Called with the engine's pid once it has exited and before it is reaped: its /proc/PID/io then holds the
# I/O of every rank it forked and reaped, which a monitor sampling at intervals would otherwise never see
# for a run shorter than one interval.
ExitCallback = Callable[[int], None]


class LaunchError(Exception):
    """The request cannot be launched (bad combination, launcher missing); the message is for the user."""


@dataclass(frozen=True)
class MpiJob:
    """This process is one rank of an MPI job (started by mpirun, srun, ...): which, of how many."""

    rank: int
    size: int | None  # None when the launcher's variables do not say (PMIx alone)
    source: str  # the variable that said so, for messages


# (rank variable, size variable) of each launcher; the same list the engine reads (native/comm/comm.c).
_JOB_VARS = (
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),  # Open MPI mpirun / prterun
    ("PMI_RANK", "PMI_SIZE"),  # MPICH / Intel MPI hydra, srun --mpi=pmi2
    ("MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE"),  # MVAPICH mpirun_rsh
    ("PMIX_RANK", None),  # srun --mpi=pmix, prterun
    ("ALPS_APP_PE", None),  # Cray aprun
)


def _int_env(name: str | None) -> int | None:
    value = os.environ.get(name) if name else None
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def mpi_job() -> MpiJob | None:
    """The MPI job this process is a rank of, from the launcher's environment; None for a plain start.

    A Slurm batch script sets SLURM_PROCID too, but is not a launch: only a job step of several tasks
    (SLURM_STEP_ID with SLURM_STEP_NUM_TASKS > 1, set by srun) counts, as in the engine.
    """
    for rank_var, size_var in _JOB_VARS:
        rank = _int_env(rank_var)
        if rank is not None:
            return MpiJob(rank, _int_env(size_var), f"{rank_var}={rank}")
    if os.environ.get("SLURM_STEP_ID") is not None:
        rank, size = _int_env("SLURM_PROCID"), _int_env("SLURM_STEP_NUM_TASKS")
        if rank is not None and size is not None and size > 1:
            return MpiJob(rank, size, f"SLURM_PROCID={rank} of a {size}-task srun step")
    return None


@dataclass(frozen=True)
class RunRequest:
    workload: str
    args: Sequence[str] = ()
    np: int = 1
    nodes: int | None = None
    launcher: str = "local"
    launcher_args: Sequence[str] = ()
    # Under mpirun/srun, a command each rank runs with the engine's command after it (--monitor's per-node
    # sampler, monitor/node_wrap.py); the local launcher does not use it.
    wrapper: Sequence[str] = ()
    # Set when iolens itself is one rank of an MPI job: the engine runs as that rank, with no launcher.
    in_job: MpiJob | None = None

    def validate(self) -> None:
        if self.launcher not in LAUNCHERS:
            raise LaunchError(f"--launcher: unknown launcher {self.launcher!r} (use {', '.join(LAUNCHERS)})")
        if self.np < 1:
            raise LaunchError(f"--np: must be at least 1, got {self.np}")
        if self.nodes is not None:
            if self.nodes < 1:
                raise LaunchError(f"--nodes: must be at least 1, got {self.nodes}")
            if self.launcher == "local" and self.nodes != 1:
                raise LaunchError(
                    "--nodes: the local launcher runs on this node only; use --launcher mpirun or srun"
                )
            if self.nodes > self.np:
                raise LaunchError(f"--nodes: {self.nodes} nodes need at least as many ranks (--np {self.np})")

    @property
    def uses_mpi(self) -> bool:
        return self.launcher != "local"


@dataclass
class RunOutcome:
    returncode: int
    command: list[str]
    # Messages of the engine's "iolens-bench: error: ..." lines, without the prefix.
    errors: list[str] = field(default_factory=list)
    # The last lines of other standard error output, for a diagnosis when no document was written.
    stderr_tail: list[str] = field(default_factory=list)
    # True when the run was stopped by the --check pass before any launcher started.
    stopped_by_check: bool = False
    # The stop signal (SIGINT, SIGTERM, SIGHUP) that iolens received while the run went on, if any.
    signal: int | None = None
    # False when a stop signal came before the launcher could be started: nothing ran.
    started: bool = True


def ranks_per_node(np: int, nodes: int) -> int:
    return math.ceil(np / nodes)


def detect_mpi_flavor(mpirun: str = "mpirun") -> str:
    """'openmpi' or 'mpich': the two spell "ranks per node" differently."""
    try:
        out = subprocess.run([mpirun, "--version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "openmpi"
    text = (out.stdout + out.stderr).lower()
    if "hydra" in text or "mpich" in text or "intel(r) mpi" in text:
        return "mpich"
    return "openmpi"


def launcher_prefix(req: RunRequest, mpi_flavor: str = "openmpi") -> list[str]:
    """The launcher part of a request's command line (mpirun or srun with the ranks, their layout over the
    nodes and the launcher arguments); empty for the local launcher. Any program can follow it."""
    req.validate()
    if req.launcher == "local":
        return []
    if req.launcher == "mpirun":
        cmd = ["mpirun", "-np", str(req.np)]
        if req.workload == "fio" and mpi_flavor == "openmpi" and "--bind-to" not in req.launcher_args:
            # A fio rank runs its numjobs instances as threads; Open MPI binds each rank to one core by
            # default (with two ranks or fewer), which would put them all on that core. fio pins nothing.
            cmd += ["--bind-to", "none"]
        if req.nodes is not None:
            ppn = ranks_per_node(req.np, req.nodes)
            if mpi_flavor == "mpich":
                cmd += ["-ppn", str(ppn)]
            else:
                # Open MPI: -N/--npernode would also work, but ppr states the layout without a hostfile trick.
                cmd += ["--map-by", f"ppr:{ppn}:node"]
        return [*cmd, *req.launcher_args]
    # srun
    cmd = ["srun", "-n", str(req.np)]
    if req.nodes is not None:
        # -N alone lets Slurm fill the first node's CPUs before the next (4 ranks on 2 nodes of 4 CPUs run 3
        # and 1): at most P per node spreads them as mpirun's ppr does (-n stays the total).
        cmd += ["-N", str(req.nodes), f"--ntasks-per-node={ranks_per_node(req.np, req.nodes)}"]
    return [*cmd, *req.launcher_args]


def build_command(req: RunRequest, engine: Path | str, mpi_flavor: str = "openmpi") -> list[str]:
    """The full command line for a request (launcher, its options, the engine and its arguments)."""
    eng = [str(engine), req.workload, *req.args]
    if req.in_job is not None:
        return [*eng, "--comm", "mpi"]
    if req.launcher == "local":
        req.validate()
        return [*eng, "--np", str(req.np)]
    return [*launcher_prefix(req, mpi_flavor), *req.wrapper, *eng, "--comm", "mpi"]


def clients_command(
    launcher: str,
    hosts: Sequence[str],
    commands: Sequence[Sequence[str]],
    launcher_args: Sequence[str] = (),
    mpi_flavor: str = "openmpi",
    multi_prog: Path | None = None,
) -> list[str]:
    """One rank per host, rank i on hosts[i] running commands[i] (`iolens fio --client`). mpirun: one
    application context per rank (`-np 1 --host H:N cmd : ...`, N = how often H is listed, the slots the
    contexts on H take together). srun: `--multi-prog` (the file, written here) with
    `--distribution=arbitrary`, which places task i on line i of the file SLURM_HOSTFILE names (the caller
    sets it)."""
    if launcher == "mpirun":
        # A client's rank runs its numjobs instances as threads, as a fio server would, on every CPU of its
        # host: Open MPI would bind it to one core (its default with one or two ranks).
        unbound = mpi_flavor == "openmpi" and "--bind-to" not in launcher_args
        cmd = ["mpirun", *(["--bind-to", "none"] if unbound else []), *launcher_args]
        for i, (host, command) in enumerate(zip(hosts, commands, strict=True)):
            place = ["-hosts", host] if mpi_flavor == "mpich" else ["--host", f"{host}:{hosts.count(host)}"]
            cmd += [*([":"] if i else []), "-np", "1", *place, *command]
        return cmd
    if launcher == "srun" and multi_prog is not None:
        lines = [f"{i} " + " ".join(map(_multi_prog_word, command)) for i, command in enumerate(commands)]
        multi_prog.write_text("\n".join(lines) + "\n", encoding="utf-8")
        nodelist = f"--nodelist={','.join(dict.fromkeys(hosts))}"
        place = ["-n", str(len(hosts)), nodelist, "--ntasks-per-node=1", "--distribution=arbitrary"]
        return ["srun", *place, *launcher_args, "--multi-prog", str(multi_prog)]
    raise LaunchError(f"--launcher {launcher}: runs no clients (use mpirun or srun)")


def _multi_prog_word(word: str) -> str:
    """A word of srun's --multi-prog file: quoted when it holds a blank (that file splits at blanks)."""
    return f'"{word}"' if not word or any(c.isspace() or c in "'\"" for c in word) else word


def check_command(req: RunRequest, engine: Path | str) -> list[str]:
    """Validate-only run of the engine on this node: same flags, no I/O, no launcher.

    --comm local is explicit because inside a batch job the engine could otherwise take the job's
    environment for an MPI launch.
    """
    return [str(engine), req.workload, *req.args, "--np", str(req.np), "--comm", "local", "--check"]


def parse_progress(line: str) -> dict[str, Any] | None:
    """The JSON object of an IOLENS-PROGRESS line (launchers may prefix a rank label), else None."""
    idx = line.find(PROGRESS_TOKEN)
    if idx < 0:
        return None
    try:
        obj = json.loads(line[idx + len(PROGRESS_TOKEN) :])
    except json.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None


def parse_error(line: str) -> str | None:
    idx = line.find(ERROR_TOKEN)
    if idx < 0:
        return None
    return line[idx + len(ERROR_TOKEN) :].strip()


def _passthrough(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def _stream(
    cmd: list[str],
    on_progress: ProgressCallback | None,
    on_line: LineCallback,
    stdout: IO[str] | None = None,
    on_exit: ExitCallback | None = None,
    launcher: str = "local",
    engine: Path | str | None = None,
    extra_env: dict[str, str] | None = None,
) -> RunOutcome:
    outcome = RunOutcome(returncode=-1, command=cmd)
    tail: collections.deque[str] = collections.deque(maxlen=40)
    try:
        # A process group of its own: a signal to our group (a terminal's Ctrl-C, `kill -- -PGID`) reaches it
        # once, through interrupt.STOP, not twice (mpirun takes a second SIGINT as "kill everything now").
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
            env={**launch_environment(launcher), **(extra_env or {})},
            **_own_process_group(),
        )
    except FileNotFoundError:
        raise LaunchError(f"{cmd[0]}: command not found") from None
    except PermissionError:
        raise LaunchError(f"{cmd[0]}: permission denied") from None
    forward = _forwarder(proc, launcher, engine)
    watch = lost_node.Watch(proc, launcher)
    try:
        with interrupt.STOP.forwarding(forward, kill_group=proc.pid):
            assert proc.stderr is not None
            for raw in proc.stderr:
                line = raw.rstrip("\n")
                watch.see(line)
                progress = parse_progress(line)
                if progress is not None:
                    if on_progress is not None:
                        on_progress(progress)
                    continue
                message = parse_error(line)
                if message is not None:
                    # Held back: the caller prints it once, in its own words, instead of every rank's copy.
                    if message not in outcome.errors:
                        outcome.errors.append(message)
                    continue
                tail.append(line)
                on_line(line)
            if on_exit is not None:
                _before_reaping(proc.pid, on_exit)
            outcome.returncode = proc.wait()
    except KeyboardInterrupt:
        # Only when interrupt.STOP is not handling signals (iolens used as a library).
        _stop(proc)
        raise
    finally:
        watch.close()
    if watch.message is not None:
        outcome.errors.append(watch.message)
    outcome.stderr_tail = list(tail)
    outcome.signal = interrupt.STOP.signum
    return outcome


def _own_process_group() -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        return {"process_group": 0}
    return {"preexec_fn": os.setpgrp}  # pragma: no cover (Python 3.10)


def launch_environment(launcher: str) -> dict[str, str]:
    """The launched process's environment: ours, plus (local) our pid, so the engine stops (by SIGTERM) if
    iolens dies. (Open MPI's odls_base_sigkill_timeout is left alone: mpirun waits all of it after an abort
    even when the ranks are long gone.)"""
    env = dict(os.environ)
    if launcher == "local":
        env["IOLENS_FRONT_END_PID"] = str(os.getpid())
    return env


# Under mpirun, how long a stop signal waits for the engine ranks on this node to appear (mpirun just
# started) before it goes to mpirun instead (every rank on other nodes): mpirun signalled while it is still
# launching can hang.
RANKS_WAIT_S = 3.0


def _forwarder(proc: subprocess.Popen[str], launcher: str, engine: Path | str | None) -> interrupt.Forward:
    """How a stop signal reaches the ranks. Local: the engine, which hands it to the ranks it forked. srun:
    SIGTERM to srun, which signals every task (a single SIGINT would only make srun print its status).
    mpirun: the engine ranks on this node directly (mpirun would SIGKILL them a second after its own
    SIGTERM); ranks on other nodes learn of it from them. With no engine rank on this node within
    RANKS_WAIT_S of the signal, SIGTERM to mpirun."""

    def forward(signum: int) -> bool:
        if proc.poll() is not None:
            return True
        if launcher == "local":
            proc.send_signal(signum)
            return True
        if launcher == "mpirun" and engine is not None:
            ranks = engine_descendants(proc.pid, engine)
            if ranks:
                for pid in ranks:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signum)
                return True
            since = interrupt.STOP.received_at
            if since is not None and time.monotonic() - since < RANKS_WAIT_S:
                return False
        proc.send_signal(signal.SIGTERM)
        return True

    return forward


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as f:
                stat = f.read()
        except OSError:
            continue
        # The command name is in parentheses and may itself hold spaces or parentheses.
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(entry))
    return children


def child_pids(pid: int) -> list[int]:
    """The processes whose parent is `pid` (under mpirun: its ranks on this node)."""
    return list(_children_map().get(pid, []))


def engine_descendants(root: int, engine: Path | str) -> list[int]:
    """Processes under `root` (at any depth) that run the engine binary."""
    target = os.path.realpath(engine)
    children = _children_map()
    found: list[int] = []
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        try:
            if os.readlink(f"/proc/{pid}/exe") == target:
                found.append(pid)
        except OSError:
            continue
    return found


def _before_reaping(pid: int, on_exit: ExitCallback) -> None:
    """Wait for the child to exit, leaving it a zombie (WNOWAIT), and call on_exit(pid) while it is one."""
    try:
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    except ChildProcessError:
        return  # already reaped (nothing of it is left to read)
    on_exit(pid)


def _stop(proc: subprocess.Popen[str]) -> None:
    """Give the engine (or the launcher, which forwards it) a chance to clean up, then insist."""
    # A Ctrl-C at the terminal reached the child too (same process group): let it act on that one
    # before sending it another, which could cut its cleanup short.
    try:
        proc.wait(timeout=5.0)
        return
    except subprocess.TimeoutExpired:
        pass
    for sig, wait_s in ((signal.SIGINT, 10.0), (signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        if proc.poll() is not None:
            return
        proc.send_signal(sig)
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def precheck(req: RunRequest, engine: Path | str) -> RunOutcome:
    cmd = check_command(req, engine)
    try:
        out = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
    except OSError as exc:
        raise LaunchError(f"{engine}: cannot run: {exc.strerror}") from None
    outcome = RunOutcome(returncode=out.returncode, command=cmd)
    for line in out.stderr.splitlines():
        message = parse_error(line)
        if message is not None:
            outcome.errors.append(message)
        else:
            outcome.stderr_tail.append(line)
    return outcome


def run(
    req: RunRequest,
    engine: Path | str,
    *,
    on_progress: ProgressCallback | None = None,
    on_line: LineCallback = _passthrough,
    stdout: IO[str] | None = None,
    on_exit: ExitCallback | None = None,
) -> RunOutcome:
    """Run the request to completion, streaming the engine's standard error.

    The engine's standard output goes to `stdout` (a file open for writing), or to ours when None.

    Progress lines go to on_progress, the engine's error lines are collected in the outcome, other lines
    go to on_line (the user's standard error by default); on_exit(pid) is called once the launched process
    has exited, before it is reaped. Under MPI the flags are first checked by one
    local engine process, so a typo gives one clean message and no launcher starts.
    """
    req.validate()
    flavor = "openmpi"
    if req.uses_mpi:
        launcher = req.launcher
        if shutil.which(launcher) is None:
            raise LaunchError(f"--launcher {launcher}: {launcher} not found on PATH")
        checked = precheck(req, engine)
        if checked.returncode != 0:
            checked.stopped_by_check = True
            return checked
        if launcher == "mpirun" and req.nodes is not None:
            flavor = detect_mpi_flavor()
    cmd = build_command(req, engine, flavor)
    if interrupt.STOP.stopping_runs:
        # A stop signal came before anything started (while the flags were checked, say): nothing is started.
        # A cleanup run after a stop is shielded from it and still starts.
        return RunOutcome(returncode=0, command=cmd, signal=interrupt.STOP.signum, started=False)
    return _stream(cmd, on_progress, on_line, stdout, on_exit, req.launcher, engine)


def run_command(
    cmd: list[str],
    launcher: str,
    engine: Path | str,
    extra_env: dict[str, str] | None = None,
    on_line: LineCallback = _passthrough,
) -> RunOutcome:
    """Run a launcher command built elsewhere (clients_command) to completion, as run() does."""
    if shutil.which(cmd[0]) is None:
        raise LaunchError(f"--launcher {launcher}: {cmd[0]} not found on PATH")
    if interrupt.STOP.stopping_runs:
        return RunOutcome(returncode=0, command=cmd, signal=interrupt.STOP.signum, started=False)
    return _stream(cmd, None, on_line, None, None, launcher, engine, extra_env)
