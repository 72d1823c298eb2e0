#!/usr/bin/env python3
"""One log per job (docs/profile.md, "One log per job"): what it costs and what it saves.

1. At 2 and 4 ranks, tests/data/joblog/joblog_ranks.c under mpirun (each rank writes a common file and one of
   its own), alternating: per-process logs only (IOLENS_JOB_LOG=0), the job log (IOLENS_JOB_LOG=1), and
   Darshan 3.4.7 (bench/build_darshan.sh's, when built). Figures: the logs' bytes per rank, the MPI_Finalize
   wrapper's time (the slowest rank's, from IOLENS_PROFILE_DEBUG) and mpirun's wall time.
2. The reduction's cost as ranks grow: bench/joblog_scale.c runs the wrapper's collectives with synthetic
   inputs of F reduced files at P = 2, 4, 8, 16 ranks (oversubscribed on this machine's cores), each phase
   timed alone (median over the repetitions, slowest rank); each phase is fitted to t = a + b log2 P (a
   binomial tree's depth; the gather to rank 0 to t = a + b P) and evaluated at P = 10,000. The user op's
   work per row merge is timed in one process; the reduce's model adds ceil(log2 P) merges of F rows on the
   critical path of the tree.

    python3 bench/joblog_bench.py --build build/native     # writes bench/results/joblog.txt
    python3 bench/joblog_bench.py --build build/native --quick
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import benchlib as bl
import numpy as np

DARSHAN = Path("/var/tmp/iolens-peers/darshan/install/lib/libdarshan.so")
SCALE_P = (2, 4, 8, 16)
FILES = (100, 1000)
TARGET_P = 10_000
WRAPPER = re.compile(r"([0-9.]+) ms in MPI_Finalize's wrapper")


def finish_run(
    prog: Path, tmp: Path, np_: int, tool: str, base: dict[str, str], lib: Path, report: bl.Report
):
    work, logs = tmp / "work", tmp / "logs"
    for d in (work, logs):
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir()
    debug = tmp / "debug.txt"
    debug.unlink(missing_ok=True)
    cmd = ["mpirun", "-np", str(np_)]
    if tool == "darshan":
        env = {**base, "DARSHAN_LOGFILE": str(logs / "job.darshan")}
        cmd += ["-x", f"LD_PRELOAD={DARSHAN}", "-x", "DARSHAN_LOGFILE"]
    else:
        on = "1" if tool == "job log" else "0"
        env = {**base, "IOLENS_PROFILE_DIR": str(logs), "IOLENS_JOB_ID": "bench", "IOLENS_JOB_LOG": on,
               "IOLENS_PROFILE_DEBUG": str(debug)}  # fmt: skip
        cmd += ["-x", f"LD_PRELOAD={lib}", "-x", "IOLENS_PROFILE_DIR", "-x", "IOLENS_JOB_ID", "-x",
                "IOLENS_JOB_LOG", "-x", "IOLENS_PROFILE_DEBUG"]  # fmt: skip
    cmd += [str(prog), str(work)]
    report.command(cmd)
    t0 = time.monotonic()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.monotonic() - t0
    if r.returncode != 0:
        raise bl.BenchError(f"mpirun failed ({tool}, exit status {r.returncode}): {r.stderr.strip()[-300:]}")
    size = sum(p.stat().st_size for p in logs.iterdir() if p.is_file())
    if tool != "darshan" and tool == "job log" and not list(logs.glob("*.iolj")):
        raise bl.BenchError(f"no job log written: {debug.read_text() if debug.exists() else ''}")
    ms = [float(m) for m in WRAPPER.findall(debug.read_text())] if debug.exists() else []
    return size / np_, max(ms) if ms else float("nan"), wall


def part_finish(
    args: argparse.Namespace, lib: Path, tmp: Path, base: dict[str, str], report: bl.Report
) -> None:
    prog = tmp / "joblog_ranks"
    bl.check(
        bl.run(["mpicc", "-O1", "-o", str(prog), str(bl.REPO_DIR / "tests/data/joblog/joblog_ranks.c")]),
        "mpicc",
    )
    tools = ["per-process logs", "job log"] + (["darshan"] if DARSHAN.is_file() else [])
    rows = []
    runs = args.runs or (1 if args.quick else 5)
    for np_ in (2, 4):
        got: dict[str, list[tuple[float, float, float]]] = {t: [] for t in tools}
        for _, tool in bl.alternating(tools, runs):
            got[tool].append(finish_run(prog, tmp, np_, tool, base, lib, report))
        for tool in tools:
            size = bl.median([g[0] for g in got[tool]])
            wrap = bl.median([g[1] for g in got[tool]]) if tool == "job log" else float("nan")
            wall = [g[2] for g in got[tool]]
            rows.append([np_, tool, f"{size / 1024:.1f}", "-" if math.isnan(wrap) else f"{wrap:.2f}",
                         f"{bl.median(wall):.3f}", bl.spread(wall)])  # fmt: skip
            bl.progress(f"{np_} ranks, {tool}: {size / 1024:.1f} KiB per rank, wall {bl.median(wall):.3f} s")
    report.section(
        "Logs per rank and time to finish (joblog_ranks, median of the runs)",
        bl.table(["ranks", "logs", "KiB per rank", "wrapper ms", "wall s", "wall s (runs)"], rows),
    )


def part_scale(args: argparse.Namespace, tmp: Path, base: dict[str, str], report: bl.Report) -> None:
    prog = tmp / "joblog_scale"
    src = [str(bl.BENCH_DIR / "joblog_scale.c"), str(bl.REPO_DIR / "native/profiler/reduce.c"),
           str(bl.REPO_DIR / "native/profiler/counters.c")]  # fmt: skip
    inc = f"-I{bl.REPO_DIR / 'native/profiler'}"
    bl.check(bl.run(["mpicc", "-O2", inc, "-o", str(prog), *src]), "mpicc")
    reps = 5 if args.quick else 21
    raw: list[str] = []
    merge_ns: dict[int, float] = {}
    for f in FILES:
        r = bl.check(bl.run([str(prog), str(f), "200", "compute"]), "joblog_scale compute")
        raw.append(r.stdout.strip())
        merge_ns[f] = float(r.stdout.split("ns_per_row_merge=")[1])
        words = int(r.stdout.split("words=")[1].split()[0])
    times: dict[tuple[int, str], dict[int, float]] = {}
    for p in SCALE_P if not args.quick else SCALE_P[:2]:
        for f in FILES:
            cmd = ["mpirun", "-np", str(p), str(prog), str(f), str(reps)]
            report.command(cmd)
            r = subprocess.run(cmd, env=base, capture_output=True, text=True, check=False)
            if r.returncode != 0:
                raise bl.BenchError(f"joblog_scale at {p} ranks failed: {r.stderr.strip()[-300:]}")
            for line in r.stdout.splitlines():
                if line.startswith("phase "):
                    raw.append(line)
                    _, pp, ff, name, us = line.split()
                    times.setdefault((f, name), {})[p] = float(us.split("=")[1])
            bl.progress(f"scale: {p} ranks, {f} files")
    report.section("Raw output of joblog_scale (median us per phase, slowest rank)", "\n".join(raw))
    rows = []
    depth = math.ceil(math.log2(TARGET_P))
    for f in FILES:
        tree_total = fit_total = 0.0
        for (ff, name), by_p in sorted(times.items()):
            if ff != f:
                continue
            # Tree model: a binomial tree's collective at P ranks is ceil(log2 P) steps of what one step costs
            # at 2 ranks (2 ranks on 2 cores: no oversubscription); the gather's root also takes 8 bytes per
            # rank (80 KB at 10k, counted at 1 GB/s: 1000 bytes per us).
            step = by_p[2]
            tree = depth * step
            if name == "gather":
                tree += TARGET_P * 8 / 1000.0
            if name == "reduce_rows":
                tree = max(tree, depth * f * merge_ns[f] / 1000)
            # Fit: t = a + b log2 P (gather: a + b P) over the oversubscribed 2..16 ranks, evaluated at 10k.
            ps = np.array(sorted(by_p), dtype=float)
            ts = np.array([by_p[int(p)] for p in ps])
            x = ps if name == "gather" else np.log2(ps)
            b, a = np.polyfit(x, ts, 1) if ps.size > 1 else (0.0, ts[0])
            fit = a + max(b, 0.0) * (TARGET_P if name == "gather" else math.log2(TARGET_P))
            tree_total += tree
            fit_total += fit
            rows.append([f, name, f"{step:.1f}", f"{tree / 1000:.2f}", f"{fit / 1000:.2f}"])
        rows.append([f, "total", "", f"{tree_total / 1000:.2f}", f"{fit_total / 1000:.2f}"])
    report.section(
        f"Model of the wrapper's collectives at P = {TARGET_P} ranks (ms)",
        bl.table(["files F", "phase", "us at 2 ranks", "tree model ms", "oversubscribed fit ms"], rows),
    )
    report.add(
        "user op: "
        + ", ".join(f"{merge_ns[f]:.0f} ns per row merge at F = {f}" for f in FILES)
        + f" ({words} words per row)"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    bl.common_args(p, default_runs=5)
    args, lib = bl.profiler_lib(p)
    report = bl.Report("joblog", "One log per job: log bytes per rank, time to finish, the reduction's cost")
    report.header += bl.machine_lines(paths=[Path("/dev/shm")])
    report.header.append(f"runtime: {lib}; 1-minute load average at the start: {os.getloadavg()[0]:.2f}")
    base = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("IOLENS_")}
    if os.geteuid() == 0:
        base.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    base["OMPI_MCA_rmaps_base_oversubscribe"] = "1"
    with tempfile.TemporaryDirectory(prefix="iolens-joblog-bench-", dir="/dev/shm") as t:
        tmp = Path(t)
        part_finish(args, lib, tmp, base, report)
        part_scale(args, tmp, base, report)
    report.notes(
        "KiB per rank: the bytes the run left in its log directory divided by the ranks (per-process logs: "
        "each rank's .iolpz; job log: the one .iolj; darshan: its one log).",
        "wrapper ms: the slowest rank's time in the MPI_Finalize wrapper (snapshot, the collectives, "
        "compression, MPI_File_write_at_all, sync, rename), from the runtime's debug lines.",
        "Scale: 2 cores run up to 16 ranks, so the measured latencies are those of an oversubscribed shared "
        "memory transport (much above an HPC network's few microseconds): the model is pessimistic for the "
        "latency terms and exact for the user op's work (measured in one process).",
    )
    report.emit(args.out, args.quick)


if __name__ == "__main__":
    bl.main_wrapper(main)
