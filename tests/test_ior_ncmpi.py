"""`ior -a NCMPI` under a real mpirun with the real PnetCDF library: IOR 4's file (CDF-5, one record
variable data_var[segments_times_np][number_of_transfers][transfer_size] of bytes, records segment x ranks
+ rank), verify over independent and collective transfers, and a file the official IOR wrote read back."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .ior_helpers import (
    assert_only_canary_left,
    place_canary,
    require_engine_feature,
    run_engine,
    run_mpirun,
)

DATA = Path(__file__).parent / "data" / "ior4" / "backends"
HEADER = Path("/usr/include/pnetcdf.h")
KIB = 1024
SIZES = ["-t", "4k", "-b", "16k", "-s", "2"]
XFER, BLOCK, SEGS = 4 * KIB, 16 * KIB, 2
NAMES = [b"segments_times_np", b"number_of_transfers", b"transfer_size", b"data_var"]


@pytest.fixture
def ncengine(engine: Path, mpi_env: dict[str, str]) -> Path:
    require_engine_feature(engine, "pnetcdf", HEADER)
    return engine


def assert_iors_layout(path: Path, data: bytes) -> None:
    """A CDF-5 file whose header names IOR's dimensions and variable, followed by exactly `data`."""
    raw = path.read_bytes()
    assert raw[:4] == b"CDF\x05"
    header = raw[: len(raw) - len(data)]
    assert all(name in header for name in NAMES)
    assert raw[len(header) :] == data


@pytest.mark.parametrize("np_", [2, 4])
@pytest.mark.parametrize("mode", ["independent", "collective"])
def test_ncmpi_writes_and_reads_back_every_byte(
    ncengine: Path, mpi_env: dict[str, str], tmpfs_dir: Path, np_: int, mode: str
) -> None:
    canary = place_canary(tmpfs_dir)
    args = ["-a", "NCMPI", *SIZES, "-w", "-r", "-W", "-R", "-e", "-o", str(tmpfs_dir / "d.nc")]
    res = run_mpirun(ncengine, mpi_env, np_, args + (["-c"] if mode == "collective" else []))
    assert res.returncode == 0, res.stderr
    doc = res.doc
    assert doc is not None and doc["status"] == "ok" and doc["api"]["transfer"] == mode
    expect = np_ * SEGS * BLOCK
    for ph in doc["phases"]:
        assert ph["bytes"] == expect and ph["ops"] == expect // XFER
        assert ph["verify"]["bytes_checked"] == expect and ph["verify"]["errors"] == 0
    assert_only_canary_left(tmpfs_dir, canary)


def test_ncmpi_file_holds_the_posix_bytes_in_iors_variable(
    ncengine: Path, mpi_env: dict[str, str], tmpfs_dir: Path
) -> None:
    common = [*SIZES, "-w", "-k", "-G", "5"]
    for api, name in [("NCMPI", "d.nc"), ("POSIX", "p")]:
        res = run_mpirun(ncengine, mpi_env, 2, ["-a", api, *common, "-o", str(tmpfs_dir / name)])
        assert res.returncode == 0, res.stderr
    assert_iors_layout(tmpfs_dir / "d.nc", (tmpfs_dir / "p").read_bytes())


def test_a_damaged_byte_fails_the_ncmpi_read_check(
    ncengine: Path, mpi_env: dict[str, str], tmpfs_dir: Path
) -> None:
    path = tmpfs_dir / "d.nc"
    res = run_mpirun(ncengine, mpi_env, 2, ["-a", "NCMPI", *SIZES, "-w", "-k", "-o", str(path)])
    assert res.returncode == 0, res.stderr
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 0xFF  # the last byte of rank 1's last block
    path.write_bytes(bytes(raw))
    res = run_mpirun(ncengine, mpi_env, 2, ["-a", "NCMPI", *SIZES, "-r", "-R", "-k", "-o", str(path)])
    assert res.returncode == 1
    assert res.doc is not None
    v = res.doc["phases"][0]["verify"]
    assert v["errors"] == 1 and v["first_bad_offset"] == 2 * SEGS * BLOCK - 1 and v["first_bad_rank"] == 1


def test_reads_a_file_the_official_ior_wrote(
    ncengine: Path, mpi_env: dict[str, str], tmpfs_dir: Path
) -> None:
    """tests/data/ior4/backends/ncmpi-np2.nc (IOR 4.0.0, -a NCMPI -t 1k -b 2k -s 2, 2 ranks) holds the bytes
    IOR's POSIX backend wrote for the same flags, in iolens's layout, and iolens reads it."""
    path = tmpfs_dir / "ior.nc"
    shutil.copy(DATA / "ncmpi-np2.nc", path)
    assert_iors_layout(path, (DATA / "posix-np2.dat").read_bytes())
    res = run_mpirun(
        ncengine, mpi_env, 2, ["-a", "NCMPI", "-t", "1k", "-b", "2k", "-s", "2", "-r", "-k", "-o", str(path)]
    )
    assert res.returncode == 0, res.stderr
    assert res.doc is not None and res.doc["phases"][0]["bytes"] == 8192


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["-a", "NCMPI", "-F"], "-F"),
        (["-a", "NCMPI", "-z"], "-z"),
        (["-a", "NCMPI", "--ncmpi.preallocate"], "-p"),
        (["-a", "NCMPI", "--ncmpi.useFileView"], "-V"),
    ],
)
def test_ncmpi_settings_that_cannot_apply_exit_2(
    ncengine: Path, mpi_env: dict[str, str], tmpfs_dir: Path, args: list[str], named: str
) -> None:
    res = run_mpirun(ncengine, mpi_env, 2, [*args, "-o", str(tmpfs_dir / "f")])
    assert res.returncode == 2
    assert named in res.stderr
    assert list(tmpfs_dir.iterdir()) == []


def test_local_ranks_refuse_ncmpi(ncengine: Path, tmpfs_dir: Path) -> None:
    res = run_engine(ncengine, ["-a", "NCMPI", "-o", str(tmpfs_dir / "f")], np=2)
    assert res.returncode == 2 and "-a NCMPI" in res.stderr
    assert list(tmpfs_dir.iterdir()) == []


def test_reordered_reads_read_the_other_ranks_records(
    ncengine: Path, mpi_env: dict[str, str], tmpfs_dir: Path
) -> None:
    """-C: each rank reads (and checks) the data of the next rank, from that rank's records (IOR's NCMPI
    would read its own records there, a documented difference)."""
    args = [
        "-a",
        "NCMPI",
        *SIZES,
        "-w",
        "-r",
        "-R",
        "-C",
        "--tasks-per-node",
        "1",
        "-o",
        str(tmpfs_dir / "d.nc"),
    ]
    res = run_mpirun(ncengine, mpi_env, 2, args)
    assert res.returncode == 0, res.stderr
    assert res.doc is not None and res.doc["target"]["read_rank_shift"] == 1
    v = res.doc["phases"][1]["verify"]
    assert v["bytes_checked"] == 2 * SEGS * BLOCK and v["errors"] == 0
