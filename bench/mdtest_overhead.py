#!/usr/bin/env python3
"""Engine overhead on metadata: iolens mdtest against a plain C loop making the same system calls
(bench/md_plain_loop.c).

One rank, files only, N items in one directory (``iolens-bench mdtest -n N -F -d DIR --np 1``: all four file
phases, create, stat, read and remove, in one run), on tmpfs (/dev/shm) where the system calls are cheapest
and any per-item cost of the engine shows most. The loop does, with the same path names
(DIR/test-dir.0-0/mdtest_tree.0/file.mdtest.0.NUM): create = open(O_CREAT|O_WRONLY) [+ write] + close,
stat = stat, read = open(O_RDONLY) [+ read] + close, remove = unlink. Both are run without data (mdtest's
default, -w 0 -e 0) and with -w 3901 -e 3901 (IO500's mdtest-hard file size).

Rates are items / phase time: for iolens from its JSON, ``items / time_s`` (mdtest's rate, barrier to
barrier) and ``io500_rate_per_s``; for the loop, items / (first call to last call of the phase). The tools
alternate run by run (11 runs each by default, after one discarded warm-up of each); the table shows medians,
the ratio iolens / loop and the difference in nanoseconds per item, and the ratio of the best runs (the
least disturbed by the other users of the machine). When strace is installed, a short run of each under
``strace -c -f`` counts the system calls per item, to show that both make the same calls.

Target: iolens within 5% of the loop on every phase (ratio >= 0.95).

    python3 bench/mdtest_overhead.py --engine /tmp/mdbench-build/iolens-bench   # full run, writes
                                                               # bench/results/mdtest_overhead.txt
    python3 bench/mdtest_overhead.py --quick    # smoke test (-n 5000, one run)
"""

from __future__ import annotations

import argparse
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import benchlib as bl

PHASES = ("file-create", "file-stat", "file-read", "file-remove")
SIZES = ((0, 0), (3901, 3901))  # (-w, -e)
TARGET = 0.95
# Metadata rates on this kind of shared VM vary by +-30% run to run: more runs than the others.
RUNS = 11
# Both tools work in the same (new) directory in turn, so their path names are the same byte for byte.
RUN_DIR = "run"
STRACE_ITEMS = 10000
COUNTED_CALLS = ("openat", "newfstatat", "read", "pread64", "write", "pwrite64", "close", "unlink")


@dataclass
class Sample:
    rate: dict[str, float]  # items / s per phase: iolens items / time_s, the loop's items / its phase time
    io500: dict[str, float] = field(default_factory=dict)  # iolens only: io500_rate_per_s
    cpu_s: float = 0.0  # user + sys of the whole process


def size_label(w: int, e: int) -> str:
    return f"-w {w} -e {e}"


def run_iolens(engine: Path, d: Path, n: int, w: int, e: int, rep: bl.Report) -> Sample:
    cmd = [str(engine), "mdtest", "-n", str(n), "-F", "-d", str(d / RUN_DIR)]
    if w or e:
        cmd += ["-w", str(w), "-e", str(e)]
    cmd += ["--np", "1", "--json", str(d / "iolens.json"), "--quiet"]
    rep.command(cmd)
    r = bl.check(bl.run(cmd), "iolens mdtest")
    doc = bl.engine_doc(d / "iolens.json")
    s = Sample({}, {}, r.cpu_s)
    for name in PHASES:
        p = bl.phase(doc, name)
        if p["items"] != n:
            raise bl.BenchError(f"iolens {name} did {p['items']} items, expected {n}")
        s.rate[name] = p["items"] / p["time_s"]
        s.io500[name] = float(p["io500_rate_per_s"])
    return s


def run_loop(loop: Path, d: Path, n: int, w: int, e: int, rep: bl.Report) -> Sample:
    cmd = [str(loop), str(d / RUN_DIR), str(n), str(w), str(e)]
    rep.command(cmd)
    r = bl.check(bl.run(cmd), "md_plain_loop")
    j = json.loads(r.stdout)
    return Sample({name: n / j["phases"][name] for name in PHASES}, {}, r.cpu_s)


def check_clean(d: Path) -> None:
    """Both tools remove what they made; a leftover means one of them did not, and would skew the next run."""
    if (d / RUN_DIR).exists():
        shutil.rmtree(d / RUN_DIR, ignore_errors=True)
        raise bl.BenchError(f"{d / RUN_DIR} was left behind by a run")


def measure(
    engine: Path, loop: Path, d: Path, n: int, w: int, e: int, runs: int, warm_up: bool, rep: bl.Report
) -> dict[str, list[Sample]]:
    """runs alternating runs of each tool (after a discarded warm-up of each when warm_up)."""
    label = size_label(w, e)
    res: dict[str, list[Sample]] = {"iolens": [], "loop": []}
    if warm_up:
        run_iolens(engine, d, n, w, e, rep)
        run_loop(loop, d, n, w, e, rep)
        check_clean(d)
    for rnd, tool in bl.alternating(("iolens", "loop"), runs):
        s = run_iolens(engine, d, n, w, e, rep) if tool == "iolens" else run_loop(loop, d, n, w, e, rep)
        check_clean(d)
        res[tool].append(s)
        bl.progress(
            f"{label} round {rnd + 1}/{runs} {tool:6}: "
            + ", ".join(f"{ph.removeprefix('file-')} {s.rate[ph]:.0f}/s" for ph in PHASES)
        )
    return res


def strace_counts(cmd: list[str], out: Path) -> dict[str, int]:
    """Runs cmd under ``strace -c -f`` and returns the number of calls of each system call."""
    bl.check(bl.run(["strace", "-c", "-f", "-o", str(out), *cmd]), "strace")
    counts: dict[str, int] = {}
    for line in out.read_text().splitlines():
        f = line.split()
        # "% time  seconds  usecs/call  calls  [errors]  syscall"; the rule and the total line are skipped
        if len(f) >= 5 and f[3].isdigit() and f[-1] != "total":
            counts[f[-1]] = int(f[3])
    out.unlink()
    return counts


def syscall_rows(engine: Path, loop: Path, d: Path, w: int, e: int, rep: bl.Report) -> list[list[object]]:
    """System calls per item of a short run of each tool (all four phases, setup and teardown included)."""
    n = STRACE_ITEMS
    label = size_label(w, e)
    rows: list[list[object]] = []
    for tool in ("iolens", "loop"):
        if tool == "iolens":
            cmd = [str(engine), "mdtest", "-n", str(n), "-F", "-d", str(d / RUN_DIR)]
            cmd += (["-w", str(w), "-e", str(e)] if w or e else []) + ["--np", "1", "--quiet"]
        else:
            cmd = [str(loop), str(d / RUN_DIR), str(n), str(w), str(e)]
        rep.command(["strace", "-c", "-f", "-o", "FILE", *cmd])
        try:
            c = strace_counts(cmd, d / "strace.txt")
            check_clean(d)
        except bl.BenchError as err:
            bl.progress(f"strace {label} {tool}: FAILED {err}")
            rows.append([label, tool, "failed", *[""] * (len(COUNTED_CALLS) - 1)])
            continue
        rows.append([label, tool, *(f"{c.get(name, 0) / n:.3f}" for name in COUNTED_CALLS)])
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    bl.common_args(ap, default_runs=RUNS)
    ap.add_argument("-n", "--items", type=int, default=None, help="files (default 100000; 5000 with --quick)")
    ap.add_argument("--dir", default="/dev/shm", help="where the scratch directory goes (default /dev/shm)")
    args = ap.parse_args()
    runs = args.runs or (1 if args.quick else RUNS)
    n = args.items or (5000 if args.quick else 100000)
    engine = bl.find_engine(args.engine)
    base = Path(args.dir)

    rep = bl.Report("mdtest_overhead", "iolens mdtest vs a plain C loop of the same system calls (np=1, -F)")
    rep.header = bl.machine_lines(engine, [base]) + [
        f"setup:   {n} files in one directory, create/stat/read/remove; {runs} runs per tool and size, "
        f"tools alternated after a discarded warm-up ({'quick' if args.quick else 'full'} run)",
        "metric:  items/s = items / phase time; iolens 'rate' = items / time_s (mdtest's, barrier to "
        "barrier),",
        "         'io500' = io500_rate_per_s; ratio = iolens rate / loop of the medians; "
        "'+ns/item' = 1e9/iolens - 1e9/loop",
    ]

    rows: list[list[object]] = []
    verdicts: list[str] = []
    failures: list[str] = []
    with bl.scratch_dir(Path("/tmp"), "mdloopbin") as bindir, bl.scratch_dir(base, "mdoverhead") as d:
        loop = bl.build_c("md_plain_loop.c", bindir)
        for w, e in SIZES:
            label = size_label(w, e)
            try:
                res = measure(engine, loop, d, n, w, e, runs, not args.quick, rep)
            except bl.BenchError as err:
                # A size the engine fails is recorded and the other goes on; the failed run's files go.
                for sub in d.iterdir():
                    if sub.is_dir():
                        shutil.rmtree(sub, ignore_errors=True)
                    else:
                        sub.unlink()
                bl.progress(f"{label}: FAILED {err}")
                failures.append(f"{label}: not measured: {err}")
                rows.append([label, "failed", "", "", "", "", "", "", "", ""])
                continue
            for ph in PHASES:
                io = [s.rate[ph] for s in res["iolens"]]
                io5 = [s.io500[ph] for s in res["iolens"]]
                lp = [s.rate[ph] for s in res["loop"]]
                mio, mlp = bl.median(io), bl.median(lp)
                rt = bl.ratio(mio, mlp)
                rows.append(
                    [
                        label,
                        ph,
                        mio,
                        bl.median(io5),
                        mlp,
                        f"{rt:.3f}",
                        f"{1e9 / mio - 1e9 / mlp:+.0f}",
                        f"{bl.ratio(max(io), max(lp)):.3f}",
                        bl.spread(io),
                        bl.spread(lp),
                    ]
                )
                verdicts.append(f"{label:16} {ph:12}: {rt:.3f} {'ok' if rt >= TARGET else 'BELOW TARGET'}")
            cpu_io = bl.median([s.cpu_s for s in res["iolens"]])
            cpu_lp = bl.median([s.cpu_s for s in res["loop"]])
            rows.append(
                [label, "cpu s", cpu_io, "", cpu_lp, f"{bl.ratio(cpu_io, cpu_lp):.3f}", "", "", "", ""]
            )
        sys_rows: list[list[object]] = []
        if shutil.which("strace"):
            for w, e in SIZES:
                sys_rows += syscall_rows(engine, loop, d, w, e, rep)

    rep.section("Medians (items/s; 'cpu s' rows: user+sys seconds of the whole process, all four phases)")
    rep.add(
        bl.table(
            [
                "size",
                "phase",
                "iolens rate",
                "iolens io500",
                "loop",
                "iolens/loop",
                "+ns/item",
                "best ratio",
                "iolens range",
                "loop range",
            ],
            rows,
        )
    )
    rep.section(f"Target: iolens rate / loop >= {TARGET} on every phase")
    rep.add("\n".join(verdicts + failures))
    if sys_rows:
        rep.section(
            f"System calls per item (strace -c -f, -n {STRACE_ITEMS}, whole process, set-up included)"
        )
        rep.add(bl.table(["size", "tool", *COUNTED_CALLS], sys_rows))
    rep.notes(
        "iolens's time_s runs from the barrier that starts a phase to the one that ends it (one rank: no "
        "waiting); the loop's from its first call to its last. Per item iolens also reads the clock once "
        "(an item's end is the next one's start) and records the latency in a histogram.",
        "With -w, iolens moves its buffer's pattern stamps (one word per 512 bytes) to the item's place "
        "before each write (so a read can be checked) and checks the first 8 bytes of each read; the loop "
        "writes an unchanged buffer.",
        "Both work in turn in the same new directory, make it and its test-dir.0-0/mdtest_tree.0 "
        "untimed (iolens times the tree directory as its tree-create phase, not shown) and remove them at "
        "the end.",
    )
    rep.emit(args.out, args.quick)
    return 0


if __name__ == "__main__":
    bl.main_wrapper(main)
