"""/proc/stat, the process counts: procs_blocked (tasks waiting for I/O to complete, a gauge),
procs_running (gauge), and the counters processes (forks since boot) and ctxt (context switches)."""

from __future__ import annotations

from iolens.monitor.common import Collector, Tree, read_file, to_int

KEYS = ("procs_blocked", "procs_running", "processes", "ctxt")


def parse(text: str) -> tuple[Tree, int]:
    out: Tree = {}
    skipped = 0
    for line in text.splitlines():
        key, _, rest = line.partition(" ")
        if key not in KEYS:
            continue
        try:
            out[key] = to_int(rest)
        except ValueError:
            skipped += 1
    return out, skipped


class StatCollector(Collector):
    name = "stat"
    gauges = frozenset({"procs_blocked", "procs_running"})

    def __init__(self, proc: str = "/proc") -> None:
        super().__init__()
        self.path = f"{proc}/stat"

    def describe(self) -> str:
        return self.path

    def read(self) -> Tree:
        data, skipped = parse(read_file(self.path))
        self.skipped += skipped
        return data
