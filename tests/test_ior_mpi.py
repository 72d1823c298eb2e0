"""Real MPI runs (Open MPI's mpirun) move exactly what local runs move, and produce the same document."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from .ior_helpers import assert_only_canary_left, place_canary, run_engine

pytestmark = pytest.mark.skipif(shutil.which("mpirun") is None, reason="Open MPI is not installed")


def _engine_has_mpi(engine: Path) -> bool:
    out = subprocess.run([str(engine), "--version"], capture_output=True, text=True).stdout
    return "mpi=yes" in out


def _shape(doc: dict) -> list[tuple]:
    return [
        (
            p["name"],
            p["iteration"],
            p["bytes"],
            p["ops"],
            [r["bytes"] for r in p["per_rank"]],
            p["verify"]["errors"] if p["verify"] else None,
            p["latency_ns"]["count"],
        )
        for p in doc["phases"]
    ]


@pytest.mark.parametrize("np_", [2, 4])
@pytest.mark.parametrize("layout", ["fpp", "shared"])
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
    mpi = run_engine(engine, args, launcher=["mpirun", "-np", str(np_), "--oversubscribe"], env=mpi_env)
    assert local.returncode == 0, local.stderr
    assert mpi.returncode == 0, mpi.stderr
    assert local.doc["comm"]["kind"] == "local" and mpi.doc["comm"]["kind"] == "mpi"
    assert mpi.doc["comm"]["ranks"] == np_ == local.doc["comm"]["ranks"]
    assert mpi.doc["comm"]["max_clock_offset_ns"] == 0  # one host: one clock
    assert _shape(mpi.doc) == _shape(local.doc)
    assert mpi.doc["config"] == local.doc["config"]
    assert set(mpi.doc) == set(local.doc)
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
        launcher=["mpirun", "-np", "4", "--oversubscribe"],
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
        launcher=["mpirun", "-np", "2", "--oversubscribe"],
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
