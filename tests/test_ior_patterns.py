"""IOR's data packets (-l / dataPacketType, -G) byte for byte: files the official IOR 4 wrote
(tests/data/ior4/patterns, README there) pass iolens's -R, and iolens writes the same bytes; with the official
binary present, also against a fresh IOR run (skipped when it is absent)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from .ior_helpers import run_engine

DATA = Path(__file__).parent / "data" / "ior4" / "patterns"
TYPES = ("timestamp", "offset", "incompressible", "random")
OFFICIAL_IOR = Path(os.environ.get("IOLENS_OFFICIAL_IOR", "/var/tmp/iolens-peers/ior-4.0.0/bin/ior"))
SHARED = ["-t", "8k", "-b", "8k", "-s", "1", "-G", "-7"]


@pytest.mark.parametrize("packet", TYPES)
def test_iolens_writes_the_bytes_ior_wrote(engine: Path, tmpfs_dir: Path, packet: str) -> None:
    out = tmpfs_dir / "mine"
    r = run_engine(engine, [*SHARED, "-l", packet, "-w", "-k", "-o", str(out)], np=2)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == (DATA / f"{packet}.G-7.np2.t8k").read_bytes()
    assert r.doc is not None and r.doc["ior_flags"]["data_packet_type"] == packet


@pytest.mark.parametrize("packet", TYPES)
def test_iolens_check_read_accepts_ior_files_and_refuses_another_signature(
    engine: Path, tmpfs_dir: Path, packet: str
) -> None:
    target = tmpfs_dir / "ior-file"
    shutil.copyfile(DATA / f"{packet}.G-7.np2.t8k", target)
    good = run_engine(engine, [*SHARED, "-l", packet, "-r", "-R", "-k", "-o", str(target)], np=2)
    assert good.returncode == 0, good.stderr
    v = good.doc["phases"][0]["verify"]
    assert v["errors"] == 0 and v["bytes_checked"] == 16384
    other = [a if a != "-7" else "-8" for a in SHARED]
    bad = run_engine(engine, [*other, "-l", packet, "-r", "-R", "-k", "-o", str(target)], np=2)
    assert bad.returncode == 1
    assert bad.doc["phases"][0]["verify"]["errors"] > 0


def test_the_default_packet_is_iors_timestamp(engine: Path, tmpfs_dir: Path) -> None:
    out = tmpfs_dir / "default"
    r = run_engine(engine, [*SHARED, "-w", "-k", "-o", str(out)], np=2)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == (DATA / "timestamp.G-7.np2.t8k").read_bytes()


def test_file_per_process_packets_match_per_rank(engine: Path, tmpfs_dir: Path) -> None:
    out = tmpfs_dir / "fpp"
    args = ["-F", "-t", "8k", "-b", "16k", "-G", "1234567", "-l", "o", "-w", "-k", "-o", str(out)]
    r = run_engine(engine, args, np=2)
    assert r.returncode == 0, r.stderr
    for rank in (0, 1):
        name = f".{rank:08d}"
        assert Path(f"{out}{name}").read_bytes() == (DATA / f"offset.G1234567.F.t8k{name}").read_bytes()


def test_a_packet_read_with_another_transfer_size_fails_but_iolens_pattern_passes(
    engine: Path, tmpfs_dir: Path
) -> None:
    # IOR's packets are laid out per transfer: reading them back needs the writer's -t. iolens's own pattern
    # (-l iolens) is laid out per file offset and checks at any transfer size.
    for packet, expect in (("offset", 1), ("iolens", 0)):
        out = tmpfs_dir / packet
        w = run_engine(engine, ["-t", "8k", "-b", "32k", "-l", packet, "-w", "-k", "-o", str(out)], np=1)
        assert w.returncode == 0, w.stderr
        r = run_engine(engine, ["-t", "4k", "-b", "32k", "-l", packet, "-r", "-R", "-o", str(out)], np=1)
        assert r.returncode == expect, r.stderr


def test_an_unknown_packet_type_is_refused(engine: Path, tmpfs_dir: Path) -> None:
    r = run_engine(engine, ["-l", "zebra", "-w", "-o", str(tmpfs_dir / "x")], np=1)
    assert r.returncode == 2 and "-l: 'zebra'" in r.stderr
    assert list(tmpfs_dir.iterdir()) == []


def _official_ior(mpi_env: dict[str, str]) -> Path:
    if not OFFICIAL_IOR.is_file():
        pytest.skip(f"the official IOR is not built at {OFFICIAL_IOR} (bench/build_ior.sh)")
    return OFFICIAL_IOR


@pytest.mark.parametrize("packet", TYPES)
def test_fresh_official_ior_files_and_iolens_files_are_interchangeable(
    engine: Path, tmpfs_dir: Path, mpi_env: dict[str, str], packet: str
) -> None:
    ior = _official_ior(mpi_env)
    args = ["-F", "-t", "16k", "-b", "32k", "-s", "2", "-G", "424242", "-l", packet, "-k"]
    theirs, mine = tmpfs_dir / "theirs", tmpfs_dir / "mine"
    cmd = ["mpirun", "-np", "2", str(ior), "-a", "POSIX", *args, "-w", "-o", str(theirs)]
    subprocess.run(cmd, env=mpi_env, capture_output=True, text=True, timeout=120, check=True)
    r = run_engine(engine, [*args, "-w", "-o", str(mine)], np=2)
    assert r.returncode == 0, r.stderr
    for rank in (0, 1):
        assert Path(f"{mine}.{rank:08d}").read_bytes() == Path(f"{theirs}.{rank:08d}").read_bytes()
    # The official IOR's own check accepts iolens's files.
    check = subprocess.run(
        ["mpirun", "-np", "2", str(ior), "-a", "POSIX", *args, "-r", "-R", "-o", str(mine)],
        env=mpi_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert check.returncode == 0 and "Incorrect data" not in check.stdout, check.stdout
