"""The sampler: reads every collector once per interval and turns the readings into sample records (raw
values, per-second rates since the previous reading, resets), plus events when a source becomes unavailable,
comes back, or can be read only in part (some of its files may not be read: reported once, "partial").

A source that cannot be read is reported unavailable once and tried again every `retry_s` seconds; the other
sources go on. A collector that raises anything else is treated the same way (a bug in one parser must not
stop the monitor), with the exception's text as the reason.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from iolens.monitor.cgroupio import CgroupIoCollector
from iolens.monitor.common import Collector, SourceUnavailable, Tree, rates
from iolens.monitor.diskstats import DiskstatsCollector
from iolens.monitor.loadavg import LoadavgCollector
from iolens.monitor.lustre.collector import LustreCollector
from iolens.monitor.meminfo import MeminfoCollector
from iolens.monitor.mountstats import MountstatsCollector
from iolens.monitor.pressure import PressureCollector
from iolens.monitor.procio import ProcIoCollector
from iolens.monitor.procstat import StatCollector

SOURCES = (
    "diskstats", "proc_io", "mountstats", "cgroup_io", "pressure", "meminfo", "loadavg", "stat", "lustre",
)  # fmt: skip

Record = dict[str, Any]


@dataclass
class SourceOptions:
    """How each collector is set up (the `iolens monitor` options that are not about output)."""

    proc: str = "/proc"
    devices: str | None = None
    pids: list[int] = field(default_factory=list)
    pid_trees: list[int] = field(default_factory=list)
    cgroups: list[str] = field(default_factory=list)
    lustre_mode: str = "auto"
    lustre_roots: tuple[str, ...] | None = None
    lustre_exports: bool = False


def make_collectors(names: Sequence[str], opts: SourceOptions | None = None) -> list[Collector]:
    o = opts or SourceOptions()
    out: list[Collector] = []
    for name in names:
        if name == "diskstats":
            out.append(DiskstatsCollector(o.proc, o.devices))
        elif name == "proc_io":
            out.append(ProcIoCollector(o.pids, o.pid_trees, o.proc))
        elif name == "mountstats":
            out.append(MountstatsCollector(o.proc))
        elif name == "cgroup_io":
            out.append(CgroupIoCollector(o.cgroups, o.proc))
        elif name == "pressure":
            out.append(PressureCollector(o.proc))
        elif name == "meminfo":
            out.append(MeminfoCollector(o.proc))
        elif name == "loadavg":
            out.append(LoadavgCollector(o.proc))
        elif name == "stat":
            out.append(StatCollector(o.proc))
        elif name == "lustre":
            kw: dict[str, Any] = {"mode": o.lustre_mode, "exports": o.lustre_exports}
            if o.lustre_roots is not None:
                kw["roots"] = o.lustre_roots
            out.append(LustreCollector(**kw))
        else:
            raise ValueError(f"unknown source {name!r} (one of {', '.join(SOURCES)})")
    return out


@dataclass
class _State:
    collector: Collector
    available: bool | None = None
    reason: str = ""
    last: Tree | None = None
    last_mono: float = 0.0
    retry_at: float = 0.0
    # The collector's unreadable parts already reported.
    said: set[str] = field(default_factory=set)


class Sampler:
    """Takes samples of a fixed set of collectors. sample() is one reading of all of them; run() repeats it
    on a schedule until a duration passes or stop() is called."""

    def __init__(self, collectors: Sequence[Collector], retry_s: float = 10.0) -> None:
        self.states = [_State(c) for c in collectors]
        self.retry_s = retry_s
        self.seq = 0
        self.t0 = time.monotonic()
        self.events: list[Record] = []
        self._stop = threading.Event()
        # sample() changes each source's last reading: the sampling thread and an extra sample asked for
        # from another thread (take()) must not interleave.
        self._lock = threading.Lock()

    @property
    def collectors(self) -> list[Collector]:
        return [s.collector for s in self.states]

    def availability(self) -> dict[str, Record]:
        """{source: {"available": bool or null, "reason"?, "reads"?}} as known now."""
        out: dict[str, Record] = {}
        for s in self.states:
            entry: Record = {"available": s.available, "reads": s.collector.describe()}
            if s.available is False:
                entry["reason"] = s.reason
            if s.collector.unreadable:
                entry["unreadable"] = dict(s.collector.unreadable)
            out[s.collector.name] = entry
        return out

    def _event(self, kind: str, source: str, now: float, reason: str = "") -> Record:
        ev: Record = {"type": "event", "event": kind, "source": source, "time": now}
        if reason:
            ev["reason"] = reason
        self.events.append(ev)
        return ev

    def sample(self) -> tuple[Record, list[Record]]:
        """One sample record and the events it caused (sources that became unavailable or came back)."""
        now = time.time()
        mono = time.monotonic()
        events: list[Record] = []
        data: Record = {}
        out_rates: Record = {}
        resets: list[str] = []
        skipped: Record = {}
        for s in self.states:
            c = s.collector
            if s.available is False and mono < s.retry_at:
                continue
            try:
                reading = c.read()
            except Exception as exc:  # noqa: BLE001 - one source's failure must not stop the others
                reason = str(exc) if isinstance(exc, SourceUnavailable) else f"{type(exc).__name__}: {exc}"
                if s.available is not False:
                    events.append(self._event("unavailable", c.name, now, reason))
                s.available, s.reason = False, reason
                s.retry_at = mono + self.retry_s
                s.last = None
                continue
            if s.available is False:
                events.append(self._event("available", c.name, now))
            s.available = True
            new = {part: why for part, why in c.unreadable.items() if part not in s.said}
            if new:
                s.said.update(new)
                ev = self._event(
                    "partial", c.name, now, f"{len(new)} part(s) could not be read: {', '.join(new)}"
                )
                ev["unreadable"] = new
                events.append(ev)
            data[c.name] = reading
            if s.last is not None:
                found: list[str] = []
                r = rates(s.last, reading, mono - s.last_mono, c, (c.name,), found)
                if r:
                    out_rates[c.name] = r
                resets.extend(found)
            resets.extend(c.reappeared(s.last, reading))
            s.last, s.last_mono = reading, mono
            if c.skipped:
                skipped[c.name] = c.skipped
        self.seq += 1
        record: Record = {
            "type": "sample",
            "seq": self.seq,
            "time": round(now, 6),
            "elapsed_s": round(mono - self.t0, 6),
            "data": data,
            "rates": out_rates,
        }
        if resets:
            record["resets"] = resets
        if skipped:
            record["skipped_lines"] = skipped
        return record, events

    def take(
        self, on_record: Callable[[Record], None], on_event: Callable[[Record], None] | None = None
    ) -> None:
        """One sample now, handed to the callbacks; safe to call while run() goes on in another thread (the
        records stay in time order)."""
        with self._lock:
            record, events = self.sample()
            for ev in events:
                if on_event is not None:
                    on_event(ev)
            on_record(record)

    def stop(self) -> None:
        self._stop.set()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`; True when stop() was called meanwhile."""
        return self._stop.wait(seconds)

    def run(
        self,
        interval: float | Callable[[float], float],
        on_record: Callable[[Record], None],
        on_event: Callable[[Record], None] | None = None,
        duration: float | None = None,
        final_sample: bool = False,
    ) -> int:
        """Sample until `duration` seconds passed (a sample at 0, interval, 2×interval … up to duration) or
        stop() was called; with final_sample, one more sample right after stop(). `interval` may be a
        function of the elapsed seconds (finer sampling at first). Returns the number of samples."""
        start = time.monotonic()
        due = start
        n = 0
        while True:
            self.take(on_record, on_event)
            n += 1
            step = interval(time.monotonic() - start) if callable(interval) else interval
            due += step
            now = time.monotonic()
            if due < now:
                # A sample took longer than the interval (or the machine stalled): skip, do not burst.
                due = now + step - (now - due) % step
            if duration is not None and due - start > duration + 1e-6:
                return n
            if self._stop.wait(max(0.0, due - time.monotonic())):
                if final_sample:
                    self.take(on_record, on_event)
                    n += 1
                return n
