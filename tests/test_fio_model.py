"""The Python side of fio without the engine: the typed model of a fio document, the fio-like report, the
fio-shaped JSON and the per-second log, from a synthetic document whose histograms are chosen so that every
percentile is known (sample_fio_document)."""

from __future__ import annotations

import copy
import csv
import io
import json
import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from iolens import fio_json, fio_log, fio_report, render, results

# --- a realistic fio document ----------------------------------------------------------------------------


def engine_bucket(v: int) -> tuple[int, int]:
    """The engine's histogram bucket of a value (native/common/hist.h): exact below 256, then 128 buckets per
    power of two."""
    if v < 256:
        return v, v
    s = v.bit_length() - 8
    low = (v >> s) << s
    return low, low + (1 << s) - 1


def lat(values: dict[int, int], buckets: bool = True) -> dict[str, Any]:
    """A LAT as the engine writes it for I/Os that took exactly these latencies (ns → how many I/Os), its
    percentiles found by sorting the values (not by walking buckets, as the code under test does)."""
    count = sum(values.values())
    out: dict[str, Any] = {
        "count": count, "min": 0, "mean": 0.0, "stddev": 0.0,
        "p50": 0, "p90": 0, "p99": 0, "p99_9": 0, "max": 0,
    }  # fmt: skip
    if count:
        ordered = sorted(values)
        mn, mx = ordered[0], ordered[-1]
        mean = sum(v * n for v, n in values.items()) / count
        var = sum(n * (v - mean) ** 2 for v, n in values.items()) / (count - 1) if count > 1 else 0.0
        flat = [v for v in ordered for _ in range(values[v])]

        def pct(p: str) -> int:
            rank = max(1, math.ceil(Fraction(p) * count / 100))
            return min(max(engine_bucket(flat[rank - 1])[1], mn), mx)

        out.update(
            min=mn, max=mx, mean=mean, stddev=math.sqrt(var),
            p50=pct("50"), p90=pct("90"), p99=pct("99"), p99_9=pct("99.9"),
        )  # fmt: skip
    if not buckets:  # an instance's: fio's percentile list instead of buckets
        out["percentiles"] = [[float(p), pct(p)] for p in fio_report.FIO_PERCENTILES] if count else []
    if buckets:
        merged: dict[tuple[int, int], int] = {}
        for v, n in values.items():
            merged[engine_bucket(v)] = merged.get(engine_bucket(v), 0) + n
        out["buckets"] = [[lo, hi, n] for (lo, hi), n in sorted(merged.items())]
    return out


def direction(ios: int, bs: int, runtime_s: float, clat: dict[int, int], slat_ns: int = 0) -> dict[str, Any]:
    """A DIR: `clat` the completion latencies; lat adds `slat_ns` to each (0: a synchronous engine)."""
    return {
        "ios": ios,
        "bytes": ios * bs,
        "runtime_s": runtime_s if ios else 0.0,
        "iops": ios / runtime_s if ios else 0.0,
        "bw_bytes_per_s": ios * bs / runtime_s if ios else 0.0,
        "clat_ns": lat(clat),
        "lat_ns": lat({v + slat_ns: n for v, n in clat.items()}),
        "slat_ns": lat({slat_ns: sum(clat.values())} if slat_ns else {}),
    }


def second(t: int, rd: int, wr: int, bs: int) -> dict[str, Any]:
    def sec(ios: int) -> dict[str, Any]:
        if not ios:
            return {"ios": 0, "bytes": 0, "p50_ns": 0, "p90_ns": 0, "p99_ns": 0, "p99_9_ns": 0, "max_ns": 0}
        return {
            "ios": ios, "bytes": ios * bs, "p50_ns": 50_000, "p90_ns": 81_920, "p99_ns": 204_800,
            "p99_9_ns": 1_015_808, "max_ns": 5_000_000,
        }  # fmt: skip

    return {"t_s": t, "read": sec(rd), "write": sec(wr)}


def instance(rank: int, inst: int, rd: int, wr: int, bs: int, runtime_s: float) -> dict[str, Any]:
    """An INST: half of its I/Os completed in 50 us, half in 80 us (with a 2 us submission on io_uring);
    one-second samples of ios / runtime ± 10%."""

    def one(ios: int) -> dict[str, Any]:
        clat = {50_000: ios // 2, 80_000: ios - ios // 2} if ios else {}
        per_s = ios / runtime_s if ios else 0.0
        iops = {"min": 0.9 * per_s, "max": 1.1 * per_s, "mean": per_s, "stddev": 0.05 * per_s}
        return {
            "ios": ios, "bytes": ios * bs, "runtime_s": runtime_s if ios else 0.0,
            "lat_ns": lat(clat, buckets=False), "clat_ns": lat(clat, buckets=False),
            "slat_ns": lat({}, buckets=False),
            "bw_kib_s": {k: v * bs / 1024 for k, v in iops.items()} | {"samples": 10 if ios else 0},
            "iops": iops | {"samples": 10 if ios else 0},
        }  # fmt: skip

    return {
        "rank": rank, "instance": inst, "read": one(rd), "write": one(wr),
        "sync": {"ios": 8, "lat_ns": lat({400_000: 8}, buckets=False)},
        "clat_dist": {"ns": {}, "us": {"100": rd + wr}, "ms": {}},
        "usr_s": 0.2, "sys_s": 0.6, "ctx": 700 + inst, "elapsed_s": runtime_s,
    }  # fmt: skip


KiB4 = 4096
MiB1 = 1024 * 1024

# randrw's read completion latencies: the percentiles fall in known buckets (1% at 20 µs, up to 50% at
# 50 µs, up to 90% at 80 µs, up to 99% at 200 µs, up to 99.9% at 1 ms, and one I/O of 5 ms).
RANDRW_READ = {20_000: 10, 50_000: 490, 80_000: 400, 200_000: 90, 1_000_000: 9, 5_000_000: 1}
RANDRW_WRITE = {30_000: 250, 60_000: 240, 3_000_000: 10}
SEQREAD = {1_400_000: 1024, 2_000_000: 1004, 9_000_000: 20}


def sample_fio_document() -> dict[str, Any]:
    """A complete, valid fio document: 2 ranks; group 0 runs "randrw" (psync, numjobs=2: 4 instances, no
    group_reporting, fsync=16, cache=cold) for 10 s; group 1 runs "seqread" (io_uring, iodepth=16, 2
    instances, group_reporting, a buffered read whose figure comes from the page cache, verify) for 4 s."""
    randrw_opts = {
        "name": "randrw", "rw": "randrw", "bs": KiB4, "size": 1 << 30, "numjobs": 2, "ioengine": "psync",
        "iodepth": 1, "directory": "/scratch/fio", "fsync": 16, "direct": False, "cache": "cold",
        "time_based": True, "runtime": 10_000_000, "group_reporting": False,
    }  # fmt: skip
    seqread_opts = {
        "name": "seqread", "rw": "read", "bs": MiB1, "size": 1 << 30, "numjobs": 1, "ioengine": "io_uring",
        "iodepth": 16, "directory": "/scratch/fio", "direct": False, "cache": "asis", "verify": "crc32c",
        "group_reporting": True, "stonewall": True,
    }  # fmt: skip
    randrw = {
        "name": "randrw", "group": 0, "instances": 4, "ioengine": "psync",
        "files": ["/scratch/fio/randrw.0.0"], "file_system": "ext4",
        "cache": {"mode": "cold", "direct": False, "evicted": True, "cache_figure": False, "note": None},
        "elapsed_s": 10.0, "ramp_s": 0.0,
        "read": direction(1000, KiB4, 10.0, RANDRW_READ),
        "write": direction(500, KiB4, 10.0, RANDRW_WRITE),
        "sync": {"ios": 31, "lat_ns": lat({400_000: 31})},
        "verify": None,
        "cpu": {"usr_s": 0.8, "sys_s": 2.4, "usr_pct": 2.0, "sys_pct": 6.0, "ctx": 3100,
                "per_io_ns": 3.2e9 / 1500},
        "per_second": [
            second(t + 1, rd, 50, KiB4)
            for t, rd in enumerate([90, 110, 100, 100, 95, 105, 100, 100, 100, 100])
        ],
        "per_instance": [
            instance(0, 0, 240, 125, KiB4, 10.0), instance(0, 1, 260, 125, KiB4, 9.9),
            instance(1, 0, 250, 125, KiB4, 10.0), instance(1, 1, 250, 125, KiB4, 9.8),
        ],
        "backend": {"requests": 1531, "fixed_bufs": 0, "fixed_files": 0, "resubmits": 0,
                    "submit_calls": 1531, "waits": 0},
    }  # fmt: skip
    seqread = {
        "name": "seqread", "group": 1, "instances": 2, "ioengine": "io_uring",
        "files": ["/scratch/fio/seqread.0.0", "/scratch/fio/seqread.1.0"], "file_system": "ext4",
        "cache": {"mode": "asis", "direct": False, "evicted": False, "cache_figure": True,
                  "note": "the files were written by this node and not dropped: their pages were in memory"},
        "elapsed_s": 4.0, "ramp_s": 0.0,
        "read": direction(2048, MiB1, 4.0, SEQREAD, slat_ns=3_000),
        "write": direction(0, MiB1, 4.0, {}),
        "sync": {"ios": 0, "lat_ns": lat({})},
        "verify": {"mode": "crc32c", "blocks_checked": 2048, "errors": 0, "first_bad_offset": None,
                   "first_bad_file": None},
        "cpu": {"usr_s": 0.1, "sys_s": 0.7, "usr_pct": 1.25, "sys_pct": 8.75, "ctx": 900,
                "per_io_ns": 0.8e9 / 2048},
        "per_second": [second(t, 512, 0, MiB1) for t in (1, 2, 3, 4)],
        "per_instance": [instance(0, 0, 1024, 0, MiB1, 4.0), instance(1, 0, 1024, 0, MiB1, 4.0)],
        "backend": {"requests": 2048, "fixed_bufs": 2048, "fixed_files": 2, "resubmits": 0,
                    "submit_calls": 130, "waits": 128},
    }  # fmt: skip
    groups = [
        {
            "id": 0, "jobs": [0], "elapsed_s": 10.0,
            "cpu": {"usr_s": 0.8, "sys_s": 2.4, "usr_pct": 2.0, "sys_pct": 6.0, "ctx": 3100,
                    "per_io_ns": 3.2e9 / 1500, "kernel_workers_s": 0.0, "total_s": 3.2},
            "machine": {"cpus": 8, "busy_s": 12.0, "others_busy_s": 8.8, "others_busy_pct": 11.0,
                        "steal_s": 0.0,
                        "note": "the rest of the machine was busy: 11.0% of 8 CPUs while the group ran"},
        },
        {
            "id": 1, "jobs": [1], "elapsed_s": 4.0,
            "cpu": {"usr_s": 0.1, "sys_s": 0.7, "usr_pct": 1.25, "sys_pct": 8.75, "ctx": 900,
                    "per_io_ns": 0.8e9 / 2048, "kernel_workers_s": 0.35, "total_s": 1.15,
                    "total_per_io_ns": 1.15e9 / 2048},
            "machine": {"cpus": 8, "busy_s": 1.3, "others_busy_s": 0.15, "others_busy_pct": 0.5,
                        "steal_s": 0.0, "note": None},
        },
    ]  # fmt: skip
    return {
        "schema_version": 1,
        "tool": "iolens",
        "version": "0.1.0",
        "workload": "fio",
        "status": "ok",
        "error": None,
        "command": ["iolens-bench", "fio", "jobs.fio", "--np", "2"],
        "started_at": "2024-05-01T10:00:00Z",
        "ended_at": "2024-05-01T10:00:15Z",
        "host": {"hostname": "node01", "kernel": "6.1.0"},
        "comm": {"kind": "local", "ranks": 2, "nodes": 1, "tasks_per_node": 2, "max_clock_offset_ns": 0},
        "build": {"mpi": True, "liburing": True, "libaio": True},
        "config": {
            "jobs": [
                {"name": "randrw", "group": 0, "options": randrw_opts},
                {"name": "seqread", "group": 1, "options": seqread_opts},
            ]
        },
        "fio": {"groups": groups, "jobs": [randrw, seqread]},
    }


@pytest.fixture
def fio_doc() -> dict[str, Any]:
    return copy.deepcopy(sample_fio_document())


def _text(doc: results.Document, width: int = 200) -> str:
    console = Console(width=width, record=True, force_terminal=False)
    render.print_document(doc, console)
    return console.export_text()


# --- results.py: the model -------------------------------------------------------------------------------


def test_fio_document_becomes_its_typed_model(fio_doc: dict[str, Any]) -> None:
    doc = results.parse(fio_doc)
    assert isinstance(doc, results.FioDocument) and doc.ok and doc.fio is not None
    randrw, seqread = doc.jobs
    assert (randrw.name, randrw.group, randrw.instances, randrw.ioengine) == ("randrw", 0, 4, "psync")
    assert randrw.read.ios == 1000 and randrw.read.bytes == 1000 * KiB4 and randrw.write.ios == 500
    assert randrw.read.iops == pytest.approx(100.0) and randrw.read.bw_bytes_per_s == pytest.approx(409_600)
    assert randrw.read.clat_ns.count == 1000 and randrw.read.clat_ns.min == 20_000
    assert sum(b.count for b in randrw.read.clat_ns.buckets) == 1000
    assert randrw.sync.ios == 31 and randrw.cpu.ctx == 3100 and randrw.cache.mode == "cold"
    assert [s.t_s for s in randrw.per_second] == list(range(1, 11))
    assert [(i.rank, i.instance, i.read.ios) for i in randrw.per_instance] == [
        (0, 0, 240), (0, 1, 260), (1, 0, 250), (1, 1, 250),
    ]  # fmt: skip
    assert randrw.per_instance[0].read.lat_ns.buckets == ()
    assert randrw.directions == ("read", "write") and seqread.directions == ("read",)
    assert randrw.synchronous and not seqread.synchronous
    assert not randrw.group_reporting and seqread.group_reporting
    assert randrw.options["fsync"] == 16 and seqread.options["iodepth"] == 16
    assert seqread.cache.cache_figure and seqread.verify is not None and seqread.verify.blocks_checked == 2048
    g0, g1 = doc.fio.groups
    assert g0.jobs == (0,) and g1.cpu.kernel_workers_s == pytest.approx(0.35)
    assert g0.machine.note is not None and g1.machine.note is None
    assert doc.verify_errors == 0


def test_percentiles_from_the_buckets_match_the_engines(fio_doc: dict[str, Any]) -> None:
    doc = results.parse(fio_doc)
    for job in doc.jobs:
        for lat_ in (job.read.clat_ns, job.read.lat_ns, job.write.clat_ns, job.sync.lat_ns):
            assert [lat_.percentile(p) for p in ("50", "90", "99", "99.9")] == [
                lat_.p50, lat_.p90, lat_.p99, lat_.p99_9,
            ]  # fmt: skip


def test_fio_default_percentiles_of_a_known_histogram(fio_doc: dict[str, Any]) -> None:
    read = results.parse(fio_doc).jobs[0].read.clat_ns
    got = dict(fio_report.percentiles(read))
    # Each is the upper bound of the bucket holding that rank: 20 000 ns is in [19968, 20095], 50 000 in
    # [49920, 50175], 80 000 in [79872, 80383], 200 000 in [199680, 200703], 1 000 000 in [999424, 1003519];
    # the top ranks are the one 5 ms I/O, its bucket's bound clamped to max.
    assert got == {
        "1": 20_095, "5": 50_175, "10": 50_175, "20": 50_175, "30": 50_175, "40": 50_175, "50": 50_175,
        "60": 80_383, "70": 80_383, "80": 80_383, "90": 80_383, "95": 200_703, "99": 200_703,
        "99.5": 1_003_519, "99.9": 1_003_519, "99.95": 5_000_000, "99.99": 5_000_000,
    }  # fmt: skip


def test_percentile_of_an_empty_histogram_is_zero(fio_doc: dict[str, Any]) -> None:
    write = results.parse(fio_doc).jobs[1].write
    assert write.clat_ns.count == 0 and write.clat_ns.percentile("99") == 0
    assert fio_report.percentiles(write.clat_ns) == []


@pytest.mark.parametrize(
    ("breakage", "message"),
    [
        (lambda d: d["fio"]["jobs"][0]["read"].pop("iops"), r"fio\.jobs\[0\]\.read\.iops: missing"),
        (lambda d: d["fio"]["jobs"][0]["read"]["clat_ns"].pop("stddev"), r"read\.clat_ns\.stddev: missing"),
        (lambda d: d["fio"]["jobs"][1].update(instances="2"), r"instances: expected integer, got string"),
        (lambda d: d["fio"]["jobs"][1].update(instances=0), r"instances: must be at least 1"),
        (lambda d: d["fio"]["jobs"][0]["read"]["clat_ns"]["buckets"].pop(),
         r"read\.clat_ns\.buckets: hold 999 values, but count is 1000"),
        (lambda d: d["fio"]["jobs"][0]["read"]["lat_ns"]["buckets"].__setitem__(0, [5, 4, 10]),
         r"lat_ns\.buckets\[0\]: not a bucket"),
        (lambda d: d["fio"]["jobs"][0]["cache"].update(mode="warm"),
         r"cache\.mode: unknown cache mode 'warm'"),
        (lambda d: d["fio"]["jobs"][0]["per_second"][3]["read"].pop("p99_ns"),
         r"per_second\[3\]\.read\.p99_ns: missing"),
        (lambda d: d["fio"]["jobs"][0]["per_instance"][2].pop("write"), r"per_instance\[2\]\.write: missing"),
        (lambda d: d["fio"]["jobs"][1]["verify"].update(errors=None), r"verify\.errors: must not be null"),
        (lambda d: d["fio"]["groups"][1].update(jobs=[5]), r"groups\[1\]\.jobs\[0\]: job 5 does not exist"),
        (lambda d: d["fio"]["groups"][0].update(jobs=[1]), r"job 1 \('seqread'\) is in group 1, not 0"),
        (lambda d: d["fio"]["groups"][0]["machine"].pop("steal_s"),
         r"groups\[0\]\.machine\.steal_s: missing"),
        (lambda d: d["fio"]["groups"][0]["cpu"].pop("kernel_workers_s"), r"cpu\.kernel_workers_s: missing"),
        (lambda d: d["fio"]["jobs"][0].pop("backend"), r"fio\.jobs\[0\]\.backend: missing"),
        (lambda d: d["config"]["jobs"].pop(), r"config\.jobs: 1 jobs, but fio\.jobs has 2"),
        (lambda d: d["config"]["jobs"][0].update(name="other"), r"fio\.jobs\[0\]: 'randrw' in group 0, but"),
        (lambda d: d.pop("fio"), r"^fio: missing"),
        (lambda d: d["fio"].pop("groups"), r"fio\.groups: missing"),
    ],
    ids=["no-iops", "no-stddev", "instances-string", "no-instances", "buckets-short", "bad-bucket",
         "cache-mode", "second-p99", "instance-dir", "verify-null", "group-index", "group-membership",
         "machine-key", "group-cpu", "no-backend", "config-count", "config-name", "no-fio", "no-groups"],
)  # fmt: skip
def test_broken_fio_document_is_refused_naming_the_key(
    fio_doc: dict[str, Any], breakage: Any, message: str
) -> None:
    breakage(fio_doc)
    with pytest.raises(results.ResultError, match=message):
        results.parse(fio_doc)


def test_truncated_fio_document_is_refused_not_a_traceback(fio_doc: dict[str, Any], tmp_path: Path) -> None:
    text = json.dumps(fio_doc, indent=1)
    path = tmp_path / "cut.json"
    path.write_text(text[: len(text) * 2 // 3])
    with pytest.raises(results.ResultError, match=r"not valid JSON \(truncated\?\)"):
        results.load(path)


def test_failed_fio_run_may_stop_before_its_figures(tmp_path: Path) -> None:
    failed = {
        "schema_version": 1, "tool": "iolens", "version": "0.1.0", "workload": "fio", "status": "failed",
        "error": {"message": "randrw: open /scratch/fio/randrw.0.0: Permission denied", "rank": 0,
                  "phase": "randrw"},
    }  # fmt: skip
    doc = results.parse(failed)
    assert isinstance(doc, results.FioDocument) and not doc.ok
    assert doc.fio is None and doc.jobs == () and doc.jobs_config == () and doc.verify_errors == 0
    out = _text(doc)
    assert "Permission denied" in out and "run failed" in out


def test_verify_errors_count_in_the_model(fio_doc: dict[str, Any]) -> None:
    fio_doc["fio"]["jobs"][1]["verify"].update(errors=3, first_bad_offset=8 * MiB1, first_bad_file="/f")
    assert results.parse(fio_doc).verify_errors == 3


# --- render.py: the fio-like report ----------------------------------------------------------------------


def test_report_reads_like_fio(fio_doc: dict[str, Any]) -> None:
    out = _text(results.parse(fio_doc))
    lines = out.splitlines()
    assert "randrw: (groupid=0, jobs=4): err= 0: ioengine=psync, ext4" in out
    assert "seqread: (groupid=1, jobs=2): err= 0: ioengine=io_uring" in out
    # 1000 reads of 4 KiB in 10 s; 2048 reads of 1 MiB in 4 s.
    assert "  read: IOPS=100, BW=400KiB/s (410kB/s)(4000KiB/10000msec)" in lines
    assert "  write: IOPS=50, BW=200KiB/s (205kB/s)(2000KiB/10000msec)" in lines
    assert "  read: IOPS=512, BW=512MiB/s (537MB/s)(2048MiB/4000msec)" in lines
    # A synchronous engine has no slat line; io_uring's is there.
    randrw_part, seqread_part = out.split("seqread: (groupid=1")
    assert "slat" not in randrw_part
    assert "    slat (nsec): min=3000, max=3000, avg=3000.00, stdev= 0.00" in seqread_part
    assert "    clat (usec): min=20, max=5000, avg=" in randrw_part
    assert "    clat (usec): min=1400, max=9000, avg=" in seqread_part


def test_report_has_fios_percentile_block(fio_doc: dict[str, Any]) -> None:
    out = _text(results.parse(fio_doc))
    block = out.split("    clat percentiles (usec):\n", 1)[1].splitlines()[:5]
    # fio rounds up to µs: 20 095 ns is 21 µs, 50 175 is 51, 80 383 is 81, 200 703 is 201, 1 003 519 is 1004.
    assert block == [
        "     |  1.00th=[   21],  5.00th=[   51], 10.00th=[   51], 20.00th=[   51],",
        "     | 30.00th=[   51], 40.00th=[   51], 50.00th=[   51], 60.00th=[   81],",
        "     | 70.00th=[   81], 80.00th=[   81], 90.00th=[   81], 95.00th=[  201],",
        "     | 99.00th=[  201], 99.50th=[ 1004], 99.90th=[ 1004], 99.95th=[ 5000],",
        "     | 99.99th=[ 5000]",
    ]
    # lat percentiles too on an asynchronous engine (seqread, io_uring: clat + 3 us of submission), as
    # fio's lat_percentiles=1; not on psync (randrw), where lat is clat.
    assert out.count("     lat percentiles (usec):") == 1
    lat_block = out.split("     lat percentiles (usec):\n", 1)[1].splitlines()[:1]
    # 1 403 000 ns falls in the bucket [1 400 832, 1 409 023]: 1410 us rounded up.
    assert lat_block == ["     |  1.00th=[ 1410],  5.00th=[ 1410], 10.00th=[ 1410], 20.00th=[ 1410],"]
    assert out.index("seqread:") < out.index("     lat percentiles")


def test_report_has_per_second_bw_and_iops(fio_doc: dict[str, Any]) -> None:
    out = _text(results.parse(fio_doc))
    # Reads per second 90..110 of 4 KiB: 360..440 KiB/s, mean 400.
    bw = next(line for line in out.splitlines() if line.startswith("   bw (  KiB/s): min=  360"))
    assert "max=  440, per=100.00%, avg=400.00" in bw and "samples=10" in bw
    assert "   iops        : min=   90, max=  110, avg=100.00" in out
    # fio changes to MiB/s only above 1 GiB/s.
    bw = "   bw (  KiB/s): min=524288, max=524288, per=100.00%, avg=524288.00, stdev= 0.00, samples=4"
    assert bw in out


def test_report_has_latency_distribution_sync_and_cpu(fio_doc: dict[str, Any]) -> None:
    out = _text(results.parse(fio_doc))
    # 1500 I/Os of randrw: 10 at 20 µs, 250 at 30 µs, 490 at 50 µs, 240 at 60 µs, 400 at 80 µs,
    # 90 at 200 µs, then 9 at 1 ms, 10 at 3 ms, 1 at 5 ms.
    assert "  lat (usec)   : 50=17.33%, 100=75.33%, 250=6.00%" in out
    assert "  lat (msec)   : 2=0.60%, 4=0.67%, 10=0.07%" in out
    assert "  fsync/fdatasync/sync_file_range:" in out and "    sync (usec): min=400, max=400" in out
    assert "    sync percentiles (usec):" in out
    assert "  cpu          : usr=2.00%, sys=6.00%, ctx=3100" in out
    assert "  cpu per I/O  : 2.13 ms" in out


def test_report_warns_about_a_page_cache_figure(fio_doc: dict[str, Any]) -> None:
    out = _text(results.parse(fio_doc))
    assert "warning: cache" in out
    assert "seqread: the buffered read figure comes from the page cache" in out
    assert "their pages were in memory" in out and "Use cache=cold or direct=1" in out
    assert "cold: the files' pages were dropped before the job" in out
    fio_doc["fio"]["jobs"][1]["cache"].update(cache_figure=False, direct=True, note=None)
    out = _text(results.parse(fio_doc))
    assert "warning: cache" not in out and "page cache (memory)" not in out and "O_DIRECT" in out
    # randrw's buffered writes were never synced: the write figure is flagged, with what to do about it.
    fio_doc["fio"]["jobs"][0]["cache"].update(
        cache_figure=True, reads_from_memory=False, unsynced_writes=True, note="buffered writes, no fsync="
    )
    out = _text(results.parse(fio_doc))
    assert "randrw: the buffered write figure is the page cache taking the data" in out
    assert "Add end_fsync=1" in out and "buffered read figure" not in out


def test_report_warns_when_fixed_buffers_were_not_used(fio_doc: dict[str, Any]) -> None:
    assert "registered buffer" not in _text(results.parse(fio_doc))
    fio_doc["fio"]["jobs"][1]["backend"]["fixed_bufs"] = 48  # of 2048 requests: registration failed
    out = " ".join(_text(results.parse(fio_doc)).split())
    assert "fixedbufs=1, but 48 of 2048 requests used a registered buffer" in out and "ulimit -l" in out
    fio_doc["config"]["jobs"][1]["options"]["fixedbufs"] = False
    assert "registered buffer" not in _text(results.parse(fio_doc)), "fixedbufs=0 asked for none"


def test_report_run_status_groups_and_machine(fio_doc: dict[str, Any]) -> None:
    lines = _text(results.parse(fio_doc)).splitlines()
    at = lines.index("Run status group 0 (all jobs):")
    # No group_reporting: the instances are fio's entries (bandwidths 96.0..105 KiB/s, runs 9800..10000 ms).
    assert lines[at + 1] == (
        "   READ: bw=400KiB/s (410kB/s), 96.0KiB/s-105KiB/s (98.3kB/s-108kB/s), io=4000KiB (4096kB), "
        "run=9800-10000msec"
    )
    assert lines[at + 2].startswith("  WRITE: bw=200KiB/s (205kB/s), ")
    assert "kernel workers=0.00s" in lines[at + 3]
    assert "8 CPUs; the rest of the machine used 8.80s of CPU (11.0%)" in lines[at + 4]
    assert "the rest of the machine was busy: 11.0% of 8 CPUs" in lines[at + 5]
    at1 = lines.index("Run status group 1 (all jobs):")
    assert lines[at1 + 1].startswith("   READ: bw=512MiB/s (537MB/s), 512MiB/s-512MiB/s")
    assert "kernel workers=0.35s" in lines[at1 + 2]
    # io_uring's kernel workers count in what an I/O cost: (0.1 + 0.7 + 0.35) s / 2048, beside the threads'.
    assert lines[at1 + 3].startswith("  cpu per I/O  : 561.5 µs with the kernel workers")
    assert "the threads alone: 390.6 µs" in lines[at1 + 3]


def test_report_lists_instances_and_verification(fio_doc: dict[str, Any]) -> None:
    out = _text(results.parse(fio_doc))
    assert "verify       : crc32c, 2048 blocks checked, no errors" in out
    header = next(line for line in out.splitlines() if line.split()[:2] == ["rank", "inst"])
    assert "read IOPS" in header and "write BW" in header
    row = next(line for line in out.splitlines() if line.split()[:2] == ["0", "1"])
    assert row.split()[2] == "26"  # 260 reads in 9.9 s
    fio_doc["fio"]["jobs"][1]["verify"].update(errors=3, first_bad_offset=8 * MiB1, first_bad_file="/f")
    out = _text(results.parse(fio_doc))
    assert "VERIFICATION FAILED: crc32c, 2048 blocks checked, 3 bad, first at offset 8388608 of /f" in out


# --- fio_json.py: fio's JSON shape -----------------------------------------------------------------------


def test_fio_json_top_level(fio_doc: dict[str, Any]) -> None:
    out = fio_json.to_fio_json(results.parse(fio_doc))
    assert list(out)[:6] == ["fio version", "timestamp", "timestamp_ms", "time", "global options", "jobs"]
    assert out["fio version"] == "iolens-0.1.0"
    assert out["timestamp"] == 1714557615 and out["timestamp_ms"] == 1714557615000
    assert out["disk_util"] == []
    # What both jobs have alike, as strings; what differs stays with each job.
    shared = out["global options"]
    assert shared["directory"] == "/scratch/fio" and shared["size"] == "1073741824"
    assert shared["direct"] == "0" and "rw" not in shared and "name" not in shared
    assert json.loads(fio_json.dumps(out)) == out


def test_fio_json_expands_instances_without_group_reporting(fio_doc: dict[str, Any]) -> None:
    jobs = fio_json.to_fio_json(results.parse(fio_doc))["jobs"]
    # randrw: 4 instances, one entry each under the job's name; seqread (group_reporting): one entry.
    assert [j["jobname"] for j in jobs] == ["randrw"] * 4 + ["seqread"]
    assert [j["groupid"] for j in jobs] == [0, 0, 0, 0, 1]
    second = jobs[1]
    assert (second["iolens"]["rank"], second["iolens"]["instance"]) == (0, 1)
    assert second["read"]["total_ios"] == 260 and second["read"]["io_bytes"] == 260 * KiB4
    assert second["read"]["runtime"] == 9900
    assert second["read"]["iops"] == pytest.approx(260 / 9.9)
    assert second["read"]["bw_bytes"] == int(260 * KiB4 / 9.9) and second["read"]["bw"] == 105
    # An instance entry has everything a job entry has, from the instance's own figures: fio's 17
    # percentiles of its clat, its one-second samples, its sync calls, its CPU and context switches.
    pct = second["read"]["clat_ns"]["percentile"]
    assert list(pct) == [fio_report.percentile_key(p) for p in fio_report.FIO_PERCENTILES]
    assert pct["1.000000"] == pct["50.000000"] == 50_175 and pct["99.990000"] == 80_000
    assert second["read"]["clat_ns"]["N"] == 260 and "percentile" not in second["read"]["lat_ns"]
    assert second["read"]["slat_ns"]["N"] == 0
    assert second["read"]["bw_samples"] == 10 and second["read"]["iops_mean"] == pytest.approx(260 / 9.9)
    assert second["read"]["iops_min"] == round(0.9 * 260 / 9.9) and second["read"]["bw_mean"] > 0
    assert second["sync"]["total_ios"] == 8 and second["sync"]["lat_ns"]["percentile"]["50.000000"] == 400_000
    assert second["ctx"] == 701 and second["latency_us"]["100"] == 100.0
    assert second["job_runtime"] == 9900 and second["usr_cpu"] == pytest.approx(100 * 0.2 / 9.9)
    assert set(second["iolens"]) >= {"rank", "instance"} and "per_job_only" not in second["iolens"]
    assert second["job options"]["rw"] == "randrw" and "directory" not in second["job options"]
    assert jobs[4]["iolens"]["instances"] == 2 and "rank" not in jobs[4]["iolens"]
    fio_doc["config"]["jobs"][0]["options"]["group_reporting"] = True
    jobs = fio_json.to_fio_json(results.parse(fio_doc))["jobs"]
    assert [j["jobname"] for j in jobs] == ["randrw", "seqread"]


def test_fio_json_job_figures(fio_doc: dict[str, Any]) -> None:
    fio_doc["config"]["jobs"][0]["options"]["group_reporting"] = "1"
    randrw, seqread = fio_json.to_fio_json(results.parse(fio_doc))["jobs"]
    r = randrw["read"]
    assert (r["io_bytes"], r["io_kbytes"], r["total_ios"], r["runtime"]) == (4_096_000, 4000, 1000, 10_000)
    assert r["bw_bytes"] == 409_600 and r["bw"] == 400 and r["iops"] == pytest.approx(100.0)
    assert (r["short_ios"], r["drop_ios"]) == (0, 0)
    clat = r["clat_ns"]
    assert (clat["min"], clat["max"], clat["N"]) == (20_000, 5_000_000, 1000)
    assert clat["mean"] == pytest.approx(sum(v * n for v, n in RANDRW_READ.items()) / 1000)
    assert list(clat["percentile"]) == [
        "1.000000", "5.000000", "10.000000", "20.000000", "30.000000", "40.000000", "50.000000",
        "60.000000", "70.000000", "80.000000", "90.000000", "95.000000", "99.000000", "99.500000",
        "99.900000", "99.950000", "99.990000",
    ]  # fmt: skip
    assert clat["percentile"]["99.000000"] == 200_703 and clat["percentile"]["50.000000"] == 50_175
    # fio gives percentiles for clat only, and slat N=0 on a synchronous engine.
    assert "percentile" not in r["lat_ns"] and "percentile" not in r["slat_ns"]
    assert r["slat_ns"] == {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0}
    assert "bins" not in clat
    # Per-second samples: reads of 360..440 KiB/s and 90..110 IOPS, 10 of each.
    assert (r["bw_min"], r["bw_max"], r["bw_samples"]) == (360, 440, 10)
    assert r["bw_mean"] == pytest.approx(400.0) and r["bw_agg"] == pytest.approx(100.0)
    assert (r["iops_min"], r["iops_max"], r["iops_samples"]) == (90, 110, 10)
    assert r["iops_stddev"] == pytest.approx(5.270462766947299)
    assert randrw["sync"]["total_ios"] == 31
    assert randrw["sync"]["lat_ns"]["percentile"]["50.000000"] == 400_000
    assert (randrw["usr_cpu"], randrw["sys_cpu"], randrw["ctx"]) == (2.0, 6.0, 3100)
    assert randrw["job_runtime"] == 39_700  # the four instances' 10 + 9.9 + 10 + 9.8 s
    assert randrw["iodepth_level"]["1"] == 100.0 and seqread["iodepth_level"]["16"] == 100.0
    assert randrw["trim"]["total_ios"] == 0 and randrw["trim"]["clat_ns"]["N"] == 0
    # seqread: io_uring measured slat; its write side is empty.
    s = seqread["read"]
    assert s["slat_ns"]["N"] == 2048 and s["slat_ns"]["min"] == 3000
    assert s["lat_ns"]["min"] == 1_403_000 and s["bw"] == 524_288 and s["iops"] == pytest.approx(512.0)
    assert seqread["write"]["total_ios"] == 0 and "percentile" not in seqread["write"]["clat_ns"]


def test_bw_agg_is_the_share_of_the_groups_bandwidth(fio_doc: dict[str, Any]) -> None:
    # Both jobs in one group: its read bandwidth is all the bytes read over the longest runtime.
    fio_doc["fio"]["jobs"][1]["group"] = 0
    fio_doc["config"]["jobs"][1]["group"] = 0
    fio_doc["config"]["jobs"][0]["options"]["group_reporting"] = True
    fio_doc["fio"]["groups"] = fio_doc["fio"]["groups"][:1]
    fio_doc["fio"]["groups"][0]["jobs"] = [0, 1]
    randrw, seqread = fio_json.to_fio_json(results.parse(fio_doc))["jobs"]
    group_kib_s = (1000 * KiB4 + 2048 * MiB1) / 10.0 / 1024
    assert randrw["read"]["bw_agg"] == pytest.approx(100 * 400.0 / group_kib_s)
    # seqread's 512 MiB/s over 4 s is more than the group's figure (over 10 s): capped at 100%, as in fio.
    assert seqread["read"]["bw_agg"] == 100.0
    assert fio_report.bw_share_pct(400.0, 409_600 * 4) == pytest.approx(25.0)
    assert fio_report.bw_share_pct(800.0, 409_600) == 100.0


def test_fio_json_latency_distribution(fio_doc: dict[str, Any]) -> None:
    fio_doc["config"]["jobs"][0]["options"]["group_reporting"] = True
    randrw = fio_json.to_fio_json(results.parse(fio_doc))["jobs"][0]
    edges = ("2", "4", "10", "20", "50", "100", "250", "500", "750", "1000")
    assert randrw["latency_ns"] == {k: 0.0 for k in edges}
    us, ms_ = randrw["latency_us"], randrw["latency_ms"]
    assert us["50"] == pytest.approx(100 * 260 / 1500) and us["100"] == pytest.approx(100 * 1130 / 1500)
    assert us["250"] == pytest.approx(6.0) and us["1000"] == 0.0
    assert ms_["2"] == pytest.approx(0.6) and ms_["4"] == pytest.approx(100 * 10 / 1500)
    assert ms_["10"] == pytest.approx(100 / 1500) and ms_[">=2000"] == 0.0
    assert list(ms_) == ["2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000"]
    assert sum(us.values()) + sum(ms_.values()) == pytest.approx(100.0)


def test_a_job_with_one_instance_is_reported_as_the_job(fio_doc: dict[str, Any]) -> None:
    # seqread without group_reporting, on one instance: its entry is the job's, histograms and all.
    fio_doc["config"]["jobs"][1]["options"]["group_reporting"] = False
    fio_doc["fio"]["jobs"][1]["per_instance"] = fio_doc["fio"]["jobs"][1]["per_instance"][:1]
    jobs = fio_json.to_fio_json(results.parse(fio_doc), plus=True)["jobs"]
    seqread = jobs[-1]
    assert [j["jobname"] for j in jobs].count("seqread") == 1 and "rank" not in seqread["iolens"]
    clat = seqread["read"]["clat_ns"]
    assert clat["N"] == 2048 and sum(clat["bins"].values()) == 2048


def test_fio_json_plus_adds_the_bins(fio_doc: dict[str, Any]) -> None:
    fio_doc["config"]["jobs"][0]["options"]["group_reporting"] = True
    clat = fio_json.to_fio_json(results.parse(fio_doc), plus=True)["jobs"][0]["read"]["clat_ns"]
    assert sum(clat["bins"].values()) == 1000 and clat["bins"]["50047"] == 490


def test_fio_json_of_a_failed_run_says_why(tmp_path: Path) -> None:
    failed = {
        "schema_version": 1, "tool": "iolens", "version": "0.1.0", "workload": "fio", "status": "failed",
        "error": {"message": "no space left", "rank": 1, "phase": "randrw"},
    }  # fmt: skip
    out = fio_json.to_fio_json(results.parse(failed))
    assert out["jobs"] == [] and out["iolens"]["status"] == "failed"
    assert out["iolens"]["error"] == "no space left"


def test_option_text_is_fios_string_form() -> None:
    assert fio_json.option_text(True) == "1" and fio_json.option_text(False) == "0"
    assert fio_json.option_text(4096) == "4096" and fio_json.option_text(2.0) == "2"
    assert fio_json.option_text(["a", "b"]) == "a:b" and fio_json.option_text(None) is None
    assert fio_json.option_text("") is None


# --- fio_report.py: fio's numbers --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "pow2", "unit", "text"),
    [
        (18_528, False, "", "18.5k"),
        (4_801, False, "", "4801"),
        (75_900_000, True, "B", "72.4MiB"),
        (75_900_000, False, "B", "75.9MB"),
        (4_022_272, True, "B", "3928KiB"),
        (4_022_272, False, "B", "4022kB"),
        (512, True, "B", "512B"),
        (1_234_567, False, "", "1235k"),
    ],
)
def test_numbers_are_written_as_fio_writes_them(value: int, pow2: bool, unit: str, text: str) -> None:
    assert fio_report.fio_number(value, pow2, unit) == text


def test_latency_units_are_fios() -> None:
    assert fio_report.latency_unit(10_519, 57_976) == ("nsec", 1)
    assert fio_report.latency_unit(18_000, 785_000) == ("usec", 1000)
    assert fio_report.latency_unit(2_500_000, 150_000_000) == ("msec", 1_000_000)


# --- fio_log.py: the per-second log ------------------------------------------------------------------------


def test_per_second_log_has_a_row_per_second_and_direction_with_ios(fio_doc: dict[str, Any]) -> None:
    text = fio_log.per_second_csv(results.parse(fio_doc))
    rows = list(csv.DictReader(io.StringIO(text)))
    assert text.splitlines()[0] == (
        "job,t_s,direction,ios,bytes,iops,bw_bytes_per_s,p50_ns,p90_ns,p99_ns,p99_9_ns,max_ns"
    )
    # randrw: 10 s of reads and writes; seqread: 4 s of reads, no rows for its empty write side.
    assert len(rows) == 10 * 2 + 4
    assert [(r["job"], r["t_s"], r["direction"]) for r in rows[:3]] == [
        ("randrw", "1", "read"), ("randrw", "1", "write"), ("randrw", "2", "read"),
    ]  # fmt: skip
    second_read = rows[2]
    assert second_read["ios"] == "110" and second_read["bytes"] == str(110 * KiB4)
    assert float(second_read["iops"]) == 110 and float(second_read["bw_bytes_per_s"]) == 110 * KiB4
    assert second_read["p99_ns"] == "204800" and second_read["max_ns"] == "5000000"
    assert {r["direction"] for r in rows if r["job"] == "seqread"} == {"read"}
    assert sum(int(r["ios"]) for r in rows if r["job"] == "randrw" and r["direction"] == "read") == 1000
