#!/usr/bin/env python3
"""What `iolens monitor` costs: the CPU of the sampler process with every collector available on this
machine, at 1 s and 0.1 s intervals, over 60 s each; the same with a synthetic Lustre server and client tree
(the machine has no Lustre); side by side with Debian's prometheus-node-exporter doing the same job (the
same Linux sources, scraped over HTTP at the same interval as iolens --prometheus is); and the time to parse a
job_stats file of 10,000 jobs (generated in the 2.15 layout and in the 2.12 one).

Only the sampler's process is measured: its CPU (user + system, every thread, exited ones included) from
/proc/PID/stat after a warm-up that covers Python's start and imports, to wait4()'s rusage when it exits
after SIGTERM; the wall time between the two is the window. The scraper that plays Prometheus runs in this
script's process and is not counted for either tool. In the side-by-side part the two tools alternate
(ABBA…) and the table shows medians.

    python3 bench/monitor_cost.py          # full run (about 10 minutes): bench/results/monitor_cost.txt
    python3 bench/monitor_cost.py --quick  # smoke test: short windows, prints only
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import benchlib as bl

PYTHON_DIR = bl.REPO_DIR / "python"
LINUX_SOURCES = "diskstats,mountstats,pressure,meminfo,loadavg,stat"
NE_COLLECTORS = ("diskstats", "mountstats", "pressure", "meminfo", "loadavg", "stat")
CLK_TCK = os.sysconf("SC_CLK_TCK")


def iolens_python() -> str:
    """A Python that can run iolens (rich installed): the repository's .venv, else this one."""
    venv = bl.REPO_DIR / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def cpu_ticks_s(pid: int) -> float:
    """user + system seconds of a live process (all its threads, exited ones too), from /proc/PID/stat."""
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


@dataclass
class Measure:
    cpu_s: float
    wall_s: float
    scrapes: int = 0

    @property
    def pct(self) -> float:
        return 100.0 * self.cpu_s / self.wall_s


class Scraper(threading.Thread):
    """GET url every interval until stopped (Prometheus's part); counts the scrapes that succeeded."""

    def __init__(self, url: str, interval: float) -> None:
        super().__init__(daemon=True)
        self.url, self.interval = url, interval
        self.stop = threading.Event()
        self.ok = 0
        self.bytes = 0

    def run(self) -> None:
        due = time.monotonic()
        while not self.stop.is_set():
            try:
                with urllib.request.urlopen(self.url, timeout=5) as r:
                    self.bytes = len(r.read())
                    self.ok += 1
            except OSError:
                pass
            due += self.interval
            self.stop.wait(max(0.0, due - time.monotonic()))


def measure(
    cmd: Sequence[str],
    warm_s: float,
    window_s: float,
    url_from: str | None,
    interval: float,
    rep: bl.Report,
    env: dict[str, str] | None = None,
) -> Measure:
    """Start cmd, wait warm_s (and for its URL when url_from names the stderr text that carries it), scrape
    it every interval if it serves metrics, measure its CPU over window_s, stop it with SIGTERM."""
    rep.command(cmd)
    proc = subprocess.Popen(
        list(cmd),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stderr is not None
    scraper = None
    try:
        url = None
        if url_from is not None:
            deadline = time.monotonic() + 30
            while url is None and time.monotonic() < deadline:
                line = proc.stderr.readline()
                if not line and proc.poll() is not None:
                    raise bl.BenchError(f"{cmd[0]} exited early ({proc.returncode})")
                m = re.search(url_from, line)
                url = m.group(1) if m else None
            if url is not None and not url.startswith("http"):
                url = f"http://{url}/metrics"
            if url is None:
                raise bl.BenchError(f"{cmd[0]} never said where it serves")
            scraper = Scraper(url, interval)
            scraper.start()
        # Drain stderr so the child never blocks on it.
        threading.Thread(target=proc.stderr.read, daemon=True).start()
        time.sleep(warm_s)
        if proc.poll() is not None:
            raise bl.BenchError(f"{' '.join(cmd)} exited early ({proc.returncode})")
        cpu0 = cpu_ticks_s(proc.pid)
        t0 = time.monotonic()
        time.sleep(window_s)
        proc.send_signal(signal.SIGTERM)
        _, _, ru = os.wait4(proc.pid, 0)
        wall = time.monotonic() - t0
        proc.returncode = 0
        return Measure(ru.ru_utime + ru.ru_stime - cpu0, wall, scraper.ok if scraper else 0)
    finally:
        if scraper is not None:
            scraper.stop.set()
        if proc.returncode is None and proc.poll() is None:
            proc.kill()
            proc.wait()


def iolens_cmd(interval: float, extra: Sequence[str]) -> list[str]:
    return [iolens_python(), "-m", "iolens", "monitor", "--interval", f"{interval}s", "--no-live", *extra]


def iolens_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PYTHON_DIR), env.get("PYTHONPATH")]))
    return env


# --- synthetic Lustre ---------------------------------------------------------------------------------------

OST_OPS = (
    "getattr",
    "setattr",
    "punch",
    "sync",
    "destroy",
    "create",
    "statfs",
    "get_info",
    "set_info",
    "quotactl",
)


def job_stats_text(njobs: int, layout: str) -> str:
    """job_stats of njobs jobs: "2.15" (start/elapsed times, sumsq, hist on read/write bytes, latency
    counters) or "2.12" (integer snapshot_time, `max:NNN` without a space, no sumsq)."""
    out = ["job_stats:"]
    for i in range(njobs):
        out.append(f"- job_id:          job{i:05d}.{1000 + i % 97}")
        if layout == "2.15":
            out.append("  snapshot_time:   1700000100.123456789 secs.nsecs")
            out.append("  start_time:      1700000000.000000000 secs.nsecs")
            out.append("  elapsed_time:    100.123456789 secs.nsecs")
            for op in ("read_bytes", "write_bytes"):
                out.append(
                    f"  {op + ':':<16} {{ samples: {i + 7:>11}, unit: bytes, min:    4096, max: 1048576, "
                    f"sum: {(i + 7) * 524288:>15}, sumsq: {(i + 7) * 549755813888:>20}, "
                    f"hist: {{ 4K: 3, 512K: 1, "
                    f"1M: {i + 3} }} }}"
                )
            for op in ("read", "write"):
                out.append(
                    f"  {op + ':':<16} {{ samples: {i + 7:>11}, unit: usecs, min:      12, max:    5000, "
                    f"sum: {(i + 7) * 300:>15}, sumsq: {(i + 7) * 90000:>20} }}"
                )
            for op in OST_OPS:
                out.append(
                    f"  {op + ':':<16} {{ samples: {i % 5:>11}, unit: usecs, min:       3, max:     900, "
                    f"sum: {(i % 5) * 40:>15}, sumsq: {(i % 5) * 1600:>20} }}"
                )
        else:
            out.append("  snapshot_time:   1461772761")
            out.append(
                f"  read_bytes:      {{ samples: {i + 1:>11}, unit: bytes, min:    4096, max:    4096, "
                f"sum: {(i + 1) * 4096:>15} }}"
            )
            out.append(
                f"  write_bytes:     {{ samples: {i + 25:>11}, unit: bytes, min: 1048576, max:16777216, "
                f"sum: {(i + 25) * 1048576:>15} }}"
            )
            for op in OST_OPS:
                out.append(f"  {op + ':':<16} {{ samples: {i % 3:>11}, unit:  reqs }}")
    return "\n".join(out) + "\n"


def stats_text(counters: Sequence[str], unit: str = "usecs") -> str:
    lines = [
        f"{'snapshot_time':<35}1700000100.123456789 secs.nsecs",
        f"{'start_time':<35}1700000000.000000000 secs.nsecs",
    ]
    for i, name in enumerate(counters):
        lines.append(f"{name:<35}{1000 + i} samples [{unit}] 1 {900 + i} {50000 + i} {9000000 + i}")
    return "\n".join(lines) + "\n"


RPC_TABLE_TITLES = ("pages per rpc", "rpcs in flight", "offset", "RPC latency (us)")
BRW_TABLE_TITLES = (
    "pages per bulk r/w",
    "discontiguous pages",
    "disk I/Os in flight",
    "I/O time (1/1000s)",
    "disk I/O size",
)


def table_text(titles: Sequence[str], header: str) -> str:
    out = [header, ""]
    for t in titles:
        out.append("\t\t\tread\t\t\twrite")
        out.append(f"{t:<22}rpcs   % cum % |       rpcs   % cum %")
        for b in range(12):
            out.append(f"{1 << b}:\t\t{b * 3:>10} {b:>3} {b * 8:>3}   |  {b * 5:>9} {b:>3} {b * 8:>3}")
        out.append("")
    return "\n".join(out)


def lustre_tree(root: Path, njobs: int) -> str:
    """A client of 16 OSTs (llite stats, osc stats and rpc_stats) and an OSS of 2 OSTs (stats, brw_stats,
    job_stats of njobs jobs each), as lctl finds them under /proc/fs/lustre; returns a description."""
    llite = root / "llite" / "lfs-ffff8881"
    llite.mkdir(parents=True)
    (llite / "stats").write_text(
        stats_text(
            (
                "read_bytes",
                "write_bytes",
                "open",
                "close",
                "getattr",
                "setattr",
                "statfs",
                "mkdir",
                "unlink",
                "rename",
                "readdir",
                "fsync",
            )
        )
    )
    for i in range(16):
        osc = root / "osc" / f"lfs-OST{i:04x}-osc-ffff8881"
        osc.mkdir(parents=True)
        (osc / "stats").write_text(
            stats_text(("req_waittime", "req_active", "read_bytes", "write_bytes", "ost_read"))
        )
        (osc / "rpc_stats").write_text(
            table_text(
                RPC_TABLE_TITLES,
                "snapshot_time:         1700000100.123456789 (secs.nsecs)\n"
                "read RPCs in flight:  0\nwrite RPCs in flight: 1\npending write pages:  0\n",
            )
        )
    for i in range(2):
        ost = root / "obdfilter" / f"lfs-OST{i:04x}"
        ost.mkdir(parents=True)
        (ost / "stats").write_text(
            stats_text(("read_bytes", "write_bytes", "create", "destroy", "statfs", "punch"))
        )
        (ost / "brw_stats").write_text(
            table_text(BRW_TABLE_TITLES, "snapshot_time:  1700000100.123456789 (secs.nsecs)\n")
        )
        (ost / "job_stats").write_text(job_stats_text(njobs, "2.15"))
    return f"llite x1, osc stats+rpc_stats x16, obdfilter stats+brw_stats+job_stats ({njobs} jobs) x2"


def parse_times(text: str, runs: int) -> list[float]:
    sys.path.insert(0, str(PYTHON_DIR))
    from iolens.monitor.lustre import jobstats

    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        data, skipped = jobstats.parse(text)
        times.append(time.perf_counter() - t0)
        if skipped or len(data["jobs"]) != text.count("- job_id:"):
            raise bl.BenchError(f"job_stats parse went wrong: {skipped} skipped lines")
    return times


def yaml_times(path: Path, runs: int) -> list[float] | None:
    """A general YAML parser (PyYAML's libyaml loader, if the system Python has it) on the same file: a
    reference for what a YAML-based reader pays (the 2.12 layout is not even YAML)."""
    py = shutil.which("python3")
    if py is None:
        return None
    code = (
        "import sys, time, yaml\n"
        "text = open(sys.argv[1]).read()\n"
        "for _ in range(int(sys.argv[2])):\n"
        "    t0 = time.perf_counter(); d = yaml.load(text, Loader=yaml.CSafeLoader)\n"
        "    print(time.perf_counter() - t0)\n"
        "assert len(d['job_stats']) == text.count('- job_id:')\n"
    )
    r = subprocess.run([py, "-c", code, str(path), str(runs)], capture_output=True, text=True, check=False)
    if r.returncode != 0:
        return None
    return [float(x) for x in r.stdout.split()]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    bl.common_args(ap)
    args = ap.parse_args()
    quick = args.quick
    runs = args.runs or (1 if quick else 5)
    window = 5.0 if quick else 60.0  # the headline windows
    side_window = {1.0: 4.0 if quick else 24.0, 0.1: 3.0 if quick else 8.0}
    warm = 2.5
    ne = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
    env = iolens_env()

    rep = bl.Report("monitor_cost", "iolens monitor: sampler CPU, and job_stats parse time")
    rep.header = bl.machine_lines() + [
        f"python:  {bl._first_line([iolens_python(), '--version'])} ({iolens_python()})",
        f"peer:    {bl._first_line([ne, '--version']) if ne else 'prometheus-node-exporter not installed'}",
        f"setup:   {'quick' if quick else 'full'} run; CPU = user+sys of the sampler process over the "
        "window, "
        f"after {warm} s of warm-up (start-up and imports excluded)",
    ]

    # 1. The sampler alone, every source available here, at 1 s and 0.1 s.
    rows = []
    with bl.scratch_dir(Path("/tmp"), "monitor") as scratch:
        sources = ["--pid-tree", str(os.getpid()), "--out", str(scratch / "stream.jsonl")]
        for interval in (1.0, 0.1):
            bl.progress(f"iolens monitor, every source, {interval} s, {window:.0f} s window ...")
            m = measure(iolens_cmd(interval, sources), warm, window, None, interval, rep, env)
            samples = sum(1 for line in (scratch / "stream.jsonl").open() if '"type":"sample"' in line)
            rows.append(
                [
                    f"every source here, {interval:g} s",
                    f"{m.wall_s:.1f}",
                    f"{m.cpu_s * 1000:.0f}",
                    f"{m.pct:.3f}",
                    f"{m.cpu_s * 1000 / max(1, m.wall_s / interval):.2f}",
                    samples,
                ]
            )
        lustre_root = scratch / "lustre"
        desc = lustre_tree(lustre_root, 1000)
        lw = 5.0 if quick else 30.0
        bl.progress(f"iolens monitor with a synthetic Lustre tree, 1 s, {lw:.0f} s window ...")
        m = measure(
            iolens_cmd(1.0, [*sources, "--lustre-root", str(lustre_root)]), warm, lw, None, 1.0, rep, env
        )
        rows.append(
            [
                "+ synthetic Lustre (below), 1 s",
                f"{m.wall_s:.1f}",
                f"{m.cpu_s * 1000:.0f}",
                f"{m.pct:.3f}",
                f"{m.cpu_s * 1000 / max(1, m.wall_s):.2f}",
                "-",
            ]
        )
    rep.section(
        "Sampler CPU (iolens monitor --out FILE, sources: "
        "diskstats mountstats pressure meminfo loadavg stat proc_io; cgroup_io and lustre are unavailable "
        "here)"
    )
    rep.add(
        bl.table(["configuration", "window s", "CPU ms", "% of one core", "CPU ms / sample", "samples"], rows)
    )
    rep.add(f"synthetic Lustre tree: {desc}")
    rep.add(
        f"goal: <= 1% of one core at 1 s: {'met' if float(rows[0][3]) <= 1.0 else 'NOT met'} ({rows[0][3]}%)"
    )

    # 2. Side by side with node_exporter: the same Linux sources served over HTTP, scraped at the interval.
    if ne is not None:
        for interval in (1.0, 0.1):
            results: dict[str, list[Measure]] = {"iolens": [], "node_exporter": []}
            for rnd, tool in bl.alternating(list(results), runs):
                bl.progress(f"round {rnd + 1}/{runs}: {tool} at {interval} s ...")
                if tool == "iolens":
                    cmd = iolens_cmd(interval, ["--prometheus", "127.0.0.1:0", "--sources", LINUX_SOURCES])
                    pattern = r"(http://\S+/metrics)"
                else:
                    cmd = [
                        ne,
                        "--collector.disable-defaults",
                        *(f"--collector.{c}" for c in NE_COLLECTORS),
                        "--web.listen-address=127.0.0.1:19187",
                    ]
                    pattern = r"address=(127\.0\.0\.1:\d+)"
                m = measure(cmd, warm, side_window[interval], pattern, interval, rep, env)
                results[tool].append(m)
            rows = []
            for tool, ms in results.items():
                pcts = [x.pct for x in ms]
                rows.append(
                    [
                        tool,
                        len(ms),
                        f"{bl.median(pcts):.3f}",
                        bl.spread(pcts),
                        f"{bl.median([x.cpu_s * 1000 / max(1, x.scrapes) for x in ms]):.2f}",
                        int(bl.median([x.scrapes for x in ms])),
                    ]
                )
            ratio = bl.ratio(
                bl.median([x.pct for x in results["iolens"]]),
                bl.median([x.pct for x in results["node_exporter"]]),
            )
            rep.section(
                f"Side by side at {interval:g} s: {side_window[interval]:.0f} s windows, "
                f"scraped every {interval:g} s"
            )
            rep.add(
                bl.table(
                    ["tool", "runs", "% of one core (median)", "range", "CPU ms / scrape", "scrapes"], rows
                )
            )
            rep.add(f"iolens / node_exporter CPU: {ratio:.2f}")
        rep.add(
            "\nnode_exporter: collectors " + ", ".join(NE_COLLECTORS) + " (it also reads sysfs/udev for each "
            "disk and exports every meminfo line); iolens: --sources " + LINUX_SOURCES + " --prometheus. "
            "iolens samples at the interval and renders at each scrape; node_exporter reads at each scrape."
        )

    # 3. job_stats of 10,000 jobs.
    rows = []
    ours: list[float] = []
    with bl.scratch_dir(Path("/tmp"), "jobstats") as scratch:
        for layout in ("2.15", "2.12"):
            text = job_stats_text(10000, layout)
            path = scratch / f"job_stats-{layout}.txt"
            path.write_text(text)
            ts = parse_times(text, max(runs, 3))
            ours.append(bl.median(ts))
            rows.append(
                [
                    f"iolens, {layout} layout",
                    f"{len(text) / bl.MIB:.1f}",
                    text.count("\n"),
                    f"{bl.median(ts):.3f}",
                    bl.spread(ts),
                ]
            )
            rep.command([iolens_python(), "-c", f"jobstats.parse(open('{path.name}').read())"])
            if layout == "2.15":
                yt = yaml_times(path, 1)
                if yt:
                    rows.append(
                        [
                            "PyYAML CSafeLoader (libyaml), 2.15 layout",
                            f"{len(text) / bl.MIB:.1f}",
                            text.count("\n"),
                            f"{bl.median(yt):.3f}",
                            bl.spread(yt),
                        ]
                    )
    rep.section("Parsing job_stats with 10,000 jobs (one OST; 14 operations per job in 2.15, 12 in 2.12)")
    rep.add(bl.table(["parser", "MiB", "lines", "seconds (median)", "range"], rows))
    rep.add(f"goal: <= 0.5 s: {'met' if max(ours) <= 0.5 else 'NOT met'} (slowest layout {max(ours):.3f} s)")
    rep.notes(
        "The sampler's CPU is read from /proc/PID/stat (clock ticks) at the start of the window and from "
        "wait4() when it exits after SIGTERM, so start-up and imports are outside the window and every "
        "thread "
        "(the HTTP server's too) is inside.",
        "The headline runs write the full JSON-lines stream (raw values and rates of every source) to a "
        "file; "
        "the side-by-side runs write nothing and serve /metrics, as node_exporter does.",
        "The machine is shared with other sessions' builds and tests: the ranges show how much the figures "
        "move; CPU per sample is the steadier figure.",
    )
    rep.emit(args.out, quick)
    return 0


if __name__ == "__main__":
    bl.main_wrapper(main)
