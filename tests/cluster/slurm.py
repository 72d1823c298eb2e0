"""A real Slurm cluster on this machine: munged, a private MariaDB, slurmdbd and slurmctld on a host "head",
and one slurmd per compute node ("node1", "node2", ...), each host in network, UTS and mount namespaces of its
own (tests/cluster/netns.py). This namespace is the login host: sbatch, srun, sacct run here with SLURM_CONF
pointing at the cluster's configuration (SlurmCluster.env).

Everything lives in one scratch directory (0755: munged refuses a socket in a directory others cannot
traverse), every wait is bounded, and stop() removes every process, namespace and the bridge. Ports are
Slurm's and MariaDB's defaults, each inside a network namespace of its own where nothing else listens.

`python -m tests.cluster.slurm` starts a cluster, prints how to use it, and stops it on Enter or a signal.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from tests.cluster import netns
from tests.cluster.daemons import Daemon, on_host, quiet, tail, wait_for
from tests.cluster.netns import ClusterError, Host, Network

CLUSTER_NAME = "iolens"
PARTITION = "debug"
# Every node claims this many CPUs whatever the machine has (SlurmdParameters=config_overrides): 2 nodes ×
# 2 ranks, plus a batch script, fit on a 2-core CI machine.
NODE_CPUS = 4
CTLD_PORT, SLURMD_PORT, DBD_PORT, MYSQL_PORT = 6817, 6818, 6819, 3306
# Seconds without an answer before slurmctld calls a node DOWN and ends its jobs (default 300): the
# node-failure tests wait about this long.
SLURMD_TIMEOUT_S = 10
START_TIMEOUT_S = 60.0
# What the cluster needs, and the Debian package each comes from (the skip message names them).
NEEDED = {
    "munged": "munge",
    "mungekey": "munge",
    "mariadbd": "mariadb-server",
    "mariadb-install-db": "mariadb-server",
    "slurmctld": "slurmctld (slurm-wlm)",
    "slurmd": "slurmd (slurm-wlm)",
    "slurmdbd": "slurmdbd",
    "sbatch": "slurm-client",
    "sacctmgr": "slurm-client",
    "ip": "iproute2",
    "unshare": "util-linux",
}


def missing_tools() -> list[str]:
    return [f"{tool} ({pkg})" for tool, pkg in NEEDED.items() if shutil.which(tool) is None]


class SlurmCluster:
    """start() brings it up (ClusterError with the reason when it cannot), stop() takes it all down."""

    def __init__(self, nodes: int = 2, extra_conf: Sequence[str] = ()) -> None:
        self.node_names = [f"node{i + 1}" for i in range(nodes)]
        self.extra_conf = list(extra_conf)
        self.root = Path()
        self.net: Network | None = None
        self.daemons: dict[str, Daemon] = {}
        self.started_at = time.time()

    # ---- paths and environment ----------------------------------------------------------------------

    @property
    def conf(self) -> Path:
        return self.root / "etc" / "slurm.conf"

    @property
    def hosts_file(self) -> Path:
        return self.root / "etc" / "hosts"

    @property
    def munge_socket(self) -> Path:
        return self.root / "munge" / "munge.sock"

    @property
    def workdir(self) -> Path:
        """A directory every host sees (the cluster's "parallel file system"): job scripts, data, results."""
        return self.root / "work"

    def node_tmp(self, name: str) -> Path:
        """What the host sees as /tmp (the cluster's directory is therefore not in /tmp)."""
        return self.root / "hosts" / name / "tmp"

    def host(self, name: str) -> Host:
        assert self.net is not None
        return self.net.hosts[name]

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        """Our environment with the cluster's configuration: what sbatch, srun, sacct need."""
        env = dict(os.environ)
        for name in [n for n in env if n.startswith("SLURM_")]:
            del env[name]  # a test session run inside a Slurm job must not leak that job into ours
        env["SLURM_CONF"] = str(self.conf)
        env.update(extra or {})
        return env

    def on_node(self, name: str, cmd: Sequence[str]) -> list[str]:
        """The command line that runs cmd on a cluster host (as ssh to it would)."""
        return on_host(self.host(name), self.hosts_file, self.node_tmp(name), cmd)

    def run(
        self, cmd: Sequence[str], timeout: float = 60.0, env: dict[str, str] | None = None, **kw: object
    ) -> subprocess.CompletedProcess[str]:
        """A Slurm client command on the login host, its output captured (timeout: TimeoutExpired)."""
        return subprocess.run(
            list(cmd),
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env or self.env(),
            check=False,
            **kw,
        )  # type: ignore[call-overload]

    # ---- up and down ------------------------------------------------------------------------------

    def start(self, timeout: float = START_TIMEOUT_S) -> None:
        self.started_at = time.time()
        missing = missing_tools()
        if missing:
            raise ClusterError("not installed: " + ", ".join(missing))
        if os.geteuid() != 0:
            raise ClusterError("network namespaces and Slurm's daemons as root need root")
        deadline = time.monotonic() + timeout
        # Not in /tmp: every host has a /tmp of its own, where this directory would not be seen.
        self.root = Path(tempfile.mkdtemp(prefix="iolens-cluster-", dir="/var/tmp"))
        try:
            self.root.chmod(0o755)
            self.net = netns.create(["head", *self.node_names], self.root)
            self._write_files()
            self._start_head(deadline)
            self._start_nodes(deadline)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Every daemon, then whatever else runs on the hosts (job steps), the namespaces and the bridge."""
        for d in reversed(list(self.daemons.values())):
            d.stop(timeout=5.0)
        self.daemons.clear()
        if self.net is not None:
            netns.destroy(self.net)
            self.net = None
        if self.root.name.startswith("iolens-cluster-"):
            shutil.rmtree(self.root, ignore_errors=True)
        self._remove_shm_segments()

    def _remove_shm_segments(self) -> None:
        """Open MPI's shared-memory segments that ranks on the cluster's nodes left in /dev/shm (the hosts
        share the machine's /dev/shm; ranks killed with a lost node never remove theirs): only files named
        after these nodes (vader_segment.NODE.*) and made since the cluster started."""
        for name in self.node_names:
            for seg in Path("/dev/shm").glob(f"vader_segment.{name}.*"):
                with contextlib.suppress(OSError):
                    if seg.stat().st_mtime >= self.started_at:
                        seg.unlink()

    def _write_files(self) -> None:
        assert self.net is not None
        for d in ("etc", "munge", "head/state", "head/mysql", "work"):
            (self.root / d).mkdir(parents=True, exist_ok=True)
        (self.root / "work").chmod(0o1777)
        for name in ["head", *self.node_names]:
            (self.root / "hosts" / name / "spool").mkdir(parents=True)
            self.node_tmp(name).mkdir(mode=0o1777)
            self.node_tmp(name).chmod(0o1777)
        self.hosts_file.write_text(self.net.hosts_file(), encoding="utf-8")
        self.conf.write_text(self.slurm_conf(), encoding="utf-8")
        dbd = self.root / "etc" / "slurmdbd.conf"
        dbd.write_text(self._slurmdbd_conf(), encoding="utf-8")
        dbd.chmod(0o600)  # slurmdbd refuses a configuration (it holds the database password) others can read
        key = self.root / "munge" / "munge.key"
        r = subprocess.run(["mungekey", "-c", "-k", str(key)], capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            raise ClusterError(f"mungekey: {r.stderr.strip()}")

    def slurm_conf(self) -> str:
        head = self.host("head").address
        r = self.root
        lines = [
            f"ClusterName={CLUSTER_NAME}",
            f"SlurmctldHost=head({head})",
            f"SlurmctldPort={CTLD_PORT}",
            f"SlurmdPort={SLURMD_PORT}",
            "AuthType=auth/munge",
            f"AuthInfo=socket={self.munge_socket}",
            "CredType=cred/munge",
            "SlurmUser=root",
            "SlurmdUser=root",
            f"StateSaveLocation={r}/head/state",
            f"SlurmctldPidFile={r}/head/slurmctld.pid",
            f"SlurmctldLogFile={r}/head/slurmctld.log",
            # %n: each slurmd its own directory, as on separate machines.
            f"SlurmdSpoolDir={r}/hosts/%n/spool",
            f"SlurmdPidFile={r}/hosts/%n/slurmd.pid",
            f"SlurmdLogFile={r}/hosts/%n/slurmd.log",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            # No cgroups (a container may not delegate them): tasks are tracked as slurmstepd's descendants.
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "SchedulerType=sched/builtin",
            "SlurmdParameters=config_overrides",
            # Open MPI programs start under srun directly (PMIx), as on a production cluster.
            "MpiDefault=pmix",
            "ReturnToService=2",
            f"SlurmdTimeout={SLURMD_TIMEOUT_S}",
            "SlurmctldTimeout=10",
            "MessageTimeout=5",
            # Slurm's default: a job's processes have 30 s between SIGTERM and SIGKILL (iolens's own stop is
            # bounded by 20 s to fit in it).
            "KillWait=30",
            "InactiveLimit=0",
            "MinJobAge=600",
            "JobRequeue=0",
            "AccountingStorageType=accounting_storage/slurmdbd",
            f"AccountingStorageHost={head}",
            f"AccountingStoragePort={DBD_PORT}",
            # Not a password with munge: the socket of the munged that signs requests to slurmdbd.
            f"AccountingStoragePass={self.munge_socket}",
            "JobAcctGatherType=jobacct_gather/linux",
            "JobCompType=jobcomp/none",
        ]
        for name in self.node_names:
            addr = self.host(name).address
            lines.append(
                f"NodeName={name} NodeAddr={addr} NodeHostname={name} CPUs={NODE_CPUS} State=UNKNOWN"
            )
        lines.append(f"PartitionName={PARTITION} Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
        return "\n".join([*lines, *self.extra_conf]) + "\n"

    def _slurmdbd_conf(self) -> str:
        r = self.root
        return "\n".join(
            [
                "AuthType=auth/munge",
                f"AuthInfo=socket={self.munge_socket}",
                "DbdHost=head",
                f"DbdAddr={self.host('head').address}",
                f"DbdPort={DBD_PORT}",
                "SlurmUser=root",
                f"LogFile={r}/head/slurmdbd.log",
                f"PidFile={r}/head/slurmdbd.pid",
                "StorageType=accounting_storage/mysql",
                "StorageHost=127.0.0.1",
                f"StoragePort={MYSQL_PORT}",
                "StorageUser=root",
                "StorageLoc=slurm_acct_db",
                "",
            ]
        )

    def _daemon(self, name: str, host: str, argv: list[str], log: Path) -> Daemon:
        d = Daemon(name, self.on_node(host, argv), log, self.env())
        self.daemons[name] = d
        return d

    def _start_head(self, deadline: float) -> None:
        r = self.root
        munge = r / "munge"
        munged = self._daemon(
            "munged",
            "head",
            [
                "munged", "--foreground", f"--socket={self.munge_socket}", f"--key-file={munge}/munge.key",
                f"--pid-file={munge}/munged.pid", f"--seed-file={munge}/munged.seed",
                f"--log-file={munge}/munged.log",
            ],
            munge / "out.log",
        )  # fmt: skip
        sock = str(self.munge_socket)
        wait_for(
            "munged",
            lambda: self.munge_socket.exists() and quiet(["munge", "-S", sock, "-n"]),
            deadline,
            [munged],
        )

        data = r / "head" / "mysql" / "data"
        init = ["mariadb-install-db", "--no-defaults", f"--datadir={data}", "--user=root", "--skip-test-db",
                "--auth-root-authentication-method=normal"]  # fmt: skip
        out = subprocess.run(
            init, capture_output=True, text=True, timeout=max(1.0, deadline - time.monotonic())
        )
        if out.returncode != 0:
            raise ClusterError(f"mariadb-install-db: {out.stdout[-2000:]}{out.stderr[-2000:]}")
        mysock = r / "head" / "mysql" / "mysqld.sock"
        mariadbd = self._daemon(
            "mariadbd",
            "head",
            [
                "mariadbd", "--no-defaults", f"--datadir={data}", "--user=root", "--bind-address=127.0.0.1",
                f"--port={MYSQL_PORT}", f"--socket={mysock}", f"--pid-file={r}/head/mysql/mysqld.pid",
                "--skip-name-resolve", "--innodb-buffer-pool-size=64M",
            ],
            r / "head" / "mysql" / "mariadbd.log",
        )  # fmt: skip
        ping = ["mariadb-admin", "--no-defaults", f"--socket={mysock}", "-u", "root", "ping"]
        wait_for("mariadbd", lambda: quiet(ping), deadline, [mariadbd])

        slurmdbd = self._daemon("slurmdbd", "head", ["slurmdbd", "-D"], r / "head" / "slurmdbd.out")
        head = self.host("head").address
        wait_for("slurmdbd", lambda: _listening(head, DBD_PORT), deadline, [slurmdbd])
        # The cluster in the accounting database before slurmctld registers with it.
        add = self.run(["sacctmgr", "-i", "add", "cluster", CLUSTER_NAME], timeout=30)
        if add.returncode != 0 and "already exists" not in add.stdout + add.stderr:
            raise ClusterError(f"sacctmgr add cluster: {add.stdout}{add.stderr}")

        slurmctld = self._daemon("slurmctld", "head", ["slurmctld", "-D", "-i"], r / "head" / "slurmctld.out")
        wait_for("slurmctld", lambda: quiet(["scontrol", "ping"], env=self.env()), deadline, [slurmctld])

    def _start_nodes(self, deadline: float) -> None:
        started = []
        for name in self.node_names:
            log = self.root / "hosts" / name / "slurmd.out"
            started.append(self._daemon(f"slurmd-{name}", name, ["slurmd", "-D", "-N", name], log))
        wait_for("slurmd (every node idle)", self.nodes_idle, deadline, [*self.daemons.values()])

    def reconfigure(self, extra_conf: Sequence[str] = (), timeout: float = 30.0) -> None:
        """slurm.conf again with these lines at its end instead of the previous ones (Prolog=, Epilog=,
        TaskProlog=, ...: what a site integration installs), read by every daemon (`scontrol reconfigure`),
        the nodes idle again; ClusterError if not within the timeout. reconfigure() restores the original."""
        self.extra_conf = list(extra_conf)
        self.conf.write_text(self.slurm_conf(), encoding="utf-8")
        r = self.run(["scontrol", "reconfigure"], timeout=timeout)
        if r.returncode != 0:
            raise ClusterError(f"scontrol reconfigure: {r.stderr.strip()}")
        wait_for("nodes idle after reconfigure", self.nodes_idle, time.monotonic() + timeout)

    # ---- state ------------------------------------------------------------------------------------

    def node_states(self) -> dict[str, str]:
        try:
            r = self.run(["sinfo", "-h", "-N", "-o", "%N %T"], timeout=10)
        except subprocess.TimeoutExpired:
            return {}
        states = {}
        for line in r.stdout.splitlines():
            fields = line.split()
            if len(fields) == 2:
                states[fields[0]] = fields[1]
        return states

    def nodes_idle(self) -> bool:
        states = self.node_states()
        return all(states.get(n) == "idle" for n in self.node_names)

    def logs(self) -> str:
        """The end of every daemon's log, for a failed test's message."""
        return "\n".join(f"--- {d.name} ({d.log})\n{tail(d.log)}" for d in self.daemons.values())

    # ---- failures ---------------------------------------------------------------------------------

    def crash_node(self, name: str) -> None:
        """The node is gone, as if powered off: off the network first (its peers get no goodbye), then every
        process on it killed."""
        assert self.net is not None
        netns.ip("link", "set", netns.veth(self.net, name), "down")
        ns = self.host(name).namespace
        assert ns is not None
        netns.kill_namespace(ns)
        self.daemons.pop(f"slurmd-{name}", None)

    def restore_node(self, name: str, timeout: float = 30.0) -> None:
        """A crashed node back: on the network, its slurmd started, idle again (bounded)."""
        assert self.net is not None
        netns.ip("link", "set", netns.veth(self.net, name), "up")
        log = self.root / "hosts" / name / "slurmd.out"
        d = self._daemon(f"slurmd-{name}", name, ["slurmd", "-D", "-N", name], log)
        self.run(["scontrol", "update", f"nodename={name}", "state=resume"], timeout=10)
        wait_for(
            f"{name} back", lambda: self.node_states().get(name) == "idle", time.monotonic() + timeout, [d]
        )


def _listening(address: str, port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((address, port), timeout=1.0):
        return True
    return False


def main() -> int:
    cluster = SlurmCluster()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    try:
        t0 = time.monotonic()
        cluster.start()
        print(f"cluster up in {time.monotonic() - t0:.1f} s: export SLURM_CONF={cluster.conf}")
        print(f"work directory (every host sees it): {cluster.workdir}")
        for name in cluster.node_names:
            print(f"on {name}: {' '.join(cluster.on_node(name, ['bash']))}")
        with contextlib.suppress(EOFError, KeyboardInterrupt):
            input("Enter stops the cluster. ")
    except ClusterError as exc:
        print(f"cluster not started: {exc}", file=sys.stderr)
        return 1
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
