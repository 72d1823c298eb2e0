"""The HDF5 layer of the profiler (native/profiler/wrap_hdf5.c; docs/profile.md, "HDF5"): real programs on the
real HDF5 libraries (tests/data/hdf5): a C program on Debian's libhdf5 (one process), a parallel one under
mpirun (the MPI-IO driver; collective and independent H5Dwrite), and an h5py script (the HDF5 copy inside
h5py's wheel). The H5F and H5D counters must equal what the programs did, the layers beneath (MPI-IO, POSIX)
must still be recorded, and the programs must see the same with and without the runtime.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from iolens.profile.advice import collective_share
from iolens.profile.job import build_job
from iolens.profile.reader import ProcessLog
from iolens.profile.report import job_report
from iolens.profile.stack import stacks

from .conftest import REPO, ProfileBuild
from .test_profile_runtime import logs_in, plain_env, profiled_env, run

DATA = Path(__file__).parent / "data" / "hdf5"
NP = 2


def _pkg_flags(*names: str) -> list[str]:
    for name in names:
        r = subprocess.run(
            ["pkg-config", "--cflags", "--libs", name], capture_output=True, text=True, check=False
        )
        if r.returncode == 0:
            return r.stdout.split()
    pytest.skip(f"no HDF5 pkg-config module ({', '.join(names)})")


def _compile(compiler: str, src: Path, out: Path) -> Path:
    if shutil.which(compiler) is None:
        pytest.skip(f"{compiler} not found")
    flags = _pkg_flags("hdf5-openmpi", "hdf5-mpich", "hdf5-serial", "hdf5")
    r = subprocess.run([compiler, "-O1", "-o", str(out), str(src), *flags], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return out


def _dirs(root: Path) -> tuple[Path, Path, Path]:
    plain, prof, logs = root / "plain", root / "profiled", root / "logs"
    for d in (plain, prof, logs):
        d.mkdir()
    return plain, prof, logs


def _the_log(logs: Path, module: str = "H5F") -> ProcessLog:
    """The one log of the run with records of module (h5py's Python starts helper processes too)."""
    with_it = [log for log in logs_in(logs) if module in log.modules]
    assert len(with_it) == 1, [log.name for log in logs_in(logs)]
    return with_it[0]


def _rec(log: ProcessLog, module: str, name: str) -> dict[str, int]:
    mod = log.modules[module]
    assert name in mod.row_of, (name, mod.paths)
    return mod.counters(mod.row_of[name])


# ---- one process, Debian's libhdf5 ----


@pytest.fixture(scope="module")
def serial_run(
    profile_build: ProfileBuild, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path, subprocess.CompletedProcess[bytes], subprocess.CompletedProcess[bytes], Path]:
    root = tmp_path_factory.mktemp("h5-serial")
    prog = _compile("gcc", DATA / "h5_serial.c", root / "h5_serial")
    plain_dir, prof_dir, logs = _dirs(root)
    plain = run([str(prog), str(plain_dir)], plain_env())
    prof = run([str(prog), str(prof_dir)], profiled_env(profile_build, logs, IOLENS_TRACE="1"))
    return plain_dir, prof_dir, plain, prof, logs


def test_serial_program_sees_the_same(serial_run) -> None:
    plain_dir, prof_dir, plain, prof, _ = serial_run
    assert plain.returncode == 0, plain.stderr.decode()
    assert prof.returncode == 0, prof.stderr.decode()
    assert prof.stdout == plain.stdout and prof.stderr == plain.stderr
    # the error stacks of the two failed calls, as the program printed them
    assert prof.stdout.count(b"HDF5-DIAG: Error detected") == 2
    assert (prof_dir / "s.h5").stat().st_size == (plain_dir / "s.h5").stat().st_size


def test_serial_file_counters(serial_run) -> None:
    _, prof_dir, _, _, logs = serial_run
    log = _the_log(logs)
    path = str(prof_dir / "s.h5")
    f = _rec(log, "H5F", path)
    # H5Fcreate, then H5Fopen read-only; one H5Fflush; two closes; the default (sec2) driver
    assert (f["H5F_OPENS"], f["H5F_CREATES"], f["H5F_OPENS_RDWR"]) == (2, 1, 0)
    assert (f["H5F_FLUSHES"], f["H5F_CLOSES"], f["H5F_USE_MPIIO"], f["H5F_ERRORS"]) == (1, 2, 0, 0)
    assert f["H5F_ALIGNMENT"] == 1  # HDF5's default: no alignment
    assert (
        0 < f["H5F_F_OPEN_START_TIMESTAMP"] <= f["H5F_F_OPEN_END_TIMESTAMP"] <= f["H5F_F_CLOSE_END_TIMESTAMP"]
    )
    assert f["H5F_F_META_TIME"] > 0
    # the POSIX layer beneath: the same path, written by the library
    posix = log.table.counters(log.table.row_of[path])
    assert posix["POSIX_WRITES"] > 0 and posix["POSIX_BYTES_WRITTEN"] >= 160000 + 4000  # the data, once
    # the dataset records are no files of the POSIX layer
    assert not any(":/" in p for p in log.table.paths)


def test_serial_dataset_counters(serial_run) -> None:
    _, prof_dir, _, _, logs = serial_run
    log = _the_log(logs)
    mod = log.modules["H5D"]
    grid = _rec(log, "H5D", f"{prof_dir / 's.h5'}:/grid")
    assert mod.texts[mod.row_of[f"{prof_dir / 's.h5'}:/grid"]]["dataset"] == "/grid"
    # H5Dcreate2, then H5Dopen1 (deprecated); 4 writes: all, a regular hyperslab (10 rows), an irregular one
    # (two 5x5 blocks), 7 points; 2 reads: all, one row (a regular hyperslab); doubles
    want = {
        "H5D_OPENS": 2, "H5D_CREATES": 1, "H5D_CLOSES": 2, "H5D_FLUSHES": 1, "H5D_WRITES": 4, "H5D_READS": 2,
        "H5D_BYTES_WRITTEN": 160000 + 16000 + 400 + 56, "H5D_BYTES_READ": 160000 + 1600,
        "H5D_ALL_SELECTS": 2, "H5D_REGULAR_HYPERSLAB_SELECTS": 2, "H5D_IRREGULAR_HYPERSLAB_SELECTS": 1,
        "H5D_POINT_SELECTS": 1, "H5D_DATASPACE_NDIMS": 2, "H5D_DATASPACE_NPOINTS": 20000,
        "H5D_DATATYPE_SIZE": 8, "H5D_CHUNKED": 1, "H5D_CHUNK_SIZE_D1": 50, "H5D_CHUNK_SIZE_D2": 10,
        "H5D_CHUNK_SIZE_D3": 0, "H5D_USE_DEPRECATED": 1, "H5D_USE_MPIIO_COLLECTIVE": 0, "H5D_COLL_WRITES": 0,
        "H5D_RW_SWITCHES": 1, "H5D_ERRORS": 0,
        "H5D_SIZE_WRITE_AGG_0_100": 1, "H5D_SIZE_WRITE_AGG_100_1K": 1, "H5D_SIZE_WRITE_AGG_10K_100K": 1,
        "H5D_SIZE_WRITE_AGG_100K_1M": 1, "H5D_SIZE_READ_AGG_1K_10K": 1, "H5D_SIZE_READ_AGG_100K_1M": 1,
    }  # fmt: skip
    assert {k: grid[k] for k in want} == want
    tops = {grid[f"H5D_ACCESS{k}_ACCESS"]: grid[f"H5D_ACCESS{k}_COUNT"] for k in range(1, 5)}
    assert tops == {160000: 2, 16000: 1, 400: 1, 56: 1}
    assert 0 < grid["H5D_F_WRITE_START_TIMESTAMP"] <= grid["H5D_F_READ_END_TIMESTAMP"]
    assert grid["H5D_F_WRITE_TIME"] > 0 and grid["H5D_F_READ_TIME"] > 0 and grid["H5D_F_META_TIME"] > 0
    vec = _rec(log, "H5D", f"{prof_dir / 's.h5'}:/g/vec")
    want = {
        "H5D_OPENS": 2, "H5D_CREATES": 1, "H5D_WRITES": 1, "H5D_READS": 1, "H5D_BYTES_WRITTEN": 4000,
        "H5D_BYTES_READ": 4000, "H5D_ALL_SELECTS": 2, "H5D_DATASPACE_NDIMS": 1, "H5D_DATASPACE_NPOINTS": 1000,
        "H5D_DATATYPE_SIZE": 4, "H5D_CHUNKED": 0, "H5D_CHUNK_SIZE_D1": 0, "H5D_USE_DEPRECATED": 0,
    }  # fmt: skip
    assert {k: vec[k] for k in want} == want
    old = _rec(log, "H5D", f"{prof_dir / 's.h5'}:/old")
    want = {
        "H5D_OPENS": 1,
        "H5D_CREATES": 1,
        "H5D_CLOSES": 1,
        "H5D_USE_DEPRECATED": 1,
        "H5D_DATATYPE_SIZE": 2,
    }
    assert {k: old[k] for k in want} == want and old["H5D_WRITES"] == old["H5D_READS"] == 0
    assert len(mod) == 3  # the failed H5Dopen2 of "nope" names no dataset


def test_the_programs_call_every_hdf5_wrapper(profile_build: ProfileBuild) -> None:
    """The census leaves the HDF5 entry points to this file: its C programs must call each one."""
    from .test_profile_census import HDF5_PREFIXES, exported

    wrapped = {n for n in exported(profile_build.lib) if n.startswith(HDF5_PREFIXES)}
    assert {"H5Fopen", "H5Dwrite", "H5Dread"} <= wrapped
    source = (DATA / "h5_serial.c").read_text() + (DATA / "h5_parallel.c").read_text()
    assert {n for n in wrapped if f"{n}(" not in source} == set()


def test_serial_trace_has_the_hdf5_calls(serial_run) -> None:
    _, prof_dir, _, _, logs = serial_run
    log = _the_log(logs)
    events = log.trace
    ops = [e.op for e in events]
    for name, n in (("H5Fcreate", 1), ("H5Fopen", 1), ("H5Dwrite", 5), ("H5Dread", 4), ("H5Fclose", 2)):
        assert ops.count(name) == n, (name, ops.count(name))
    # the read of id -1 failed, and names no file
    assert [(e.path, e.result) for e in events if e.op == "H5Dread" and e.result != 0] == [(None, -1)]
    # a dataset's calls name its file (the trace's paths are files), with the bytes of the selection
    writes = [e for e in events if e.op == "H5Dwrite"]
    assert {e.path for e in writes} == {str(prof_dir / "s.h5")}
    assert sorted(e.size for e in writes) == [56, 400, 4000, 16000, 160000]


def test_serial_job_report_layer(serial_run) -> None:
    _, prof_dir, _, _, logs = serial_run
    job = build_job("h5", logs_in(logs))
    (f,) = job.hdf5
    doc = f.to_json()
    assert doc["path"] == str(prof_dir / "s.h5") and doc["use_mpiio"] is False and doc["multi_rank"] is False
    by_name = {d["name"]: d for d in doc["datasets"]}
    assert set(by_name) == {"/grid", "/g/vec", "/old"}
    grid = by_name["/grid"]
    assert grid["chunk_shape"] == [10, 50] and by_name["/g/vec"]["chunk_shape"] == []
    assert grid["selections"] == {"all": 2, "regular_hyperslab": 2, "irregular_hyperslab": 1, "points": 1}
    assert grid["independent_writes_multi_rank"] == 0  # one process: nothing to make collective


def test_an_excluded_hdf5_file_has_no_records(profile_build: ProfileBuild, tmp_path: Path) -> None:
    prog = _compile("gcc", DATA / "h5_serial.c", tmp_path / "h5_serial")
    plain_dir, prof_dir, logs = _dirs(tmp_path)
    plain = run([str(prog), str(plain_dir)], plain_env())
    prof = run(
        [str(prog), str(prof_dir)], profiled_env(profile_build, logs, IOLENS_PROFILE_EXCLUDE=str(prof_dir))
    )
    assert prof.returncode == plain.returncode == 0 and prof.stdout == plain.stdout
    (log,) = logs_in(logs)
    assert all(len(log.modules[m]) == 0 for m in ("H5F", "H5D") if m in log.modules)
    assert not any(p.startswith(str(prof_dir)) for p in log.table.paths)


# ---- no HDF5 at all ----


def test_program_without_hdf5_has_no_hdf5_records(profile_build: ProfileBuild, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    r = run(["/bin/sh", "-c", f"echo hi > {tmp_path}/x; cat {tmp_path}/x"], profiled_env(profile_build, logs))
    assert r.returncode == 0 and r.stdout == b"hi\n"
    assert all("H5F" not in log.modules and "H5D" not in log.modules for log in logs_in(logs))


# ---- parallel HDF5 under mpirun ----


@pytest.fixture(scope="module")
def parallel_run(
    profile_build: ProfileBuild, tmp_path_factory: pytest.TempPathFactory, mpi_env: dict[str, str]
) -> tuple[Path, subprocess.CompletedProcess[bytes], subprocess.CompletedProcess[bytes], Path]:
    root = tmp_path_factory.mktemp("h5-parallel")
    prog = _compile("mpicc", DATA / "h5_parallel.c", root / "h5_parallel")
    plain_dir, prof_dir, logs = _dirs(root)
    cmd = ["mpirun", "-np", str(NP), str(prog)]
    plain = run([*cmd, str(plain_dir)], {**mpi_env, **plain_env()}, timeout=300)
    env = {**mpi_env, **profiled_env(profile_build, logs, IOLENS_JOB_ID="h5-job")}
    prof = run([*cmd, str(prof_dir)], env, timeout=300)
    return prof_dir, plain, prof, logs


@pytest.mark.mpi
def test_parallel_program_sees_the_same(parallel_run) -> None:
    _, plain, prof, _ = parallel_run
    assert plain.returncode == 0, plain.stderr.decode()
    assert prof.returncode == 0, prof.stderr.decode()
    assert sorted(prof.stdout.decode().splitlines()) == sorted(plain.stdout.decode().splitlines())


@pytest.mark.mpi
def test_parallel_counters_per_rank(parallel_run) -> None:
    prof_dir, _, _, logs = parallel_run
    ranked = {log.header.rank: log for log in logs_in(logs) if log.header.rank >= 0}
    assert set(ranked) == set(range(NP))
    path = str(prof_dir / "p.h5")
    for log in ranked.values():
        f = _rec(log, "H5F", path)
        assert (f["H5F_OPENS"], f["H5F_CREATES"], f["H5F_CLOSES"], f["H5F_USE_MPIIO"]) == (1, 1, 1, 1)
        assert (f["H5F_ALIGNMENT"], f["H5F_ALIGN_THRESHOLD"]) == (65536, 0)
        coll = _rec(log, "H5D", f"{path}:/coll")
        # one collective H5Dwrite and one collective H5Dread of the rank's 1000 doubles
        assert (coll["H5D_WRITES"], coll["H5D_COLL_WRITES"], coll["H5D_READS"], coll["H5D_COLL_READS"]) == (
            1,
            1,
            1,
            1,
        )
        assert (coll["H5D_BYTES_WRITTEN"], coll["H5D_BYTES_READ"], coll["H5D_USE_MPIIO_COLLECTIVE"]) == (
            8000,
            8000,
            1,
        )
        assert coll["H5D_REGULAR_HYPERSLAB_SELECTS"] == 2 and coll["H5D_DATASPACE_NPOINTS"] == NP * 1000
        indep = _rec(log, "H5D", f"{path}:/indep")
        # two independent H5Dwrites of 500 doubles (the dxpl asks for independent transfers explicitly)
        assert (indep["H5D_WRITES"], indep["H5D_COLL_WRITES"], indep["H5D_BYTES_WRITTEN"]) == (2, 0, 8000)
        assert indep["H5D_USE_MPIIO_COLLECTIVE"] == 0 and indep["H5D_SIZE_WRITE_AGG_1K_10K"] == 2
        # the MPI-IO layer beneath the HDF5 calls is recorded too (the HDF5 wrappers do not hide it)
        mpi = _rec(log, "MPIIO", path)
        assert mpi["MPIIO_COLL_OPENS"] == 1 and mpi["MPIIO_COLL_WRITES"] >= 1
        assert mpi["MPIIO_BYTES_WRITTEN"] >= 16000


@pytest.mark.mpi
def test_parallel_job_layer(parallel_run) -> None:
    prof_dir, _, _, logs = parallel_run
    job = build_job("h5-job", logs_in(logs))
    (f,) = [f for f in job.hdf5 if f.path == str(prof_dir / "p.h5")]
    doc = f.to_json()
    assert doc["ranks"] == list(range(NP)) and doc["multi_rank"] and doc["use_mpiio"]
    assert doc["alignment"] == 65536 and doc["unaligned_on_parallel_fs"] is False
    by_name = {d["name"]: d for d in doc["datasets"]}
    coll, indep = by_name["/coll"], by_name["/indep"]
    assert coll["writes"] == NP and coll["collective"]["writes"] == NP and coll["use_mpiio_collective"]
    assert coll["bytes_written"] == NP * 8000 and coll["independent_writes_multi_rank"] == 0
    assert indep["writes"] == 2 * NP and indep["collective"]["writes"] == 0
    assert indep["independent_writes_multi_rank"] == 2 * NP and indep["writer_ranks"] == list(range(NP))


# ---- h5py (the HDF5 library inside its wheel) ----


@pytest.fixture(scope="module")
def h5py_run(
    profile_build: ProfileBuild, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, subprocess.CompletedProcess[bytes], subprocess.CompletedProcess[bytes], Path]:
    pytest.importorskip("h5py")
    root = tmp_path_factory.mktemp("h5py")
    plain_dir, prof_dir, logs = _dirs(root)
    cmd = [sys.executable, str(DATA / "h5py_calls.py")]
    plain = run([*cmd, str(plain_dir)], plain_env())
    prof = run([*cmd, str(prof_dir)], profiled_env(profile_build, logs))
    return prof_dir, plain, prof, logs


def test_h5py_sees_the_same(h5py_run) -> None:
    _, plain, prof, _ = h5py_run
    assert plain.returncode == 0, plain.stderr.decode()
    assert prof.returncode == 0, prof.stderr.decode()
    assert prof.stdout == plain.stdout


def test_h5py_uses_its_own_hdf5_and_is_recorded(h5py_run) -> None:
    prof_dir, _, _, logs = h5py_run
    import h5py

    # the wheel's copy of libhdf5 (not a system one): the runtime must have called that one
    libs = Path(h5py.__file__).parent.parent / "h5py.libs"
    if not libs.is_dir() or not any(p.name.startswith("libhdf5") for p in libs.iterdir()):
        pytest.skip("this h5py is not a wheel with its own libhdf5")
    log = _the_log(logs)
    path = str(prof_dir / "y.h5")
    f = _rec(log, "H5F", path)
    # h5py closes with H5Idec_ref: the last reference's drop is the close
    assert (f["H5F_OPENS"], f["H5F_CREATES"], f["H5F_USE_MPIIO"], f["H5F_CLOSES"]) == (2, 1, 0, 2)
    d = _rec(log, "H5D", f"{path}:/d")
    assert d["H5D_CLOSES"] == 2
    # create_dataset (H5Dcreate2); the second file's f["d"] is an H5Oopen, seen first at its read
    assert (d["H5D_OPENS"], d["H5D_CREATES"], d["H5D_WRITES"], d["H5D_READS"]) == (1, 1, 2, 2)
    assert (d["H5D_BYTES_WRITTEN"], d["H5D_BYTES_READ"]) == (400 + 40, 12 + 400)
    assert (d["H5D_DATATYPE_SIZE"], d["H5D_DATASPACE_NPOINTS"], d["H5D_CHUNK_SIZE_D1"]) == (4, 100, 10)
    # every read and write has one selection kind
    kinds = ("ALL", "REGULAR_HYPERSLAB", "IRREGULAR_HYPERSLAB", "POINT")
    assert sum(d[f"H5D_{k}_SELECTS"] for k in kinds) == 4 and d["H5D_POINT_SELECTS"] == 0


def test_two_hdf5_libraries_in_one_process(profile_build: ProfileBuild, tmp_path: Path) -> None:
    """h5py's own libhdf5 and the system's (behind a ctypes-loaded library) in one Python: each call must go
    to the library its caller is linked to (ids of one mean nothing to the other), and both are recorded."""
    pytest.importorskip("h5py")
    lib = tmp_path / "h5_sys.so"
    flags = _pkg_flags("hdf5-openmpi", "hdf5-mpich", "hdf5-serial", "hdf5")
    r = subprocess.run(["gcc", "-O1", "-shared", "-fPIC", "-o", str(lib), str(DATA / "h5_sys.c"), *flags],
                       capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 0, r.stderr
    plain_dir, prof_dir, logs = _dirs(tmp_path)
    cmd = [sys.executable, str(DATA / "h5py_two_libs.py")]
    plain = run([*cmd, str(plain_dir), str(lib)], plain_env())
    prof = run([*cmd, str(prof_dir), str(lib)], profiled_env(profile_build, logs))
    assert plain.returncode == 0, plain.stderr.decode()
    assert prof.returncode == 0, prof.stderr.decode()
    assert prof.stdout == plain.stdout == b"sys 0 py 190\n"
    log = _the_log(logs)
    sys_d = _rec(log, "H5D", f"{prof_dir / 'sys.h5'}:/sys")
    assert (sys_d["H5D_WRITES"], sys_d["H5D_BYTES_WRITTEN"], sys_d["H5D_DATATYPE_SIZE"]) == (1, 40, 4)
    py_d = _rec(log, "H5D", f"{prof_dir / 'py.h5'}:/py")
    assert (py_d["H5D_WRITES"], py_d["H5D_BYTES_WRITTEN"], py_d["H5D_BYTES_READ"]) == (1, 160, 160)
    assert _rec(log, "H5F", str(prof_dir / "sys.h5"))["H5F_CLOSES"] == 1


@pytest.mark.mpi
def test_parallel_job_collective_share_and_stack(parallel_run) -> None:
    """The advice's "is this job's I/O collective" counts the program's HDF5 calls for an HDF5 file (HDF5
    writes its metadata with independent MPI-IO calls beneath collective H5Dwrite calls), and the report
    stacks the file's layers: its HDF5 calls, the MPI-IO calls beneath, the POSIX calls beneath those."""
    prof_dir, _, _, logs = parallel_run
    job = build_job("h5-job", logs_in(logs))
    # per rank: one collective H5Dwrite and H5Dread on /coll, two independent H5Dwrite on /indep
    assert collective_share(job) == pytest.approx(2 * NP / (2 * NP + 2 * NP))
    report = job_report(job)
    (st,) = [s for s in stacks(report["layers"]) if s.path == str(prof_dir / "p.h5")]
    assert [level.layer for level in st.levels] == ["HDF5", "MPI-IO", "POSIX"]
    assert st.sentence.startswith(
        f"HDF5: {3 * NP} H5Dwrite and {NP} H5Dread calls on 2 dataset(s), {2 * NP} of them collective. "
    )
    (posix,) = report["layers"]["posix_files"]
    assert posix["path"] == str(prof_dir / "p.h5") and posix["writer_ranks"]
    documented = (REPO / "docs" / "profile.md").read_text()
    assert [k for k in posix if f"`{k}`" not in documented] == []
    (mpi,) = [f for f in report["layers"]["mpiio"] if f["path"] == str(prof_dir / "p.h5")]
    writes = sum(v["writes"] for v in mpi["ops"].values())
    assert f" {writes} MPI-IO writes (" in st.sentence or f"{writes} collective MPI-IO writes" in st.sentence
