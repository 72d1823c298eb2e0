"""Processes on the test cluster's hosts: a command run inside a host (its network namespace, a UTS namespace
with the host's name, and a mount namespace where the cluster's hosts file is /etc/hosts), the daemons
started that way, and bounded waits for them to become ready."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from tests.cluster.netns import ClusterError, Host

# $0 is the host name, $1 the hosts file, $2 the host's own /tmp, then the command. The bind mounts are
# private to this mount namespace: the machine's /etc/hosts and /tmp are never changed. A node-local /tmp, as
# on real nodes: Slurm's PMIx plugin makes a directory named after the job step in /tmp on every node of
# the step, which would collide on a /tmp the nodes had in common.
# A checkout that itself lies under /tmp (a CI clone, say) would vanish behind the node's /tmp: it is bound
# at its own path inside the node's /tmp first ($3, relative to /tmp; empty when the checkout is elsewhere),
# and the node's /tmp is bound with its submounts (--rbind).
_ENTER = (
    'hostname "$0" && mount --bind "$1" /etc/hosts'
    ' && if [ -n "$3" ]; then mkdir -p "$2/$3" && mount --bind "/tmp/$3" "$2/$3"; fi'
    ' && mount --rbind "$2" /tmp && shift 3 && exec "$@"'
)
REPO = Path(__file__).resolve().parents[2]


def _under_tmp(path: Path) -> str:
    """path relative to /tmp when it lies there, else ''."""
    try:
        return str(path.relative_to("/tmp"))
    except ValueError:
        return ""


def on_host(host: Host, hosts_file: Path, tmp: Path, cmd: Sequence[str]) -> list[str]:
    """The command line that runs cmd on the host (as itself on the login host), tmp bound on its /tmp."""
    if host.namespace is None:
        return list(cmd)
    # nsenter rather than `ip netns exec`, which mounts a new /sys without the cgroup file systems (slurmd
    # needs to see them, even with no cgroup plugin configured).
    enter = ["nsenter", f"--net=/run/netns/{host.namespace}"]
    unshare = ["unshare", "--uts", "--mount", "--propagation", "private", "--"]
    keep = _under_tmp(REPO)
    return [*enter, *unshare, "sh", "-c", _ENTER, host.name, str(hosts_file), str(tmp), keep, *cmd]


class Daemon:
    """A daemon run in the foreground on a host, its output in a log file; stop() ends it, bounded."""

    def __init__(self, name: str, argv: list[str], log: Path, env: dict[str, str]) -> None:
        self.name = name
        self.log = log
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )

    def alive(self) -> bool:
        return self.proc.poll() is None

    def check(self) -> None:
        """ClusterError with the end of its log when it has exited."""
        if not self.alive():
            raise ClusterError(f"{self.name} exited with status {self.proc.returncode}:\n{tail(self.log)}")

    def stop(self, timeout: float = 10.0) -> None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if not self.alive():
                return
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=timeout)


def tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return f"({path}: no log)"
    return "\n".join(text.splitlines()[-lines:])


def wait_for(what: str, ready: Callable[[], bool], deadline: float, daemons: Sequence[Daemon] = ()) -> None:
    """Poll ready() until it is true; ClusterError when a daemon died or the deadline (monotonic) passed."""
    while True:
        for d in daemons:
            d.check()
        if ready():
            return
        if time.monotonic() > deadline:
            logs = "\n".join(f"--- {d.log}\n{tail(d.log)}" for d in daemons)
            raise ClusterError(f"{what}: not ready in time\n{logs}")
        time.sleep(0.2)


def quiet(cmd: Sequence[str], env: dict[str, str] | None = None, timeout: float = 10.0) -> bool:
    """True when the command succeeds within the timeout (a readiness probe)."""
    try:
        r = subprocess.run(cmd, capture_output=True, env=env, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0
