"""iolens's MPIIO, H5F and H5D counters side by side with Darshan 3.4.7's (docs/profile.md, "iolens and
Darshan: where the meanings differ"): one program (tests/data/darshan_agreement/mpi_hdf5_calls.c: MPI-IO
calls of every kind on one file, then parallel HDF5 on another) run at 2 ranks under the real mpirun, once
with iolens's runtime and once with Darshan's, then `iolens profile report --json` of iolens's logs compared
with darshan-parser's output of Darshan's log. Where a counter means the same in both, both must equal what
the program says it did; where the docs say they differ, the difference must be the one documented.

Runs only where a Darshan build with its MPI-IO and HDF5 modules exists (bench/build_darshan.sh makes one:
$IOLENS_DARSHAN names its install prefix, default $IOLENS_PEERS/darshan/install or
/var/tmp/iolens-peers/darshan/install) and skips otherwise, saying why.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from .conftest import ProfileBuild
from .test_profile_mpiio import _mpirun, _profiled
from .test_profile_runtime import plain_env

DATA = Path(__file__).parent / "data" / "darshan_agreement"
NP = 2
# Counters that describe the file or dataset rather than count calls: one value, not a sum over ranks.
STATIC = ("MODE", "USE_MPIIO", "NDIMS", "NPOINTS", "DATATYPE_SIZE", "CHUNK_SIZE", "MAX_READ_TIME_SIZE",
          "MAX_WRITE_TIME_SIZE", "USE_MPIIO_COLLECTIVE")  # fmt: skip
BUCKETS = ("0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M", "1M_4M", "4M_10M", "10M_100M", "100M_1G",
           "1G_PLUS")  # fmt: skip
Counters = dict[str, float]


def is_static(counter: str) -> bool:
    return any(s in counter for s in STATIC)


def darshan_prefix() -> Path:
    explicit = os.environ.get("IOLENS_DARSHAN")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("IOLENS_PEERS", "/var/tmp/iolens-peers")) / "darshan" / "install"


@pytest.fixture(scope="module")
def darshan() -> Path:
    prefix = darshan_prefix()
    for need in ("lib/libdarshan.so", "bin/darshan-parser"):
        if not (prefix / need).is_file():
            pytest.skip(f"no Darshan build at {prefix} ({need} missing): bench/build_darshan.sh makes one")
    return prefix


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    h5 = subprocess.run(["pkg-config", "--cflags", "--libs", "hdf5-openmpi"], capture_output=True, text=True)
    if shutil.which("pkg-config") is None or h5.returncode != 0:
        pytest.skip("parallel HDF5 (pkg-config hdf5-openmpi) not found")
    if shutil.which("mpicc") is None:
        pytest.skip("mpicc not found")
    out = tmp_path_factory.mktemp("agreement") / "mpi_hdf5_calls"
    src = DATA / "mpi_hdf5_calls.c"
    r = subprocess.run(
        ["mpicc", "-O1", "-o", str(out), str(src), *h5.stdout.split()], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    return out


def did(stdout: bytes) -> dict[str, Counters]:
    """What the program says it did, by Darshan's counter names, summed over the ranks (each rank prints its
    own; a static counter is the same on every rank)."""
    docs = [json.loads(line[4:]) for line in stdout.decode().splitlines() if line.startswith("DID ")]
    assert len(docs) == NP, stdout.decode()[-500:]
    out: dict[str, Counters] = {}
    for module in docs[0]:
        out[module] = {
            k: v if is_static(k) else sum(d[module][k] for d in docs) for k, v in docs[0][module].items()
        }
    return out


def parse_darshan(text: str) -> dict[tuple[str, str], Counters]:
    """darshan-parser's lines, (module, record name's last part) -> counter -> value over the ranks: a sum,
    or for a static counter the largest (a file every rank opened is one reduced record, rank -1)."""
    out: dict[tuple[str, str], Counters] = defaultdict(dict)
    for line in text.splitlines():
        f = line.split("\t")
        if line.startswith("#") or len(f) < 6:
            continue
        module, counter, value, name = f[0], f[3], float(f[4]), f[5].rsplit("/", 1)[-1]
        if module not in ("MPI-IO", "H5F", "H5D"):
            continue
        rec = out[(module, name)]
        rec[counter] = max(rec.get(counter, 0), value) if is_static(counter) else rec.get(counter, 0) + value
    return dict(out)


@pytest.fixture(scope="module")
def both(
    darshan: Path,
    program: Path,
    profile_build: ProfileBuild,
    iolens_bin: list[str],
    tmp_path_factory: pytest.TempPathFactory,
    mpi_env: dict[str, str],
) -> dict[str, Any]:
    """The program under Darshan and under iolens: what it did, Darshan's counters, iolens's report."""
    root = tmp_path_factory.mktemp("agree")
    for d in ("d", "i", "dlog", "ilog"):
        (root / d).mkdir()
    denv = {**mpi_env, **plain_env(), "LD_PRELOAD": str(darshan / "lib" / "libdarshan.so")}
    # Darshan's default list leaves out /dev/, /var/, /usr/, …, where pytest's temporary directory may be
    # (TMPDIR): it gets iolens's list instead.
    denv.update(DARSHAN_LOGPATH=str(root / "dlog"), DARSHAN_EXCLUDE_DIRS="/proc/,/sys/")
    dr = _mpirun(program, root / "d", denv, NP)
    assert dr.returncode == 0, dr.stderr.decode()[-1000:]
    ir = _mpirun(program, root / "i", _profiled(profile_build, root / "ilog", mpi_env), NP)
    assert ir.returncode == 0, ir.stderr.decode()[-1000:]
    assert did(dr.stdout) == did(ir.stdout)
    logs = list((root / "dlog").glob("*.darshan"))
    assert len(logs) == 1, logs
    parsed = subprocess.run(
        [str(darshan / "bin" / "darshan-parser"), str(logs[0])], capture_output=True, text=True, check=True
    )
    report = subprocess.run(
        [*iolens_bin, "profile", "report", "--json", str(root / "ilog")], capture_output=True, text=True
    )
    assert report.returncode == 0, report.stderr
    jobs = json.loads(report.stdout)["jobs"]
    assert len(jobs) == 1
    return {"did": did(ir.stdout), "darshan": parse_darshan(parsed.stdout), "iolens": jobs[0]["layers"]}


def iolens_mpiio(both: dict[str, Any], name: str) -> Counters:
    """The report's MPI-IO entry of a file, in Darshan's counter names."""
    (e,) = [e for e in both["iolens"]["mpiio"] if e["path"].endswith("/" + name)]
    ops = e["ops"]
    out = {
        "MPIIO_INDEP_OPENS": e["opens"]["independent"],
        "MPIIO_COLL_OPENS": e["opens"]["collective"],
        "MPIIO_MODE": e["mode"],
        "MPIIO_VIEWS": e["views"],
        "MPIIO_SYNCS": e["syncs"],
        "MPIIO_HINTS": e["hints_given"],
        "MPIIO_BYTES_READ": e["bytes_read"],
        "MPIIO_BYTES_WRITTEN": e["bytes_written"],
        "MPIIO_RW_SWITCHES": e["rw_switches"],
        "MPIIO_SET_SIZES": e["set_sizes"],
    }
    for kind, prefix in (("independent", "INDEP"), ("collective", "COLL"), ("split collective", "SPLIT"),
                         ("non-blocking", "NB")):  # fmt: skip
        out[f"MPIIO_{prefix}_READS"] = ops[kind]["reads"]
        out[f"MPIIO_{prefix}_WRITES"] = ops[kind]["writes"]
    out.update(_buckets("MPIIO", e["access_sizes"]))
    return out


def iolens_h5(both: dict[str, Any], name: str, dataset: str) -> tuple[Counters, Counters]:
    """The report's H5F entry of a file and H5D entry of one of its datasets, in Darshan's names."""
    (f,) = [e for e in both["iolens"]["hdf5"] if e["path"].endswith("/" + name)]
    (d,) = [e for e in f["datasets"] if e["name"] == dataset]
    h5f = {"H5F_OPENS": f["opens"], "H5F_FLUSHES": f["flushes"], "H5F_USE_MPIIO": int(f["use_mpiio"])}
    sel = d["selections"]
    h5d = {
        "H5D_OPENS": d["opens"],
        "H5D_READS": d["reads"],
        "H5D_WRITES": d["writes"],
        "H5D_BYTES_READ": d["bytes_read"],
        "H5D_BYTES_WRITTEN": d["bytes_written"],
        "H5D_RW_SWITCHES": d["rw_switches"],
        "H5D_REGULAR_HYPERSLAB_SELECTS": sel["regular_hyperslab"],
        "H5D_IRREGULAR_HYPERSLAB_SELECTS": sel["irregular_hyperslab"],
        "H5D_POINT_SELECTS": sel["points"],
        "H5D_ALL_SELECTS": sel["all"],
        "H5D_USE_MPIIO_COLLECTIVE": int(d["use_mpiio_collective"]),
        "H5D_DATATYPE_SIZE": d["datatype_size"],
        "H5D_DATASPACE_NDIMS": d["ndims"],
        "H5D_DATASPACE_NPOINTS": d["npoints"],
        "H5D_CHUNK_SIZE_D1": d["chunk_shape"][-1] if d["chunk_shape"] else 0,
    }
    h5d.update(_buckets("H5D", d["access_sizes"]))
    return h5f, h5d


def _buckets(module: str, sizes: dict[str, list[int]]) -> Counters:
    out: Counters = {}
    for kind in ("read", "write"):
        for b, n in zip(BUCKETS, sizes[kind], strict=True):
            out[f"{module}_SIZE_{kind.upper()}_AGG_{b}"] = n
    return out


def common_sizes(rec: Counters, module: str) -> set[tuple[int, int]]:
    return {
        (int(rec.get(f"{module}_ACCESS{i}_ACCESS", 0)), int(rec.get(f"{module}_ACCESS{i}_COUNT", 0)))
        for i in range(1, 5)
        if rec.get(f"{module}_ACCESS{i}_COUNT", 0)
    }


def agree(names: list[str], program: Counters, darshan: Counters, iolens: Counters) -> None:
    """Each counter: iolens's value, Darshan's (0 when darshan-parser printed nothing) and the program's
    (where it said) are one value."""
    for c in names:
        want = program.get(c, darshan.get(c, 0))
        assert (c, iolens[c], darshan.get(c, 0)) == (c, want, want)


MPIIO_SAME = """MPIIO_INDEP_OPENS MPIIO_COLL_OPENS MPIIO_MODE MPIIO_VIEWS MPIIO_SYNCS MPIIO_HINTS
    MPIIO_BYTES_READ MPIIO_RW_SWITCHES MPIIO_INDEP_READS MPIIO_INDEP_WRITES MPIIO_COLL_READS MPIIO_COLL_WRITES
    MPIIO_SPLIT_READS MPIIO_SPLIT_WRITES MPIIO_NB_READS""".split()


@pytest.mark.mpi
def test_mpiio_counters_agree_with_darshan_and_the_program(both: dict[str, Any]) -> None:
    darshan = both["darshan"][("MPI-IO", "mpiio.dat")]
    iolens = iolens_mpiio(both, "mpiio.dat")
    reads = [c for c in iolens if c.startswith("MPIIO_SIZE_READ_AGG_")]
    agree(MPIIO_SAME + reads, both["did"]["MPIIO"], darshan, iolens)


@pytest.mark.mpi
def test_iwrite_at_all_is_counted_by_iolens_only(both: dict[str, Any]) -> None:
    """Darshan 3.4.7 wraps MPI_File_iwrite_at but not MPI_File_iwrite_at_all (nor iwrite_all, iread_all,
    iread_at_all): the program's 2 non-blocking writes per rank are 1 in Darshan, 4096 bytes fewer. Darshan
    has no counter of MPI_File_set_size."""
    did, darshan = both["did"]["MPIIO"], both["darshan"][("MPI-IO", "mpiio.dat")]
    iolens = iolens_mpiio(both, "mpiio.dat")
    assert iolens["MPIIO_NB_WRITES"] == did["MPIIO_NB_WRITES"] == 2 * NP
    assert darshan["MPIIO_NB_WRITES"] == NP
    assert iolens["MPIIO_BYTES_WRITTEN"] == did["MPIIO_BYTES_WRITTEN"]
    assert darshan["MPIIO_BYTES_WRITTEN"] == did["MPIIO_BYTES_WRITTEN"] - 4096 * NP
    assert (iolens["MPIIO_SIZE_WRITE_AGG_1K_10K"], darshan["MPIIO_SIZE_WRITE_AGG_1K_10K"]) == (6 * NP, 5 * NP)
    assert common_sizes(darshan, "MPIIO") == {(4096, 6 * NP), (1000, 2 * NP)}
    (e,) = [e for e in both["iolens"]["mpiio"] if e["path"].endswith("/mpiio.dat")]
    assert sorted(map(tuple, e["common_access_sizes"])) == [(1000, 2 * NP), (4096, 7 * NP)]
    assert iolens["MPIIO_SET_SIZES"] == did["MPIIO_SET_SIZES"] == NP
    assert "MPIIO_SET_SIZES" not in darshan


@pytest.mark.mpi
def test_mpiio_beneath_hdf5_agrees_call_for_call(both: dict[str, Any]) -> None:
    """The MPI-IO calls the HDF5 library made on its file: every count, byte and size bucket the same."""
    darshan = both["darshan"][("MPI-IO", "data.h5")]
    iolens = iolens_mpiio(both, "data.h5")
    names = [c for c in iolens if c != "MPIIO_SET_SIZES"]
    agree(names, {}, darshan, iolens)
    assert iolens["MPIIO_COLL_WRITES"] > 0 and iolens["MPIIO_INDEP_READS"] > 0  # not an empty agreement


@pytest.mark.mpi
def test_h5f_and_h5d_counters_agree_with_darshan_and_the_program(both: dict[str, Any]) -> None:
    h5f, h5d = iolens_h5(both, "data.h5", "/grid")
    did = both["did"]
    agree(list(did["H5F"]), did["H5F"], both["darshan"][("H5F", "data.h5")], h5f)
    darshan = both["darshan"][("H5D", "grid")]  # Darshan names it FILE:/grid
    sizes = [c for c in h5d if "_SIZE_" in c and "_AGG_" in c]
    agree([c for c in did["H5D"] if "_COLL_" not in c] + sizes, did["H5D"], darshan, h5d)
    # The common access sizes: the same sizes and counts (ties are ordered differently).
    (f,) = [e for e in both["iolens"]["hdf5"] if e["path"].endswith("/data.h5")]
    (d,) = f["datasets"]
    assert set(map(tuple, d["common_access_sizes"])) == common_sizes(darshan, "H5D")


@pytest.mark.mpi
def test_h5d_collective_transfers_follow_the_list_s_mode_at_each_call(both: dict[str, Any]) -> None:
    """The program changes one transfer list from independent to collective and back between calls: each
    call counts by the mode the list had then (iolens's H5D_COLL_READS / H5D_COLL_WRITES; Darshan has only
    H5D_USE_MPIIO_COLLECTIVE)."""
    (f,) = [e for e in both["iolens"]["hdf5"] if e["path"].endswith("/data.h5")]
    (d,) = f["datasets"]
    did = both["did"]["H5D"]
    assert d["collective"] == {"reads": did["H5D_COLL_READS"], "writes": did["H5D_COLL_WRITES"]}
    assert d["independent"] == {
        "reads": did["H5D_READS"] - did["H5D_COLL_READS"],
        "writes": did["H5D_WRITES"] - did["H5D_COLL_WRITES"],
    }


@pytest.mark.mpi
def test_h5d_all_selections_have_an_iolens_counter_only(both: dict[str, Any]) -> None:
    """An H5S_ALL read counts in iolens's own H5D_ALL_SELECTS; Darshan counts the selection in none of its
    counters (but its bytes, from the dataset's points, in H5D_BYTES_READ, as iolens does)."""
    _, h5d = iolens_h5(both, "data.h5", "/grid")
    darshan = both["darshan"][("H5D", "grid")]
    kinds = ("H5D_REGULAR_HYPERSLAB_SELECTS", "H5D_IRREGULAR_HYPERSLAB_SELECTS", "H5D_POINT_SELECTS")
    assert h5d["H5D_ALL_SELECTS"] == NP
    assert sum(darshan[k] for k in kinds) == darshan["H5D_READS"] + darshan["H5D_WRITES"] - NP
    assert "H5D_ALL_SELECTS" not in darshan
