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
from dataclasses import dataclass

from iolens.monitor import jobid
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
    return list(tree_parents(root, proc))


def tree_parents(root: int, proc: str = "/proc") -> dict[int, int | None]:
    """root and every process below it, each with its parent (None for root)."""
    seen: dict[int, int | None] = {}
    todo: list[tuple[int, int | None]] = [(root, None)]
    while todo:
        pid, parent = todo.pop()
        if pid in seen:
            continue
        seen[pid] = parent
        todo.extend((kid, pid) for kid in children(pid, proc))
    return seen


def parent_of(pid: int, proc: str = "/proc") -> int | None:
    """The parent process id from /proc/PID/stat (the name in parentheses may hold any character)."""
    try:
        with open(f"{proc}/{pid}/stat", "rb") as f:
            text = f.read()
        return int(text[text.rindex(b")") + 2 :].split()[1])
    except (OSError, ValueError, IndexError):
        return None


@dataclass
class ProcInfo:
    """What the per-command series need besides /proc/PID/io (not written to the stream)."""

    parent: int | None
    job: str
    job_read: bool = True  # False: the parent's job, for a process whose own could not be read yet


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
        # Parent and job of every process of the last reading (proc_agg.py): the parent to know who reaps
        # whom, the job read once per process.
        self.info: dict[int, ProcInfo] = {}

    def describe(self) -> str:
        what = [f"pid {p}" for p in self.pids] + [f"tree of {p}" for p in self.trees]
        return f"{self.proc}/<pid>/io of " + (", ".join(what) or "no process")

    def current_pids(self) -> list[int]:
        return sorted(self._parents())

    def _parents(self) -> dict[int, int | None]:
        found: dict[int, int | None] = {}
        for root in self.trees:
            for pid, parent in tree_parents(root, self.proc).items():
                if pid not in self.exclude:
                    found[pid] = parent
        for pid in self.pids:
            if pid not in found or found[pid] is None:
                found[pid] = parent_of(pid, self.proc)
        return found

    def _name(self, pid: int) -> str:
        # Read at every sample: a child forked by Python is "python" until it execs the engine.
        try:
            return read_file(f"{self.proc}/{pid}/comm").strip()
        except SourceUnavailable:
            return ""

    def _info(self, pid: int, parent: int | None, info: dict[int, ProcInfo]) -> ProcInfo:
        """The job is read once per process; one that cannot tell yet (no environment: a zombie, or between
        fork and exec) has its parent's job, as its environment is its parent's until it execs, and is asked
        again at the next reading."""
        known = self.info.get(pid)
        if known is not None and known.job_read:
            return ProcInfo(parent, known.job)
        job = jobid.job_id(pid, self.proc)
        if job is not None:
            return ProcInfo(parent, job)
        up = info.get(parent) if parent is not None else None
        if up is None and parent is not None:
            up = self.info.get(parent)
        return ProcInfo(parent, up.job if up is not None else "", job_read=False)

    def read(self) -> Tree:
        if not self.pids and not self.trees:
            raise SourceUnavailable("no process to watch (give --pid or --pid-tree)")
        out: Tree = {}
        reasons = []
        parents = self._parents()
        info: dict[int, ProcInfo] = {}
        for pid in sorted(parents):
            try:
                fields, skipped = parse(read_file(f"{self.proc}/{pid}/io"))
            except SourceUnavailable as exc:
                # An exited process leaves the set; one we may not read is said if nothing else can be read.
                reasons.append(str(exc))
                continue
            self.skipped += skipped
            fields["comm"] = self._name(pid)
            out[str(pid)] = fields
            info[pid] = self._info(pid, parents[pid], info)
        self.info = info
        if not out and reasons:
            raise SourceUnavailable(reasons[0])
        return out
