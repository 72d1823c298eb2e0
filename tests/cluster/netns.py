"""The test cluster's network: a Linux bridge in this namespace (the "login" host) and one network namespace
per cluster host, each joined to the bridge by a veth pair, on a private /24 of its own (10.77.N.0/24).

Nothing here uses the machine's own interfaces: the hosts reach each other, and this namespace, through the
bridge only. A cluster's bridge carries its owner in its alias (pid and scratch directory), so a cluster left
behind by a killed test session is found and removed by the next one (reap_abandoned).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

# 10.77.N.0/24 for cluster N: a private range unlikely to be routed on a test machine.
NET_PREFIX = "10.77"
BRIDGE_PREFIX = "iolbr"
OWNER_TAG = "iolens-test-cluster"
# How many clusters may exist at once (sessions of different test runs): bridge names iolbr0..iolbr31.
MAX_CLUSTERS = 32
LOGIN_HOST = "login"  # this namespace, as the cluster's hosts know it
IP_TIMEOUT_S = 20.0


class ClusterError(Exception):
    """The cluster cannot be built or run here; the message says why."""


@dataclass(frozen=True)
class Host:
    name: str
    namespace: str | None  # None: this namespace (the login host)
    address: str


@dataclass
class Network:
    index: int
    bridge: str
    hosts: dict[str, Host] = field(default_factory=dict)

    @property
    def subnet(self) -> str:
        return f"{NET_PREFIX}.{self.index}"

    def hosts_file(self) -> str:
        """/etc/hosts for every cluster host: the cluster's names and addresses, and localhost."""
        lines = ["127.0.0.1 localhost"] + [f"{h.address} {h.name}" for h in self.hosts.values()]
        return "\n".join(lines) + "\n"


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        r = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=IP_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise ClusterError(f"ip {' '.join(args)}: no answer within {IP_TIMEOUT_S:.0f} s") from None
    if check and r.returncode != 0:
        raise ClusterError(f"ip {' '.join(args)}: {r.stderr.strip()}")
    return r


def create(names: list[str], scratch: Path) -> Network:
    """The bridge (10.77.N.1, the login host), and a namespace per name (10.77.N.2, .3, ...) on it."""
    if shutil.which("ip") is None:
        raise ClusterError("the ip command (iproute2) is not installed")
    reap_abandoned()
    taken = _names_in_use()
    for index in range(MAX_CLUSTERS):
        bridge = f"{BRIDGE_PREFIX}{index}"
        if any(name.startswith((f"iol{index}-", f"iol{index}v")) for name in taken):
            continue  # remains of a cluster still being taken down
        r = ip("link", "add", bridge, "type", "bridge", check=False)
        if r.returncode == 0:
            break
        if "exists" not in r.stderr:
            raise ClusterError(f"cannot create a bridge (network namespaces need root): {r.stderr.strip()}")
    else:
        raise ClusterError(f"{MAX_CLUSTERS} test clusters exist already (bridges {BRIDGE_PREFIX}*)")
    net = Network(index, bridge)
    try:
        ip("link", "set", bridge, "alias", f"{OWNER_TAG} pid={os.getpid()} root={scratch}")
        net.hosts[LOGIN_HOST] = Host(LOGIN_HOST, None, f"{net.subnet}.1")
        ip("addr", "add", f"{net.subnet}.1/24", "dev", bridge)
        ip("link", "set", bridge, "up")
        for i, name in enumerate(names):
            host = Host(name, f"iol{index}-{name}", f"{net.subnet}.{i + 2}")
            _add_host(net, host, i)
            net.hosts[name] = host
    except BaseException:
        destroy(net)
        raise
    return net


def _add_host(net: Network, host: Host, i: int) -> None:
    assert host.namespace is not None
    ns = host.namespace
    ip("netns", "add", ns)
    # The veth's end in the host's namespace is its eth0, as on a real node.
    outside = f"iol{net.index}v{i}"
    ip("link", "add", outside, "type", "veth", "peer", "name", "eth0", "netns", ns)
    ip("link", "set", outside, "master", net.bridge, "up")
    ip("-n", ns, "addr", "add", f"{host.address}/24", "dev", "eth0")
    ip("-n", ns, "link", "set", "eth0", "up")
    ip("-n", ns, "link", "set", "lo", "up")


def veth(net: Network, name: str) -> str:
    """The bridge side of a host's veth pair (down: the host is cut off the network)."""
    return f"iol{net.index}v{list(net.hosts).index(name) - 1}"


def namespace_pids(ns: str) -> list[int]:
    r = ip("netns", "pids", ns, check=False)
    return [int(p) for p in r.stdout.split() if p.isdigit()]


def kill_namespace(ns: str, timeout: float = 10.0) -> None:
    """SIGKILL every process in the namespace (a node that crashed) and wait, bounded, until none is left."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = namespace_pids(ns)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)


def destroy(net: Network) -> None:
    """Every process in the hosts' namespaces killed, the namespaces, their veth pairs and the bridge removed
    (the bridge last: while it exists, its number is not given to another cluster)."""
    for i, host in enumerate(h for h in net.hosts.values() if h.namespace is not None):
        assert host.namespace is not None
        kill_namespace(host.namespace)
        ip("netns", "del", host.namespace, check=False)
        # A namespace outlives its name while a mount namespace made after it still holds it: its veth
        # pair would stay; deleting our end deletes both.
        ip("link", "del", f"iol{net.index}v{i}", check=False)
    ip("link", "del", net.bridge, check=False)


def _names_in_use() -> set[str]:
    """The network namespaces and links that exist (of any cluster)."""
    spaces = {line.split(" ")[0] for line in ip("netns", "list", check=False).stdout.splitlines()}
    links = {line.split()[0].split("@")[0] for line in ip("-br", "link", check=False).stdout.splitlines()}
    return spaces | links


def reap_abandoned() -> None:
    """Remove the clusters whose owning test session is gone (killed before it could clean up)."""
    out = ip("-o", "link", "show", "type", "bridge", check=False).stdout
    for line in out.splitlines():
        m = re.search(rf"\d+: ({BRIDGE_PREFIX}(\d+)):.*alias {OWNER_TAG} pid=(\d+) root=(\S+)", line)
        if m is None or _alive(int(m.group(3))):
            continue
        index = int(m.group(2))
        for ns in ip("netns", "list", check=False).stdout.split("\n"):
            name = ns.split(" ")[0]
            if name.startswith(f"iol{index}-"):
                kill_namespace(name)
                ip("netns", "del", name, check=False)
        ip("link", "del", m.group(1), check=False)
        root = Path(m.group(4))
        if root.name.startswith("iolens-cluster-"):
            shutil.rmtree(root, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
