#!/usr/bin/env python3
"""IO500's two "hard" write phases: iolens against the least code that does the same writes
(bench/hard_plain.c), side by side, on tmpfs with two processes and a 5 s stonewall with wear-out.

    ior-hard-write     iolens-bench ior -C -Q 1 -g -G S -k -e -o D/ior-hard/file -t 47008 -b 47008 -s N -w
                       -D 5 -a POSIX -O stoneWallingWearOut=1 --np 2   (the command `iolens io500` runs)
                       vs hard_plain ior-hard D/ior-hard/file 2 5: the same 47008-byte pwrites at the same
                       offsets of one shared file, fsync and close at the end
    mdtest-hard-write  iolens-bench mdtest -n 1000000 -t -w 3901 -e 3901 -P -G S -N 1 -F -d D/mdtest-hard
                       -C -Y -W 5 -a POSIX --np 2
                       vs hard_plain mdtest-hard D/mdtest-hard 2 5: create + 3901-byte write + close of new
                       files in one shared directory, then sync

Figures are IO500's: GiB/s (bytes / time, wear-out included) and kIOPS (items / time). Each workload is
measured in two memory states: "clean" (nothing else on the tmpfs) and "after easy" (first a 4 GiB
ior-easy-like write and a 1,700,000-file mdtest-easy-like create are made and kept, as the suite has them
when its hard phases run: `iolens io500` with config-quick.ini makes about that many here in its 5 s).
Tools alternate run by run (5 runs each by default; the order flipped every other round); every run's files
are removed before the next.

The question it answers: the IO500 reference (../shared/data/io500/result.txt) has ior-hard-write 0.554 GiB/s
and mdtest-hard-write 102.2 kIOPS, and `iolens io500` on this machine gets 10-20% less in the suite; is that
the engine, or what the machine gives any program doing these writes?

    python3 bench/io500_hard.py --engine build/native/iolens-bench   # writes bench/results/io500_hard.txt
    python3 bench/io500_hard.py --quick                              # 1 s stonewall, one run, clean only
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import benchlib as bl

NP = 2
REFERENCE = {"ior-hard-write": 0.554106, "mdtest-hard-write": 102.175323}  # result.txt of the app
WORKLOADS = ("ior-hard-write", "mdtest-hard-write")


def iolens_cmd(engine: Path, workload: str, d: Path, seconds: int, json_out: Path) -> list[str]:
    if workload == "ior-hard-write":
        cmd = [str(engine), "ior", "-C", "-Q", "1", "-g", "-G", "1837313549", "-k", "-e"]
        cmd += ["-o", str(d / "file"), "-t", "47008", "-b", "47008", "-s", "1447985", "-w"]
        cmd += ["-D", str(seconds), "-a", "POSIX", "-O", "stoneWallingWearOut=1"]
    else:
        cmd = [str(engine), "mdtest", "-n", "1000000", "-t", "-w", "3901", "-e", "3901", "-P"]
        cmd += ["-G", "2723491343", "-N", "1", "-F", "-d", str(d), "-C", "-Y"]
        cmd += ["-W", str(seconds), "-a", "POSIX"]
    return cmd + ["--np", str(NP), "--json", str(json_out), "--quiet"]


def run_iolens(engine: Path, workload: str, d: Path, seconds: int, rep: bl.Report) -> float:
    out = d.parent / "iolens.json"
    cmd = iolens_cmd(engine, workload, d, seconds, out)
    rep.command(cmd)
    bl.check(bl.run(cmd), f"iolens {workload}")
    doc = bl.engine_doc(out)
    out.unlink()
    if workload == "ior-hard-write":
        return float(bl.phase(doc, "write")["bw_bytes_per_s"]) / bl.GIB
    return float(bl.phase(doc, "file-create")["io500_rate_per_s"]) / 1000


def run_plain(exe: Path, workload: str, d: Path, seconds: int, rep: bl.Report) -> float:
    d.mkdir()
    if workload == "ior-hard-write":
        cmd = [str(exe), "ior-hard", str(d / "file"), str(NP), str(seconds)]
    else:
        cmd = [str(exe), "mdtest-hard", str(d), str(NP), str(seconds)]
    rep.command(cmd)
    r = bl.check(bl.run(cmd), f"hard_plain {workload}")
    j = json.loads(r.stdout)
    if workload == "ior-hard-write":
        return j["bytes"] / j["seconds"] / bl.GIB
    return j["items"] / j["seconds"] / 1000


def make_easy_state(engine: Path, state: Path, rep: bl.Report) -> None:
    """What the suite has on the file system when its hard phases run: ior-easy's files (4 GiB) and
    mdtest-easy's (1,700,000 empty files, a directory per rank), kept until the end."""
    ior = [str(engine), "ior", "-F", "-t", "1m", "-b", "2g", "-w", "-k", "-o", str(state / "ior-easy" / "f")]
    md = [str(engine), "mdtest", "-n", "850000", "-u", "-F", "-C", "-d", str(state / "mdtest-easy")]
    (state / "ior-easy").mkdir(parents=True)
    for cmd in (ior, md):
        cmd += ["--np", str(NP), "--quiet"]
        rep.command(cmd)
        bl.check(bl.run(cmd), "making the easy phases' files")


def measure(
    engine: Path, exe: Path, work: Path, workload: str, seconds: int, runs: int, rep: bl.Report, label: str
) -> dict[str, list[float]]:
    res: dict[str, list[float]] = {"iolens": [], "plain": []}
    for rnd, tool in bl.alternating(("iolens", "plain"), runs):
        d = work / workload
        if tool == "iolens":
            (d if workload == "ior-hard-write" else work).mkdir(parents=True, exist_ok=True)
            v = run_iolens(engine, workload, d, seconds, rep)
        else:
            v = run_plain(exe, workload, d, seconds, rep)
        shutil.rmtree(d)
        res[tool].append(v)
        unit = "GiB/s" if workload == "ior-hard-write" else "kIOPS"
        bl.progress(f"{label} {workload} round {rnd + 1}/{runs} {tool:6}: {v:.3f} {unit}")
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    bl.common_args(ap)
    ap.add_argument("--dir", default="/dev/shm", help="where the scratch directory goes (default /dev/shm)")
    args = ap.parse_args()
    runs = args.runs or (1 if args.quick else 5)
    seconds = 1 if args.quick else 5
    states = ("clean",) if args.quick else ("clean", "after easy")
    engine = bl.find_engine(args.engine)
    base = Path(args.dir)

    rep = bl.Report("io500_hard", "IO500's hard write phases: iolens vs a plain C program (np=2, tmpfs)")
    rep.header = bl.machine_lines(engine, [base]) + [
        f"setup:   {NP} processes, stonewall {seconds} s with wear-out; {runs} runs per tool, workload and "
        f"memory state, alternated ({'quick' if args.quick else 'full'} run)",
        "metric:  IO500's figures: GiB/s = bytes / time (wear-out included), kIOPS = items / time; medians; "
        "ratio = iolens / plain",
    ]
    rows: list[list[object]] = []
    with bl.scratch_dir(Path("/tmp"), "hardbin") as bindir, bl.scratch_dir(base, "io500-hard") as d:
        exe = bl.build_c("hard_plain.c", bindir)
        for state in states:
            if state == "after easy":
                make_easy_state(engine, d / "state", rep)
            work = d / "work"
            for workload in WORKLOADS:
                res = measure(engine, exe, work, workload, seconds, runs, rep, state)
                mi, mp = bl.median(res["iolens"]), bl.median(res["plain"])
                unit = "GiB/s" if workload == "ior-hard-write" else "kIOPS"
                rows.append(
                    [
                        state,
                        workload,
                        unit,
                        f"{mi:.3f}",
                        bl.spread(res["iolens"]),
                        f"{mp:.3f}",
                        bl.spread(res["plain"]),
                        f"{bl.ratio(mi, mp):.3f}",
                        f"{REFERENCE[workload]:.3f}",
                        f"{bl.ratio(mi, REFERENCE[workload]):.2f}",
                        f"{bl.ratio(mp, REFERENCE[workload]):.2f}",
                    ]
                )
    rep.section("Medians")
    rep.add(
        bl.table(
            [
                "state",
                "phase",
                "unit",
                "iolens",
                "iolens range",
                "plain",
                "plain range",
                "iolens/plain",
                "IO500 ref",
                "iolens/ref",
                "plain/ref",
            ],  # fmt: skip
            rows,
        )
    )
    rep.notes(
        "plain is bench/hard_plain.c (gcc -O2): forked processes started together, the same writes as the "
        "phase (47008-byte pwrites at IOR's offsets in one shared file, then fsync and close; or create + "
        "3901-byte write + close of new files in one shared directory, then sync), one clock reading per "
        "operation for the deadline, wear-out to the largest count; its time runs from the common start to "
        "the last close (or the sync), which leaves out the open that iolens's ior time includes.",
        "IO500 ref: the app's result.txt for config-quick.ini (2 MPI ranks on tmpfs, 2 cores, 2026-11-22); "
        "ratios against it compare with another day's machine state, the iolens/plain column does not.",
    )
    rep.emit(args.out, args.quick)
    return 0


if __name__ == "__main__":
    bl.main_wrapper(main)
