"""A node of the test cluster lost in the middle of an iolens run (cut off the network, then every process on
it killed, as a power failure would): the run ends with a clear error within a bound, never hangs, and the
document it leaves is marked failed, with what the monitor kept and the lost node's stream marked cut short.
Slurm notices after SlurmdTimeout (tests/cluster/slurm.py); the rest of the bound is iolens's."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.cluster.jobs import BatchJob, batch, cluster_env, iolens_on_two_nodes, load
from tests.cluster.slurm import SLURMD_TIMEOUT_S, SlurmCluster

# Ranks sleep this long before their write phase (IOR's -d): the node is lost while they wait.
DELAY_S = 60
# Slurm's detection (SlurmdTimeout and its ping interval), then iolens's own bounds: on srun
# (iolens/lost_node.py: 15 s, SIGTERM, 15 s, SIGKILL) or, in a batch job, on its engine after Slurm's SIGTERM
# (interrupt.ESCALATE_AFTER_S: 20 s, inside Slurm's KillWait of 30 s).
BOUND_S = 3 * SLURMD_TIMEOUT_S + 90


def delayed_ior(work: Path) -> list[str]:
    return ["-w", "-d", str(DELAY_S), "-F", "-t", "64k", "-b", "1m", "-o", str(work / "f")]


def wait_for_streams(tmp: Path, count: int, timeout: float = 60) -> None:
    """Until every node's monitor stream has its header and a sample: every node's ranks have started
    (bounded). (A stream lost before its header is written is left out of the document.)"""
    deadline = time.monotonic() + timeout
    while sum(_lines(p) >= 2 for p in tmp.glob("iolens-*/monitor-nodes/monitor-*.jsonl")) < count:
        assert time.monotonic() < deadline, "the ranks did not start on both nodes"
        time.sleep(0.2)


def _lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except OSError:
        return 0


def test_a_node_lost_under_srun_ends_the_run_with_an_error_and_a_failed_document(
    slurm_cluster: SlurmCluster, mpi_env: dict[str, str], cluster_work: Path
) -> None:
    work = cluster_work
    env = cluster_env(slurm_cluster, mpi_env, IOLENS_TMPDIR=str(work / "tmp"))
    cmd = iolens_on_two_nodes("ior", "srun", work / "ior.json", "--", *delayed_ior(work))
    with open(work / "stderr.txt", "w+") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=work)
        try:
            wait_for_streams(work / "tmp", 2)
            lost_at = time.monotonic()
            slurm_cluster.crash_node("node2")
            try:
                rc = proc.wait(timeout=BOUND_S)
            except subprocess.TimeoutExpired:
                pytest.fail(f"iolens still running {BOUND_S} s after node2 was lost")
            took = time.monotonic() - lost_at
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)
            slurm_cluster.restore_node("node2")
        err.seek(0)
        stderr = err.read()
    assert rc == 1, stderr
    assert took < DELAY_S  # ended by the failure, not by the ranks' delay running out
    assert "Node failure on node2" in stderr
    assert "iolens: error: " in stderr and "wrote no result document" in stderr
    doc = load(work / "ior.json")
    assert doc["status"] == "failed" and "wrote no result document" in doc["error"]["message"]
    nodes = doc["monitor"]["nodes"]
    # Both streams kept; node2's cut short (node1's too when Slurm killed its ranks before they could end it).
    assert sorted(nodes) == ["node1", "node2"] and not nodes["node2"]["complete"], nodes
    assert list((work / "tmp").iterdir()) == []


def test_a_node_lost_under_mpirun_in_a_batch_job_ends_the_job_and_the_run(
    slurm_cluster: SlurmCluster, mpi_env: dict[str, str], cluster_work: Path
) -> None:
    work = cluster_work
    # Inside a batch job slurmctld ends the whole job when a node fails: iolens gets SIGTERM, stops mpirun,
    # and leaves a failed document marked interrupted, all within Slurm's KillWait.
    env = cluster_env(slurm_cluster, mpi_env, IOLENS_TMPDIR=str(work / "tmp"))
    cmd = " ".join(iolens_on_two_nodes("ior", "mpirun", work / "ior.json", "--", *delayed_ior(work)))
    # The script outlives the SIGTERM (a handler, not an ignored signal: iolens would inherit that) to say
    # how iolens ended: the job may leave the queue before its last processes have.
    script = f"trap 'echo script: SIGTERM' TERM\n{cmd} &\nwait $!; wait $!\necho \"iolens exit status $?\"\n"
    out = work / "job.out"
    job_args = ["-N", "2", "--ntasks-per-node=2"]
    t0 = time.monotonic()
    try:
        result: list[BatchJob] = []
        runner = threading.Thread(
            target=lambda: result.append(batch(slurm_cluster, script, job_args, env, out, BOUND_S + 60))
        )
        runner.start()
        wait_for_streams(work / "tmp", 2)
        slurm_cluster.crash_node("node2")
        runner.join(timeout=BOUND_S + 90)
        assert result, "the batch job did not end"
    finally:
        slurm_cluster.restore_node("node2")
    job = result[0]
    assert job.state == "NODE_FAIL", job.output
    deadline = time.monotonic() + 60
    while "iolens exit status" not in (text := out.read_text()) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert time.monotonic() - t0 < DELAY_S + BOUND_S
    assert "DUE TO NODE FAILURE" in text
    assert "iolens: error: stopped by SIGTERM" in text and "iolens exit status 143" in text, text
    doc = load(work / "ior.json")
    assert doc["status"] == "failed" and doc["interrupted"]["signal"] == "SIGTERM"
