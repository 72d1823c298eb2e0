"""cgroup v2 io.stat: per device (MAJ:MIN) bytes and I/Os of a cgroup — rbytes, wbytes, rios, wios, dbytes,
dios, and whatever else the kernel adds (io.latency and io.cost keys are kept when they are integers).

The cgroups are given as directories of the cgroup v2 hierarchy (or their io.stat files); by default the
cgroup this process is in (from /proc/self/cgroup) under the cgroup2 mount (from /proc/self/mounts). A
cgroup without io.stat (the io controller not enabled for it, or the root on older kernels) is unavailable.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from iolens.monitor.common import Collector, SourceUnavailable, Tree, read_file, to_int


def parse(text: str) -> tuple[Tree, int]:
    """{"MAJ:MIN": {key: int}} and the count of malformed lines."""
    out: Tree = {}
    skipped = 0
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        dev = parts[0]
        major, colon, minor = dev.partition(":")
        if not colon or not major.isdigit() or not minor.isdigit():
            skipped += 1
            continue
        fields: Tree = {}
        for tok in parts[1:]:
            key, eq, value = tok.partition("=")
            if not eq:
                continue
            try:
                fields[key] = to_int(value)
            except ValueError:
                continue
        out[dev] = fields
    return out, skipped


def cgroup2_mount(proc: str = "/proc") -> str | None:
    """Where the cgroup v2 hierarchy is mounted, or None."""
    try:
        text = read_file(f"{proc}/self/mounts")
    except SourceUnavailable:
        return None
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 3 and f[2] == "cgroup2":
            return f[1]
    return None


def own_cgroup(proc: str = "/proc") -> str | None:
    """This process's cgroup v2 path ("0::/path" in /proc/self/cgroup), or None."""
    try:
        text = read_file(f"{proc}/self/cgroup")
    except SourceUnavailable:
        return None
    for line in text.splitlines():
        if line.startswith("0::"):
            return line[3:].strip() or "/"
    return None


class CgroupIoCollector(Collector):
    name = "cgroup_io"

    def __init__(self, cgroups: Iterable[str] = (), proc: str = "/proc") -> None:
        super().__init__()
        self.files: dict[str, str] = {}
        self.problem = ""
        given = list(cgroups)
        if given:
            for g in given:
                path = g if g.endswith("io.stat") else os.path.join(g, "io.stat")
                self.files[os.path.dirname(path)] = path
            return
        mount = cgroup2_mount(proc)
        rel = own_cgroup(proc)
        if mount is None or rel is None:
            self.problem = "no cgroup v2 hierarchy mounted"
            return
        self.files[rel] = os.path.join(mount, rel.lstrip("/"), "io.stat")

    def describe(self) -> str:
        return ", ".join(self.files.values()) or self.problem

    def read(self) -> Tree:
        if self.problem:
            raise SourceUnavailable(self.problem)
        out: Tree = {}
        reasons = []
        for name, path in self.files.items():
            try:
                data, skipped = parse(read_file(path))
            except SourceUnavailable as exc:
                reasons.append(str(exc))
                continue
            self.skipped += skipped
            out[name] = data
        if not out:
            reason = reasons[0] if reasons else "no cgroup"
            if "no such file" in reason:
                reason += " (the io controller is not enabled for this cgroup in cgroup v2)"
            raise SourceUnavailable(reason)
        return out
