"""Per-command totals of the watched processes' /proc/PID/io, for the Prometheus and InfluxDB outputs.

One series per process grows without bound (a shell loop forks a new `sleep` every second); these outputs
serve one series per command (`comm`, plus the batch job where known: jobid.py) instead, and only the top N.

Counters that never go down: every reading adds to its command's totals what each process did since the
previous reading (a process new to the set counts from zero: it was forked in between). A process that
exits leaves its last-read values in its command's totals. What it did between its last reading and its
exit is not in its own figures; Linux adds all of a reaped child's figures to its parent's, so when the
parent is watched too that remainder comes back as part of the parent's next increase and is counted under
the parent's command. The child's already-counted part is taken off that increase (owed by the parent, and
passed on to the grandparent if the parent exits first), so nothing is counted twice. A process whose
counters went down is a new process under a reused process id, counted from zero.

The top N: commands ranked by cumulative characters read and written (rchar + wchar) at each reading; ranks
only change when one command's total passes another's. A command outside the top is not served (its series
goes stale in Prometheus, which is not a reset); what commands do while outside the top is added to the
remainder series `comm="_other"`, itself a counter that never goes down. So the sum of the per-second rates
of all served series is the rate of all watched processes, except in the interval a command enters or leaves
the top, and the number of series is at most N + 1.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

from iolens.monitor.common import Tree
from iolens.monitor.procio import FIELDS, ProcInfo

OTHER = "_other"
DEFAULT_TOP = 20
Key = tuple[str, str]  # (comm, job id or "")
Counts = dict[str, int]
Series = list[tuple[str, str, Counts]]


def _zero() -> Counts:
    return dict.fromkeys(FIELDS, 0)


@dataclass
class _Proc:
    key: Key
    last: Counts
    parent: int | None
    # Figures of exited children already counted, to be taken off this process's next increases.
    owed: Counts = field(default_factory=_zero)


@dataclass
class _Top:
    n: int
    members: frozenset[Key] = frozenset()
    other: Counts | None = None  # None until a command has been left out
    series: Series = field(default_factory=list)


class CommandTotals:
    """Fed each proc_io reading (update, from the sampler's thread); read by the outputs (top, any thread)."""

    def __init__(self, tops: Iterable[int] = (DEFAULT_TOP,)) -> None:
        self.procs: dict[int, _Proc] = {}
        self.totals: dict[Key, Counts] = {}
        self._tops = {n: _Top(n) for n in tops}
        self._lock = threading.Lock()
        self.last_added: dict[Key, Counts] = {}  # the last update's increases (the live view reads them)

    def update(self, reading: Tree, info: dict[int, ProcInfo]) -> dict[Key, Counts]:
        """Add a reading's increases to the totals; returns them ({(comm, job): counts}, the live view's
        per-command rates)."""
        seen: dict[int, _Proc] = {}
        raw: dict[int, Counts] = {}
        for pid_text, fields in reading.items():
            pid = int(pid_text)
            meta = info.get(pid) or ProcInfo(None, "")
            now = {k: int(fields[k]) for k in FIELDS if isinstance(fields.get(k), int)}
            old = self.procs.get(pid)
            if old is not None and any(now.get(k, 0) < old.last.get(k, 0) for k in FIELDS):
                old = None  # a new process under a reused id
            base = old.last if old is not None else {}
            seen[pid] = _Proc((str(fields.get("comm", "")), meta.job), now, meta.parent,
                              old.owed if old is not None else _zero())  # fmt: skip
            raw[pid] = {k: v - base.get(k, 0) for k, v in now.items()}
        for pid, gone in self.procs.items():
            if pid in seen:
                continue
            # Exited (reaped): the reaper's figures take in all of this one's, and a parent that exited too
            # passed them on to its own parent; what was counted here is owed by the first one still watched.
            # Owed before this reading's increases are counted: the reaping may be in them already.
            up, hops = gone.parent, 0
            while up is not None and up not in seen and up in self.procs and hops < len(self.procs):
                up, hops = self.procs[up].parent, hops + 1
            if up is not None and up in seen:
                for k in FIELDS:
                    seen[up].owed[k] += gone.last.get(k, 0) + gone.owed[k]
        added: dict[Key, Counts] = {}
        for pid, proc in seen.items():
            acc = added.setdefault(proc.key, _zero())
            for k, d in raw[pid].items():
                taken = min(d, proc.owed[k])
                proc.owed[k] -= taken
                acc[k] += d - taken
        self.procs = seen
        self.last_added = added
        for key, acc in added.items():
            total = self.totals.setdefault(key, _zero())
            for k, d in acc.items():
                total[k] += d
        if not self._tops:  # the live view's: increases only
            return added
        ranked = sorted(self.totals, key=lambda k: (-(self.totals[k]["rchar"] + self.totals[k]["wchar"]), k))
        with self._lock:
            for top in self._tops.values():
                self._select(top, ranked, added)
        return added

    def _select(self, top: _Top, ranked: list[Key], added: dict[Key, Counts]) -> None:
        members = frozenset(ranked[: top.n])
        if len(ranked) > top.n and top.other is None:
            top.other = _zero()
        if top.other is not None:
            for key, acc in added.items():
                if key not in members:
                    for k, d in acc.items():
                        top.other[k] += d
        top.members = members
        series = [(comm, job, dict(self.totals[(comm, job)])) for comm, job in ranked[: top.n]]
        if top.other is not None:
            series.append((OTHER, "", dict(top.other)))
        top.series = series

    def top(self, n: int = DEFAULT_TOP) -> Series:
        """(comm, job id or "", totals) of the top n commands by I/O and the `_other` remainder."""
        with self._lock:
            return list(self._tops[n].series)
