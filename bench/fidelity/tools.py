"""The two sides of every case: the command each tool runs and what it reports (bytes, I/O counts, rate).

fio cases run `fio JOB --output-format=json` and `iolens fio JOB --output-format=json` (fio's JSON shape);
IOR and mdtest cases run the official IOR 4 under mpirun and `iolens ior|mdtest --launcher mpirun --json`.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

MIB = 1 << 20


@dataclass
class Reported:
    """What a tool says it did: bytes and I/O counts per direction, and its rate (bytes/s for data, items/s
    for mdtest), with the figures behind it for the table."""

    read_bytes: int = 0
    write_bytes: int = 0
    read_ios: int = 0
    write_ios: int = 0
    rate: float = 0.0
    rates: dict[str, float] = field(default_factory=dict)  # per phase (IOR write/read, mdtest phases)


def fio_reported(doc: dict[str, object]) -> Reported:
    """Sums fio's JSON entries (one per job, or per instance without group_reporting)."""
    r = Reported()
    jobs = doc.get("jobs")
    if not isinstance(jobs, list):
        raise ValueError("no jobs in the fio JSON")
    for j in jobs:
        for d in ("read", "write"):
            part = j[d]
            setattr(r, f"{d}_bytes", getattr(r, f"{d}_bytes") + int(part["io_bytes"]))
            setattr(r, f"{d}_ios", getattr(r, f"{d}_ios") + int(part["total_ios"]))
            r.rate += float(part["bw_bytes"])
            r.rates[d] = r.rates.get(d, 0.0) + float(part["bw_bytes"])
    return r


def fio_cmd(tool: str, iolens: list[str], job: Path, out: Path) -> list[str]:
    if tool == "fio":
        return ["fio", str(job), "--output-format=json", f"--output={out}"]
    # The files were laid out by fio before the timed runs: iolens writes into files it did not create only
    # when told so (an iolens-only option; fio has no such guard).
    return [*iolens, "fio", str(job), "--allow_overwrite=1", "--output-format=json", f"--output={out}"]


def ior_cmd(
    tool: str, ior_bin: Path, iolens: list[str], kind: str, np: int, args: list[str], out: Path
) -> list[str]:
    """kind: ior or mdtest. tool: the peer (official, under mpirun), iolens (with --keep-cache for ior: IOR
    leaves the page cache alone) or iolens-evict (iolens ior's default: evict before every read)."""
    if tool == "peer":
        assert ior_bin is not None
        cmd = ["mpirun", "-np", str(np), str(ior_bin / kind), *args]
        if kind == "ior":
            cmd += ["-O", "summaryFormat=JSON", "-O", f"summaryFile={out}"]
        return cmd
    extra = ["--keep-cache"] if kind == "ior" and tool == "iolens" else []
    return [*iolens, kind, "--launcher", "mpirun", "--np", str(np), "--json", str(out), *extra, *args]


def ior_reported(tool: str, kind: str, out: Path, stdout: Path) -> Reported:
    if kind == "ior":
        return _ior_peer(out) if tool == "peer" else _ior_iolens(out)
    return _mdtest_peer(stdout) if tool == "peer" else _mdtest_iolens(out)


def _ior_peer(path: Path) -> Reported:
    r = Reported()
    for s in json.loads(path.read_text())["summary"]:
        op = s["operation"]
        moved = int(s["numTasks"]) * int(s["segmentCount"]) * int(s["blockSize"])
        setattr(r, f"{op}_bytes", moved)
        setattr(r, f"{op}_ios", moved // int(s["transferSize"]))
        r.rates[op] = float(s["bwMaxMIB"]) * MIB
    return r


def _ior_iolens(path: Path) -> Reported:
    r = Reported()
    doc = json.loads(path.read_text())
    if doc.get("status") != "ok":
        raise RuntimeError(f"iolens ior: {doc.get('error')}")
    for p in doc["phases"]:
        if p["iteration"] == 0 and p["name"] in ("write", "read"):
            setattr(r, f"{p['name']}_bytes", int(p["bytes"]))
            setattr(r, f"{p['name']}_ios", int(p["ops"]))
            r.rates[p["name"]] = float(p["bw_bytes_per_s"])
    return r


# mdtest's summary: "   File creation     :   MAX   MIN   MEAN   STDDEV" (4.0 prints no colon; both taken).
_MD_LINE = re.compile(
    r"^\s+(File creation|File stat|File read|File removal)\s*:?\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)"
)
_MD_FILES = re.compile(r"^(\d+) tasks, (\d+) files", re.M)
MD_PHASES = {"File creation": "file-create", "File stat": "file-stat", "File read": "file-read",
             "File removal": "file-remove"}  # fmt: skip


def _mdtest_peer(stdout: Path) -> Reported:
    text = stdout.read_text()
    m = _MD_FILES.search(text)
    items = int(m.group(2)) if m else 0
    r = Reported()
    for line in text.splitlines():
        mm = _MD_LINE.match(line)
        if mm:
            r.rates[MD_PHASES[mm.group(1)]] = float(mm.group(4))  # the mean over iterations (one here)
    _mdtest_totals(r, items)
    return r


def _mdtest_iolens(path: Path) -> Reported:
    doc = json.loads(path.read_text())
    if doc.get("status") != "ok":
        raise RuntimeError(f"iolens mdtest: {doc.get('error')}")
    r = Reported()
    items = 0
    for p in doc["phases"]:
        if p["iteration"] == 0 and p["name"] in MD_PHASES.values():
            r.rates[p["name"]] = float(p["rate_per_s"])
            items = int(p["items"])
    _mdtest_totals(r, items)
    return r


def _mdtest_totals(r: Reported, items: int) -> None:
    """mdtest moves `items` files through each phase: the I/O counts are the items written and read, the
    rate the items of all phases over the sum of the phases' times."""
    r.write_ios = r.read_ios = items
    secs = sum(items / v for v in r.rates.values() if v > 0)
    r.rate = len(r.rates) * items / secs if secs else 0.0


def fio_version() -> str:
    fio = shutil.which("fio")
    if fio is None:
        return "fio: not found"
    return subprocess.run([fio, "--version"], capture_output=True, text=True).stdout.strip() + f" ({fio})"


def ior_version(tool: str, kind: str, out: Path, stdout: Path) -> str | None:
    """The official tool's version line, from its own output of a run ("IOR-4.0.0", "mdtest-4.0.0")."""
    if tool != "peer":
        return None
    if kind == "ior":
        return f"IOR-{json.loads(out.read_text()).get('Version', '?')}"
    m = re.search(r"^(mdtest-\S+) was launched", stdout.read_text(), re.M)
    return m.group(1) if m else None
