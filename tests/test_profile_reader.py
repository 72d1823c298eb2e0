"""The profile log reader against logs written from docs/profile-log.md by tests/profile_logs.py: header
fields, schema-driven merges (sum, max, min of non-zero values, topv/topc), files and mounts, the trace,
logs that did not end, truncated logs that keep what they hold, and corrupt files refused by name."""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest

from iolens.profile.job import load_job, load_jobs
from iolens.profile.reader import ProfileLogError, read_job, read_log

from .profile_logs import (
    CLEAN,
    EXCLUDED,
    EXEC,
    FILE_COUNTERS,
    HEADER_SIZE,
    NOT_REGULAR,
    PATH_ID,
    PROC_COUNTERS,
    SIGNAL,
    SPLIT,
    TRACE_ON,
    TRACE_TRUNCATED,
    FileSpec,
    LogSpec,
    MountSpec,
    TraceSpec,
    build_image,
    chunk_offset,
    compress,
    counts,
    cut,
    poke,
    write_log,
)

MiB = 1 << 20


def two_thread_spec(**kw: object) -> LogSpec:
    """A process with two threads on /lus/a (merged), one on /lus/b, stdout, and an excluded file."""
    spec = LogSpec(
        files=[
            FileSpec(1, "/lus/a", 1),
            FileSpec(2, "/lus/b", 1),
            FileSpec(3, "/dev/pts/3", 2, NOT_REGULAR),
            FileSpec(4, "/proc/self/maps", 3, EXCLUDED),
        ],
        mounts=[
            MountSpec(1, "/lus", "lustre"),
            MountSpec(2, "/dev/pts", "devpts"),
            MountSpec(3, "/proc", "proc"),
        ],
        file_recs=[
            (
                0,
                1,
                {
                    "POSIX_OPENS": 1,
                    "POSIX_READS": 16,
                    "POSIX_BYTES_READ": 10 * 4096 + 5 * 100 + 3 * 8192 + 1,
                    "POSIX_MAX_BYTE_READ": 70_000,
                    "POSIX_F_OPEN_START_TIMESTAMP": 0,
                    "POSIX_F_READ_START_TIMESTAMP": 900,
                    "POSIX_F_READ_END_TIMESTAMP": 5_000,
                    "POSIX_ACCESS1_ACCESS": 4096,
                    "POSIX_ACCESS1_COUNT": 10,
                    "POSIX_ACCESS2_ACCESS": 100,
                    "POSIX_ACCESS2_COUNT": 5,
                    "POSIX_ACCESS3_ACCESS": 8192,
                    "POSIX_ACCESS3_COUNT": 3,
                    "POSIX_ACCESS4_ACCESS": 1,
                    "POSIX_ACCESS4_COUNT": 1,
                    "POSIX_F_READ_TIME": 1_000,
                    "POSIX_F_MAX_READ_TIME": 300,
                },
            ),
            (
                1,
                1,
                {
                    "POSIX_OPENS": 2,
                    "POSIX_READS": 11,
                    "POSIX_BYTES_READ": 2 * 4096 + 7 * 65536 + 100 + 2,
                    "POSIX_MAX_BYTE_READ": 90_000,
                    "POSIX_F_OPEN_START_TIMESTAMP": 500,
                    "POSIX_F_READ_START_TIMESTAMP": 700,
                    "POSIX_F_READ_END_TIMESTAMP": 4_000,
                    # The runtime's slot order is its own: the reader must not rely on it.
                    "POSIX_ACCESS1_ACCESS": 65536,
                    "POSIX_ACCESS1_COUNT": 7,
                    "POSIX_ACCESS2_ACCESS": 4096,
                    "POSIX_ACCESS2_COUNT": 2,
                    "POSIX_ACCESS3_ACCESS": 100,
                    "POSIX_ACCESS3_COUNT": 1,
                    "POSIX_ACCESS4_ACCESS": 2,
                    "POSIX_ACCESS4_COUNT": 1,
                    "POSIX_F_READ_TIME": 2_500,
                    "POSIX_F_MAX_READ_TIME": 200,
                },
            ),
            (0, 2, {"POSIX_OPENS": 1, "POSIX_WRITES": 4, "POSIX_BYTES_WRITTEN": 4 * MiB}),
            (1, 3, {"POSIX_WRITES": 3, "POSIX_BYTES_WRITTEN": 42}),
        ],
        proc_recs=[
            (0, {"OPENS": 2, "READS": 16, "WRITES": 4, "META_TIME": 700, "UNTRACKED_OPS": 1}),
            (1, {"OPENS": 2, "READS": 11, "WRITES": 3, "META_TIME": 300, "MKDIRS": 1}),
        ],
        trace=[
            TraceSpec(2_000, 50, "pread", 1, offset=4096, size=4096, thread=1, result=4096),
            TraceSpec(1_000, 20, "open", 1, thread=0, result=3),
            TraceSpec(3_000, 10, "unlink", 0, thread=0, result=-2),
        ],
        flags=CLEAN | TRACE_ON,
    )
    for k, v in kw.items():
        setattr(spec, k, v)
    return spec


@pytest.fixture(params=["iolpz", "iolp"])
def compressed(request: pytest.FixtureRequest) -> bool:
    return request.param == "iolpz"


def test_header_fields_are_read_from_their_documented_offsets(tmp_path: Path, compressed: bool) -> None:
    spec = two_thread_spec(
        pid=31337, ppid=31000, rank=7, job_id="12345", hostname="nid00042", exe="/opt/app/bin/solver",
        cmdline=["solver", "-i", "in put.nml", "", "x"], parent_log="12345.nid00042.31000.0.iolp",
        start_wall_ns=1_717_000_000_123_456_789, end_ns=42_000_000_000, exit_status=3, trace_dropped=0,
    )  # fmt: skip
    log = read_log(write_log(tmp_path, spec, compressed))
    h = log.header
    assert (h.pid, h.ppid, h.rank, h.job_id, h.hostname) == (31337, 31000, 7, "12345", "nid00042")
    assert h.exe == "/opt/app/bin/solver" and h.cmdline == ["solver", "-i", "in put.nml", "", "x"]
    assert h.parent_log == "12345.nid00042.31000.0.iolp"
    assert h.start_wall_ns == 1_717_000_000_123_456_789 and h.end_ns == 42_000_000_000
    assert h.exit_status == 3 and h.exit_signal == 0 and h.flags == CLEAN | TRACE_ON
    assert log.clean and not log.killed_by_signal and not log.exec_replaced and not log.truncated
    assert log.end_ns == 42_000_000_000 and log.messages == []
    assert log.path.name.endswith(".iolpz" if compressed else ".iolp")


def test_thread_records_merge_into_one_record_per_file(tmp_path: Path, compressed: bool) -> None:
    log = read_log(write_log(tmp_path, two_thread_spec(), compressed))
    a = log.files["/lus/a"]
    assert a["POSIX_OPENS"] == 3 and a["POSIX_READS"] == 27  # sum
    assert a["POSIX_BYTES_READ"] == 10 * 4096 + 5 * 100 + 3 * 8192 + 1 + 2 * 4096 + 7 * 65536 + 100 + 2
    assert a["POSIX_MAX_BYTE_READ"] == 90_000 and a["POSIX_F_MAX_READ_TIME"] == 300  # max
    # min of the non-zero values: thread 0 never opened (0), thread 1 at 500.
    assert a["POSIX_F_OPEN_START_TIMESTAMP"] == 500
    assert a["POSIX_F_READ_START_TIMESTAMP"] == 700 and a["POSIX_F_READ_END_TIMESTAMP"] == 5_000
    assert a["POSIX_F_READ_TIME"] == 3_500
    # topv/topc: counts of equal sizes add up (4096: 10+2, 100: 5+1), the four largest counts stay.
    top = [(a[f"POSIX_ACCESS{i}_ACCESS"], a[f"POSIX_ACCESS{i}_COUNT"]) for i in range(1, 5)]
    assert top == [(4096, 12), (65536, 7), (100, 6), (8192, 3)]
    assert log.threads == 2


def test_top_values_ties_and_empty_slots(tmp_path: Path) -> None:
    def strides(*pairs: int) -> dict[str, int]:
        out = {}
        for i in range(0, len(pairs), 2):
            out[f"POSIX_STRIDE{i // 2 + 1}_STRIDE"] = pairs[i]
            out[f"POSIX_STRIDE{i // 2 + 1}_COUNT"] = pairs[i + 1]
        return out

    recs = [(0, 1, strides(0, 4, 512, 2)), (1, 1, strides(256, 2, 64, 2)), (2, 1, strides(128, 2))]
    spec = LogSpec(files=[FileSpec(1, "/f")], file_recs=recs)
    f = read_log(write_log(tmp_path, spec)).files["/f"]
    top = [(f[f"POSIX_STRIDE{i}_STRIDE"], f[f"POSIX_STRIDE{i}_COUNT"]) for i in range(1, 5)]
    # A stride of 0 is a value like any other; equal counts keep the smaller values; 512 drops out.
    assert top == [(0, 4), (64, 2), (128, 2), (256, 2)]
    single = LogSpec(
        files=[FileSpec(1, "/g")],
        file_recs=[(0, 1, {"POSIX_ACCESS1_ACCESS": 10, "POSIX_ACCESS1_COUNT": 1, "POSIX_ACCESS3_ACCESS": 20,
                           "POSIX_ACCESS3_COUNT": 5})],
    )  # fmt: skip
    g = read_log(write_log(tmp_path, single)).files["/g"]
    assert [(g[f"POSIX_ACCESS{i}_ACCESS"], g[f"POSIX_ACCESS{i}_COUNT"]) for i in range(1, 5)] == [
        (20, 5), (10, 1), (0, 0), (0, 0)
    ]  # fmt: skip


def test_counter_order_comes_from_the_logs_schema(tmp_path: Path) -> None:
    """A runtime that lists its counters in another order (pairs interleaved, sections shuffled) and adds
    counters of its own reads the same."""
    reference = read_log(write_log(tmp_path, two_thread_spec(), True))
    shuffled = list(FILE_COUNTERS)
    random.Random(6).shuffle(shuffled)
    extra_file = [*shuffled, ("POSIX_FUTURE_THING", "sum")]
    extra_proc = [("PREFETCHES", "max"), *reversed(PROC_COUNTERS)]
    spec = two_thread_spec(file_counters=extra_file, proc_counters=extra_proc, pid=9)
    spec.file_recs[0][2]["POSIX_FUTURE_THING"] = 5
    spec.file_recs[1][2]["POSIX_FUTURE_THING"] = 6
    spec.proc_recs = [
        (0, {**spec.proc_recs[0][1], "PREFETCHES": 3}),
        (1, {**spec.proc_recs[1][1], "PREFETCHES": 8}),
    ]
    log = read_log(write_log(tmp_path, spec, True))
    # FILE_COUNTERS is the schema of runtimes before the STDIO layer: their STDIO_* counters, a part of the
    # POSIX ones, are read under the NESTED_ prefix (docs/profile-log.md)
    assert log.schema.file_names == [("NESTED_" if n.startswith("STDIO_") else "") + n for n, _ in extra_file]
    for path in reference.files:
        got = log.files[path]
        assert {k: got[k] for k in reference.files[path]} == reference.files[path]
    assert log.files["/lus/a"]["POSIX_FUTURE_THING"] == 11
    assert log.proc["PREFETCHES"] == 8 and log.proc["OPENS"] == reference.proc["OPENS"] == 4


def test_file_data_records_read_as_one_row_with_the_file_records(tmp_path: Path, compressed: bool) -> None:
    """Minor version 2: a file's read/write counters in FILE_DATA records (a file only opened has none). The
    file table is the same as from a log holding every counter in FILE_REC."""
    reference = read_log(write_log(tmp_path, two_thread_spec(pid=1), compressed))
    log = read_log(write_log(tmp_path, two_thread_spec(pid=2, **SPLIT), compressed))
    assert log.header.minor_version == 2 and log.header.n_file_data_counters == len(
        SPLIT["file_data_counters"]
    )
    assert log.messages == reference.messages == []
    assert sorted(log.schema.file_names) == sorted(reference.schema.file_names)
    for path, want in reference.files.items():
        assert log.files[path] == want, path
    assert log.files["/lus/a"]["POSIX_READS"] == 27 and log.files["/lus/a"]["POSIX_OPENS"] == 3
    assert (
        log.files["/lus/a"]["POSIX_ACCESS1_ACCESS"] == 4096
        and log.files["/lus/a"]["POSIX_ACCESS1_COUNT"] == 12
    )
    assert log.threads == reference.threads == 2


def test_file_data_without_a_file_record_and_files_without_data(tmp_path: Path) -> None:
    """A FILE_DATA record of an id that has no FILE_REC (or no FILES record) still counts; a file with a
    FILE_REC and no FILE_DATA was never read or written."""
    spec = LogSpec(
        **SPLIT,
        files=[FileSpec(1, "/m/only-stat"), FileSpec(2, "/m/data-only")],
        file_recs=[(0, 1, {"POSIX_STATS": 3, "POSIX_UNLINKS": 1})],
    )
    data_rsize = 8 + 8 * len(SPLIT["file_data_counters"])
    names = [n for n, _ in SPLIT["file_data_counters"]]
    values = [0] * len(names)
    values[names.index("POSIX_WRITES")] = 4
    values[names.index("POSIX_BYTES_WRITTEN")] = 400
    rec = struct.pack("<II", 2, 0) + struct.pack(f"<{len(values)}Q", *values)
    unnamed = struct.pack("<II", 9, 0) + struct.pack(f"<{len(values)}Q", *values)
    spec.extra_chunks = [(8, 0xFFFFFFFF, data_rsize, rec + unnamed)]
    log = read_log(write_log(tmp_path, spec))
    assert log.files["/m/only-stat"]["POSIX_STATS"] == 3 and log.files["/m/only-stat"]["POSIX_WRITES"] == 0
    assert (
        log.files["/m/data-only"]["POSIX_BYTES_WRITTEN"] == 400
        and log.files["/m/data-only"]["POSIX_OPENS"] == 0
    )
    assert log.table.column("POSIX_BYTES_WRITTEN").sum() == 800
    assert any("1 file id(s) have counters but no recorded name" in m for m in log.messages)


def test_file_data_records_of_two_threads_merge(tmp_path: Path) -> None:
    spec = two_thread_spec(**SPLIT)
    spec.order = ("names", "file_data", "trace", "file_rec", "proc_rec", "files", "mounts")
    log = read_log(write_log(tmp_path, spec))
    a = log.files["/lus/a"]
    assert a["POSIX_MAX_BYTE_READ"] == 90_000 and a["POSIX_F_READ_START_TIMESTAMP"] == 700
    assert [(a[f"POSIX_ACCESS{i}_ACCESS"], a[f"POSIX_ACCESS{i}_COUNT"]) for i in range(1, 5)] == [
        (4096, 12), (65536, 7), (100, 6), (8192, 3)
    ]  # fmt: skip


def test_file_data_sizes_that_cannot_be_are_refused(tmp_path: Path) -> None:
    spec = two_thread_spec(**SPLIT)
    n = counts(spec)
    data_chunk = chunk_offset(spec, n["names"] + n["mounts"] + n["files"] + n["file_rec"])
    rsize = 8 + 8 * len(SPLIT["file_data_counters"])

    def raw() -> Path:
        return write_log(tmp_path, spec, compressed=False)

    _refused(poke(raw(), data_chunk + 12, struct.pack("<I", 24)), f"FILE_DATA.*size 24, expected {rsize}")
    _refused(poke(raw(), data_chunk + 16, struct.pack("<Q", rsize + 8)), "not a whole number")
    _refused(poke(raw(), 108, struct.pack("<I", 3)), "expected 32 for 3 file data counters")
    no_data = write_log(tmp_path, LogSpec(**SPLIT, pid=1, files=[FileSpec(1, "/a")]), compressed=False)
    _refused(poke(no_data, 108, struct.pack("<I", 3)), "lists 59 file_data counters, the header says 3")
    both = two_thread_spec(
        **{**SPLIT, "file_data_counters": [*SPLIT["file_data_counters"], ("ERRORS", "sum")]}
    )
    _refused(write_log(tmp_path, both), "names ERRORS in both the file and file_data sections")


def test_process_counters_sum_over_threads(tmp_path: Path) -> None:
    log = read_log(write_log(tmp_path, two_thread_spec()))
    assert log.proc["OPENS"] == 4 and log.proc["READS"] == 27 and log.proc["WRITES"] == 7
    assert log.proc["META_TIME"] == 1000 and log.proc["MKDIRS"] == 1 and log.proc["UNTRACKED_OPS"] == 1
    assert set(log.proc) == {n for n, _ in PROC_COUNTERS}


def test_files_flags_and_mounts(tmp_path: Path) -> None:
    log = read_log(write_log(tmp_path, two_thread_spec()))
    assert set(log.files) == {"/lus/a", "/lus/b", "/dev/pts/3", "/proc/self/maps"}
    assert log.file_flags("/lus/a") == 0 and log.file_flags("/dev/pts/3") == NOT_REGULAR
    assert log.file_flags("/proc/self/maps") == EXCLUDED
    assert log.file_mount("/lus/b") == ("/lus", "lustre") and log.file_mount("/dev/pts/3") == (
        "/dev/pts",
        "devpts",
    )
    # An excluded file has a FILES record and no counters.
    assert all(v == 0 for v in log.files["/proc/self/maps"].values())
    assert log.files["/lus/b"]["POSIX_BYTES_WRITTEN"] == 4 * MiB


def test_file_without_mount_and_same_path_under_two_ids(tmp_path: Path) -> None:
    spec = LogSpec(
        files=[FileSpec(1, "/scratch/out", 9), FileSpec(2, "/scratch/out", 9), FileSpec(3, "/tmp/t", 0)],
        file_recs=[(0, 1, {"POSIX_WRITES": 2}), (0, 2, {"POSIX_WRITES": 3}), (0, 3, {"POSIX_READS": 1})],
    )
    log = read_log(write_log(tmp_path, spec))
    assert log.files["/scratch/out"]["POSIX_WRITES"] == 5 and len(log.files) == 2
    assert log.file_mount("/tmp/t") is None


def test_counters_of_a_file_id_without_a_name_are_kept_apart(tmp_path: Path) -> None:
    spec = LogSpec(
        files=[FileSpec(1, "/a")], file_recs=[(0, 1, {"POSIX_READS": 1}), (0, 7, {"POSIX_READS": 2})]
    )
    log = read_log(write_log(tmp_path, spec))
    assert list(log.files) == ["/a"]
    assert log.table.column("POSIX_READS").sum() == 3
    assert any("no recorded name" in m for m in log.messages)


def test_trace_events_in_start_order(tmp_path: Path, compressed: bool) -> None:
    log = read_log(write_log(tmp_path, two_thread_spec(), compressed))
    ev = log.trace
    assert [e.op for e in ev] == ["open", "pread", "unlink"]
    assert [e.start_ns for e in ev] == [1_000, 2_000, 3_000]
    assert ev[1].path == "/lus/a" and ev[1].offset == 4096 and ev[1].size == 4096 and ev[1].thread == 1
    assert ev[1].dur_ns == 50 and ev[1].result == 4096
    assert ev[2].path is None and ev[2].result == -2


def test_trace_paths_name_calls_on_paths_that_are_no_files(tmp_path: Path, compressed: bool) -> None:
    """PATHS records (minor version 1) name what a traced call on a directory or a missing path named; they
    are not files: the file table and its counters never list them."""
    spec = two_thread_spec(
        paths=[(PATH_ID | 1, "/lus/run/out"), (PATH_ID | 2, "/lus/missing")],
        trace=[
            TraceSpec(1_000, 10, "mkdir", file_id=PATH_ID | 1),
            TraceSpec(2_000, 10, "stat", file_id=PATH_ID | 2, result=-2),
            TraceSpec(3_000, 10, "pread", file_id=1, offset=0, size=8, result=8),
            TraceSpec(4_000, 10, "rmdir", file_id=PATH_ID | 7, result=-2),  # no record: no name
        ],
    )
    log = read_log(write_log(tmp_path, spec, compressed))
    assert log.header.minor_version == 1
    assert [(e.op, e.path) for e in log.trace] == [
        ("mkdir", "/lus/run/out"),
        ("stat", "/lus/missing"),
        ("pread", "/lus/a"),
        ("rmdir", None),
    ]
    assert "/lus/run/out" not in log.files and "/lus/missing" not in log.files
    assert sorted(log.files) == ["/dev/pts/3", "/lus/a", "/lus/b", "/proc/self/maps"]


def test_log_of_minor_version_0_reads_the_same(tmp_path: Path) -> None:
    log = read_log(write_log(tmp_path, two_thread_spec(minor_version=0)))
    assert log.header.minor_version == 0 and log.messages == []
    assert [e.op for e in log.trace] == ["open", "pread", "unlink"]


def test_log_that_did_not_end_uses_the_largest_time_seen(tmp_path: Path, compressed: bool) -> None:
    spec = two_thread_spec(flags=TRACE_ON, end_ns=0)
    log = read_log(write_log(tmp_path, spec, compressed))
    assert not log.clean and log.header.end_ns == 0
    # The latest timestamp is 5000 (stored + 1); the trace ends at 3010.
    assert log.end_ns == 4_999
    assert any("did not end cleanly" in m for m in log.messages)
    spec.trace.append(TraceSpec(9_000, 500, "write", 2, thread=0, result=10))
    assert read_log(write_log(tmp_path, spec, compressed)).end_ns == 9_500


def test_signal_and_exec_flags(tmp_path: Path) -> None:
    log = read_log(write_log(tmp_path, two_thread_spec(flags=SIGNAL, exit_signal=15)))
    assert log.killed_by_signal and not log.clean and log.header.exit_signal == 15
    assert any("signal 15" in m for m in log.messages)
    log = read_log(write_log(tmp_path, two_thread_spec(flags=EXEC)))
    assert log.exec_replaced and not log.clean
    log = read_log(
        write_log(tmp_path, two_thread_spec(flags=CLEAN | TRACE_ON | TRACE_TRUNCATED, trace_dropped=77))
    )
    assert log.clean and log.header.trace_dropped == 77 and any("77 events" in m for m in log.messages)


def test_records_spread_over_many_small_chunks(tmp_path: Path, compressed: bool) -> None:
    files = [FileSpec(i, f"/d/f{i:04d}-" + "x" * (i % 50)) for i in range(1, 301)]
    recs = [(i % 3, i, {"POSIX_WRITES": i, "POSIX_BYTES_WRITTEN": 10 * i}) for i in range(1, 301)]
    spec = LogSpec(files=files, file_recs=recs, chunk_size=4096, mounts=[MountSpec(1, "/d", "xfs")])
    assert counts(spec)["files"] > 3 and counts(spec)["file_rec"] > 20
    log = read_log(write_log(tmp_path, spec, compressed))
    assert len(log.files) == 300 and not log.truncated
    assert log.files["/d/f0123-" + "x" * 23]["POSIX_BYTES_WRITTEN"] == 1230
    assert log.threads == 3


def test_chunks_in_any_order(tmp_path: Path) -> None:
    """The document fixes no order of chunks: records before the FILES and NAMES chunks still read."""
    spec = two_thread_spec(order=("trace", "file_rec", "proc_rec", "files", "mounts", "names"))
    log = read_log(write_log(tmp_path, spec))
    assert log.files["/lus/a"]["POSIX_READS"] == 27 and log.file_mount("/lus/a") == ("/lus", "lustre")


def test_unknown_chunk_kind_is_skipped_and_said(tmp_path: Path) -> None:
    spec = two_thread_spec(extra_chunks=[(99, 0, 16, b"\x01" * 32)])
    log = read_log(write_log(tmp_path, spec))
    assert log.files["/lus/a"]["POSIX_READS"] == 27 and any("unknown kind 99" in m for m in log.messages)


# --- truncated logs: what comes before the damage is kept --------------------------------------------------


def _split_spec() -> LogSpec:
    """Small chunks: names, files, then file records in several chunks, proc records last."""
    files = [FileSpec(i, f"/f/{i}") for i in range(1, 41)]
    recs = [(0, i, {"POSIX_READS": 1, "POSIX_BYTES_READ": i}) for i in range(1, 41)]
    return LogSpec(
        files=files, file_recs=recs, proc_recs=[(0, {"READS": 40})], chunk_size=4096, flags=0, end_ns=0
    )


def test_chunk_beyond_the_end_of_the_file(tmp_path: Path) -> None:
    spec = _split_spec()
    n = counts(spec)
    path = tmp_path / "j.h.1.0.iolp"
    path.write_bytes(build_image(spec, chunk_count=sum(n.values()) + 5))
    log = read_log(path)
    assert log.truncated and any("beyond the end of the file" in m for m in log.messages)
    assert len(log.files) == 40 and log.proc["READS"] == 40


def test_log_cut_in_the_middle_of_a_chunk(tmp_path: Path) -> None:
    spec = _split_spec()
    n = counts(spec)
    path = write_log(tmp_path, spec, compressed=False)
    per_chunk = (4096 - 64) // (8 + 8 * len(FILE_COUNTERS))
    # Keep names, files and the first file-record chunk whole; cut the second file-record chunk halfway.
    first_rec = n["names"] + n["mounts"] + n["files"]
    cut(path, chunk_offset(spec, first_rec + 1) + 2000)
    log = read_log(path)
    assert log.truncated and "chunk" in log.messages[0] and not log.clean
    kept = [p for p, c in log.files.items() if c["POSIX_READS"]]
    assert len(kept) == per_chunk and log.files["/f/1"]["POSIX_BYTES_READ"] == 1
    assert log.proc == {name: 0 for name, _ in PROC_COUNTERS}


def test_bad_chunk_magic_ends_the_log_there(tmp_path: Path) -> None:
    spec = _split_spec()
    n = counts(spec)
    path = write_log(tmp_path, spec, compressed=False)
    first_rec = n["names"] + n["mounts"] + n["files"]
    poke(path, chunk_offset(spec, first_rec + 2), b"JUNK")
    log = read_log(path)
    assert log.truncated and any("JUNK" in m for m in log.messages)
    per_chunk = (4096 - 64) // (8 + 8 * len(FILE_COUNTERS))
    assert sum(1 for c in log.files.values() if c["POSIX_READS"]) == 2 * per_chunk


def test_compressed_log_cut_short_keeps_what_it_holds(tmp_path: Path) -> None:
    spec = _split_spec()
    path = write_log(tmp_path, spec, compressed=True)
    cut(path, path.stat().st_size - 200)
    log = read_log(path)
    assert log.truncated and any("compressed data ends" in m for m in log.messages)
    assert len(log.files) == 40


# --- refused: not a log, or a log whose sizes cannot be ----------------------------------------------------


def _refused(path: Path, match: str) -> None:
    with pytest.raises(ProfileLogError, match=match) as info:
        read_log(path)
    assert str(path) in str(info.value)


def test_foreign_and_empty_files_are_refused(tmp_path: Path) -> None:
    (tmp_path / "x.iolp").write_text("#!/bin/sh\necho hello\n")
    _refused(tmp_path / "x.iolp", "not an iolens profile log")
    (tmp_path / "e.iolp").write_bytes(b"")
    _refused(tmp_path / "e.iolp", "empty file")
    _refused(tmp_path / "missing.iolp", "no such file")


def test_short_header_is_refused(tmp_path: Path, compressed: bool) -> None:
    image = build_image(two_thread_spec())
    path = tmp_path / "s.iolp"
    # Compressed: the image's length is declared whole, the stream ends after 1000 bytes.
    path.write_bytes(compress(image[:1000], declared_length=5000) if compressed else image[:1000])
    _refused(path, r"short header \(1000 of 4096 bytes\)")
    path.write_bytes(compress(image[:1000]))
    _refused(path, "declares a 1000-byte image, less than its 4096-byte header")


def test_other_version_is_refused(tmp_path: Path) -> None:
    path = poke(write_log(tmp_path, two_thread_spec(), compressed=False), 8, struct.pack("<I", 2))
    _refused(path, "format version 2; this iolens reads version 1")


def test_bad_magic_in_a_compressed_image_is_refused(tmp_path: Path) -> None:
    image = bytearray(build_image(two_thread_spec()))
    image[0:8] = b"NOTALOG!"
    path = tmp_path / "b.iolpz"
    path.write_bytes(compress(bytes(image)))
    _refused(path, "not an iolens profile log")


@pytest.mark.parametrize("where", ["zlib header", "middle", "checksum"])
def test_corrupt_zlib_is_refused(tmp_path: Path, where: str) -> None:
    data = bytearray(compress(build_image(two_thread_spec())))
    at = {"zlib header": 16, "middle": 16 + (len(data) - 16) // 2, "checksum": len(data) - 2}[where]
    data[at] ^= 0xFF
    data[at + 1] ^= 0x55
    path = tmp_path / "c.iolpz"
    path.write_bytes(bytes(data))
    _refused(path, "corrupt compressed data")


def test_impossible_sizes_are_refused(tmp_path: Path) -> None:
    raw = write_log(tmp_path, two_thread_spec(), compressed=False)
    image = raw.read_bytes()

    def variant(name: str, offset: int, data: bytes) -> Path:
        p = tmp_path / name
        p.write_bytes(image)
        return poke(p, offset, data)

    _refused(variant("cs.iolp", 20, struct.pack("<I", 1000)), "chunk size 1000 is impossible")
    _refused(variant("hs.iolp", 12, struct.pack("<I", 512)), "header size 512")
    _refused(variant("nc.iolp", 88, struct.pack("<I", 1 << 20)), "impossible sizes")
    _refused(variant("sc.iolp", 88, struct.pack("<I", 5)), "record size 672, expected 48 for 5 file counters")
    no_recs = write_log(tmp_path, LogSpec(pid=1, files=[FileSpec(1, "/a")]), compressed=False)
    _refused(poke(no_recs, 88, struct.pack("<I", 5)), "schema lists 83 file counters, the header says 5")
    # chunk 0 (NAMES): `used` larger than a chunk
    _refused(variant("used.iolp", HEADER_SIZE + 16, struct.pack("<Q", 2 * MiB)), "bytes used, more than")
    spec = two_thread_spec()
    n = counts(spec)
    rec_chunk = chunk_offset(spec, n["names"] + n["mounts"] + n["files"])
    _refused(variant("rs.iolp", rec_chunk + 12, struct.pack("<I", 24)), r"record size 24, expected 672")
    _refused(variant("partial.iolp", rec_chunk + 16, struct.pack("<Q", 672 + 8)), "not a whole number")
    # a FILES record whose path runs past the chunk's used bytes
    files_chunk = chunk_offset(spec, n["names"] + n["mounts"])
    _refused(variant("fo.iolp", files_chunk + 64 + 8, struct.pack("<I", 5000)), "overruns")
    # a compressed log that declares an image zlib could never produce from its size
    z = tmp_path / "len.iolpz"
    z.write_bytes(b"IOLPZ001" + struct.pack("<Q", 1 << 50) + compress(image)[16:])
    _refused(z, "impossible from")


def test_schema_line_that_is_not_three_words_is_refused(tmp_path: Path) -> None:
    spec = two_thread_spec(file_counters=[*FILE_COUNTERS[:-1], ("ERRORS", "sum extra")])
    _refused(write_log(tmp_path, spec), "counter schema line 83")


def test_records_without_a_schema_are_refused(tmp_path: Path) -> None:
    spec = two_thread_spec(order=("mounts", "files", "file_rec", "proc_rec", "trace"))
    _refused(write_log(tmp_path, spec), r"no counter schema \(NAMES chunk\)")


# --- a job: the logs of a directory -------------------------------------------------------------------------


def job_dir(tmp_path: Path) -> Path:
    """A job of 4 logs: rank 0 (forks a shell that execs `sort`), rank 1; all touch /lus/shared."""
    d = tmp_path / "job"
    d.mkdir()
    lus = [MountSpec(5, "/lus", "lustre")]
    r0 = LogSpec(
        pid=100, rank=0, job_id="777", start_wall_ns=10**18, end_ns=8 * 10**9,
        files=[FileSpec(1, "/lus/shared", 5), FileSpec(2, "/lus/r0.out", 5)], mounts=lus,
        file_recs=[
            (0, 1, {"POSIX_WRITES": 10, "POSIX_BYTES_WRITTEN": 10 * MiB, "POSIX_F_WRITE_TIME": 2 * 10**9,
                    "POSIX_MAX_BYTE_WRITTEN": 10 * MiB, "POSIX_F_OPEN_START_TIMESTAMP": 50,
                    "POSIX_F_WRITE_START_TIMESTAMP": 60,
                    "POSIX_ACCESS1_ACCESS": MiB, "POSIX_ACCESS1_COUNT": 10}),
            (0, 2, {"POSIX_WRITES": 1, "POSIX_BYTES_WRITTEN": 100}),
        ],
        proc_recs=[(0, {"WRITES": 11, "FORKS": 1, "META_TIME": 10**8})],
    )  # fmt: skip
    r1 = LogSpec(
        pid=200, rank=1, job_id="777", start_wall_ns=10**18 + 10**8, end_ns=7 * 10**9,
        files=[FileSpec(3, "/lus/shared", 1)], mounts=[MountSpec(1, "/lus", "lustre")],
        file_recs=[(0, 3, {"POSIX_READS": 10, "POSIX_BYTES_READ": 10 * MiB, "POSIX_F_READ_TIME": 10**9,
                           "POSIX_MAX_BYTE_READ": 9 * MiB, "POSIX_F_OPEN_START_TIMESTAMP": 20,
                           "POSIX_F_READ_START_TIMESTAMP": 30,
                           "POSIX_ACCESS1_ACCESS": MiB, "POSIX_ACCESS1_COUNT": 6,
                           "POSIX_ACCESS2_ACCESS": 4096, "POSIX_ACCESS2_COUNT": 4})],
        proc_recs=[(0, {"READS": 10, "META_TIME": 2 * 10**8})],
    )  # fmt: skip
    p0 = write_log(d, r0)
    shell = LogSpec(
        pid=101, ppid=100, rank=0, job_id="777", exe="/bin/sh", cmdline=["sh", "-c", "sort x"], flags=EXEC,
        start_wall_ns=10**18 + 10**9, end_ns=10**6, parent_log=p0.name.replace(".iolpz", ".iolp"),
        files=[FileSpec(1, "/lus/shared", 2)], mounts=[MountSpec(2, "/lus", "lustre")],
        file_recs=[(0, 1, {"POSIX_STATS": 1, "POSIX_F_OPEN_START_TIMESTAMP": 30})],
    )  # fmt: skip
    ps = write_log(d, shell)
    sort = LogSpec(
        pid=101, ppid=100, rank=0, job_id="777", exe="/usr/bin/sort", cmdline=["sort", "x"],
        start_wall_ns=10**18 + 2 * 10**9, end_ns=10**9, parent_log=ps.name, files=[], file_recs=[],
    )  # fmt: skip
    write_log(d, sort, n=1)
    write_log(d, r1)
    return d


def test_job_groups_logs_into_a_process_tree(tmp_path: Path) -> None:
    job = read_job(job_dir(tmp_path))
    assert job.job_id == "777" and len(job.logs) == 4 and job.processes == 3
    by_pid = {(n.log.header.pid, n.log.header.exe): n for n in job.nodes}
    r0, sh, sort = by_pid[(100, "/usr/bin/app")], by_pid[(101, "/bin/sh")], by_pid[(101, "/usr/bin/sort")]
    assert r0.parent is None and r0.relation == "root"
    assert sh.parent == r0.index and sh.relation == "child"
    assert sort.parent == sh.index and sort.relation == "exec"
    assert sorted(job.nodes[i].log.header.pid for i in job.roots) == [100, 200]
    assert job.run_time_s == pytest.approx(8.0)


def test_job_merges_files_across_processes(tmp_path: Path) -> None:
    job = read_job(job_dir(tmp_path))
    shared = job.file("/lus/shared")
    assert shared["POSIX_BYTES_WRITTEN"] == 10 * MiB and shared["POSIX_BYTES_READ"] == 10 * MiB
    assert shared["POSIX_STATS"] == 1
    assert shared["POSIX_MAX_BYTE_WRITTEN"] == 10 * MiB and shared["POSIX_MAX_BYTE_READ"] == 9 * MiB
    assert shared["POSIX_F_OPEN_START_TIMESTAMP"] == 20
    assert [(shared[f"POSIX_ACCESS{i}_ACCESS"], shared[f"POSIX_ACCESS{i}_COUNT"]) for i in (1, 2, 3)] == [
        (MiB, 16), (4096, 4), (0, 0)
    ]  # fmt: skip
    row = job.files.row_of["/lus/shared"]
    assert (job.procs[row], job.writers[row], job.readers[row], job.both[row]) == (3, 1, 1, 0)
    # Different mount ids in each process name the same mount.
    assert job.files.mount_of(row) == ("/lus", "lustre") and len(job.files.mount_list) == 1


def test_job_totals_per_mount_and_rank(tmp_path: Path) -> None:
    job = read_job(job_dir(tmp_path))
    (lus,) = job.mounts
    assert (lus.dir, lus.fs_type) == ("/lus", "lustre")
    assert lus.totals.bytes_written == 10 * MiB + 100 and lus.totals.bytes_read == 10 * MiB
    assert lus.totals.files == 2
    r0, r1 = job.ranks
    assert (r0.rank, r0.logs, r1.rank, r1.logs) == (0, 3, 1, 1)
    assert r0.totals.bytes_written == 10 * MiB + 100 and r0.totals.write_time_ns == 2 * 10**9
    assert r0.totals.meta_time_ns == 10**8 and r0.totals.files == 2
    assert r1.totals.io_time_ns == 10**9 + 2 * 10**8 and r1.totals.files == 1
    assert job.proc["FORKS"] == 1 and job.proc["READS"] == 10 and job.proc["WRITES"] == 11


def test_finished_log_preferred_over_the_live_one(tmp_path: Path) -> None:
    spec = two_thread_spec()
    write_log(tmp_path, spec, compressed=True)
    live = write_log(tmp_path, two_thread_spec(flags=0, end_ns=0), compressed=False)
    job = load_job(tmp_path)
    assert len(job.logs) == 1 and job.logs[0].name.endswith(".iolpz") and job.logs[0].clean
    # A damaged compressed log falls back to the live one.
    (tmp_path / live.name.replace(".iolp", ".iolpz")).write_bytes(b"IOLPZ001garbage")
    job = load_job(tmp_path)
    assert job.logs[0].name == live.name and any("used" in m for m in job.messages)


def test_broken_log_in_a_directory_is_skipped_and_said(tmp_path: Path) -> None:
    write_log(tmp_path, two_thread_spec())
    (tmp_path / "junk.host.1.0.iolp").write_bytes(b"not a log at all")
    job = load_job(tmp_path)
    assert len(job.logs) == 1 and any("skipped" in m and "junk.host.1.0.iolp" in m for m in job.messages)
    with pytest.raises(ProfileLogError, match="junk.host.1.0.iolp"):
        load_jobs(tmp_path / "junk.host.1.0.iolp")


def test_several_jobs_in_one_directory(tmp_path: Path) -> None:
    write_log(tmp_path, two_thread_spec(job_id="a", pid=1))
    write_log(tmp_path, two_thread_spec(job_id="b", pid=2, start_wall_ns=2 * 10**18))
    assert [j.job_id for j in load_jobs(tmp_path)] == ["a", "b"]
    with pytest.raises(ProfileLogError, match="2 jobs"):
        read_job(tmp_path)


def test_empty_directory_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ProfileLogError, match="no profile logs"):
        read_job(tmp_path)


def test_records_in_another_order_than_the_files(tmp_path: Path) -> None:
    """One record per file (no merging), in another order than the FILES records, and a file without any."""
    spec = LogSpec(
        files=[FileSpec(1, "/one"), FileSpec(2, "/two"), FileSpec(3, "/three")],
        file_recs=[(0, 3, {"POSIX_READS": 3}), (1, 1, {"POSIX_READS": 1})],
        trace=[TraceSpec(5, 1, "read", 3), TraceSpec(6, 1, "stat", 2), TraceSpec(7, 1, "read", 1)],
    )
    log = read_log(write_log(tmp_path, spec))
    assert {p: c["POSIX_READS"] for p, c in log.files.items()} == {"/one": 1, "/two": 0, "/three": 3}
    assert [e.path for e in log.trace] == ["/three", "/two", "/one"]
    assert sorted(log.table.contributions.tolist()) == [0, 1, 1]


# The STDIO layer's counters a runtime with that layer adds to FILE_COUNTERS (docs/profile-log.md).
STDIO_LAYER = [
    *[(f"STDIO_{n}", "sum") for n in ("FDOPENS", "BYTES_READ", "BYTES_WRITTEN")],
    ("STDIO_MAX_BYTE_READ", "max"),
    ("STDIO_MAX_BYTE_WRITTEN", "max"),
    *[(f"STDIO_F_{n}_TIME", "sum") for n in ("READ", "WRITE", "META")],
]


def stdio_spec(layered: bool) -> LogSpec:
    """One process: /lus/p written with write(2), /lus/s with fwrite, as each kind of runtime counts them."""
    s = {"STDIO_OPENS": 1, "STDIO_WRITES": 3}
    if layered:
        s |= {"STDIO_BYTES_WRITTEN": 300, "STDIO_MAX_BYTE_WRITTEN": 299, "STDIO_F_WRITE_TIME": 7_000}
    else:  # before the layer, a stdio call counted in the POSIX counters too
        s |= {"POSIX_OPENS": 1, "POSIX_WRITES": 3, "POSIX_BYTES_WRITTEN": 300, "POSIX_F_WRITE_TIME": 7_000}
    return LogSpec(
        files=[FileSpec(1, "/lus/p", 1), FileSpec(2, "/lus/s", 1)],
        mounts=[MountSpec(1, "/lus", "lustre")],
        file_recs=[
            (
                0,
                1,
                {"POSIX_OPENS": 1, "POSIX_WRITES": 2, "POSIX_BYTES_WRITTEN": 50, "POSIX_F_WRITE_TIME": 1_000},
            ),
            (0, 2, s),
        ],
        proc_recs=[(0, {"OPENS": 2, "WRITES": 5, "BYTES_WRITTEN": 350, "WRITE_TIME": 8_000})],
        file_counters=[*FILE_COUNTERS, *STDIO_LAYER] if layered else list(FILE_COUNTERS),
    )


@pytest.mark.parametrize("layered", [True, False])
def test_stdio_layer_adds_to_posix_and_older_logs_count_once(tmp_path: Path, layered: bool) -> None:
    """With the STDIO layer (a schema with STDIO_BYTES_READ) the two layers are disjoint and the job's
    figures add them; an older log's STDIO_* counters were a part of its POSIX ones: read as NESTED_STDIO_*,
    they are added to nothing."""
    from iolens.profile.report import job_report

    path = write_log(tmp_path, stdio_spec(layered), True)
    log = read_log(path)
    prefix = "" if layered else "NESTED_"
    assert log.files["/lus/s"][prefix + "STDIO_WRITES"] == 3
    assert ("STDIO_WRITES" in log.schema.file_names) == layered
    report = job_report(load_job(path))
    s = report["summary"]
    assert (s["bytes_written"], s["writes"], s["files"]["write_only"]) == (350, 5, 2)
    assert s["write_time_s"] == pytest.approx(8e-6)
    assert report["processes"][0]["bytes_written"] == 350
    layers = report["layers"]
    assert layers["stdio"]["bytes_written"] == (300 if layered else 0)
    assert layers["posix"]["bytes_written"] == (50 if layered else 350)
    assert {f["path"]: f["bytes_written"] for f in report["top_files_by_bytes"]} == {
        "/lus/s": 300,
        "/lus/p": 50,
    }
