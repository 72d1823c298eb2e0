"""The text output of IOR, mdtest and md-workbench (4.x, as the IO500 app keeps it per phase in its result
directory).

The app writes each phase's benchmark output to RESULTDIR/PHASE.txt (ior-easy-write.txt,
mdtest-easy-write.txt, ...). What they add to result.txt is what the benchmark itself counted:

- IOR: the options block (`api`, `tasks`, `nodes`, `xfersize`, `blocksize`, `aggregate filesize`,
  `stonewallingTime`, `stoneWallingWearOut`, ...), the stonewall line
  `stonewalling pairs accessed min: A max: B -- min data: X GiB mean data: Y GiB time: Ts` and the results
  rows (`access bw(MiB/s) IOPS Latency(s) block(KiB) xfer(KiB) open(s) wr/rd(s) close(s) total(s) iter`).
- mdtest: `launched with T total task(s) on N node(s)`, `T tasks, F files`, the stonewall line
  `Continue stonewall hit min: A max: B avg: C`, and the `SUMMARY rate` and `SUMMARY time` tables (mdtest
  labels the second "ms/op", but it holds each operation's time in seconds).

- md-workbench: `Args: …`, `MD-Workbench total objects: N workingset size: X MiB (version: V) time: T`, one
  line per phase (`precreate|benchmark|cleanup process max:Ts min:… rate:R iops/s objects:N … op-max:Xs (E
  errs) read(7 figures) stat(…) create(…) delete(…)`), with --process-reports a line per rank after it
  (`RANK: benchmark process max:…`), and `Total runtime: Ts time: T`.

A file that is not complete — IOR output without a results row, mdtest output without its rate table or its
`-- finished at` line — raises AppOutputError naming the line it stopped at.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

MIB = 2**20


class AppOutputError(ValueError):
    """Text that is not complete IOR or mdtest output."""


_SIZE_UNITS = {"bytes": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "PiB": 2**50}
_SIZE_RE = re.compile(r"([0-9.]+) (bytes|KiB|MiB|GiB|TiB|PiB)")
_NUM = r"[-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?"
_IOR_ROW_RE = re.compile(rf"(write|read|remove)\s+((?:{_NUM}\s+){{9}})(\d+)\s*")
_IOR_PAIRS_RE = re.compile(
    rf"stonewalling pairs accessed min: (\d+) max: (\d+) -- min data: ({_NUM}) GiB "
    rf"mean data: ({_NUM}) GiB time: ({_NUM})s"
)
_MD_LAUNCH_RE = re.compile(r"mdtest\S* was launched with (\d+) total task\(s\) on (\d+) node\(s\)")
_MD_FILES_RE = re.compile(r"(\d+) tasks, (\d+) (files|directories|files/directories)\b")
_MD_STONEWALL_RE = re.compile(rf"Continue stonewall hit min: (\d+) max: (\d+) avg: ({_NUM})")
_MD_ROW_RE = re.compile(rf"\s+([A-Za-z][A-Za-z ]*?)\s+({_NUM})\s+({_NUM})\s+({_NUM})\s+({_NUM})\s*")


def parse_size(text: str) -> int | None:
    """IOR's printed size ("2 MiB", "4 GiB", "47008 bytes") in bytes; None when it is not one."""
    m = _SIZE_RE.fullmatch(text.strip())
    if not m:
        return None
    return round(float(m.group(1)) * _SIZE_UNITS[m.group(2)])


@dataclass(frozen=True)
class IorRow:
    access: str  # "write", "read", "remove"
    bw_mib_per_s: float
    iops: float
    latency_s: float  # IOR's "Latency(s)" column
    block_kib: float
    xfer_kib: float
    open_s: float
    xfer_s: float  # "wr/rd(s)"
    close_s: float
    total_s: float
    iteration: int


@dataclass(frozen=True)
class IorStonewall:
    pairs_min: int  # transfers per rank when the stonewall hit: the fewest and the most
    pairs_max: int
    min_data_gib: float
    mean_data_gib: float
    time_s: float


@dataclass
class IorOutput:
    version: str  # "IOR-4.1.0+dev"
    command: str | None
    options: dict[str, str]
    rows: list[IorRow]
    stonewall: IorStonewall | None = None
    messages: list[str] = field(default_factory=list)  # ERROR / WARNING lines

    @property
    def tasks(self) -> int | None:
        value = self.options.get("tasks")
        return int(value) if value is not None and value.isdigit() else None

    @property
    def transfer_size(self) -> int | None:
        value = self.options.get("xfersize")
        return parse_size(value) if value is not None else None

    @property
    def wear_out(self) -> bool:
        return self.options.get("stoneWallingWearOut", "").strip() == "1"

    def row(self, access: str) -> IorRow | None:
        return next((r for r in self.rows if r.access == access), None)

    def moved(self) -> tuple[int, int] | None:
        """(transfers, bytes) of all ranks, when the output says them exactly: a stonewalled phase with
        wear-out, where every rank went on to the most transfers any rank had done (IOR's pairs max)."""
        if self.stonewall is None or not self.wear_out or self.tasks is None or self.transfer_size is None:
            return None
        ops = self.stonewall.pairs_max * self.tasks
        return ops, ops * self.transfer_size

    def to_dict(self) -> dict[str, Any]:
        return {"tool": "ior", **asdict(self)}


@dataclass(frozen=True)
class MdtestRate:
    operation: str  # "File creation", "File stat", "File read", "File removal", "Tree creation", ...
    max: float
    min: float
    mean: float
    stddev: float


@dataclass
class MdtestOutput:
    version: str  # "mdtest-4.1.0+dev"
    command: str | None
    tasks: int
    nodes: int
    rates: list[MdtestRate]  # SUMMARY rate (ops/s)
    times: list[MdtestRate]  # SUMMARY time (seconds, whatever mdtest's label says)
    files: int | None = None  # "T tasks, F files": the items asked for, over all tasks
    stonewall_min: int | None = None  # "Continue stonewall hit": items per rank at the stonewall
    stonewall_max: int | None = None
    stonewall_avg: float | None = None
    messages: list[str] = field(default_factory=list)

    def rate(self, operation: str) -> MdtestRate | None:
        return next((r for r in self.rates if r.operation == operation), None)

    def items(self) -> int | None:
        """Items of all ranks when the output says them exactly: after a stonewall hit every rank went on to
        the most any rank had done (mdtest's stonewall max)."""
        if self.stonewall_max is None:
            return None
        return self.stonewall_max * self.tasks

    def to_dict(self) -> dict[str, Any]:
        return {"tool": "mdtest", **asdict(self)}


def parse_ior(text: str) -> IorOutput:
    lines = text.split("\n")
    first = lines[0].strip() if lines else ""
    if not first.startswith("IOR-"):
        raise AppOutputError("line 1: not IOR output (no 'IOR-…' header)")
    out = IorOutput(version=first.split(":")[0], command=None, options={}, rows=[])
    in_options = False
    for number, raw in enumerate(lines[1:], start=2):
        line = raw.strip()
        if line.startswith("Command line"):
            out.command = line.partition(":")[2].strip()
        elif line.startswith("Options:"):
            in_options = True
        elif line.startswith("Results:"):
            in_options = False
        elif in_options and ":" in line:
            key, _, value = line.partition(":")
            out.options[key.strip()] = value.strip()
        elif line.startswith(("ERROR", "WARNING")):
            out.messages.append(line)
        elif line.startswith("stonewalling pairs accessed"):
            m = _IOR_PAIRS_RE.fullmatch(line)
            if not m:
                raise AppOutputError(f"line {number}: malformed stonewall line {line[:80]!r}")
            out.stonewall = IorStonewall(
                int(m.group(1)), int(m.group(2)), float(m.group(3)), float(m.group(4)), float(m.group(5))
            )
        elif line.split(" ")[0] in ("write", "read", "remove") and _is_number(line.split()[1:2] or ""):
            m = _IOR_ROW_RE.fullmatch(line)
            if m is None:
                raise AppOutputError(f"line {number}: malformed results row {line[:80]!r}")
            bw, iops, lat, block, xfer, t_open, t_xfer, t_close, total = map(float, m.group(2).split())
            iteration = int(m.group(3))
            out.rows.append(
                IorRow(m.group(1), bw, iops, lat, block, xfer, t_open, t_xfer, t_close, total, iteration)
            )
    if not out.rows:
        raise AppOutputError(f"line {len(lines)}: no results row (the output stops before it: truncated?)")
    return out


def _is_number(words: list[str] | str) -> bool:
    text = words[0] if isinstance(words, list) and words else words
    return isinstance(text, str) and re.fullmatch(_NUM, text) is not None


def parse_mdtest(text: str) -> MdtestOutput:
    lines = text.split("\n")
    launch = None
    command = None
    files = None
    stonewall = None
    rates: list[MdtestRate] = []
    times: list[MdtestRate] = []
    messages: list[str] = []
    table: list[MdtestRate] | None = None
    finished = False
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if launch is None and (m := _MD_LAUNCH_RE.search(line)):
            launch = (line.split(" ")[0], int(m.group(1)), int(m.group(2)))
        elif line.startswith("Command line used:"):
            command = line.partition(":")[2].strip()
        elif files is None and (m := _MD_FILES_RE.fullmatch(line)):
            files = int(m.group(2))
        elif m := _MD_STONEWALL_RE.fullmatch(line):
            stonewall = (int(m.group(1)), int(m.group(2)), float(m.group(3)))
        elif line.startswith("SUMMARY rate"):
            table = rates
        elif line.startswith("SUMMARY time"):
            table = times
        elif line.startswith("-- finished at"):
            finished = True
            table = None
        elif line.startswith(("ERROR", "WARNING")):
            messages.append(line)
        elif table is not None and line and not line.startswith(("Operation", "---")):
            m = _MD_ROW_RE.fullmatch(raw)
            if m is None:
                raise AppOutputError(f"line {number}: malformed SUMMARY row {line[:80]!r}")
            table.append(MdtestRate(m.group(1), *(float(m.group(i)) for i in range(2, 6))))
    if launch is None:
        raise AppOutputError("not mdtest output (no 'mdtest… was launched with' line)")
    if not rates:
        raise AppOutputError(f"line {len(lines)}: no SUMMARY rate table (truncated?)")
    if not finished:
        raise AppOutputError(f"line {len(lines)}: no '-- finished at' line (truncated?)")
    out = MdtestOutput(launch[0], command, launch[1], launch[2], rates, times, files, messages=messages)
    if stonewall is not None:
        out.stonewall_min, out.stonewall_max, out.stonewall_avg = stonewall
    return out


_MDWB_PHASE_RE = re.compile(r"(?:(\d+): )?(precreate|benchmark|cleanup) process max:(\S+)s (.*)")
_MDWB_HEAD_RE = re.compile(
    r"MD-Workbench total objects: (\d+) workingset size: (\S+) MiB \(version: (.*)\) time: .*"
)
# A number as md-workbench prints it (%.2f, %.4e, and -nan for one rank's standard deviation).
_MDWB_NUM = re.compile(r"-?nan|-?inf|[-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?")
_MDWB_STATS_RE = re.compile(r" (read|stat|create|delete)\(([^)]*)\)")


def _mdwb_value(rest: str, pattern: str) -> float | None:
    m = re.search(pattern, rest)
    return float(m.group(1)) if m else None


@dataclass(frozen=True)
class MdwbLine:
    """One of md-workbench's phase lines: the job's (rank None) or, with --process-reports, one rank's."""

    rank: int | None
    phase: str  # "precreate", "benchmark", "cleanup"
    time_s: float  # "process max"
    rate_iops: float
    objects: int
    errors: int | None  # None when -q left "(N errs)" out
    op_max_s: float
    stats: dict[str, tuple[float, ...]]  # read/stat/create/delete: min, q1, median, q3, q90, q99, max
    layout: str  # the line with every number replaced by '#': what a script's field positions rely on


@dataclass
class MdworkbenchOutput:
    version: str | None
    total_objects: int | None
    lines: list[MdwbLine]

    def phases(self, name: str | None = None) -> list[MdwbLine]:
        """The job's lines (not the per-rank ones), of one phase or all."""
        return [ln for ln in self.lines if ln.rank is None and (name is None or ln.phase == name)]


def parse_mdworkbench(text: str) -> MdworkbenchOutput:
    """md-workbench's output (its default lines, with or without --process-reports and -q)."""
    out = MdworkbenchOutput(None, None, [])
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.rstrip()
        if m := _MDWB_HEAD_RE.fullmatch(line):
            out.total_objects, out.version = int(m.group(1)), m.group(3)
            continue
        m = _MDWB_PHASE_RE.fullmatch(line)
        if m is None:
            continue
        rest = m.group(4)
        rate = _mdwb_value(rest, r"rate:(\S+) iops/s")
        objects = _mdwb_value(rest, r"objects:(\d+)")
        op_max = _mdwb_value(rest, r"op-max:(\S+)s")
        if rate is None or objects is None or op_max is None:
            raise AppOutputError(f"line {number}: malformed md-workbench phase line {line[:80]!r}")
        errs = _mdwb_value(rest, r"\((\d+) errs")
        stats = {
            name: tuple(float(v) for v in _MDWB_NUM.findall(values))
            for name, values in _MDWB_STATS_RE.findall(rest)
        }
        out.lines.append(
            MdwbLine(
                rank=int(m.group(1)) if m.group(1) is not None else None,
                phase=m.group(2),
                time_s=float(m.group(3)),
                rate_iops=rate,
                objects=int(objects),
                errors=int(errs) if errs is not None else None,
                op_max_s=op_max,
                stats=stats,
                layout=_MDWB_NUM.sub("#", line),
            )
        )
    if not out.lines:
        raise AppOutputError("not md-workbench output (no phase line)")
    return out


def parse_output(text: str) -> IorOutput | MdtestOutput:
    """IOR or mdtest output, told apart by their first lines."""
    head = text.lstrip()[:400]
    if head.startswith("IOR-"):
        return parse_ior(text)
    if "mdtest" in head:
        return parse_mdtest(text)
    raise AppOutputError("neither IOR nor mdtest output")
