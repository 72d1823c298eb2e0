"""/proc/<pid>/io of a set of processes: characters and system calls through read/write (rchar, wchar, syscr,
syscw) and the bytes each process caused to be fetched from or sent to storage (read_bytes, write_bytes,
cancelled_write_bytes). The figures of a process include its threads and the children it has reaped.

The set is given as process ids (`pids`), as process trees (`trees`: a process and every descendant, found
again at each reading through /proc/<pid>/task/<tid>/children), or both. A process that exits leaves the
reading; that is not a reset. One that appears between two readings counts from zero (a new process's
counters start at zero). Reading another user's process needs the same user or root.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from iolens.monitor.common import Collector, SourceUnavailable, Tree, read_file, to_int

FIELDS = ("rchar", "wchar", "syscr", "syscw", "read_bytes", "write_bytes", "cancelled_write_bytes")


def parse(text: str) -> tuple[Tree, int]:
    """{field: int} of one /proc/<pid>/io, and the count of malformed lines."""
    out: Tree = {}
    skipped = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        key, sep, value = line.partition(":")
        try:
            if not sep:
                raise ValueError
            out[key.strip()] = to_int(value)
        except ValueError:
            skipped += 1
    return out, skipped


def children(pid: int, proc: str = "/proc") -> list[int]:
    """Direct children of a process (every thread's children file), [] when it is gone."""
    kids: list[int] = []
    try:
        tids = os.listdir(f"{proc}/{pid}/task")
    except OSError:
        return kids
    for tid in tids:
        try:
            with open(f"{proc}/{pid}/task/{tid}/children", "rb") as f:
                kids.extend(int(x) for x in f.read().split())
        except (OSError, ValueError):
            continue
    return kids


def descendants(root: int, proc: str = "/proc") -> list[int]:
    """root and every process below it."""
    seen: list[int] = []
    todo = [root]
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.append(pid)
        todo.extend(children(pid, proc))
    return seen


class ProcIoCollector(Collector):
    name = "proc_io"
    # A process that joins the set between two readings was (almost always) forked in between: its
    # counters started at zero then.
    new_from_zero = True

    def __init__(
        self,
        pids: Iterable[int] = (),
        trees: Iterable[int] = (),
        proc: str = "/proc",
        exclude_self: bool = True,
    ) -> None:
        super().__init__()
        self.pids = list(pids)
        self.trees = list(trees)
        self.proc = proc
        self.exclude = {os.getpid()} if exclude_self else set()

    def describe(self) -> str:
        what = [f"pid {p}" for p in self.pids] + [f"tree of {p}" for p in self.trees]
        return f"{self.proc}/<pid>/io of " + (", ".join(what) or "no process")

    def current_pids(self) -> list[int]:
        pids = list(self.pids)
        for root in self.trees:
            pids.extend(p for p in descendants(root, self.proc) if p not in self.exclude)
        return sorted(set(pids))

    def _name(self, pid: int) -> str:
        # Read at every sample: a child forked by Python is "python" until it execs the engine.
        try:
            return read_file(f"{self.proc}/{pid}/comm").strip()
        except SourceUnavailable:
            return ""

    def read(self) -> Tree:
        if not self.pids and not self.trees:
            raise SourceUnavailable("no process to watch (give --pid or --pid-tree)")
        out: Tree = {}
        reasons = []
        for pid in self.current_pids():
            try:
                fields, skipped = parse(read_file(f"{self.proc}/{pid}/io"))
            except SourceUnavailable as exc:
                # An exited process leaves the set; one we may not read is said if nothing else can be read.
                reasons.append(str(exc))
                continue
            self.skipped += skipped
            fields["comm"] = self._name(pid)
            out[str(pid)] = fields
        if not out and reasons:
            raise SourceUnavailable(reasons[0])
        return out
