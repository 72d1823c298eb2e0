"""Real MPI runs (Open MPI's mpirun) move exactly what local runs move, and produce the same document."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from iolens import results

from .ior_helpers import assert_only_canary_left, place_canary, run_engine

MPIRUN = ["mpirun", "--oversubscribe", "-np"]


def _engine_has_mpi(engine: Path) -> bool:
    out = subprocess.run([str(engine), "--version"], capture_output=True, text=True).stdout
    return "mpi=yes" in out


def _key_paths(value: Any, prefix: str = "") -> set[str]:
    """Every key path of a document ("phases[].latency_ns.p50"), so two documents can be compared whole."""
    if isinstance(value, dict):
        paths = set()
        for k, v in value.items():
            paths |= {f"{prefix}.{k}".lstrip(".")} | _key_paths(v, f"{prefix}.{k}")
        return paths
    if isinstance(value, list):
        return set().union(*(_key_paths(v, f"{prefix}[]") for v in value)) if value else set()
    return set()


def _counts(doc: dict) -> list[dict]:
    """What a phase moved, exactly: the figures that must not depend on the communicator."""
    return [
        {
            "phase": (p["name"], p["iteration"]),
            "bytes": p["bytes"],
            "ops": p["ops"],
            "per_rank": [(r["rank"], r["bytes"], r["ops"]) for r in p["per_rank"]],
            "verify": p["verify"] and (p["verify"]["bytes_checked"], p["verify"]["errors"]),
            "latency_count": p["latency_ns"]["count"],
            "cache": p["cache"],
            "fsync": p["fsync"],
        }
        for p in doc["phases"]
    ]


@pytest.mark.parametrize("np_", [2, 4])
@pytest.mark.parametrize("layout", ["fpp", "n-to-1"])
def test_mpirun_moves_the_same_bytes_as_local(
    engine: Path, mpi_env: dict[str, str], tmpfs_dir: Path, np_: int, layout: str
) -> None:
    if not _engine_has_mpi(engine):
        pytest.fail("the engine was built without MPI although mpirun is installed")
    canary = place_canary(tmpfs_dir)
    args = ["-t", "32k", "-b", "512k", "-s", "2", "-w", "-r", "-W", "-R", "-o", str(tmpfs_dir / "m")]
    if layout == "fpp":
        args.append("-F")
    local = run_engine(engine, args, np=np_)
    mpi = run_engine(engine, args, launcher=[*MPIRUN, str(np_)], env=mpi_env)
    assert local.returncode == 0, local.stderr
    assert mpi.returncode == 0, mpi.stderr
    assert local.doc["comm"]["kind"] == "local" and mpi.doc["comm"]["kind"] == "mpi"
    assert mpi.doc["comm"]["ranks"] == np_ == local.doc["comm"]["ranks"]
    assert mpi.doc["comm"]["max_clock_offset_ns"] == 0  # one host: one clock
    # Every phase moved exactly the same, per rank, and was checked the same.
    assert _counts(mpi.doc) == _counts(local.doc)
    per_rank = 2 * 512 * 1024
    for phase in _counts(mpi.doc):
        assert phase["bytes"] == np_ * per_rank
        assert phase["per_rank"] == [(r, per_rank, per_rank // (32 * 1024)) for r in range(np_)]
        assert phase["verify"] == (np_ * per_rank, 0)
    assert [(s["name"], s["bytes"]) for s in mpi.doc["summary"]] == [
        (s["name"], s["bytes"]) for s in local.doc["summary"]
    ]
    # The target is the same; its file system's free space (target.capacity) is of the moment.
    same_target = [{k: v for k, v in d["target"].items() if k != "capacity"} for d in (mpi.doc, local.doc)]
    assert mpi.doc["config"] == local.doc["config"] and same_target[0] == same_target[1]
    # The same document shape, key by key all the way down.
    assert _key_paths(mpi.doc) == _key_paths(local.doc)
    assert_only_canary_left(tmpfs_dir, canary)


def test_mpi_stonewall_wear_out_equal_counts(engine: Path, mpi_env: dict[str, str], tmpfs_dir: Path) -> None:
    canary = place_canary(tmpfs_dir)
    res = run_engine(
        engine,
        [
            "-F",
            "-t",
            "4k",
            "-b",
            "4g",
            "-w",
            "-D",
            "1",
            "-O",
            "stoneWallingWearOut=1",
            "-o",
            str(tmpfs_dir / "s"),
        ],
        launcher=[*MPIRUN, "4"],
        env=mpi_env,
    )
    assert res.returncode == 0, res.stderr
    ph = res.doc["phases"][0]
    assert ph["stonewall"]["hit"]
    assert {r["ops"] for r in ph["per_rank"]} == {ph["stonewall"]["pairs_max"]}
    assert ph["bytes"] == 4 * ph["stonewall"]["pairs_max"] * 4096
    assert_only_canary_left(tmpfs_dir, canary)


def test_mpi_bad_option_is_one_message(engine: Path, mpi_env: dict[str, str], tmpfs_dir: Path) -> None:
    res = run_engine(
        engine,
        ["-t", "4k", "-b", "10k", "-o", str(tmpfs_dir / "f")],
        launcher=[*MPIRUN, "2"],
        env=mpi_env,
    )
    assert res.returncode == 2
    assert res.stderr.count("iolens-bench: error: -b") == 1
    assert list(tmpfs_dir.iterdir()) == []


def test_cli_runs_under_mpirun(
    iolens_bin: list[str], mpi_env: dict[str, str], tmpfs_dir: Path, tmp_path: Path
) -> None:
    canary = place_canary(tmpfs_dir)
    out = tmp_path / "doc.json"
    proc = subprocess.run(
        [
            *iolens_bin,
            "ior",
            "--launcher",
            "mpirun",
            "--np",
            "2",
            "--launcher-args",
            "--oversubscribe",
            "--json",
            str(out),
            "--no-live",
            "-F",
            "-t",
            "64k",
            "-b",
            "1m",
            "-w",
            "-r",
            "-o",
            str(tmpfs_dir / "c"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=mpi_env,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["comm"]["kind"] == "mpi" and doc["comm"]["ranks"] == 2
    assert [p["bytes"] for p in doc["phases"]] == [2 * 1024 * 1024] * 2
    assert "write" in proc.stdout and "read" in proc.stdout
    assert_only_canary_left(tmpfs_dir, canary)


def test_clocks_of_other_nodes_are_aligned_before_ranks_are_compared(
    engine: Path, mpi_env: dict[str, str], tmpfs_dir: Path
) -> None:
    # Two "nodes" (the engine's test hooks): rank 1's clock runs 3 s ahead of rank 0's. The alignment must
    # measure that offset, and the phase's first-start/last-end figures must come out as without the skew.
    skew_ns = 3_000_000_000
    env = dict(mpi_env, IOLENS_TEST_HOST="node-a,node-b", IOLENS_TEST_CLOCK_SKEW_NS=f",{skew_ns}")
    args = ["-F", "-t", "64k", "-b", "1m", "-w", "-r", "-o", str(tmpfs_dir / "clk")]
    res = run_engine(engine, args, launcher=[*MPIRUN, "2"], env=env)
    assert res.returncode == 0, res.stderr
    comm = res.doc["comm"]
    assert (comm["nodes"], comm["tasks_per_node"]) == (2, 1)
    assert comm["placement"] == [
        {"host": "node-a", "first_rank": 0, "ranks": 1},
        {"host": "node-b", "first_rank": 1, "ranks": 1},
    ]
    assert abs(comm["max_clock_offset_ns"] - skew_ns) < 50_000_000, comm
    for phase in res.doc["phases"]:
        # Uncorrected, rank 1's ends would lie 3 s after rank 0's starts.
        assert phase["times"]["total_s"] < 1.0, phase["times"]
        assert phase["times"]["xfer_s"] >= max(r["xfer_s"] for r in phase["per_rank"])
    assert list(tmpfs_dir.iterdir()) == []


def _rank_pid(marker: str, rank: int) -> int | None:
    """The pid of the engine process of MPI rank `rank` whose command line holds `marker`."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            env = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(marker.encode() in a for a in argv) and f"OMPI_COMM_WORLD_RANK={rank}".encode() in env:
            if any(a.endswith(b"iolens-bench") for a in argv):
                return int(entry.name)
    return None


def test_cli_writes_a_failed_document_when_a_rank_dies_under_mpirun(
    iolens_bin: list[str], mpi_env: dict[str, str], tmpfs_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "doc.json"
    target = tmpfs_dir / "crash"
    # A write that would go on for 60 s (the -D deadline); rank 1 is killed as soon as it writes.
    cmd = [*iolens_bin, "ior", "--launcher", "mpirun", "--np", "2", "--launcher-args", "--oversubscribe",
           "--json", str(out), "--no-live", "-F", "-t", "4k", "-b", "8g", "-w", "-D", "60",
           "-O", "stoneWallingWearOut=1", "-o", str(target)]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=mpi_env)
    try:
        deadline = time.monotonic() + 60
        pid = None
        while time.monotonic() < deadline and proc.poll() is None:
            pid = _rank_pid(str(target), 1)
            if pid is not None and Path(f"{target}.00000001").exists():
                break
            time.sleep(0.05)
        assert pid is not None, "rank 1 never started writing"
        os.kill(pid, signal.SIGKILL)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, stderr
    # mpirun's own report of the dead rank comes first (passed through), then iolens's one line.
    ours = [line for line in stderr.splitlines() if line.startswith("iolens: error: ")]
    assert len(ours) == 1 and "wrote no result document" in ours[0], stderr
    doc = json.loads(out.read_text())
    assert doc["status"] == "failed" and doc["workload"] == "ior"
    assert "mpirun" in doc["error"]["message"] and "no result document" in doc["error"]["message"]
    assert doc["comm"] == {"kind": "mpi", "ranks": 2}
    assert doc["phases"] == []
    assert results.parse(doc).status == "failed"
    # The ranks were killed before they could clean up: their files and ledger are left for --remove-only.
    rm = run_engine(
        Path(doc["engine_command"][doc["engine_command"].index("ior") - 1]),
        ["-F", "--remove-only", "-o", str(target)],
        np=2,
    )
    assert rm.returncode == 0, rm.stderr
    assert list(tmpfs_dir.iterdir()) == []
