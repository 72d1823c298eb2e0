"""/proc/diskstats: per block device I/O counters, every field the kernel prints (Documentation/admin-guide/
iostats.rst): 11 fields before 4.18, discards from 4.18 (15), flushes from 5.5 (17).

Sectors are 512-byte units whatever the device's sector size; the reading also carries them as bytes.
Partitions, loop, ram and zram devices are left out by default (a partition's I/O is counted again in its
disk; node_exporter leaves out the same kinds), `devices` (a regular expression) chooses others.
"""

from __future__ import annotations

import re

from iolens.monitor.common import Collector, Tree, read_file, to_int

# The kernel's order; names as in iostats.rst, with units in the name.
FIELDS = (
    "reads_completed", "reads_merged", "sectors_read", "read_time_ms",
    "writes_completed", "writes_merged", "sectors_written", "write_time_ms",
    "ios_in_progress", "io_time_ms", "weighted_io_time_ms",
    "discards_completed", "discards_merged", "sectors_discarded", "discard_time_ms",
    "flushes_completed", "flush_time_ms",
)  # fmt: skip
SECTOR = 512

DEFAULT_EXCLUDE = re.compile(
    r"^(loop\d+|z?ram\d+|fd\d+|(sd|vd|hd|xvd)[a-z]+\d+|nvme\d+n\d+p\d+|mmcblk\d+p\d+)$"
)


def parse(text: str) -> tuple[Tree, int]:
    """{device: {field: int, read_bytes, written_bytes[, discarded_bytes]}} and the count of malformed
    lines."""
    out: Tree = {}
    skipped = 0
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if len(parts) < 14:
            skipped += 1
            continue
        try:
            values = [to_int(x) for x in parts[3 : 3 + len(FIELDS)]]
        except ValueError:
            skipped += 1
            continue
        dev: Tree = dict(zip(FIELDS, values, strict=False))
        dev["read_bytes"] = dev["sectors_read"] * SECTOR
        dev["written_bytes"] = dev["sectors_written"] * SECTOR
        if "sectors_discarded" in dev:
            dev["discarded_bytes"] = dev["sectors_discarded"] * SECTOR
        out[parts[2]] = dev
    return out, skipped


class DiskstatsCollector(Collector):
    name = "diskstats"
    gauges = frozenset({"ios_in_progress"})

    def __init__(self, proc: str = "/proc", devices: str | None = None) -> None:
        super().__init__()
        self.path = f"{proc}/diskstats"
        self.include = re.compile(devices) if devices else None

    def describe(self) -> str:
        return self.path

    def read(self) -> Tree:
        data, skipped = parse(read_file(self.path))
        self.skipped += skipped
        if self.include is not None:
            return {d: v for d, v in data.items() if self.include.search(d)}
        return {d: v for d, v in data.items() if not DEFAULT_EXCLUDE.match(d)}
