#!/usr/bin/env python3
"""Framework cost per I/O: CPU time per transfer on a backend that does no I/O.

iolens ``-a null`` (a write phase of 4 KiB transfers; the engine records every transfer in its latency
histogram) against fio's ``null`` engine with its default timing, and fio again with ``--gtod_reduce=1``.
CPU is user+sys of the child process tree from wait4's rusage, divided by the number of I/Os. With tens of
millions of I/Os, process start-up is well under 1% (the start-up rows below show its size).

Target: iolens <= 0.20 us of CPU per I/O.

    python3 bench/framework_cost.py            # full run, writes bench/results/framework_cost.txt
    python3 bench/framework_cost.py --quick    # smoke test
"""

from __future__ import annotations

import argparse
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import benchlib as bl

BS = 4096
TARGET_US = 0.20


@dataclass
class Sample:
    cpu_s: float
    wall_s: float
    ios: int
    loop_s: float | None = None  # the engine's own transfer time (iolens: times.xfer_s)

    @property
    def cpu_ns_per_io(self) -> float:
        return self.cpu_s / self.ios * 1e9

    @property
    def wall_ns_per_io(self) -> float:
        return self.wall_s / self.ios * 1e9


def iolens_cmd(engine: Path, d: Path, ios: int) -> list[str]:
    return [
        str(engine),
        "ior",
        "-a",
        "null",
        "-t",
        "4k",
        "-b",
        str(ios * BS),
        "-w",
        "-o",
        str(d / "nullfile"),
        "--json",
        str(d / "iolens.json"),
        "--quiet",
    ]


def fio_cmd(d: Path, ios: int, reduced: bool) -> list[str]:
    cmd = [
        "fio",
        "--name=n",
        "--ioengine=null",
        "--rw=write",
        "--bs=4k",
        f"--size={ios * BS}",
        "--output-format=json",
        f"--output={d / 'fio.json'}",
    ]
    if reduced:
        cmd.append("--gtod_reduce=1")
    return cmd


def run_iolens(engine: Path, d: Path, ios: int, rep: bl.Report) -> Sample:
    cmd = iolens_cmd(engine, d, ios)
    rep.command(cmd)
    r = bl.check(bl.run(cmd, cwd=d), "iolens")
    p = bl.phase(bl.engine_doc(d / "iolens.json"), "write")
    if p["ops"] != ios or p["bytes"] != ios * BS:
        raise bl.BenchError(f"iolens did {p['ops']} I/Os of {p['bytes']} bytes, expected {ios} of {ios * BS}")
    return Sample(r.cpu_s, r.wall_s, ios, float(p["times"]["xfer_s"]))


def run_fio(d: Path, ios: int, reduced: bool, rep: bl.Report) -> Sample:
    cmd = fio_cmd(d, ios, reduced)
    rep.command(cmd)
    r = bl.check(bl.run(cmd, cwd=d), "fio")
    try:
        doc = json.loads((d / "fio.json").read_text())
        done = int(doc["jobs"][0]["write"]["total_ios"])
    except (OSError, ValueError, KeyError, IndexError) as e:
        raise bl.BenchError(f"fio output: {e}") from e
    if done != ios:
        raise bl.BenchError(f"fio did {done} I/Os, expected {ios}")
    return Sample(r.cpu_s, r.wall_s, ios)


TOOLS = ("iolens", "fio", "fio-gtod_reduce")


def measure(tool: str, engine: Path, d: Path, ios: int, rep: bl.Report) -> Sample:
    if tool == "iolens":
        return run_iolens(engine, d, ios, rep)
    return run_fio(d, ios, tool == "fio-gtod_reduce", rep)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    bl.common_args(ap)
    ap.add_argument("--ios", type=int, default=None, help="I/Os per run (default 64M; 1M with --quick)")
    args = ap.parse_args()
    runs = args.runs or (1 if args.quick else 5)
    ios = args.ios or ((1 << 20) if args.quick else 64 << 20)
    engine = bl.find_engine(args.engine)
    if shutil.which("fio") is None:
        raise bl.BenchError("fio not found (Debian: apt-get install fio)")
    fio_version = bl.run(["fio", "--version"]).stdout.strip()

    rep = bl.Report("framework_cost", "iolens framework cost per I/O (null backends)")
    rep.header = bl.machine_lines(engine) + [
        f"fio:     {fio_version}",
        f"setup:   {ios} writes of {BS} bytes per run, {runs} runs per tool, tools alternated "
        f"({'quick' if args.quick else 'full'} run)",
        "metric:  CPU = user+sys of the child and its children (wait4 rusage) / I/Os; "
        "wall = process wall time / I/Os",
    ]

    samples: dict[str, list[Sample]] = {t: [] for t in TOOLS}
    startup: dict[str, Sample] = {}
    with bl.scratch_dir(Path("/tmp"), "fwcost") as d:
        # Start-up cost: the same command with 1024 I/Os, to show it is negligible beside the real runs.
        for tool in TOOLS:
            startup[tool] = measure(tool, engine, d, 1024, bl.Report("x", "x"))
        if not args.quick:  # one discarded warm-up of each (page cache of the binaries, CPU clocks)
            for tool in TOOLS:
                measure(tool, engine, d, ios // 8, bl.Report("x", "x"))
        for rnd, tool in bl.alternating(TOOLS, runs):
            s = measure(tool, engine, d, ios, rep)
            samples[tool].append(s)
            bl.progress(
                f"round {rnd + 1}/{runs} {tool}: {s.cpu_ns_per_io:.1f} ns CPU/IO, "
                f"{s.wall_ns_per_io:.1f} ns wall/IO"
            )

    med = {t: bl.median([s.cpu_ns_per_io for s in samples[t]]) for t in TOOLS}
    rows = []
    net_med: dict[str, float] = {}
    for t in TOOLS:
        cpu = [s.cpu_ns_per_io for s in samples[t]]
        wall = [s.wall_ns_per_io for s in samples[t]]
        net = [(s.cpu_s - startup[t].cpu_s) / (s.ios - startup[t].ios) * 1e9 for s in samples[t]]
        net_med[t] = bl.median(net)
        rows.append(
            [
                t,
                bl.median(cpu),
                bl.spread(cpu),
                net_med[t],
                bl.median(wall),
                startup[t].cpu_s * 1e3,
                startup[t].cpu_s / (ios * med[t] * 1e-9) * 100,
            ]
        )
    rep.section("Medians (ns per I/O)")
    rep.add(
        bl.table(
            [
                "tool",
                "CPU ns/IO",
                "CPU range",
                "net of start-up",
                "wall ns/IO",
                "start-up CPU ms",
                "start-up % of run",
            ],
            rows,
        )
    )
    rep.add("(net of start-up: (CPU - CPU of the same command with 1024 I/Os) / (I/Os - 1024))")
    loop = [s.loop_s / s.ios * 1e9 for s in samples["iolens"] if s.loop_s is not None]
    rep.add(f"\niolens in-loop time per I/O (JSON times.xfer_s / ops): median {bl.median(loop):.1f} ns")

    rep.section("Ratios and target")
    r_fio = bl.ratio(med["iolens"], med["fio"])
    r_red = bl.ratio(med["iolens"], med["fio-gtod_reduce"])
    verdict = "met" if med["iolens"] / 1000 <= TARGET_US else "NOT met"
    rep.add(
        f"iolens / fio                 = {r_fio:.2f}\n"
        f"iolens / fio --gtod_reduce=1 = {r_red:.2f}\n"
        f"net of start-up: iolens / fio = {bl.ratio(net_med['iolens'], net_med['fio']):.2f}, "
        f"iolens / fio --gtod_reduce=1 = {bl.ratio(net_med['iolens'], net_med['fio-gtod_reduce']):.2f}\n"
        f"iolens CPU per I/O = {med['iolens'] / 1000:.3f} us; target <= {TARGET_US:.2f} us: {verdict}"
    )
    rep.notes(
        "The iolens null backend reads the clock once per submit call, at completion; each I/O's latency "
        "is the time since the previous completion (ior stamps its requests with it), a real latency "
        "recorded into the histogram, for one clock reading per I/O. fio's default null run reads the "
        "clock several times per I/O (slat/clat/lat); --gtod_reduce=1 drops nearly all of those.",
        "iolens -w stamps its data pattern into the buffer before each write (one word per 512 bytes): that "
        "work is part of its figure; fio's null engine writes an unchanged buffer.",
    )
    rep.emit(args.out, args.quick)
    return 0


if __name__ == "__main__":
    bl.main_wrapper(main)
