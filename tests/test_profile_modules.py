"""The module records of the profile log (docs/profile-log.md, "Modules"): the layers above POSIX, each a
section of the counter schema and records of its own. Logs written from the document alone
(tests/profile_logs.py and the module chunks below) check the reader's side; a program without MPI checks
that the runtime, which exports the MPI-IO wrappers, loads and records as before without libmpi; a log of
before the modules still reads.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import numpy as np
import pytest

from iolens.profile.job import build_job
from iolens.profile.reader import ProfileLogError, read_log

from .conftest import ProfileBuild
from .profile_logs import FileSpec, LogSpec, build_chunks, chunk, header_bytes, write_log
from .test_profile_runtime import logs_in, plain_env, profiled_env, run

MODULE_REC, MODULE_TEXT, PROCESS = 9, 10, 0xFFFFFFFF


def test_a_program_without_mpi_is_unaffected(profile_build: ProfileBuild, tmp_path: Path) -> None:
    """The runtime exports MPI_File_* but needs no libmpi: a plain program loads it, runs, and its log has
    no MPI-IO records (its schema still declares the module)."""
    logs = tmp_path / "logs"
    logs.mkdir()
    code = "open('f', 'w').write('x' * 100); print(open('f').read().count('x'))"
    plain = run([sys.executable, "-c", code], plain_env(), cwd=tmp_path)
    prof = run([sys.executable, "-c", code], profiled_env(profile_build, logs), cwd=tmp_path)
    assert prof.returncode == plain.returncode == 0
    assert prof.stdout == plain.stdout == b"100\n" and prof.stderr == plain.stderr
    (log,) = logs_in(logs)
    assert log.modules == {}
    assert log.files[str(tmp_path / "f")]["POSIX_BYTES_WRITTEN"] == 100
    # every module the runtime was built to know (the HDF5 and PnetCDF ones where their headers were found;
    # SPREAD: the per-rank spread a job log's reduced files carry, declared in every log)
    assert [name for name, _ in log.schema.modules.values()] in (
        ["MPIIO", "SPREAD"],
        ["MPIIO", "H5F", "H5D", "SPREAD"],
        ["MPIIO", "PNETCDF_FILE", "PNETCDF_VAR", "SPREAD"],
        ["MPIIO", "H5F", "H5D", "PNETCDF_FILE", "PNETCDF_VAR", "SPREAD"],
    )
    assert log.header.minor_version >= 4


# --- the reader's side, from the document alone ---------------------------------------------------------

MPIIO_NAMES = [
    ("MPIIO_COLL_WRITES", "sum"),
    ("MPIIO_BYTES_WRITTEN", "sum"),
    ("MPIIO_F_MAX_WRITE_TIME", "max"),
]


def _module_log(tmp_path: Path, records: list[tuple[int, int, list[int]]], rsize: int | None = None) -> Path:
    """A minor-4 log written from docs/profile-log.md: the NAMES chunk declares module MPIIO (id 1) and a
    module LATER (id 7) of a later runtime, MODULE_REC chunks (module id at offset 24) of those and of an
    undeclared module 5, and a MODULE_TEXT."""
    spec = LogSpec(minor_version=4, files=[FileSpec(1, "/data/shared"), FileSpec(2, "/data/other")])
    spec.order = tuple(o for o in spec.order if o != "names")
    names = "".join(f"file {n} {m}\n" for n, m in spec.file_counters)
    names += "".join(f"proc {n} {m}\n" for n, m in spec.proc_counters)
    names += "module MPIIO 1\n" + "".join(f"MPIIO {n} {m}\n" for n, m in MPIIO_NAMES)
    names += "module LATER 7\nLATER LATER_COUNT sum\n"
    body = names.encode()
    body += b"\0" * (-len(body) % 8)
    chunks = [chunk(1, PROCESS, 0, body, spec.chunk_size), *build_chunks(spec)]

    def module_chunk(module: int, size: int, recs: bytes) -> bytes:
        c = bytearray(chunk(MODULE_REC, PROCESS, size, recs, spec.chunk_size))
        struct.pack_into("<I", c, 24, module)
        return bytes(c)

    size = rsize or 8 + 8 * len(MPIIO_NAMES)
    recs = b"".join(struct.pack("<II", fid, th) + struct.pack(f"<{len(v)}Q", *v) for fid, th, v in records)
    chunks.append(module_chunk(1, size, recs))
    chunks.append(module_chunk(7, 16, struct.pack("<IIQ", 1, 0, 99)))
    chunks.append(module_chunk(5, 16, struct.pack("<IIQ", 1, 0, 1)))
    hints = b"cb_nodes=4\nstriping_factor=8\n"
    text = struct.pack("<IIII", 1, 1, len(hints), 1) + hints + b"\0" * (-len(hints) % 8)
    chunks.append(chunk(MODULE_TEXT, PROCESS, 0, text, spec.chunk_size))
    path = tmp_path / "job-1.node01.4242.0.iolp"
    path.write_bytes(header_bytes(spec, len(chunks)) + b"".join(chunks))
    return path


def test_module_records_read_as_the_document_says(tmp_path: Path) -> None:
    path = _module_log(tmp_path, [(1, 0, [2, 4096, 50]), (1, 1, [3, 100, 70]), (2, 0, [1, 10, 5])])
    log = read_log(path)
    mod = log.modules["MPIIO"]
    assert mod.module_id == 1 and set(mod.paths) == {"/data/shared", "/data/other"}
    # two threads' records of one file merge by the schema's merges: sum, sum, max
    assert mod.counters(mod.row_of["/data/shared"]) == {
        "MPIIO_COLL_WRITES": 5, "MPIIO_BYTES_WRITTEN": 4196, "MPIIO_F_MAX_WRITE_TIME": 70,
    }  # fmt: skip
    assert int(mod.contributions[mod.row_of["/data/shared"]]) == 2
    assert mod.texts[mod.row_of["/data/shared"]] == {"hints": "cb_nodes=4\nstriping_factor=8\n"}
    # a module of a later runtime reads by its schema alone; an undeclared one is skipped, and said so
    assert log.modules["LATER"].counters(0) == {"LATER_COUNT": 99}
    assert any("unknown module 5" in m for m in log.messages)
    assert not log.truncated
    np.testing.assert_array_equal(
        mod.column("MPIIO_COLL_WRITES"), [5, 1] if mod.paths[0] == "/data/shared" else [1, 5]
    )


def test_a_module_record_of_the_wrong_size_is_refused(tmp_path: Path) -> None:
    path = _module_log(tmp_path, [(1, 0, [1, 2, 3, 4])], rsize=8 + 8 * 4)
    with pytest.raises(ProfileLogError, match="MODULE_REC of MPIIO: record size 40, expected 32"):
        read_log(path)


def test_a_log_of_before_the_modules_still_reads(tmp_path: Path) -> None:
    spec = LogSpec(minor_version=3, files=[FileSpec(1, "/data/a")], file_recs=[(0, 1, {"POSIX_OPENS": 2})])
    log = read_log(write_log(tmp_path, spec))
    assert log.modules == {} and log.files["/data/a"]["POSIX_OPENS"] == 2
    assert build_job("job-1", [log]).mpiio == []
