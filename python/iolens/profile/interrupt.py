"""What `iolens profile` does with the signals that end a run (SIGINT, SIGTERM, SIGHUP) while the program
runs, whether they reach iolens alone or its whole process group (a batch system at its time limit, `timeout`,
`kill`, a terminal's Ctrl-C).

iolens does not die of them: it passes the signal on to the program (or to the launcher, mpirun or srun),
waits for it, and then does what it does after any run (stores and reports the logs), saying the run was
interrupted and by which signal. A signal the terminal sent (Ctrl-C, a hang-up: the kernel sends
it to the whole foreground process group, the program included) is not sent again. A program that has not
ended `kill_after` seconds after a signal sent by a process gets SIGKILL, so iolens never waits for ever.

The signals are taken with sigtimedwait (blocked in the meantime), which says who sent each one; handlers
installed just before the program starts catch one that comes before they are blocked. A signal iolens was
started with ignored (`nohup`, a background job's SIGINT) stays ignored, and the program inherits that.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from types import FrameType, TracebackType

from iolens import interrupt, launch

# The signals that end a run; SIGCHLD is blocked with them, so that the wait wakes when the program ends.
RUN_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# si_code of a signal the kernel sent itself: the terminal's (a process's kill has SI_USER, or SI_QUEUE...).
SI_KERNEL = 0x80
ENV_KILL_AFTER = "IOLENS_PROFILE_KILL_AFTER"
# Seconds between the first signal sent by a process and SIGKILL to a program still running: within the
# 10 s a run is given to finish after a signal, and well inside Slurm's KillWait (30 s by default).
KILL_AFTER_S = 8.0
# A program SIGKILL has not ended by then is stuck in the kernel (a dead NFS server): iolens goes on.
STUCK_AFTER_S = 5.0


class KillAfterError(ValueError):
    """IOLENS_PROFILE_KILL_AFTER is not a number of seconds; the message says so."""


def kill_after_s(env: Mapping[str, str]) -> float:
    """The grace before SIGKILL: IOLENS_PROFILE_KILL_AFTER (seconds, > 0), else KILL_AFTER_S."""
    raw = env.get(ENV_KILL_AFTER)
    if raw is None or raw == "":
        return KILL_AFTER_S
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not (0 < value <= 3600):
        raise KillAfterError(f"{ENV_KILL_AFTER}={raw}: expected seconds, more than 0 and at most 3600")
    return value


signal_name = interrupt.signal_name


@dataclass
class Interruption:
    """The first signal that ended the run, and what iolens did about it."""

    signum: int
    from_terminal: bool
    forwarded: bool
    killed: bool = False  # SIGKILL after kill_after seconds
    stuck: bool = False  # and the program still had not ended
    kill_after: float = KILL_AFTER_S

    def describe(self, status: int) -> str:
        name = signal_name(self.signum)
        if self.from_terminal:
            got = f"interrupted by {name} from the terminal (the program got it too)"
        elif self.forwarded:
            got = f"interrupted by {name}, passed on to the program"
        else:
            got = f"interrupted by {name}"
        if self.stuck:
            return (
                f"{got}; it did not end within {self.kill_after:g} s and was sent SIGKILL, but has still not "
                "ended (stuck in the kernel?): the report covers the logs as they are now"
            )
        if self.killed:
            return f"{got}; it did not end within {self.kill_after:g} s and was killed (SIGKILL, status 137)"
        if status >= 128:
            return f"{got}; the program ended by {signal_name(status - 128)} (status {status})"
        return f"{got}; the program ended with status {status}"


class RunSignals:
    """The run's signals, from just before the program starts to the end of its report (a context manager);
    `wait` waits for the program and deals with them."""

    def __init__(self, launcher: str = "local") -> None:
        self.launcher = launcher
        self.handled = [s for s in RUN_SIGNALS if signal.getsignal(s) is not signal.SIG_IGN]
        self._early: list[int] = []
        self._old: dict[int, object] = {}
        self._old_mask: set[int] | None = None
        # when the first signal sent by a process came (the kill deadline runs from it)
        self._process_signal_at: float | None = None
        self.interruption: Interruption | None = None

    def _catch(self, signum: int, frame: FrameType | None) -> None:
        self._early.append(signum)

    def __enter__(self) -> RunSignals:
        for s in self.handled:
            self._old[s] = signal.signal(s, self._catch)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._old_mask is not None:
            # Taken, not delivered: a signal that came during the report is dropped, not acted on later.
            while self.handled and signal.sigtimedwait(self.handled, 0) is not None:
                pass
            signal.pthread_sigmask(signal.SIG_SETMASK, self._old_mask)
        for s, old in self._old.items():
            signal.signal(s, old)  # type: ignore[arg-type]

    def _got(self, proc: subprocess.Popen[bytes], signum: int, from_terminal: bool, grace: float) -> None:
        forward = not from_terminal and proc.returncode is None
        if forward:
            try:
                self._forward(proc, signum)
            except OSError:
                forward = False
        if self.interruption is None:
            self.interruption = Interruption(signum, from_terminal, forward, kill_after=grace)
        if not from_terminal and self._process_signal_at is None:
            self._process_signal_at = time.monotonic()

    def _forward(self, proc: subprocess.Popen[bytes], signum: int) -> None:
        """To the program, or under mpirun to its ranks on this node (mpirun's children): a batch system
        that signals the whole group has signalled mpirun already, and a second signal makes mpirun end at
        once, its ranks left running. With no rank here (all on other nodes), to mpirun."""
        ranks = launch.child_pids(proc.pid) if self.launcher == "mpirun" else []
        if not ranks:
            proc.send_signal(signum)
        for pid in ranks:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)

    def _take_early(self, proc: subprocess.Popen[bytes], grace: float) -> None:
        """Signals the handlers caught before they were blocked: who sent them is not known, so they are
        passed on. (Python runs a handler at its next check after the C handler: possibly after the block.)"""
        while self._early:
            self._got(proc, self._early.pop(0), False, grace)

    def wait(self, proc: subprocess.Popen[bytes], grace: float) -> tuple[int, Interruption | None]:
        """The program's return code (Popen's: -N for signal N), and the interruption if there was one."""
        wanted = [*self.handled, signal.SIGCHLD]
        self._old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, wanted)
        while True:
            self._take_early(proc, grace)
            deadline = None if self._process_signal_at is None else self._process_signal_at + grace
            if proc.poll() is not None:
                break
            timeout = 1.0
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return self._kill(proc), self.interruption
                timeout = min(timeout, left)
            info = signal.sigtimedwait(wanted, timeout)
            if info is not None and info.si_signo != signal.SIGCHLD:
                self._got(proc, info.si_signo, info.si_code == SI_KERNEL, grace)
        # A signal to the whole group may end the program before iolens takes its own copy: still pending.
        while self.handled and (info := signal.sigtimedwait(self.handled, 0)) is not None:
            self._got(proc, info.si_signo, info.si_code == SI_KERNEL, grace)
        self._take_early(proc, grace)
        assert proc.returncode is not None
        return proc.returncode, self.interruption

    def _kill(self, proc: subprocess.Popen[bytes]) -> int:
        assert self.interruption is not None
        self.interruption.killed = True
        # Under mpirun its ranks here first: mpirun killed alone would leave them running.
        for pid in launch.child_pids(proc.pid) if self.launcher == "mpirun" else []:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        try:
            proc.kill()
        except OSError:
            pass
        try:
            return proc.wait(timeout=STUCK_AFTER_S)
        except subprocess.TimeoutExpired:
            self.interruption.stuck = True
            return -signal.SIGKILL
