#!/usr/bin/env python3
"""An IO500 ior-easy-like run of iolens: ``-F -t 1m -b 1g -w -r -e --np 2`` (a file per rank, 1 MiB
transfers, fsync on close, then read back), on tmpfs (/dev/shm) and on disk (/var/tmp), buffered and with
``--posix.odirect``. The engine evicts the written files from the page cache before reading (where the file
system lets it; tmpfs has no separate cache), so the read notes say what the read figure is.

The four configurations alternate run by run; the table shows medians of write and read bandwidth (MiB/s,
bytes / open-to-close time as IOR reports) and of the per-transfer latency p50/p99/max. A configuration that
the engine refuses (O_DIRECT on a file system without it) is recorded with its error.

    python3 bench/ior_easy.py            # full run, writes bench/results/ior_easy.txt
    python3 bench/ior_easy.py --quick    # smoke test (-b 64m, one run)
"""

from __future__ import annotations

import argparse
import json
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import benchlib as bl

MODES = ("buffered", "odirect")


@dataclass
class Config:
    fs: str
    base: Path
    mode: str
    bws: dict[str, list[float]] = field(default_factory=lambda: {"write": [], "read": []})
    lat: dict[str, list[dict[str, int]]] = field(default_factory=lambda: {"write": [], "read": []})
    notes: set[str] = field(default_factory=set)
    failed: str | None = None

    @property
    def label(self) -> str:
        return f"{self.fs}/{self.mode}"


def one_run(engine: Path, cfg: Config, d: Path, block: str, rep: bl.Report) -> None:
    doc_path = d / "result.json"
    cmd = [
        str(engine),
        "ior",
        "-F",
        "-t",
        "1m",
        "-b",
        block,
        "-w",
        "-r",
        "-e",
        "--np",
        "2",
        "-o",
        str(d / "run" / "testfile"),
        "--json",
        str(doc_path),
        "--quiet",
    ]
    if cfg.mode == "odirect":
        cmd.append("--posix.odirect")
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
    for name in ("write", "read"):
        p = bl.phase(doc, name)
        cfg.bws[name].append(p["bw_bytes_per_s"] / bl.MIB)
        cfg.lat[name].append({k: int(p["latency_ns"][k]) for k in ("p50", "p99", "max")})
        cache = p.get("cache") or {}
        if name == "read":
            if cache.get("o_direct"):
                cfg.notes.add("read with O_DIRECT")
            else:
                cfg.notes.add(
                    f"read cache policy={cache.get('policy')} evicted={cache.get('evicted')}"
                    + (f": {cache['note']}" if cache.get("note") else "")
                )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    bl.common_args(ap)
    ap.add_argument("--block", default=None, help="-b per rank (default 1g; 64m with --quick)")
    ap.add_argument("--shm-dir", default="/dev/shm", help="tmpfs directory (default /dev/shm)")
    ap.add_argument("--disk-dir", default="/var/tmp", help="disk directory (default /var/tmp)")
    args = ap.parse_args()
    runs = args.runs or (1 if args.quick else 5)
    block = args.block or ("64m" if args.quick else "1g")
    engine = bl.find_engine(args.engine)
    bases = {"tmpfs": Path(args.shm_dir), "disk": Path(args.disk_dir)}
    configs = [Config(fs, base, mode) for fs, base in bases.items() for mode in MODES]

    rep = bl.Report("ior_easy", f"iolens ior-easy-like: -F -t 1m -b {block} -w -r -e --np 2")
    rep.header = bl.machine_lines(engine, list(bases.values())) + [
        f"setup:   -b {block} per rank{'' if block == '1g' else ' (smaller than ior-easy 1g)'}, 2 ranks, "
        f"{runs} runs per configuration, configurations alternated ({'quick' if args.quick else 'full'} run)",
        "metric:  MiB/s = bytes / open-to-close time of the phase (fsync on close included in the write);",
        "         latency = per-transfer, microseconds; every column is the median over the runs",
    ]

    with ExitStack() as stack:
        dirs: dict[str, Path] = {}
        for fs, base in bases.items():
            dirs[fs] = stack.enter_context(bl.scratch_dir(base, "ioreasy"))
            (dirs[fs] / "run").mkdir()
        for rnd, label in bl.alternating([c.label for c in configs], runs):
            cfg = next(c for c in configs if c.label == label)
            if cfg.failed:
                continue
            one_run(engine, cfg, dirs[cfg.fs], block, rep)
            if cfg.failed:
                bl.progress(f"round {rnd + 1}/{runs} {label}: FAILED {cfg.failed}")
            else:
                bl.progress(
                    f"round {rnd + 1}/{runs} {label}: write {cfg.bws['write'][-1]:.0f} MiB/s, "
                    f"read {cfg.bws['read'][-1]:.0f} MiB/s"
                )

    rows: list[list[object]] = []
    for c in configs:
        if c.failed and not c.bws["write"]:
            rows.append([c.fs, c.mode, "-", "failed", "", "", "", "", ""])
            continue
        for name in ("write", "read"):
            bw = c.bws[name]
            lat = c.lat[name]
            rows.append(
                [
                    c.fs,
                    c.mode,
                    name,
                    bl.median(bw),
                    bl.spread(bw),
                    len(bw),
                    bl.median([x["p50"] / 1e3 for x in lat]),
                    bl.median([x["p99"] / 1e3 for x in lat]),
                    bl.median([x["max"] / 1e3 for x in lat]),
                ]
            )
    rep.section("Medians")
    rep.add(bl.table(["fs", "mode", "phase", "MiB/s", "range", "runs", "p50 us", "p99 us", "max us"], rows))
    notes = []
    for c in configs:
        if c.failed:
            notes.append(f"{c.label}: the engine refused or failed: {c.failed}")
        notes += [f"{c.label}: {n}" for n in sorted(c.notes)]
    rep.notes(*notes)
    rep.emit(args.out, args.quick)
    return 0


if __name__ == "__main__":
    bl.main_wrapper(main)
