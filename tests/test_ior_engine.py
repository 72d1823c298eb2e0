"""End-to-end runs of the ior workload: real files on tmpfs and on disk, real processes, real verification."""

from __future__ import annotations

import json
import mmap
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from .ior_helpers import (
    CANARY_TEXT,
    assert_only_canary_left,
    long_write,
    place_canary,
    resident_bytes,
    run_engine,
)

KIB = 1024
MIB = 1024 * 1024


@pytest.fixture(params=["tmpfs", "disk"])
def any_dir(request: pytest.FixtureRequest, tmpfs_dir: Path, disk_dir: Path) -> Path:
    return tmpfs_dir if request.param == "tmpfs" else disk_dir


@pytest.mark.parametrize("layout", ["fpp", "n-to-1"])
@pytest.mark.parametrize("direct", [False, True], ids=["buffered", "odirect"])
def test_write_then_read_verifies_every_byte(engine: Path, any_dir: Path, layout: str, direct: bool) -> None:
    canary = place_canary(any_dir)
    np_, xfer, block, segs = 2, 64 * KIB, 1 * MIB, 3
    args = [
        "-t",
        "64k",
        "-b",
        "1m",
        "-s",
        str(segs),
        "-w",
        "-r",
        "-W",
        "-R",
        "-e",
        "-o",
        str(any_dir / "data"),
    ]
    if layout == "fpp":
        args.append("-F")
    if direct:
        args.append("--posix.odirect")
    res = run_engine(engine, args, np=np_)
    if direct and res.returncode != 0 and "Invalid argument" in res.stderr:
        pytest.skip(f"this file system refuses O_DIRECT: {res.stderr.strip()}")
    assert res.returncode == 0, res.stderr
    doc = res.doc
    assert doc["status"] == "ok" and doc["error"] is None
    expect = np_ * segs * block
    write, read = doc["phases"]
    assert (write["name"], read["name"]) == ("write", "read")
    for ph in (write, read):
        assert ph["bytes"] == expect
        assert ph["ops"] == expect // xfer
        assert ph["latency_ns"]["count"] == expect // xfer
        assert ph["verify"] == {
            "bytes_checked": expect,
            "errors": 0,
            "first_bad_offset": None,
            "first_bad_rank": None,
        }
        assert ph["cache"]["o_direct"] is direct
        lat = ph["latency_ns"]
        assert 0 < lat["min"] <= lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["p99_9"] <= lat["max"]
        assert sum(b[2] for b in lat["buckets"]) == lat["count"]
        assert ph["bw_bytes_per_s"] == pytest.approx(ph["bytes"] / ph["times"]["total_s"], rel=1e-9)
        assert [r["bytes"] for r in ph["per_rank"]] == [expect // np_] * np_
    assert doc["target"]["files"] == (np_ if layout == "fpp" else 1)
    assert_only_canary_left(any_dir, canary)


def test_random_offsets_touch_every_transfer_once(engine: Path, tmpfs_dir: Path) -> None:
    canary = place_canary(tmpfs_dir)
    path = str(tmpfs_dir / "rnd")
    # Written in random order, then read back sequentially by a separate run: a transfer never written would
    # read as zeros (a hole) and a transfer written twice at the wrong place would carry the wrong stamp.
    w = run_engine(engine, ["-z", "-t", "4k", "-b", "256k", "-s", "4", "-w", "-k", "-o", path], np=2)
    assert w.returncode == 0, w.stderr
    assert Path(path).stat().st_size == 2 * 4 * 256 * KIB
    r = run_engine(engine, ["-t", "4k", "-b", "256k", "-s", "4", "-r", "-R", "-o", path], np=2)
    assert r.returncode == 0, r.stderr
    assert r.doc["phases"][0]["verify"]["errors"] == 0
    assert r.doc["phases"][0]["verify"]["bytes_checked"] == 2 * 4 * 256 * KIB
    assert_only_canary_left(tmpfs_dir, canary)


def test_corrupted_byte_is_found_by_read_check(engine: Path, disk_dir: Path) -> None:
    canary = place_canary(disk_dir)
    path = disk_dir / "victim"
    w = run_engine(engine, ["-F", "-t", "8k", "-b", "64k", "-w", "-k", "-o", str(path)], np=2)
    assert w.returncode == 0, w.stderr
    victim = Path(f"{path}.00000001")
    bad_offset = 12345
    with open(victim, "r+b") as f:
        f.seek(bad_offset)
        byte = f.read(1)
        f.seek(bad_offset)
        f.write(bytes([byte[0] ^ 0x40]))
    r = run_engine(engine, ["-F", "-t", "8k", "-b", "64k", "-r", "-R", "-k", "-o", str(path)], np=2)
    assert r.returncode == 1
    doc = r.doc
    assert doc["status"] == "failed"
    assert "differ" in doc["error"]["message"]
    v = doc["phases"][0]["verify"]
    assert v["errors"] == 1
    assert v["first_bad_offset"] == bad_offset
    assert v["first_bad_rank"] == 1
    # Clean up with a normal read run (no -k): it removes the files it owns.
    cleanup = run_engine(engine, ["-F", "-t", "8k", "-b", "64k", "-r", "-o", str(path)], np=2)
    assert cleanup.returncode == 0, cleanup.stderr
    assert_only_canary_left(disk_dir, canary)


def test_stonewall_wear_out_ends_with_equal_counts(engine: Path, tmpfs_dir: Path) -> None:
    canary = place_canary(tmpfs_dir)
    status = tmpfs_dir / "sw.status"
    path = str(tmpfs_dir / "sw")
    w = run_engine(
        engine,
        [
            "-F",
            "-t",
            "4k",
            "-b",
            "4g",
            "-w",
            "-k",
            "-D",
            "1",
            "-O",
            "stoneWallingWearOut=1",
            "-O",
            f"stoneWallingStatusFile={status}",
            "-o",
            path,
        ],
        np=3,
    )
    assert w.returncode == 0, w.stderr
    ph = w.doc["phases"][0]
    sw = ph["stonewall"]
    assert sw["hit"] is True and sw["wear_out"] is True
    assert 0 < sw["pairs_min"] <= sw["pairs_max"] < 4 * 1024 * 1024 * 1024 // 4096
    ops = [r["ops"] for r in ph["per_rank"]]
    assert ops == [sw["pairs_max"]] * 3
    assert ph["bytes"] == 3 * sw["pairs_max"] * 4096
    assert int(status.read_text()) == sw["pairs_max"]

    # The status file makes a later read run read exactly what was written, and the data verifies.
    r = run_engine(
        engine,
        ["-F", "-t", "4k", "-b", "4g", "-r", "-R", "-O", f"stoneWallingStatusFile={status}", "-o", path],
        np=3,
    )
    assert r.returncode == 0, r.stderr
    rp = r.doc["phases"][0]
    assert [x["ops"] for x in rp["per_rank"]] == [sw["pairs_max"]] * 3
    assert rp["verify"]["errors"] == 0 and rp["verify"]["bytes_checked"] == ph["bytes"]
    status.unlink()
    assert_only_canary_left(tmpfs_dir, canary)


def test_without_wear_out_ranks_keep_their_own_counts(engine: Path, tmpfs_dir: Path) -> None:
    canary = place_canary(tmpfs_dir)
    w = run_engine(engine, ["-F", "-t", "4k", "-b", "4g", "-w", "-D", "1", "-o", str(tmpfs_dir / "nw")], np=2)
    assert w.returncode == 0, w.stderr
    ph = w.doc["phases"][0]
    sw = ph["stonewall"]
    assert sw["hit"] is True and sw["wear_out"] is False
    assert sorted(r["ops"] for r in ph["per_rank"]) == [sw["pairs_min"], sw["pairs_max"]]
    assert_only_canary_left(tmpfs_dir, canary)


def test_reorder_tasks_reads_the_neighbours_data(engine: Path, tmpfs_dir: Path) -> None:
    canary = place_canary(tmpfs_dir)
    # --tasks-per-node 1 makes the two local ranks count as two nodes, so -C shifts reads by one rank.
    args = [
        "-F",
        "-C",
        "--tasks-per-node",
        "1",
        "-t",
        "16k",
        "-b",
        "128k",
        "-w",
        "-r",
        "-R",
        "-o",
        str(tmpfs_dir / "ro"),
    ]
    res = run_engine(engine, args, np=2)
    assert res.returncode == 0, res.stderr
    assert res.doc["target"]["read_rank_shift"] == 1
    assert res.doc["phases"][1]["verify"]["errors"] == 0
    assert_only_canary_left(tmpfs_dir, canary)


def test_reorder_detects_data_of_the_wrong_rank(engine: Path, tmpfs_dir: Path) -> None:
    canary = place_canary(tmpfs_dir)
    path = str(tmpfs_dir / "swap")
    assert run_engine(engine, ["-F", "-t", "16k", "-b", "64k", "-w", "-k", "-o", path], np=2).returncode == 0
    # Swap the two ranks' files: each rank's read check must now find foreign data.
    a, b = Path(f"{path}.00000000"), Path(f"{path}.00000001")
    tmp = tmpfs_dir / "tmp-swap"
    a.rename(tmp)
    b.rename(a)
    tmp.rename(b)
    r = run_engine(engine, ["-F", "-t", "16k", "-b", "64k", "-r", "-R", "-o", path], np=2)
    assert r.returncode == 1
    assert r.doc["phases"][0]["verify"]["errors"] > 0
    # A failed check keeps the files; they are still iolens's (same names), so a plain read removes them.
    assert sorted(p.name for p in tmpfs_dir.glob("swap.*")) == [a.name, b.name]
    cleanup = run_engine(engine, ["-F", "-t", "16k", "-b", "64k", "-r", "-o", path], np=2)
    assert cleanup.returncode == 0, cleanup.stderr
    assert_only_canary_left(tmpfs_dir, canary)


def test_null_backend_creates_nothing(engine: Path, tmpfs_dir: Path) -> None:
    res = run_engine(
        engine, ["-a", "null", "-t", "4k", "-b", "1g", "-F", "-o", str(tmpfs_dir / "nothing")], np=2
    )
    assert res.returncode == 0, res.stderr
    assert res.doc["phases"][0]["bytes"] == 2 * 1024 * MIB
    assert list(tmpfs_dir.iterdir()) == []


def test_existing_foreign_file_is_never_overwritten(engine: Path, tmpfs_dir: Path) -> None:
    canary = place_canary(tmpfs_dir)
    precious = tmpfs_dir / "precious"
    precious.write_text("user data\n")
    res = run_engine(engine, ["-t", "4k", "-b", "64k", "-w", "-o", str(precious)], np=1)
    assert res.returncode == 2
    assert "-o" in res.stderr and "not created by iolens" in res.stderr
    assert precious.read_text() == "user data\n"
    # Reading it is allowed, but the run must not delete it afterwards.
    big = tmpfs_dir / "dataset"
    big.write_bytes(b"x" * 65536)
    rd = run_engine(engine, ["-t", "4k", "-b", "64k", "-r", "-o", str(big)], np=1)
    assert rd.returncode == 0, rd.stderr
    assert big.read_bytes() == b"x" * 65536
    assert canary.read_text() == CANARY_TEXT
    assert sorted(p.name for p in tmpfs_dir.iterdir()) == sorted([canary.name, "dataset", "precious"])


def test_use_existing_writes_into_a_foreign_file(engine: Path, tmpfs_dir: Path) -> None:
    canary = place_canary(tmpfs_dir)
    target = tmpfs_dir / "given"
    target.write_bytes(b"\0" * 65536)
    res = run_engine(engine, ["-E", "-k", "-t", "4k", "-b", "64k", "-w", "-W", "-o", str(target)], np=1)
    assert res.returncode == 0, res.stderr
    assert target.stat().st_size == 65536
    assert res.doc["phases"][0]["verify"]["errors"] == 0
    assert canary.read_text() == CANARY_TEXT
    assert sorted(p.name for p in tmpfs_dir.iterdir()) == sorted([canary.name, "given"])


def test_iterations_summary_and_multi_file(engine: Path, tmpfs_dir: Path) -> None:
    canary = place_canary(tmpfs_dir)
    res = run_engine(
        engine,
        ["-F", "-m", "-i", "3", "-t", "16k", "-b", "256k", "-w", "-r", "-o", str(tmpfs_dir / "it")],
        np=2,
    )
    assert res.returncode == 0, res.stderr
    names = [(p["name"], p["iteration"]) for p in res.doc["phases"]]
    assert names == [("write", 0), ("read", 0), ("write", 1), ("read", 1), ("write", 2), ("read", 2)]
    summary = {s["name"]: s for s in res.doc["summary"]}
    assert summary["write"]["iterations"] == 3
    bws = [p["bw_bytes_per_s"] for p in res.doc["phases"] if p["name"] == "write"]
    assert summary["write"]["bw_max_bytes_per_s"] == pytest.approx(max(bws))
    assert summary["write"]["bw_min_bytes_per_s"] == pytest.approx(min(bws))
    assert summary["write"]["bw_mean_bytes_per_s"] == pytest.approx(sum(bws) / 3)
    assert summary["write"]["latency_ns"]["count"] == 3 * 2 * 16
    assert_only_canary_left(tmpfs_dir, canary)


def test_unique_dirs_are_created_and_removed(engine: Path, tmpfs_dir: Path) -> None:
    canary = place_canary(tmpfs_dir)
    res = run_engine(
        engine, ["-F", "-u", "-t", "16k", "-b", "64k", "-w", "-r", "-R", "-o", str(tmpfs_dir / "ud")], np=2
    )
    assert res.returncode == 0, res.stderr
    assert res.doc["target"]["first_file"] == str(tmpfs_dir / "0" / "ud.00000000")
    assert_only_canary_left(tmpfs_dir, canary)


def test_text_report_looks_like_ior(engine: Path, tmpfs_dir: Path) -> None:
    canary = place_canary(tmpfs_dir)
    res = run_engine(
        engine, ["-F", "-t", "64k", "-b", "1m", "-w", "-r", "-o", str(tmpfs_dir / "txt")], np=2, quiet=False
    )
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "access    bw(MiB/s)  IOPS" in out
    assert any(line.startswith("write ") for line in out.splitlines())
    assert any(line.startswith("read ") for line in out.splitlines())
    assert "Summary of all tests:" in out
    assert "latency p50" in out
    assert "tmpfs" in out  # the read note says a tmpfs read measures memory
    assert_only_canary_left(tmpfs_dir, canary)


def test_killed_rank_still_leaves_a_document_that_parses(engine: Path, tmpfs_dir: Path) -> None:
    canary = place_canary(tmpfs_dir)
    out = tmpfs_dir / "result.json"
    with long_write(engine, out, tmpfs_dir / "kill", deadline_s=30) as proc:
        children: list[int] = []
        deadline = time.time() + 20
        while len(children) < 2 and time.time() < deadline:
            time.sleep(0.2)
            try:
                kids = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
                children = [int(k) for k in kids]
            except OSError:
                pass
        assert len(children) == 2
        time.sleep(0.5)
        os.kill(children[1], signal.SIGKILL)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert "killed by signal 9" in err
    doc = json.loads(out.read_text())
    assert doc["status"] == "failed"
    assert doc["error"]["rank"] == 1
    assert "signal 9" in doc["error"]["message"]
    # A killed rank cannot clean up: what is left is the run's own files and ledger, which --remove-only
    # takes away, and the canary.
    out.unlink()
    left = sorted(p.name for p in tmpfs_dir.iterdir())
    assert left == sorted([canary.name, ".iolens-owned", "kill.00000000", "kill.00000001"])
    rm = run_engine(engine, ["-F", "--remove-only", "-o", str(tmpfs_dir / "kill")], np=2)
    assert rm.returncode == 0, rm.stderr
    assert_only_canary_left(tmpfs_dir, canary)


def test_read_after_stonewalled_write_reads_what_was_written(engine: Path, tmpfs_dir: Path) -> None:
    canary = place_canary(tmpfs_dir)
    args = ["-F", "-t", "4k", "-b", "4g", "-w", "-r", "-R", "-D", "1", "-O", "stoneWallingWearOut=1"]
    res = run_engine(engine, [*args, "-o", str(tmpfs_dir / "swr")], np=2)
    assert res.returncode == 0, res.stderr
    write, read = res.doc["phases"]
    assert write["stonewall"]["hit"]
    assert read["ops"] == write["ops"] and read["bytes"] == write["bytes"]
    assert read["verify"]["errors"] == 0 and read["verify"]["bytes_checked"] == write["bytes"]
    assert_only_canary_left(tmpfs_dir, canary)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_interrupted_run_stops_reports_and_removes_its_files(engine: Path, tmpfs_dir: Path, sig: int) -> None:
    canary = place_canary(tmpfs_dir)
    out = tmpfs_dir.parent / f"{tmpfs_dir.name}-doc.json"
    try:
        with long_write(engine, out, tmpfs_dir / "intr", deadline_s=60) as proc:
            deadline = time.time() + 20
            while time.time() < deadline and not list(tmpfs_dir.glob("intr.*")):
                time.sleep(0.1)
            time.sleep(0.5)
            proc.send_signal(sig)
            _, err = proc.communicate(timeout=60)
            doc = json.loads(out.read_text())
    finally:
        out.unlink(missing_ok=True)
    assert proc.returncode == 1, err
    assert doc["status"] == "failed"
    assert f"interrupted by signal {int(sig)}" in doc["error"]["message"]
    assert_only_canary_left(tmpfs_dir, canary)


def test_random_4k_reads_across_the_whole_file_as_io500_does(engine: Path, tmpfs_dir: Path) -> None:
    canary = place_canary(tmpfs_dir)
    path = str(tmpfs_dir / "easy")
    # -l iolens: IOR's packets are laid out per transfer, so only iolens's own pattern checks 4 KiB reads of
    # data written in 64 KiB transfers.
    w = run_engine(engine, ["-F", "-l", "iolens", "-t", "64k", "-b", "1m", "-w", "-k", "-o", path], np=2)
    assert w.returncode == 0, w.stderr
    # IO500's ior-rnd4K-easy-read: -t=4096 -b=4096 -s=-1 (as many segments as the file holds) -z -z -z.
    r = run_engine(
        engine,
        ["-F", "-l", "iolens", "-t=4096", "-b=4096", "-s=-1", "-z", "-z", "-z", "-r", "-R", "-o", path],
        np=2,
    )
    assert r.returncode == 0, r.stderr
    ph = r.doc["phases"][0]
    assert [x["ops"] for x in ph["per_rank"]] == [256, 256]
    assert ph["verify"]["errors"] == 0 and ph["verify"]["bytes_checked"] == 2 * 1024 * 1024
    assert r.doc["config"]["random-offset"] == 3 and r.doc["config"]["segment-count"] == -1
    assert_only_canary_left(tmpfs_dir, canary)


def test_segments_from_the_file_are_refused_for_writes(engine: Path, tmpfs_dir: Path) -> None:
    res = run_engine(engine, ["-s", "-1", "-w", "-o", str(tmpfs_dir / "x")], np=1)
    assert res.returncode == 2 and "-s" in res.stderr
    assert list(tmpfs_dir.iterdir()) == []


def test_remove_only_removes_what_a_kept_run_left_and_nothing_else(engine: Path, tmpfs_dir: Path) -> None:
    canary = place_canary(tmpfs_dir)
    path = str(tmpfs_dir / "kept")
    assert run_engine(engine, ["-F", "-t", "16k", "-b", "64k", "-w", "-k", "-o", path], np=2).returncode == 0
    foreign = tmpfs_dir / "other.00000000"
    foreign.write_text("not iolens's\n")
    res = run_engine(engine, ["-F", "--remove-only", "-o", path], np=2)
    assert res.returncode == 0, res.stderr
    assert res.doc["phases"] == []
    assert foreign.read_text() == "not iolens's\n"
    foreign.unlink()
    assert_only_canary_left(tmpfs_dir, canary)
    # Files iolens did not create are left alone even when they carry the test file's name.
    mine = Path(f"{path}.00000000")
    mine.write_text("user data\n")
    res = run_engine(engine, ["-F", "--remove-only", "-o", path], np=1)
    assert res.returncode == 0, res.stderr
    assert mine.read_text() == "user data\n"


def test_stonewalled_write_may_ask_for_more_than_the_free_space(engine: Path, tmpfs_dir: Path) -> None:
    # IO500 sizes its blocks far beyond the file system and relies on the deadline (-D) to stop.
    res = run_engine(
        engine,
        [
            "-F",
            "-t",
            "1m",
            "-b",
            "100t",
            "-w",
            "-D",
            "1",
            "-O",
            "stoneWallingWearOut=1",
            "-o",
            str(tmpfs_dir / "big"),
        ],
        np=1,
    )
    assert res.returncode == 0, res.stderr
    assert res.doc["phases"][0]["stonewall"]["hit"] is True
    assert list(tmpfs_dir.iterdir()) == []


# --- cache policy, seeds, fsync, delays, barriers, -Q, wear-out iterations, --direct ----------------------


@pytest.mark.parametrize("keep", [False, True], ids=["evict", "keep-cache"])
def test_buffered_read_on_disk_evicts_the_written_pages_unless_asked_to_keep_them(
    engine: Path, disk_dir: Path, keep: bool
) -> None:
    canary = place_canary(disk_dir)
    args = ["-F", "-t", "64k", "-b", "1m", "-w", "-r", "-R", "-o", str(disk_dir / "cache")]
    res = run_engine(engine, [*args, "--keep-cache"] if keep else args, np=2)
    assert res.returncode == 0, res.stderr
    assert res.doc["target"]["file_system"] not in ("tmpfs", "ramfs")
    write, read = res.doc["phases"]
    assert write["cache"] == {"o_direct": False}
    assert read["cache"]["o_direct"] is False
    if keep:
        assert (read["cache"]["policy"], read["cache"]["evicted"]) == ("keep", False)
        assert "--keep-cache" in read["cache"]["note"]
    else:
        # A disk file system drops the pages (posix_fadvise DONTNEED after fsync): the read measures storage.
        assert (read["cache"]["policy"], read["cache"]["evicted"]) == ("evict", True)
        assert read["cache"]["note"] is None
    assert read["verify"]["errors"] == 0 and read["verify"]["bytes_checked"] == 2 * MIB
    assert_only_canary_left(disk_dir, canary)


@pytest.mark.parametrize("case", ["evict", "keep-cache", "mapped-elsewhere"])
def test_eviction_really_empties_the_page_cache_of_the_file_unless_kept(
    engine: Path, disk_dir: Path, case: str
) -> None:
    # The kernel is asked (mincore) what is left of the written file in memory after a read run that reads
    # only its first transfer: after the eviction that is the transfer and the read-ahead around it; with
    # --keep-cache the whole file the write left there. Pages another process has mapped cannot be dropped:
    # the document must then not claim an eviction.
    path = disk_dir / "rc"
    base = ["-F", "-t", "4k", "-b", "8m", "-o", str(path)]
    assert run_engine(engine, [*base, "-w", "-k"]).returncode == 0
    data = Path(f"{path}.00000000")
    size = data.stat().st_size
    read = [
        "-r",
        "-k",
        "-O",
        "stoneWallingWearOutIterations=1",
        *(["--keep-cache"] if case == "keep-cache" else []),
    ]
    with open(data, "rb") as f, mmap.mmap(f.fileno(), MIB, prot=mmap.PROT_READ) as held:
        if case == "mapped-elsewhere":
            assert sum(held[i] for i in range(0, MIB, mmap.PAGESIZE)) >= 0  # fault every page in
        res = run_engine(engine, [*base, *read])
        left = resident_bytes(data)
    assert res.returncode == 0, res.stderr
    cache = res.doc["phases"][0]["cache"]
    if case == "keep-cache":
        assert (cache["policy"], cache["evicted"]) == ("keep", False)
        assert left == size
    elif case == "evict":
        assert (cache["policy"], cache["evicted"]) == ("evict", True)
        assert left < size // 4, f"{left} of {size} bytes still in the page cache"
    else:
        assert left >= MIB
        assert (cache["policy"], cache["evicted"]) == ("evict", False)
        assert "could not be dropped" in cache["note"]
    assert run_engine(engine, [*base, "--remove-only"]).returncode == 0
    assert list(disk_dir.iterdir()) == []


def test_seed_decides_the_data_and_a_read_with_another_seed_fails_the_check(
    engine: Path, tmpfs_dir: Path
) -> None:
    canary = place_canary(tmpfs_dir)
    base = ["-t", "16k", "-b", "256k", "-s", "2", "-k"]
    for name, seed in (("g1", "1"), ("g2", "2"), ("g1again", "1")):
        w = run_engine(engine, [*base, "-w", "-G", seed, "-o", str(tmpfs_dir / name)], np=2)
        assert w.returncode == 0, w.stderr
    g1, g2, again = ((tmpfs_dir / n).read_bytes() for n in ("g1", "g2", "g1again"))
    assert len(g1) == len(g2) == 2 * 2 * 256 * KIB
    assert g1 == again  # the same seed writes the same bytes
    # Another seed changes every 8-byte word of the pattern, not just a few.
    words = len(g1) // 8
    same = sum(g1[i : i + 8] == g2[i : i + 8] for i in range(0, len(g1), 8))
    assert same == 0, f"{same} of {words} words are the same under -G 1 and -G 2"

    bad = run_engine(engine, [*base, "-r", "-R", "-G", "2", "-o", str(tmpfs_dir / "g1")], np=2)
    assert bad.returncode == 1
    v = bad.doc["phases"][0]["verify"]
    assert v["errors"] > 0 and v["first_bad_offset"] == 0 and v["bytes_checked"] == len(g1)
    assert bad.doc["status"] == "failed" and "differ" in bad.doc["error"]["message"]
    # The right seed verifies; without -k these reads remove the files.
    for name, seed in (("g1", "1"), ("g2", "2"), ("g1again", "1")):
        good = run_engine(engine, ["-t", "16k", "-b", "256k", "-s", "2", "-r", "-R", "-G", seed,
                                   "-o", str(tmpfs_dir / name)], np=2)  # fmt: skip
        assert good.returncode == 0, good.stderr
        assert good.doc["phases"][0]["verify"]["errors"] == 0
    assert_only_canary_left(tmpfs_dir, canary)


def _fsync_calls(engine: Path, args: list[str], trace: Path) -> tuple[int, dict]:
    """Runs the engine under strace (following the forked ranks) and counts fsync/fdatasync calls."""
    with_strace = ["strace", "-f", "-qq", "-e", "trace=fsync,fdatasync", "-o", str(trace)]
    res = run_engine(engine, args, launcher=with_strace)
    assert res.returncode == 0, res.stderr
    calls = re.findall(r"^\d+\s+f(?:data)?sync\(", trace.read_text(), re.M)
    return len(calls), res.doc


def test_fsync_per_write_calls_fsync_after_every_transfer(
    engine: Path, tmpfs_dir: Path, tmp_path: Path
) -> None:
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed")
    canary = place_canary(tmpfs_dir)
    args = ["-F", "-t", "4k", "-b", "64k", "-s", "2", "-w", "-o", str(tmpfs_dir / "y")]
    transfers = 2 * 2 * 16
    plain, doc = _fsync_calls(engine, [*args, "--np", "2"], tmp_path / "plain.trace")
    assert doc["phases"][0]["fsync"] == {"on_close": False, "per_write": False}
    per_write, doc = _fsync_calls(engine, [*args, "-Y", "--np", "2"], tmp_path / "y.trace")
    assert doc["phases"][0]["fsync"] == {"on_close": False, "per_write": True}
    assert doc["phases"][0]["ops"] == transfers
    assert per_write - plain == transfers  # one fsync per write, on every rank
    on_close, doc = _fsync_calls(engine, [*args, "-e", "--np", "2"], tmp_path / "e.trace")
    assert doc["phases"][0]["fsync"] == {"on_close": True, "per_write": False}
    assert on_close - plain == 2  # one per file, at close
    assert_only_canary_left(tmpfs_dir, canary)


@pytest.mark.parametrize("per_write", [False, True], ids=["plain", "fsync-per-write"])
def test_fsync_per_write_is_in_the_transfer_time_but_not_in_the_write_latency(
    engine: Path, disk_dir: Path, per_write: bool
) -> None:
    # On disk an fsync of 64 KiB costs far more than the buffered write before it: with -Y the transfer
    # interval holds the fsyncs, the latencies (the write calls alone, as IOR times them) do not.
    args = ["-t", "64k", "-b", "4m", "-w", "-o", str(disk_dir / "y"), *(["-Y"] if per_write else [])]
    res = run_engine(engine, args, np=1)
    assert res.returncode == 0, res.stderr
    phase = res.doc["phases"][0]
    lat = phase["latency_ns"]
    assert lat["count"] == 64
    latency_sum_s = lat["count"] * lat["mean"] / 1e9
    xfer_s = phase["per_rank"][0]["xfer_s"]
    if per_write:
        assert latency_sum_s < 0.5 * xfer_s, (latency_sum_s, xfer_s)
    else:
        # Without -Y the writes follow each other: their latencies tile the transfer interval.
        assert 0.9 * xfer_s <= latency_sum_s <= xfer_s * 1.001, (latency_sum_s, xfer_s)


def test_fsync_at_the_end_of_a_write_is_in_the_transfer_time_before_the_close(
    engine: Path, disk_dir: Path, tmp_path: Path
) -> None:
    # IOR's -e: the fsync closes the transfer loop (WriteOrRead), each rank right after its own writes and
    # before -g's barrier, so its cost is in the transfer time (wr/rd(s), IOPS), not in the close. With -g
    # the close interval starts after that barrier on every rank: it holds the close calls alone.
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed")
    trace = tmp_path / "e.trace"
    args = ["-F", "-g", "-e", "-t", "256k", "-b", "8m", "-w", "-o", str(disk_dir / "e"), "--np", "2"]
    with_strace = ["strace", "-f", "-qq", "-y", "-T", "-e", "trace=fsync", "-o", str(trace)]
    res = run_engine(engine, args, launcher=with_strace)
    assert res.returncode == 0, res.stderr
    # One fsync per rank on its own file (-F), with the seconds it took: "PID fsync(3</dir/e.00000001>) = 0
    # <0.0123>", or split in two lines ("<unfinished ...>", "<... fsync resumed>") when the ranks overlap.
    rank_of: dict[str, int] = {}
    took: dict[int, float] = {}
    for line in trace.read_text().splitlines():
        call = re.match(r"(\d+)\s+fsync\(\d+<[^>]*/e\.(\d+)>", line)
        if call:
            rank_of[call.group(1)] = int(call.group(2))
        done = re.match(r"(\d+)\s+.*fsync.*=\s*0\s*<([\d.]+)>$", line)
        if done and done.group(1) in rank_of and rank_of[done.group(1)] not in took:
            took[rank_of[done.group(1)]] = float(done.group(2))
    assert sorted(took) == [0, 1], trace.read_text()
    phase = res.doc["phases"][0]
    assert phase["fsync"] == {"on_close": True, "per_write": False}
    for rank in phase["per_rank"]:
        assert rank["xfer_s"] >= took[rank["rank"]], (rank, took)
    # Each fsync writes 8 MiB to the disk and waits for it; a close of a clean file is far quicker.
    assert phase["times"]["close_s"] < 0.5 * min(took.values()), (phase["times"], took)


def test_delay_before_every_phase_makes_the_run_longer_but_no_phase(engine: Path, tmpfs_dir: Path) -> None:
    canary = place_canary(tmpfs_dir)
    args = ["-F", "-t", "16k", "-b", "64k", "-w", "-r", "-o", str(tmpfs_dir / "d")]
    t0 = time.monotonic()
    plain = run_engine(engine, args, np=2)
    t1 = time.monotonic()
    delayed = run_engine(engine, [*args, "-d", "1"], np=2)
    t2 = time.monotonic()
    assert plain.returncode == 0 and delayed.returncode == 0, delayed.stderr
    assert delayed.doc["config"]["inter-test-delay"] == 1
    # As IOR: a wait of 1 s before the write and another before the read, the first iteration too.
    assert t2 - t1 >= 2.0
    assert (t2 - t1) - (t1 - t0) > 1.5
    assert len(delayed.doc["phases"]) == 2
    assert all(p["times"]["total_s"] < 1.0 for p in delayed.doc["phases"])
    assert_only_canary_left(tmpfs_dir, canary)


def test_intra_test_barriers_keep_open_transfer_and_close_apart(engine: Path, tmpfs_dir: Path) -> None:
    canary = place_canary(tmpfs_dir)
    args = ["-F", "-g", "-i", "2", "-t", "16k", "-b", "256k", "-w", "-r", "-o", str(tmpfs_dir / "g")]
    res = run_engine(engine, args, np=4)
    assert res.returncode == 0, res.stderr
    assert res.doc["config"]["intra-test-barriers"] is True
    for p in res.doc["phases"]:
        t = p["times"]
        # With a barrier after the last open and after the last transfer, no rank transfers while another
        # still opens, nor closes while another still transfers: the three spans lie end to end.
        assert t["open_s"] + t["xfer_s"] + t["close_s"] <= t["total_s"] + 1e-9, p
        assert p["bytes"] == 4 * 256 * KIB
    assert_only_canary_left(tmpfs_dir, canary)


@pytest.mark.parametrize("offset", [1, 2])
def test_task_per_node_offset_chooses_whose_data_each_rank_reads(
    engine: Path, tmpfs_dir: Path, offset: int
) -> None:
    canary = place_canary(tmpfs_dir)
    path = tmpfs_dir / "q"
    base = ["-F", "-t", "4k", "-b", "64k", "-o", str(path)]
    assert run_engine(engine, [*base, "-w", "-k"], np=3).returncode == 0
    reorder = ["-C", "-Q", str(offset), "--tasks-per-node", "1"]
    good = run_engine(engine, [*base, *reorder, "-r", "-R", "-k"], np=3)
    assert good.returncode == 0, good.stderr
    assert good.doc["target"]["read_rank_shift"] == offset
    assert good.doc["phases"][0]["verify"]["errors"] == 0
    # Cut rank 1's file short: the rank that reads it, (r + Q) mod 3 == 1, is the one that fails.
    os.truncate(f"{path}.00000001", 8 * KIB)
    bad = run_engine(engine, [*base, *reorder, "-r", "-k"], np=3)
    assert bad.returncode == 1
    assert bad.doc["error"]["rank"] == (1 - offset) % 3
    assert f"{path}.00000001" in bad.doc["error"]["message"]
    assert run_engine(engine, [*base, "--remove-only"], np=3).returncode == 0
    assert_only_canary_left(tmpfs_dir, canary)


def test_wear_out_iterations_make_a_read_read_what_a_stonewalled_write_wrote(
    engine: Path, tmpfs_dir: Path
) -> None:
    canary = place_canary(tmpfs_dir)
    path = str(tmpfs_dir / "wi")
    w = run_engine(
        engine,
        ["-F", "-t", "4k", "-b", "4g", "-w", "-k", "-D", "1", "-O", "stoneWallingWearOut=1", "-o", path],
        np=2,
    )
    assert w.returncode == 0, w.stderr
    count = w.doc["phases"][0]["stonewall"]["pairs_max"]
    assert [r["ops"] for r in w.doc["phases"][0]["per_rank"]] == [count, count]
    # IOR's stoneWallingWearOutIterations: the number of transfers the stonewalled write did, given by hand.
    r = run_engine(
        engine,
        [
            "-F",
            "-t",
            "4k",
            "-b",
            "4g",
            "-r",
            "-R",
            "-O",
            f"stoneWallingWearOutIterations={count}",
            "-o",
            path,
        ],
        np=2,
    )
    assert r.returncode == 0, r.stderr
    rp = r.doc["phases"][0]
    assert [x["ops"] for x in rp["per_rank"]] == [count, count]
    assert rp["bytes"] == 2 * count * 4 * KIB == w.doc["phases"][0]["bytes"]
    assert rp["verify"]["errors"] == 0 and rp["verify"]["bytes_checked"] == rp["bytes"]
    assert r.doc["config"]["stone-walling-wear-out-iterations"] == count
    assert_only_canary_left(tmpfs_dir, canary)


def test_wear_out_iterations_read_only_that_many_transfers(engine: Path, tmpfs_dir: Path) -> None:
    canary = place_canary(tmpfs_dir)
    path = str(tmpfs_dir / "part")
    assert run_engine(engine, ["-t", "4k", "-b", "256k", "-w", "-k", "-o", path], np=2).returncode == 0
    r = run_engine(
        engine,
        ["-t", "4k", "-b", "256k", "-r", "-R", "--stone-walling-wear-out-iterations", "10", "-o", path],
        np=2,
    )
    assert r.returncode == 0, r.stderr
    ph = r.doc["phases"][0]
    assert [x["ops"] for x in ph["per_rank"]] == [10, 10] and ph["latency_ns"]["count"] == 20
    assert ph["bytes"] == ph["verify"]["bytes_checked"] == 2 * 10 * 4 * KIB
    assert_only_canary_left(tmpfs_dir, canary)


def test_direct_is_an_alias_of_posix_odirect(engine: Path, disk_dir: Path) -> None:
    canary = place_canary(disk_dir)
    helptext = subprocess.run([str(engine), "ior", "--help"], capture_output=True, text=True).stdout
    line = next(x for x in helptext.splitlines() if "--posix.odirect" in x)
    assert "--direct" in line
    res = run_engine(
        engine, ["--direct", "-t", "64k", "-b", "1m", "-w", "-r", "-R", "-o", str(disk_dir / "dio")]
    )
    if res.returncode != 0 and "Invalid argument" in res.stderr:
        pytest.skip(f"this file system refuses O_DIRECT: {res.stderr.strip()}")
    assert res.returncode == 0, res.stderr
    assert res.doc["config"]["posix.odirect"] is True
    assert [p["cache"]["o_direct"] for p in res.doc["phases"]] == [True, True]
    assert res.doc["phases"][1]["verify"]["errors"] == 0
    assert_only_canary_left(disk_dir, canary)
