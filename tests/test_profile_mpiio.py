"""The MPI-IO layer of the profiler (native/profiler/wrap_mpiio.c; docs/profile.md, "MPI-IO"): real programs
under the real mpirun, compiled here with mpicc and mpifort (tests/data/mpiio). The MPIIO counters of each
rank must equal what the program says it did; the POSIX records of the same files must be there beneath;
the program must see the same results with and without the runtime. (The reader's side of the module
records, from logs written from the document alone: tests/test_profile_modules.py.)
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from iolens.profile.job import build_job
from iolens.profile.reader import ProcessLog

from .conftest import ProfileBuild
from .test_profile_runtime import logs_in, plain_env, profiled_env, run

DATA = Path(__file__).parent / "data" / "mpiio"
NP = 3
# (plain run's directory, profiled run's directory, plain run, profiled run, the profiled run's logs)
MpiioRun = tuple[Path, Path, subprocess.CompletedProcess[bytes], subprocess.CompletedProcess[bytes], Path]


def _compile(compiler: str, src: Path, out: Path, *flags: str) -> Path:
    if shutil.which(compiler) is None:
        pytest.skip(f"{compiler} not found")
    r = subprocess.run(
        [compiler, "-O1", *flags, "-o", str(out), str(src)], capture_output=True, text=True, check=False
    )
    assert r.returncode == 0, r.stderr
    return out


@pytest.fixture(scope="module")
def c_prog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _compile("mpicc", DATA / "mpiio_calls.c", tmp_path_factory.mktemp("mpiio") / "mpiio_calls")


def _mpirun(prog: Path, work: Path, env: dict[str, str], np_: int = NP) -> subprocess.CompletedProcess[bytes]:
    """Its stdout is the ranks' own, read from the files Open MPI writes for each (--output-filename), in
    rank order: on mpirun's shared stdout a long line of one rank can be cut by another rank's."""
    out_dir = work.parent / f"{work.name}.out"
    r = run(
        ["mpirun", "-np", str(np_), "--output-filename", str(out_dir), str(prog), str(work)], env, timeout=300
    )
    ranks = sorted(out_dir.glob("*/rank.*/stdout"), key=lambda p: int(p.parent.name.split(".")[-1]))
    r.stdout = b"".join(p.read_bytes() for p in ranks)
    return r


def _profiled(build: ProfileBuild, logs: Path, mpi_env: dict[str, str], **extra: str) -> dict[str, str]:
    env = {**mpi_env, **profiled_env(build, logs, IOLENS_JOB_ID="mpiio-job", **extra)}
    env["LD_PRELOAD"] = str(build.lib)
    return env


def _ranked(logs: Path) -> dict[int, ProcessLog]:
    out = {log.header.rank: log for log in logs_in(logs) if log.header.rank >= 0}
    assert set(out) == set(range(NP)), sorted(out)
    return out


def _tallies(stdout: bytes) -> dict[int, dict[str, dict[str, int]]]:
    out = {}
    for line in stdout.decode().splitlines():
        if line.startswith("TALLY "):
            _, rank, doc = line.split(" ", 2)
            out[int(rank)] = json.loads(doc)
    assert set(out) == set(range(NP))
    return out


def _contents(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.is_file()}


@pytest.fixture(scope="module")
def mpiio_run(
    c_prog: Path,
    profile_build: ProfileBuild,
    tmp_path_factory: pytest.TempPathFactory,
    mpi_env: dict[str, str],
) -> MpiioRun:
    """The program run twice at NP ranks: without the runtime, and with it (traced)."""
    root = tmp_path_factory.mktemp("mpiio-run")
    plain_dir, prof_dir, logs = root / "plain", root / "profiled", root / "logs"
    for d in (plain_dir, prof_dir, logs):
        d.mkdir()
    plain = _mpirun(c_prog, plain_dir, {**mpi_env, **plain_env()})
    prof = _mpirun(c_prog, prof_dir, _profiled(profile_build, logs, mpi_env, IOLENS_TRACE="1"))
    return plain_dir, prof_dir, plain, prof, logs


@pytest.mark.mpi
def test_the_program_sees_the_same_with_the_runtime(mpiio_run: MpiioRun) -> None:
    """Return codes, the byte counts of the statuses (blocking and waited-for requests) and the files."""
    plain_dir, prof_dir, plain, prof, _ = mpiio_run
    assert plain.returncode == 0, plain.stderr.decode()
    assert prof.returncode == 0, prof.stderr.decode()
    assert sorted(prof.stdout.decode().splitlines()) == sorted(plain.stdout.decode().splitlines())
    assert _contents(prof_dir) == _contents(plain_dir)


@pytest.mark.mpi
def test_each_rank_counts_what_it_did(mpiio_run: MpiioRun) -> None:
    _, prof_dir, _, prof, logs = mpiio_run
    tallies = _tallies(prof.stdout)
    for rank, log in _ranked(logs).items():
        assert log.clean
        mod = log.modules["MPIIO"]
        for name, want in tallies[rank].items():
            path = str(prof_dir / (f"own.{rank}" if name == "own" else name))
            got = mod.counters(mod.row_of[path])
            for counter, value in want.items():
                assert got[counter] == value, (rank, name, counter)
            assert got["MPIIO_ERRORS"] == 0
            opens = want["MPIIO_COLL_OPENS"] + want["MPIIO_INDEP_OPENS"]
            assert got["MPIIO_CLOSES"] == opens
            # the time stamps frame the calls
            assert 0 < got["MPIIO_F_OPEN_START_TIMESTAMP"] <= got["MPIIO_F_CLOSE_END_TIMESTAMP"]
            assert got["MPIIO_F_WRITE_TIME"] > 0 and got["MPIIO_F_META_TIME"] > 0
        shared = mod.counters(mod.row_of[str(prof_dir / "shared.dat")])
        # 4 writes of 4000 B, 3 of 100, 2 of 1024, 2 of 200, 1 of 300, 1 of 512, 1 of 64; Darshan's buckets
        # include their upper bound (100 is in 0_100, 1024 in 100_1K)
        assert shared["MPIIO_SIZE_WRITE_AGG_1K_10K"] == 4
        assert shared["MPIIO_SIZE_WRITE_AGG_0_100"] == 3 + 1
        assert shared["MPIIO_SIZE_WRITE_AGG_100_1K"] == 2 + 2 + 1 + 1
        # the most common access size, reads and writes together (as Darshan's): 4 writes, 2 reads of 4000 B
        assert (shared["MPIIO_ACCESS1_ACCESS"], shared["MPIIO_ACCESS1_COUNT"]) == (4000, 6)
        assert shared["MPIIO_RW_SWITCHES"] >= 2
        own = mod.counters(mod.row_of[str(prof_dir / f"own.{rank}")])
        assert own["MPIIO_SIZE_WRITE_AGG_10K_100K"] == 10 and own["MPIIO_SIZE_READ_AGG_10K_100K"] == 10
        assert own["MPIIO_OPEN_COMM_SIZE"] == 1


@pytest.mark.mpi
def test_the_program_calls_every_c_wrapper(mpiio_run: MpiioRun, profile_build: ProfileBuild) -> None:
    """The census of the MPI-IO layer (tests/test_profile_census.py leaves it to this file): every C
    MPI_File_* the runtime exports is traced in the run (a wrapper added without a call here fails)."""
    from .test_profile_census import exported

    *_, logs = mpiio_run
    wrapped = {n for n in exported(profile_build.lib) if n.startswith("MPI_File_")}
    traced = {e.op for log in _ranked(logs).values() for e in log.trace}
    assert wrapped and wrapped <= traced, sorted(wrapped - traced)


@pytest.mark.mpi
def test_hints_in_effect_are_recorded(mpiio_run: MpiioRun) -> None:
    _, prof_dir, _, _, logs = mpiio_run
    for log in _ranked(logs).values():
        mod = log.modules["MPIIO"]
        hints = mod.texts[mod.row_of[str(prof_dir / "shared.dat")]].get("hints", "")
        pairs = dict(line.split("=", 1) for line in hints.splitlines())
        # what MPI_File_get_info gives back of the hints the program set
        assert pairs.get("cb_nodes") == "1", hints
        assert mod.counters(mod.row_of[str(prof_dir / "shared.dat")])["MPIIO_HINTS"] == 1


@pytest.mark.mpi
def test_posix_records_of_the_same_files_lie_beneath(mpiio_run: MpiioRun) -> None:
    _, prof_dir, _, prof, logs = mpiio_run
    ranked = _ranked(logs)
    for rank, log in ranked.items():
        own = log.files[str(prof_dir / f"own.{rank}")]
        # MPI_File_read and _write of 64 KiB on a file of one rank: the bytes reach the file system from that
        # rank; a preallocate may write the preallocated room as well (Open MPI's OMPIO writes it all)
        assert own["POSIX_BYTES_READ"] == 10 * 65536
        assert 10 * 65536 <= own["POSIX_BYTES_WRITTEN"] <= (10 + 11) * 65536
    shared = str(prof_dir / "shared.dat")
    assert sum(log.files[shared]["POSIX_BYTES_WRITTEN"] for log in ranked.values() if shared in log.files) > 0


@pytest.mark.mpi
def test_the_job_stacks_mpiio_over_posix(mpiio_run: MpiioRun) -> None:
    _, prof_dir, _, prof, logs = mpiio_run
    tallies = _tallies(prof.stdout)
    job = build_job("mpiio-job", logs_in(logs))
    files = {f.path: f for f in job.mpiio}
    shared = files[str(prof_dir / "shared.dat")]
    assert shared.ranks == tuple(range(NP)) and shared.shared
    for counter in ("MPIIO_COLL_WRITES", "MPIIO_INDEP_WRITES", "MPIIO_BYTES_WRITTEN", "MPIIO_NB_READS"):
        assert shared.count(counter) == sum(t["shared.dat"][counter] for t in tallies.values()), counter
    assert shared.ops["collective"]["writes"] == NP * 5
    assert shared.kind_ranks["split collective"] == tuple(range(NP))
    indep = sum(
        t["shared.dat"]["MPIIO_INDEP_WRITES"] + t["shared.dat"]["MPIIO_NB_WRITES"] for t in tallies.values()
    )
    assert shared.written_collectively and shared.independent_small_writes == indep
    assert shared.hints.get("cb_nodes") == "1"
    assert shared.posix_writes > 0 and shared.posix_writer_ranks
    # every rank wrote shared.dat through POSIX too (its independent writes)
    assert shared.posix_writer_ranks == tuple(range(NP)) and shared.collective_buffering is None
    # coll.dat is written by collective calls alone: Open MPI aggregates its small interleaved pieces, and
    # fewer ranks (the aggregators) than made the MPI-IO calls write it to the file system
    coll = files[str(prof_dir / "coll.dat")]
    assert coll.ops["collective"]["writes"] == 4 * NP and coll.mpiio_writer_ranks == tuple(range(NP))
    assert 0 < len(coll.posix_writer_ranks) < NP
    assert coll.collective_buffering == {
        "write": {"mpiio_ranks": NP, "posix_ranks": len(coll.posix_writer_ranks),
                  "aggregators": list(coll.posix_writer_ranks)}
    }  # fmt: skip
    assert coll.posix_writes > 0 and coll.independent_small_writes == 0
    own = files[str(prof_dir / "own.0")]
    assert own.ranks == (0,) and not own.shared and own.posix_writer_ranks == (0,)
    assert own.independent_small_writes == 0  # not shared, and its writes are 64 KiB: small, but its own
    ordered = files[str(prof_dir / "ordered.dat")]
    assert ordered.independent_small_writes == NP  # one write_shared of 50 B per rank


@pytest.mark.mpi
def test_mpiio_calls_are_traced(mpiio_run: MpiioRun) -> None:
    _, prof_dir, _, _, logs = mpiio_run
    for log in _ranked(logs).values():
        events = [e for e in log.trace if e.path == str(prof_dir / "shared.dat")]
        ops = [e.op for e in events]
        assert ops.count("MPI_File_write_at_all") == 4
        assert ops.count("MPI_File_open") == 1 and ops.count("MPI_File_close") == 1
        at_all = [e for e in events if e.op == "MPI_File_write_at_all"]
        assert all(e.size == 4000 and e.result == 0 for e in at_all)
        # the POSIX calls the MPI library made are traced beneath
        assert any(
            e.op in ("pwrite", "pwritev", "write", "writev")
            for e in log.trace
            if e.path and Path(e.path).name.startswith("own.")
        )


@pytest.mark.mpi
def test_report_json_and_text_show_the_layer(mpiio_run: MpiioRun) -> None:
    _, prof_dir, _, _, logs = mpiio_run
    exe = Path(__file__).parents[1] / ".venv" / "bin" / "iolens"
    iolens = str(exe) if exe.exists() else "iolens"
    r = subprocess.run([iolens, "profile", "report", str(logs), "--json"], capture_output=True, check=False)
    assert r.returncode == 0, r.stderr.decode()
    doc = json.loads(r.stdout)
    (job,) = doc["jobs"]
    entries = {e["path"]: e for e in job["layers"]["mpiio"]}
    shared = entries[str(prof_dir / "shared.dat")]
    assert shared["ranks"] == list(range(NP))
    assert shared["ops"]["non-blocking"] == {"reads": NP, "writes": 3 * NP}
    assert shared["opens"] == {"independent": 0, "collective": NP}
    assert shared["posix"]["writes"] > 0
    text = subprocess.run([iolens, "profile", "report", str(logs)], capture_output=True, check=False)
    assert text.returncode == 0 and b"MPI-IO layer" in text.stdout


FORTRAN = {"mpifh": (), "f08": ("-DF08",)}


@pytest.mark.mpi
@pytest.mark.parametrize("binding", sorted(FORTRAN))
def test_fortran_mpiio_is_recorded(
    binding: str, profile_build: ProfileBuild, tmp_path: Path, mpi_env: dict[str, str]
) -> None:
    """Open MPI's Fortran bindings call PMPI_File_* (mpif.h) or ompi_file_*_f (mpi_f08), never the C
    MPI_File_*: the runtime wraps their own entry points, and counts each call once."""
    prog = _compile("mpifort", DATA / "mpiio_fortran.F90", tmp_path / binding, *FORTRAN[binding])
    work, logs = tmp_path / "work", tmp_path / "logs"
    work.mkdir()
    logs.mkdir()
    r = _mpirun(prog, work, _profiled(profile_build, logs, mpi_env), np_=2)
    assert r.returncode == 0, r.stderr.decode()
    assert sorted(r.stdout.decode().splitlines()) == ["rank 0 done 0", "rank 1 done 0"]
    ranked = {log.header.rank: log for log in logs_in(logs) if log.header.rank >= 0}
    assert set(ranked) == {0, 1}
    for log in ranked.values():
        mod = log.modules["MPIIO"]
        c = mod.counters(mod.row_of[str(work / "fortran.dat")])
        want = {
            "MPIIO_COLL_OPENS": 1, "MPIIO_COLL_WRITES": 3, "MPIIO_INDEP_WRITES": 2, "MPIIO_NB_WRITES": 1,
            "MPIIO_BYTES_WRITTEN": 3 * 1024 + 2 * 256 + 64, "MPIIO_SYNCS": 1, "MPIIO_COLL_READS": 1,
            "MPIIO_BYTES_READ": 1024, "MPIIO_VIEWS": 1, "MPIIO_HINTS": 1, "MPIIO_CLOSES": 1,
            "MPIIO_OPEN_COMM_SIZE": 2, "MPIIO_ERRORS": 0,
        }  # fmt: skip
        assert {k: c[k] for k in want} == want
        assert dict(line.split("=", 1) for line in mod.texts[0]["hints"].splitlines()).get("cb_nodes") == "1"


def test_large_count_forms_build_against_an_mpi4_header(tmp_path: Path) -> None:
    """The MPI-4 large-count wrappers (MPI_File_write_at_all_c, ...) are built only where mpi.h declares
    MPI 4: Open MPI 4.1's does not (none here), so they are compiled against its header made to
    (tests/data/mpi4) and must give the 28 _c forms of the transfer calls (all but the split collectives'
    _end)."""
    if shutil.which("mpicc") is None:
        pytest.skip("mpicc not found")
    repo = Path(__file__).resolve().parent.parent
    flags = subprocess.run(["mpicc", "--showme:compile"], capture_output=True, text=True).stdout.split()
    if not flags:
        pytest.skip("mpicc --showme:compile gives nothing (not Open MPI)")
    obj = tmp_path / "wrap_mpiio.o"
    src = repo / "native" / "profiler" / "wrap_mpiio.c"
    cmd = ["cc", "-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror", "-fPIC", "-c",
           f"-I{repo / 'tests' / 'data' / 'mpi4'}", *flags, f"-I{repo / 'native' / 'profiler'}",
           f"-I{repo / 'native'}", "-o", str(obj), str(src)]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    nm = subprocess.run(["nm", str(obj)], capture_output=True, text=True, check=True).stdout.split("\n")
    large = sorted(line.split()[-1] for line in nm if line.endswith("_c") and " T MPI_File_" in line)
    assert len(large) == 28 and "MPI_File_write_at_all_c" in large and "MPI_File_iread_shared_c" in large
