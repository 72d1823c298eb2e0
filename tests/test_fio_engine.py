"""The engine's fio workload: what each rw mode moves, the random map, verification, time limits, the
statistics, every backend on tmpfs and disk, and the safety and bad-input rules. Real files, real runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from .fio_helpers import iolog_ios, job, offsets_count, run_fio

KIB = 1024
MIB = 1024 * KIB


def base(d: Path, *more: str) -> list[str]:
    return ["--name=t", f"--directory={d}", "--bs=4k", "--size=4m", *more]


@pytest.mark.parametrize(
    ("rw", "reads", "writes"),
    [("read", 1024, 0), ("write", 0, 1024), ("randread", 1024, 0), ("randwrite", 0, 1024)],
)
def test_each_rw_mode_moves_exactly_its_bytes(
    engine: Path, tmpfs_dir: Path, rw: str, reads: int, writes: int
) -> None:
    res = run_fio(engine, base(tmpfs_dir, f"--rw={rw}"))
    j = job(res)
    assert (j["read"]["ios"], j["write"]["ios"]) == (reads, writes)
    assert j["read"]["bytes"] == reads * 4 * KIB and j["write"]["bytes"] == writes * 4 * KIB
    assert (tmpfs_dir / "t.0.0").stat().st_size == 4 * MIB


@pytest.mark.parametrize("rw", ["rw", "readwrite", "randrw"])
def test_mixed_modes_split_the_region_by_rwmixread(engine: Path, tmpfs_dir: Path, rw: str) -> None:
    j = job(run_fio(engine, base(tmpfs_dir, f"--rw={rw}", "--rwmixread=70", "--size=16m")))
    total = j["read"]["ios"] + j["write"]["ios"]
    assert total == 4096
    assert abs(j["read"]["ios"] / total - 0.70) < 0.04
    j = job(run_fio(engine, base(tmpfs_dir, f"--rw={rw}", "--rwmixwrite=10", "--size=16m")))
    assert abs(j["read"]["ios"] / 4096 - 0.90) < 0.03


def test_randread_touches_every_block_once_per_loop(engine: Path, tmpfs_dir: Path) -> None:
    log = tmpfs_dir / "io.log"
    j = job(run_fio(engine, base(tmpfs_dir, "--rw=randread", "--loops=3", f"--write_iolog={log}")))
    assert j["read"]["ios"] == 3 * 1024
    ios = iolog_ios(log)
    assert len(ios) == 3 * 1024
    for loop in range(3):
        part = ios[loop * 1024 : (loop + 1) * 1024]
        assert sorted(off for _, _, off, _ in part) == [b * 4096 for b in range(1024)]
    orders = [[off for _, _, off, _ in ios[k * 1024 : (k + 1) * 1024]] for k in range(3)]
    assert orders[0] != sorted(orders[0]) and orders[0] != orders[1], "random, and a new order each loop"


def test_norandommap_lets_blocks_repeat(engine: Path, tmpfs_dir: Path) -> None:
    log = tmpfs_dir / "io.log"
    job(run_fio(engine, base(tmpfs_dir, "--rw=randread", "--norandommap", f"--write_iolog={log}")))
    counts = offsets_count(iolog_ios(log))
    assert sum(counts.values()) == 1024
    assert len(counts) < 900, "1024 uniform draws from 1024 blocks leave about 37% untouched"


@pytest.mark.parametrize("mapping", [[], ["--norandommap"]])
def test_randrepeat_gives_the_same_sequence_and_randseed_another(
    engine: Path, tmpfs_dir: Path, mapping: list[str]
) -> None:
    runs = {
        "default": [], "default again": [], "seed 1234": ["--randseed=1234"],
        "seed 0": ["--randseed=0"], "seed 0 again": ["--randseed=0"],
        "randrepeat=0": ["--randrepeat=0"], "randrepeat=0 again": ["--randrepeat=0"],
        "randrepeat=0 seed 1234": ["--randrepeat=0", "--randseed=1234"],
    }  # fmt: skip
    logs = {}
    for i, (what, extra) in enumerate(runs.items()):
        log = tmpfs_dir / f"io{i}.log"
        job(run_fio(engine, base(tmpfs_dir, "--rw=randread", f"--write_iolog={log}", *mapping, *extra)))
        logs[what] = [off for _, _, off, _ in iolog_ios(log)]
    # fio: randrepeat=1 (the default) repeats its sequence; randseed picks another one, 0 as well (a seed,
    # not "the clock"), and overrides randrepeat; randrepeat=0 without randseed is new on every run.
    assert logs["default"] == logs["default again"]
    assert logs["default"] != logs["seed 1234"]
    assert logs["seed 0"] == logs["seed 0 again"] != logs["default"]
    assert logs["randrepeat=0"] != logs["randrepeat=0 again"]
    assert logs["randrepeat=0"] != logs["default"] and logs["randrepeat=0 again"] != logs["default"]
    assert logs["randrepeat=0 seed 1234"] == logs["seed 1234"]


def test_bssplit_sizes_and_total(engine: Path, tmpfs_dir: Path) -> None:
    log = tmpfs_dir / "io.log"
    j = job(
        run_fio(
            engine,
            base(
                tmpfs_dir,
                "--rw=randread",
                "--bssplit=4k/50:16k/30:64k",
                "--size=64m",
                "--norandommap=1",
                f"--write_iolog={log}",
            ),
        )
    )
    # Without the random map every I/O has a size of the split, drawn in its shares.
    ios = iolog_ios(log)
    sizes = {ln for _, _, _, ln in ios}
    assert sizes == {4096, 16384, 65536}
    assert j["read"]["bytes"] == sum(ln for _, _, _, ln in ios) >= 64 * MIB
    share = sum(1 for _, _, _, ln in ios if ln == 4096) / len(ios)
    assert abs(share - 0.5) < 0.05
    assert all(off % 4096 == 0 and off + ln <= 64 * MIB for _, _, off, ln in ios)
    # With it (fio's default), an I/O that runs into a done block is shortened there: exactly the region.
    j = job(run_fio(engine, base(tmpfs_dir, "--rw=randread", "--bssplit=4k/50:16k/30:64k", "--size=64m")))
    assert j["read"]["bytes"] == 64 * MIB


def test_zipf_concentrates_on_few_blocks(engine: Path, tmpfs_dir: Path) -> None:
    log = tmpfs_dir / "io.log"
    job(
        run_fio(
            engine, base(tmpfs_dir, "--rw=randread", "--random_distribution=zipf:1.2", f"--write_iolog={log}")
        )
    )
    counts = offsets_count(iolog_ios(log))
    top = counts.most_common(10)
    assert sum(c for _, c in top) > 0.3 * 1024, "zipf(1.2): the ten hottest blocks take a large share"


def test_verify_crc32c_write_then_read_back_and_catch_a_corrupted_block(
    engine: Path, tmpfs_dir: Path
) -> None:
    args = base(tmpfs_dir, "--verify=crc32c", "--size=1m")
    j = job(run_fio(engine, [*args, "--rw=randwrite"]))
    assert j["verify"] == {**j["verify"], "blocks_checked": 256, "errors": 0}
    j = job(run_fio(engine, [*args, "--rw=read"]))
    assert j["verify"]["blocks_checked"] == 256 and j["verify"]["errors"] == 0
    with open(tmpfs_dir / "t.0.0", "r+b") as f:
        f.seek(5 * 4096 + 1000)
        byte = f.read(1)
        f.seek(5 * 4096 + 1000)
        f.write(bytes([byte[0] ^ 0xFF]))
    res = run_fio(engine, [*args, "--rw=randread"])
    assert res.returncode == 1
    assert res.doc is not None and res.doc["status"] == "failed"
    v = res.doc["fio"]["jobs"][0]["verify"]
    assert v["errors"] == 1 and v["first_bad_offset"] == 5 * 4096
    assert v["first_bad_file"].endswith("t.0.0")
    assert "verify" in res.doc["error"]["message"]


def test_time_based_stops_within_two_percent_of_runtime(engine: Path, tmpfs_dir: Path) -> None:
    j = job(run_fio(engine, base(tmpfs_dir, "--rw=randread", "--time_based", "--runtime=2")))
    assert abs(j["elapsed_s"] - 2.0) < 0.04
    assert j["read"]["ios"] > 1024, "time_based repeats the region until the runtime is over"
    assert 1 <= len(j["per_second"]) <= 2


def test_runtime_without_time_based_caps_the_job(engine: Path) -> None:
    args = ["--name=t", "--ioengine=null", "--rw=read", "--bs=4k", "--size=1t", "--runtime=500ms"]
    j = job(run_fio(engine, args))
    assert abs(j["elapsed_s"] - 0.5) < 0.02
    assert j["read"]["ios"] < (1 << 40) // 4096


def test_ramp_time_is_excluded(engine: Path) -> None:
    # 100 us per I/O, one at a time: 10,000 I/Os per counted second, none of the ramp's 5,000.
    args = [
        "--name=t",
        "--ioengine=null",
        "--null_delay=100000-100000",
        "--rw=read",
        "--bs=4k",
        "--size=1g",
        "--time_based",
        "--runtime=1",
        "--ramp_time=500ms",
    ]
    j = job(run_fio(engine, args))
    assert j["ramp_s"] == 0.5
    assert abs(j["elapsed_s"] - 1.0) < 0.05
    # At most 10,000 I/Os fit in the counted second (the ramp's would make up to 15,000). The lower bound is
    # loose: on a busy 2-core machine the spinning job thread may get well under a whole core.
    assert 3000 <= j["read"]["ios"] <= 10050
    assert j["read"]["lat_ns"]["min"] >= 100000
    # The CPU counts from the end of the ramp too: one thread cannot use more than the counted second.
    cpu = j["cpu"]
    assert cpu["usr_pct"] <= 100 and cpu["usr_pct"] + cpu["sys_pct"] <= 100.5, cpu
    assert cpu["usr_s"] + cpu["sys_s"] <= j["elapsed_s"] * 1.005


def test_jobs_of_one_group_keep_their_own_runtime_and_ramp(engine: Path, tmpfs_dir: Path) -> None:
    # Two jobs run together: "a" counts from its start and stops after 300 ms; "b" skips 500 ms of ramp
    # and then runs 1 s. Neither takes the other's (the group's longest) ramp or runtime.
    common = ["--ioengine=null", "--null_delay=100000-100000", "--rw=read", "--bs=4k", "--size=1g"]
    log_a, log_b = tmpfs_dir / "a.log", tmpfs_dir / "b.log"
    res = run_fio(
        engine,
        [
            *common,
            "--time_based",
            "--name=a",
            "--runtime=300ms",
            "--ramp_time=0",
            f"--write_iolog={log_a}",
            "--name=b",
            "--runtime=1",
            "--ramp_time=500ms",
            f"--write_iolog={log_b}",
        ],
    )
    a, b = job(res, 0), job(res, 1)
    assert a["group"] == b["group"] == 0
    assert (a["ramp_s"], b["ramp_s"]) == (0.0, 0.5)
    assert abs(a["elapsed_s"] - 0.3) < 0.03 and abs(b["elapsed_s"] - 1.0) < 0.05
    # a has no ramp: every I/O it issued counts; b's first 500 ms of I/O do not.
    assert a["read"]["ios"] == len(iolog_ios(log_a))
    assert b["read"]["ios"] < len(iolog_ios(log_b)) - 1000
    assert res.doc is not None and abs(res.doc["fio"]["groups"][0]["elapsed_s"] - 1.5) < 0.1


def test_percentiles_of_a_known_latency_distribution(engine: Path) -> None:
    # The null engine's delays: 1000 values evenly spread over [2 us, 200 us], each used 10 times.
    lo, hi, n = 2000, 200000, 10000
    values = sorted(lo + k * (hi - lo) / 999 for k in range(1000) for _ in range(10))
    args = [
        "--name=t",
        "--ioengine=null",
        f"--null_delay={lo}-{hi}",
        "--rw=randread",
        "--bs=4k",
        f"--size={n * 4096}",
    ]
    lat = job(run_fio(engine, args))["read"]["lat_ns"]
    assert lat["count"] == n
    for key, p in (("p50", 50), ("p90", 90), ("p99", 99), ("p99_9", 99.9)):
        exact = values[max(0, int(-(-p * n // 100)) - 1)]
        assert abs(lat[key] - exact) / exact < 0.01, (key, lat[key], exact)
    assert abs(lat["mean"] - (lo + hi) / 2) / ((lo + hi) / 2) < 0.01


ENGINES = ["psync", "pvsync2", "io_uring", "libaio"]


@pytest.mark.parametrize("fs", ["tmpfs", "disk"])
@pytest.mark.parametrize("direct", [0, 1])
@pytest.mark.parametrize("ioengine", ENGINES)
def test_every_backend_on_tmpfs_and_disk(
    engine: Path, tmpfs_dir: Path, disk_dir: Path, fs: str, direct: int, ioengine: str
) -> None:
    d = tmpfs_dir if fs == "tmpfs" else disk_dir
    depths = [1, 32] if ioengine in ("io_uring", "libaio") else [1]
    for depth in depths:
        common = [
            "--name=t",
            f"--directory={d}",
            "--bs=4k",
            "--size=2m",
            f"--ioengine={ioengine}",
            f"--iodepth={depth}",
            f"--direct={direct}",
            "--verify=crc32c",
        ]
        w = job(run_fio(engine, [*common, "--rw=randwrite"]))
        assert (
            w["write"]["ios"] == 512 and w["verify"]["errors"] == 0 and w["verify"]["blocks_checked"] == 512
        )
        r = job(run_fio(engine, [*common, "--rw=randread"]))
        assert r["read"]["ios"] == 512 and r["verify"]["errors"] == 0
        assert r["cache"]["direct"] == bool(direct)
        assert r["file_system"] == ("tmpfs" if fs == "tmpfs" else r["file_system"])
        if ioengine == "io_uring":
            assert r["backend"]["fixed_bufs"] == 512, "fixed buffers are iolens's default"
        if ioengine in ("io_uring", "libaio"):
            assert r["read"]["slat_ns"]["count"] == 512


def test_numjobs_instances_and_group_cpu(engine: Path, tmpfs_dir: Path) -> None:
    res = run_fio(engine, base(tmpfs_dir, "--rw=randread", "--numjobs=3", "--group_reporting"))
    j = job(res)
    assert j["instances"] == 3 and len(j["per_instance"]) == 3
    assert j["read"]["ios"] == 3 * 1024
    assert sorted(i["instance"] for i in j["per_instance"]) == [0, 1, 2]
    assert all(i["read"]["ios"] == 1024 for i in j["per_instance"])
    assert sorted(p.name for p in tmpfs_dir.iterdir() if p.name.startswith("t.")) == [
        "t.0.0",
        "t.1.0",
        "t.2.0",
    ]
    g = res.doc["fio"]["groups"][0] if res.doc else {}
    assert g["cpu"]["total_s"] >= g["cpu"]["usr_s"] + g["cpu"]["sys_s"] - 0.01
    assert g["machine"]["cpus"] == os.cpu_count()


def test_local_ranks_add_up(engine: Path, tmpfs_dir: Path) -> None:
    j = job(run_fio(engine, base(tmpfs_dir, "--rw=write", "--numjobs=2"), np=2))
    assert j["instances"] == 4 and j["write"]["ios"] == 4 * 1024
    assert len(list(tmpfs_dir.glob("t.*.0"))) == 4


def test_shared_filename_is_laid_out_once_and_used_by_every_instance(engine: Path, tmpfs_dir: Path) -> None:
    f = tmpfs_dir / "shared.dat"
    j = job(
        run_fio(
            engine, ["--name=s", f"--filename={f}", "--rw=randread", "--bs=4k", "--size=8m", "--numjobs=2"]
        )
    )
    assert j["read"]["ios"] == 2 * 2048
    assert f.stat().st_size == 8 * MIB
    assert [p.name for p in tmpfs_dir.iterdir() if p.name != ".iolens-owned"] == ["shared.dat"]


def test_fsync_every_n_writes_and_end_fsync(engine: Path, disk_dir: Path) -> None:
    # As fio 3.33 (strace): the sync after the Nth write comes when another I/O follows, so none after the
    # job's last write (1024 writes, fsync=64: 15 fsyncs); end_fsync syncs at the end.
    j = job(run_fio(engine, base(disk_dir, "--rw=write", "--fsync=64")))
    assert j["sync"]["ios"] == 1024 // 64 - 1
    j = job(run_fio(engine, base(disk_dir, "--rw=write", "--fdatasync=256", "--end_fsync=1")))
    assert j["sync"]["ios"] == 1024 // 256 - 1 + 1


def test_cache_modes_are_recorded_and_cache_figures_flagged(
    engine: Path, tmpfs_dir: Path, disk_dir: Path
) -> None:
    cold = job(run_fio(engine, base(disk_dir, "--rw=read")))
    assert cold["cache"] == {
        "mode": "cold",
        "direct": False,
        "evicted": True,
        "cache_figure": False,
        "reads_from_memory": False,
        "unsynced_writes": False,
        "note": None,
        "storage_read_bytes": 4 * MIB,  # the kernel's count: every byte read came from the disk
    }
    hot = job(run_fio(engine, base(disk_dir, "--rw=read", "--cache=hot")))
    assert hot["cache"]["mode"] == "hot" and hot["cache"]["cache_figure"]
    asis = job(run_fio(engine, base(disk_dir, "--rw=read", "--invalidate=0")))
    assert asis["cache"]["mode"] == "asis" and asis["cache"]["cache_figure"]
    shm = job(run_fio(engine, base(tmpfs_dir, "--rw=read")))
    assert shm["cache"]["evicted"] is False and shm["cache"]["cache_figure"]
    direct = job(run_fio(engine, base(disk_dir, "--rw=read", "--direct=1")))
    assert direct["cache"]["cache_figure"] is False
    assert hot["cache"]["reads_from_memory"] and not hot["cache"]["unsynced_writes"]


def resident_pages(path: Path) -> tuple[int, int]:
    """(pages of the file in the page cache, pages of the file), from util-linux's fincore (mincore(2))."""
    out = subprocess.run(
        ["fincore", "--bytes", "--raw", "--noheadings", "--output", "PAGES,SIZE", str(path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return int(out[0]), -(-int(out[1]) // os.sysconf("SC_PAGE_SIZE"))


@pytest.mark.skipif(shutil.which("fincore") is None, reason="util-linux's fincore is not installed")
def test_cache_modes_leave_the_files_pages_as_they_say(engine: Path, disk_dir: Path) -> None:
    # O_DIRECT reads neither fill nor empty the page cache: what is resident after the job is what the
    # cache mode left there before it.
    f = disk_dir / "t.0.0"
    args = base(disk_dir, "--rw=randread", "--direct=1")
    assert job(run_fio(engine, [*args, "--cache=cold"]))["cache"]["evicted"] is True
    assert resident_pages(f)[0] == 0, "cold: none of the file's pages are in memory"
    assert job(run_fio(engine, [*args, "--cache=hot"]))["cache"]["mode"] == "hot"
    pages, total = resident_pages(f)
    assert total == 1024 and pages == total, "hot: every page of the file is in memory"
    job(run_fio(engine, [*args, "--cache=cold"]))
    assert resident_pages(f)[0] == 0


@pytest.mark.parametrize(
    ("more", "flagged"),
    [
        ([], True),
        (["--end_fsync=1"], False),
        (["--fsync=64"], False),
        (["--fdatasync=64"], False),
        (["--sync=dsync", "--size=256k"], False),
        (["--direct=1"], False),
    ],
)
def test_buffered_writes_without_a_sync_are_flagged_as_cache_figures(
    engine: Path, disk_dir: Path, more: list[str], flagged: bool
) -> None:
    # Writes the storage may never have seen when the job ended measure the page cache, not the disk.
    c = job(run_fio(engine, base(disk_dir, "--rw=write", *more)))["cache"]
    assert c["cache_figure"] is flagged and c["unsynced_writes"] is flagged
    assert c["reads_from_memory"] is False
    assert ("end_fsync" in (c["note"] or "")) is flagged
    # A mixed job gets both reasons when both apply.
    if not more:
        mixed = job(run_fio(engine, base(disk_dir, "--rw=randrw", "--invalidate=0")))["cache"]
        assert mixed["reads_from_memory"] and mixed["unsynced_writes"]
        assert "cache=asis" in mixed["note"] and "end_fsync" in mixed["note"]


JOBFILE = """\
; a comment
# another
[global]
ioengine=psync
directory=${FIO_TEST_DIR}
bs=8k
size=1m

[writer]
rw=write

[reader]
stonewall
rw=read

[random]
rw=randread
bs=4k
include extra.fio
"""


def test_a_stonewalled_group_starts_after_the_one_before_ended(engine: Path, tmpfs_dir: Path) -> None:
    jf = tmpfs_dir / "sw.fio"
    jf.write_text(
        f"[global]\ndirectory={tmpfs_dir}\nbs=4k\nsize=1m\nrw=randread\ntime_based\n"
        "[a]\nruntime=300ms\n[b]\nruntime=500ms\n[c]\nstonewall\nruntime=200ms\n"
    )
    res = run_fio(engine, [str(jf)])
    assert res.doc is not None and res.doc["status"] == "ok", res.stderr
    g0, g1 = res.doc["fio"]["groups"]
    a, b, c = res.doc["fio"]["jobs"]
    # a and b start together; c (stonewall) only once both ended, on one time line (the aligned clock).
    assert g0["start_s"] == 0.0 and abs(a["start_s"] - b["start_s"]) < 0.01
    assert g0["end_s"] >= max(a["end_s"], b["end_s"]) - 1e-6 and abs(b["end_s"] - b["start_s"] - 0.5) < 0.03
    assert c["start_s"] >= g0["end_s"] and g1["start_s"] >= max(a["end_s"], b["end_s"])
    assert abs(g1["end_s"] - g1["start_s"] - 0.2) < 0.03 and c["end_s"] <= g1["end_s"] + 1e-6


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_fsync_and_fdatasync_make_those_calls(engine: Path, disk_dir: Path) -> None:
    def calls(*more: str) -> dict[str, int]:
        log = disk_dir / "strace.txt"
        strace = ["strace", "-f", "-c", "-o", str(log), "-e", "trace=fsync,fdatasync"]
        job(
            run_fio(
                engine,
                ["--np", "1", *base(disk_dir, "--rw=write", "--allow_overwrite=1", *more)],
                launcher=strace,
            )
        )
        out = {"fsync": 0, "fdatasync": 0}
        for line in log.read_text().splitlines():
            parts = line.split()
            if parts and parts[-1] in out:  # % time, seconds, usecs/call, calls, [errors,] syscall
                out[parts[-1]] = int(parts[3])
        return out

    calls()  # creates the file (and records it in the directory's ledger, which is synced too)
    none = calls()
    # 1024 writes: a sync after every 64th but the last (none follows it), as fio 3.33
    assert calls("--fsync=64") == {"fsync": none["fsync"] + 15, "fdatasync": none["fdatasync"]}
    assert calls("--fdatasync=64") == {"fsync": none["fsync"], "fdatasync": none["fdatasync"] + 15}
    assert calls("--end_fsync=1") == {"fsync": none["fsync"] + 1, "fdatasync": none["fdatasync"]}


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_fadvise_hint_gives_the_kernel_the_pattern_as_fio_does(engine: Path, disk_dir: Path) -> None:
    """fio's fadvise_hint (default 1): POSIX_FADV_RANDOM on the files of a random job (no readahead: each
    buffered block read reaches the device), POSIX_FADV_SEQUENTIAL otherwise; 0 gives none."""

    def advice(*more: str) -> list[str]:
        log = disk_dir / "strace.txt"
        strace = ["strace", "-f", "-o", str(log), "-e", "trace=fadvise64"]
        job(run_fio(engine, ["--np", "1", *base(disk_dir, "--allow_overwrite=1", *more)], launcher=strace))
        # fadvise64(FD, OFFSET, LEN, ADVICE) = 0; the cold cache's eviction gives DONTNEED (not a hint)
        got = [
            line.split(", ")[-1].split(")")[0]
            for line in log.read_text().splitlines()
            if "fadvise64(" in line
        ]
        return [a for a in got if a != "POSIX_FADV_DONTNEED"]

    advice("--rw=write")  # lays the file out
    assert advice("--rw=randread") == ["POSIX_FADV_RANDOM"]
    assert advice("--rw=read") == ["POSIX_FADV_SEQUENTIAL"]
    assert advice("--rw=randrw") == ["POSIX_FADV_RANDOM"]
    assert advice("--rw=randread", "--fadvise_hint=0") == []
    assert advice("--rw=randread", "--fadvise_hint=sequential") == ["POSIX_FADV_SEQUENTIAL"]
    assert advice("--rw=read", "--fadvise_hint=normal") == ["POSIX_FADV_NORMAL"]
    bad = run_fio(engine, base(disk_dir, "--rw=read", "--fadvise_hint=sometimes"))
    assert bad.returncode == 2 and "fadvise_hint" in bad.stderr


def test_per_second_max_is_the_exact_longest_latency(engine: Path) -> None:
    # Delays of 1..3 ms: 1000 values, the j-th I/O getting value number 359 j mod 1000, so at most 500 I/Os a
    # second (200..500 on a busy machine). The longest value comes at j = 961; over 6 s a later second lacks
    # it and has a shorter longest. Each second's must be one of the values exactly, not the upper bound of
    # a histogram bucket (nor the run's longest so far).
    lo, hi = 1_000_000, 3_000_000
    values = {lo + k * (hi - lo) // 999 for k in range(1000)}
    args = ["--name=t", "--ioengine=null", f"--null_delay={lo}-{hi}", "--rw=read", "--bs=4k", "--size=1g"]
    j = job(run_fio(engine, [*args, "--time_based", "--runtime=6"]))
    secs = [s["read"] for s in j["per_second"]]
    assert len(secs) >= 5 and all(s["ios"] > 100 for s in secs)
    for s in secs:
        assert s["max_ns"] in values, s
        assert s["p99_ns"] <= s["max_ns"] <= j["read"]["lat_ns"]["max"]
    assert min(s["max_ns"] for s in secs[1:]) < max(s["max_ns"] for s in secs), "some second is below the top"


def test_job_file_global_inheritance_groups_include_and_env(engine: Path, tmpfs_dir: Path) -> None:
    jf = tmpfs_dir / "jobs.fio"
    jf.write_text(JOBFILE)
    (tmpfs_dir / "extra.fio").write_text("numjobs=2\n")
    env = {**os.environ, "FIO_TEST_DIR": str(tmpfs_dir)}
    res = run_fio(engine, [str(jf)], env=env)
    assert res.returncode == 0, res.stderr
    assert res.doc is not None
    jobs = {j["name"]: j for j in res.doc["fio"]["jobs"]}
    assert [g["jobs"] for g in res.doc["fio"]["groups"]] == [[0], [1, 2]]
    assert jobs["writer"]["write"]["ios"] == 128 and jobs["writer"]["group"] == 0
    assert jobs["reader"]["read"]["ios"] == 128 and jobs["reader"]["group"] == 1
    assert jobs["random"]["read"]["ios"] == 2 * 256 and jobs["random"]["instances"] == 2
    opts = {j["name"]: j["options"] for j in res.doc["config"]["jobs"]}
    assert (
        opts["random"]["bs"] == 4096
        and opts["reader"]["bs"] == 8192
        and opts["writer"]["directory"] == str(tmpfs_dir)
    )


def test_command_line_globals_apply_to_job_files_and_own_jobs(engine: Path, tmpfs_dir: Path) -> None:
    jf = tmpfs_dir / "one.fio"
    jf.write_text("[a]\nrw=write\n")
    res = run_fio(
        engine, [f"--directory={tmpfs_dir}", "--size=64k", str(jf), "--name=b", "--rw=read", "--bs=16k"]
    )
    assert res.doc is not None and res.doc["status"] == "ok", res.stderr
    a, b = res.doc["fio"]["jobs"]
    assert a["write"]["ios"] == 16 and b["read"]["ios"] == 4


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[a]\nrw=read\nsize=1m\nfrobnicate=3\n", "jobs.fio:4: 'frobnicate' is not a fio option"),
        ("[a]\nrw=read\nsize=1m\ndirectory=${NO_SUCH_VARIABLE_X}\n", "NO_SUCH_VARIABLE_X is not set"),
        ("rw=read\n", "jobs.fio:1: option outside a section"),
        ("[a]\nrw=read\ninclude missing.fio\n", "missing.fio"),
        ("[a\nrw=read\n", "jobs.fio:1: a section header"),
        ("", "defines no job"),
    ],
)
def test_bad_job_files_are_refused_with_the_line(
    engine: Path, tmpfs_dir: Path, text: str, message: str
) -> None:
    jf = tmpfs_dir / "jobs.fio"
    jf.write_text(text)
    env = {k: v for k, v in os.environ.items() if k != "NO_SUCH_VARIABLE_X"}
    res = run_fio(engine, [str(jf)], env=env)
    assert res.returncode == 2
    assert message in res.stderr
    assert sorted(p.name for p in tmpfs_dir.iterdir()) == ["jobs.fio"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rw=read", "--bs=1000", "--direct=1"], "bs: 1000 is not a multiple of 512"),
        (
            ["--rw=read", "--ioengine=frob"],
            "ioengine: 'frob' is not one of psync, pvsync2, io_uring, libaio, null",
        ),
        (["--rw=read", "--ioengine=IO_URING"], "ioengine: 'IO_URING' is not one of"),
        (["--rw=read", "--ioengine=Psync"], "ioengine: 'Psync' is not one of"),
        (["--rw=read", "--ioengine=dummy"], "ioengine: 'dummy' is not one of"),
        (["--rw=read", "--ioengine=posix"], "ioengine: 'posix' is not one of"),
        (["--rw=read", "--ioengine=sync"], "ioengine: fio's 'sync' engine is not supported"),
        (["--rw=read", "--iodepth=0"], "iodepth"),
        (["--rw=read", "--directory=/nonexistent/dir"], "directory: /nonexistent/dir"),
        (["--rw=trim"], "rw: 'trim'"),
        (["--rw=read", "--verify=md5"], "verify: 'md5'"),
        (["--rw=read", "--runtime=5x"], "runtime"),
        (["--rw=read", "--bogus=1"], "'bogus' is not a fio option"),
        (["--rw=read", "--cache=warm"], "cache: 'warm'"),
        (["--rw=read", "--size=0"], "size"),
        (["--rw=read", "--random_distribution=zipf:1.2"], "random_distribution"),
    ],
)
def test_bad_options_exit_2_and_do_no_io(
    engine: Path, tmpfs_dir: Path, args: list[str], message: str
) -> None:
    full = ["--name=t", f"--directory={tmpfs_dir}", "--size=1m", *args]
    if "--directory=/nonexistent/dir" in args:
        full.remove(f"--directory={tmpfs_dir}")
    res = run_fio(engine, full)
    assert res.returncode == 2, res.stderr
    assert message in res.stderr
    assert list(tmpfs_dir.iterdir()) == []


@pytest.mark.parametrize("alias", ["aio", "linuxaio"])
def test_fios_own_libaio_aliases_run_libaio(engine: Path, tmpfs_dir: Path, alias: str) -> None:
    j = job(run_fio(engine, base(tmpfs_dir, "--rw=randread", f"--ioengine={alias}", "--iodepth=8")))
    assert j["read"]["ios"] == 1024 and j["read"]["slat_ns"]["count"] == 1024, "an asynchronous engine"
    assert j["backend"]["submit_calls"] > 0 and j["backend"]["fixed_bufs"] == 0


def test_a_file_iolens_did_not_create_is_not_written(engine: Path, tmpfs_dir: Path) -> None:
    f = tmpfs_dir / "precious.dat"
    f.write_bytes(b"x" * MIB)
    args = ["--name=t", f"--filename={f}", "--rw=write", "--bs=4k", "--size=1m"]
    res = run_fio(engine, args)
    assert res.returncode == 2 and "allow_overwrite" in res.stderr
    assert f.read_bytes() == b"x" * MIB
    j = job(run_fio(engine, [*args[:2], "--rw=read", "--bs=4k"]))  # reading it is fine, size from the file
    assert j["read"]["bytes"] == MIB
    assert f.read_bytes() == b"x" * MIB
    job(run_fio(engine, [*args, "--allow_overwrite=1"]))
    assert f.read_bytes() != b"x" * MIB


def test_mpirun_gives_the_same_totals_as_local_ranks(
    engine: Path, mpi_env: dict[str, str], tmpfs_dir: Path
) -> None:
    args = base(tmpfs_dir, "--rw=randwrite", "--numjobs=2")
    local = job(run_fio(engine, args, np=2))
    mpi = job(run_fio(engine, args, launcher=["mpirun", "-np", "2", "--oversubscribe"], env=mpi_env))
    for j in (local, mpi):
        assert j["instances"] == 4 and j["write"]["ios"] == 4 * 1024 and len(j["per_instance"]) == 4
    assert sorted(i["rank"] for i in mpi["per_instance"]) == [0, 0, 1, 1]


# --- the `iolens fio` command with the real engine ---------------------------------------------------------


def test_iolens_fio_prints_fios_json_shape_from_a_real_run(iolens_bin: list[str], tmpfs_dir: Path) -> None:
    csv = tmpfs_dir / "secs.csv"
    args = [
        "--name=rr",
        f"--directory={tmpfs_dir}",
        "--rw=randread",
        "--bs=4k",
        "--size=8m",
        "--numjobs=2",
        "--time_based",
        "--runtime=2",
        "--output-format=json",
        f"--per-second-log={csv}",
        "--no-live",
    ]
    proc = subprocess.run([*iolens_bin, "fio", *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    jobs = doc["jobs"]
    assert [j["jobname"] for j in jobs] == ["rr", "rr"], "one entry per instance without group_reporting"
    for j in jobs:
        assert j["read"]["iops"] > 0 and j["read"]["total_ios"] > 2048
        assert (
            j["read"]["clat_ns"]["percentile"]["99.000000"] >= j["read"]["clat_ns"]["percentile"]["50.000000"]
        )
        assert abs(j["read"]["runtime"] - 2000) < 40
    rows = csv.read_text().splitlines()
    assert len(rows) >= 2 and "rr" in rows[1]


def test_iolens_fio_job_file_report(iolens_bin: list[str], tmpfs_dir: Path) -> None:
    jf = tmpfs_dir / "j.fio"
    jf.write_text(f"[global]\ndirectory={tmpfs_dir}\nsize=2m\n[w]\nrw=write\n[r]\nstonewall\nrw=read\n")
    proc = subprocess.run(
        [*iolens_bin, "fio", str(jf), "--no-live"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "w: (groupid=0" in proc.stdout and "r: (groupid=1" in proc.stdout
    assert "Run status group 1 (all jobs):" in proc.stdout


# fio's keys that scripts read, per entry of "jobs" (read/write hold the same set): iolens's fio-shaped JSON
# must have every one of them wherever real fio has it.
COMMON_ENTRY_KEYS = ("usr_cpu", "sys_cpu", "ctx", "latency_ns", "latency_us", "latency_ms", "sync")
COMMON_DIRECTION_KEYS = (
    "io_bytes", "bw_bytes", "iops", "runtime", "total_ios", "slat_ns", "clat_ns", "lat_ns",
    "bw_min", "bw_max", "bw_agg", "bw_mean", "bw_dev", "bw_samples",
    "iops_min", "iops_max", "iops_mean", "iops_stddev", "iops_samples",
)  # fmt: skip


def key_paths(obj: object, prefix: str = "") -> set[str]:
    """Every key path of a JSON value ("read.clat_ns.percentile.99.000000")."""
    if not isinstance(obj, dict):
        return {prefix}
    out = {prefix} if prefix else set()
    for k, v in obj.items():
        out |= key_paths(v, f"{prefix}.{k}" if prefix else k)
    return out


def common_paths(entry: dict[str, object]) -> set[str]:
    paths: set[str] = set()
    for k in COMMON_ENTRY_KEYS:
        paths |= key_paths(entry[k], k)
    for d in ("read", "write"):
        side = entry[d]
        assert isinstance(side, dict)
        for k in COMMON_DIRECTION_KEYS:
            paths |= key_paths(side[k], f"{d}.{k}")
    return paths


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
@pytest.mark.parametrize("ioengine", ["null", "psync"])
def test_fio_json_has_every_key_real_fio_has(iolens_bin: list[str], tmpfs_dir: Path, ioengine: str) -> None:
    # The same job for fio and for iolens: two instances without group_reporting, so two entries each.
    def run(cmd: list[str], d: Path) -> dict[str, object]:
        d.mkdir()
        args = ["--name=k", f"--directory={d}", "--rw=randread", "--bs=4k", "--size=2m", "--numjobs=2"]
        args += [f"--ioengine={ioengine}", "--output-format=json"]
        proc = subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        out: dict[str, object] = json.loads(proc.stdout[proc.stdout.index("{") :])
        return out

    theirs = run(["fio"], tmpfs_dir / "fio")
    ours = run([*iolens_bin, "fio", "--no-live"], tmpfs_dir / "iolens")
    fio_jobs, our_jobs = theirs["jobs"], ours["jobs"]
    assert isinstance(fio_jobs, list) and isinstance(our_jobs, list)
    assert len(our_jobs) == len(fio_jobs) == 2
    for f, o in zip(fio_jobs, our_jobs, strict=True):
        missing = common_paths(f) - common_paths(o)
        assert not missing, sorted(missing)
        assert o["read"]["total_ios"] == f["read"]["total_ios"] == 512
        assert o["read"]["io_bytes"] == f["read"]["io_bytes"] == 2 * 1024 * 1024
        pct = o["read"]["clat_ns"]["percentile"]
        assert len(pct) == 17 and pct["99.990000"] >= pct["1.000000"] > 0, "real latencies, not zeros"
        assert o["read"]["clat_ns"]["N"] == 512 and o["read"]["slat_ns"]["N"] == 0
        assert o["ctx"] >= 0 and 0 <= o["usr_cpu"] + o["sys_cpu"] <= 101
