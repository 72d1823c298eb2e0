"""iolens on a real Slurm cluster of two nodes (tests/cluster: each node its own network, host name and /tmp):
an MPI program under srun and sbatch, and ior, mdtest and io500 launched by srun from the login host and by
mpirun inside a batch job, with each rank on the node iolens says, every node sampled by --monitor, and the
clock offset between the nodes measured."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

from tests.cluster.jobs import batch, cluster_env, hello_program, iolens_on_two_nodes, load
from tests.cluster.slurm import SlurmCluster
from tests.db_helpers import TINY_IO500

NODES = ["node1", "node2"]
# The engine's test hook: ranks 2 and 3 (node2) read a clock 2 s ahead; the measured offset must find it.
SKEW_NS = 2_000_000_000
TWO_BY_TWO = ["-N", "2", "--ntasks-per-node=2"]  # sbatch: an allocation of 2 nodes, 2 tasks on each


def run(
    cmd: list[str], env: dict[str, str], work: Path, timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cmd, capture_output=True, text=True, env=env, cwd=work, timeout=timeout, check=False
    )


def ior_args(work: Path) -> list[str]:
    return ["-w", "-r", "-F", "-t", "64k", "-b", "1m", "-o", str(work / "f")]


def check_placement(doc: dict) -> None:
    """Rank 0 on node1, 2 ranks on each node, and the engine's document says which rank ran where."""
    assert doc["host"]["hostname"] == "node1"
    assert doc["comm"]["nodes"] == 2 and doc["comm"]["tasks_per_node"] == 2
    assert doc["comm"]["placement"] == [
        {"host": "node1", "first_rank": 0, "ranks": 2},
        {"host": "node2", "first_rank": 2, "ranks": 2},
    ]


def check_two_nodes(doc: dict) -> None:
    """The ranks placed as check_placement says, and each node's own monitor stream, complete."""
    assert doc["status"] == "ok", doc.get("error")
    if doc["workload"] == "io500":  # the run's document has no placement: each phase's has (checked there)
        assert doc["host"]["hostname"] == "node1" and doc["comm"]["nodes"] == 2
    else:
        check_placement(doc)
    nodes = doc["monitor"]["nodes"]
    assert sorted(nodes) == NODES
    for name, node in nodes.items():
        assert node["host"] == name and node["complete"], node
        assert node["local_rank"]["value"] == 0
        # One stream per launch: io500's are tagged with their phase (monitor-node1-ior-easy-write.jsonl).
        stream = rf"monitor-{name}(-[\w-]+)?\.jsonl"
        assert node["files"] and all(re.fullmatch(stream, f) for f in node["files"])


def test_an_mpi_program_runs_on_both_nodes_under_srun_and_sbatch(
    slurm_cluster: SlurmCluster, mpi_env: dict[str, str], cluster_work: Path
) -> None:
    work = cluster_work
    env = cluster_env(slurm_cluster, mpi_env)
    exe = hello_program(slurm_cluster)
    expected = [("0", "node1"), ("1", "node1"), ("2", "node2"), ("3", "node2")]
    r = slurm_cluster.run(["srun", "-N", "2", "--ntasks-per-node=2", str(exe)], env=env, timeout=60)
    assert r.returncode == 0, r.stderr + slurm_cluster.logs()
    assert sorted(re.findall(r"rank (\d) of 4 on (\S+) sum 6", r.stdout)) == expected
    job = batch(slurm_cluster, f"hostname\nsrun {exe}\n", TWO_BY_TWO, env, work / "job.out")
    assert (job.state, job.exit_code) == ("COMPLETED", "0:0"), job.output
    assert job.output.startswith("node1\n")  # the batch script runs on the first node
    assert sorted(re.findall(r"rank (\d) of 4 on (\S+) sum 6", job.output)) == expected
    # (sacct's NodeList of a cluster's first jobs can name node1 alone: the node count is the fact.)
    nnodes = slurm_cluster.run(["sacct", "-n", "-X", "-P", "-j", job.job_id, "-o", "NNodes"], env=env)
    assert nnodes.stdout.strip() == "2"


def test_ior_under_srun_spreads_the_ranks_samples_each_node_and_measures_the_clock_offset(
    slurm_cluster: SlurmCluster, mpi_env: dict[str, str], cluster_work: Path
) -> None:
    work = cluster_work
    skew = f"0,0,{SKEW_NS},{SKEW_NS}"
    env = cluster_env(slurm_cluster, mpi_env, IOLENS_TMPDIR=str(work / "tmp"), IOLENS_TEST_CLOCK_SKEW_NS=skew)
    r = run(iolens_on_two_nodes("ior", "srun", work / "ior.json", "--", *ior_args(work)), env, work)
    assert r.returncode == 0, r.stderr
    doc = load(work / "ior.json")
    # 2 per node, as mpirun's ppr:2:node (srun -N 2 alone runs 3 and 1 on nodes of 4 CPUs).
    check_two_nodes(doc)
    assert re.search(r"^clients per node\s*: 2$", r.stdout, re.M)
    assert abs(doc["comm"]["max_clock_offset_ns"] - SKEW_NS) < SKEW_NS / 4
    # Phase times are on rank 0's clock: a 2 s skew left in would show in them.
    for phase in doc["summary"]:
        assert phase["time_mean_s"] < 1.0, phase
    # Nothing of the run is left in the temporary directory.
    assert list((work / "tmp").iterdir()) == []


def test_ior_under_mpirun_in_a_batch_job_runs_on_both_nodes(
    slurm_cluster: SlurmCluster, mpi_env: dict[str, str], cluster_work: Path
) -> None:
    work = cluster_work
    # mpirun finds the allocation's nodes from Slurm and starts its daemons there through srun: no ssh.
    env = cluster_env(slurm_cluster, mpi_env, IOLENS_TMPDIR=str(work / "tmp"))
    cmd = iolens_on_two_nodes("ior", "mpirun", work / "ior.json", "--", *ior_args(work))
    job = batch(slurm_cluster, " ".join(cmd) + "\n", TWO_BY_TWO, env, work / "job.out")
    assert (job.state, job.exit_code) == ("COMPLETED", "0:0"), job.output
    doc = load(work / "ior.json")
    check_two_nodes(doc)
    assert doc["monitor"]["host"] == "node1"  # iolens itself ran in the batch script, on the first node
    assert 0 < doc["comm"]["max_clock_offset_ns"] < 1_000_000_000  # measured; one machine's clock underneath


def test_mdtest_under_srun_runs_on_both_nodes(
    slurm_cluster: SlurmCluster, mpi_env: dict[str, str], cluster_work: Path
) -> None:
    work = cluster_work
    env = cluster_env(slurm_cluster, mpi_env, IOLENS_TMPDIR=str(work / "tmp"))
    md = ["--", "-n", "20", "-d", str(work / "md")]
    r = run(iolens_on_two_nodes("mdtest", "srun", work / "md.json", *md), env, work)
    assert r.returncode == 0, r.stderr
    doc = load(work / "md.json")
    check_two_nodes(doc)


def test_io500_under_srun_runs_every_phase_on_both_nodes(
    slurm_cluster: SlurmCluster, mpi_env: dict[str, str], cluster_work: Path
) -> None:
    work = cluster_work
    env = cluster_env(slurm_cluster, mpi_env, IOLENS_TMPDIR=str(work / "tmp"))
    cfg = work / "io500.ini"
    cfg.write_text(TINY_IO500.format(root=work), encoding="utf-8")
    r = run(iolens_on_two_nodes("io500", "srun", work / "io500.json", str(cfg)), env, work, timeout=300)
    assert r.returncode == 0, r.stderr
    doc = load(work / "io500.json")
    check_two_nodes(doc)
    phases = doc["io500"]["phases"]
    assert phases and all(p["status"] == "ok" for p in phases if p["name"] != "timestamp"), phases
    for p in phases:
        if p["workload"] in ("ior", "mdtest"):
            check_placement(load(work / "results" / f"{p['name']}.json"))


def test_without_a_tmpdir_every_node_sees_the_error_says_to_set_one(
    slurm_cluster: SlurmCluster, mpi_env: dict[str, str], cluster_work: Path
) -> None:
    work = cluster_work
    # Every node has its own /tmp: rank 0 (node1) writes its document where the login host cannot read it.
    env = cluster_env(slurm_cluster, mpi_env)
    env.pop("IOLENS_TMPDIR", None)
    r = run(iolens_on_two_nodes("ior", "srun", work / "x.json", "--", *ior_args(work)), env, work)
    assert r.returncode == 1
    assert "wrote no result document" in r.stderr and "IOLENS_TMPDIR" in r.stderr
    assert load(work / "x.json")["status"] == "failed"


def test_an_epilog_installed_by_reconfigure_runs_on_every_node_of_a_job(
    slurm_cluster: SlurmCluster, mpi_env: dict[str, str], cluster_work: Path
) -> None:
    # What a site integration relies on (docs/site.md): slurm.conf changed on a running cluster, and the
    # epilog run by each node's slurmd, on that node, with the job's id.
    work = cluster_work
    epilog = work / "epilog.sh"
    epilog.write_text(f'#!/bin/sh\necho "$SLURM_JOB_ID" > {work}/epilog-$(hostname)\n', encoding="utf-8")
    epilog.chmod(0o755)
    env = cluster_env(slurm_cluster, mpi_env)
    slurm_cluster.reconfigure([f"Epilog={epilog}"])
    try:
        job = batch(slurm_cluster, "srun true\n", TWO_BY_TWO, env, work / "job.out")
        assert (job.state, job.exit_code) == ("COMPLETED", "0:0"), job.output
        deadline = time.monotonic() + 30
        while len(list(work.glob("epilog-*"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        ran = {p.name: p.read_text().strip() for p in work.glob("epilog-*")}
        assert ran == {"epilog-node1": job.job_id, "epilog-node2": job.job_id}
    finally:
        slurm_cluster.reconfigure()
    assert "Epilog" not in slurm_cluster.conf.read_text()
