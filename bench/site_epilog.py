#!/usr/bin/env python3
"""The site integration's cost on a job (docs/site.md, "Installing for a center"): what the TaskProlog, the
profiler and the Epilog add to a job of 2 nodes x 2 ranks that writes 1,000 files per rank, and the
Epilog's time to reduce and store it.

Each round runs, alternating, the job without the profiler (IOLENS_PROFILE=off: the TaskProlog says nothing,
the Epilog finds no directory) and with it: `iolens site install`'s TaskProlog as each task's would be run,
tests/data/site/site_ranks.c under mpirun -np 4 (the ranks of both "nodes" on this host), then the Epilog
script as slurmd runs it on the second node (it marks its end) and on the first (it waits for nothing more,
reduces the job's logs, stores the profile and its facts in a SQLite file, or --db, and removes the logs).
Figures: medians of the rounds (min-max), and their ratios.

    python3 bench/site_epilog.py                 # writes bench/results/site_epilog.txt
    python3 bench/site_epilog.py --quick         # 1 round of 100 files per rank, prints only
    python3 bench/site_epilog.py --cluster       # then the same job on a real two-node Slurm cluster
    python3 bench/site_epilog.py --cluster-only  # only that (bench/site_epilog_cluster.py; root, Slurm)
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import benchlib as bl

DATA = bl.REPO_DIR / "tests" / "data" / "site"
RANKS = 4
FILE_BYTES = 4096
EPILOG_LINE = re.compile(r"job (\S+): ([a-z ]+?)(?::| \()")


def _iolens() -> list[str]:
    venv = bl.REPO_DIR / ".venv" / "bin" / "iolens"
    return [str(venv)] if venv.is_file() else [sys.executable, "-m", "iolens"]


def _slurm_env(job_id: str, node: str, conf: Path) -> dict[str, str]:
    """The variables of a real Slurm 22.05 Epilog (tests/data/site/epilog-env.txt), for this job."""
    env = dict(ln.split("=", 1) for ln in (DATA / "epilog-env.txt").read_text().splitlines() if "=" in ln)
    env.update(SLURM_CONF=str(conf), SLURM_JOB_ID=job_id, SLURM_JOBID=job_id, SLURM_NODELIST="benchn[1-2]",
               SLURMD_NODENAME=node,
               SLURM_JOB_NUM_NODES="2", SLURM_JOB_NTASKS=str(RANKS), SLURM_JOB_UID=str(os.getuid()),
               SLURM_UID=str(os.getuid()))  # fmt: skip
    return env


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, check=False)
    return time.perf_counter() - t0, r


def one_round(
    etc: Path, prog: Path, scratch: Path, job_id: str, files: int, profiled: bool
) -> dict[str, float]:
    base = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
            "OMPI_MCA_rmaps_base_oversubscribe": "1", "SLURM_JOB_ID": job_id,
            "SLURM_JOB_PARTITION": "batch"}  # fmt: skip
    if not profiled:
        base["IOLENS_PROFILE"] = "off"
    out = scratch / f"out-{job_id}"
    out.mkdir()
    t_prolog, r = _timed(["sh", str(etc / "iolens-task-prolog.sh")], base)
    env = dict(base)
    for line in r.stdout.splitlines():
        if line.startswith("export "):
            k, _, v = line[7:].partition("=")
            env[k] = v
        elif line.startswith("unset "):
            env.pop(line[6:], None)
    forward = [a for k in ("LD_PRELOAD", "IOLENS_PROFILE_DIR") if k in env for a in ("-x", k)]
    t_job, r = _timed(
        ["mpirun", "-np", str(RANKS), *forward, str(prog), str(out), str(files), str(FILE_BYTES)], env
    )
    if r.returncode != 0:
        raise bl.BenchError(f"the job failed (exit status {r.returncode}): {r.stderr[-300:]}")
    path = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    t_epi2, _ = _timed(
        ["sh", str(etc / "iolens-epilog.sh")], {**path, **_slurm_env(job_id, "benchn2", etc / "slurm.conf")}
    )
    t_epi1, _ = _timed(
        ["sh", str(etc / "iolens-epilog.sh")], {**path, **_slurm_env(job_id, "benchn1", etc / "slurm.conf")}
    )
    shutil.rmtree(out)
    return {"prolog": t_prolog, "job": t_job, "epilog_other": t_epi2, "epilog_first": t_epi1,
            "total": t_prolog + t_job + max(t_epi1, t_epi2)}  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    bl.common_args(p)
    p.add_argument(
        "--db", default=None, help="the database URL (default: a SQLite file in the scratch directory)"
    )
    p.add_argument("--files", type=int, default=1000, help="files per rank (default 1000)")
    p.add_argument("--scratch", default="/var/tmp", help="where the logs, files and database go")
    p.add_argument("--cluster", action="store_true", help="also on the test cluster of tests/cluster")
    p.add_argument("--cluster-only", action="store_true", help="only on the test cluster")
    args = p.parse_args()
    runs = args.runs or (1 if args.quick else 5)
    files = 100 if args.quick else args.files
    if shutil.which("mpicc") is None or shutil.which("mpirun") is None:
        raise SystemExit("mpicc and mpirun are needed")
    report = bl.Report(
        "site_epilog", "Site integration: what the TaskProlog, profiler and Epilog add to a job"
    )
    report.header = bl.machine_lines(paths=[Path(args.scratch)])
    if not args.cluster_only:
        single_host(args, report, runs, files)
    if args.cluster or args.cluster_only:
        import site_epilog_cluster

        args.runs, args.files = runs, files
        site_epilog_cluster.run(args, report, _iolens(), DATA / "site_ranks.c")
        report.notes(
            "On the cluster every host is a network namespace of this machine: the nodes share its 2 CPUs, "
            "its kernel and its disk; the log directory and the SQLite database are in the cluster's work "
            "directory (ext4 under /var/tmp), which every node sees as a parallel file system would be seen.",
            "The Epilog asks the controller (`scontrol show job`) as installed (ask_controller = yes).",
        )
    report.emit(args.out, args.quick)
    return 0


def single_host(args: argparse.Namespace, report: bl.Report, runs: int, files: int) -> None:
    """The job's ranks on this host, the Epilog scripts run here in turn (no Slurm)."""
    with bl.scratch_dir(Path(args.scratch), "site") as scratch:
        prog = scratch / "site_ranks"
        subprocess.run(["mpicc", "-O2", "-o", str(prog), str(DATA / "site_ranks.c")], check=True)
        etc = scratch / "etc"
        db = args.db or str(scratch / "iolens.db")
        install = [*_iolens(), "site", "install", "--slurm", "--log-dir", str(scratch / "logs"), "--db", db,
                   "--dir", str(etc), "--cluster", "bench"]  # fmt: skip
        subprocess.run(install, check=True, capture_output=True)
        # No controller here: a real Epilog adds one `scontrol show job` (an RPC answered from memory).
        conf = (etc / "iolens-site.conf").read_text().replace("ask_controller = yes", "ask_controller = no")
        (etc / "iolens-site.conf").write_text(conf)
        # What a node has: enough of slurm.conf for the Epilog's `scontrol show hostnames`.
        (etc / "slurm.conf").write_text("ClusterName=bench\nSlurmctldHost=localhost\nNodeName=benchn[1-2]\n")
        report.command(install)
        rounds: dict[bool, list[dict[str, float]]] = {False: [], True: []}
        n = 0
        for _, tool in bl.alternating(["plain", "profiled"], runs):
            n += 1
            profiled = tool == "profiled"
            bl.progress(f"round {n}: {tool}")
            rounds[profiled].append(one_round(etc, prog, scratch, str(90000 + n), files, profiled))
        log = (scratch / "logs" / "iolens-epilog.log").read_text() if (scratch / "logs").exists() else ""
        outcomes = [m.group(2) for m in map(EPILOG_LINE.search, log.splitlines()) if m]
        left = sorted(x.name for x in (scratch / "logs" / "spool").iterdir())
    med = {k: {f: bl.median([r[f] for r in v]) for f in v[0]} for k, v in rounds.items()}
    rows = []
    for field, label in (("prolog", "TaskProlog (one task)"), ("job", "mpirun (the job itself)"),
                         ("epilog_other", "Epilog, second node (marks its end)"),
                         ("epilog_first", "Epilog, first node (reduce + store + remove)"),
                         ("total", "job + TaskProlog + Epilog")):  # fmt: skip
        a = [r[field] for r in rounds[False]]
        b = [r[field] for r in rounds[True]]
        rows.append([label, f"{bl.median(a):.3f} s ({bl.spread(a)})",
                     f"{bl.median(b):.3f} s ({bl.spread(b)})",
                     f"{bl.ratio(bl.median(b), bl.median(a)):.2f}"])  # fmt: skip
    report.section(
        f"2 nodes x 2 ranks (all on this host), {files:,} files of {FILE_BYTES} B per rank, "
        f"median of {runs} rounds",
        bl.table(["step", "without the profiler", "with the profiler", "ratio"], rows),
    )
    added = med[True]["total"] - med[False]["total"]
    report.add(f"\nAdded to the job's wall time by the site integration: {added:.3f} s "
               f"({added / med[False]['total'] * 100:.0f}% of {med[False]['total']:.3f} s).")  # fmt: skip
    firsts = sorted(set(o for o in outcomes if o != "not first node"))
    report.add(f"Epilog outcomes (first node): {', '.join(firsts)}; "
               f"job directories left in the spool: {len(left)}")  # fmt: skip
    report.notes(
        "The Epilog's time is measured from outside, as slurmd would see it: sh, Python's start and iolens's "
        "imports included. It is bounded by epilog_timeout_s (5 s by default): past it the store goes on in "
        "the background and the Epilog returns.",
        "The job's 4 ranks run on one host and the Epilog of both nodes runs here in turn; on a real cluster "
        "the second node's Epilog runs at the same time as the first's, on its own node.",
        "Database: " + ("a SQLite file in the scratch directory." if not args.db else "given by --db."),
        "There is no slurmctld here: the Epilog is set not to ask it (ask_controller = no); on a cluster it "
        "adds one `scontrol show job` (at most 2 s when the controller does not answer).",
    )


if __name__ == "__main__":
    bl.main_wrapper(main)
