"""/proc/loadavg: load over 1, 5 and 15 minutes (tasks running or in uninterruptible sleep, often I/O), the
runnable and total scheduling entities, and the last pid. All gauges."""

from __future__ import annotations

from iolens.monitor.common import Collector, Tree, read_file, to_float, to_int


def parse(text: str) -> tuple[Tree, int]:
    parts = text.split()
    try:
        running, _, total = parts[3].partition("/")
        return {
            "load1": to_float(parts[0]),
            "load5": to_float(parts[1]),
            "load15": to_float(parts[2]),
            "runnable": to_int(running),
            "entities": to_int(total),
        }, 0
    except (IndexError, ValueError):
        return {}, 1 if text.strip() else 0


class LoadavgCollector(Collector):
    name = "loadavg"
    all_gauges = True

    def __init__(self, proc: str = "/proc") -> None:
        super().__init__()
        self.path = f"{proc}/loadavg"

    def describe(self) -> str:
        return self.path

    def read(self) -> Tree:
        data, skipped = parse(read_file(self.path))
        self.skipped += skipped
        return data
