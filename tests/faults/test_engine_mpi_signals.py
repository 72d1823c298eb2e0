"""Signals under mpirun: Open MPI's mpirun passes SIGINT, SIGTERM and SIGHUP on to the ranks as SIGTERM (one
second after it got the signal) and kills them one second later. In that second every rank stops, the
document is written (marked interrupted) and the run's files are removed; what a large run cannot remove in
time is recorded as pending in the document, and a later cleanup run (mdtest -r) removes it with any --np."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from ..conftest import REPO
from ..ior_helpers import place_canary


@pytest.fixture(scope="module")
def mpi_engine(engine: Path) -> Path:
    """An engine built with MPI: the installed one, else the build tree's (make native builds it)."""
    for candidate in (engine, REPO / "build" / "native" / "iolens-bench"):
        if candidate.is_file():
            out = subprocess.run([str(candidate), "--version"], capture_output=True, text=True).stdout
            if "mpi=yes" in out:
                return candidate
    pytest.skip("no engine built with MPI")


def _mpirun(mpi_env: dict[str, str], engine: Path, workload: str, args: list[str]) -> subprocess.Popen[str]:
    cmd = ["mpirun", "--oversubscribe", "-np", "2", str(engine), workload, "--comm", "mpi", "--quiet", *args]
    return subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        env=mpi_env,
        start_new_session=True,
    )


def _sixty_seconds_of(workload: str, d: Path, fio_size: str) -> list[str]:
    """A write by ior or fio in 4 KiB pieces into d that goes on for 60 s unless stopped."""
    return {
        "ior": ["-F", "-t", "4k", "-b", "8g", "-w", "-D", "60", "-o", str(d / "f")],
        "fio": ["--name=j", f"--directory={d}", "--rw=randwrite", "--bs=4k", f"--size={fio_size}",
                "--time_based", "--runtime=60"],
    }[workload]  # fmt: skip


@pytest.mark.mpi
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
@pytest.mark.parametrize("workload", ["ior", "fio"])
def test_signal_to_mpirun_stops_cleans_up_and_documents(
    mpi_engine: Path, mpi_env: dict[str, str], tmpfs_dir: Path, workload: str, sig: signal.Signals
) -> None:
    canary = place_canary(tmpfs_dir)
    doc_path = tmpfs_dir.parent / f"{tmpfs_dir.name}-doc.json"
    args = _sixty_seconds_of(workload, tmpfs_dir, fio_size="128m")
    proc = _mpirun(mpi_env, mpi_engine, workload, ["--json", str(doc_path), *args])
    try:
        time.sleep(3)
        assert proc.poll() is None, proc.communicate()
        sent = time.monotonic()
        os.kill(proc.pid, sig)
        _, err = proc.communicate(timeout=30)
        took = time.monotonic() - sent
        doc = json.loads(doc_path.read_text())
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        doc_path.unlink(missing_ok=True)
    assert took < 10
    assert proc.returncode != 0 and "Traceback" not in err
    assert doc["status"] == "failed"
    # The ranks see the launcher's SIGTERM, whatever mpirun itself received.
    assert doc["interrupted"]["signal"] == "SIGTERM" and doc["interrupted"]["phase"] == doc["error"]["phase"]
    assert doc["cleanup"]["state"] == "done"
    assert [p.name for p in tmpfs_dir.iterdir()] == [canary.name]


@pytest.mark.mpi
def test_mdtest_cut_short_under_mpirun_is_finished_by_a_remove_run(
    mpi_engine: Path, mpi_env: dict[str, str], tmpfs_dir: Path
) -> None:
    canary = place_canary(tmpfs_dir)
    doc_path = tmpfs_dir.parent / f"{tmpfs_dir.name}-doc.json"
    # Files of 3901 bytes (IO500's mdtest-hard): slow enough to be inside the create phase after 2 s.
    shape = ["-F", "-n", "400000", "-w", "3901", "-u", "-d", str(tmpfs_dir / "md")]
    proc = _mpirun(mpi_env, mpi_engine, "mdtest", ["--json", str(doc_path), "-C", *shape])
    try:
        time.sleep(2)
        assert proc.poll() is None, proc.communicate()
        os.kill(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
        doc = json.loads(doc_path.read_text())
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        doc_path.unlink(missing_ok=True)
    assert doc["status"] == "failed" and doc["interrupted"]["phase"] == "file-create"
    cut = [p for p in doc["phases"] if p["cut_short"]]
    assert len(cut) == 1 and cut[0]["items"] > 0
    # Within mpirun's second the cleanup may not finish: the document says whether it did.
    assert doc["cleanup"]["state"] in ("pending", "done")
    rm = subprocess.run([str(mpi_engine), "mdtest", "--np", "3", "--quiet", "-r", *shape],
                        capture_output=True, text=True, timeout=300)  # fmt: skip
    if doc["cleanup"]["state"] == "pending":
        assert rm.returncode == 0, rm.stderr
    assert [p.name for p in tmpfs_dir.iterdir()] == [canary.name]


def _rank_pids(engine: Path) -> dict[int, int]:
    """The engine's MPI ranks on this machine: rank -> pid (from each process's OMPI_COMM_WORLD_RANK)."""
    ranks: dict[int, int] = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if str(engine).encode() not in (proc / "cmdline").read_bytes():
                continue
            env = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        for var in env:
            if var.startswith(b"OMPI_COMM_WORLD_RANK="):
                ranks[int(var.split(b"=", 1)[1])] = int(proc.name)
    return ranks


@pytest.mark.mpi
@pytest.mark.parametrize("workload", ["ior", "fio"])
def test_signal_to_one_mpi_rank_alone_stops_every_rank(
    mpi_engine: Path, mpi_env: dict[str, str], tmpfs_dir: Path, workload: str
) -> None:
    """kill -TERM of one rank's process: the rank passes the signal on to the others through MPI, so they
    stop within seconds instead of at the end of their 60 s phase."""
    doc_path = tmpfs_dir.parent / f"{tmpfs_dir.name}-doc.json"
    args = _sixty_seconds_of(workload, tmpfs_dir, fio_size="64m")
    proc = _mpirun(mpi_env, mpi_engine, workload, ["--json", str(doc_path), *args])
    try:
        time.sleep(2.5)
        ranks = _rank_pids(mpi_engine)
        assert sorted(ranks) == [0, 1], ranks
        sent = time.monotonic()
        os.kill(ranks[1], signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        took = time.monotonic() - sent
        doc = json.loads(doc_path.read_text())
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        doc_path.unlink(missing_ok=True)
    assert took < 10, took
    assert doc["status"] == "failed" and doc["interrupted"]["signal"] == "SIGTERM"
    assert doc["cleanup"]["state"] == "done"
    assert list(tmpfs_dir.iterdir()) == []
