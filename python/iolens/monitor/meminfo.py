"""/proc/meminfo, the lines that tell about writes waiting for storage: Dirty, Writeback, NFS_Unstable (gone
from kernels ≥ 5.8, where it reads 0 or is absent) and WritebackTmp, in bytes. All gauges."""

from __future__ import annotations

from iolens.monitor.common import Collector, Tree, read_file, to_int

KEYS = {"Dirty": "dirty_bytes", "Writeback": "writeback_bytes", "NFS_Unstable": "nfs_unstable_bytes",
        "WritebackTmp": "writeback_tmp_bytes"}  # fmt: skip


def parse(text: str) -> tuple[Tree, int]:
    out: Tree = {}
    skipped = 0
    for line in text.splitlines():
        key, sep, rest = line.partition(":")
        name = KEYS.get(key)
        if name is None:
            continue
        parts = rest.split()
        try:
            if not sep or not parts:
                raise ValueError
            value = to_int(parts[0])
        except ValueError:
            skipped += 1
            continue
        unit = parts[1] if len(parts) > 1 else ""
        out[name] = value * 1024 if unit == "kB" else value
    return out, skipped


class MeminfoCollector(Collector):
    name = "meminfo"
    all_gauges = True

    def __init__(self, proc: str = "/proc") -> None:
        super().__init__()
        self.path = f"{proc}/meminfo"

    def describe(self) -> str:
        return self.path

    def read(self) -> Tree:
        data, skipped = parse(read_file(self.path))
        self.skipped += skipped
        return data
