"""`iolens ior|mdtest|find|fio|io500 … --monitor[=INTERVAL]`: sample the nodes while the benchmark runs and
keep the samples in the run's document, with each phase's time window marked (docs/schema.md "monitor").

Sampling runs in a thread of the iolens process, on the node where iolens runs: with the local launcher that
is the node of every rank. Under mpirun/srun each rank is started through node_wrap, in which the node's local
rank 0 samples its own node into the run's shared temporary directory; those streams become
`monitor.nodes{HOST: …}`, each with the phase windows marked on that node's samples (nodes.py).

Phase windows are placed on the samples' clock (CLOCK_REALTIME, Unix seconds): phases.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from iolens import atomic
from iolens.monitor.phases import iso_window, mark, parse_iso, windows
from iolens.monitor.sampler import SOURCES, Sampler, SourceOptions, make_collectors
from iolens.monitor.schedule import COARSE_S, FINE_FOR_S, FINE_S, MonitorRequest
from iolens.monitor.stream import VERSION

__all__ = [
    "COARSE_S", "FINE_FOR_S", "FINE_S", "MonitorOptionError", "MonitorRequest", "RunMonitor", "attached",
    "iso_window", "parse_iso", "take_option", "windows",
]  # fmt: skip

OPTION = "--monitor"
# The subdirectory of the run's temporary directory where each node's wrapper writes its stream.
NODES_DIR = "monitor-nodes"


class MonitorOptionError(ValueError):
    """A bad --monitor value; the message is for the user."""


def take_option(argv: Sequence[str]) -> tuple[MonitorRequest | None, list[str]]:
    """Take `--monitor` or `--monitor=INTERVAL` out of the arguments (before a `--`); the rest, in order."""
    from iolens.monitor.command import UsageError, seconds

    req: MonitorRequest | None = None
    rest: list[str] = []
    args = list(argv)
    for i, arg in enumerate(args):
        if arg == "--":
            rest.extend(args[i:])
            break
        if arg == OPTION:
            req = MonitorRequest()
        elif arg.startswith(OPTION + "="):
            try:
                req = MonitorRequest(seconds(arg.partition("=")[2], OPTION))
            except UsageError as exc:
                raise MonitorOptionError(str(exc)) from None
        else:
            rest.append(arg)
    return req, rest


class RunMonitor:
    """Samples in a thread from start() to stop(); on_progress() is given the engine's progress lines."""

    def __init__(self, req: MonitorRequest, workload: str, sources: Sequence[str] = SOURCES) -> None:
        self.req = req
        self.workload = workload
        opts = SourceOptions(pid_trees=[os.getpid()])
        self.sampler = Sampler(make_collectors(sources, opts))
        self.records: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.progress: list[tuple[float, dict[str, Any]]] = []
        self.started = 0.0
        self.ended = 0.0
        self._thread: threading.Thread | None = None
        # Where each node's wrapper writes its stream under MPI (sample_nodes()); None: this node only.
        self.node_dir: Path | None = None

    def sample_nodes(self, run_tmp: Path) -> None:
        """Have every node of an MPI launch sampled by its local rank 0, into a directory of the run's
        temporary directory (which must be one every node sees: IOLENS_TMPDIR)."""
        self.node_dir = run_tmp / NODES_DIR
        self.node_dir.mkdir(exist_ok=True)

    def engine_wrapper(self, tag: str | None = None) -> list[str]:
        """What goes before the engine's command under a launcher (launch.RunRequest.wrapper): [] unless
        sample_nodes() was called. `tag` tells the streams of several launches apart (IO500 phases)."""
        from iolens.monitor.node_wrap import command

        return command(self.node_dir, self.req, tag) if self.node_dir is not None else []

    def start(self) -> RunMonitor:
        self.started = time.time()
        self._thread = threading.Thread(target=self._run, name="iolens-monitor", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        self.sampler.run(self.req.schedule, self.records.append, self.events.append, final_sample=True)

    def on_progress(self, progress: dict[str, Any]) -> None:
        self.progress.append((time.time(), progress))

    def on_engine_exit(self, _pid: int) -> None:
        """A sample while the engine's process has exited but is not yet reaped (launch.run's on_exit): its
        counters, which hold those of every rank it reaped, are read once more before they vanish."""
        if self._thread is not None:
            self.sampler.take(self.records.append, self.events.append)

    def stop(self) -> None:
        if self._thread is None:
            return
        self.ended = time.time()
        self.sampler.stop()
        self._thread.join()
        self._thread = None

    # --- the document's "monitor" object ---------------------------------------------------------------

    def section(self, doc: dict[str, Any], resultdir: Path | None = None) -> dict[str, Any]:
        """The "monitor" object for a run's document (docs/schema.md)."""
        host = socket.gethostname()
        rank0 = str((doc.get("host") or {}).get("hostname") or "")
        comm = doc.get("comm") or {}
        wins = windows(doc, self.progress, self.started, self.ended, resultdir)
        nodes = None
        if self.node_dir is not None:
            from iolens.monitor.nodes import sections

            nodes = sections(self.node_dir, wins)
        collectors = {c.name: c for c in self.sampler.collectors}
        for w in wins:
            mark(w, self.records, collectors)
        out = {
            "version": VERSION,
            "host": host,
            "rank0_host": rank0 or None,
            "node_scope": "launching node" if nodes is None else "launching node and every node (nodes)",
            "note": _note(host, rank0, int(comm.get("nodes") or 1), nodes),
            "clock": "CLOCK_REALTIME (Unix seconds)",
            "interval": self.req.describe(),
            "started": round(self.started, 6),
            "ended": round(self.ended, 6),
            "sources": self.sampler.availability(),
            "events": self.events,
            "windows": wins,
            "samples": self.records,
        }
        if nodes is not None:
            out["nodes"] = nodes
        return out

    def add_to_file(
        self, path: Path, doc: dict[str, Any] | None = None, resultdir: Path | None = None
    ) -> None:
        """Add the "monitor" object to the document at path (read from it unless given), atomically."""
        if doc is None:
            try:
                doc = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return  # not a readable document: the caller reports that, with no samples added
            if not isinstance(doc, dict):
                return
        doc["monitor"] = self.section(doc, resultdir)
        atomic.write_text(path, json.dumps(doc, indent=2) + "\n")

    def add_to_io500(self, doc: dict[str, Any], json_path: Path | None, console: Any = None) -> None:
        """Add the "monitor" object to an io500 run's document (the dict the driver wrote) and write it again
        where the driver wrote it (RESULTDIR/iolens-io500.json, and --json), then show the per-phase
        table on `console`."""
        from iolens.io500.driver import DOCUMENT_NAME
        from iolens.results import RunMonitor, _Reader

        resultdir = (doc.get("io500") or {}).get("resultdir")
        rd = Path(resultdir) if resultdir else None
        doc["monitor"] = self.section(doc, rd)
        text = json.dumps(doc, indent=2) + "\n"
        for path in (rd / DOCUMENT_NAME if rd is not None else None, json_path):
            if path is None or not path.parent.is_dir():
                continue
            atomic.write_text(path, text)
        if console is not None:
            from iolens.monitor.report import monitor_section

            console.print()
            console.print(monitor_section(RunMonitor.parse(_Reader(doc["monitor"], "monitor"))))


def _note(host: str, rank0: str, n_nodes: int, nodes: dict[str, Any] | None) -> str | None:
    """What a reader of the samples must know about which nodes they are of, or None."""
    if nodes is None:
        if rank0 and rank0 != host:
            return f"rank 0 ran on {rank0}; the samples are of {host}, where iolens ran"
        if n_nodes > 1:
            return f"the run used {n_nodes} nodes; the samples are of {host} (rank 0's node) only"
        return None
    if len(nodes) < n_nodes:
        return (
            f"{len(nodes)} of the run's {n_nodes} nodes wrote samples (monitor.nodes); the others could not "
            "write to the run's temporary directory: set IOLENS_TMPDIR to a directory every node shares"
        )
    if rank0 and rank0 != host:
        return f"rank 0 ran on {rank0}; the top-level samples are of {host}, every node's own are in nodes"
    return None


@contextlib.contextmanager
def attached(req: MonitorRequest | None, workload: str) -> Iterator[RunMonitor | None]:
    """A started RunMonitor for the block (None when no --monitor was given); stopped at the end."""
    if req is None:
        yield None
        return
    mon = RunMonitor(req, workload).start()
    try:
        yield mon
    finally:
        mon.stop()
