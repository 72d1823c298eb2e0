"""A launcher that has lost a node must still end: srun after a node failure.

When slurmctld declares a node of a running step DOWN (it stopped answering: crashed, powered off, cut off
the network), srun says "Node failure on NODE" and the step's tasks on the other nodes are killed, but srun
then keeps waiting for the standard output and error of the tasks on the lost node. Connections from a
machine that is gone never close (no FIN or RST comes from it), so srun run from a login node, or anywhere
outside the job's own nodes, would wait until TCP gives up: hours (seen on the test cluster, docs/site.md).
Inside a batch job the controller ends the whole job, srun included; outside, nothing does.

So iolens watches the launcher's standard error: once srun has reported a node failure, it has GRACE_S to
exit by itself; then it gets SIGTERM (srun ends the step and exits within Slurm's KillWait), and its process
group SIGKILL ESCALATE_S after that. The run then ends as any run whose ranks died: a failed document that
says what happened.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading

# srun's own line, and the one slurmstepd sends through srun when it cancels the step for that reason.
MARKS = ("srun: error: Node failure on", "DUE TO NODE FAILURE")
GRACE_S = 15.0
ESCALATE_S = 15.0


class Watch:
    """see() every line of the launcher's standard error; close() when it has exited."""

    def __init__(self, proc: subprocess.Popen[str], launcher: str) -> None:
        self.proc = proc
        self.active = launcher == "srun"
        self.message: str | None = None  # set when the launcher had to be stopped
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def see(self, line: str) -> None:
        if not self.active or self._thread is not None or not any(m in line for m in MARKS):
            return
        self._thread = threading.Thread(target=self._stop_if_stuck, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()

    def _stop_if_stuck(self) -> None:
        if self._done.wait(GRACE_S) or self.proc.poll() is not None:
            return
        self.message = (
            f"srun reported a node failure and had not exited {GRACE_S:.0f} s later (it waits for the output "
            "of the lost node's tasks, which never comes): iolens stopped it"
        )
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(signal.SIGTERM)
        if self._done.wait(ESCALATE_S) or self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
