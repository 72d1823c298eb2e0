"""`ior -a MMAP`, IOR's MMAP backend: the file is mapped and transfers are memory copies. Checked by their
effects: every byte written through the mapping is in the file (the posix backend reads it back), files
have IOR's size (-b x -s x ranks, also each file of -F), a damaged byte fails the read check, fsync is
msync, and the options IOR's MMAP takes are accepted with it and refused without it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from .ior_helpers import assert_only_canary_left, place_canary, run_engine

KIB = 1024
NP, XFER, BLOCK, SEGS = 2, 16 * KIB, 256 * KIB, 2
SIZES = ["-t", "16k", "-b", "256k", "-s", str(SEGS)]


@pytest.fixture(params=["tmpfs", "disk"])
def any_dir(request: pytest.FixtureRequest, tmpfs_dir: Path, disk_dir: Path) -> Path:
    return tmpfs_dir if request.param == "tmpfs" else disk_dir


@pytest.mark.parametrize("layout", ["fpp", "n-to-1"])
@pytest.mark.parametrize("qd", [1, 8])
def test_mmap_writes_and_reads_back_every_byte(engine: Path, any_dir: Path, layout: str, qd: int) -> None:
    canary = place_canary(any_dir)
    args = ["-a", "MMAP", *SIZES, "-w", "-r", "-W", "-R", "-e", "--queue-depth", str(qd)]
    args += ["-o", str(any_dir / "data")] + (["-F"] if layout == "fpp" else [])
    res = run_engine(engine, args, np=NP)
    assert res.returncode == 0, res.stderr
    doc = res.doc
    assert doc is not None and doc["status"] == "ok"
    expect = NP * SEGS * BLOCK
    assert [ph["name"] for ph in doc["phases"]] == ["write", "read"]
    for ph in doc["phases"]:
        assert ph["bytes"] == expect and ph["ops"] == expect // XFER
        assert ph["latency_ns"]["count"] == expect // XFER
        assert ph["verify"]["bytes_checked"] == expect and ph["verify"]["errors"] == 0
    assert_only_canary_left(any_dir, canary)


@pytest.mark.parametrize("layout", ["fpp", "n-to-1"])
def test_mmap_files_have_iors_size_and_hold_the_data(engine: Path, disk_dir: Path, layout: str) -> None:
    """IOR's MMAP grows every file it creates to the aggregate size (-b x -s x ranks), each file of -F too
    (the tail is a hole), and maps it whole. The data went to the file, not only to memory: the posix
    backend reads it back and checks every byte after -Y's per-write msync."""
    fpp = ["-F"] if layout == "fpp" else []
    path = disk_dir / "data"
    res = run_engine(engine, ["-a", "MMAP", *SIZES, "-w", "-Y", "-k", *fpp, "-o", str(path)], np=NP)
    assert res.returncode == 0, res.stderr
    files = sorted(disk_dir.glob("data*"))
    assert len(files) == (NP if fpp else 1)
    assert all(f.stat().st_size == NP * SEGS * BLOCK for f in files)
    back = run_engine(engine, ["-a", "posix", *SIZES, "-r", "-R", "-E", "-k", *fpp, "-o", str(path)], np=NP)
    assert back.returncode == 0, back.stderr
    assert back.doc is not None
    assert back.doc["phases"][0]["verify"]["bytes_checked"] == NP * SEGS * BLOCK
    assert back.doc["phases"][0]["verify"]["errors"] == 0


def test_a_damaged_byte_fails_the_mmap_read_check(engine: Path, tmpfs_dir: Path) -> None:
    path = tmpfs_dir / "data"
    res = run_engine(engine, ["-a", "MMAP", *SIZES, "-w", "-k", "-o", str(path)], np=NP)
    assert res.returncode == 0, res.stderr
    with path.open("r+b") as f:
        f.seek(BLOCK + 100)  # rank 1's first block
        byte = f.read(1)
        f.seek(BLOCK + 100)
        f.write(bytes([byte[0] ^ 0xFF]))
    res = run_engine(engine, ["-a", "MMAP", *SIZES, "-r", "-R", "-E", "-k", "-o", str(path)], np=NP)
    assert res.returncode == 1
    assert res.doc is not None
    v = res.doc["phases"][0]["verify"]
    assert v["errors"] == 1 and v["first_bad_offset"] == BLOCK + 100 and v["first_bad_rank"] == 1


def test_a_read_past_the_end_of_a_short_file_fails_cleanly(engine: Path, tmpfs_dir: Path) -> None:
    """A mapping is only as long as the file: a read past its end is short (as pread), not a SIGBUS."""
    path = tmpfs_dir / "data"
    res = run_engine(engine, ["-a", "MMAP", "-t", "16k", "-b", "64k", "-w", "-k", "-o", str(path)], np=1)
    assert res.returncode == 0, res.stderr
    longer = ["-a", "MMAP", "-t", "16k", "-b", "128k", "-r", "-E", "-k", "-o", str(path)]
    res = run_engine(engine, longer, np=1)
    assert res.returncode == 1
    assert "moved 0 of 16384 bytes" in res.stderr


@pytest.mark.parametrize("opt", ["--mmap.madv_dont_need", "--mmap.madv_pattern"])
def test_iors_mmap_options_run_with_mmap(engine: Path, tmpfs_dir: Path, opt: str) -> None:
    canary = place_canary(tmpfs_dir)
    args = ["-a", "mmap", *SIZES, "-w", "-r", "-R", "-z", opt, "-o", str(tmpfs_dir / "data")]
    res = run_engine(engine, args, np=NP)
    assert res.returncode == 0, res.stderr
    assert res.doc is not None and res.doc["phases"][1]["verify"]["errors"] == 0
    assert_only_canary_left(tmpfs_dir, canary)


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["-a", "posix", "--mmap.madv_pattern"], "--mmap.madv_pattern"),
        (["-a", "posix", "--mmap.madv_dont_need"], "--mmap.madv_dont_need"),
        (["-a", "MMAP", "--posix.odirect"], "--posix.odirect"),
    ],
)
def test_mmap_options_that_cannot_apply_exit_2(
    engine: Path, tmpfs_dir: Path, args: list[str], named: str
) -> None:
    res = run_engine(engine, [*args, "-o", str(tmpfs_dir / "f")], np=1)
    assert res.returncode == 2
    assert named in res.stderr and res.stderr.count("\n") == 1
    assert list(tmpfs_dir.iterdir()) == []


def test_mmap_through_the_local_launcher(iolens_bin: list[str], tmpfs_dir: Path) -> None:
    canary = place_canary(tmpfs_dir)
    cmd = [*iolens_bin, "ior", "--np", "2", "-a", "MMAP", *SIZES, "-w", "-r", "-W", "-R", "-F"]
    proc = subprocess.run([*cmd, "-o", str(tmpfs_dir / "data")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert_only_canary_left(tmpfs_dir, canary)


def test_mmap_stonewall_with_wear_out(engine: Path, tmpfs_dir: Path) -> None:
    """-D stops each rank at the deadline; wear-out brings every rank to the largest count; the check pass
    reads back exactly what was written. 8-byte transfers make the 512 MiB per rank outlast the deadline
    (the file is sparse past what was written)."""
    args = ["-a", "MMAP", "-t", "8", "-b", "512m", "-D", "1", "-O", "stoneWallingWearOut=1", "-w", "-W", "-F"]
    res = run_engine(engine, [*args, "-o", str(tmpfs_dir / "f")], np=NP)
    assert res.returncode == 0, res.stderr
    assert res.doc is not None
    ph = res.doc["phases"][0]
    sw = ph["stonewall"]
    assert sw["hit"] and 0 < sw["pairs_max"] < 512 * 1024 * 1024 // 8
    assert ph["bytes"] == NP * sw["pairs_max"] * 8  # every rank wore out to the largest count
    assert ph["verify"]["bytes_checked"] == ph["bytes"] and ph["verify"]["errors"] == 0


def test_mdtest_refuses_mmap_as_iors_mdtest_does(engine: Path, tmpfs_dir: Path) -> None:
    res = run_engine(
        engine, ["-a", "MMAP", "-n", "4", "-w", "100", "-d", str(tmpfs_dir / "t")], workload="mdtest"
    )
    assert res.returncode == 2
    assert "-a MMAP" in res.stderr and "mdtest" in res.stderr
    assert list(tmpfs_dir.iterdir()) == []
