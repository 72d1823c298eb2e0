#!/usr/bin/env python3
"""What the iolens profiler runtime and Darshan 3.4.7 each add to an MPI-IO and an HDF5 job: wall time per
MPI_File_write_at_all (bench/mpiio_write_at_all.c) and per H5Dwrite, collective and independent
(bench/h5dwrite_loop.c, parallel HDF5), at 2 and 4 ranks under mpirun on tmpfs (/dev/shm), 4 KiB and 1 MiB
per call; and what each leaves behind: the bytes of every file in its log directory after the job, the
time of MPI_Finalize and of the processes' exit, and the job's wall time.

Three configurations, alternating in every round (order flipped every other round): no profiler; iolens
(`-x LD_PRELOAD=libiolens-profile.so`, IOLENS_PROFILE_DIR a scratch directory); Darshan (`-x
LD_PRELOAD=libdarshan.so`, DARSHAN_LOGPATH a scratch directory, DARSHAN_EXCLUDE_DIRS=/proc/,/sys/ so that it
records /dev/shm as iolens does: Darshan's default list excludes /dev/). The preload goes to the ranks only,
not to mpirun. Darshan needs DARSHAN_ENABLE_NONMPI only for programs without MPI: these are MPI programs.

Darshan is the one bench/build_darshan.sh builds from its public source into a scratch folder (it prints its
prefix and exits at once when it is built; a fresh machine needs DARSHAN_SRC, see bench/README.md).

    python3 bench/profile_vs_darshan_mpi.py            # writes bench/results/profile_vs_darshan_mpi.txt
    python3 bench/profile_vs_darshan_mpi.py --quick    # smoke test: prints only
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import benchlib as bl

CONFIGS = ("bare", "iolens", "darshan")
SIZES = (4096, 1 << 20)
CALLS = {4096: 10000, 1 << 20: 100}
BLOCKS = 10  # the loop's blocks: the figure is the fastest block's, the least disturbed by other processes
TARGET = 0.5  # iolens's added cost per call, as a share of Darshan's (issue 17)


@dataclass(frozen=True)
class Case:
    np: int
    kind: str  # "write_at_all", "H5Dwrite coll", "H5Dwrite indep"
    size: int
    calls: int


@dataclass
class Sample:
    ns_per_call: float  # the fastest block's (see BLOCKS)
    ns_per_call_loop: float  # the whole loop's
    finalize_ms: float
    exit_ms: float  # from rank 0's return from MPI_Finalize to mpirun's exit
    wall_s: float
    log_bytes: int
    log_files: int


@dataclass
class Result:
    case: Case
    rounds: list[dict[str, Sample]] = field(default_factory=list)

    def med(self, config: str, what: str) -> float:
        return bl.median([getattr(r[config], what) for r in self.rounds])


def darshan_prefix(explicit: str | None) -> Path:
    """Darshan's install prefix: --darshan, else what bench/build_darshan.sh prints (it builds only when
    nothing is built yet)."""
    if explicit:
        prefix = Path(explicit)
    else:
        r = bl.run(["sh", str(bl.BENCH_DIR / "build_darshan.sh")])
        if not r.ok:
            raise bl.BenchError(f"bench/build_darshan.sh failed ({r.describe_failure()})")
        prefix = Path(r.stdout.strip().splitlines()[-1])
    if not (prefix / "lib" / "libdarshan.so").is_file():
        raise bl.BenchError(f"{prefix}/lib/libdarshan.so not found")
    return prefix


def build(tmp: Path) -> dict[str, Path]:
    mpicc = shutil.which("mpicc")
    if mpicc is None or shutil.which("mpirun") is None:
        raise bl.BenchError("mpicc and mpirun are needed")
    h5 = bl.run(["pkg-config", "--cflags", "--libs", "hdf5-openmpi"])
    if not h5.ok:
        raise bl.BenchError("pkg-config hdf5-openmpi failed: parallel HDF5 (libhdf5-openmpi-dev) is needed")
    progs = {}
    for name, src, extra in (
        ("write_at_all", "mpiio_write_at_all.c", []),
        ("h5dwrite", "h5dwrite_loop.c", h5.stdout.split()),
    ):
        exe = tmp / name
        bl.check(bl.run([mpicc, "-O2", "-o", str(exe), str(bl.BENCH_DIR / src), *extra]), f"building {src}")
        progs[name] = exe
    return progs


def tree_size(d: Path) -> tuple[int, int]:
    """Bytes and number of every file under d (whatever the profiler left: per-process logs, a job log)."""
    total = files = 0
    for root, _, names in os.walk(d):
        for n in names:
            try:
                total += os.lstat(os.path.join(root, n)).st_size
                files += 1
            except OSError:
                pass
    return total, files


FIGURES = ("ns_per_call", "ns_per_call_best", "finalize_ns", "finalized_at_ns")


def one(cmd: list[str], env: dict[str, str], logs: Path) -> Sample:
    t0 = time.monotonic()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False, timeout=600)
    t1 = time.monotonic()  # CLOCK_MONOTONIC, the clock of the program's finalized_at_ns
    if r.returncode != 0:
        raise bl.BenchError(f"mpirun failed (exit status {r.returncode}): {r.stderr.strip()[-400:]}")
    got = {}
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in FIGURES:
            got[parts[0]] = float(parts[1])
    if len(got) != len(FIGURES):
        raise bl.BenchError(f"the program's figures are missing from its output: {r.stdout.strip()[-300:]}")
    size, files = tree_size(logs)
    return Sample(
        ns_per_call=got["ns_per_call_best"],
        ns_per_call_loop=got["ns_per_call"],
        finalize_ms=got["finalize_ns"] / 1e6,
        exit_ms=(t1 * 1e9 - got["finalized_at_ns"]) / 1e6,
        wall_s=t1 - t0,
        log_bytes=size,
        log_files=files,
    )


def preload(config: str, logs: Path, lib: Path, darshan: Path) -> dict[str, str]:
    """The variables that put a profiler into the ranks."""
    if config == "iolens":
        # as `iolens profile --launcher mpirun` runs a job: every rank shares the job id
        return {"LD_PRELOAD": str(lib), "IOLENS_PROFILE_DIR": str(logs), "IOLENS_JOB_ID": "bench-job"}
    if config == "darshan":
        return {
            "LD_PRELOAD": str(darshan / "lib" / "libdarshan.so"),
            "DARSHAN_LOGPATH": str(logs),
            "DARSHAN_EXCLUDE_DIRS": "/proc/,/sys/",
        }
    return {}


def program_args(case: Case, progs: dict[str, Path], target: Path, blocks: int) -> list[str]:
    if case.kind == "write_at_all":
        return [str(progs["write_at_all"]), str(target), str(case.calls), str(case.size), str(blocks)]
    mode = case.kind.split()[1]
    return [str(progs["h5dwrite"]), str(target), str(case.calls), str(case.size), mode, str(blocks)]


def command(case: Case, config: str, progs: dict[str, Path], target: Path, logs: Path, lib: Path,
            darshan: Path) -> list[str]:  # fmt: skip
    cmd = ["mpirun", "-np", str(case.np)]
    for k, v in preload(config, logs, lib, darshan).items():
        cmd += ["-x", f"{k}={v}"]
    return cmd + program_args(case, progs, target, BLOCKS)


def callgrind(cmd: list[str], env: dict[str, str]) -> int:
    """User-space instructions of one run's loop of calls (valgrind's count is exact)."""
    # Only inside timed_loop (mpi_loop_clock.h): MPI's start-up polls for a varying while.
    vg = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", "--toggle-collect=timed_loop*"]
    r = subprocess.run([*vg, *cmd], env=env, capture_output=True, text=True, check=False, timeout=1200)
    for line in r.stderr.splitlines():
        if "Collected :" in line:
            return int(line.split()[-1])
    raise bl.BenchError(f"callgrind gave no count: {r.stderr.strip()[-300:]}")


def instruction_rows(progs: dict[str, Path], tmp: Path, lib: Path, darshan: Path, n: int,
                     repeat: int) -> list[list[object]]:  # fmt: skip
    """Added instructions per 4 KiB call at 1 rank (no mpirun: Open MPI's singleton), from runs of n and 2n
    calls with and without each profiler, so that what the first calls cost more cancels out. Each count is
    the least of `repeat` runs: a collective write polls MPI's progress engine until its I/O completes, a
    number of times that grows with the machine's load (it only ever adds instructions)."""
    rows: list[list[object]] = []
    env = base_env()
    logs = tmp / "logs-callgrind"
    for kind in ("write_at_all", "H5Dwrite coll", "H5Dwrite indep"):
        per_call = {}
        for config in CONFIGS:
            counts = []
            for calls in (n, 2 * n):
                cmd = program_args(Case(1, kind, 4096, calls), progs, tmp / "job.dat", 1)
                got = []
                for _ in range(repeat):
                    logs.mkdir()
                    got.append(callgrind(cmd, {**env, **preload(config, logs, lib, darshan)}))
                    (tmp / "job.dat").unlink(missing_ok=True)
                    shutil.rmtree(logs)
                counts.append(min(got))
            per_call[config] = (counts[1] - counts[0]) / n
        i, d = per_call["iolens"] - per_call["bare"], per_call["darshan"] - per_call["bare"]
        rows.append([kind, per_call["bare"], i, d, bl.ratio(i, d)])
        bl.progress(f"instructions, {kind}: +{i:.0f} iolens, +{d:.0f} Darshan per call")
    return rows


def added(res: Result, config: str, what: str = "ns_per_call") -> float:
    return res.med(config, what) - res.med("bare", what)


def ratio_of_added(rounds: Sequence[dict[str, Sample]]) -> float:
    med = {c: bl.median([r[c].ns_per_call for r in rounds]) for c in CONFIGS}
    d = med["darshan"] - med["bare"]
    return (med["iolens"] - med["bare"]) / d if d > 0 else float("nan")


def base_env() -> dict[str, str]:
    drop = ("LD_PRELOAD",)
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith(("IOLENS_", "DARSHAN_"))}
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    env["OMPI_MCA_rmaps_base_oversubscribe"] = "1"
    env["PRTE_MCA_rmaps_default_mapping_policy"] = ":oversubscribe"
    return env


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    bl.common_args(p, default_runs=7)
    p.add_argument("--build", default=str(bl.REPO_DIR / "build" / "native"), help="a CMake build of native/")
    p.add_argument(
        "--darshan", default=None, help="Darshan's install prefix (default: bench/build_darshan.sh's)"
    )
    p.add_argument("--np", default="2,4", help="rank counts, comma-separated (default 2,4)")
    p.add_argument("--shm-dir", default="/dev/shm", help="where the files and logs go (default /dev/shm)")
    p.add_argument(
        "--no-instructions",
        action="store_true",
        help="leave out the instruction counts (valgrind's callgrind)",
    )
    args = p.parse_args()
    lib = (Path(args.build) / "libiolens-profile.so").resolve()
    if not lib.is_file():
        raise bl.BenchError(f"{lib}: not built (make native)")
    try:
        nps = [int(x) for x in args.np.split(",")]
    except ValueError:
        raise bl.BenchError(f"--np {args.np}: not a list of rank counts") from None
    darshan = darshan_prefix(args.darshan).resolve()
    runs = args.runs or (2 if args.quick else 7)
    div = 10 if args.quick else 1
    loadavg_start = Path("/proc/loadavg").read_text().strip()
    report = bl.Report("profile_vs_darshan_mpi", "Profiler runtimes against Darshan: MPI-IO and HDF5 jobs")
    report.header += bl.machine_lines(paths=[Path(args.shm_dir)])
    report.header += [
        f"loadavg: {loadavg_start} (/proc/loadavg at the start)",
        f"iolens:  {lib}",
        f"darshan: {darshan} ({darshan_version(darshan)})",
        f"rounds:  {runs}, each running no profiler, iolens and Darshan (order flipped every other round)",
    ]
    cases = [
        Case(n, kind, size, max(CALLS[size] // div, 10))
        for n in nps
        for kind in ("write_at_all", "H5Dwrite coll", "H5Dwrite indep")
        for size in SIZES
    ]
    results = []
    icounts: list[list[object]] = []
    env = base_env()
    with bl.scratch_dir(Path(args.shm_dir), "vs-darshan") as tmp:
        progs = build(tmp)
        if not args.no_instructions and shutil.which("valgrind"):
            n, repeat = (200, 1) if args.quick else (1000, 3)
            icounts = instruction_rows(progs, tmp, lib, darshan, n, repeat)
        target = tmp / "job.dat"
        for case in cases:
            res = Result(case)
            for _, config in bl.alternating(CONFIGS, runs):
                if not res.rounds or config in res.rounds[-1]:
                    res.rounds.append({})
                logs = tmp / f"logs-{config}"
                logs.mkdir()
                cmd = command(case, config, progs, target, logs, lib, darshan)
                if case.np == nps[0] and case.size == SIZES[0]:
                    report.command(cmd)  # one of each program and configuration
                res.rounds[-1][config] = one(cmd, env, logs)
                target.unlink(missing_ok=True)
                shutil.rmtree(logs)
            results.append(res)
            bl.progress(
                f"np {case.np} {case.kind} {case.size} B: +{added(res, 'iolens'):.0f} ns iolens, "
                f"+{added(res, 'darshan'):.0f} ns Darshan (load {os.getloadavg()[0]:.2f})"
            )
    _write(report, results, loadavg_start)
    if icounts:
        report.section(
            "Added user-space instructions per 4 KiB call, 1 rank (callgrind; exact, whatever the load)",
            bl.table(["call", "bare", "+iolens", "+Darshan", "iolens/Darshan"], icounts),
        )
        report.add(
            "(the instructions inside the loop of calls, from runs of N and 2N calls of each program "
            "under valgrind --tool=callgrind --toggle-collect=timed_loop*, each count the least of "
            f"{repeat} runs, N = {n}, as a singleton MPI process: what the loop's first calls "
            "cost more cancels out; the MPI-IO and POSIX calls beneath an H5Dwrite, and their wrappers, "
            "are in its figure)"
        )
    report.emit(args.out, args.quick)


def darshan_version(prefix: Path) -> str:
    """The version darshan-runtime's pkg-config file names (darshan-config has no --version)."""
    pc = prefix / "lib" / "pkgconfig" / "darshan-runtime.pc"
    try:
        for line in pc.read_text().splitlines():
            if line.startswith("Version:"):
                return "Darshan " + line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "version unknown"


def _size(n: int) -> str:
    return "4 KiB" if n == 4096 else "1 MiB" if n == 1 << 20 else f"{n} B"


def _verdict(r: float, lo: float, hi: float) -> str:
    """Whether the ratio is within TARGET, and whether its interval says so too."""
    if r != r:
        return "-"
    if r <= TARGET:
        return "met" if hi <= TARGET else "met (CI reaches above)"
    return "NOT met (CI reaches below)" if lo <= TARGET else "NOT met"


def _write(report: bl.Report, results: list[Result], loadavg_start: str) -> None:
    rows = []
    for res in results:
        c = res.case
        r = ratio_of_added(res.rounds)
        lo, hi = bl.bootstrap_rounds_ci(res.rounds, ratio_of_added)
        verdict = _verdict(r, lo, hi)
        rows.append([
            c.np, c.kind, _size(c.size), c.calls, res.med("bare", "ns_per_call"),
            added(res, "iolens"), added(res, "darshan"), r, "-" if lo != lo else bl.spread([lo, hi]), verdict,
            added(res, "iolens", "ns_per_call_loop"), added(res, "darshan", "ns_per_call_loop"),
        ])  # fmt: skip
    report.section(
        "Added wall ns per call (slowest rank, fastest block; medians of the rounds)",
        bl.table(
            [
                "np",
                "call",
                "size",
                "calls",
                "bare ns",
                "+iolens",
                "+Darshan",
                "iolens/Darshan",
                "95% CI",
                "≤ 0.5×",
                "loop: +iolens",
                "+Darshan",
            ],
            rows,
        ),  # fmt: skip
    )
    rows = []
    for res in results:
        c = res.case
        rows.append([
            c.np, c.kind, _size(c.size),
            int(res.med("iolens", "log_bytes")), int(res.med("iolens", "log_files")),
            int(res.med("darshan", "log_bytes")), int(res.med("darshan", "log_files")),
            res.med("bare", "finalize_ms"), res.med("iolens", "finalize_ms"),
            res.med("darshan", "finalize_ms"),
            res.med("bare", "exit_ms"), res.med("iolens", "exit_ms"), res.med("darshan", "exit_ms"),
            res.med("bare", "wall_s"), res.med("iolens", "wall_s"), res.med("darshan", "wall_s"),
        ])  # fmt: skip
    report.section(
        "What the job leaves and how long it takes to finish (medians)",
        bl.table(
            [
                "np",
                "call",
                "size",
                "iolens B",
                "files",
                "Darshan B",
                "files",
                "fin ms bare",
                "iolens",
                "Darshan",
                "exit ms bare",
                "iolens",
                "Darshan",
                "job s bare",
                "iolens",
                "Darshan",
            ],
            rows,
        ),  # fmt: skip
    )
    report.notes(
        f"+iolens, +Darshan: the median ns per call with the profiler minus without it. Each run makes its "
        f"calls in {BLOCKS} blocks, every rank starting a block together; a block's time is its slowest "
        "rank's, and the run's figure is its fastest block's time over the block's calls (the block least "
        "disturbed by other processes: a profiler's cost is paid on every call, so it is in every block). "
        "Start-up, MPI_Finalize and exit are outside. loop: the same from the whole loop's time (every "
        "block), which other processes on the machine disturb more. "
        "iolens/Darshan: the ratio of the two added costs; its 95% interval is a bootstrap over whole "
        "rounds (each round holds the three configurations run side by side). A ratio is '-' when Darshan "
        "added nothing measurable (its median at or below the bare one): the noise is larger than the cost.",
        "iolens B, Darshan B: bytes of every file in the profiler's log directory after the job (all of "
        "iolens's per-process logs, or a job log if the runtime writes one; Darshan's one job log); files: "
        "how many. fin ms: from the last rank entering MPI_Finalize to rank 0 leaving it (Darshan reduces "
        "and writes its log there). exit ms: from rank 0 leaving MPI_Finalize to mpirun's exit (the "
        "processes' exit, where a runtime that writes its logs at exit does so, and mpirun's teardown). "
        "job s: mpirun's wall time, start to end.",
        "The ranks share 2 cores with the MPI library's progress (4 ranks oversubscribe them) and with "
        "whatever else runs on the machine: the load average at the start and end says how busy it was.",
    )
    report.add(f"\n/proc/loadavg at the start: {loadavg_start}")
    report.add(f"/proc/loadavg at the end:   {Path('/proc/loadavg').read_text().strip()}")


if __name__ == "__main__":
    bl.main_wrapper(main)
