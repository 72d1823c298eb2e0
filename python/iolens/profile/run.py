"""`iolens profile -- CMD ARGS...`: run a program (locally, or under mpirun or srun) with the profiler
runtime preloaded, then report the logs it wrote.

The program must see what it would see without iolens: the same arguments, standard streams, working
directory and environment (plus the profiler's variables), and iolens exits with the program's status.
The launcher itself is never profiled: with mpirun/srun the variables go to the ranks through the
launcher's own options, not through the launcher's environment.

A program that cannot be started is refused before anything is created (127 or 126, as a shell says); a
signal that ends the run (SIGINT, SIGTERM, SIGHUP) is passed on to the program, which is then waited for
(and killed after IOLENS_PROFILE_KILL_AFTER seconds when it does not end), and the logs it wrote are still
stored and reported (interrupt.py; docs/reliability.md).
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from rich.console import Console
from rich.text import Text

from iolens import launch
from iolens.profile.interrupt import Interruption, KillAfterError, RunSignals, kill_after_s
from iolens.profile.job import load_jobs
from iolens.profile.joblog import JOB_SUFFIX
from iolens.profile.reader import LOG_SUFFIXES, ProfileLogError, log_stem
from iolens.profile.report import build, print_report

ENV_LIB = "IOLENS_PROFILE_LIB"
LIB_NAME = "libiolens-profile.so"
ENV_DIR = "IOLENS_PROFILE_DIR"
ENV_TRACE = "IOLENS_TRACE"
ENV_EXCLUDE = "IOLENS_PROFILE_EXCLUDE"
ENV_JOB_ID = "IOLENS_JOB_ID"
ENV_LOG_DIR = "IOLENS_LOG_DIR"
# The runtime takes the job id from the batch system when there is one (docs/profile-log.md).
SCHEDULER_JOB_IDS = ("SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID")


class ProfileLibNotFound(RuntimeError):
    """The runtime library is missing; the message says how to fix it."""


class ProfileRunError(Exception):
    """The request cannot be run (bad output directory, launcher missing); the message is for the user."""


class ProgramNotRunnable(Exception):
    """The command cannot be started (not found, not executable): a shell's status for it, 127 or 126."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def _packaged_lib() -> Path | None:
    try:
        res = resources.files("iolens") / "_native" / LIB_NAME
    except (ModuleNotFoundError, TypeError):
        return None
    path = Path(str(res))
    return path if path.exists() else None


def find_profile_lib() -> Path:
    """The runtime library: IOLENS_PROFILE_LIB, else the one installed in the package."""
    override = os.environ.get(ENV_LIB)
    if override:
        path = Path(override).expanduser()
        if not path.is_file():
            raise ProfileLibNotFound(f"{ENV_LIB}={override}: no such file")
        if not os.access(path, os.R_OK):
            raise ProfileLibNotFound(f"{ENV_LIB}={override}: not readable")
        return path.resolve()
    path = _packaged_lib()
    if path is None:
        raise ProfileLibNotFound(
            f"the profiler runtime ({LIB_NAME}) is not installed with this iolens package; install with "
            f"`pip install .` (not editable), or set {ENV_LIB} to a built {LIB_NAME}"
        )
    return path


@dataclass
class ProfileRequest:
    command: list[str]
    trace: bool = False
    out: Path | None = None
    launcher: str = "local"
    np: int = 1
    launcher_args: list[str] = field(default_factory=list)
    report: bool = True
    # The report counts code and libraries (/usr, site-packages, .so, ...) as data (docs/profile.md).
    all_files: bool = False


def new_out_dir(parent: Path, now: float | None = None) -> Path:
    """A new directory iolens-profile-YYYYMMDD-HHMMSS in parent (-2, -3, ... when that name is taken)."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    base = parent / f"iolens-profile-{stamp}"
    path, n = base, 1
    while True:
        try:
            path.mkdir()
            return path
        except FileExistsError:
            n += 1
            path = base.with_name(f"{base.name}-{n}")


def prepare_out_dir(out: Path | None, cwd: Path, created: list[Path] | None = None) -> Path:
    """The logs' directory, absolute (the program may change its working directory), created if needed.
    The directories this call created are appended to `created`, deepest last."""
    made = created if created is not None else []
    if out is None:
        try:
            path = new_out_dir(cwd).resolve()
        except OSError as exc:
            raise ProfileRunError(f"cannot create a profile directory in {cwd}: {exc.strerror}") from None
        made.append(path)
        return path
    path = (cwd / out).resolve() if not out.is_absolute() else out
    if path.exists() and not path.is_dir():
        raise ProfileRunError(f"--out: {out} exists and is not a directory")
    missing = [p for p in [path, *path.parents] if not p.exists()]
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ProfileRunError(f"--out: cannot create {out}: {exc.strerror}") from None
    made.extend(reversed(missing))
    if not os.access(path, os.W_OK):
        raise ProfileRunError(f"--out: {out}: not writable")
    return path


def remove_created(created: list[Path]) -> None:
    """Remove the directories iolens created for a run that wrote nothing (deepest first; only while they
    are empty: whatever is in one stays, and so does the directory)."""
    for d in reversed(created):
        try:
            d.rmdir()
        except OSError:
            return


def check_program(command: list[str], env: Mapping[str, str], cwd: Path) -> None:
    """Refuse, before anything is created, a command the local launcher could not start: as a shell does,
    127 when it is not found, 126 when it is found but cannot be run (not executable, a directory)."""
    name = command[0]
    if "/" in name:
        path = cwd / name
        if not path.exists():
            raise ProgramNotRunnable(f"{name}: command not found (no such file)", 127)
        if path.is_dir():
            raise ProgramNotRunnable(f"{name}: is a directory", 126)
        if not os.access(path, os.X_OK):
            raise ProgramNotRunnable(f"{name}: permission denied", 126)
        return
    search = env.get("PATH", os.defpath)
    if shutil.which(name, path=search) is not None:
        return
    for d in search.split(os.pathsep):
        candidate = Path(d or ".") / name
        try:
            if stat.S_ISREG(candidate.stat().st_mode):
                raise ProgramNotRunnable(f"{name}: permission denied", 126)
        except OSError:
            continue
    raise ProgramNotRunnable(f"{name}: command not found", 127)


def job_id(now: float | None = None, pid: int | None = None) -> str:
    """A job id in the runtime's own form: iolens-YYYYMMDDTHHMMSS-<pid>."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.localtime(now))
    return f"iolens-{stamp}-{os.getpid() if pid is None else pid}"


def profile_vars(lib: Path, out_dir: Path, trace: bool, env: Mapping[str, str]) -> dict[str, str]:
    """The variables the profiled program gets on top of env (which stays as it is otherwise).

    LD_PRELOAD: the runtime first, then whatever was preloaded already. IOLENS_JOB_ID: set so that every
    process of the run, ranks started by mpirun included, shares one job id (the runtime prefers the batch
    system's id when there is one). IOLENS_PROFILE_EXCLUDE and IOLENS_TRACE pass on as the user set them;
    IOLENS_LOG_DIR is emptied (an MPI job's log goes to the out directory).
    """
    out: dict[str, str] = {}
    existing = [p for p in env.get("LD_PRELOAD", "").replace(" ", ":").split(":") if p]
    out["LD_PRELOAD"] = ":".join([str(lib), *[p for p in existing if p != str(lib)]])
    out[ENV_DIR] = str(out_dir)
    if trace:
        out[ENV_TRACE] = "1"
    elif ENV_TRACE in env:
        out[ENV_TRACE] = env[ENV_TRACE]
    if ENV_EXCLUDE in env:
        out[ENV_EXCLUDE] = env[ENV_EXCLUDE]
    if not any(env.get(k) for k in SCHEDULER_JOB_IDS):
        out[ENV_JOB_ID] = env.get(ENV_JOB_ID) or job_id()
    if env.get(ENV_LOG_DIR):
        # A center's central log directory (docs/profile.md, "One log per job") is for the jobs it profiles
        # itself: this run's job log goes to the out directory, which the report reads.
        out[ENV_LOG_DIR] = ""
    return out


def build_command(
    req: ProfileRequest, variables: Mapping[str, str], mpi_flavor: str = "openmpi"
) -> list[str]:
    """The command line: the program itself, or the launcher with the variables as its options."""
    if req.launcher == "local":
        return list(req.command)
    if req.launcher == "mpirun":
        cmd = ["mpirun", "-np", str(req.np)]
        for k, v in variables.items():
            # Open MPI's -x NAME=VALUE sets the value for the ranks only; MPICH/Hydra spells it -genv.
            cmd += ["-genv", k, v] if mpi_flavor == "mpich" else ["-x", f"{k}={v}"]
        return [*cmd, *req.launcher_args, *req.command]
    for k, v in variables.items():
        if "," in v:
            raise ProfileRunError(f"srun --export cannot pass {k}={v!r}: the value holds a comma")
    export = ",".join(["ALL", *(f"{k}={v}" for k, v in variables.items())])
    return ["srun", "-n", str(req.np), f"--export={export}", *req.launcher_args, *req.command]


def program_env(req: ProfileRequest, variables: Mapping[str, str], env: Mapping[str, str]) -> dict[str, str]:
    """The environment of the process iolens starts: for the local launcher the program's (env plus the
    variables); for mpirun and srun the launcher's, which is env untouched."""
    if req.launcher == "local":
        return {**env, **variables}
    return dict(env)


def exit_status(returncode: int) -> int:
    """The status a shell reports: the program's own, or 128 + the signal that killed it."""
    return 128 - returncode if returncode < 0 else returncode


# The logs a run leaves: per-process logs, and an MPI job's one log (profile/joblog.py).
RUN_SUFFIXES = (*LOG_SUFFIXES, JOB_SUFFIX)


def _existing_stems(directory: Path) -> set[str]:
    return {log_stem(p.name) for p in directory.iterdir() if p.suffix in RUN_SUFFIXES}


def new_logs(directory: Path, before: set[str]) -> list[Path]:
    """The logs written in directory since `before` (the stems that were there already)."""
    return sorted(
        p for p in directory.iterdir() if p.suffix in RUN_SUFFIXES and log_stem(p.name) not in before
    )


def _say(console: Console, line: str, style: str = "") -> None:
    # Text, not markup: paths may hold '[' and ']'.
    console.print(Text(line, style=style), soft_wrap=True)


def run_profile(
    req: ProfileRequest, out: Console, err: Console, on_logs: Callable[[list[Path]], None] | None = None
) -> int:
    """Run the program under the profiler, report its logs, and return its exit status. `on_logs` is given
    the logs the run wrote (the statistics database stores them).

    Raises ProfileLibNotFound and ProfileRunError before anything runs; a command that cannot be started is
    said in one line and gets a shell's status (127, 126), with nothing left behind.
    """
    lib = find_profile_lib()
    try:
        grace = kill_after_s(os.environ)
    except KillAfterError as exc:
        raise ProfileRunError(str(exc)) from None
    cwd = Path.cwd()
    env = dict(os.environ)
    if req.launcher == "local":
        try:
            check_program(req.command, env, cwd)
        except ProgramNotRunnable as exc:
            _say(err, f"iolens: error: {exc}")
            return exc.status
    elif shutil.which(req.launcher) is None:
        raise ProfileRunError(f"--launcher {req.launcher}: {req.launcher} not found on PATH")
    created: list[Path] = []
    out_dir = prepare_out_dir(req.out, cwd, created)
    try:
        variables = profile_vars(lib, out_dir, req.trace, env)
        flavor = launch.detect_mpi_flavor() if req.launcher == "mpirun" else "openmpi"
        cmd = build_command(req, variables, flavor)
    except BaseException:
        remove_created(created)
        raise
    before = _existing_stems(out_dir)
    _say(err, f"iolens: profile logs go to {out_dir}")
    with RunSignals(req.launcher) as signals:
        try:
            proc = subprocess.Popen(cmd, env=program_env(req, variables, env))
        except OSError as exc:
            # Checked above, but gone or changed since (or a format the kernel cannot run): nothing ran.
            remove_created(created)
            status = 127 if isinstance(exc, FileNotFoundError) else 126
            _say(err, f"iolens: error: {cmd[0]}: {exc.strerror or exc}")
            return status
        returncode, interruption = signals.wait(proc, grace)
        status = exit_status(returncode)
        if interruption is not None:
            _quietly(_say, err, f"iolens: {interruption.describe(status)}", "yellow")
        logs = new_logs(out_dir, before)
        if on_logs is not None and logs:
            on_logs(logs)
        if req.report:
            _quietly(_report, out_dir, before, out, err, interruption, status, req.all_files)
    return status


# A log needs its 4 KiB header and a first 64 KiB chunk (docs/profile-log.md).
LOG_MIN_BYTES = 4096 + 65536


def _free_bytes(directory: Path) -> int:
    try:
        st = os.statvfs(directory)
    except OSError:
        return LOG_MIN_BYTES
    return st.f_bavail * st.f_frsize


def _quietly(fn: Callable[..., None], *args: object) -> None:
    """Output that may meet a terminal gone with a SIGHUP, or a closed pipe: what cannot be said is not."""
    try:
        fn(*args)
    except OSError:
        pass


def _report(
    out_dir: Path,
    before: set[str],
    out: Console,
    err: Console,
    interruption: Interruption | None,
    status: int,
    all_files: bool = False,
) -> None:
    """The report of this run's logs; a problem is said, never turned into the program's status."""
    logs = new_logs(out_dir, before)
    if not logs:
        why = "a statically linked or setuid program ignores LD_PRELOAD"
        if _free_bytes(out_dir) < LOG_MIN_BYTES:
            why = "its file system has no room for a log"
        _say(err, f"iolens: no profile log was written in {out_dir} ({why})", "yellow")
        return
    try:
        jobs = load_jobs(logs, all_files)
    except ProfileLogError as exc:
        _say(err, f"iolens: error: {exc}")
        return
    doc = build(jobs, str(out_dir))
    if interruption is not None:
        for job in doc["jobs"]:
            job["messages"].insert(0, interruption.describe(status))
    print_report(doc, out)
