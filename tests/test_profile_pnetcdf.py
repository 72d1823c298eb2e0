"""The PnetCDF layer of the profiler (native/profiler/wrap_pnetcdf.c; docs/profile.md, "PnetCDF"): a real
PnetCDF program (tests/data/pnetcdf/nc_layers.c, Debian's libpnetcdf over Open MPI) under mpirun. The
PNETCDF_FILE and PNETCDF_VAR counters must equal what the program did (collective, independent and
non-blocking calls counted apart, bytes per variable), the layers beneath (MPI-IO, POSIX) must still be
recorded, MPI_File_delete / set_info / get_info must be counted, and the program must see the same with and
without the runtime (its output, and the file, which ncmpidump reads).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from iolens.profile.job import build_job, load_job
from iolens.profile.reader import ProcessLog
from iolens.profile.report import job_report
from iolens.profile.stack import stacks

from .conftest import ProfileBuild
from .test_profile_runtime import logs_in, plain_env, profiled_env, run

DATA = Path(__file__).parent / "data" / "pnetcdf"
NP = 2
N = 1000  # elements per rank and variable (nc_layers.c)


def _compile(src: Path, out: Path) -> Path:
    if shutil.which("mpicc") is None:
        pytest.skip("mpicc not found")
    r = subprocess.run(["pkg-config", "--cflags", "--libs", "pnetcdf"], capture_output=True, text=True)
    flags = r.stdout.split() if r.returncode == 0 else ["-lpnetcdf"]
    r = subprocess.run(["mpicc", "-O1", "-o", str(out), str(src), *flags], capture_output=True, text=True)
    if r.returncode != 0 and "pnetcdf.h" in r.stderr:
        pytest.skip("PnetCDF is not installed (libpnetcdf-dev)")
    assert r.returncode == 0, r.stderr
    return out


def _rec(log: ProcessLog, module: str, name: str) -> dict[str, int]:
    mod = log.modules[module]
    assert name in mod.row_of, (name, mod.paths)
    return mod.counters(mod.row_of[name])


@pytest.fixture(scope="module")
def nc_run(
    profile_build: ProfileBuild, tmp_path_factory: pytest.TempPathFactory, mpi_env: dict[str, str]
) -> tuple[Path, Path, subprocess.CompletedProcess[bytes], subprocess.CompletedProcess[bytes], Path]:
    root = tmp_path_factory.mktemp("nc")
    prog = _compile(DATA / "nc_layers.c", root / "nc_layers")
    plain_dir, prof_dir, logs = root / "plain", root / "profiled", root / "logs"
    for d in (plain_dir, prof_dir, logs):
        d.mkdir()
    cmd = ["mpirun", "-np", str(NP), str(prog)]
    plain = run([*cmd, str(plain_dir)], {**mpi_env, **plain_env()}, timeout=300)
    env = {**mpi_env, **profiled_env(profile_build, logs, IOLENS_JOB_ID="nc-job", IOLENS_TRACE="1")}
    prof = run([*cmd, str(prof_dir)], env, timeout=300)
    return plain_dir, prof_dir, plain, prof, logs


def _ranked(logs: Path) -> dict[int, ProcessLog]:
    ranked = {log.header.rank: log for log in logs_in(logs) if log.header.rank >= 0}
    assert set(ranked) == set(range(NP))
    return ranked


@pytest.mark.mpi
def test_program_sees_the_same(nc_run) -> None:
    plain_dir, prof_dir, plain, prof, _ = nc_run
    assert plain.returncode == 0, plain.stderr.decode()
    assert prof.returncode == 0, prof.stderr.decode()
    assert sorted(prof.stdout.decode().splitlines()) == sorted(plain.stdout.decode().splitlines())
    if shutil.which("ncmpidump") is None:
        pytest.skip("ncmpidump not found (pnetcdf-bin)")
    dumps = [
        subprocess.run(["ncmpidump", str(d / "layers.nc")], capture_output=True, text=True, check=True).stdout
        for d in (plain_dir, prof_dir)
    ]
    # the same file, but for its name in the first line
    assert dumps[0].split("\n", 1)[1] == dumps[1].split("\n", 1)[1]
    assert "double b(t, x)" in dumps[1] and "t = UNLIMITED ; // (3 currently)" in dumps[1]


@pytest.mark.mpi
def test_file_counters_per_rank(nc_run) -> None:
    _, prof_dir, _, _, logs = nc_run
    path = str(prof_dir / "layers.nc")
    for log in _ranked(logs).values():
        f = _rec(log, "PNETCDF_FILE", path)
        # one create and one reopen (Darshan's OPENS leaves the creates out), two closes
        assert (f["PNETCDF_FILE_CREATES"], f["PNETCDF_FILE_OPENS"], f["PNETCDF_FILE_CLOSES"]) == (1, 1, 2)
        assert (f["PNETCDF_FILE_REDEFS"], f["PNETCDF_FILE_ENDDEFS"], f["PNETCDF_FILE_SYNCS"]) == (1, 2, 1)
        assert (f["PNETCDF_FILE_BEGIN_INDEPS"], f["PNETCDF_FILE_END_INDEPS"]) == (1, 1)
        assert (
            f["PNETCDF_FILE_COLL_WAITS"],
            f["PNETCDF_FILE_INDEP_WAITS"],
            f["PNETCDF_FILE_WAIT_FAILURES"],
        ) == (
            2,
            0,
            0,
        )
        assert f["PNETCDF_FILE_OPEN_COMM_SIZE"] == NP and f["PNETCDF_FILE_ERRORS"] == 0
        assert f["PNETCDF_FILE_MODE"] == 0  # the last open: NC_NOWRITE
        assert 0 < f["PNETCDF_FILE_F_OPEN_START_TIMESTAMP"] <= f["PNETCDF_FILE_F_OPEN_END_TIMESTAMP"]
        assert f["PNETCDF_FILE_F_OPEN_START_TIMESTAMP"] < f["PNETCDF_FILE_F_CLOSE_END_TIMESTAMP"]
        assert f["PNETCDF_FILE_F_WAIT_TIME"] > 0 and f["PNETCDF_FILE_F_META_TIME"] > 0
        # ncmpi_inq_put_size at the close: the rank's variable bytes at least (the header comes on top)
        assert f["PNETCDF_FILE_BYTES_WRITTEN"] >= 4 * N + 4 + 4 * N + 3 * 8 * N


@pytest.mark.mpi
def test_variable_counters_per_rank(nc_run) -> None:
    _, prof_dir, _, _, logs = nc_run
    path = str(prof_dir / "layers.nc")
    for log in _ranked(logs).values():
        mod = log.modules["PNETCDF_VAR"]
        assert sorted(mod.paths) == [f"{path}:{v}" for v in "abcd"]
        assert [mod.texts[mod.row_of[f"{path}:{v}"]]["variable"] for v in "abcd"] == list("abcd")
        a = _rec(log, "PNETCDF_VAR", f"{path}:a")
        # put_vara_int_all + put_var1_int (independent) + iput_vara_int; get_var_int_all of the whole of a
        assert (a["PNETCDF_VAR_COLL_WRITES"], a["PNETCDF_VAR_INDEP_WRITES"], a["PNETCDF_VAR_NB_WRITES"]) == (
            1,
            1,
            1,
        )
        assert (a["PNETCDF_VAR_PUT_VARA"], a["PNETCDF_VAR_PUT_VAR1"], a["PNETCDF_VAR_IPUT_VARA"]) == (1, 1, 1)
        assert (a["PNETCDF_VAR_BYTES_WRITTEN"], a["PNETCDF_VAR_BYTES_READ"]) == (
            4 * N + 4 + 4 * N,
            4 * NP * N,
        )
        assert (a["PNETCDF_VAR_GET_VAR"], a["PNETCDF_VAR_COLL_READS"], a["PNETCDF_VAR_OPENS"]) == (1, 1, 1)
        assert (a["PNETCDF_VAR_NDIMS"], a["PNETCDF_VAR_NPOINTS"], a["PNETCDF_VAR_DATATYPE_SIZE"]) == (
            1,
            NP * N,
            4,
        )
        assert a["PNETCDF_VAR_SIZE_WRITE_AGG_0_100"] == 1 and a["PNETCDF_VAR_SIZE_WRITE_AGG_1K_10K"] == 2
        b = _rec(log, "PNETCDF_VAR", f"{path}:b")
        # 3 records of put_vara_double_all; iget_vara_double of one record; after the reopen: inq_varid and
        # get_var_double_all of the 3 records
        assert (b["PNETCDF_VAR_COLL_WRITES"], b["PNETCDF_VAR_BYTES_WRITTEN"]) == (3, 3 * 8 * N)
        assert (b["PNETCDF_VAR_NB_READS"], b["PNETCDF_VAR_IGET_VARA"], b["PNETCDF_VAR_COLL_READS"]) == (
            1,
            1,
            1,
        )
        assert b["PNETCDF_VAR_BYTES_READ"] == 8 * N + 3 * 8 * NP * N
        assert (b["PNETCDF_VAR_OPENS"], b["PNETCDF_VAR_DEFS"], b["PNETCDF_VAR_IS_RECORD_VAR"]) == (2, 1, 1)
        assert (b["PNETCDF_VAR_NDIMS"], b["PNETCDF_VAR_NPOINTS"]) == (2, NP * N)  # per record, as Darshan's
        c = _rec(log, "PNETCDF_VAR", f"{path}:c")
        # two independent halves, one bput, one flexible put_vara_all
        assert (c["PNETCDF_VAR_INDEP_WRITES"], c["PNETCDF_VAR_NB_WRITES"], c["PNETCDF_VAR_COLL_WRITES"]) == (
            2,
            1,
            1,
        )
        assert (c["PNETCDF_VAR_PUT_VARA"], c["PNETCDF_VAR_BPUT_VARA"], c["PNETCDF_VAR_BYTES_WRITTEN"]) == (
            3,
            1,
            2 * 2 * N + 4 * N + 4 * N,
        )
        d = _rec(log, "PNETCDF_VAR", f"{path}:d")
        # put_vars_short_all of N/2 elements, put_varn_short_all of 10 + 20
        assert (d["PNETCDF_VAR_PUT_VARS"], d["PNETCDF_VAR_PUT_VARN"], d["PNETCDF_VAR_COLL_WRITES"]) == (
            1,
            1,
            2,
        )
        assert d["PNETCDF_VAR_BYTES_WRITTEN"] == 2 * (N // 2) + 2 * 30
        for v in (a, b, c, d):
            assert v["PNETCDF_VAR_ERRORS"] == 0 and v["PNETCDF_VAR_F_WRITE_TIME"] > 0


@pytest.mark.mpi
def test_layers_beneath_and_mpiio_calls(nc_run) -> None:
    _, prof_dir, _, _, logs = nc_run
    path, scratch = str(prof_dir / "layers.nc"), str(prof_dir / "scratch.bin")
    for rank, log in _ranked(logs).items():
        # PnetCDF writes through MPI-IO, MPI-IO through POSIX: the records share the path
        mpi = _rec(log, "MPIIO", path)
        assert (
            mpi["MPIIO_COLL_OPENS"] == 2 and mpi["MPIIO_COLL_WRITES"] >= 1 and mpi["MPIIO_BYTES_WRITTEN"] > 0
        )
        assert path in log.table.row_of
        s = _rec(log, "MPIIO", scratch)
        # the program's MPI_File_set_info (an info: a hint), MPI_File_get_info, rank 0's MPI_File_delete
        assert (s["MPIIO_SET_INFOS"], s["MPIIO_GET_INFOS"], s["MPIIO_HINTS"]) == (1, 1, 1)
        assert s["MPIIO_DELETES"] == (1 if rank == 0 else 0) and s["MPIIO_ERRORS"] == 0
    ops = {int(op) for log in logs_in(logs) for op in log.trace_array["op"]}
    assert {180, 181, 182, 193, 194, 195, 196, 197} <= ops  # ncmpi_create ... bput
    assert {140, 141, 142} <= ops  # MPI_File_delete, set_info, get_info


@pytest.mark.mpi
def test_job_layer(nc_run) -> None:
    _, prof_dir, _, _, logs = nc_run
    job = build_job("nc-job", logs_in(logs))
    (f,) = [f.to_json() for f in job.pnetcdf if f.path == str(prof_dir / "layers.nc")]
    assert f["ranks"] == list(range(NP)) and f["multi_rank"] and f["creates"] == NP and f["closes"] == 2 * NP
    assert f["waits"]["collective"] == 2 * NP
    assert f["beneath"]["mpiio"]["collective_writes"] >= NP and f["beneath"]["posix"]["writes"] > 0
    by_name = {v["name"]: v for v in f["variables"]}
    assert by_name["a"]["writes"] == {"independent": NP, "collective": NP, "non-blocking": NP}
    assert by_name["a"]["calls"] == {"put_var1": NP, "put_vara": NP, "get_var": NP, "iput_vara": NP}
    assert by_name["c"]["independent_writes_multi_rank"] == 2 * NP
    assert by_name["b"]["record_variable"] and by_name["b"]["bytes_written"] == NP * 3 * 8 * N


@pytest.mark.mpi
def test_report_stacks_pnetcdf_over_mpiio_and_posix(nc_run) -> None:
    """The layer stack puts PnetCDF between HDF5 and MPI-IO: the file's put/get calls by how they were made,
    then what MPI-IO and POSIX did beneath, and the sentence starts with the PnetCDF calls."""
    _, prof_dir, _, _, logs = nc_run
    report = job_report(build_job("nc-job", logs_in(logs)))
    path = str(prof_dir / "layers.nc")
    (st,) = [s for s in stacks(report["layers"]) if s.path == path]
    assert [level.layer for level in st.levels] == ["PnetCDF", "MPI-IO", "POSIX"]
    (nc,) = [f for f in report["layers"]["pnetcdf"] if f["path"] == path]
    puts = sum(sum(v["writes"].values()) for v in nc["variables"])
    gets = sum(sum(v["reads"].values()) for v in nc["variables"])
    # variable "a" alone: one independent, one collective and one non-blocking put per rank
    assert puts >= 3 * NP and gets >= NP
    assert st.sentence.startswith(
        f"PnetCDF: {puts} put and {gets} get calls on {len(nc['variables'])} variable(s), "
    )
    rows = dict(st.levels[0].rows)
    assert rows["variables"].startswith(f"{len(nc['variables'])}: ") and "a" in rows["variables"]
    assert rows["put calls"].startswith(f"{puts} (") and "non-blocking" in rows["put calls"]
    (posix,) = [f for f in report["layers"]["posix_files"] if f["path"] == path]
    assert posix["writes"] > 0 and f"{posix['writes']} POSIX writes" in st.sentence


@pytest.mark.mpi
def test_the_job_log_reduces_the_pnetcdf_layer_to_the_same_totals(
    nc_run, profile_build: ProfileBuild, mpi_env: dict[str, str], tmp_path: Path
) -> None:
    """The same program with one log per job (MPI_Finalize reduces the files every rank has): the PnetCDF
    layer's file and variables say what the per-process logs said, summed over the ranks."""
    _, prof_dir, _, _, logs = nc_run
    prog = prof_dir.parent / "nc_layers"  # nc_run's build of the program
    work, jlogs = tmp_path / "work", tmp_path / "logs"
    work.mkdir()
    jlogs.mkdir()
    env = {**mpi_env, **profiled_env(profile_build, jlogs, IOLENS_JOB_ID="nc-job", IOLENS_JOB_LOG="1")}
    r = run(["mpirun", "-np", str(NP), str(prog), str(work)], env, timeout=300)
    assert r.returncode == 0, r.stderr.decode()
    (job_log,) = sorted(jlogs.glob("*.iolj"))
    reduced = {f["path"]: f for f in job_report(load_job(job_log))["layers"]["pnetcdf"]}
    per_process = {f["path"]: f for f in job_report(build_job("nc-job", logs_in(logs)))["layers"]["pnetcdf"]}
    got, want = reduced[str(work / "layers.nc")], per_process[str(prof_dir / "layers.nc")]
    keys = ("creates", "opens", "closes", "enddefs", "syncs", "waits", "bytes_written", "bytes_read")
    assert {k: got[k] for k in keys} == {k: want[k] for k in keys}
    assert got["creates"] == NP
    vars_got = {v["name"]: v for v in got["variables"]}
    vars_want = {v["name"]: v for v in want["variables"]}
    assert set(vars_got) == set(vars_want)
    for name, v in vars_want.items():
        for k in ("reads", "writes", "calls", "bytes_read", "bytes_written", "ndims", "npoints"):
            assert vars_got[name][k] == v[k], (name, k)


def test_program_without_pnetcdf_has_no_pnetcdf_records(profile_build: ProfileBuild, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    r = run(["/bin/sh", "-c", f"echo x > {tmp_path / 'f'}"], profiled_env(profile_build, logs))
    assert r.returncode == 0
    for log in logs_in(logs):
        for m in ("PNETCDF_FILE", "PNETCDF_VAR"):
            assert m not in log.modules or len(log.modules[m]) == 0


# ---- the same program under Darshan 3.4.7 (tests/data/pnetcdf/nc_layers.darshan, 2 ranks) ----

# Darshan's counters in the JSON (iolens's own, and Darshan's known miscount, left out of the comparison).
SAME_FILE_KEYS = ("creates", "opens", "redefs", "syncs", "waits", "bytes_read", "bytes_written")
SAME_VAR_KEYS = ("opens", "reads", "writes", "calls", "bytes_written", "ndims", "npoints", "datatype_size",
                 "record_variable")  # fmt: skip


def _darshan_layer() -> dict:
    from iolens.profile.darshan_log.job import load_darshan_job

    job = load_darshan_job(DATA / "nc_layers.darshan")
    (f,) = [f.to_json() for f in job.pnetcdf]
    return f


def test_darshan_log_shows_the_same_layer() -> None:
    f = _darshan_layer()
    # Darshan reduced the common file and its variables to one record each (rank -1: every rank's)
    assert f["path"].endswith("/layers.nc") and f["ranks"] == [-1] and f["multi_rank"]
    assert (f["creates"], f["opens"], f["waits"]["collective"]) == (NP, NP, 2 * NP)
    by_name = {v["name"]: v for v in f["variables"]}
    assert sorted(by_name) == list("abcd")
    assert by_name["a"]["calls"] == {"put_var1": NP, "put_vara": NP, "get_var": NP, "iput_vara": NP}
    assert by_name["b"]["bytes_written"] == NP * 3 * 8 * N and by_name["b"]["record_variable"]
    assert by_name["c"]["writes"] == {"independent": 2 * NP, "collective": NP, "non-blocking": NP}
    assert f["beneath"]["posix"]["writes"] > 0


@pytest.mark.mpi
def test_darshan_and_iolens_agree(nc_run) -> None:
    _, prof_dir, _, _, logs = nc_run
    ours = build_job("nc-job", logs_in(logs)).pnetcdf
    (mine,) = [f.to_json() for f in ours if f.path == str(prof_dir / "layers.nc")]
    theirs = _darshan_layer()
    assert {k: mine[k] for k in SAME_FILE_KEYS} == {k: theirs[k] for k in SAME_FILE_KEYS}
    mv = {v["name"]: v for v in mine["variables"]}
    tv = {v["name"]: v for v in theirs["variables"]}
    for name in "abcd":
        assert {k: mv[name][k] for k in SAME_VAR_KEYS} == {k: tv[name][k] for k in SAME_VAR_KEYS}, name
    # Darshan 3.4.7 multiplies a whole-variable get of a fixed-size variable by the record count when the
    # file has a record dimension (docs/profile.md, "PnetCDF"): a's 2000 ints read as 3 x 8000 bytes a rank
    assert mv["a"]["bytes_read"] == NP * 4 * NP * N and tv["a"]["bytes_read"] == 3 * NP * 4 * NP * N
    assert [mv[n]["bytes_read"] for n in "bcd"] == [tv[n]["bytes_read"] for n in "bcd"]
    assert [mv[n]["access_sizes"] for n in "bcd"] == [tv[n]["access_sizes"] for n in "bcd"]
    assert mv["a"]["access_sizes"]["write"] == tv["a"]["access_sizes"]["write"]


# ---- every put/get wrapper the runtime exports, called once (a generated program) ----

TYPES = {"text": "char", "schar": "signed char", "uchar": "unsigned char", "short": "short",
         "ushort": "unsigned short", "int": "int", "uint": "unsigned int", "long": "long", "float": "float",
         "double": "double", "longlong": "long long", "ulonglong": "unsigned long long"}  # fmt: skip
XFER = re.compile(r"ncmpi_(put|get|iput|iget|bput)_var(|1|a|s|m|n|d)(?:_(" + "|".join(TYPES) + r"))?(_all)?$")
# The arguments between varid and the buffer, per kind; each access is of 4 elements but var1 (1) and var
# (the whole variable of 64).
SHAPE_ARGS = {"": "", "1": "st, ", "a": "st, ct, ", "s": "st, ct, sd, ", "m": "st, ct, sd, im, ",
              "n": "1, sts, cts, ", "d": "ftype, "}  # fmt: skip
ELEMENTS = {"": 64, "1": 1, "a": 4, "s": 4, "m": 4, "n": 4, "d": 4}


def _every_xfer_program(names: list[str]) -> tuple[str, dict[tuple[str, str, str], int]]:
    """C calls of every name (each on variable t, of NC_CHAR, for the _text forms, else on v, of NC_INT), in
    the data mode it needs; and the calls expected per (variable, api, kind)."""
    blocks: dict[str, list[str]] = {"indep": [], "coll": [], "nbput": [], "nbget": []}
    want: dict[tuple[str, str, str], int] = {}
    bufs: list[str] = []
    # the puts first (of zeros): a get of the fill value (-2147483647) into a small type would be NC_ERANGE
    for name in sorted(names, key=lambda n: "_get_" in n or "_iget_" in n):
        m = XFER.match(name)
        assert m, name
        api, kind, typ, coll = m.groups()
        var = "t" if typ == "text" else "v"
        # a buffer of its own per call: pending non-blocking gets must not share one
        bufs.append(f"static {TYPES[typ or 'int']} b{len(bufs)}[64];")
        buf = f"b{len(bufs) - 1}"
        flex = "" if typ else f", {ELEMENTS[kind]}, MPI_INT"
        req = ", &req[nreq++]" if api in ("iput", "iget", "bput") else ""
        call = f"CHECK({name}(ncid, {var}, {SHAPE_ARGS[kind]}{buf}{flex}{req}));"
        if api == "iget":  # one at a time: PnetCDF 1.12.3 fails pending gets into several types (NC_ERANGE)
            call += " CHECK(ncmpi_wait_all(ncid, 1, &req[nreq - 1], sts_));"
        nb = "nbget" if api == "iget" else "nbput"
        blocks[nb if req else "coll" if coll else "indep"].append(call)
        key = (var, api.upper(), f"VAR{kind.upper()}")
        want[key] = want.get(key, 0) + 1
    decls = "\n".join(bufs)
    src = f"""#include <mpi.h>
#include <pnetcdf.h>
#include <stdio.h>
#define CHECK(call) do {{ int e_ = (call); if (e_ != NC_NOERR) {{ \\
    fprintf(stderr, "line %d: %s\\n", __LINE__, ncmpi_strerror(e_)); \\
    MPI_Abort(MPI_COMM_WORLD, 1); }} }} while (0)
{decls}
int main(int argc, char **argv)
{{
    MPI_Init(&argc, &argv);
    int ncid, d, t, v, req[1024], sts_[1024], nreq = 0;
    MPI_Offset st[1] = {{0}}, ct[1] = {{4}}, sd[1] = {{2}}, im[1] = {{1}}, s0[1] = {{0}}, c0[1] = {{4}};
    MPI_Offset *sts[1] = {{s0}}, *cts[1] = {{c0}};
    MPI_Datatype ftype;
    MPI_Type_contiguous(4, MPI_INT, &ftype);
    MPI_Type_commit(&ftype);
    CHECK(ncmpi_create(MPI_COMM_WORLD, argv[1], NC_CLOBBER, MPI_INFO_NULL, &ncid));
    CHECK(ncmpi_def_dim(ncid, "x", 64, &d));
    CHECK(ncmpi_def_var(ncid, "t", NC_CHAR, 1, &d, &t));
    CHECK(ncmpi_def_var(ncid, "v", NC_INT, 1, &d, &v));
    CHECK(ncmpi_enddef(ncid));
    {chr(10).join(blocks["coll"])}
    CHECK(ncmpi_begin_indep_data(ncid));
    {chr(10).join(blocks["indep"])}
    CHECK(ncmpi_end_indep_data(ncid));
    CHECK(ncmpi_buffer_attach(ncid, 64 * 64 * 8));
    {chr(10).join(blocks["nbput"])}
    CHECK(ncmpi_wait_all(ncid, nreq, req, sts_));
    {chr(10).join(blocks["nbget"])}
    CHECK(ncmpi_buffer_detach(ncid));
    CHECK(ncmpi_close(ncid));
    MPI_Type_free(&ftype);
    printf("calls %d\\n", {len(names)});
    MPI_Finalize();
    return 0;
}}
"""
    return src, want


@pytest.mark.mpi
def test_every_put_get_wrapper_records_its_call(
    profile_build: ProfileBuild, tmp_path: Path, mpi_env: dict[str, str]
) -> None:
    """The census of the PnetCDF layer (tests/test_profile_census.py leaves it to this file): every put/get
    form the runtime exports, called once with arguments of its own signature, lands in its kind's counter
    (a wrapper that forwards its arguments wrongly fails the call; one that counts wrongly, the sums)."""
    from .test_profile_census import exported

    names = sorted(n for n in exported(profile_build.lib) if XFER.match(n))
    assert len(names) == 6 * 7 * 13 + 4  # 6 kinds x 7 families x (flexible + 12 types), and vard's 4
    src, want = _every_xfer_program(names)
    (tmp_path / "every.c").write_text(src)
    prog = _compile(tmp_path / "every.c", tmp_path / "every")
    logs = tmp_path / "logs"
    logs.mkdir()
    cmd = ["mpirun", "-np", "1", str(prog), str(tmp_path / "every.nc")]
    plain = run(cmd, {**mpi_env, **plain_env()}, timeout=300)
    assert plain.returncode == 0, plain.stderr.decode()
    prof = run(cmd, {**mpi_env, **profiled_env(profile_build, logs)}, timeout=300)
    assert prof.returncode == 0 and prof.stdout == plain.stdout, prof.stderr.decode()
    (log,) = [
        log for log in logs_in(logs) if "PNETCDF_VAR" in log.modules and len(log.modules["PNETCDF_VAR"])
    ]
    mod = log.modules["PNETCDF_VAR"]
    got = {}
    for var in ("t", "v"):
        c = mod.counters(mod.row_of[f"{tmp_path / 'every.nc'}:{var}"])
        assert c["PNETCDF_VAR_ERRORS"] == 0
        for api in ("PUT", "GET", "IPUT", "IGET", "BPUT"):
            for kind in ("VAR", "VAR1", "VARA", "VARS", "VARM", "VARN", "VARD"):
                n = c.get(f"PNETCDF_VAR_{api}_{kind}", 0)
                if n:
                    got[(var, api, kind)] = n
        # each call's bytes: its elements x the type size (1 for the char variable, 4 for the int one)
        size = 1 if var == "t" else 4
        for what, apis in (("WRITTEN", ("put", "iput", "bput")), ("READ", ("get", "iget"))):
            expect = sum(
                ELEMENTS[m.group(2)] * size
                for n in names
                if (m := XFER.match(n))
                and m.group(1) in apis
                and ("t" if m.group(3) == "text" else "v") == var
            )
            assert c[f"PNETCDF_VAR_BYTES_{what}"] == expect, (var, what)
    assert got == want


def test_text_report_shows_the_layer() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "iolens", "profile", "report", str(DATA / "nc_layers.darshan")],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert r.returncode == 0, r.stderr
    assert "PnetCDF variables (reads, writes: independent/collective/non-blocking)" in r.stdout
    rows = [line.split() for line in r.stdout.splitlines() if line.startswith("/") and "layers.nc:" in line]
    by_var: dict[str, list[str]] = {}
    for row in rows:  # the layer's table first (the Darshan member's own table of variables follows)
        by_var.setdefault(row[0].rsplit(":", 1)[1], row)
    # variable, ranks, opens, reads, writes (independent/collective/non-blocking) ...
    assert by_var["c"][1:5] == ["all", "2", "0/0/0", "4/2/2"] and by_var["d"][4] == "0/4/0"
    flat = r.stdout.replace("\n", "")  # the file's line folds at the console's width
    line = flat[flat.index("PnetCDF file ") :]
    assert "2 creates, 2 opens" in line and "waits 0/4" in line and "beneath: POSIX" in line


@pytest.mark.mpi
def test_failed_calls(profile_build: ProfileBuild, tmp_path: Path, mpi_env: dict[str, str]) -> None:
    """A failed put counts in PNETCDF_VAR_ERRORS alone; a failed open of an unknown file, a failed inq_varid
    (asking whether a name exists) and a put to an id that names no variable count nothing; the program sees
    the same return codes."""
    prog = _compile(DATA / "nc_errors.c", tmp_path / "nc_errors")
    plain_dir, prof_dir, logs = tmp_path / "plain", tmp_path / "profiled", tmp_path / "logs"
    for d in (plain_dir, prof_dir, logs):
        d.mkdir()
    cmd = ["mpirun", "-np", "1", str(prog)]
    plain = run([*cmd, str(plain_dir)], {**mpi_env, **plain_env()}, timeout=300)
    prof = run([*cmd, str(prof_dir)], {**mpi_env, **profiled_env(profile_build, logs)}, timeout=300)
    assert plain.returncode == prof.returncode == 0, prof.stderr.decode()
    assert prof.stdout == plain.stdout and b"put past the end 1" in prof.stdout and b"put 0" in prof.stdout
    (log,) = [
        log for log in logs_in(logs) if "PNETCDF_FILE" in log.modules and len(log.modules["PNETCDF_FILE"])
    ]
    path = str(prof_dir / "errors.nc")
    assert log.modules["PNETCDF_FILE"].paths == [path]  # the missing file has no record
    f = _rec(log, "PNETCDF_FILE", path)
    assert (f["PNETCDF_FILE_CREATES"], f["PNETCDF_FILE_OPENS"], f["PNETCDF_FILE_ERRORS"]) == (1, 0, 0)
    v = _rec(log, "PNETCDF_VAR", f"{path}:v")
    assert (v["PNETCDF_VAR_ERRORS"], v["PNETCDF_VAR_COLL_WRITES"], v["PNETCDF_VAR_PUT_VARA"]) == (1, 1, 1)
    assert (v["PNETCDF_VAR_BYTES_WRITTEN"], v["PNETCDF_VAR_OPENS"]) == (16, 1)
    assert log.modules["PNETCDF_VAR"].paths == [f"{path}:v"]
