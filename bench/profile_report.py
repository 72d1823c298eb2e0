#!/usr/bin/env python3
"""`iolens profile report` of a job whose log names 100 000 files: wall time and peak memory (ru_maxrss of
the command, from wait4, measured from a small process of its own) of the text report and of `--json`,
run alternately, median of the runs.

The log is built by tests/profile_logs.py's many_files_spec (a process that wrote then read 100 000 files of a
few KiB to a few MiB each, in the layout the runtime writes: FILE_REC and FILE_DATA records) and written
compressed, as the runtime leaves it. Target: ≤ 2 s and ≤ 200 MB each (PyDarshan's report of such a log
takes 17.5 s and 589 MB, as measured elsewhere).

    PYTHONPATH=python .venv/bin/python bench/profile_report.py          # bench/results/profile_report.txt
    PYTHONPATH=python .venv/bin/python bench/profile_report.py --quick  # smoke test (10 000 files, one run)
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import benchlib as bl

sys.path.insert(0, str(bl.REPO_DIR))

FILES = 100_000
TARGET_S, TARGET_BYTES = 2.0, 200 * 10**6
HEADERS = ["command", "runs", "wall s (median)", "wall s (max)", "peak MiB (median)", "peak MiB (max)", "met"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    bl.common_args(p, default_runs=5)
    p.add_argument("--files", type=int, default=None, help=f"files in the log (default {FILES})")
    args = p.parse_args()
    runs = args.runs or (1 if args.quick else 5)
    n = args.files or (FILES // 10 if args.quick else FILES)
    from tests.profile_logs import many_files_spec, write_log

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(bl.REPO_DIR / "python"), env.get("PYTHONPATH")]))
    report = bl.Report("profile_report", f"iolens profile report of a log with {n} files")
    report.header += bl.machine_lines(paths=[Path(tempfile.gettempdir())])
    rows = []
    with bl.scratch_dir(Path(tempfile.gettempdir()), "profile-report") as d:
        log = write_log(d, many_files_spec(n))
        report.header.append(f"log:     {log.stat().st_size / 1e6:.1f} MB compressed, {n} files")
        kinds = {"text": [], "--json": ["--json"]}
        got: dict[str, list[tuple[float, float]]] = {k: [] for k in kinds}
        for _, kind in bl.alternating(tuple(kinds), runs):
            cmd = [sys.executable, "-m", "iolens", "profile", "report", str(d), *kinds[kind]]
            report.command(cmd)
            wall, mib, _ = bl.peak(cmd, env)
            got[kind].append((wall, mib))
            bl.progress(f"{kind}: {wall:.2f} s, {mib:.0f} MiB")
        for kind, xs in got.items():
            walls, mibs = [w for w, _ in xs], [m for _, m in xs]
            ok = bl.median(walls) <= TARGET_S and bl.median(mibs) * bl.MIB <= TARGET_BYTES
            rows.append([
                f"iolens profile report {kind if kind != 'text' else ''}".strip(), len(xs), bl.median(walls),
                max(walls), bl.median(mibs), max(mibs), "yes" if ok else "NO",
            ])  # fmt: skip
    report.section(
        f"Wall time and peak RSS (target ≤ {TARGET_S:.0f} s and ≤ {TARGET_BYTES // 10**6} MB = "
        f"{TARGET_BYTES / bl.MIB:.0f} MiB; PyDarshan: 17.5 s, 589 MB)",
        bl.table(HEADERS, rows),
    )
    report.notes(
        "Wall time is the whole command: Python's start, importing iolens (numpy, rich), inflating and "
        "reading the log, merging, the figures and advice, and printing (to /dev/null).",
        "Runs alternate between the two forms; 'met' compares the medians with the targets.",
    )
    report.emit(args.out, args.quick)


if __name__ == "__main__":
    bl.main_wrapper(main)
