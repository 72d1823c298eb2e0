"""/proc/self/mountstats: NFS client statistics per mount — bytes, events, the RPC transport and per-operation
counts and times (statvers 1.0 and 1.1; per-op lines with or without the errors column of kernels ≥ 5.x).

Only NFS mounts (fstype nfs, nfs4) carry statistics; other mounts are not in the reading.
"""

from __future__ import annotations

from iolens.monitor.common import Collector, SourceUnavailable, Tree, read_file, to_int

# `bytes:` in the kernel's order.
BYTES = (
    "normal_read_bytes", "normal_write_bytes", "direct_read_bytes", "direct_write_bytes",
    "server_read_bytes", "server_write_bytes", "read_pages", "write_pages",
)  # fmt: skip
# `events:` in the kernel's order (nfs_iostat.h); statvers 1.0 prints fewer.
EVENTS = (
    "inode_revalidate", "dentry_revalidate", "data_invalidate", "attr_invalidate",
    "vfs_open", "vfs_lookup", "vfs_access", "vfs_update_page", "vfs_read_page", "vfs_read_pages",
    "vfs_write_page", "vfs_write_pages", "vfs_getdents", "vfs_setattr", "vfs_flush", "vfs_fsync",
    "vfs_lock", "vfs_release", "congestion_wait", "setattr_trunc", "extend_write", "silly_rename",
    "short_read", "short_write", "delay", "pnfs_read", "pnfs_write",
)  # fmt: skip
# A per-operation line: ops transmissions major_timeouts bytes_sent bytes_received queue rtt execute [errors].
OP_FIELDS = (
    "ops", "transmissions", "major_timeouts", "bytes_sent", "bytes_received",
    "queue_ms", "rtt_ms", "execute_ms", "errors",
)  # fmt: skip
# `xprt:` by protocol; statvers 1.0 prints the first ones only.
XPRT = {
    "tcp": ("port", "bind_count", "connect_count", "connect_time", "idle_time", "sends", "recvs",
            "bad_xids", "req_u", "bklog_u", "max_slots", "sending_u", "pending_u"),
    "udp": ("port", "bind_count", "sends", "recvs", "bad_xids", "req_u", "bklog_u", "max_slots",
            "sending_u", "pending_u"),
}  # fmt: skip
NFS_TYPES = ("nfs", "nfs4")


def _unescape(path: str) -> str:
    # Mount points are printed with octal escapes for space, tab, newline and backslash.
    if "\\" not in path:
        return path
    out, i = [], 0
    while i < len(path):
        if path[i] == "\\" and i + 4 <= len(path) and all(c in "01234567" for c in path[i + 1 : i + 4]):
            out.append(chr(int(path[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(path[i])
            i += 1
    return "".join(out)


def _numbers(names: tuple[str, ...], values: list[str]) -> Tree:
    return {n: to_int(v) for n, v in zip(names, values, strict=False)}


def parse(text: str) -> tuple[Tree, int]:
    """{mount point: {export, fstype, statvers, opts, age_s, bytes, events, xprt, ops}} for NFS mounts, and
    the count of malformed lines inside them."""
    out: Tree = {}
    skipped = 0
    cur: Tree | None = None
    in_ops = False
    for line in text.splitlines():
        if line.startswith("device "):
            in_ops = False
            cur = None
            # device SRC mounted on MNT with fstype TYPE [statvers=V]
            parts = line.split()
            try:
                on = parts.index("on")
                fst = parts.index("fstype")
            except ValueError:
                skipped += 1
                continue
            fstype = parts[fst + 1] if fst + 1 < len(parts) else ""
            if fstype not in NFS_TYPES:
                continue
            statvers = ""
            for p in parts[fst + 2 :]:
                if p.startswith("statvers="):
                    statvers = p.partition("=")[2]
            mount = _unescape(" ".join(parts[on + 1 : fst - 1]))
            cur = {"export": parts[1], "fstype": fstype, "statvers": statvers}
            out[mount] = cur
            continue
        if cur is None:
            continue
        stripped = line.strip()
        if not stripped:
            continue
        key, sep, rest = stripped.partition(":")
        try:
            if in_ops:
                if not sep:
                    raise ValueError
                values = rest.split()
                if len(values) < 8:
                    raise ValueError
                cur.setdefault("ops", {})[key] = _numbers(OP_FIELDS, values)
            elif key == "opts":
                cur["opts"] = rest.strip()
            elif key == "age":
                cur["age_s"] = to_int(rest)
            elif key == "bytes":
                cur["bytes"] = _numbers(BYTES, rest.split())
            elif key == "events":
                cur["events"] = _numbers(EVENTS, rest.split())
            elif key == "xprt":
                values = rest.split()
                proto = values[0]
                names = XPRT.get(proto)
                xprt: Tree = {"protocol": proto}
                if names is not None:
                    xprt.update(_numbers(names, values[1:]))
                cur["xprt"] = xprt
            elif stripped == "per-op statistics":
                in_ops = True
            # Other lines (caps, sec, nfsv4, RPC iostats version, impl_id, fsc) carry no counters.
        except (ValueError, IndexError):
            skipped += 1
    return out, skipped


def mount_address(opts: str) -> str:
    """The server address of a mount, from its options (mountaddr= or addr=), else ""."""
    found = {}
    for o in opts.split(","):
        k, _, v = o.partition("=")
        found[k] = v
    return found.get("mountaddr") or found.get("addr") or ""


class MountstatsCollector(Collector):
    name = "mountstats"
    gauges = frozenset({"age_s", "port", "idle_time", "max_slots"})

    def __init__(self, proc: str = "/proc") -> None:
        super().__init__()
        self.path = f"{proc}/self/mountstats"
        self.mountinfo = f"{proc}/self/mountinfo"
        self._addr: dict[str, str] = {}

    def describe(self) -> str:
        return self.path

    def _addresses(self, mounts: Tree) -> None:
        """Server addresses from mountinfo's super options, read again only when the NFS mounts change."""
        if set(mounts) == set(self._addr):
            return
        self._addr = {m: "" for m in mounts}
        try:
            text = read_file(self.mountinfo)
        except SourceUnavailable:
            return
        for line in text.splitlines():
            pre, sep, post = line.partition(" - ")
            fields = pre.split()
            if not sep or len(fields) < 5:
                continue
            mnt = _unescape(fields[4])
            if mnt in self._addr:
                sup = post.split()
                if len(sup) >= 3:
                    self._addr[mnt] = mount_address(sup[2])

    def read(self) -> Tree:
        data, skipped = parse(read_file(self.path))
        self.skipped += skipped
        self._addresses(data)
        for mnt, m in data.items():
            m["mountaddr"] = self._addr.get(mnt) or mount_address(m.get("opts", ""))
        return data
