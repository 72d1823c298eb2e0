#!/usr/bin/env python3
"""What the profiler runtime (libiolens-profile.so) adds to each call: CPU time per call of a loop of one
kind of call, run with and without LD_PRELOAD, alternating run by run, on tmpfs (/dev/shm).

The loop is native/profiler/tests/profile_bench.c (built with the native tree, IOLENS_TESTS=ON): it prints
the user + system CPU time of the loop alone, per call, from getrusage — the process's start-up and exit (the
runtime creating and compressing its log) are outside it. Kinds:

  pwrite, pread   4 bytes within one page of a file (the kernel's cheapest data path)
  fwrite          4 bytes to a buffered stream (no system call at all, most of the time)
  meta            open(O_CREAT|O_EXCL) + close + stat + unlink of a new file each time
  meta_same       the same four calls on one path, over and over (no new file to register)
  devnull         write of 4 bytes to /dev/null (an untracked descriptor)
  excluded        stat("/dev/null") (an excluded path)

and the exit: a process that created 10k files (each open, written 4 bytes, closed) prints the monotonic
clock as main returns; the time from then until the process is gone (seen by this script) is its exit, where
the runtime writes and compresses its log. Target: the runtime adds <= 100 ms for 10k files.

The table shows medians over the runs (and min–max of the per-run differences), the logs going to /dev/shm
too. Targets (the peer is Darshan 3.5's figures, as measured elsewhere): pwrite/pread <= +100 ns (Darshan
+200-250), fwrite <= +40 ns (Darshan +95), meta <= +1 us (Darshan +3.6 us), devnull/excluded <= +20 ns.

    python3 bench/profile_overhead.py --build build/native     # writes bench/results/profile_overhead.txt
    python3 bench/profile_overhead.py --build build/native --quick
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import benchlib as bl

EXIT_FILES = 10_000
EXIT_TARGET_MS = 100
HEADERS = ["kind", "calls", "plain", "profiled", "added", "added (runs)", "added instr.", "target", "met"]
KINDS = (
    ("pwrite", 1_000_000, 100),
    ("pread", 1_000_000, 100),
    ("fwrite", 10_000_000, 40),
    ("meta", 100_000, 1000),
    ("meta_same", 100_000, None),
    ("devnull", 1_000_000, 20),
    ("excluded", 1_000_000, 20),
)


def one(bench: Path, kind: str, n: int, scratch: Path, env: dict[str, str], report: bl.Report) -> float:
    """CPU ns per call of one run (the loop's own figure, printed by profile_bench)."""
    cmd = [str(bench), kind, str(scratch), str(n)]
    report.command(cmd)
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise bl.BenchError(f"{kind} failed (exit status {r.returncode}): {r.stderr.strip()}")
    return float(r.stdout.split()[2])


def exit_ms(bench: Path, n: int, scratch: Path, env: dict[str, str], report: bl.Report) -> float:
    """ms from the end of main (the monotonic clock profile_bench prints) to the end of the process."""
    where = scratch / "exit"
    where.mkdir()
    cmd = [str(bench), "exit", str(where), str(n)]
    report.command(cmd)
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.communicate()
    end = time.monotonic_ns()  # CLOCK_MONOTONIC, the clock profile_bench read
    shutil.rmtree(where)
    if p.returncode != 0:
        raise bl.BenchError(f"exit failed (exit status {p.returncode}): {err.strip()}")
    return (end - int(out.split()[3])) / 1e6


def instructions(bench: Path, kind: str, n: int, scratch: Path, env: dict[str, str]) -> int:
    """User-space instructions of a run under callgrind (valgrind's count is exact: no noise)."""
    out = Path(scratch).parent / "callgrind.out"
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", str(bench), kind, str(scratch)]
    cmd.append(str(n))
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    out.unlink(missing_ok=True)
    for line in r.stderr.splitlines():
        if "Collected" in line or "refs:" in line:
            return int(line.split()[-1].replace(",", ""))
    raise bl.BenchError(f"callgrind gave no count for {kind}: {r.stderr.strip()[-200:]}")


def added_instructions(bench: Path, kind: str, n: int, scratch: Path, plain: dict[str, str],
                       prof: dict[str, str]) -> float:  # fmt: skip
    """Instructions the runtime adds per call: runs of n and 2n calls with and without it, so that what
    does not grow with the calls (start-up, the log's creation) cancels out. What grows with the calls
    outside the loop stays in (the compression of a bigger log at exit, for meta)."""
    a1, a2 = instructions(bench, kind, n, scratch, plain), instructions(bench, kind, 2 * n, scratch, plain)
    b1, b2 = instructions(bench, kind, n, scratch, prof), instructions(bench, kind, 2 * n, scratch, prof)
    return ((b2 - b1) - (a2 - a1)) / n


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    bl.common_args(p, default_runs=7)
    p.add_argument("--build", default=str(bl.REPO_DIR / "build" / "native"), help="a CMake build of native/")
    p.add_argument("--only", default=None, help="comma-separated kinds to run (and 'exit'); default all")
    args = p.parse_args()
    only = set(args.only.split(",")) if args.only else None
    build = Path(args.build)
    lib = build / "libiolens-profile.so"
    bench = build / "profiler-tests" / "profile_bench"
    for f in (lib, bench):
        if not f.is_file():
            raise SystemExit(f"{f}: not built (cmake -S native -B {build} -DIOLENS_TESTS=ON)")
    runs = args.runs or (1 if args.quick else 7)
    scale = 10 if args.quick else 1
    report = bl.Report("profile_overhead", "Profiler runtime: CPU time added per call")
    report.header += bl.machine_lines(paths=[Path("/dev/shm")])
    report.header.append(f"runtime: {lib}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="iolens-prof-bench-", dir="/dev/shm") as tmp:
        scratch = Path(tmp) / "data"
        logs = Path(tmp) / "logs"
        scratch.mkdir()
        logs.mkdir()
        plain_env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("IOLENS_")}
        prof_env = {**plain_env, "LD_PRELOAD": str(lib), "IOLENS_PROFILE_DIR": str(logs)}
        for kind, n, target in KINDS:
            if only is not None and kind not in only:
                continue
            n = max(n // scale, 1000)
            got: dict[str, list[float]] = {"plain": [], "profiled": []}
            for _, tool in bl.alternating(("plain", "profiled"), runs):
                env = plain_env if tool == "plain" else prof_env
                got[tool].append(one(bench, kind, n, scratch, env, report))
                shutil.rmtree(logs)
                logs.mkdir()
            diffs = [b - a for a, b in zip(got["plain"], got["profiled"], strict=True)]
            med = bl.median(got["profiled"]) - bl.median(got["plain"])
            ok = "-" if target is None else ("yes" if med <= target else "NO")
            instr = "-"
            if shutil.which("valgrind") and not args.quick:
                instr = round(added_instructions(bench, kind, 20_000, scratch, plain_env, prof_env))
                shutil.rmtree(logs)
                logs.mkdir()
            rows.append([kind, n, bl.median(got["plain"]), bl.median(got["profiled"]), med, bl.spread(diffs),
                         instr, "-" if target is None else f"<= {target}", ok])  # fmt: skip
            bl.progress(f"{kind}: +{med:.1f} ns per call, +{instr} instructions")
        exit_rows = []
        if only is None or "exit" in only:
            n = EXIT_FILES // scale
            got = {"plain": [], "profiled": []}
            for _, tool in bl.alternating(("plain", "profiled"), runs):
                env = plain_env if tool == "plain" else prof_env
                got[tool].append(exit_ms(bench, n, scratch, env, report))
                shutil.rmtree(logs)
                logs.mkdir()
            diffs = [b - a for a, b in zip(got["plain"], got["profiled"], strict=True)]
            med = bl.median(got["profiled"]) - bl.median(got["plain"])
            exit_rows.append([n, bl.median(got["plain"]), bl.median(got["profiled"]), med, bl.spread(diffs),
                              f"<= {EXIT_TARGET_MS}", "yes" if med <= EXIT_TARGET_MS else "NO"])  # fmt: skip
            bl.progress(f"exit: +{med:.1f} ms for {n} files")
    report.section(
        "CPU ns per call (median of the runs)",
        bl.table(HEADERS, rows),
    )
    if exit_rows:
        report.section(
            "Exit: ms from the end of main to the end of the process (median of the runs)",
            bl.table(["files", "plain", "profiled", "added", "added (runs)", "target", "met"], exit_rows),
        )
    report.notes(
        "added: median CPU ns per call with the runtime minus without (getrusage of the loop alone); on a "
        "shared VM the runs of a cheap call vary by more than the difference (see the min-max), so 'met' "
        "compares a noisy median. added instr.: user-space instructions the runtime adds per call, exact "
        "(callgrind, 20k and 40k calls with and without it); a few hundred instructions are 50-100 ns here.",
        "meta is four calls (open, close, stat, unlink) on a new file: the runtime registers a path per "
        "iteration (a slot of its path table, a FILES record and a 200-byte FILE_REC record in the log: the "
        "file is never read or written, so it gets no FILE_DATA record); meta_same is the same calls on one "
        "path, the per-call cost without registration. Its added instructions include what grows with the "
        "files outside the loop: compressing the bigger log at exit (about 9000 instructions, 0.7 us, per "
        "file; the CPU ns column is the loop's alone).",
        "The runtime's clock is the TSC (invariant on this CPU), two readings per timed call (~11 ns each on "
        "this VM); calls on untracked descriptors and excluded paths are counted, not timed.",
    )
    report.emit(args.out, args.quick)


if __name__ == "__main__":
    bl.main_wrapper(main)
