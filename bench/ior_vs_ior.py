#!/usr/bin/env python3
"""The official IOR 4 against `iolens ior` on IOR's parallel-library backends, side by side, under mpirun.

    rows      -a MPIIO (independent), -a MPIIO -c (collective), -a HDF5 (independent), -a HDF5 -c;
              one shared file; np 2 and 4; tmpfs (/dev/shm) and disk (/var/tmp)
    command   mpirun -np N TOOL -a API [-c] -w -r -e -t 1m -b B -o DIR/file
              (B = 2 GiB / N on tmpfs, 1 GiB / N on disk: phases of 0.2-2 s, not the 30 ms reads of
              256 MiB, where a scheduler tick was a tenth of the figure)
              TOOL = the official ior (built by bench/build_ior.sh into a scratch folder, never committed)
                     or iolens-bench ior ... --comm mpi --keep-cache --json F
    metric    IOR's bandwidth (MiB/s: bytes / the phase's open-to-close time, what IOR's bw(MiB/s) and
              Max(MiB) columns show); medians of the runs; ratio = iolens / IOR (target >= 1.00), both as
              the ratio of the two medians and as the median of the run-by-run ratios of the pairs that
              ran side by side, with its 95% bootstrap interval and how many pairs iolens won

Both tools read what they just wrote, from the page cache: IOR does not drop it, so iolens is run with
--keep-cache (its default evicts the file before a buffered read, which would make it read the disk while
IOR reads memory). The data each tool moved is taken from its own output (IOR's summary xsizeMiB, iolens's
phase bytes) and recorded; a row whose two tools moved different bytes is not compared.

Tools alternate run by run (5 runs each by default; the order flipped every other round); every run's file
is removed before the next.

    python3 bench/ior_vs_ior.py --engine build/native/iolens-bench   # writes bench/results/ior_vs_ior.txt
    python3 bench/ior_vs_ior.py --quick                              # one run of each, tmpfs, np 2
    python3 bench/ior_vs_ior.py --ior /path/to/ior                   # an IOR already built
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
from pathlib import Path

import benchlib as bl

XFER = "1m"
TOTAL_MIB = {"tmpfs": 2048, "disk": 1024}
QUICK_MIB = 256
ROWS = (("MPIIO", False), ("MPIIO", True), ("HDF5", False), ("HDF5", True))


def allow_mpi_as_root() -> None:
    """The test machine runs as root on 2 cores: Open MPI needs to be told that both are fine."""
    os.environ.update(
        OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1"
    )


def build_ior() -> Path:
    script = bl.BENCH_DIR / "build_ior.sh"
    r = subprocess.run([str(script)], capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise bl.BenchError(f"bench/build_ior.sh failed:\n{r.stderr.strip()[-2000:]}")
    return Path(r.stdout.strip().splitlines()[-1]) / "ior"


def ior_args(api: str, coll: bool, np: int, path: Path, total_mib: int) -> list[str]:
    block = f"{total_mib // np}m"
    args = ["-a", api, "-w", "-r", "-e", "-t", XFER, "-b", block, "-o", str(path)]
    return args + (["-c"] if coll else [])


def run_ior(
    ior: Path, api: str, coll: bool, np: int, d: Path, total_mib: int, rep: bl.Report
) -> dict[str, float]:
    summary = d / "ior-summary.json"
    cmd = ["mpirun", "-np", str(np), str(ior), *ior_args(api, coll, np, d / "file", total_mib)]
    cmd += ["-O", "summaryFormat=JSON", "-O", f"summaryFile={summary}"]
    rep.command(cmd)
    bl.check(bl.run(cmd), f"ior {api}")
    doc = json.loads(summary.read_text())
    summary.unlink()
    out: dict[str, float] = {}
    for s in doc["summary"]:
        out[f"{s['operation']}_mib_s"] = float(s["bwMaxMIB"])
        out[f"{s['operation']}_bytes"] = float(s["xsizeMiB"]) * bl.MIB
    return out


def run_iolens(
    engine: Path, api: str, coll: bool, np: int, d: Path, total_mib: int, rep: bl.Report
) -> dict[str, float]:
    out_json = d / "iolens.json"
    cmd = ["mpirun", "-np", str(np), str(engine), "ior", *ior_args(api, coll, np, d / "file", total_mib)]
    cmd += ["--keep-cache", "--comm", "mpi", "--json", str(out_json), "--quiet"]
    rep.command(cmd)
    bl.check(bl.run(cmd), f"iolens {api}")
    doc = bl.engine_doc(out_json)
    out_json.unlink()
    out: dict[str, float] = {}
    for op in ("write", "read"):
        ph = bl.phase(doc, op)
        out[f"{op}_mib_s"] = float(ph["bw_bytes_per_s"]) / bl.MIB
        out[f"{op}_bytes"] = float(ph["bytes"])
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    bl.common_args(ap)
    ap.add_argument("--ior", help="the official ior executable (default: build it with bench/build_ior.sh)")
    args = ap.parse_args()
    runs = args.runs or (1 if args.quick else 5)
    engine = bl.find_engine(args.engine)
    allow_mpi_as_root()
    ior = Path(args.ior) if args.ior else build_ior()
    if not os.access(ior, os.X_OK):
        raise bl.BenchError(f"--ior {ior}: not an executable file")
    if shutil.which("mpirun") is None:
        raise bl.BenchError("mpirun not found (Debian: openmpi-bin)")
    places = {"tmpfs": Path("/dev/shm"), "disk": Path("/var/tmp")}
    if args.quick:
        places = {"tmpfs": places["tmpfs"]}
    nps = (2,) if args.quick else (2, 4)
    total = {p: QUICK_MIB if args.quick else TOTAL_MIB[p] for p in places}
    sizes = ", ".join(f"{total[p]} MiB on {p}" for p in places)

    rep = bl.Report("ior_vs_ior", "The official IOR 4 vs iolens ior: MPIIO and HDF5, one shared file, mpirun")
    rep.header = bl.machine_lines(engine, list(places.values())) + [
        f"peer:    {ior} (IOR {os.environ.get('IOR_TAG', '4.0.0')}, bench/build_ior.sh)",
        f"setup:   -t {XFER}, {sizes} per file (-b = that / np), -w -r -e, one shared file; "
        f"{runs} runs per tool and row, alternated ({'quick' if args.quick else 'full'} run)",
        "metric:  MiB/s as IOR computes it (bytes / open-to-close time); medians; ratio = iolens / IOR",
    ]
    rows: list[list[object]] = []
    verdicts: dict[str, int] = {"above": 0, "parity": 0, "below": 0}
    for place, base in places.items():
        for np in nps:
            for api, coll in ROWS:
                label = f"{api}{' -c' if coll else ''}"
                res: dict[str, list[dict[str, float]]] = {"ior": [], "iolens": []}
                with bl.scratch_dir(base, "ior-vs-ior") as d:
                    for rnd, tool in bl.alternating(("ior", "iolens"), runs):
                        if tool == "ior":
                            v = run_ior(ior, api, coll, np, d, total[place], rep)
                        else:
                            v = run_iolens(engine, api, coll, np, d, total[place], rep)
                        for f in d.iterdir():
                            f.unlink()
                        res[tool].append(v)
                        bl.progress(
                            f"{place} np={np} {label:9} round {rnd + 1}/{runs} {tool:6}: "
                            f"write {v['write_mib_s']:.0f} read {v['read_mib_s']:.0f} MiB/s"
                        )
                for op in ("write", "read"):
                    moved = {t: {r[f"{op}_bytes"] for r in res[t]} for t in res}
                    same = moved["ior"] == moved["iolens"] and len(moved["ior"]) == 1
                    xi = [r[f"{op}_mib_s"] for r in res["iolens"]]
                    xp = [r[f"{op}_mib_s"] for r in res["ior"]]
                    mi, mp = bl.median(xi), bl.median(xp)
                    pr = bl.paired_ratios(xi, xp)
                    lo, hi = bl.bootstrap_ci(pr)
                    won = sum(1 for x in pr if x >= 1.0)
                    verdict = "above" if lo >= 1.0 else "below" if hi < 1.0 else "parity"
                    if len(pr) < 2:
                        verdict = "-"
                    elif same:
                        verdicts[verdict] += 1
                    rows.append(
                        [
                            place,
                            np,
                            label,
                            op,
                            f"{min(moved['ior']) / bl.MIB:.0f}",
                            f"{min(moved['iolens']) / bl.MIB:.0f}",
                            f"{mp:.1f}",
                            bl.spread([r[f"{op}_mib_s"] for r in res["ior"]]),
                            f"{mi:.1f}",
                            bl.spread([r[f"{op}_mib_s"] for r in res["iolens"]]),
                            f"{bl.ratio(mi, mp):.2f}" if same else "not compared (bytes differ)",
                            f"{bl.median(pr):.3f}" if same else "-",
                            f"{lo:.2f}–{hi:.2f}" if same and len(pr) > 1 else "-",
                            f"{won}/{len(pr)}",
                            verdict if same else "-",
                        ]
                    )
    rep.section("Medians")
    rep.add(
        bl.table(
            [
                "fs",
                "np",
                "api",
                "phase",
                "IOR MiB moved",
                "iolens MiB moved",
                "IOR MiB/s",
                "IOR range",
                "iolens MiB/s",
                "iolens range",
                "iolens/IOR",
                "paired",
                "95% interval",
                "iolens won",
                "verdict",
            ],  # fmt: skip
            rows,
        )
    )
    rep.notes(
        f"verdicts: {verdicts['above']} rows above 1.00 (all of the paired ratio's 95% interval is >= 1), "
        f"{verdicts['parity']} at parity (the interval holds 1.00: the gap is within the machine's noise), "
        f"{verdicts['below']} below (the whole interval is < 1).",
        "IOR: the official IOR 4.0.0 built from its public source by bench/build_ior.sh (mpicc, Debian's "
        "Open MPI and libhdf5-openmpi-dev), outside this repository; its bandwidth is the summary's Max(MiB) "
        "of the one repetition.",
        "iolens reads with --keep-cache so that both tools read the data they wrote from the page cache (IOR "
        "never drops it); on disk rows the write includes -e's fsync in both tools.",
    )
    rep.emit(args.out, args.quick)
    return 0


if __name__ == "__main__":
    bl.main_wrapper(main)
