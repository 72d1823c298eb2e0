"""Darshan logs as first-class input: iolens's own reader of the format checked counter for counter
against the darshan library on every example log the darshan package ships and on a real Darshan 3.4.7
log of an MPI-IO + HDF5 + PnetCDF program (tests/data/darshan); `iolens profile report LOG.darshan` (text
and --json) with its figures, modules and advice; `iolens db import` of the MPI-IO, STDIO, HDF5 and
PnetCDF modules; damaged logs refused with one line, never a traceback, nothing stored."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from iolens.profile import advice
from iolens.profile.darshan_log import DarshanLogError, load_darshan_job, read_darshan_log
from iolens.profile.darshan_log import format as fmt
from iolens.profile.report import job_report
from iolens.store import Store, queries

from .conftest import REPO
from .db_helpers import iolens, iolens_env
from .test_db_imports import darshan_example as example

DATA = REPO / "tests" / "data" / "darshan"
# Made by tests/data/darshan/layers.c under Darshan 3.4.7 (bench/build_darshan.sh), mpirun -np 2; what the
# program printed is layers-np2.json.
LAYERS_LOG = DATA / "layers-np2.darshan"
LAYERS_DID = DATA / "layers-np2.json"

EXAMPLES = (
    "dxt.darshan",
    "example.darshan",
    "ior_hdf5_example.darshan",
    "noposix.darshan",
    "sample-badost.darshan",
    "shane_macsio_id29959_5-22-32552-7035573431850780836_1590156158.darshan",
)


def all_logs() -> list[Any]:
    return [pytest.param(name, id=name[:24]) for name in EXAMPLES] + [
        pytest.param(str(LAYERS_LOG), id="3.41")
    ]


def log_path(name: str) -> Path:
    return Path(name) if name.startswith("/") else example(name)


def library(path: Path) -> Any:
    darshan = pytest.importorskip("darshan")
    return darshan.DarshanReport(str(path), read_all=True)


# --- the reader against the library ------------------------------------------------------------------------


@pytest.mark.parametrize("name", all_logs())
def test_reader_gives_the_darshan_library_values_counter_for_counter(name: str) -> None:
    path = log_path(name)
    lib = library(path)
    log = read_darshan_log(path)
    job = lib.metadata["job"]
    assert (log.uid, log.nprocs, log.jobid) == (job["uid"], job["nprocs"], job["jobid"])
    assert log.start_s == job["start_time_sec"] + job["start_time_nsec"] / 1e9
    assert log.run_time_s == pytest.approx(job["run_time"], abs=1e-9)
    assert log.metadata == job["metadata"] and log.version == job["log_ver"]
    # The library gives "" for a command line that fills its whole field (no newline before the mounts).
    assert lib.metadata["exe"] in (log.exe, "")
    assert sorted(log.mounts) == sorted(lib.mounts)
    assert log.names == dict(lib.name_records)
    assert set(log.modules) == set(lib.modules)
    read = {fmt.MODULES[m].name for m in log.records}
    assert read == {m for m in lib.modules if m in {x.name for x in fmt.MODULES.values()}}
    compared = 0
    for records in log.records.values():
        mod = records.module
        frames = lib.records[mod.name].to_df()
        c, f = frames["counters"], frames["fcounters"]
        assert np.array_equal(c["id"].to_numpy(np.uint64), records.ids)
        assert np.array_equal(c["rank"].to_numpy(np.int64), records.ranks)
        for k, counter in enumerate(mod.layout.counters):
            assert np.array_equal(c[counter].to_numpy(np.int64), records.counters[:, k]), counter
            compared += len(records)
        for k, counter in enumerate(mod.layout.fcounters):
            ours, theirs = records.fcounters[:, k], f[counter].to_numpy(np.float64)
            if mod.name == "POSIX" and records.version == 3 and "VARIANCE" in counter:
                # The library's POSIX 3 -> 4 conversion moves the record's tail by the old length and leaves
                # the last two fcounters zero; the log holds them (the variance of a shared record).
                assert (theirs == 0).all()
                continue
            assert np.array_equal(ours, theirs, equal_nan=True), counter
            compared += len(records)
    assert compared or not log.records
    if "DXT_POSIX" in lib.records:
        dxt = lib.records["DXT_POSIX"].to_df()
        assert len(dxt) == len(log.dxt)
        for theirs, ours in zip(dxt, log.dxt, strict=True):
            assert (theirs["id"], theirs["rank"], theirs["hostname"]) == (ours.id, ours.rank, ours.hostname)
            for kind, segs in (("write_segments", ours.writes), ("read_segments", ours.reads)):
                t = theirs[kind]
                assert len(t) == len(segs)
                if len(t):
                    assert np.array_equal(t["offset"].to_numpy(), segs["offset"])
                    assert np.array_equal(t["length"].to_numpy(), segs["length"])
                    assert np.array_equal(t["start_time"].to_numpy(), segs["start"])


def test_a_341_log_of_the_program_counts_what_it_did() -> None:
    """The Darshan 3.4.7 log of layers.c: MPI-IO, HDF5 and PnetCDF counters equal what the program did."""
    did = json.loads(LAYERS_DID.read_text())
    log = read_darshan_log(LAYERS_LOG)
    assert log.version == "3.41" and log.nprocs == did["np"]

    def total(module: int, counter: str, suffix: str) -> int:
        r = log.records[module]
        rows = [i for i, rid in enumerate(r.ids.tolist()) if log.names[rid].endswith(suffix)]
        col = r.column(counter)
        return int(col[rows].clip(0).sum())

    assert total(fmt.MPIIO, "MPIIO_COLL_WRITES", "/mpiio.dat") == did["mpiio_coll_writes"]
    assert total(fmt.MPIIO, "MPIIO_INDEP_WRITES", "/mpiio.dat") == did["mpiio_indep_writes"]
    assert total(fmt.MPIIO, "MPIIO_COLL_READS", "/mpiio.dat") == did["mpiio_coll_reads"]
    assert total(fmt.MPIIO, "MPIIO_BYTES_WRITTEN", "/mpiio.dat") == did["mpiio_bytes_written"]
    assert total(fmt.MPIIO, "MPIIO_BYTES_READ", "/mpiio.dat") == did["mpiio_bytes_read"]
    assert total(fmt.H5D, "H5D_WRITES", "/rows") == did["h5d_writes"]
    assert total(fmt.H5D, "H5D_BYTES_WRITTEN", "/rows") == did["h5d_bytes_written"]
    assert total(fmt.H5D, "H5D_USE_MPIIO_COLLECTIVE", "/rows") >= 1
    assert total(fmt.PNETCDF_VAR, "PNETCDF_VAR_COLL_WRITES", "rows") == did["pnetcdf_coll_writes"]
    assert total(fmt.PNETCDF_VAR, "PNETCDF_VAR_COLL_READS", "rows") == did["pnetcdf_coll_reads"]
    assert total(fmt.PNETCDF_VAR, "PNETCDF_VAR_BYTES_WRITTEN", "rows") == did["pnetcdf_bytes"]
    assert total(fmt.PNETCDF_FILE, "PNETCDF_FILE_CREATES", "/layers.nc") == did["np"]
    h5d = log.records[fmt.H5D]
    assert {log.names[int(f)] for f in h5d.file_rec_ids.tolist()} == {
        n for n in log.names.values() if n.endswith("/layers.h5")
    }


# --- the report --------------------------------------------------------------------------------------------


def _posix_sums(lib: Any) -> dict[str, float]:
    """POSIX totals over regular files (Darshan's <STDIN>, <STDOUT>, <STDERR> are not), from the library."""
    frames = lib.records["POSIX"].to_df()
    c, f = frames["counters"], frames["fcounters"]
    regular = np.array([not lib.name_records[i].startswith("<") for i in c["id"].tolist()])
    out = {n: float(c[n].to_numpy()[regular].clip(0).sum()) for n in c.columns if n.startswith("POSIX_")}
    out.update(
        {n: float(f[n].to_numpy()[regular].clip(0).sum()) for n in f.columns if n.startswith("POSIX_")}
    )
    return out


def test_profile_report_json_of_a_darshan_log(tmp_path: Path) -> None:
    path = example("ior_hdf5_example.darshan")
    r = iolens("profile", "report", str(path), "--json", env=iolens_env(home=tmp_path))
    assert r.returncode == 0, r.stderr
    job = json.loads(r.stdout)["jobs"][0]
    lib = library(path)
    psx = _posix_sums(lib)
    s = job["summary"]
    assert (s["bytes_read"], s["bytes_written"]) == (psx["POSIX_BYTES_READ"], psx["POSIX_BYTES_WRITTEN"])
    assert (s["reads"], s["writes"]) == (psx["POSIX_READS"], psx["POSIX_WRITES"])
    assert s["read_time_s"] == pytest.approx(psx["POSIX_F_READ_TIME"], abs=1e-6)
    assert s["write_time_s"] == pytest.approx(psx["POSIX_F_WRITE_TIME"], abs=1e-6)
    assert job["job_id"] == str(lib.metadata["job"]["jobid"])
    assert sum(job["access_sizes"]["write"]) == psx["POSIX_WRITES"]
    # Every module, under Darshan's names, in Darshan's units: sums equal the library's.
    layers = job["darshan"]["layers"]
    assert set(layers) == {"POSIX", "MPI-IO", "H5F", "H5D", "STDIO"}
    for mod, totals in layers.items():
        frames = lib.records[mod].to_df()
        for counter, v in totals.items():
            if counter == "records":
                assert v == len(frames["counters"])
                continue
            part = "counters" if counter in frames["counters"] else "fcounters"
            want = frames[part][counter].to_numpy()
            assert v == pytest.approx(float(want[want > 0].sum()), rel=1e-12, abs=1e-12), (mod, counter)
    ds = job["darshan"]["datasets"]
    assert len(ds) == 3 and all(d["name"].endswith(":/Dataset-0000.0000") for d in ds)
    assert sum(d["H5D_BYTES_WRITTEN"] for d in ds) == layers["H5D"]["H5D_BYTES_WRITTEN"]
    # The shared file: one row, every rank's.
    top = job["top_files_by_bytes"][0]
    assert top["path"].endswith("test123.h5") and top["processes"] == lib.metadata["job"]["nprocs"]
    assert job["darshan"]["log_version"] == "3.21" and isinstance(job["advice"], list)


def test_profile_report_text_shows_the_modules_stacked(tmp_path: Path) -> None:
    r = iolens("profile", "report", str(LAYERS_LOG), env=iolens_env(home=tmp_path))
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "Read from a Darshan log (format 3.41, Darshan 3.4.7" in out
    # In the Darshan modules table (the Layers table above it has a POSIX row of its own)
    section = out.index("Darshan modules")
    at = [
        out.index(f"\n{m} ", section)
        for m in ("PNETCDF_VAR", "PNETCDF_FILE", "H5D", "H5F", "MPI-IO", "POSIX")
    ]
    assert at == sorted(at)  # the library the program called first, POSIX last
    assert "reads and writes collective" in out
    assert "HDF5 datasets" in out and "/rows" in out and "PnetCDF variables" in out


def test_advice_of_a_darshan_log_is_the_advice_of_its_figures(monkeypatch: pytest.MonkeyPatch) -> None:
    """dxt.darshan: 215 files, most small, small transfers; the rules weigh Darshan's own figures. Its small
    transfers took 0.38 s of a 1469 s run: under the gate, so that rule stays quiet unless the gate is off."""
    path = example("dxt.darshan")
    lib = library(path)
    gated = {a["rule"] for a in job_report(load_darshan_job(path))["advice"]}
    assert "many_small_files" in gated and "small_transfers" not in gated
    monkeypatch.setattr(advice, "MIN_SAVING_S", 0.0)
    monkeypatch.setattr(advice, "MIN_SAVING_SHARE", 0.0)
    report = job_report(load_darshan_job(path))
    rules = {a["rule"]: a for a in report["advice"]}
    frames = lib.records["POSIX"].to_df()["counters"]
    frames = frames[[not lib.name_records[i].startswith("<") for i in frames["id"].tolist()]]
    # A file's data in either layer (the rules count a file's POSIX and STDIO calls together)
    ends: dict[int, int] = {}
    for layer in ("POSIX", "STDIO"):
        if layer not in lib.records:
            continue
        df = lib.records[layer].to_df()["counters"]
        for i, r, w, mr, mw in zip(
            df["id"], df[f"{layer}_READS"], df[f"{layer}_WRITES"], df[f"{layer}_MAX_BYTE_READ"],
            df[f"{layer}_MAX_BYTE_WRITTEN"], strict=True,
        ):  # fmt: skip
            if (r > 0 or w > 0) and not lib.name_records[i].startswith("<"):
                ends[i] = max(ends.get(i, 0), int(max(mr, mw)) + 1)  # end of access
    ev = rules["many_small_files"]["evidence"]
    assert ev["files_with_data"] == len(ends)
    assert ev["small_files"] == sum(1 for e in ends.values() if e < 1 << 20)
    # small_transfers leaves out a file read (written) in one call: that call could not have been larger
    small = sum(
        int(frames[f"POSIX_SIZE_{k}_{b}"][frames[f"POSIX_{k}S"] >= 2].sum())
        for k in ("READ", "WRITE")
        for b in fmt.BUCKETS[:4]
    )
    assert rules["small_transfers"]["evidence"]["small_accesses"] == small


# --- the import --------------------------------------------------------------------------------------------


def test_import_brings_in_every_module(db_url: str, tmp_path: Path) -> None:
    r = iolens("db", "import", str(LAYERS_LOG), "--db", db_url, env=iolens_env(home=tmp_path))
    assert r.returncode == 0, r.stderr
    did = json.loads(LAYERS_DID.read_text())
    with Store.open(db_url, create=False) as store:
        p = queries.get_profile(store.db, 1)
        rows = {f["path"]: f for f in queries.profile_files(store.db, 1, "bytes", limit=100)}
        counters = {
            path: json.loads(c or "{}")
            for path, c in store.db.query("SELECT path, counters FROM profile_files WHERE profile_id = 1", ())
        }
    doc = p["document"]
    assert p["origin"] == "darshan" and p["processes"] == did["np"]
    assert set(doc["darshan"]["layers"]) >= {"POSIX", "MPI-IO", "H5F", "H5D", "PNETCDF_FILE", "PNETCDF_VAR"}
    mpiio = next(c for path, c in counters.items() if path.endswith("/mpiio.dat"))
    assert mpiio["MPIIO_COLL_WRITES"] == did["mpiio_coll_writes"]
    assert mpiio["MPIIO_BYTES_WRITTEN"] == did["mpiio_bytes_written"]
    assert mpiio["MPIIO_F_WRITE_TIME"] > 0 and isinstance(mpiio["MPIIO_F_WRITE_TIME"], int)  # ns
    h5 = next(c for path, c in counters.items() if path.endswith("/layers.h5"))
    assert h5["H5F_OPENS"] >= did["np"] and h5["MPIIO_COLL_OPENS"] >= did["np"]
    assert any(path.endswith("/layers.nc") for path in rows)
    assert doc["darshan"]["variables"][0]["PNETCDF_VAR_BYTES_WRITTEN"] == did["pnetcdf_bytes"]
    assert isinstance(doc["advice"], list) and "summary" in doc


# --- damaged logs ------------------------------------------------------------------------------------------


def damaged(tmp_path: Path) -> list[Path]:
    data = LAYERS_LOG.read_bytes()
    out = []
    for n in (0, 7, 100, 1400, len(data) // 2, len(data) - 1):
        p = tmp_path / f"cut-{n}.darshan"
        p.write_bytes(data[:n])
        out.append(p)
    # A byte in the middle of the POSIX region (log format 3.41: the module maps start at byte 48).
    off, length = struct.unpack_from("<QQ", data, 48 + 16 * fmt.POSIX)
    flipped = bytearray(data)
    flipped[off + length // 2] ^= 0x55
    p = tmp_path / "flipped.darshan"
    p.write_bytes(bytes(flipped))
    return [*out, p]


def test_damaged_darshan_logs_are_refused_by_the_reader(tmp_path: Path) -> None:
    for p in damaged(tmp_path):
        with pytest.raises(DarshanLogError, match="not a readable Darshan log"):
            read_darshan_log(p)


def test_profile_report_refuses_a_damaged_darshan_log_with_status_1(tmp_path: Path) -> None:
    for p in damaged(tmp_path)[3:]:  # the first ones are too short to be told from other files
        r = iolens("profile", "report", str(p), env=iolens_env(home=tmp_path))
        assert r.returncode == 1, (p.name, r.stdout[-300:])
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("iolens: error:") and str(p) in lines[0], lines
        assert "not a readable Darshan log" in lines[0] and "Traceback" not in r.stderr


def test_import_refuses_damaged_darshan_logs_and_stores_nothing(db_url: str, tmp_path: Path) -> None:
    logs = damaged(tmp_path)
    r = iolens("db", "import", *map(str, logs), "--db", db_url, env=iolens_env(home=tmp_path))
    assert r.returncode == 1
    for p in logs:
        assert f"{p}: not a readable Darshan log" in r.stderr, p
    assert "Traceback" not in r.stderr
    with Store.open(db_url, create=False) as store:
        assert queries.counts(store.db)["profiles"] == 0


def test_every_module_layout_has_the_size_of_its_record() -> None:
    """The record sizes darshan-util gives its modules' older versions (bytes), against our layouts."""
    sizes = {
        (fmt.POSIX, 2): 648, (fmt.POSIX, 3): 664, (fmt.POSIX, 4): 704, (fmt.MPIIO, 2): 544,
        (fmt.MPIIO, 3): 560, (fmt.H5F, 1): 40, (fmt.H5F, 2): 56, (fmt.H5F, 3): 80, (fmt.H5D, 1): 904,
        (fmt.H5D, 2): 912, (fmt.STDIO, 1): 240, (fmt.STDIO, 2): 248, (fmt.PNETCDF_FILE, 3): 152,
        (fmt.PNETCDF_VAR, 1): 1120,
    }  # fmt: skip
    for (m, v), size in sizes.items():
        assert fmt.MODULES[m].layouts[v].size == size, (fmt.MODULES[m].name, v)
