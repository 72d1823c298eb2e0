#!/usr/bin/env python3
"""IO500-like metadata runs of iolens mdtest, two ranks, on tmpfs (/dev/shm) and on disk (/var/tmp):

- mdtest-easy-like: ``-n 20000 -u -F -N 1`` (empty files, a directory per rank, stat/read/remove of the
  neighbour rank's files);
- mdtest-hard-like: ``-n 10000 -t -w 3901 -e 3901 -N 1 -F`` (files of 3901 bytes, all ranks in one shared
  directory, the tree's creation and removal timed inside the create and remove phases).

Neither has IO500's stonewall (-W): each run does all its items. The four configurations alternate run by
run (5 runs each by default); the table shows, for every phase the engine reports, medians over the runs of
mdtest's rate (``rate_per_s``, items / barrier-to-barrier time), IO500's (``io500_rate_per_s``, items /
first start to last end) and of the per-item latency p50/p99. A configuration the engine fails is recorded
with its error and the others go on.

    python3 bench/mdtest_easy_hard.py --engine /tmp/mdbench-build/iolens-bench   # full run, writes
                                                                    # bench/results/mdtest_easy_hard.txt
    python3 bench/mdtest_easy_hard.py --quick    # smoke test (-n 2000 / 1000, one run)
"""

from __future__ import annotations

import argparse
import json
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import benchlib as bl

# workload -> (items per rank for a full run, for --quick, the other flags)
WORKLOADS: dict[str, tuple[int, int, list[str]]] = {
    "easy": (20000, 2000, ["-u", "-F", "-N", "1"]),
    "hard": (10000, 1000, ["-t", "-w", "3901", "-e", "3901", "-N", "1", "-F"]),
}
NP = 2


@dataclass
class PhaseSample:
    items: int
    rate: float
    io500: float
    p50_ns: int
    p99_ns: int


@dataclass
class Config:
    fs: str
    workload: str
    n: int
    samples: list[dict[str, PhaseSample]] = field(default_factory=list)
    phase_order: list[str] = field(default_factory=list)
    failed: str | None = None

    @property
    def label(self) -> str:
        return f"{self.fs}/{self.workload}"

    def flags(self) -> list[str]:
        return ["-n", str(self.n), *WORKLOADS[self.workload][2]]


def one_run(engine: Path, cfg: Config, d: Path, rep: bl.Report) -> None:
    doc_path = d / f"{cfg.workload}.json"
    cmd = [
        str(engine),
        "mdtest",
        *cfg.flags(),
        "-d",
        str(d / cfg.workload),
        "--np",
        str(NP),
        "--json",
        str(doc_path),
        "--quiet",
    ]
    rep.command(cmd)
    r = bl.run(cmd)
    doc: dict[str, Any] | None = None
    if doc_path.exists():
        try:
            doc = json.loads(doc_path.read_text())
        except ValueError:
            doc = None
        doc_path.unlink()
    if not r.ok or doc is None or doc.get("status") != "ok":
        why = (doc or {}).get("error") or {}
        msg = why.get("message") if isinstance(why, dict) else None
        cfg.failed = f"{msg or r.describe_failure()} (exit status {r.returncode})"
        return
    if (d / cfg.workload).exists():
        cfg.failed = f"the run left {d / cfg.workload} behind"
        return
    s: dict[str, PhaseSample] = {}
    for p in doc["phases"]:
        if p["iteration"] != 0:
            continue
        lat = p["latency_ns"]
        s[p["name"]] = PhaseSample(
            int(p["items"]),
            float(p["rate_per_s"]),
            float(p["io500_rate_per_s"]),
            int(lat["p50"]),
            int(lat["p99"]),
        )
        if p["name"] not in cfg.phase_order:
            cfg.phase_order.append(p["name"])
    cfg.samples.append(s)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    bl.common_args(ap)
    ap.add_argument("--shm-dir", default="/dev/shm", help="tmpfs directory (default /dev/shm)")
    ap.add_argument("--disk-dir", default="/var/tmp", help="disk directory (default /var/tmp)")
    args = ap.parse_args()
    runs = args.runs or (1 if args.quick else 5)
    engine = bl.find_engine(args.engine)
    bases = {"tmpfs": Path(args.shm_dir), "disk": Path(args.disk_dir)}
    configs = [
        Config(fs, wl, quick_n if args.quick else full_n)
        for fs in bases
        for wl, (full_n, quick_n, _) in WORKLOADS.items()
    ]

    rep = bl.Report("mdtest_easy_hard", f"iolens mdtest-easy-like and mdtest-hard-like runs (np={NP})")
    rep.header = bl.machine_lines(engine, list(bases.values())) + [
        "setup:   "
        + "; ".join(f"{c.workload}: {' '.join(c.flags())}" for c in configs[: len(WORKLOADS)])
        + f"; --np {NP}, no stonewall;",
        f"         {runs} runs per configuration, configurations alternated "
        f"({'quick' if args.quick else 'full'} run)",
        "metric:  ops/s: 'rate' = rate_per_s (items / barrier-to-barrier time, mdtest's), 'io500' = "
        "io500_rate_per_s;",
        "         latency = per item (create: open+write+close; read: open+read+close), microseconds; "
        "every column is the median over the runs",
    ]

    with ExitStack() as stack:
        dirs = {fs: stack.enter_context(bl.scratch_dir(base, "mdeasyhard")) for fs, base in bases.items()}
        for rnd, label in bl.alternating([c.label for c in configs], runs):
            cfg = next(c for c in configs if c.label == label)
            if cfg.failed:
                continue
            one_run(engine, cfg, dirs[cfg.fs], rep)
            if cfg.failed:
                bl.progress(f"round {rnd + 1}/{runs} {label}: FAILED {cfg.failed}")
            else:
                s = cfg.samples[-1]
                bl.progress(
                    f"round {rnd + 1}/{runs} {label}: "
                    + ", ".join(f"{ph} {s[ph].rate:.0f}/s" for ph in cfg.phase_order if ph.startswith("file"))
                )

    rows: list[list[object]] = []
    for c in configs:
        if not c.samples:
            rows.append([c.fs, c.workload, "failed", "", "", "", "", "", "", 0])
            continue
        for ph in c.phase_order:
            xs = [s[ph] for s in c.samples if ph in s]
            rate = [x.rate for x in xs]
            rows.append(
                [
                    c.fs,
                    c.workload,
                    ph,
                    xs[-1].items,
                    bl.median(rate),
                    bl.spread(rate),
                    bl.median([x.io500 for x in xs]),
                    bl.median([x.p50_ns / 1e3 for x in xs]),
                    bl.median([x.p99_ns / 1e3 for x in xs]),
                    len(xs),
                ]
            )
    rep.section("Medians (ops/s; latency in microseconds)")
    headers = ["fs", "workload", "phase", "items", "rate/s", "rate range", "io500/s", "p50 us", "p99 us"]
    headers.append("runs")
    rep.add(bl.table(headers, rows))
    notes = [
        "With -N 1 and two ranks, rank r stats and removes the files of rank r+1 (owner_shift 1 in the "
        "document); the read phase's shift is 2 mod 2 = 0, its own files, as in mdtest.",
        "easy times the tree (one directory per rank with -u) as separate tree-create/tree-remove phases; "
        "hard (-t) counts it inside file-create and file-remove, so it has no tree phases.",
        "On disk nothing is synced (no -y): the figures are those of the page cache and the ext4 journal, "
        "as on a local file system mdtest's are.",
    ]
    for c in configs:
        if c.failed:
            notes.append(
                f"{c.label}: the engine failed after {len(c.samples)} good run(s); the configuration was "
                f"dropped: {c.failed}"
            )
    rep.notes(*notes)
    rep.emit(args.out, args.quick)
    return 0


if __name__ == "__main__":
    bl.main_wrapper(main)
