"""The per-node sample streams of an MPI run with `--monitor` (written by node_wrap, one per node and launch)
and each node's part of the document's "monitor" object: `monitor.nodes{HOST: …}` with the run's phase
windows marked on that node's own samples (docs/schema.md "monitor")."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iolens.monitor import stream
from iolens.monitor.common import TEXT_ERRORS
from iolens.monitor.node_wrap import PATTERN
from iolens.monitor.phases import mark
from iolens.monitor.sampler import SOURCES, make_collectors

Record = dict[str, Any]
WINDOW_KEYS = ("name", "iteration", "start", "end", "placed")


@dataclass
class NodeStream:
    """What one node wrote (over one or several launches), in time order."""

    host: str
    header: Record
    samples: list[Record] = field(default_factory=list)
    events: list[Record] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    # Every file ended with its end record (the wrapper was not killed, its disk did not fill).
    complete: bool = True


def read_streams(directory: Path) -> dict[str, NodeStream]:
    """{host: NodeStream} of the stream files in a directory; a file without a header is left out."""
    out: dict[str, NodeStream] = {}
    for path in sorted(directory.glob(PATTERN)):
        try:
            with open(path, encoding="utf-8", errors=TEXT_ERRORS) as f:
                records = list(stream.read(f))
        except OSError:
            continue
        header = next((r for r in records if r.get("type") == "header"), None)
        if header is None:
            continue
        host = str(header.get("host") or path.stem)
        node = out.setdefault(host, NodeStream(host, _usable_header(header)))
        node.files.append(path.name)
        node.samples.extend(r for r in records if r.get("type") == "sample" and _usable_sample(r))
        node.events.extend(r for r in records if r.get("type") == "event" and _usable_event(r))
        node.complete = node.complete and any(r.get("type") == "end" for r in records)
    for node in out.values():
        node.samples.sort(key=lambda r: r["time"])
        node.events.sort(key=lambda r: r.get("time") or 0.0)
    return out


# What a record read back must be for the phase figures and the document: the shape the monitor writes.
# A file in a shared directory may be damaged in any way; a record that is not of that shape is left out
# (its node then has fewer samples), never a crash of the run's report.
_BIG = 2**64


def _has_time(record: Record) -> bool:
    t = record.get("time")
    return isinstance(t, int | float) and not isinstance(t, bool) and abs(t) < _BIG and math.isfinite(t)


def _sound(value: Any, depth: int = 0) -> bool:
    """Plain JSON of the sizes the monitor writes: numbers finite and within 64 bits, nesting not deep."""
    if isinstance(value, dict):
        return depth < 16 and all(_sound(v, depth + 1) for v in value.values())
    if isinstance(value, list):
        return depth < 16 and all(_sound(v, depth + 1) for v in value)
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return abs(value) < _BIG
    return True


def _tree_of_readings(value: Any) -> bool:
    """A sample's `data` or `rates`: {source: {…}}."""
    return isinstance(value, dict) and all(isinstance(v, dict) for v in value.values())


def _usable_sample(record: Record) -> bool:
    return (
        _has_time(record)
        and _tree_of_readings(record.get("data"))
        and _tree_of_readings(record.get("rates", {}))
        and _sound(record)
    )


def _usable_event(record: Record) -> bool:
    return ("time" not in record or _has_time(record)) and _sound(record)


def _usable_header(header: Record) -> Record:
    """The header with only what the node's section uses in a usable shape: `sources` {name: {…}}, `node`
    an object."""
    out = dict(header)
    sources = header.get("sources")
    out["sources"] = (
        {str(k): v for k, v in sources.items() if isinstance(v, dict) and _sound(v)}
        if isinstance(sources, dict)
        else {}
    )
    if not isinstance(header.get("node"), dict):
        out.pop("node", None)
    return out


def node_section(node: NodeStream, windows: list[Record]) -> Record:
    """One node's entry in `monitor.nodes`: its samples, and the run's phase windows marked on them."""
    sources = node.header.get("sources")
    sources = sources if isinstance(sources, dict) else {}
    collectors = {c.name: c for c in make_collectors([s for s in SOURCES if s in sources])}
    marked = []
    for w in windows:
        nw = {k: w.get(k) for k in WINDOW_KEYS}
        mark(nw, node.samples, collectors)
        marked.append(nw)
    extra = node.header.get("node")
    extra = extra if isinstance(extra, dict) else {}
    times = [r["time"] for r in node.samples]
    return {
        "host": node.host,
        "local_rank": extra.get("local_rank"),
        "processes": (sources.get("proc_io") or {}).get("reads"),
        "interval": str(node.header.get("interval_s", "")),
        "started": times[0] if times else None,
        "ended": times[-1] if times else None,
        "complete": node.complete,
        "files": node.files,
        "sources": sources,
        "events": node.events,
        "windows": marked,
        "samples": node.samples,
    }


def sections(directory: Path, windows: list[Record]) -> dict[str, Record]:
    """`monitor.nodes`: {host: node_section} of every node that wrote a stream into the directory."""
    return {host: node_section(node, windows) for host, node in sorted(read_streams(directory).items())}
