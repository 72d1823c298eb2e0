"""Stop signals (SIGINT, SIGTERM, SIGHUP): what a user's Ctrl-C and a batch system's time limit send.

A batch system ends a job with SIGTERM, waits (Slurm's KillWait: 30 s by default), then sends SIGKILL; it may
signal only the `iolens` process or the whole process group. Python's defaults (KeyboardInterrupt for SIGINT,
death for SIGTERM and SIGHUP) would leave the engine's files, its temporary directory and no document.
While `handling()` is active the three signals are treated alike: the first one is recorded, handed on once
to the running child (the engine or its launcher, started in a process group of its own so a signal to our
group reaches it only through us), and nothing is raised. The engine stops its ranks, removes what it
created and writes its document marked interrupted; the caller then shows it, stores it, and exits with
128 + the signal's number (docs/reliability.md).

A child that has not exited ESCALATE_AFTER_S after the signal came gets SIGKILL (its whole process
group), still inside a KillWait, so `iolens` itself always ends and says what happened.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# Well inside Slurm's default KillWait of 30 s; the engine's own stop takes a few seconds at most.
ESCALATE_AFTER_S = 20.0

# Hands a signal on; False when it could not be delivered yet (the ranks under mpirun not started): it is
# tried again every 0.2 s.
Forward = Callable[[int], "bool | None"]


class Stopped(KeyboardInterrupt):
    """Raised by raise_on_stop_signals() for any of the three signals. A KeyboardInterrupt, so the code that
    already ends cleanly on Ctrl-C (finally blocks, `except KeyboardInterrupt`) does the same on SIGTERM and
    SIGHUP."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_stopped(signum: int, _frame: FrameType | None) -> None:
    raise Stopped(signum)


Handler = Callable[[int, FrameType | None], Any]


def _install(handler: Handler) -> dict[int, Any]:
    """Set `handler` for the stop signals and return the previous dispositions. A signal that iolens was
    started with ignored (`nohup`: SIGHUP; a shell's background job: SIGINT) stays ignored: the user asked
    the run to go on through it."""
    previous = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    for s, old in previous.items():
        if old is not signal.SIG_IGN:
            signal.signal(s, handler)
    return previous


def _restore(previous: dict[int, Any]) -> None:
    for s, handler in previous.items():
        signal.signal(s, handler)


@contextlib.contextmanager
def raising() -> Iterator[None]:
    """For commands with nothing running beside them (db, report, compare, monitor, ...): in the block each
    stop signal raises Stopped where the program is, so its cleanup runs; the previous handlers come back
    after (main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = _install(_raise_stopped)
    try:
        yield
    finally:
        _restore(previous)


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def exit_status(signum: int) -> int:
    """The shell's convention for a command ended by a signal, which batch systems and scripts recognise."""
    return 128 + signum


class Stop:
    """The stop signal received (first one wins), and where it is handed on."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.received_at: float | None = None
        self._forward: Forward | None = None
        self._forwarded = False
        # The signal handler (main thread) and the retrying watchdog thread both hand on; one at a time.
        self._lock = threading.RLock()
        self._installed = 0
        self._shielded = 0

    @property
    def requested(self) -> bool:
        return self.signum is not None

    @property
    def name(self) -> str:
        return signal_name(self.signum) if self.signum is not None else ""

    def _handler(self, signum: int, _frame: FrameType | None) -> None:
        if self.signum is None:
            self.signum = signum
            self.received_at = time.monotonic()
        self._hand_on()

    def _hand_on(self) -> None:
        with self._lock:
            forward = self._forward
            if forward is None or self._forwarded or self.signum is None:
                return
            try:
                self._forwarded = forward(self.signum) is not False
            except ProcessLookupError:
                self._forwarded = True  # the child has just exited

    def record_from_now(self) -> None:
        """Record the stop signals from now on, until a command installs its own handling (main thread)."""
        if threading.current_thread() is threading.main_thread():
            _install(self._handler)

    @contextlib.contextmanager
    def handling(self) -> Iterator[Stop]:
        """Record the stop signals instead of dying or raising, for the time of the block (main thread only;
        elsewhere, and when nested, a no-op)."""
        if threading.current_thread() is not threading.main_thread() or self._installed:
            self._installed += 1
            try:
                yield self
            finally:
                self._installed -= 1
            return
        previous = _install(self._handler)
        self._installed = 1
        try:
            yield self
        finally:
            self._installed = 0
            _restore(previous)

    @contextlib.contextmanager
    def forwarding(self, forward: Forward, kill_group: int | None = None) -> Iterator[None]:
        """While the block runs, a stop signal is handed on once through `forward`; a signal that came
        before the block is handed on at once. With kill_group, a process group still alive
        ESCALATE_AFTER_S after the signal came is killed."""
        if self._shielded:
            yield
            return
        self._forward = forward
        self._forwarded = False
        done = threading.Event()
        watchdog = threading.Thread(target=self._watch, args=(kill_group, done), daemon=True)
        watchdog.start()
        try:
            self._hand_on()
            yield
        finally:
            with self._lock:
                self._forward = None
            done.set()
            watchdog.join()

    def _watch(self, pgid: int | None, done: threading.Event) -> None:
        """Retry a hand-on that could not be delivered yet; kill the group that outlives the bound."""
        while not done.wait(0.2):
            if self.received_at is None:
                continue
            if not self._forwarded:
                self._hand_on()
            elif pgid is not None and time.monotonic() - self.received_at >= ESCALATE_AFTER_S:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pgid, signal.SIGKILL)
                return

    @contextlib.contextmanager
    def shielded(self) -> Iterator[None]:
        """Cleanup after a stop: children started in the block are not handed the signal (it would cut
        their removal short); a signal is still recorded."""
        self._shielded += 1
        try:
            yield
        finally:
            self._shielded -= 1

    @property
    def stopping_runs(self) -> bool:
        """A stop signal came and no cleanup is shielded from it: a new run should not start."""
        return self.signum is not None and not self._shielded


# The process's one instance: signal dispositions are process-wide.
STOP = Stop()
