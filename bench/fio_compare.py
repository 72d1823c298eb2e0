#!/usr/bin/env python3
"""iolens's fio workload against fio itself: the same fio options given to both, case by case.

``iolens-bench fio`` takes fio's own options verbatim; every case below runs
``fio OPTIONS --output-format=json --output=F`` and ``iolens-bench fio OPTIONS --json=F --quiet`` with the
same OPTIONS, alternating (order flipped every other round), medians of >= 5 runs per tool and case. Each test
file is laid out once by fio before any timed run and then used by both tools.

    psync-{ext4,tmpfs}-{1job,2jobs}  4 KiB randread, psync, 1 GiB file kept in the page cache (read with cat
                                     before every run, --invalidate=0), numjobs 1 and 2, 10 s time_based
    uring-qd32, uring-qd32-fixed     4 KiB randread, io_uring iodepth 32, O_DIRECT on disk, 10 s time_based;
                                     --fixedbufs=0 --registerfiles=0, then =1 =1 (given to both tools)
    seq-read-1m, seq-write-1m        1 MiB sequential read / write, psync, O_DIRECT on disk, 2 GiB, size-based
    uring-128k-qd16                  128 KiB randread, io_uring iodepth 16, O_DIRECT on disk, 10 s time_based
    null-cpu                         null engine, 4 KiB reads (64 Mi of them), latency recording on (the
                                     default of both): CPU per I/O

Goal (issue): iolens >= 1.00x fio's IOPS or bandwidth in every row (ratio of the medians of one run), and
<= 0.20 us of CPU per I/O on the null engine. CPU is user+sys of the whole process from wait4's rusage for
both tools; each tool's own job figure (iolens: fio.jobs[].cpu, fio: usr_cpu/sys_cpu x job_runtime) is shown
beside it.

    python3 bench/fio_compare.py                      # ~20 min, writes bench/results/fio_compare.txt
    python3 bench/fio_compare.py --quick              # smoke test: 1 run, 64 MiB, 1 s runs; prints only
    python3 bench/fio_compare.py --quick --peer-only  # fio's half alone (engine without the fio workload)
    python3 bench/fio_compare.py --cases 'psync-*,null-cpu' --list-cases
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import shlex
import shutil
import subprocess
import time
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import benchlib as bl

TARGET_CPU_US = 0.20
Metric = Literal["iops", "bw", "cpu"]
Direction = Literal["read", "write"]


@dataclass(frozen=True)
class Params:
    """The sizes and times of one run of the benchmark (full, --quick, or a warm-up)."""

    runtime_s: int  # time_based cases
    size: int  # bytes of each random-read file
    seq_size: int  # bytes of the sequential read and write files
    null_ios: int  # I/Os of the null case
    batch_submit: int  # --iodepth_batch_submit of the io_uring cases, given to both tools


@dataclass(frozen=True)
class FileSpec:
    """A test file, laid out once by fio before the timed runs."""

    key: str
    where: Literal["shm", "disk"]
    name: str
    size: int


@dataclass(frozen=True)
class Case:
    id: str
    title: str
    metric: Metric
    direction: Direction
    opts: tuple[str, ...]  # fio options, without --name and --filename
    file: str | None  # FileSpec.key, None for the null engine
    reference: str  # fio's figure on this kind of machine, from the issue
    ref_value: float | None  # the same in the table's unit (kIOPS, MiB/s, us/IO)
    ioengine: str
    numjobs: int = 1
    direct: bool = False
    preread: bool = False  # cat the file to /dev/null before every run
    time_based: bool = False
    expect_bytes: int | None = None  # size-based cases: bytes moved per run
    expect_ios: int | None = None
    iolens_extra: tuple[str, ...] = ()  # iolens-only options (fio would refuse them)


def files_for(p: Params) -> dict[str, FileSpec]:
    return {
        "tmpfs-cached": FileSpec("tmpfs-cached", "shm", "cached.dat", p.size),
        "ext4-cached": FileSpec("ext4-cached", "disk", "cached.dat", p.size),
        "ext4-direct": FileSpec("ext4-direct", "disk", "direct.dat", p.size),
        "ext4-seq": FileSpec("ext4-seq", "disk", "seq.dat", p.seq_size),
        "ext4-write": FileSpec("ext4-write", "disk", "write.dat", p.seq_size),
    }


def size_opt(n: int) -> str:
    """A size as both tools read it: k/m/g are powers of 1024."""
    for suffix, unit in (("g", 1 << 30), ("m", 1 << 20), ("k", 1 << 10)):
        if n % unit == 0:
            return f"{n // unit}{suffix}"
    return str(n)


def make_cases(p: Params) -> list[Case]:
    tb = ("--time_based", f"--runtime={p.runtime_s}")
    cases: list[Case] = []
    refs = {("ext4", 1): ("698k IOPS", 698.0), ("ext4", 2): ("1.24M IOPS", 1240.0)}
    for fs in ("ext4", "tmpfs"):
        for nj in (1, 2):
            ref, val = refs.get((fs, nj), ("-", None))
            cases.append(
                Case(
                    id=f"psync-{fs}-{nj}job{'s' if nj > 1 else ''}",
                    title=f"4 KiB randread psync, file in page cache, {fs}, numjobs={nj}",
                    metric="iops",
                    direction="read",
                    opts=(
                        "--rw=randread",
                        "--bs=4k",
                        f"--size={size_opt(p.size)}",
                        "--ioengine=psync",
                        "--invalidate=0",
                        f"--numjobs={nj}",
                        *tb,
                        "--group_reporting",
                    ),
                    file=f"{fs}-cached",
                    reference=ref,
                    ref_value=val,
                    ioengine="psync",
                    numjobs=nj,
                    preread=True,
                    time_based=True,
                )
            )
    for fixed in (0, 1):
        cases.append(
            Case(
                id="uring-qd32-fixed" if fixed else "uring-qd32",
                title="4 KiB randread io_uring iodepth 32, O_DIRECT, ext4"
                + (", fixedbufs+registerfiles" if fixed else ""),
                metric="iops",
                direction="read",
                opts=(
                    "--rw=randread",
                    "--bs=4k",
                    f"--size={size_opt(p.size)}",
                    "--ioengine=io_uring",
                    "--iodepth=32",
                    f"--iodepth_batch_submit={p.batch_submit}",
                    "--direct=1",
                    f"--fixedbufs={fixed}",
                    f"--registerfiles={fixed}",
                    *tb,
                    "--group_reporting",
                ),
                file="ext4-direct",
                reference="158k IOPS" if fixed else "144k IOPS",
                ref_value=158.0 if fixed else 144.0,
                ioengine="io_uring",
                direct=True,
                time_based=True,
            )
        )
    for rw, ref, val, key in (
        ("read", "~890 MiB/s", 890.0, "ext4-seq"),
        ("write", "~437 MiB/s", 437.0, "ext4-write"),
    ):
        cases.append(
            Case(
                id=f"seq-{rw}-1m",
                title=f"1 MiB sequential {rw} psync, O_DIRECT, ext4, {p.seq_size // bl.MIB} MiB",
                metric="bw",
                direction="read" if rw == "read" else "write",
                opts=(
                    f"--rw={rw}",
                    "--bs=1m",
                    f"--size={size_opt(p.seq_size)}",
                    "--ioengine=psync",
                    "--direct=1",
                    "--group_reporting",
                ),
                file=key,
                reference=ref,
                ref_value=val,
                ioengine="psync",
                direct=True,
                expect_bytes=p.seq_size,
                # The file was laid out by fio: iolens writes into it only when told so.
                iolens_extra=("--allow_overwrite=1",) if rw == "write" else (),
            )
        )
    cases.append(
        Case(
            id="uring-128k-qd16",
            title="128 KiB randread io_uring iodepth 16, O_DIRECT, ext4",
            metric="bw",
            direction="read",
            opts=(
                "--rw=randread",
                "--bs=128k",
                f"--size={size_opt(p.size)}",
                "--ioengine=io_uring",
                "--iodepth=16",
                f"--iodepth_batch_submit={p.batch_submit}",
                "--direct=1",
                "--fixedbufs=0",
                "--registerfiles=0",
                *tb,
                "--group_reporting",
            ),
            file="ext4-direct",
            reference="~950 MiB/s",
            ref_value=950.0,
            ioengine="io_uring",
            direct=True,
            time_based=True,
        )
    )
    cases.append(
        Case(
            id="null-cpu",
            title=f"null engine, 4 KiB reads, {p.null_ios} I/Os, latency recording on: CPU per I/O",
            metric="cpu",
            direction="read",
            opts=(
                "--rw=read",
                "--bs=4k",
                f"--size={size_opt(p.null_ios * 4096)}",
                "--ioengine=null",
                "--group_reporting",
            ),
            file=None,
            reference="0.277 us/IO",
            ref_value=0.277,
            ioengine="null",
            expect_ios=p.null_ios,
        )
    )
    return cases


@dataclass
class Sample:
    """One run of one tool: its own figures for the case's direction, and the process's rusage."""

    iops: float
    bw_bytes_per_s: float
    ios: int
    nbytes: int
    runtime_s: float
    rusage_cpu_s: float  # user+sys of the process tree (wait4)
    job_cpu_s: float  # the tool's own figure for its job threads/processes
    wall_s: float
    notes: list[str] = field(default_factory=list)

    def value(self, metric: Metric) -> float:
        """The case's figure in the table's unit: kIOPS, MiB/s or CPU us per I/O."""
        if metric == "iops":
            return self.iops / 1e3
        if metric == "bw":
            return self.bw_bytes_per_s / bl.MIB
        return self.cpu_us_per_io

    @property
    def cpu_us_per_io(self) -> float:
        return self.rusage_cpu_s / self.ios * 1e6 if self.ios else float("nan")

    @property
    def job_cpu_us_per_io(self) -> float:
        return self.job_cpu_s / self.ios * 1e6 if self.ios else float("nan")


UNIT: dict[Metric, str] = {"iops": "kIOPS", "bw": "MiB/s", "cpu": "CPU us/IO"}


# ---------------------------------------------------------------------------------------------- the engine


def engine_candidates() -> list[Path]:
    found = [
        *bl.ENGINE_CANDIDATES,
        *sorted(bl.REPO_DIR.glob(".venv/lib/python3*/site-packages/iolens/_native/iolens-bench")),
    ]
    on_path = shutil.which("iolens-bench")
    if on_path:
        found.append(Path(on_path))
    return [p for p in found if os.access(p, os.X_OK)]


def has_fio_workload(engine: Path) -> tuple[bool, str]:
    r = bl.run([str(engine), "fio", "--help"])
    text = r.stdout + r.stderr
    return r.ok and "unknown workload" not in text, r.describe_failure()


def find_fio_engine(explicit: str | None) -> Path:
    """--engine or $IOLENS_BENCH if given (it must have the fio workload); else the first of the usual places
    (build/native, /tmp/bench-build, the venv that `make` installs, PATH) whose engine has it."""
    if explicit or os.environ.get("IOLENS_BENCH"):
        engine = bl.find_engine(explicit)
        ok, why = has_fio_workload(engine)
        if not ok:
            raise bl.BenchError(
                f"iolens-bench has no fio workload: {engine} fio --help: {why}\n"
                "build an engine that has it, or run only fio's half with --peer-only"
            )
        return engine
    tried = []
    for c in engine_candidates():
        ok, why = has_fio_workload(c)
        if ok:
            return c.resolve()
        tried.append(f"  {c}: {why}")
    raise bl.BenchError(
        "iolens-bench has no fio workload (tried `iolens-bench fio --help` with every engine found):\n"
        + ("\n".join(tried) or "  (no iolens-bench found)")
        + "\nbuild one that has it and name it with --engine PATH, or run only fio's half with --peer-only"
    )


# ---------------------------------------------------------------------------------------------- running


def layout(spec: FileSpec, path: Path, rep: bl.Report) -> None:
    """Writes the file once with fio (data, not holes or zeros: a virtual disk may treat those specially)."""
    cmd = [
        "fio",
        "--name=layout",
        "--rw=write",
        "--bs=1m",
        f"--size={size_opt(spec.size)}",
        "--ioengine=psync",
        "--end_fsync=1",
        f"--filename={path}",
        "--output-format=json",
        f"--output={path.parent / 'layout.json'}",
    ]
    rep.command(cmd)
    bl.check(bl.run(cmd), f"laying out {path}")
    if path.stat().st_size != spec.size:
        raise bl.BenchError(f"{path} has {path.stat().st_size} bytes after the layout, expected {spec.size}")


def preread(path: Path) -> None:
    with open(os.devnull, "wb") as null:
        r = subprocess.run(["cat", str(path)], stdout=null, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise bl.BenchError(f"cat {path} > /dev/null failed: {r.stderr.strip()}")


def fio_options(case: Case, path: Path | None) -> list[str]:
    return [f"--name={case.id}", *case.opts, *([f"--filename={path}"] if path else [])]


def fio_command(case: Case, path: Path | None, out: Path) -> list[str]:
    return ["fio", *fio_options(case, path), "--output-format=json", f"--output={out}"]


def iolens_command(engine: Path, case: Case, path: Path | None, out: Path) -> list[str]:
    return [str(engine), "fio", *fio_options(case, path), *case.iolens_extra, f"--json={out}", "--quiet"]


def _num(x: Any, what: str) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise bl.BenchError(f"{what}: expected a number, got {x!r}")
    return float(x)


def parse_iolens(doc: dict[str, Any], case: Case, r: bl.Run) -> Sample:
    """Reads the figures of docs/schema.md, 'fio documents', and checks the engine ran what was asked."""
    d = case.direction
    try:
        jobs: list[dict[str, Any]] = doc["fio"]["jobs"]
        groups: list[dict[str, Any]] = doc["fio"]["groups"]
        if not jobs:
            raise bl.BenchError("iolens document has no jobs")
        s = Sample(
            iops=sum(_num(j[d]["iops"], f"jobs[].{d}.iops") for j in jobs),
            bw_bytes_per_s=sum(_num(j[d]["bw_bytes_per_s"], f"jobs[].{d}.bw_bytes_per_s") for j in jobs),
            ios=sum(int(j[d]["ios"]) for j in jobs),
            nbytes=sum(int(j[d]["bytes"]) for j in jobs),
            runtime_s=max(_num(j[d]["runtime_s"], f"jobs[].{d}.runtime_s") for j in jobs),
            rusage_cpu_s=r.cpu_s,
            job_cpu_s=sum(
                _num(j["cpu"]["usr_s"], "cpu.usr_s") + _num(j["cpu"]["sys_s"], "cpu.sys_s") for j in jobs
            ),
            wall_s=r.wall_s,
        )
        instances = sum(int(j["instances"]) for j in jobs)
        if instances != case.numjobs:
            raise bl.BenchError(f"iolens ran {instances} instances, expected numjobs={case.numjobs}")
        for j in jobs:
            if j["ioengine"] != case.ioengine:
                raise bl.BenchError(f"iolens ran ioengine {j['ioengine']!r}, expected {case.ioengine!r}")
            if case.file is not None and bool(j["cache"]["direct"]) != case.direct:
                raise bl.BenchError(f"iolens cache.direct is {j['cache']['direct']}, expected {case.direct}")
            if case.preread and j["cache"]["mode"] == "cold":  # cold = drop the pages first (invalidate=1)
                raise bl.BenchError("iolens ran in cache mode 'cold' although --invalidate=0 was given")
        for g in groups:
            note = (g.get("machine") or {}).get("note")
            if note:
                s.notes.append(str(note))
    except (KeyError, TypeError, ValueError) as e:
        raise bl.BenchError(f"iolens document does not follow docs/schema.md 'fio documents': {e!r}") from e
    return s


def parse_fio(doc: dict[str, Any], case: Case, r: bl.Run) -> Sample:
    """fio's JSON (3.x): jobs[] (one with --group_reporting); bw_bytes in bytes/s, runtime and job_runtime
    in ms, usr_cpu/sys_cpu in % of job_runtime."""
    d = case.direction
    try:
        jobs: list[dict[str, Any]] = doc["jobs"]
        if not jobs:
            raise bl.BenchError("fio output has no jobs")
        for j in jobs:
            if int(j.get("error", 0)):
                raise bl.BenchError(f"fio job {j.get('jobname')} reports error {j['error']}")
        return Sample(
            iops=sum(_num(j[d]["iops"], f"{d}.iops") for j in jobs),
            bw_bytes_per_s=sum(_num(j[d]["bw_bytes"], f"{d}.bw_bytes") for j in jobs),
            ios=sum(int(j[d]["total_ios"]) for j in jobs),
            nbytes=sum(int(j[d]["io_bytes"]) for j in jobs),
            runtime_s=max(_num(j[d]["runtime"], f"{d}.runtime") for j in jobs) / 1e3,
            rusage_cpu_s=r.cpu_s,
            job_cpu_s=sum(
                (_num(j["usr_cpu"], "usr_cpu") + _num(j["sys_cpu"], "sys_cpu"))
                / 100
                * _num(j["job_runtime"], "job_runtime")
                / 1e3
                for j in jobs
            ),
            wall_s=r.wall_s,
        )
    except (KeyError, TypeError, ValueError) as e:
        raise bl.BenchError(f"fio output: {e!r}") from e


def check_volume(s: Sample, case: Case, tool: str, p: Params) -> None:
    """Both tools must have done the work the options ask for."""
    if case.expect_bytes is not None and s.nbytes != case.expect_bytes:
        raise bl.BenchError(f"{tool} {case.id}: moved {s.nbytes} bytes, expected {case.expect_bytes}")
    if case.expect_ios is not None and s.ios != case.expect_ios:
        raise bl.BenchError(f"{tool} {case.id}: did {s.ios} I/Os, expected {case.expect_ios}")
    if s.ios <= 0:
        raise bl.BenchError(f"{tool} {case.id}: no I/O done")
    if case.time_based and s.runtime_s < 0.9 * p.runtime_s:
        raise bl.BenchError(f"{tool} {case.id}: ran {s.runtime_s:.2f} s of a {p.runtime_s} s time_based run")


def run_tool(
    tool: str, case: Case, engine: Path | None, path: Path | None, work: Path, p: Params, rep: bl.Report
) -> Sample:
    out = work / f"{tool}.json"
    out.unlink(missing_ok=True)
    if tool == "iolens":
        assert engine is not None
        cmd = iolens_command(engine, case, path, out)
    else:
        cmd = fio_command(case, path, out)
    rep.command(cmd)
    if case.preread and path is not None:
        preread(path)
    r = bl.run(cmd, cwd=work)
    if tool == "iolens":
        if not r.ok and out.exists():
            bl.engine_doc(out)  # raises with the document's error
        bl.check(r, f"iolens {case.id}")
        s = parse_iolens(bl.engine_doc(out), case, r)
    else:
        bl.check(r, f"fio {case.id}")
        try:
            doc = json.loads(out.read_text())
        except (OSError, ValueError) as e:
            raise bl.BenchError(f"fio {case.id}: output {out}: {e}") from e
        s = parse_fio(doc, case, r)
    check_volume(s, case, tool, p)
    return s


# ---------------------------------------------------------------------------------------------- the report


def select_cases(cases: list[Case], patterns: str | None) -> list[Case]:
    if not patterns:
        return cases
    pats = [x.strip() for x in patterns.split(",") if x.strip()]
    for pat in pats:
        if not any(fnmatch.fnmatchcase(c.id, pat) for c in cases):
            raise bl.BenchError(
                f"--cases {pat!r} matches no case; the cases are: {', '.join(c.id for c in cases)}"
            )
    return [c for c in cases if any(fnmatch.fnmatchcase(c.id, pat) for pat in pats)]


def estimate_s(cases: Sequence[Case], p: Params, runs: int, ntools: int) -> float:
    """A rough duration: time_based runtime, the reference bandwidth for sequential runs, 0.3 us per null I/O;
    plus a second of start-up and pre-reading per run."""
    total = 0.0
    for c in cases:
        if c.time_based:
            each = float(p.runtime_s)
        elif c.metric == "bw" and c.ref_value and c.expect_bytes:
            each = c.expect_bytes / (c.ref_value * bl.MIB)
        elif c.expect_ios:
            each = c.expect_ios * 0.3e-6
        else:
            each = 1.0
        total += (each + 1.0) * runs * ntools
    return total


def fmt(x: float, metric: Metric) -> str:
    if x != x:
        return "-"
    return f"{x:.3f}" if metric == "cpu" else f"{x:.1f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    bl.common_args(ap)
    ap.add_argument(
        "--cases", default=None, help="comma-separated case ids or globs (default: all; --list-cases)"
    )
    ap.add_argument(
        "--list-cases", action="store_true", help="print the cases and their fio options, then exit"
    )
    ap.add_argument(
        "--peer-only",
        action="store_true",
        help="run only fio's half (no engine needed; prints only, unless --out is given)",
    )
    ap.add_argument("--shm-dir", default="/dev/shm", help="tmpfs directory (default /dev/shm)")
    ap.add_argument("--disk-dir", default="/var/tmp", help="directory on the disk, ext4 (default /var/tmp)")
    ap.add_argument(
        "--runtime", type=int, default=None, help="seconds of each time_based run (10; 1 with --quick)"
    )
    ap.add_argument(
        "--size", type=int, default=None, help="MiB of each random-read file (1024; 64 with --quick)"
    )
    ap.add_argument(
        "--seq-size", type=int, default=None, help="MiB of the sequential files (2048; 64 with --quick)"
    )
    ap.add_argument(
        "--null-ios", type=int, default=None, help="I/Os of the null case (64Mi; 1Mi with --quick)"
    )
    ap.add_argument(
        "--batch-submit",
        type=int,
        default=1,
        help="--iodepth_batch_submit given to both tools in the io_uring cases (default 1, fio's default)",
    )
    args = ap.parse_args()
    q = args.quick
    p = Params(
        runtime_s=args.runtime or (1 if q else 10),
        size=(args.size or (64 if q else 1024)) * bl.MIB,
        seq_size=(args.seq_size or (64 if q else 2048)) * bl.MIB,
        null_ios=args.null_ios or ((1 << 20) if q else (64 << 20)),
        batch_submit=args.batch_submit,
    )
    runs = args.runs or (1 if q else 5)
    cases = select_cases(make_cases(p), args.cases)
    if args.list_cases:
        for c in cases:
            opts = shlex.join(fio_options(c, Path("FILE") if c.file else None))
            print(f"{c.id:18} {c.title}\n{'':18} fio {opts}")
        return 0
    if shutil.which("fio") is None:
        raise bl.BenchError("fio not found (Debian: apt-get install -y fio)")
    fio_version = bl.run(["fio", "--version"]).stdout.strip()
    engine = None if args.peer_only else find_fio_engine(args.engine)
    tools = ("fio",) if args.peer_only else ("iolens", "fio")
    # A warm-up run of each tool per case (full mode): binaries, CPU clocks, the disk's and the host's caches.
    warm = None if q else replace(p, runtime_s=2, null_ios=max(p.null_ios // 8, 1024))
    warm_cases = {c.id: c for c in select_cases(make_cases(warm), args.cases)} if warm else {}

    specs = files_for(p)
    needed = sorted({c.file for c in cases if c.file is not None})
    dirs = {"shm": Path(args.shm_dir), "disk": Path(args.disk_dir)}
    used = sorted({specs[k].where for k in needed})
    for where in used:
        need = sum(specs[k].size for k in needed if specs[k].where == where)
        free = shutil.disk_usage(dirs[where]).free
        if free < need * 1.1:
            raise bl.BenchError(
                f"{dirs[where]}: {free // bl.MIB} MiB free, the test files need {need // bl.MIB} MiB"
            )
    expect_fs = {"shm": "tmpfs", "disk": "ext4"}
    est = estimate_s(cases, p, runs, len(tools)) + (
        estimate_s(list(warm_cases.values()), warm, 1, len(tools)) if warm else 0
    )
    bl.progress(f"{len(cases)} cases, {runs} runs per tool, about {est / 60:.0f} minutes")

    rep = bl.Report("fio_compare", "iolens fio workload vs fio, same options, side by side")
    rep.header = bl.machine_lines(engine, [dirs[w] for w in used]) + [
        f"fio:     {fio_version} ({shutil.which('fio')})"
    ]
    if engine is None:
        rep.header.append("engine:  not run (--peer-only: fio's half alone)")
    rep.header += [
        f"setup:   {runs} runs per tool and case, tools alternated, order flipped every other round; "
        f"{'quick' if q else 'full'} run; time_based runs {p.runtime_s} s; random-read files "
        f"{p.size // bl.MIB} MiB, sequential {p.seq_size // bl.MIB} MiB; null {p.null_ios} I/Os"
        + ("" if q else "; one discarded warm-up run of each tool per case (2 s, or 1/8 of the null I/Os)"),
        "metric:  each tool's own figure (iolens fio.jobs[].read|write.iops / bw_bytes_per_s; fio "
        "jobs[].read|write.iops / bw_bytes), medians over the runs; ratio = iolens / fio of the medians",
        "cpu:     CPU us/IO = user+sys of the whole process tree (wait4 rusage, start-up included) / I/Os, "
        "the same for both tools; 'job' = the tool's own figure for its job threads (iolens "
        "fio.jobs[].cpu.usr_s+sys_s, fio (usr_cpu+sys_cpu)/100 x job_runtime) / I/Os",
    ]
    for where in used:
        got = bl.file_system(dirs[where]).split()[0]
        if got != expect_fs[where]:
            want = expect_fs[where]
            rep.header.append(f"WARNING: {dirs[where]} is {got}, not {want}: the case names say {want}")

    samples: dict[str, dict[str, list[Sample]]] = {c.id: {t: [] for t in tools} for c in cases}
    t_start = time.monotonic()
    with ExitStack() as stack:
        base = {w: stack.enter_context(bl.scratch_dir(dirs[w], "fio-compare")) for w in used}
        work = stack.enter_context(bl.scratch_dir(Path("/tmp"), "fio-compare-work"))
        paths: dict[str, Path] = {}
        for k in needed:
            spec = specs[k]
            paths[k] = base[spec.where] / spec.name
            bl.progress(f"laying out {paths[k]} ({spec.size // bl.MIB} MiB)")
            layout(spec, paths[k], rep)
        os.sync()
        for case in cases:
            path = paths[case.file] if case.file else None
            rep.commands.append(
                f"# {case.id}: {case.title}"
                + (f"; before every run of either tool: cat {path} > /dev/null" if case.preread else "")
            )
            for t in tools:  # both command lines of the case, in a fixed order
                rep.command(
                    iolens_command(engine, case, path, work / "iolens.json")
                    if t == "iolens" and engine is not None
                    else fio_command(case, path, work / "fio.json")
                )
            if warm:
                for t in tools:
                    run_tool(t, warm_cases[case.id], engine, path, work, warm, bl.Report("x", "x"))
            for rnd, tool in bl.alternating(tools, runs):
                s = run_tool(tool, case, engine, path, work, p, rep)
                samples[case.id][tool].append(s)
                bl.progress(
                    f"{case.id} round {rnd + 1}/{runs} {tool}: {s.iops / 1e3:.1f}k IOPS, "
                    f"{s.bw_bytes_per_s / bl.MIB:.1f} MiB/s, {s.cpu_us_per_io:.3f} us CPU/IO"
                )
    took = time.monotonic() - t_start

    rep.section("Medians (each tool's own figure; range = min-max over the runs)")
    rows: list[list[object]] = []
    verdicts: list[str] = []
    for c in cases:
        f = [s.value(c.metric) for s in samples[c.id]["fio"]]
        fm = bl.median(f)
        row: list[object] = [c.id, UNIT[c.metric]]
        if engine is not None:
            i = [s.value(c.metric) for s in samples[c.id]["iolens"]]
            im = bl.median(i)
            r = bl.ratio(im, fm)
            row += [fmt(im, c.metric), bl.spread(i)]
            if c.metric == "cpu":
                ok = im <= TARGET_CPU_US
                verdicts.append(
                    f"{c.id:18} iolens {im:.3f} us CPU/IO (fio {fm:.3f}, iolens/fio {r:.2f}); "
                    f"target <= {TARGET_CPU_US:.2f} us: {'met' if ok else 'NOT met'}"
                )
            else:
                verdicts.append(f"{c.id:18} iolens/fio = {r:.3f}: {'met' if r >= 1.0 else 'NOT met'}")
        row += [fmt(fm, c.metric), bl.spread(f)]
        if engine is not None:
            row.append(f"{bl.ratio(bl.median([s.value(c.metric) for s in samples[c.id]['iolens']]), fm):.3f}")
        row += [c.reference, f"{bl.ratio(fm, c.ref_value):.2f}" if c.ref_value else "-"]
        rows.append(row)
    heads = ["case", "unit"]
    if engine is not None:
        heads += ["iolens", "iolens range"]
    heads += (
        ["fio", "fio range"] + (["iolens/fio"] if engine is not None else []) + ["fio ref (issue)", "fio/ref"]
    )
    rep.add(bl.table(heads, rows))

    rep.section("CPU per I/O (us; medians)")
    crow: list[list[object]] = []
    for c in cases:
        row = [c.id]
        for t in tools:
            row += [
                bl.median([s.cpu_us_per_io for s in samples[c.id][t]]),
                bl.median([s.job_cpu_us_per_io for s in samples[c.id][t]]),
            ]
        row += [bl.median([s.runtime_s for s in samples[c.id][t]]) for t in tools]
        crow.append(row)
    cheads = ["case"]
    for t in tools:
        cheads += [f"{t} rusage", f"{t} job"]
    cheads += [f"{t} runtime s" for t in tools]
    rep.add(bl.table(cheads, crow))

    if verdicts:
        rep.section(
            f"Goal: iolens >= 1.00x fio in every row; null engine <= {TARGET_CPU_US:.2f} us CPU per I/O"
        )
        rep.add("\n".join(verdicts))
    busy = sorted({f"{c.id}: {n}" for c in cases for s in samples[c.id].get("iolens", []) for n in s.notes})
    notes = [
        "Both tools get the same fio options (listed per case below). The only differences: fio adds "
        "--output-format=json --output=F, iolens --json=F --quiet, and for seq-write-1m "
        "--allow_overwrite=1 (iolens refuses to write into a file it did not create; fio laid it out).",
        "Every test file is written once by fio (--rw=write --bs=1m --end_fsync=1) before any timed run "
        "and then used by both tools in every run: fio's buffer data, not zeros or holes, which a virtual "
        "disk may serve without reading.",
        "io_uring: iolens's defaults are fixedbufs=1 registerfiles=1 and fio's 0, so both are given "
        "explicitly (uring-qd32 and uring-128k-qd16: 0/0 on both, uring-qd32-fixed: 1/1 on both). "
        f"--iodepth_batch_submit={p.batch_submit} is given to both too (1, each I/O submitted as soon as "
        "it is ready, is fio's default and, since 2026-11-25, iolens's; iolens used to default to 0, every "
        "free slot in one call). iodepth_batch_complete_min/max are left at their defaults (1 and iodepth) "
        "on both.",
        "Page-cache cases: before every run of either tool the file is read with cat to /dev/null, and both "
        "run with --invalidate=0 (iolens's cache.mode is checked not to be 'cold'). On tmpfs the file is in "
        "memory anyway.",
        "fio runs each job as a forked process, iolens as threads of one process; wait4's rusage covers both "
        "(the child and the processes it reaped), so 'rusage' is the whole cost of each tool, start-up "
        "included (fio's start-up was ~165 ms of CPU in framework_cost.txt). 'job' is each tool's own "
        "account of its job threads from job start to end, without start-up (fio: usr_cpu and sys_cpu, % of "
        "job_runtime, from millisecond CPU times). The null target is judged on the rusage figure, the "
        "stricter of the two.",
        "Latency recording is on for both: fio's default (slat, clat, lat per I/O), iolens's histograms "
        "(always on; docs/backends.md 'Timing' says when the engine reads the clock).",
        "IOPS and bandwidth are each tool's own figure: I/Os or bytes / the job's runtime (time_based: the "
        "runtime; size-based: until the last I/O). 'fio/ref' is the median fio figure here over the "
        "issue's figure: how this machine compares to the issue's.",
        "O_DIRECT on disk: the VM's virtio disk is slow and noisy (+-20% and more from run to run); read "
        "the ranges with the medians.",
    ]
    if busy:
        notes.append("iolens reported a busy machine during: " + "; ".join(busy))
    notes.append(f"The benchmark took {took / 60:.1f} minutes.")
    rep.notes(*notes)
    rep.emit(args.out, q or args.peer_only)
    return 0


if __name__ == "__main__":
    bl.main_wrapper(main)
