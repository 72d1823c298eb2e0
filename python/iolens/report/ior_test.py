"""What an iolens ior document is in IOR's terms, for IOR's output layouts (report/ior_classic.py: the text,
report/ior_formats.py: JSON and CSV): a Test per document (an IOR `-f` script runs several; `Test#` is the
index), its result rows and summary figures by IOR's definitions, the lines IOR says while it runs (in order),
and IOR's two streams: results (`out`; `-O summaryFile=F` sends them to F) and log (`-v` lines, warnings).
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TextIO

IOR_VERSION = "4.0.0"
MIB = 1024.0 * 1024.0
KIB = 1024.0
FORMATS = ("default", "json", "csv")

# iolens's backend names as IOR writes its APIs; a backend IOR does not have keeps iolens's name (one word).
_API = {"posix": "POSIX", "psync": "POSIX", "mpiio": "MPIIO", "hdf5": "HDF5", "ncmpi": "NCMPI"}
_API.update({"pnetcdf": "NCMPI", "mmap": "MMAP", "null": "DUMMY", "dummy": "DUMMY"})

Doc = dict[str, Any]


def config_value(doc: Doc, *names: str, default: Any = 0) -> Any:
    """The first of `names` the document's config has (options other workloads' flags add may be absent)."""
    cfg = doc.get("config") or {}
    for name in names:
        if name in cfg and cfg[name] is not None:
            return cfg[name]
    return default


def _int(doc: Doc, *names: str, default: int = 0) -> int:
    value = config_value(doc, *names, default=default)
    if isinstance(value, bool):
        return int(value)
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def api_name(doc: Doc) -> str:
    api = str(config_value(doc, "api", default="posix"))
    return _API.get(api.lower(), api)


def ctime(iso: str | None) -> str:
    """An ISO-8601 UTC time of the document as C's ctime() writes it, in local time (IOR's time stamps)."""
    try:
        when = datetime.fromisoformat(str(iso).replace("Z", "+00:00")).astimezone()
    except ValueError:
        when = datetime.now().astimezone()
    return f"{when:%a %b} {when.day:2d} {when:%H:%M:%S %Y}"


def human(n: int) -> str:
    """IOR's HumanReadable(…, BASE_TWO): `65536 bytes`, `1 MiB`, `1.50 GiB`."""
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20)):
        if n >= size:
            return f"{n // size} {unit}" if n % size == 0 else f"{n / size:.2f} {unit}"
    return f"{n} bytes" if n >= 0 else "-"


# ---- what a test is, in IOR's terms ----------------------------------------------------------------------


@dataclass
class Row:
    """One result row (IOR's PrintReducedResult) of one phase."""

    access: str
    iteration: int
    bw_mib: float
    iops: float
    latency_s: float
    block_kib: float
    xfer_kib: float
    open_s: float
    xfer_s: float
    close_s: float
    total_s: float


@dataclass
class SummaryRow:
    """One line of IOR's "Summary of all tests" (PrintLongSummaryOneOperation)."""

    operation: str
    bw_max: float
    bw_min: float
    bw_mean: float
    bw_sd: float
    ops_max: float
    ops_min: float
    ops_mean: float
    ops_sd: float
    time_mean: float
    stonewall_s: float | None
    stonewall_mib: float | None
    agg_mib: float


class Test:
    """One ior document seen as one IOR test."""

    def __init__(self, doc: Doc, test_id: int) -> None:
        self.doc = doc
        self.id = test_id
        comm = doc.get("comm") or {}
        # -N: the ranks taking part (-1, the default, means all of them)
        self.tasks = max(_int(doc, "num-tasks", "numTasks"), 0) or int(comm.get("ranks") or 1)
        self.nodes = int(comm.get("nodes") or 1)
        self.tpn = _int(doc, "tasks-per-node") or int(comm.get("tasks_per_node") or self.tasks)
        self.xfer = _int(doc, "transfer-size", default=262144)
        self.block = _int(doc, "block-size", default=1048576)
        self.segments = _int(doc, "segment-count", default=1)
        self.reps = _int(doc, "repetitions", default=1)
        self.fpp = _int(doc, "file-per-proc")
        self.reorder = _int(doc, "reorder-tasks")
        self.reorder_random = _int(doc, "reorder-tasks-random")
        self.reorder_seed = _int(doc, "reorder-tasks-random-seed")
        self.task_offset = _int(doc, "task-per-node-offset", default=1)
        self.ref_num = _int(doc, "reference-number")
        self.deadline = _int(doc, "deadline-for-stonewalling")
        self.wear_out = _int(doc, "stone-walling-wear-out")
        self.api = api_name(doc)
        self.phases: list[Doc] = [p for p in doc.get("phases") or [] if isinstance(p, dict)]
        target = doc.get("target") or {}
        self.path = str(target.get("path") or config_value(doc, "test-file", default="testFile"))
        self.first_file = str(target.get("first_file") or self.path)

    def _does(self, name: str, *flags: str) -> bool:
        """Whether the test asked for this access (IOR's writeFile/readFile); a document without those
        options (an older engine's) says it by its phases."""
        if any(flag in (self.doc.get("config") or {}) for flag in flags):
            return any(_int(self.doc, flag) for flag in flags)
        return any(p.get("name") == name for p in self.phases)

    def writes(self) -> bool:
        return self._does("write", "write-file")

    def reads(self) -> bool:
        return self._does("read", "read-file", "check-read")

    def row(self, p: Doc) -> Row:
        times = p.get("times") or {}
        lat = (p.get("latency_ns") or {}).get("mean") or 0
        return Row(
            str(p.get("name")),
            int(p.get("iteration") or 0),
            float(p.get("bw_bytes_per_s") or 0) / MIB,
            float(p.get("ops_per_s") or 0),
            float(lat) / 1e9,
            self.block / KIB,
            self.xfer / KIB,
            float(times.get("open_s") or 0),
            float(times.get("xfer_s") or 0),
            float(times.get("close_s") or 0),
            float(times.get("total_s") or 0),
        )

    def summary(self, name: str) -> SummaryRow | None:
        """IOR's figures over the iterations: bandwidth and operations per second over each total time
        (population standard deviation), mean total time, and stonewall figures with wear-out."""
        done = [p for p in self.phases if p.get("name") == name and not p.get("cut_short")]
        if not done:
            return None
        totals = [float((p.get("times") or {}).get("total_s") or 0) for p in done]
        bws = [float(p.get("bytes") or 0) / t if t > 0 else 0.0 for p, t in zip(done, totals, strict=True)]
        ops = [float(p.get("ops") or 0) / t if t > 0 else 0.0 for p, t in zip(done, totals, strict=True)]
        sw_s: float | None = None
        sw_mib: float | None = None
        walls = [p["stonewall"] for p in done if isinstance(p.get("stonewall"), dict)]
        if self.wear_out and walls:
            time_sum = sum(float(w.get("time_s") or 0) for w in walls)
            data = sum(float(w.get("bytes_at_deadline") or 0) / self.tasks for w in walls)
            sw_s = time_sum / len(done)
            sw_mib = data / time_sum / MIB if time_sum > 0 else 0.0
        return SummaryRow(
            name,
            max(bws) / MIB,
            min(bws) / MIB,
            statistics.fmean(bws) / MIB,
            statistics.pstdev(bws) / MIB,
            max(ops),
            min(ops),
            statistics.fmean(ops),
            statistics.pstdev(ops),
            statistics.fmean(totals),
            sw_s,
            sw_mib,
            float(done[0].get("bytes") or 0) / MIB,
        )

    def summaries(self) -> list[SummaryRow]:
        rows = [
            self.summary("write") if self.writes() else None,
            self.summary("read") if self.reads() else None,
        ]
        return [r for r in rows if r is not None]

    def max_bw(self, name: str) -> float:
        """Bytes per second of the fastest iteration (IOR's "Max Write"/"Max Read")."""
        return max(
            (float(p.get("bw_bytes_per_s") or 0) for p in self.phases if p.get("name") == name), default=0.0
        )

    def capacity(self) -> tuple[str, str, str, str]:
        """IOR's FS figures: size (GiB or TiB), used %, inodes (Mi), used inodes %."""
        cap = (self.doc.get("target") or {}).get("capacity") or {}
        size = float(cap.get("bytes") or 0)
        free = float(cap.get("free_bytes") or 0)
        inodes = float(cap.get("inodes") or 0)
        free_inodes = float(cap.get("free_inodes") or 0)
        used = (1 - free / size) * 100 if size else 0.0
        used_inodes = (1 - free_inodes / inodes) * 100 if inodes else 0.0
        gib = size / (1 << 30)
        shown = f"{gib:.1f} GiB" if gib <= 1024 else f"{size / (1 << 40):.1f} TiB"
        return shown, f"{used:2.1f}%", f"{inodes / (1 << 20):.1f} Mi", f"{used_inodes:2.1f}%"

    def options(self, verbosity: int) -> list[tuple[str, str | int]]:
        """IOR's "Options:" block (ShowSetup), in its order."""
        o: list[tuple[str, str | int]] = [
            ("api", self.api),
            ("apiVersion", str(config_value(self.doc, "api-version", default=""))),
            ("test filename", self.path),
            ("access", "file-per-process" if self.fpp else "single-shared-file"),
            ("type", "collective" if _int(self.doc, "collective") else "independent"),
            ("segments", self.segments),
            ("ordering in a file", "random" if _int(self.doc, "random-offset") else "sequential"),
        ]
        if not self.reorder and not self.reorder_random:
            o.append(("ordering inter file", "no tasks offsets"))
        if self.reorder:
            o += [("ordering inter file", "constant task offset"), ("task offset", self.task_offset)]
        if self.reorder_random:
            o += [("ordering inter file", "random task offset"), ("task offset", self.task_offset)]
            o.append(("reorder random seed", self.reorder_seed))
        o += [("nodes", self.nodes), ("tasks", self.tasks), ("clients per node", self.tpn)]
        for key, name in (("memory-per-task", "memoryPerTask"), ("memory-per-node", "memoryPerNode")):
            mem = _int(self.doc, key)
            if mem:
                o.append((name, human(mem)))
        o += [
            ("repetitions", self.reps),
            ("xfersize", human(self.xfer)),
            ("blocksize", human(self.block)),
            ("aggregate filesize", human(self.block * self.segments * self.tasks)),
        ]
        if _int(self.doc, "dryRun", "dry-run"):
            o.append(("dryRun", 1))
        if verbosity:
            o.append(("verbose", verbosity))
        if self.deadline > 0:
            o += [("stonewallingTime", self.deadline), ("stoneWallingWearOut", self.wear_out)]
        return o

    def parameters(self, verbosity: int) -> list[tuple[str, str | int]]:
        """IOR's "Parameters" (always in its JSON; in its text from -v -v -v), in its order."""
        d = self.doc
        host = str((d.get("host") or {}).get("hostname") or os.uname().nodename)
        # IOR prints its enum (timestamp 0, offset 1, incompressible 2, random 3) and, for "data packet type",
        # the letter at that index of {"g", "t", "o", "i"}: a timestamp run says "g". iolens's own pattern
        # (-l iolens) is none of IOR's; it is shown as IOR's default.
        word = str(config_value(d, "dataPacketType", "data-packet-type", default="timestamp"))
        packet_number = {"t": 0, "o": 1, "i": 2, "r": 3}.get(word[:1] if word != "iolens" else "t", 0)
        packet = ("g", "t", "o", "i")[packet_number]
        return [
            ("testID", self.id),
            ("refnum", self.ref_num),
            ("api", self.api),
            ("platform", f"{host.rstrip('0123456789') or host}({os.uname().sysname})"),
            ("testFileName", self.path),
            ("deadlineForStonewall", self.deadline),
            ("stoneWallingWearOut", self.wear_out),
            ("maxTimeDuration", _int(d, "max-time-duration")),
            ("outlierThreshold", _int(d, "outlier-threshold")),
            ("options", "(null)"),
            ("dryRun", _int(d, "dryRun", "dry-run")),
            ("nodes", self.nodes),
            ("memoryPerTask", _int(d, "memory-per-task")),
            ("memoryPerNode", _int(d, "memory-per-node")),
            ("tasksPerNode", self.tpn),
            ("repetitions", self.reps),
            ("multiFile", _int(d, "multi-file")),
            ("interTestDelay", _int(d, "inter-test-delay")),
            ("fsync", _int(d, "fsync")),
            ("fsyncperwrite", _int(d, "fsync-per-write")),
            ("useExistingTestFile", _int(d, "use-existing-test-file")),
            ("uniqueDir", _int(d, "unique-dir")),
            ("singleXferAttempt", _int(d, "single-xfer-attempt")),
            ("readFile", _int(d, "read-file")),
            ("writeFile", _int(d, "write-file")),
            ("filePerProc", self.fpp),
            ("reorderTasks", self.reorder),
            ("reorderTasksRandom", self.reorder_random),
            ("reorderTasksRandomSeed", self.reorder_seed),
            ("randomOffset", _int(d, "random-offset")),
            ("checkWrite", _int(d, "check-write")),
            ("checkRead", _int(d, "check-read")),
            ("dataPacketType", packet_number),
            ("keepFile", _int(d, "keep-file")),
            ("keepFileWithError", _int(d, "keep-file-with-error")),
            ("warningAsErrors", _int(d, "warningAsErrors", "warning-as-errors")),
            ("verbose", verbosity),
            ("data packet type", packet),
            ("setTimeStampSignature/incompressibleSeed", _int(d, "set-time-stamp-signature")),
            ("collective", _int(d, "collective")),
            ("segmentCount", self.segments),
            ("transferSize", self.xfer),
            ("blockSize", self.block),
        ]

    def removals(self) -> dict[int, float]:
        return {
            int(r.get("iteration", 0)): float(r.get("time_s") or 0) for r in self.doc.get("removals") or []
        }

    def verify_lines(self, p: Doc) -> list[str]:
        """IOR's lines for bad data found by a check pass (CountErrors), any verbosity."""
        v = p.get("verify")
        if not isinstance(v, dict) or not v.get("errors"):
            return []
        seed = _int(self.doc, "set-time-stamp-signature") & 0xFFFFFFFF
        return [
            f"WARNING: Incorrect data on {p.get('name')} ({v['errors']} errors found).",
            "",
            f"Used Time Stamp {seed} (0x{seed:x}) for Data Signature",
        ]

    def stonewall_line(self, p: Doc) -> str | None:
        """IOR's stonewall line (printed with wear-out, whatever the verbosity)."""
        w = p.get("stonewall")
        if not self.wear_out or not isinstance(w, dict):
            return None
        gib = 1024.0**3
        low, high = int(w.get("pairs_min") or 0), int(w.get("pairs_max") or 0)
        return (
            f"stonewalling pairs accessed min: {low} max: {high}"
            f" -- min data: {low * self.xfer / gib:.1f} GiB mean data: "
            f"{float(w.get('bytes_at_deadline') or 0) / self.tasks / gib:.1f} GiB "
            f"time: {float(w.get('time_s') or 0):.1f}s"
        )


def tests_of(docs: Sequence[Doc]) -> list[Test]:
    return [Test(doc, i) for i, doc in enumerate(docs)]


def machine(doc: Doc, verbosity: int) -> str:
    """IOR's Machine: sysname and node name; from -v -v also release, version and hardware (of this node)."""
    u = os.uname()
    host = (doc.get("host") or {}).get("hostname") or u.nodename
    text = f"{u.sysname} {host}"
    if verbosity >= 2:
        release = (doc.get("host") or {}).get("kernel") or u.release
        text += f" {release} {u.version} {u.machine}"
    return text


def command_line(doc: Doc) -> str:
    return " ".join(str(a) for a in doc.get("command") or [])


class Streams:
    """IOR's two outputs: results (`out`) and log (`log`, the same stream unless told otherwise)."""

    def __init__(self, out: TextIO, log: TextIO | None) -> None:
        self.out = out
        self.log = log if log is not None else out

    def res(self, line: str = "") -> None:
        self.out.write(line + "\n")

    def logl(self, line: str = "") -> None:
        if self.log is not self.out:
            self.out.flush()
        self.log.write(line + "\n")
        self.log.flush()


@dataclass
class Event:
    """One thing IOR says while a test runs: a log line, the table's header, a result row, a removal."""

    kind: str  # "log", "header", "row", "remove"
    text: str = ""
    row: Row | None = None
    iteration: int = 0
    time_s: float = 0.0


def test_preamble(t: Test, verbosity: int) -> list[str]:
    """IOR's log lines before a test's options (TestIoSys): from -v, the tasks, and the -C note."""
    lines = [f"Participating tasks : {t.tasks}"] if verbosity >= 1 else []
    if verbosity >= 1 and t.reorder:
        lines.append("Using reorderTasks '-C' (useful to avoid read cache in client)")
    return lines


def debug_banner(t: Test) -> list[str]:
    """IOR's log lines for `-O debug=S` (ShowSetup, before the options; not in its CSV layout)."""
    note = str(config_value(t.doc, "debug", default="") or "")
    return ["", "*** DEBUG MODE ***", f"*** {note} ***", ""] if note else []


def summary_always(doc: Doc) -> bool:
    """`-O summaryalways=1`: from -v, IOR prints the summary table after each test, not its Max lines."""
    return bool(_int(doc, "summary-always"))


def test_events(t: Test, verbosity: int) -> list[Event]:
    """A test's iterations in IOR's order: per iteration the time stamp (-v -v; the table's header follows the
    first), the write (its stonewall line before its row), the write check, the read, the removal."""
    events: list[Event] = []
    log = events.append
    removals = t.removals()
    seed = _int(t.doc, "set-time-stamp-signature") & 0xFFFFFFFF
    iterations = sorted({int(p.get("iteration") or 0) for p in t.phases} | set(removals)) or [0]
    for n, it in enumerate(iterations):
        if verbosity >= 2:
            log(Event("log", f"Using Time Stamp {seed} (0x{seed:x}) for Data Signature"))
        if n == 0:
            log(Event("header"))
        for p in (p for p in t.phases if int(p.get("iteration") or 0) == it):
            name = p.get("name")
            if verbosity >= 1:
                # ctime's newline ends IOR's write line; its read line adds one more.
                extra = "\n" if name == "read" else ""
                log(Event("log", f"Commencing {name} performance test: {ctime(p.get('began_at'))}{extra}"))
            if name == "read":
                events += [Event("log", line) for line in t.verify_lines(p)]
            events += [Event("log", line) for line in hint_lines(t)]
            wall = t.stonewall_line(p)
            if wall is not None and verbosity >= 1:
                # Each rank's own count at the deadline (IOR's ranks print theirs in any order).
                for r in p.get("per_rank") or []:
                    if "pairs_at_deadline" in r:
                        log(
                            Event(
                                "log",
                                f"{r.get('rank')}: stonewalling pairs accessed: {r['pairs_at_deadline']}",
                            )
                        )
            if wall is not None:
                log(Event("log", wall))
            log(Event("row", row=t.row(p)))
            if name == "write" and _int(t.doc, "check-write"):
                if verbosity >= 1:
                    log(Event("log", "Verifying contents of the file(s) just written."))
                    # IOR prints ctime's line with one more newline: a blank line follows.
                    log(Event("log", ctime(p.get("began_at")) + "\n"))
                events += [Event("log", line) for line in t.verify_lines(p)]
        if verbosity >= 1 and it in removals:
            log(Event("remove", iteration=it, time_s=removals[it]))
    return events


def hint_blocks(
    api_name: str, passed: dict[str, str] | None, returned: dict[str, str] | None
) -> list[list[str]]:
    """IOR's two -H blocks, as lines: the hints passed to the library and those it reports in effect. IOR's
    HDF5 hands them to an access property list and says so."""
    passed_to = "access property list" if api_name == "hdf5" else "MPI_File_open()"
    return [
        [f"{title} {{", *(f"\t{k} = {v}" for k, v in (hints or {}).items()), "}"]
        for title, hints in (
            (f"hints passed to {passed_to}", passed),
            ("hints returned from opened file", returned),
        )
    ]


def hint_lines(t: Test) -> list[str]:
    """-H (showHints) of a backend over an MPI library: the blocks IOR's rank 0 prints at each open (the
    document's hints, of the last file opened), each after a blank line."""
    api = t.doc.get("api") or {}
    if not _int(t.doc, "mpiio.showHints") or "hints_passed" not in api:
        return []
    blocks = hint_blocks(str(api.get("name")), api.get("hints_passed"), api.get("hints"))
    return [line for block in blocks for line in ["", *block]]


def wear_out_pairs(t: Test) -> int | None:
    """With wear-out and no status file, IOR ends the test with the write's transfer count per rank."""
    if not t.wear_out or str(config_value(t.doc, "stone-walling-status-file", default="")):
        return None
    for p in t.phases:
        w = p.get("stonewall")
        if p.get("name") == "write" and isinstance(w, dict):
            return int(w.get("pairs_max") or 0)
    return None


def summary_format(doc: Doc) -> str:
    """The document's `-O summaryFormat`, lower case (`default`, `json` or `csv`)."""
    fmt = str(config_value(doc, "summary-format", default="default")).lower()
    return fmt if fmt in FORMATS else "default"


def verbosity_of(doc: Doc) -> int:
    return _int(doc, "verbose")


def summary_file_of(doc: Doc) -> str:
    """The document's `-O summaryFile` ("" when none)."""
    return str(config_value(doc, "summary-file", default="") or "")
