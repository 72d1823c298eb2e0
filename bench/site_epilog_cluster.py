"""bench/site_epilog.py --cluster: the site integration's cost on a real Slurm cluster of two nodes (the test
cluster of tests/cluster: slurmctld, slurmdbd, two slurmd in network namespaces of this machine; needs root
and Debian's slurm-wlm, slurmdbd, munge and mariadb-server).

Each round submits the same batch job (sbatch -N 2 --ntasks-per-node=2, mpirun of site_ranks: 4 ranks, 2 per
node, FILES files per rank) three ways, in alternating order: with no site integration in slurm.conf, with
`iolens site install`'s TaskProlog and Epilog but the job opted out (IOLENS_PROFILE=off), and profiled. The
batch script writes the time at its first and last line; the bench polls squeue every 50 ms for the job's
end (a job leaves the queue when every node's Epilog has ended). Times on the one clock of this machine:
  start: sbatch's submission to the script's first line (scheduling, the batch step's TaskProlog), the
         nodes idle in the controller's view before each submission;
  run:   the script's first line to its last (mpirun, and the TaskProlog of each node's orted);
  end:   the script's last line to the job leaving the queue (both nodes' Epilogs, slurmctld's bookkeeping);
  run + end: what the integration can add to the job's time on its nodes (the start is the controller's
  scheduling, 0.1-3 s here whatever the integration);
  Epilog (first node): what `iolens site epilog` says it took (reduce, store, remove), Python's start not
  included.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import benchlib as bl

sys.path.insert(0, str(bl.REPO_DIR))
from tests.cluster.netns import ClusterError  # noqa: E402 - the repository's own test cluster
from tests.cluster.slurm import SlurmCluster  # noqa: E402

VARIANTS = ("none", "opted out", "profiled")
POLL_S = 0.05
JOB_TIMEOUT_S = 300.0
EPILOG_SECONDS = re.compile(r" job (\d+): (.*) \(([\d.]+) s\)$")


def _mpi_env(cluster: SlurmCluster, **extra: str) -> dict[str, str]:
    # Open MPI as root: a bench-environment need (tests' mpi_env), never the product's default.
    return cluster.env({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", **extra})


def _job(cluster: SlurmCluster, root: Path, prog: Path, files: int, n: int, env: dict[str, str]) -> dict:
    out = root / f"out{n}"
    out.mkdir()
    stamps = root / f"stamps{n}"
    script = root / f"job{n}.sh"
    script.write_text(
        "#!/bin/sh\n"
        f"date +%s.%N > {stamps}\n"
        f"mpirun {prog} {out} {files} 4096 || echo failed >> {stamps}\n"
        f"date +%s.%N >> {stamps}\n"
    )
    # The nodes idle again in the controller's view (the previous job's end fully processed), so that the
    # start does not include a wait for the next scheduling pass.
    deadline = time.monotonic() + 30
    while not cluster.nodes_idle() and time.monotonic() < deadline:
        time.sleep(POLL_S)
    time.sleep(0.5)
    t0 = time.time()
    sbatch = ["sbatch", "--parsable", "-N", "2", "--ntasks-per-node=2", "-o", str(root / f"job{n}.out")]
    r = cluster.run([*sbatch, str(script)], env=env, timeout=30)
    if r.returncode != 0:
        raise bl.BenchError(f"sbatch: {r.stderr.strip()}")
    job_id = r.stdout.strip().split(";")[0]
    while cluster.run(["squeue", "-h", "-j", job_id, "-o", "%i"], timeout=30).stdout.strip():
        if time.time() - t0 > JOB_TIMEOUT_S:
            cluster.run(["scancel", job_id], timeout=30)
            raise bl.BenchError(f"job {job_id} not done within {JOB_TIMEOUT_S:.0f} s")
        time.sleep(POLL_S)
    t_gone = time.time()
    lines = stamps.read_text().split() if stamps.exists() else []
    if len(lines) != 2:
        raise bl.BenchError(
            f"job {job_id} failed: {stamps} has {lines}; {(root / f'job{n}.out').read_text()}"
        )
    first, last = float(lines[0]), float(lines[1])
    shutil.rmtree(out)
    return {
        "id": job_id,
        "start": first - t0,
        "run": last - first,
        "end": t_gone - last,
        "held": t_gone - first,
        "total": t_gone - t0,
    }


def run(args: object, report: bl.Report, iolens: list[str], source: Path) -> None:
    """Start the cluster, run the rounds, add a section to the report, stop the cluster."""
    runs = int(getattr(args, "runs", None) or 5)
    files = int(getattr(args, "files", 1000))
    cluster = SlurmCluster(nodes=2)
    try:
        cluster.start()
    except ClusterError as exc:
        raise bl.BenchError(f"the test cluster did not start: {exc}") from None
    try:
        _rounds(cluster, report, iolens, source, runs, files)
    finally:
        cluster.stop()


def _rounds(
    cluster: SlurmCluster, report: bl.Report, iolens: list[str], source: Path, runs: int, files: int
) -> None:
    root = cluster.workdir / "bench"
    root.mkdir()
    prog = root / "site_ranks"
    subprocess.run(["mpicc", "-O2", "-o", str(prog), str(source)], check=True, timeout=120)
    db = root / "iolens.db"
    install = [*iolens, "site", "install", "--slurm", "--log-dir", str(root / "logs"), "--db", str(db),
               "--dir", str(root / "etc")]  # fmt: skip
    r = cluster.run(install, timeout=60)
    if r.returncode != 0:
        raise bl.BenchError(f"iolens site install: {r.stderr.strip()}")
    report.command(install)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith(("TaskProlog=", "Epilog="))]
    results: dict[str, list[dict]] = {v: [] for v in VARIANTS}
    installed = None
    n = 0
    for _, variant in bl.alternating(VARIANTS, runs):
        want = variant != "none"
        if installed != want:
            cluster.reconfigure(lines if want else [])
            installed = want
        n += 1
        bl.progress(f"cluster round {n}: {variant}")
        env = _mpi_env(cluster, **({"IOLENS_PROFILE": "off"} if variant == "opted out" else {}))
        results[variant].append(_job(cluster, root, prog, files, n, env))
    cluster.reconfigure()
    log = (root / "logs" / "iolens-epilog.log").read_text() if (root / "logs").exists() else ""
    said = {
        m.group(1): (m.group(2), float(m.group(3))) for m in map(EPILOG_SECONDS.search, log.splitlines()) if m
    }
    for job in results["profiled"]:
        what, seconds = said.get(job["id"], ("no line", float("nan")))
        job["epilog"] = seconds
        job["outcome"] = what.split(":")[0]
    left = sorted(p.name for p in (root / "logs" / "spool").iterdir())
    _section(report, results, runs, files, left)


def _section(
    report: bl.Report, results: dict[str, list[dict]], runs: int, files: int, left: list[str]
) -> None:
    rows = []
    for field, label in (("start", "start: submit to the script's first line"),
                         ("run", "run: the script (mpirun of 4 ranks)"),
                         ("end", "end: the script's end to the job's (Epilogs)"),
                         ("held", "run + end: the script's start to the job's end"),
                         ("total", "total: submit to the job's end")):  # fmt: skip
        row: list[object] = [label]
        for v in VARIANTS:
            xs = [j[field] for j in results[v]]
            row.append(f"{bl.median(xs):.3f} s ({bl.spread(xs)})")
        rows.append(row)
    ep = [j["epilog"] for j in results["profiled"]]
    rows.append(
        ["Epilog first node, as iolens logs it", "-", "-", f"{bl.median(ep):.3f} s ({bl.spread(ep)})"]
    )
    med = {v: bl.median([j["total"] for j in results[v]]) for v in VARIANTS}
    held = {v: bl.median([j["held"] for j in results[v]]) for v in VARIANTS}
    ends = {v: bl.median([j["end"] for j in results[v]]) for v in VARIANTS}
    starts = {v: bl.median([j["start"] for j in results[v]]) for v in VARIANTS}
    report.section(
        f"Real Slurm cluster: 2 nodes x 2 ranks (tests/cluster), {files:,} files of 4096 B per rank, "
        f"median of {runs} rounds",
        bl.table(["step", "no site integration", "installed, opted out", "profiled"], rows),
    )
    outcomes = sorted({j["outcome"] for j in results["profiled"]})
    report.add(
        f"\nProfiled vs no integration: run + end {held['profiled'] - held['none']:+.3f} s "
        f"({(held['profiled'] / held['none'] - 1) * 100:+.0f}%), "
        f"total {med['profiled'] - med['none']:+.3f} s, "
        f"at the start {starts['profiled'] - starts['none']:+.3f} s, "
        f"at the end {ends['profiled'] - ends['none']:+.3f} s.\n"
        f"Opted out vs none: run + end {held['opted out'] - held['none']:+.3f} s.\n"
        f"Epilog outcomes (first node): {', '.join(outcomes)}; "
        f"job directories left in the spool: {len(left)}."
    )
    report.add(f"1-minute load average after the cluster rounds: {os.getloadavg()[0]:.2f}")
