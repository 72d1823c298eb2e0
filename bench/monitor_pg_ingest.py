#!/usr/bin/env python3
"""How many nodes running `iolens monitor --db postgresql://…` at 1 Hz one PostgreSQL server takes.

A private PostgreSQL server (Debian's, started here on 127.0.0.1, durable settings: fsync and synchronous
commit on) receives the samples of N simulated nodes, each a process (bench/monitor_pg_node.py) that stores
through iolens's own SampleSink and Store over TCP, as `iolens monitor --db` does on a node. The record they
store is a real one: `iolens monitor` run here once for 3 seconds, with its Linux sources and a Lustre client
tree (1 llite, 1 mdc, 16 osc stats files from tests/data/lustre) under --lustre-root, its second record taken
(data and rates). For each N (a fresh database each), for --seconds seconds:

- offered and committed values per second (every node's samples, counted by the nodes and by the server);
- the age of a batch's oldest sample when it was committed (the sink buffers 10 s, so ≥ 10 s by design),
  and how long each batch's transaction took, p50/p99/max over all nodes;
- how late the nodes' 1 Hz ticks ran (a sink that blocks the sampler shows here);
- the server's CPU (the postmaster and its backends, from /proc, exited backends included) and the nodes'
  own CPU, as % of one core; the load average.

N goes up until the server no longer keeps up (a batch's transaction takes longer than the sink's 10 s
buffer, or committed < 95% of offered) or the list ends. The machine is small and shared (the nodes run on
the same 2 cores as the server), so the table also gives the server's CPU per 1000 values: the figure to
scale to a center's server.

    .venv/bin/python bench/monitor_pg_ingest.py            # records bench/results/monitor_pg_ingest.txt
    .venv/bin/python bench/monitor_pg_ingest.py --quick    # smoke test (2 and 4 nodes, 12 s)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import benchlib as bl

HERE = Path(__file__).resolve().parent
LUSTRE_DATA = bl.REPO_DIR / "tests" / "data" / "lustre"
FLUSH_S = 10.0  # SampleSink's default batch interval
TICK = os.sysconf("SC_CLK_TCK")


def pg_bin(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    import glob

    versions = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=lambda p: int(p.split("/")[4]))
    if not versions:
        raise SystemExit(f"{name}: PostgreSQL server programs not installed (apt-get install postgresql)")
    return versions[-1]


def as_server_user(cmd: list[str]) -> list[str]:
    return ["runuser", "-u", "nobody", "--", *cmd] if os.geteuid() == 0 else cmd


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    data: Path
    port: int
    version: str

    def url(self, db: str) -> str:
        return f"postgresql://iolens@127.0.0.1:{self.port}/{db}"

    def psql(self, db: str, sql: str) -> str:
        return subprocess.run(
            [pg_bin("psql"), "-X", "-tA", "-h", "127.0.0.1", "-p", str(self.port), "-U", "iolens", "-d", db,
             "-c", sql],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip

    def pids(self) -> tuple[int, list[int]]:
        master = int((self.data / "postmaster.pid").read_text().split()[0])
        kids = []
        for d in Path("/proc").iterdir():
            if d.name.isdigit():
                try:
                    if int(_stat(int(d.name))[3]) == master:
                        kids.append(int(d.name))
                except (OSError, IndexError, ValueError):
                    pass
        return master, kids

    def cpu_s(self) -> float:
        """CPU of the postmaster, its live children, and (cutime) the children it reaped."""
        master, kids = self.pids()
        st = _stat(master)
        total = sum(int(x) for x in st[13:17])
        for k in kids:
            try:
                total += sum(int(x) for x in _stat(k)[13:15])
            except (OSError, IndexError):
                pass
        return total / TICK


def _stat(pid: int) -> list[str]:
    """/proc/PID/stat's fields, numbered from 0 as proc(5) numbers them from 1 (3: ppid, 13-16: utime, stime,
    cutime, cstime); the name in parentheses may hold spaces."""
    text = Path(f"/proc/{pid}/stat").read_text()
    return [str(pid), "comm", *text[text.rindex(")") + 2 :].split()]


@contextmanager
def server(base: Path, max_connections: int) -> Iterator[Server]:
    data = base / "data"
    base.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        os.chown(base, 65534, 65534)
    subprocess.run(
        as_server_user([pg_bin("initdb"), "-D", str(data), "-A", "trust", "-U", "iolens", "-E", "UTF8",
                        "--no-instructions"]),
        check=True, capture_output=True,
    )  # fmt: skip
    port = free_port()
    opts = (
        f"-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories={base} "
        f"-c max_connections={max_connections}"
    )
    log = base / "server.log"
    subprocess.run(
        as_server_user([pg_bin("pg_ctl"), "-D", str(data), "-o", opts, "-l", str(log), "-w", "-t", "60",
                        "start"]),
        check=True, capture_output=True,
    )  # fmt: skip
    version = subprocess.run([pg_bin("postgres"), "--version"], capture_output=True, text=True).stdout.strip()
    try:
        yield Server(data, port, version)
    finally:
        subprocess.run(
            as_server_user([pg_bin("pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]),
            capture_output=True, check=False,
        )  # fmt: skip


def lustre_tree(root: Path) -> Path:
    """A Lustre client's parameter tree: 1 llite, 1 mdc and 16 osc stats files (samples from tests/data)."""
    tree = root / "lustre"
    (tree / "llite" / "scratch-ffff0001").mkdir(parents=True)
    shutil.copy(LUSTRE_DATA / "llite-stats-2.14.txt", tree / "llite" / "scratch-ffff0001" / "stats")
    (tree / "mdc" / "scratch-MDT0000-mdc-ffff0001").mkdir(parents=True)
    shutil.copy(
        LUSTRE_DATA / "osc-stats-old-usecs.txt", tree / "mdc" / "scratch-MDT0000-mdc-ffff0001" / "stats"
    )
    for i in range(16):
        d = tree / "osc" / f"scratch-OST{i:04x}-osc-ffff0001"
        d.mkdir(parents=True)
        shutil.copy(LUSTRE_DATA / "osc-stats-old-usecs.txt", d / "stats")
    return tree


def template(work: Path, rep: bl.Report) -> tuple[Path, int]:
    """A real sample record of `iolens monitor` on this machine (its second: data and rates), and its value
    count as the store keeps it."""
    from iolens.store.samples import record_samples

    out = work / "monitor.jsonl"
    cmd = [sys.executable, "-m", "iolens", "monitor", "--interval", "1s", "--duration", "3s", "--no-live",
           "--lustre-root", str(lustre_tree(work)), "--out", str(out)]  # fmt: skip
    rep.command(cmd)
    subprocess.run(cmd, check=True, capture_output=True)
    records = [json.loads(ln) for ln in out.read_text().splitlines()]
    rec = [r for r in records if r.get("type") == "sample"][1]
    path = work / "template.json"
    path.write_text(json.dumps(rec))
    return path, len(list(record_samples(rec, "x")))


def pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def run_nodes(srv: Server, n: int, seconds: float, tpl: Path, work: Path, rep: bl.Report) -> dict[str, float]:
    db = f"ingest_{n}"
    srv.psql("postgres", f"CREATE DATABASE {db}")
    url = srv.url(db)
    # The schema first (as the first `iolens monitor --db` of a center would), so the nodes do not all
    # migrate at once.
    migrate = f"from iolens.store.store import Store; Store.open({url!r}).close()"
    subprocess.run([sys.executable, "-c", migrate], check=True)
    outs = work / f"n{n}"
    outs.mkdir()
    start_file = outs / "start"
    before_children = resource.getrusage(resource.RUSAGE_CHILDREN)
    procs = []
    for i in range(n):
        cmd = [sys.executable, str(HERE / "monitor_pg_node.py"), "--url", url, "--host", f"node{i:04d}",
               "--template", str(tpl), "--seconds", str(seconds), "--start-file", str(start_file),
               "--phase", f"{(i * 0.6180339887) % 1.0:.3f}", "--out", str(outs / f"{i}.json")]  # fmt: skip
        if i == 0:
            rep.command(cmd)
        procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
    # The first tick once every node has connected (a Python start and a connection each: seconds for
    # hundreds of nodes on this machine), so the window measured is the steady state.
    deadline = time.monotonic() + 300
    while len(list(outs.glob("*.ready"))) < n and time.monotonic() < deadline:
        if any(p.poll() is not None for p in procs):
            break
        time.sleep(0.2)
    start_at = time.time() + 1.0
    (outs / "start.tmp").write_text(f"{start_at:.3f}")
    (outs / "start.tmp").rename(start_file)
    time.sleep(max(0.0, start_at - time.time()))
    cpu0, wall0 = srv.cpu_s(), time.monotonic()
    load_peak = 0.0
    while any(p.poll() is None for p in procs):
        time.sleep(1.0)
        load_peak = max(load_peak, os.getloadavg()[0])
    cpu1, wall1 = srv.cpu_s(), time.monotonic()
    after_children = resource.getrusage(resource.RUSAGE_CHILDREN)
    failed = [p.stderr.read().decode(errors="replace")[-400:] for p in procs if p.wait() != 0]  # type: ignore[union-attr]
    nodes = [json.loads(f.read_text()) for f in sorted(outs.glob("[0-9]*.json"))]
    stored = sum(x["stored"] for x in nodes)
    in_db = int(srv.psql(db, "SELECT count(*) FROM samples"))
    puts = [b["put_s"] for x in nodes for b in x["batches"]]
    ages = [b["age_s"] for x in nodes for b in x["batches"]]
    late = [v for x in nodes for v in x["late"]]
    per_sample = stored / max(1, sum(x["ticks"] for x in nodes))
    span = wall1 - wall0
    node_cpu = (after_children.ru_utime + after_children.ru_stime) - (
        before_children.ru_utime + before_children.ru_stime
    )
    return {
        "nodes": n,
        "failed": len(failed) + len(nodes) - n + sum(1 for x in nodes if x["errors"]),
        "failure": (failed or [""])[0],
        "values_per_sample": per_sample,
        "offered_per_s": n * per_sample,
        "committed_per_s": in_db / seconds,
        "stored": stored,
        "in_db": in_db,
        "put_p50": pct(puts, 0.5),
        "put_p99": pct(puts, 0.99),
        "put_max": max(puts, default=float("nan")),
        "age_p50": pct(ages, 0.5),
        "age_p99": pct(ages, 0.99),
        "age_max": max(ages, default=float("nan")),
        "late_p99": pct(late, 0.99),
        "late_max": max(late, default=float("nan")),
        "server_cpu_pct": 100.0 * (cpu1 - cpu0) / span,
        "server_ms_per_kvalue": 1000.0 * (cpu1 - cpu0) / max(1.0, in_db / 1000.0),
        "node_cpu_pct": 100.0 * node_cpu / span,
        "load_peak": load_peak,
    }


def kept_up(r: dict[str, float]) -> bool:
    return (
        r["failed"] == 0
        and r["put_p99"] < FLUSH_S
        and r["in_db"] >= 0.95 * r["nodes"] * r["values_per_sample"] * r["ticks"]
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="2 and 4 nodes for 12 s: a smoke test")
    p.add_argument("--nodes", default="25,50,100,200,300,400", help="node counts, in order")
    p.add_argument("--seconds", type=float, default=60.0, help="how long each node count runs")
    p.add_argument("--out", default=None)
    a = p.parse_args()
    counts = [2, 4] if a.quick else [int(x) for x in a.nodes.split(",")]
    seconds = 12.0 if a.quick else a.seconds
    rep = bl.Report(
        "monitor_pg_ingest", "iolens monitor --db postgresql://… from many nodes: one server's ingest"
    )
    rep.header = bl.machine_lines()
    rows = []
    with tempfile.TemporaryDirectory(prefix="iolens-pg-ingest-", dir="/var/tmp") as tmp:
        work = Path(tmp)
        work.chmod(0o711)  # the server runs as nobody (PostgreSQL refuses root): it must reach its directory
        tpl, values = template(work, rep)
        with server(work / "pg", max(counts) + 20) as srv:
            rep.header.append(f"server:  {srv.version}, on /var/tmp (ext4), fsync and synchronous_commit on")
            rep.header.append(
                f"record:  {values} values per node per second (Linux sources + 18 Lustre stats files)"
            )
            for n in counts:
                bl.progress(f"{n} nodes for {seconds:g} s")
                r = run_nodes(srv, n, seconds, tpl, work, rep)
                r["ticks"] = seconds
                rows.append(r)
                bl.progress(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in r.items()}))
                if not kept_up(r):
                    break
    rep.section(
        "Results",
        "values/s: sample values (the store's rows) offered by all nodes and committed in the server; put: "
        "one batch's transaction (p50/p99/max, s); age: the oldest sample of a batch when committed (the "
        "sink buffers 10 s); late: how late a node's 1 Hz tick ran (p99/max, s); CPU in % of one core.",
    )
    rep.add(
        bl.table(
            [
                "nodes",
                "values/s offered",
                "committed",
                "put p50/p99/max s",
                "age p50/p99/max s",
                "late p99/max s",
                "server CPU %",
                "server ms/1k values",
                "nodes' CPU %",
                "load peak",
                "kept up",
            ],
            [
                [
                    r["nodes"],
                    f"{r['offered_per_s']:.0f}",
                    f"{r['committed_per_s']:.0f}",
                    f"{r['put_p50']:.2f}/{r['put_p99']:.2f}/{r['put_max']:.2f}",
                    f"{r['age_p50']:.1f}/{r['age_p99']:.1f}/{r['age_max']:.1f}",
                    f"{r['late_p99']:.2f}/{r['late_max']:.2f}",
                    f"{r['server_cpu_pct']:.0f}",
                    f"{r['server_ms_per_kvalue']:.2f}",
                    f"{r['node_cpu_pct']:.0f}",
                    f"{r['load_peak']:.1f}",
                    "yes"
                    if kept_up(r)
                    else f"no{(': ' + r['failure'].strip().splitlines()[-1]) if r['failure'] else ''}",
                ]
                for r in rows
            ],
        )  # fmt: skip
    )
    rep.emit(a.out, a.quick)


if __name__ == "__main__":
    bl.main_wrapper(main)
