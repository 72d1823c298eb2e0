"""`iolens monitor parse FILE`: what the parsers read from a saved statistics file — the output of
`lctl get_param` (one or many parameters) or a copy of a /proc file — with its kind recognised from the
content when not given."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from iolens.monitor import (
    cgroupio,
    diskstats,
    loadavg,
    meminfo,
    mountstats,
    pressure,
    procio,
    procstat,
)
from iolens.monitor.common import Tree
from iolens.monitor.lustre import histogram, params
from iolens.monitor.lustre import parse as lustre_parse
from iolens.monitor.lustre.stats import parse_counter

LUSTRE_KINDS = ("stats", "job_stats", "rpc_stats", "brw_stats")
LINUX_PARSERS: dict[str, Callable[[str], tuple[Tree, int]]] = {
    "diskstats": diskstats.parse,
    "proc_io": procio.parse,
    "mountstats": mountstats.parse,
    "cgroup_io": cgroupio.parse,
    "pressure": pressure.parse,
    "meminfo": meminfo.parse,
    "loadavg": loadavg.parse,
    "stat": procstat.parse,
}
KINDS = LUSTRE_KINDS + tuple(LINUX_PARSERS)

_LOADAVG = re.compile(r"^\d+\.\d+ \d+\.\d+ \d+\.\d+ \d+/\d+ \d+$")
_CGROUP = re.compile(r"^\d+:\d+ \w+=")


class UnknownKind(ValueError):
    """The content is none of the kinds the monitor reads."""


def detect(text: str) -> str:
    """The kind of a statistics text, from its content."""
    entries = params.split_output(text)
    if entries and entries[0][0] is not None:
        return params.kind_of(entries[0][0])
    lines = [ln for ln in text.splitlines() if ln.strip()]
    stripped = [ln.strip() for ln in lines]
    if any(s == "job_stats:" or s.startswith("- job_id:") for s in stripped):
        return "job_stats"
    if any(histogram.is_table_start(ln) for ln in lines):
        return "brw_stats" if ("bulk r/w" in text or "disk I/O" in text) else "rpc_stats"
    if any(parse_counter(s.split()) is not None for s in stripped):
        return "stats"
    if not lines:
        raise UnknownKind("the file is empty")
    first = stripped[0]
    if first.startswith("device ") and " mounted on " in first:
        return "mountstats"
    if first.startswith(("some avg", "full avg")):
        return "pressure"
    if any(s.startswith("MemTotal:") for s in stripped):
        return "meminfo"
    if first.startswith("rchar:"):
        return "proc_io"
    if first.startswith("cpu ") or any(s.startswith("procs_blocked") for s in stripped):
        return "stat"
    if _LOADAVG.match(first):
        return "loadavg"
    if _CGROUP.match(first):
        return "cgroup_io"
    parts = first.split()
    if len(parts) >= 14 and parts[0].isdigit() and parts[1].isdigit():
        return "diskstats"
    if first.split()[0].rstrip(":") == "snapshot_time":
        return "stats"
    raise UnknownKind(f"not a statistics file the monitor reads (first line: {first[:60]!r})")


def parse_text(text: str, kind: str | None = None) -> dict[str, Any]:
    """{"kind", "skipped_lines", "entries": [{"param": name or null, "kind", ...what the parser read}]}."""
    if kind is not None and kind not in KINDS:
        raise UnknownKind(f"unknown kind {kind!r} (one of {', '.join(KINDS)})")
    found = kind or detect(text)
    skipped = 0
    entries: list[Tree] = []
    if found in LINUX_PARSERS:
        data, skipped = LINUX_PARSERS[found](text)
        entries.append({"param": None, "kind": found, **data})
    else:
        for name, body in params.split_output(text) or [(None, "")]:
            k = kind or (params.kind_of(name) if name is not None else found)
            data, n = lustre_parse(k, body)
            skipped += n
            entry: Tree = {"param": name, "kind": k}
            if name is not None:
                entry.update(params.describe(name))
            entry.update(data)
            entries.append(entry)
    return {"kind": found, "skipped_lines": skipped, "entries": entries}
