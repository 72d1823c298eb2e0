"""/proc/pressure/io (PSI): the share of time some or all non-idle tasks waited for I/O — avg10, avg60, avg300
(percent, gauges) and total (microseconds, a counter). Needs a kernel with CONFIG_PSI (and psi=1)."""

from __future__ import annotations

from iolens.monitor.common import Collector, Tree, read_file, to_float, to_int


def parse(text: str) -> tuple[Tree, int]:
    """{"some": {avg10, avg60, avg300, total_us}, "full": {...}} and the count of malformed lines."""
    out: Tree = {}
    skipped = 0
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        kind = parts[0]
        values: Tree = {}
        try:
            for tok in parts[1:]:
                key, eq, value = tok.partition("=")
                if not eq:
                    raise ValueError
                if key == "total":
                    values["total_us"] = to_int(value)
                else:
                    values[key] = to_float(value)
        except ValueError:
            skipped += 1
            continue
        if kind not in ("some", "full") or "total_us" not in values:
            skipped += 1
            continue
        out[kind] = values
    return out, skipped


class PressureCollector(Collector):
    name = "pressure"
    gauges = frozenset({"avg10", "avg60", "avg300"})

    def __init__(self, proc: str = "/proc") -> None:
        super().__init__()
        self.path = f"{proc}/pressure/io"

    def describe(self) -> str:
        return self.path

    def read(self) -> Tree:
        data, skipped = parse(read_file(self.path))
        self.skipped += skipped
        return data
