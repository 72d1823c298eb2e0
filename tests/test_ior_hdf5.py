"""`ior -a HDF5` under a real mpirun with the real parallel HDF5 library: IOR 4's file layout (a dataset
"Dataset-0000.NNNN" of 8-byte integers per segment, -b x ranks long in one file of all
ranks, -b with -F), verify
(-W -R) over independent and collective (-c) transfers, -J alignment and --hdf5.noFill visible in the file,
hints (-U, IOR_HINT__MPI__, -H), a stonewall that stops every rank together, and a file the official IOR
wrote (tests/data/ior4/backends) read back."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from . import hdf5_reader
from .ior_helpers import (
    assert_only_canary_left,
    engine_version,
    io500_exe_and_scores,
    place_canary,
    require_engine_feature,
    run_engine,
    run_mpirun,
)

DATA = Path(__file__).parent / "data" / "ior4" / "backends"
HEADER = Path("/usr/include/hdf5/openmpi/hdf5.h")
KIB = 1024
SIZES = ["-t", "4k", "-b", "16k", "-s", "2"]
XFER, BLOCK, SEGS = 4 * KIB, 16 * KIB, 2


@pytest.fixture
def h5engine(engine: Path, mpi_env: dict[str, str]) -> Path:
    require_engine_feature(engine, "hdf5", HEADER)
    return engine


@pytest.mark.parametrize("np_", [2, 4])
@pytest.mark.parametrize("layout", ["n-to-1", "fpp"])
@pytest.mark.parametrize("mode", ["independent", "collective"])
def test_hdf5_writes_and_reads_back_every_byte(
    h5engine: Path, mpi_env: dict[str, str], tmpfs_dir: Path, np_: int, layout: str, mode: str
) -> None:
    canary = place_canary(tmpfs_dir)
    args = ["-a", "HDF5", *SIZES, "-w", "-r", "-W", "-R", "-e", "-o", str(tmpfs_dir / "d.h5")]
    args += (["-F"] if layout == "fpp" else []) + (["-c"] if mode == "collective" else [])
    res = run_mpirun(h5engine, mpi_env, np_, args)
    assert res.returncode == 0, res.stderr
    doc = res.doc
    assert doc is not None and doc["status"] == "ok"
    assert doc["api"]["transfer"] == mode and doc["api"]["library"].startswith("HDF5 1.")
    expect = np_ * SEGS * BLOCK
    for ph in doc["phases"]:
        assert ph["bytes"] == expect and ph["ops"] == expect // XFER
        assert ph["latency_ns"]["count"] == expect // XFER
        assert ph["verify"]["bytes_checked"] == expect and ph["verify"]["errors"] == 0
    assert_only_canary_left(tmpfs_dir, canary)


@pytest.mark.parametrize("layout", ["n-to-1", "fpp"])
def test_hdf5_file_has_iors_datasets_holding_the_posix_bytes(
    h5engine: Path, mpi_env: dict[str, str], tmpfs_dir: Path, layout: str
) -> None:
    """One dataset per segment, named and shaped as IOR names and shapes them; the datasets, end to end,
    hold exactly the bytes the posix backend writes for the same flags (the same offset -> element map)."""
    fpp = ["-F"] if layout == "fpp" else []
    common = [*SIZES, "-w", "-k", "-G", "77", *fpp]
    res = run_mpirun(h5engine, mpi_env, 2, ["-a", "HDF5", *common, "-o", str(tmpfs_dir / "d.h5")])
    assert res.returncode == 0, res.stderr
    res = run_mpirun(h5engine, mpi_env, 2, ["-a", "POSIX", *common, "-o", str(tmpfs_dir / "p")])
    assert res.returncode == 0, res.stderr
    pairs = [("d.h5", "p")] if not fpp else [(f"d.h5.{r:08d}", f"p.{r:08d}") for r in range(2)]
    elems = BLOCK // 8 * (1 if fpp else 2)
    for h5name, pname in pairs:
        sets = hdf5_reader.datasets(tmpfs_dir / h5name)
        assert [d.name for d in sets] == ["Dataset-0000.0000", "Dataset-0000.0001"]
        assert all(d.dims == (elems,) and d.elem_size == 8 for d in sets)
        assert hdf5_reader.data_bytes(tmpfs_dir / h5name) == (tmpfs_dir / pname).read_bytes()


def test_alignment_and_no_fill_are_in_the_file(
    h5engine: Path, mpi_env: dict[str, str], tmpfs_dir: Path
) -> None:
    """-J A (--hdf5.setAlignment) places every dataset of A bytes or more at a multiple of A (HDF5's
    threshold = alignment, as IOR sets it); without it the first one starts right after the metadata.
    --hdf5.noFill makes the datasets never filled; by default HDF5's "if set"."""
    base = ["-a", "HDF5", *SIZES, "-w", "-k"]
    res = run_mpirun(h5engine, mpi_env, 2, [*base, "-o", str(tmpfs_dir / "plain.h5")])
    assert res.returncode == 0, res.stderr
    args = [*base, "-J", "8k", "--hdf5.noFill", "--hdf5.collectiveMetadata", "-o", str(tmpfs_dir / "al.h5")]
    res = run_mpirun(h5engine, mpi_env, 2, args)
    assert res.returncode == 0, res.stderr
    plain, aligned = hdf5_reader.datasets(tmpfs_dir / "plain.h5"), hdf5_reader.datasets(tmpfs_dir / "al.h5")
    assert any(d.offset % 8192 for d in plain)
    assert all(d.offset % 8192 == 0 for d in aligned)
    assert {d.fill_time for d in plain} == {"ifset"} and {d.fill_time for d in aligned} == {"never"}
    assert res.doc is not None and res.doc["api"]["alignment"] == 8192 and res.doc["api"]["no_fill"] is True


def test_a_damaged_byte_fails_the_hdf5_read_check(
    h5engine: Path, mpi_env: dict[str, str], tmpfs_dir: Path
) -> None:
    path = tmpfs_dir / "d.h5"
    res = run_mpirun(h5engine, mpi_env, 2, ["-a", "HDF5", *SIZES, "-w", "-k", "-o", str(path)])
    assert res.returncode == 0, res.stderr
    second = hdf5_reader.datasets(path)[1]  # segment 1: logical offsets from 2 x BLOCK
    raw = bytearray(path.read_bytes())
    raw[second.offset + BLOCK + 40] ^= 0xFF  # rank 1's block of segment 1
    path.write_bytes(bytes(raw))
    res = run_mpirun(h5engine, mpi_env, 2, ["-a", "HDF5", *SIZES, "-r", "-R", "-E", "-k", "-o", str(path)])
    assert res.returncode == 1
    assert res.doc is not None
    v = res.doc["phases"][0]["verify"]
    assert v["errors"] == 1 and v["first_bad_offset"] == 2 * BLOCK + BLOCK + 40 and v["first_bad_rank"] == 1


def test_a_stonewall_stops_every_rank_of_one_n_to_1_file_together(
    h5engine: Path, mpi_env: dict[str, str], disk_dir: Path
) -> None:
    """Each segment's dataset is created collectively at its first transfer: at the -D deadline the ranks
    stop after the same transfer (one that stopped alone would leave the others in H5Dcreate), and what
    they wrote reads back intact."""
    args = [
        "-a",
        "HDF5",
        "-t",
        "64k",
        "-b",
        "256k",
        "-s",
        "100000",
        "-D",
        "1",
        "-w",
        "-W",
        "-o",
        str(disk_dir / "s"),
    ]
    res = run_mpirun(h5engine, mpi_env, 2, args)
    assert res.returncode == 0, res.stderr
    assert res.doc is not None
    sw = res.doc["phases"][0]["stonewall"]
    assert sw["hit"] and sw["pairs_min"] == sw["pairs_max"] > 0
    v = res.doc["phases"][0]["verify"]
    assert v["errors"] == 0 and v["bytes_checked"] == res.doc["phases"][0]["bytes"]


def test_hints_reach_hdf5_and_show_as_iors_lines(
    h5engine: Path, mpi_env: dict[str, str], tmpfs_dir: Path
) -> None:
    hints = tmpfs_dir / "hints"
    hints.write_text("IOR_HINT__MPI__romio_cb_write=enable\n")
    env = dict(mpi_env, IOR_HINT__MPI__cb_buffer_size="1048576")
    launcher = ["mpirun", "--oversubscribe", "-x", "IOR_HINT__MPI__cb_buffer_size", "-np", "2"]
    args = ["-a", "HDF5", *SIZES, "-w", "--hdf5.showHints", "--hdf5.hintsFileName", str(hints)]
    res = run_engine(
        h5engine, [*args, "-o", str(tmpfs_dir / "d.h5")], launcher=launcher, env=env, quiet=False
    )
    assert res.returncode == 0, res.stderr
    assert "hints passed to access property list {" in res.stdout
    assert "\tromio_cb_write = enable\n" in res.stdout and "\tcb_buffer_size = 1048576\n" in res.stdout
    assert res.doc is not None
    assert res.doc["api"]["hints_passed"] == {"cb_buffer_size": "1048576", "romio_cb_write": "enable"}
    assert res.doc["api"]["hints"]["romio_cb_write"] == "enable"  # as MPI-IO reports it for the open file


def test_reads_a_file_the_official_ior_wrote(
    h5engine: Path, mpi_env: dict[str, str], tmpfs_dir: Path
) -> None:
    """tests/data/ior4/backends/hdf5-np2.h5 (IOR 4.0.0, -a HDF5 -t 1k -b 2k -s 2, 2 ranks): its layout is
    the one iolens writes, its datasets hold the bytes IOR's POSIX backend wrote for the same flags
    (posix-np2.dat), and iolens reads it with the same flags."""
    path = tmpfs_dir / "ior.h5"
    shutil.copy(DATA / "hdf5-np2.h5", path)
    sets = hdf5_reader.datasets(path)
    assert [(d.name, d.dims, d.elem_size) for d in sets] == [
        ("Dataset-0000.0000", (512,), 8),
        ("Dataset-0000.0001", (512,), 8),
    ]
    assert hdf5_reader.data_bytes(path) == (DATA / "posix-np2.dat").read_bytes()
    res = run_mpirun(
        h5engine,
        mpi_env,
        2,
        ["-a", "HDF5", "-t", "1k", "-b", "2k", "-s", "2", "-r", "-E", "-k", "-o", str(path)],
    )
    assert res.returncode == 0, res.stderr
    assert res.doc is not None and res.doc["phases"][0]["bytes"] == 8192


def test_ior_data_in_an_hdf5_file_passes_the_read_check(
    h5engine: Path, mpi_env: dict[str, str], tmpfs_dir: Path
) -> None:
    path = tmpfs_dir / "ior.h5"
    shutil.copy(DATA / "hdf5-np2.h5", path)
    args = [
        "-a",
        "HDF5",
        "-t",
        "1k",
        "-b",
        "2k",
        "-s",
        "2",
        "-G",
        "1234",
        "-r",
        "-R",
        "-E",
        "-k",
        "-o",
        str(path),
    ]
    res = run_mpirun(h5engine, mpi_env, 2, args)
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["-a", "HDF5", "-z"], "-z"),
        (["-a", "HDF5", "--hdf5.individualDataSets"], "--hdf5.individualDataSets"),
        (["-a", "POSIX", "--hdf5.noFill"], "--hdf5.noFill"),
        (["-a", "POSIX", "-J", "4k"], "-J"),
        (["-a", "POSIX", "--hdf5.collectiveMetadata"], "--hdf5.collectiveMetadata"),
        (["-a", "HDF5", "--posix.odirect"], "--posix.odirect"),
        (["-a", "HDF5", "-r", "-s", "-1"], "-s"),
    ],
)
def test_hdf5_settings_that_cannot_apply_exit_2(
    h5engine: Path, mpi_env: dict[str, str], tmpfs_dir: Path, args: list[str], named: str
) -> None:
    res = run_mpirun(h5engine, mpi_env, 2, [*args, "-o", str(tmpfs_dir / "f")])
    assert res.returncode == 2
    assert named in res.stderr
    assert list(tmpfs_dir.iterdir()) == []


def test_local_ranks_refuse_hdf5(h5engine: Path, tmpfs_dir: Path) -> None:
    res = run_engine(h5engine, ["-a", "HDF5", "-o", str(tmpfs_dir / "f")], np=2)
    assert res.returncode == 2
    assert "-a HDF5" in res.stderr and "MPI" in res.stderr
    assert list(tmpfs_dir.iterdir()) == []


def test_the_engine_says_whether_it_has_hdf5(engine: Path) -> None:
    out = engine_version(engine)
    assert "hdf5=yes" in out or "hdf5=no" in out
    assert "pnetcdf=yes" in out or "pnetcdf=no" in out


@pytest.mark.parametrize("api", ["HDF5", "NCMPI"])
def test_an_engine_built_without_the_library_refuses_it(api: str, tmp_path: Path) -> None:
    nompi = Path(__file__).parent.parent / "build" / "native-nompi" / "iolens-bench"
    if not nompi.exists():
        pytest.skip("no engine built without MPI here (make native builds build/native-nompi)")
    res = run_engine(nompi, ["-a", api, "-o", str(tmp_path / "f")], np=2)
    assert res.returncode == 2
    assert res.stderr.startswith(f"iolens-bench: error: -a {api}: this backend needs MPI and ")
    assert "was built without them" in res.stderr and res.stderr.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_iolens_runs_hdf5_with_a_launcher(
    h5engine: Path, iolens_bin: list[str], mpi_env: dict[str, str], tmp_path: Path
) -> None:
    """Through the front end: the run, its -H blocks (IOR's HDF5 titles, from the document), the cleanup."""
    canary = place_canary(tmp_path)
    args = ["-a", "HDF5", "-c", "--hdf5.showHints", *SIZES, "-w", "-W", "-R", "-o", str(tmp_path / "d.h5")]
    launched = [*iolens_bin, "ior", "--launcher", "mpirun", "--np", "2", "--launcher-args", "--oversubscribe"]
    out = subprocess.run([*launched, *args], capture_output=True, text=True, env=mpi_env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "hints passed to access property list {" in out.stdout
    assert "hints returned from opened file {" in out.stdout
    assert " HDF5      0\n" in out.stdout  # the summary's API and RefNum columns, as IOR writes them
    assert_only_canary_left(tmp_path, canary)


IO500_HDF5_INI = """\
[global]
datadir = {root}/datafiles
timestamp-datadir = FALSE
resultdir = {root}/results
timestamp-resultdir = FALSE
api = POSIX

[ior-easy]
API = HDF5 --hdf5.collectiveMetadata
transferSize = 1m
blockSize = 4m

[ior-rnd4K-easy-read]
run = FALSE

[mdtest-easy]
n = 200

[ior-hard]
API = NCMPI --ncmpi.showHints
segmentCount = 100
collective = TRUE

[mdtest-hard]
n = 200
"""


def test_io500_runs_ior_phases_through_hdf5_and_ncmpi(
    h5engine: Path, iolens_bin: list[str], mpi_env: dict[str, str], tmp_path: Path
) -> None:
    """The ini's API of ior-easy / ior-hard may be any IOR backend iolens has, with its module options, as the
    app passes them to IOR; the phases move their bytes through that library."""
    cfg = tmp_path / "io500.ini"
    cfg.write_text(IO500_HDF5_INI.format(root=tmp_path))
    cmd = [*iolens_bin, "io500", str(cfg), "--quick", "--np", "2", "--launcher", "mpirun"]
    out = subprocess.run(
        [*cmd, "--launcher-args", "--oversubscribe"],
        capture_output=True, text=True, env=mpi_env, check=False, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    exe, score = io500_exe_and_scores(tmp_path / "results" / "result.txt")
    assert "-a HDF5 --hdf5.collectiveMetadata -O saveRankPerformanceDetailsCSV=" in exe["ior-easy-write"]
    assert " -w -c -D 2 -a NCMPI --ncmpi.showHints" in exe["ior-hard-write"]
    for name in ("ior-easy-write", "ior-hard-write", "ior-easy-read", "ior-hard-read"):
        assert float(score[name]) > 0, name
    assert not (tmp_path / "datafiles" / "ior-easy").exists() or not any(
        (tmp_path / "datafiles").rglob("*.*")
    )

    # An option of another module is refused before any I/O, naming the line.
    ini = IO500_HDF5_INI.format(root=tmp_path)
    cfg.write_text(
        IO500_HDF5_INI.format(root=tmp_path).replace("--hdf5.collectiveMetadata", "--mpiio.preallocate")
    )
    shutil.rmtree(tmp_path / "results")
    bad = subprocess.run(
        [*cmd, "--launcher-args", "--oversubscribe"],
        capture_output=True, text=True, env=mpi_env, check=False, timeout=120,
    )  # fmt: skip
    assert bad.returncode == 2 and "API option '--mpiio.preallocate' is not supported with HDF5" in bad.stderr
    # ior-rnd4K-easy-read's random reads cannot go through a library's data sets: refused before any I/O.
    cfg.write_text(ini.replace("[ior-rnd4K-easy-read]\nrun = FALSE\n", ""))
    bad = subprocess.run(
        [*cmd, "--launcher-args", "--oversubscribe"],
        capture_output=True, text=True, env=mpi_env, check=False, timeout=120,
    )  # fmt: skip
    assert bad.returncode == 2 and "ior-rnd4K-easy-read reads random 4 KiB transfers" in bad.stderr
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())
