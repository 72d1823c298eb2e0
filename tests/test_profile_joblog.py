"""One log per MPI job (native/profiler/wrap_finalize.c, joblog.c, reduce.c; docs/profile.md, "One log per
job"; the format: docs/profile-log.md, "The job log"): real programs under the real mpirun.

tests/data/joblog/joblog_ranks.c has every rank write one common file (rank 1 twice as much as the others)
and a file of its own, and print what it did; tests/data/mpiio/mpiio_calls.c is the MPI-IO layer's program.
The job log must hold the common files as one record whose counts are the sums of what the ranks did, each
rank's own file as that rank's, the spread as the ranks' own figures, and replace the per-process logs; a
rank killed before MPI_Finalize must leave every per-process log; I/O after MPI_Finalize is counted once.
"""

from __future__ import annotations

import getpass
import json
import os
import shutil
import statistics
import subprocess
import time
from pathlib import Path

import pytest

from iolens.profile.job import load_job
from iolens.profile.joblog import FILE_REDUCED, FLAG_AFTER_JOBLOG, read_job_log
from iolens.profile.reader import read_log

from .conftest import ProfileBuild
from .test_profile_cli import iolens
from .test_profile_runtime import profiled_env, run

DATA = Path(__file__).parent / "data"
NP = 3
JOB = "joblog-test"


def _compile(src: Path, out: Path) -> Path:
    if shutil.which("mpicc") is None:
        pytest.skip("mpicc not found")
    r = subprocess.run(
        ["mpicc", "-O1", "-o", str(out), str(src)], capture_output=True, text=True, check=False
    )
    assert r.returncode == 0, r.stderr
    return out


@pytest.fixture(scope="module")
def ranks_prog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _compile(DATA / "joblog" / "joblog_ranks.c", tmp_path_factory.mktemp("joblog") / "joblog_ranks")


@pytest.fixture(scope="module")
def mpiio_prog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _compile(DATA / "mpiio" / "mpiio_calls.c", tmp_path_factory.mktemp("joblog") / "mpiio_calls")


class Run:
    def __init__(self, root: Path) -> None:
        self.work, self.logs, self.out = root / "work", root / "logs", root / "out"
        self.work.mkdir()
        self.logs.mkdir()
        self.debug = root / "debug.txt"
        self.proc: subprocess.CompletedProcess[bytes] | None = None

    @property
    def tallies(self) -> dict[int, dict]:
        assert self.proc is not None
        out = {}
        for line in self.proc.stdout.decode().splitlines():
            if line.startswith("TALLY "):
                _, rank, doc = line.split(" ", 2)
                out[int(rank)] = json.loads(doc)
        return out

    def job_logs(self, where: Path | None = None) -> list[Path]:
        return sorted((where or self.logs).rglob("*.iolj"))

    def process_logs(self) -> list[Path]:
        """The per-process logs of MPI ranks (mpirun and its children, profiled too, keep theirs)."""
        logs = sorted(p for p in self.logs.iterdir() if p.suffix in (".iolp", ".iolpz"))
        return [p for p in logs if read_log(p).header.rank >= 0]


def _run(
    prog: Path,
    root: Path,
    build: ProfileBuild,
    mpi_env: dict[str, str],
    *args: str,
    np_: int = NP,
    **extra: str,
) -> Run:
    r = Run(root)
    env = {
        **mpi_env,
        **profiled_env(
            build, r.logs, IOLENS_JOB_ID=JOB, IOLENS_JOB_LOG="1", IOLENS_PROFILE_DEBUG=str(r.debug), **extra
        ),
    }
    r.proc = run(
        ["mpirun", "-np", str(np_), "--output-filename", str(r.out), str(prog), str(r.work), *args],
        env,
        timeout=300,
    )
    ranks = sorted(r.out.glob("*/rank.*/stdout"), key=lambda p: int(p.parent.name.split(".")[-1]))
    r.proc.stdout = b"".join(p.read_bytes() for p in ranks)
    return r


@pytest.fixture(scope="module")
def ranks_run(
    ranks_prog: Path,
    profile_build: ProfileBuild,
    tmp_path_factory: pytest.TempPathFactory,
    mpi_env: dict[str, str],
) -> Run:
    r = _run(ranks_prog, tmp_path_factory.mktemp("ranks"), profile_build, mpi_env)
    assert r.proc is not None and r.proc.returncode == 0, r.proc.stderr.decode() if r.proc else ""
    return r


@pytest.mark.mpi
def test_the_job_log_replaces_the_per_process_logs(ranks_run: Run) -> None:
    [path] = ranks_run.job_logs()
    assert ranks_run.process_logs() == [], [p.name for p in ranks_run.process_logs()]
    jl = read_job_log(path)
    assert jl.header.nranks == NP and [log.header.rank for log in jl.logs] == list(range(NP))
    assert all(log.clean and log.header.job_id == JOB for log in jl.logs)
    # every rank said where it went, and nothing of the fallback
    debug = ranks_run.debug.read_text()
    assert debug.count(f"job log: {path} written") == NP, debug


@pytest.mark.mpi
def test_a_common_file_becomes_one_record_of_the_ranks_sums(ranks_run: Run) -> None:
    tallies = ranks_run.tallies
    assert set(tallies) == set(range(NP))
    [path] = ranks_run.job_logs()
    jl = read_job_log(path)
    common = str(ranks_run.work / "common.dat")
    holders = [log.header.rank for log in jl.logs if common in log.files and log.files[common]["POSIX_OPENS"]]
    assert holders == [0], holders  # one record, in rank 0's member
    rec = jl.logs[0].files[common]
    assert jl.logs[0].file_flags(common) & FILE_REDUCED
    assert rec["POSIX_WRITES"] == sum(t["common_writes"] for t in tallies.values())
    assert rec["POSIX_BYTES_WRITTEN"] == sum(t["common_bytes"] for t in tallies.values())
    assert rec["POSIX_OPENS"] == NP
    assert rec["POSIX_MAX_BYTE_WRITTEN"] == (NP - 1) * 8 * 65536 + 4 * 65536 - 1  # the last rank's last byte
    assert rec["POSIX_SIZE_WRITE_10K_100K"] == rec["POSIX_WRITES"]
    assert (rec["POSIX_ACCESS1_ACCESS"], rec["POSIX_ACCESS1_COUNT"]) == (65536, rec["POSIX_WRITES"])
    # the timestamps are in rank 0's time: the first open is before the last write ends
    assert 0 < rec["POSIX_F_OPEN_START_TIMESTAMP"] <= rec["POSIX_F_WRITE_END_TIMESTAMP"]
    # the job, read from the job log, counts it once
    job = load_job(path)
    assert job.file(common)["POSIX_BYTES_WRITTEN"] == rec["POSIX_BYTES_WRITTEN"]
    assert job.rank_count == NP


@pytest.mark.mpi
def test_each_rank_keeps_its_own_files(ranks_run: Run) -> None:
    tallies = ranks_run.tallies
    jl = read_job_log(ranks_run.job_logs()[0])
    for log in jl.logs:
        rank = log.header.rank
        own = str(ranks_run.work / f"rank.{rank}.dat")
        assert not log.file_flags(own) & FILE_REDUCED
        assert log.files[own]["POSIX_WRITES"] == tallies[rank]["own_writes"]
        assert log.files[own]["POSIX_BYTES_WRITTEN"] == tallies[rank]["own_bytes"]
        others = [str(ranks_run.work / f"rank.{r}.dat") for r in range(NP) if r != rank]
        assert not any(o in log.files for o in others)
    job = load_job(ranks_run.job_logs()[0])
    by_rank = {r.rank: r.totals for r in job.ranks}
    # per-rank totals: the rank's own file (the common one is every rank's: its spread says who did what)
    assert {r: t.bytes_written for r, t in by_rank.items()} == {r: t["own_bytes"] for r, t in tallies.items()}


@pytest.mark.mpi
def test_the_spread_is_what_each_rank_did(ranks_run: Run) -> None:
    tallies = ranks_run.tallies
    job = load_job(ranks_run.job_logs()[0])
    [common] = [f for f in job.reduced if f.path.endswith("/common.dat")]
    sp = common.posix
    assert common.ranks == NP and sp is not None and sp.ranks == NP and common.mpiio is None
    bytes_of = {r: t["common_bytes"] for r, t in tallies.items()}
    # the fastest and slowest ranks by time carry their own bytes
    assert sp.fastest_rank_bytes == bytes_of[sp.fastest_rank]
    assert sp.slowest_rank_bytes == bytes_of[sp.slowest_rank]
    assert 0 < sp.fastest_rank_time_s <= sp.slowest_rank_time_s
    assert sp.fastest_rank != sp.slowest_rank
    # rank 1 wrote twice as much as the others: the variance of the bytes is the population variance
    assert max(bytes_of, key=lambda r: bytes_of[r]) == 1
    assert sp.variance_rank_bytes == pytest.approx(statistics.pvariance(bytes_of.values()))
    assert sp.variance_rank_time_s2 > 0


@pytest.mark.mpi
def test_the_report_shows_a_reduced_file_as_all_ranks(
    ranks_run: Run, iolens_bin: list[str], tmp_path: Path
) -> None:
    path = ranks_run.job_logs()[0]
    out = iolens(iolens_bin, ["profile", "report", str(path), "--json"], dict(os.environ), tmp_path)
    assert out.returncode == 0, out.stderr
    job = json.loads(out.stdout)["jobs"][0]
    common = str(ranks_run.work / "common.dat")
    [row] = [r for r in job["top_files_by_bytes"] if r["path"] == common]
    assert row["reduced_over_ranks"] == NP
    assert row["bytes_written"] == sum(t["common_bytes"] for t in ranks_run.tallies.values())
    [red] = [f for f in job["reduced_files"] if f["path"] == common]
    assert (
        red["posix"]["slowest_rank_bytes"] == ranks_run.tallies[red["posix"]["slowest_rank"]]["common_bytes"]
    )
    text = iolens(iolens_bin, ["profile", "report", str(ranks_run.logs)], dict(os.environ), tmp_path)
    assert text.returncode == 0, text.stderr
    assert "Files reduced over all ranks" in text.stdout and f"all {NP}" in text.stdout


@pytest.mark.mpi
def test_mpiio_files_reduce_by_the_meaning_of_each_counter(
    mpiio_prog: Path, profile_build: ProfileBuild, mpi_env: dict[str, str], tmp_path: Path
) -> None:
    r = _run(mpiio_prog, tmp_path, profile_build, mpi_env)
    assert r.proc is not None and r.proc.returncode == 0, r.proc.stderr.decode()
    tallies = r.tallies
    [path] = r.job_logs()
    jl = read_job_log(path)
    mod = jl.logs[0].modules["MPIIO"]
    shared = mod.counters(mod.row_of[str(r.work / "shared.dat")])
    for counter in tallies[0]["shared.dat"]:
        values = [tallies[k]["shared.dat"][counter] for k in range(NP)]
        merge = "max" if counter in ("MPIIO_MODE", "MPIIO_OPEN_COMM_SIZE") else "sum"
        want = max(values) if merge == "max" else sum(values)
        assert shared[counter] == want, counter
    # the most common access size over the ranks: 4 writes and 2 reads of 4000 B on each
    assert (shared["MPIIO_ACCESS1_ACCESS"], shared["MPIIO_ACCESS1_COUNT"]) == (4000, 6 * NP)
    # the file of each rank's own stays its own
    for log in jl.logs:
        own = log.modules["MPIIO"]
        assert str(r.work / f"own.{log.header.rank}") in own.row_of
    job = load_job(path)
    [red] = [f for f in job.reduced if f.path == str(r.work / "shared.dat")]
    assert red.mpiio is not None and red.mpiio.ranks == NP
    per_rank = [
        tallies[k]["shared.dat"]["MPIIO_BYTES_WRITTEN"] + tallies[k]["shared.dat"]["MPIIO_BYTES_READ"]
        for k in range(NP)
    ]
    assert red.mpiio.fastest_rank_bytes == per_rank[red.mpiio.fastest_rank]
    assert red.mpiio.slowest_rank_bytes == per_rank[red.mpiio.slowest_rank]


@pytest.mark.mpi
def test_io_after_finalize_is_counted_once(
    ranks_prog: Path, profile_build: ProfileBuild, mpi_env: dict[str, str], tmp_path: Path
) -> None:
    r = _run(ranks_prog, tmp_path, profile_build, mpi_env, "after")
    assert r.proc is not None and r.proc.returncode == 0, r.proc.stderr.decode()
    [path] = r.job_logs()
    after_logs = r.process_logs()
    assert len(after_logs) == NP, [p.name for p in after_logs]
    job = load_job(r.logs)
    assert sum(1 for log in job.logs if log.header.rank >= 0) == 2 * NP
    common = str(r.work / "common.dat")
    assert job.file(common)["POSIX_WRITES"] == sum(t["common_writes"] for t in r.tallies.values())
    for rank in range(NP):
        assert job.file(str(r.work / f"after.{rank}.dat"))["POSIX_WRITES"] == 3
        assert job.file(str(r.work / f"rank.{rank}.dat"))["POSIX_WRITES"] == rank + 1
    assert f"{NP} per-process log(s) hold only what their rank did after MPI_Finalize" in " ".join(
        job.messages
    )
    for log in job.logs:
        if log.path != path and log.header.rank >= 0:  # kept for what its rank did after MPI_Finalize, only
            assert log.header.flags & FLAG_AFTER_JOBLOG
            assert common not in log.files or log.files[common]["POSIX_WRITES"] == 0
            assert log.proc["WRITES"] >= 3


@pytest.mark.mpi
def test_a_rank_killed_before_finalize_leaves_every_per_process_log(
    ranks_prog: Path,
    profile_build: ProfileBuild,
    mpi_env: dict[str, str],
    tmp_path: Path,
    iolens_bin: list[str],
) -> None:
    r = _run(ranks_prog, tmp_path, profile_build, mpi_env, "kill")
    assert r.proc is not None and r.proc.returncode != 0
    assert r.job_logs() == []
    job = load_job(r.logs)
    assert sorted(log.header.rank for log in job.logs if log.header.rank >= 0) == list(range(NP))
    tallies = r.tallies
    assert job.file(str(r.work / "common.dat"))["POSIX_BYTES_WRITTEN"] == sum(
        t["common_bytes"] for t in tallies.values()
    )
    out = iolens(iolens_bin, ["profile", "report", str(r.logs), "--json"], dict(os.environ), tmp_path)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["jobs"][0]["summary"]["ranks"] == NP


@pytest.mark.mpi
def test_the_central_log_dir_is_laid_out_by_date_user_and_job(
    ranks_prog: Path, profile_build: ProfileBuild, mpi_env: dict[str, str], tmp_path: Path
) -> None:
    central = tmp_path / "central"
    central.mkdir(mode=0o1777)
    os.chmod(central, 0o1777)
    r = _run(
        ranks_prog, tmp_path, profile_build, mpi_env, np_=2, IOLENS_LOG_DIR=str(central),
        IOLENS_LOG_LAYOUT="%Y/%m/%d/%u/%j", USER=getpass.getuser(),
    )  # fmt: skip
    assert r.proc is not None and r.proc.returncode == 0, r.proc.stderr.decode()
    assert r.job_logs() == [] and r.process_logs() == []
    [path] = r.job_logs(central)
    now = time.localtime()
    rel = path.relative_to(central)
    user = getpass.getuser()
    assert rel.parts[:5] == (str(now.tm_year), str(now.tm_mon), str(now.tm_mday), user, JOB)
    assert rel.name.startswith(f"{user}_joblog_ranks_id{JOB}_") and rel.name.endswith(".iolj")
    # directories made below the log dir take its mode (a center's 1777)
    assert (path.parent.stat().st_mode & 0o7777) == 0o1777
    assert read_job_log(path).header.nranks == 2


@pytest.mark.mpi
def test_a_bad_layout_sends_the_job_log_to_the_profile_dir_and_says_why(
    ranks_prog: Path, profile_build: ProfileBuild, mpi_env: dict[str, str], tmp_path: Path
) -> None:
    central = tmp_path / "central"
    central.mkdir()
    r = _run(
        ranks_prog,
        tmp_path,
        profile_build,
        mpi_env,
        np_=2,
        IOLENS_LOG_DIR=str(central),
        IOLENS_LOG_LAYOUT="%Y/%q",
    )
    assert r.proc is not None and r.proc.returncode == 0, r.proc.stderr.decode()
    assert len(r.job_logs()) == 1 and r.job_logs(central) == []
    assert "IOLENS_LOG_LAYOUT '%Y/%q': unknown field %q" in r.debug.read_text()


@pytest.mark.mpi
def test_a_truncated_job_log_is_refused_with_one_line(
    ranks_run: Run, iolens_bin: list[str], tmp_path: Path
) -> None:
    data = ranks_run.job_logs()[0].read_bytes()
    for cut in (100, 300, len(data) // 2, len(data) - 10):
        bad = tmp_path / f"cut{cut}.iolj"
        bad.write_bytes(data[:cut])
        out = iolens(iolens_bin, ["profile", "report", str(bad)], dict(os.environ), tmp_path)
        assert out.returncode == 1, (cut, out.stdout, out.stderr)
        assert "Traceback" not in out.stderr
        [line] = out.stderr.strip().splitlines()
        assert line.startswith("iolens: error: ") and str(bad) in line and "job log" in line, line


@pytest.mark.mpi
def test_the_job_log_is_stored_as_one_profile(ranks_run: Run, db_url: str, tmp_path: Path) -> None:
    from iolens.store import Store, queries

    from .db_helpers import iolens as db_iolens
    from .db_helpers import iolens_env

    r = db_iolens("db", "import", str(ranks_run.job_logs()[0]), "--db", db_url, env=iolens_env(home=tmp_path))
    assert r.returncode == 0, r.stderr
    with Store.open(db_url, create=False) as store:
        p = queries.get_profile(store.db, 1)
        files = {f["path"]: f for f in queries.profile_files(store.db, 1)}
    assert p["job_id"] == JOB and p["processes"] == NP
    common = str(ranks_run.work / "common.dat")
    assert files[common]["bytes_written"] == sum(t["common_bytes"] for t in ranks_run.tallies.values())


FORTRAN = {"mpifh": (), "f08": ("-DF08",)}


@pytest.mark.mpi
@pytest.mark.parametrize("binding", sorted(FORTRAN))
def test_fortran_mpi_finalize_writes_the_job_log(
    binding: str, profile_build: ProfileBuild, mpi_env: dict[str, str], tmp_path: Path
) -> None:
    """Open MPI's Fortran MPI_FINALIZE (mpif.h's mpi_finalize_, mpi_f08's through ompi_finalize_f) calls
    PMPI_Finalize, never the C MPI_Finalize: the runtime wraps those entry points too."""
    if shutil.which("mpifort") is None:
        pytest.skip("mpifort not found")
    prog = tmp_path / binding
    src = DATA / "mpiio" / "mpiio_fortran.F90"
    c = subprocess.run(["mpifort", "-O1", *FORTRAN[binding], "-o", str(prog), str(src)], capture_output=True)
    assert c.returncode == 0, c.stderr.decode()
    r = _run(prog, tmp_path, profile_build, mpi_env, np_=2)
    assert r.proc is not None and r.proc.returncode == 0, r.proc.stderr.decode()
    [path] = r.job_logs()
    assert r.process_logs() == []
    jl = read_job_log(path)
    mod = jl.logs[0].modules["MPIIO"]
    got = mod.counters(mod.row_of[str(r.work / "fortran.dat")])
    # each of the 2 ranks: 3 collective writes of 1 KiB, 2 independent of 256 B, 1 non-blocking of 64 B
    want = {"MPIIO_COLL_OPENS": 2, "MPIIO_COLL_WRITES": 6, "MPIIO_INDEP_WRITES": 4, "MPIIO_NB_WRITES": 2,
            "MPIIO_BYTES_WRITTEN": 2 * (3 * 1024 + 2 * 256 + 64), "MPIIO_OPEN_COMM_SIZE": 2}  # fmt: skip
    assert {k: got[k] for k in want} == want


@pytest.mark.mpi
def test_a_rank_without_a_log_makes_every_rank_keep_its_own(
    ranks_prog: Path, profile_build: ProfileBuild, mpi_env: dict[str, str], tmp_path: Path
) -> None:
    """Rank 0 cannot create its log (its profile directory does not exist): it still takes part in the
    collectives (no rank waits forever), no job log is written, rank 1 keeps its per-process log and says
    why."""
    r = Run(tmp_path)
    env = {**mpi_env, **profiled_env(profile_build, r.logs, IOLENS_JOB_ID=JOB, IOLENS_JOB_LOG="1")}
    common = [
        "-x",
        f"LD_PRELOAD={profile_build.lib}",
        "-x",
        f"IOLENS_PROFILE_DEBUG={r.debug}",
        "-x",
        "IOLENS_JOB_ID",
    ]
    prog = [str(ranks_prog), str(r.work)]
    cmd = [
        "mpirun", "-x", "IOLENS_JOB_LOG",
        "-np", "1", *common, "-x", f"IOLENS_PROFILE_DIR={tmp_path / 'missing'}", *prog, ":",
        "-np", "1", *common, "-x", f"IOLENS_PROFILE_DIR={r.logs}", *prog,
    ]  # fmt: skip
    proc = run(cmd, {k: v for k, v in env.items() if k != "LD_PRELOAD"}, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    assert r.job_logs() == []
    [kept] = r.process_logs()
    log = read_log(kept)
    assert log.header.rank == 1 and log.clean
    assert log.files[str(r.work / "rank.1.dat")]["POSIX_WRITES"] == 2
    assert "job log: not written (a rank has no log, or could not read its own)" in r.debug.read_text()


@pytest.mark.mpi
def test_hdf5_files_and_datasets_reduce_by_meaning(
    profile_build: ProfileBuild, mpi_env: dict[str, str], tmp_path: Path
) -> None:
    """tests/data/hdf5/h5_parallel.c at 2 ranks: each rank creates p.h5 collectively (alignment 64 KiB),
    writes its 1000 doubles of /coll collectively and reads them back, and writes /indep in two independent
    halves. The H5F and H5D records become one each, in rank 0's member, by their counters' meanings."""
    flags = None
    for name in ("hdf5-openmpi", "hdf5-mpich"):
        r = subprocess.run(["pkg-config", "--cflags", "--libs", name], capture_output=True, text=True)
        if r.returncode == 0:
            flags = r.stdout.split()
            break
    if flags is None or shutil.which("mpicc") is None:
        pytest.skip("no parallel HDF5 or mpicc")
    prog = tmp_path / "h5_parallel"
    c = subprocess.run(["mpicc", "-O1", "-o", str(prog), str(DATA / "hdf5" / "h5_parallel.c"), *flags])
    assert c.returncode == 0
    r = _run(prog, tmp_path, profile_build, mpi_env, np_=2)
    assert r.proc is not None and r.proc.returncode == 0, r.proc.stderr.decode()
    [path] = r.job_logs()
    jl = read_job_log(path)
    p = str(r.work / "p.h5")
    others = [log for log in jl.logs[1:] if "H5F" in log.modules and p in log.modules["H5F"].row_of]
    assert others == []  # one record, rank 0's
    h5f = jl.logs[0].modules["H5F"]
    f = h5f.counters(h5f.row_of[p])
    assert (f["H5F_OPENS"], f["H5F_CREATES"], f["H5F_CLOSES"]) == (2, 2, 2)  # sums
    assert (f["H5F_USE_MPIIO"], f["H5F_ALIGNMENT"]) == (1, 65536)  # max
    h5d = jl.logs[0].modules["H5D"]
    coll = h5d.counters(h5d.row_of[f"{p}:/coll"])
    assert (coll["H5D_WRITES"], coll["H5D_COLL_WRITES"], coll["H5D_BYTES_WRITTEN"]) == (2, 2, 16000)
    assert coll["H5D_DATASPACE_NPOINTS"] == 2000  # max, not a sum
    indep = h5d.counters(h5d.row_of[f"{p}:/indep"])
    assert (indep["H5D_WRITES"], indep["H5D_BYTES_WRITTEN"], indep["H5D_SIZE_WRITE_AGG_1K_10K"]) == (
        4,
        16000,
        4,
    )
    job = load_job(path)
    assert [h.path for h in job.hdf5 if h.path == p] == [p]


@pytest.mark.mpi
def test_data_handed_between_ranks_stays_per_rank(
    ranks_prog: Path, profile_build: ProfileBuild, mpi_env: dict[str, str], tmp_path: Path
) -> None:
    """At 2 ranks each rank reads, after a barrier, the file the other wrote: every rank has both files, but
    the ranks made different kinds of calls on each (one wrote, the other read), so each file keeps its
    per-rank records (reduced, which rank wrote and which read would be lost); the job knows one rank wrote
    and another read it afterwards. The common file, which every rank wrote alike, is reduced."""
    r = _run(ranks_prog, tmp_path, profile_build, mpi_env, "handoff", np_=2)
    assert r.proc is not None and r.proc.returncode == 0, r.proc.stderr.decode()
    job = load_job(r.job_logs()[0])
    reduced = {f.path for f in job.reduced}
    for rank in range(2):
        path = str(r.work / f"rank.{rank}.dat")
        assert path not in reduced
        row = job.files.row_of[path]
        assert (job.procs[row], job.writers[row], job.readers[row], job.both[row]) == (2, 1, 1, 0)
        assert job.read_after_write[row]
    # the common file: every rank wrote it, none read it
    common = str(r.work / "common.dat")
    assert common in reduced
    row = job.files.row_of[common]
    assert (job.writers[row], job.readers[row], bool(job.read_after_write[row])) == (2, 0, False)


def test_iolens_profile_keeps_the_job_log_in_its_out_dir(tmp_path: Path) -> None:
    """A center's IOLENS_LOG_DIR is for the jobs it profiles itself: `iolens profile` empties it for its run,
    whose report reads --out."""
    from iolens.profile.run import profile_vars

    lib = tmp_path / "lib.so"
    central = {"IOLENS_LOG_DIR": "/center/logs", "IOLENS_LOG_LAYOUT": "%Y/%u"}
    assert profile_vars(lib, tmp_path, False, central)["IOLENS_LOG_DIR"] == ""
    assert "IOLENS_LOG_DIR" not in profile_vars(lib, tmp_path, False, {})


@pytest.mark.mpi
def test_ranks_preloaded_by_hand_make_one_job(
    ranks_prog: Path, profile_build: ProfileBuild, mpi_env: dict[str, str], tmp_path: Path
) -> None:
    """`mpirun -x LD_PRELOAD=… ./app` without a batch system or IOLENS_JOB_ID (how Darshan is used): the ranks
    name their job after the launcher's id of the launch ("mpi-ID"), so their logs make one job, whether each
    keeps its own log or the job log replaces them."""
    for job_log in ("0", "1"):
        (tmp_path / job_log).mkdir()
        r = Run(tmp_path / job_log)
        env = {**mpi_env, **profiled_env(profile_build, r.logs, IOLENS_JOB_LOG=job_log)}
        assert "IOLENS_JOB_ID" not in env and "SLURM_JOB_ID" not in env
        # the ranks alone are profiled (mpirun itself, profiled, would name the job for its children)
        lib = env.pop("LD_PRELOAD")
        cmd = ["mpirun", "-x", f"LD_PRELOAD={lib}", "-np", str(NP), str(ranks_prog), str(r.work)]
        proc = run(cmd, env, timeout=300)
        assert proc.returncode == 0, proc.stderr.decode()
        if job_log == "0":
            logs = [read_log(p) for p in r.process_logs()]
        else:
            (path,) = r.job_logs()
            logs = read_job_log(path).logs
        assert sorted(log.header.rank for log in logs) == list(range(NP))
        ids = {log.header.job_id for log in logs}
        assert len(ids) == 1 and next(iter(ids)).startswith("mpi-"), ids
