"""python3 bench/fidelity [options]: runs the cases, prints the table, writes bench/results/fidelity.txt
(and .json) for a full run."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

import benchlib as bl

from . import cases as cs
from . import devwork as dw
from . import measure as ms
from . import rule
from .tools import MIB, fio_version

FS_BASES = {"disk": "/var/tmp", "tmpfs": "/dev/shm"}


def find_iolens(explicit: str | None) -> list[str]:
    if explicit:
        return [explicit]
    venv = bl.REPO_DIR / ".venv" / "bin" / "iolens"
    if os.access(venv, os.X_OK):
        return [str(venv)]
    found = shutil.which("iolens")
    if found:
        return [found]
    raise bl.BenchError("iolens not found: make install (the worktree's .venv), or --iolens PATH")


def find_ior(explicit: str | None) -> Path | None:
    """The official IOR's bin directory: --ior-bin, else what bench/build_ior.sh prints (it builds IOR into
    its scratch folder when it is not there yet); None when that fails (the IOR lines are then skipped)."""
    if explicit:
        return Path(explicit)
    r = subprocess.run([str(bl.BENCH_DIR / "build_ior.sh")], capture_output=True, text=True, check=False)
    if r.returncode != 0 or not r.stdout.strip():
        bl.progress(f"bench/build_ior.sh failed, IOR/mdtest lines skipped: {r.stderr.strip()[-300:]}")
        return None
    return Path(r.stdout.strip().splitlines()[-1])


def mpi_env() -> dict[str, str]:
    """This machine runs as root on 2 cores: Open MPI must be told that both are fine (a bench setting)."""
    env = dict(os.environ)
    env.update(
        OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1"
    )
    return env


def dev_cell(d: dw.DevWork) -> str:
    return f"{d.read_ios}/{d.read_sectors} {d.write_ios}/{d.write_sectors} {d.flushes}"


def cache_cell(samples: list[ms.Sample]) -> str:
    """Median resident share of the case's files before and after a run (what was in the page cache)."""
    if not samples:
        return "-"

    def pct(t: tuple[int, int]) -> float:
        return 100.0 * t[0] / t[1] if t[1] else 0.0

    b = bl.median([pct(s.cache_before) for s in samples])
    a = bl.median([pct(s.cache_after) for s in samples])
    return f"{b:.0f}%>{a:.0f}%"


def rate_cell(samples: list[ms.Sample], kind: str) -> str:
    """Medians: MiB/s (IOR: write/read), items/s for mdtest."""
    if not samples:
        return "-"
    if kind == "ior":
        return "/".join(f"{bl.median([s.reported.rates.get(p, 0.0) for s in samples]) / MIB:.0f}"
                        for p in ("write", "read"))  # fmt: skip
    r = bl.median([s.reported.rate for s in samples])
    return f"{r:.0f}/s" if kind == "mdtest" else f"{r / MIB:.1f}"


def main() -> int:
    ap = argparse.ArgumentParser(prog="bench/fidelity", description=__doc__)
    bl.common_args(ap)
    ap.add_argument("--cases", default="*", help="comma-separated globs of case ids (default all)")
    ap.add_argument("--fs", default="disk,tmpfs", help="disk, tmpfs or both (default both)")
    ap.add_argument("--iolens", default=None, help="the iolens command (default .venv/bin/iolens, then PATH)")
    ap.add_argument(
        "--ior-bin", default=None, help="the official IOR's bin dir (default: bench/build_ior.sh)"
    )
    ap.add_argument("--disk-dir", default=FS_BASES["disk"])
    ap.add_argument("--shm-dir", default=FS_BASES["tmpfs"])
    ap.add_argument("--json", default=None, help="also write the results as JSON here (a full run: .json)")
    ap.add_argument("--no-ior", action="store_true", help="fio cases only")
    ap.add_argument(
        "--extra-runs",
        type=int,
        default=3,
        help="rounds added to a case while the device work disagrees (default 3): the disk is shared",
    )
    ap.add_argument("--tmpfs-scale", type=int, default=8, help="fio sizes times this on tmpfs (default 8)")
    ap.add_argument("--list-cases", action="store_true")
    args = ap.parse_args()
    runs = args.runs or (2 if args.quick else 5)
    fio_list = cs.fio_cases(args.cases)
    ior_list = [] if args.no_ior else cs.ior_cases(args.cases)
    if args.quick:
        fio_list = [cs.fio_case(c.job, max(1 << 20, c.size // 16)) for c in fio_list]
        ior_list = [cs.scaled(c, 16) for c in ior_list]
    if args.list_cases:
        for c in fio_list:
            print(f"{c.id:40} fio  size={c.size >> 20}m{'  reason: ' + c.reason if c.reason else ''}")
        for i in ior_list:
            print(f"{i.id:40} {i.kind:6} np={i.np} {' '.join(i.args)}")
        return 0
    iolens = find_iolens(args.iolens)
    ior_bin = find_ior(args.ior_bin) if ior_list else None
    places = {
        fs: Path(args.disk_dir if fs == "disk" else args.shm_dir) for fs in args.fs.split(",") if fs.strip()
    }
    with bl.scratch_dir(Path(args.shm_dir), "fidelity-tmp") as tmp:
        # Both tools' temporary files (iolens's result document, which it fsyncs; mpirun's session files)
        # on tmpfs: on the measured disk, an fsync there commits the journal, which in ext4's data=ordered
        # mode also writes other files' dirty data, and that would be counted as the run's device work.
        env = dict(mpi_env(), TMPDIR=str(tmp))
        setup = ms.Setup(
            iolens=iolens,
            ior_bin=ior_bin,
            env=env,
            progress=bl.progress,
            extra_runs=args.extra_runs,
            settled=rule.settled,
        )
        return run_all(Plan(args, runs, setup, places), fio_list, ior_list)


@dataclass(frozen=True)
class Plan:
    """What a run of the harness was asked for (the report names it)."""

    args: argparse.Namespace
    runs: int
    setup: ms.Setup
    places: dict[str, Path]


def run_all(plan: Plan, fio_list: list[cs.FioCase], ior_list: list[cs.IorCase]) -> int:
    """Runs every case on every file system; 0 when every difference is documented, else 1."""
    args, runs, setup, places = plan.args, plan.runs, plan.setup, plan.places
    results: list[ms.CaseResult] = []
    verdicts: list[rule.Verdict] = []
    models: dict[str, set[str]] = {}
    for fs, base in places.items():
        with bl.scratch_dir(base, "fidelity") as d:
            work = d / "w"
            for c in fio_list:
                work.mkdir()
                if fs == "tmpfs":
                    # A memory file system moves the disk's sizes in milliseconds, which fio reports in whole
                    # milliseconds: larger jobs there, so that the rate means something.
                    c = cs.fio_case(c.job, c.size * args.tmpfs_scale)
                try:
                    r = ms.run_fio_case(c, fs, runs, setup, work)
                finally:
                    shutil.rmtree(work)
                results.append(r)
                if r.error is None:
                    verdicts.append(rule.judge(r, "fio", "iolens"))
            for i in ior_list if setup.ior_bin is not None else []:
                work.mkdir()
                # iolens ior's default eviction changes nothing on tmpfs (the pages are the file): disk only.
                evicts = i.kind == "ior" and fs == "disk"
                tools = ("peer", "iolens", "iolens-evict") if evicts else ("peer", "iolens")
                try:
                    r = ms.run_ior_case(i, fs, runs, setup, work, tools)
                finally:
                    shutil.rmtree(work)
                results.append(r)
                if r.error is not None:
                    continue
                v = rule.judge(r, "peer", "iolens")
                for s in r.samples:
                    bad = rule.ior_model(i.args, i.kind, i.np, s.tool, s, r.device is not None)
                    if bad:
                        models.setdefault(f"{i.id} {fs} {s.tool}", set()).update(bad)
                v.model_diff = sorted(
                    models.get(f"{i.id} {fs} peer", set()) | models.get(f"{i.id} {fs} iolens", set())
                )
                verdicts.append(v)
    report(plan, results, verdicts, models)
    fine = all(v.device_ok or v.excused for v in verdicts) and all(r.error is None for r in results)
    return 0 if fine else 1


def report(
    plan: Plan, results: list[ms.CaseResult], verdicts: list[rule.Verdict], models: dict[str, set[str]]
) -> None:
    args, runs, setup, places = plan.args, plan.runs, plan.setup, plan.places
    rep = bl.Report("fidelity", "Same job, same device work: iolens vs fio, IOR and mdtest (bench/fidelity)")
    rep.header = bl.machine_lines(None, list(places.values())) + [
        f"iolens:  {' '.join(setup.iolens)} ({_first_line([*setup.iolens, '--version'])})",
        f"peer:    {fio_version()}",
        *(f"peer:    {v} ({setup.ior_bin}, bench/build_ior.sh)" for v in setup.versions.values()),
        *(
            f"device:  {fs}: {dw.device_of(p) or 'none (no block device: a memory file system)'}"
            for fs, p in places.items()
        ),
        f"runs:    {runs} per tool and case, alternating (order flipped every other round); "
        f"{'quick' if args.quick else 'full'} run",
        f"rule:    device work (smallest reading over a tool's runs) within {rule.TOLERANCE:.0%} or the "
        "floor "
        + ", ".join(f"{k} {v}" for k, v in rule.FLOORS.items())
        + f"; then rate ratio iolens/peer of the medians >= {rule.RATE_TARGET:.2f}",
    ]
    by_key = {(r.id, r.fs): r for r in results}
    rows = []
    for v in verdicts:
        r = by_key[(v.id, v.fs)]
        kind = r.kind
        p, m = r.of(v.peer), r.of("iolens")
        rows.append([
            v.id, v.fs, v.peer if v.peer != "peer" else r.kind,
            dev_cell(v.peer_dev), dev_cell(v.iolens_dev),
            f"{_proc_cell(p)} | {_proc_cell(m)}", f"{cache_cell(p)} | {cache_cell(m)}",
            rate_cell(p, kind), rate_cell(m, kind),
            " ".join(f"{k}={x:.2f}" for k, x in v.ratios.items()), v.status,
        ])  # fmt: skip
    rep.section(
        "Cases (device: read I/Os/sectors, write I/Os/sectors, flushes, until the files were fsynced)"
    )
    rep.add(bl.table(
        ["case", "fs", "peer", "device peer", "device iolens", "proc MiB r/w: peer | iolens",
         "cache: peer | iolens", "peer rate", "iolens rate", "iolens/peer", "verdict"], rows))  # fmt: skip
    evict_rows = []
    for r in results:
        e = r.of("iolens-evict")
        if e:
            model = ", ".join(sorted(models.get(f"{r.id} {r.fs} iolens-evict", set()))) or "as modelled"
            evict_rows.append(
                [
                    r.id,
                    r.fs,
                    dev_cell(rule.least(e)),
                    _proc_cell(e),
                    cache_cell(e),
                    rate_cell(e, r.kind),
                    model,
                ]
            )
    if evict_rows:
        rep.section("iolens ior's default (evicts the file before every buffered read; IOR does not)")
        rep.add(bl.table(["case", "fs", "device", "proc MiB r/w", "cache", "MiB/s w/r", "model"], evict_rows))
    bad = [v for v in verdicts if not v.device_ok]
    rep.section("Cases whose device work or report differs")
    for v in bad:
        rep.add(
            f"- {v.id} ({v.fs}): {', '.join(v.device_diff + v.reported_diff + v.model_diff)}"
            + (f"; reason: {v.reason}" if v.reason else "")
        )
    if not bad:
        rep.add("(none)")
    for r in results:
        if r.error:
            rep.add(f"- {r.id} ({r.fs}): not measured: {r.error}")
    met = sum(1 for v in verdicts if v.device_ok and v.rate_ratio >= rule.RATE_TARGET)
    ok = sum(1 for v in verdicts if v.device_ok)
    rep.section("Summary")
    rep.add(
        f"{len(verdicts)} case/file-system pairs: device work agrees in {ok}; of those, the rate target is "
        f"met in {met}."
    )
    rep.notes(
        "device: /proc/diskstats deltas of the block device holding the files (st_dev -> /sys/dev/block), "
        "from just before the tool starts until its files (and directories) were fsynced after it ended, so "
        "write-back a tool leaves behind counts as its work. The disk is shared with the machine's other "
        "users: each counter is the smallest reading over the tool's runs (their I/O only adds).",
        "proc: the storage I/O accounting of the tool's whole process tree (/proc/self/io of a wrapper that "
        "reaped it): bytes of read bios it submitted and bytes it dirtied or wrote with O_DIRECT; no other "
        "process appears in it. Medians.",
        "cache: the share of the case's files in the page cache (fincore) before and after a run, medians. "
        "Before every fio run the harness fsyncs and drops each file (posix_fadvise DONTNEED); both tools "
        "then invalidate on their own (fio's invalidate=1, iolens's cache=cold).",
        "fio cases: the job files in bench/fidelity/jobs, the same file given to both tools; fio lays the "
        "files out (and a writing job writes them) once before the timed runs; iolens gets "
        "--allow_overwrite=1 to write into them. Rates are bytes/s from each tool's fio JSON (bw_bytes). "
        "A mixed job's direction of each I/O is drawn by each tool's own generator: its reported counts may "
        "differ by chance (4 standard deviations), and iolens's device work is compared scaled per direction "
        "to the peer's I/O count (the table shows it unscaled).",
        "IOR lines: the official IOR under mpirun vs iolens ior --launcher mpirun --keep-cache (IOR leaves "
        "the page cache alone); iolens ior's default (evict before reads) is run too and checked against the "
        "model. mdtest: items/s over the four file phases. Every run starts in an empty directory.",
    )
    for cmd in setup.commands:
        rep.command(cmd)
    # The recorded table and JSON are those of a full run: a partial one (--cases, --fs) only prints, or
    # writes where --out/--json say.
    partial = args.quick or args.out or args.cases != "*" or args.fs not in ("both", "disk,tmpfs")
    rep.emit(args.out, bool(partial))
    target_json = args.json or (None if partial else str(bl.RESULTS_DIR / "fidelity.json"))
    if target_json:
        doc = {
            "header": rep.header,
            "verdicts": [_verdict_json(v) for v in verdicts],
            "results": [_result_json(r) for r in results],
        }
        text = json.dumps(doc, separators=(",", ":"), default=str)
        # paths inside the repository relative to it, as the text report has them (benchlib.Report.text)
        Path(target_json).write_text(text.replace(f"{bl.REPO_DIR}/", "") + "\n")


def _proc_cell(samples: list[ms.Sample]) -> str:
    if not samples:
        return "-"
    r = bl.median([s.proc.read_bytes / MIB for s in samples])
    w = bl.median([s.proc.write_bytes / MIB for s in samples])
    return f"{r:.1f}/{w:.1f}"


def _result_json(r: ms.CaseResult) -> dict[str, object]:
    """Every sample's figures, without the tools' standard error (kept only when a tool failed)."""
    d = asdict(r)
    for s in d["samples"]:
        s["proc"].pop("stderr", None)
    return d


def _verdict_json(v: rule.Verdict) -> dict[str, object]:
    d = asdict(v)
    d["status"] = v.status
    return d


def _first_line(cmd: list[str]) -> str:
    out = subprocess.run(cmd, capture_output=True, text=True, check=False).stdout.strip()
    return out.splitlines()[0] if out else "?"
