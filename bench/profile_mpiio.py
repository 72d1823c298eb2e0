#!/usr/bin/env python3
"""What the profiler runtime adds to an MPI_File_write_at_all: wall time per call of a loop of collective
writes (bench/mpiio_write_at_all.c, built here with mpicc), at 2 ranks under mpirun, with and without
LD_PRELOAD=libiolens-profile.so, alternating run by run, on tmpfs (/dev/shm). The figure is the slowest
rank's loop time divided by the calls: start-up and exit (the runtime creating and compressing its logs)
are outside it.

The added cost is the MPI-IO wrapper (a handle lookup, MPI_Type_size, the counters) plus the POSIX
wrappers of the writes the MPI library makes beneath; a comparison with Darshan's added cost is for a later
run (docs/profile.md, "MPI-IO").

    python3 bench/profile_mpiio.py --build build/native     # writes bench/results/profile_mpiio.txt
    python3 bench/profile_mpiio.py --build build/native --quick
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import benchlib as bl

SIZES = (4096, 1 << 20)
CALLS = {4096: 2000, 1 << 20: 200}
RANKS = 2


def one(prog: Path, target: Path, n: int, size: int, env: dict[str, str], report: bl.Report) -> float:
    cmd = ["mpirun", "-np", str(RANKS), str(prog), str(target), str(n), str(size)]
    report.command(cmd)
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    target.unlink(missing_ok=True)
    if r.returncode != 0:
        raise bl.BenchError(f"mpirun failed (exit status {r.returncode}): {r.stderr.strip()[-300:]}")
    for line in r.stdout.splitlines():
        if line.startswith("ns_per_call "):
            return float(line.split()[1])
    raise bl.BenchError(f"no ns_per_call in the output: {r.stdout.strip()[-300:]}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    bl.common_args(p, default_runs=7)
    args, lib = bl.profiler_lib(p)
    mpicc = shutil.which("mpicc") or "mpicc"
    runs = args.runs or (1 if args.quick else 7)
    report = bl.Report("profile_mpiio", "Profiler runtime: wall time added per MPI_File_write_at_all")
    report.header += bl.machine_lines(paths=[Path("/dev/shm")])
    report.header.append(f"runtime: {lib}; {RANKS} ranks")
    rows = []
    with tempfile.TemporaryDirectory(prefix="iolens-mpiio-bench-", dir="/dev/shm") as tmp:
        prog = Path(tmp) / "mpiio_write_at_all"
        bl.check(bl.run([mpicc, "-O2", "-o", str(prog), str(bl.BENCH_DIR / "mpiio_write_at_all.c")]), "mpicc")
        logs = Path(tmp) / "logs"
        logs.mkdir()
        base = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("IOLENS_")}
        if os.geteuid() == 0:
            base.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        base["OMPI_MCA_rmaps_base_oversubscribe"] = "1"
        envs = {"plain": base, "profiled": {**base, "LD_PRELOAD": str(lib), "IOLENS_PROFILE_DIR": str(logs)}}
        for size in SIZES:
            n = max(CALLS[size] // (10 if args.quick else 1), 10)
            got: dict[str, list[float]] = {"plain": [], "profiled": []}
            for _, tool in bl.alternating(("plain", "profiled"), runs):
                got[tool].append(one(prog, Path(tmp) / "shared.dat", n, size, envs[tool], report))
                shutil.rmtree(logs)
                logs.mkdir()
            diffs = [b - a for a, b in zip(got["plain"], got["profiled"], strict=True)]
            med = bl.median(got["profiled"]) - bl.median(got["plain"])
            rows.append([size, n, bl.median(got["plain"]), bl.median(got["profiled"]), med, bl.spread(diffs)])
            bl.progress(f"{size} B: +{med:.0f} ns per call")
    report.section(
        "Wall ns per MPI_File_write_at_all, slowest rank (median of the runs)",
        bl.table(["bytes", "calls", "plain", "profiled", "added", "added (runs)"], rows),
    )
    report.notes(
        "added: median ns per call with the runtime minus without, from runs alternating plain and profiled; "
        "the min-max of the run-by-run differences shows how noisy a shared 2-core VM is (2 ranks, and the "
        "MPI library's own progress, on 2 cores).",
        "With the runtime, a call costs the MPI-IO wrapper and the POSIX wrappers of the writes Open MPI's "
        "OMPIO makes beneath (its aggregator's pwrite/pwritev calls and any locks).",
    )
    report.emit(args.out, args.quick)


if __name__ == "__main__":
    bl.main_wrapper(main)
