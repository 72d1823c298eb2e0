"""fio's semantics that change what reaches the device, checked against what reaches the kernel: the same
small job run by Debian's fio and by iolens under strace must make the same file system calls on the data
file (layout, invalidate, fadvise hint, fsync), and the cache warning must follow the kernel's own count of
the bytes the job's reads fetched from the storage."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from .fio_helpers import iolog_ios, job, run_fio

KIB = 1024
MIB = 1024 * KIB

needs_strace = pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")

CALLS = "openat,unlink,fallocate,ftruncate,fadvise64,fsync,fdatasync,write,pwrite64,read,pread64"
_LINE = re.compile(r"^(?:\d+ +)?(\w+)\((.*)\) += (-?\d+)")


def file_calls(log: Path, path: Path) -> list[str]:
    """The calls made on `path` (strace -y names each descriptor's file), in order, as fio and iolens can be
    compared: opens by their access flags and O_TRUNC (both create; how they mark descriptors differs), data
    transfers by their length only (fio writes the layout with write(2), iolens with pwrite(2); the offsets of
    a random job come from different generators), the rest with every argument after the descriptor."""
    out = []
    name = str(path)
    for line in joined_lines(log):
        m = _LINE.match(line)
        if not m or f"<{name}>" not in line and f'"{name}"' not in line:
            continue
        call, args = m.group(1), m.group(2)
        if int(m.group(3)) < 0:  # fio tries to unlink a file that is not there yet
            continue
        parts = [a.strip() for a in re.sub(r'"(?:[^"\\]|\\.)*"(?:\.\.\.)?', '""', args).split(",")]
        if call == "openat":
            flags = set(parts[2].split("|"))
            out.append("open " + "|".join(sorted(flags & {"O_RDONLY", "O_WRONLY", "O_RDWR", "O_TRUNC"})))
        elif call in ("write", "pwrite64"):
            out.append(f"write {parts[2]}")
        elif call in ("read", "pread64"):
            out.append(f"read {parts[2]}")
        else:
            out.append(f"{call} " + ", ".join(parts[1:]))
    return out


_UNFINISHED = re.compile(r"^(\d+) +(.*) <unfinished \.\.\.>$")
_RESUMED = re.compile(r"^(\d+) +<\.\.\. \w+ resumed>(.*)$")


def joined_lines(log: Path) -> list[str]:
    """strace's lines, each call that another thread interrupted (`<unfinished ...>`, then `<... resumed>`)
    joined into one line where the call began: fio's threads would otherwise lose a call now and then."""
    lines: list[str] = []
    pending: dict[str, int] = {}
    for line in log.read_text().splitlines():
        if m := _UNFINISHED.match(line):
            pending[m.group(1)] = len(lines)
            lines.append(f"{m.group(1)} {m.group(2)}")
        elif (m := _RESUMED.match(line)) and m.group(1) in pending:
            lines[pending.pop(m.group(1))] += m.group(2)
        else:
            lines.append(line)
    return lines


def without_opens(calls: list[str]) -> list[str]:
    """iolens opens a file once more than fio (to put its cache in the job's state before the I/O open)."""
    return [c for c in calls if not c.startswith("open ")]


def fio_calls(tmp: Path, path: Path, *args: str) -> list[str]:
    log = tmp / "fio.strace"
    cmd = [
        "strace",
        "-f",
        "-y",
        "-o",
        str(log),
        "-e",
        f"trace={CALLS}",
        "fio",
        "--output=/dev/null",
        "--name=t",
    ]
    subprocess.run([*cmd, f"--filename={path}", *args], check=True, capture_output=True, timeout=120)
    return file_calls(log, path)


def iolens_calls(engine: Path, tmp: Path, path: Path, *args: str) -> list[str]:
    log = tmp / "iolens.strace"
    strace = ["strace", "-f", "-y", "-o", str(log), "-e", f"trace={CALLS}"]
    job(run_fio(engine, ["--np", "1", "--name=t", f"--filename={path}", *args], launcher=strace))
    return file_calls(log, path)


def fresh(path: Path) -> None:
    """Removes the file and the directory's ownership ledger, so the next tool lays it out from nothing."""
    path.unlink(missing_ok=True)
    (path.parent / ".iolens-owned").unlink(missing_ok=True)


@needs_strace
@needs_fio
@pytest.mark.parametrize(
    "args",
    [
        ["--rw=randread", "--bs=4k", "--size=64k"],
        ["--rw=read", "--bs=16k", "--size=96k", "--offset=32k"],
        ["--rw=randwrite", "--bs=4k", "--size=64k"],
        ["--rw=randread", "--bs=4k", "--size=64k", "--fallocate=none"],
        ["--rw=randread", "--bs=4k", "--size=64k", "--fallocate=truncate"],
        ["--rw=read", "--bs=4k", "--size=32k", "--invalidate=0"],
    ],
    ids=["randread", "read-offset", "randwrite", "fallocate-none", "fallocate-truncate", "invalidate-0"],
)
def test_layout_and_invalidate_of_a_new_file_reach_the_kernel_as_fios(
    engine: Path, disk_dir: Path, args: list[str]
) -> None:
    # fio 3.33 on a file that is not there: creates it (O_TRUNC for a job that reads), preallocates it
    # (fallocate=native), sizes it and writes it in blocks of bs, fsyncs it and drops the pages it added;
    # then opens it for the job, drops the region's pages (invalidate=1, no write-back first) and gives its
    # fadvise hint. A write job's new file is only created and preallocated.
    f = disk_dir / "f"
    fresh(f)
    want = fio_calls(disk_dir, f, "--ioengine=psync", *args)
    fresh(f)
    got = iolens_calls(engine, disk_dir, f, "--ioengine=psync", *args)
    assert without_opens(got) == without_opens(want), "\n".join(got) + "\n---- fio:\n" + "\n".join(want)
    # The first open, the layout's, has the same flags.
    assert got[0] == want[0]


@needs_strace
@needs_fio
def test_an_existing_file_is_laid_out_again_only_when_too_short(engine: Path, disk_dir: Path) -> None:
    # fio 3.33: a file long enough for the job is used as it is; a shorter one is removed and laid out again
    # from byte 0 (iolens does that only to its own files, or with allow_overwrite=1).
    f = disk_dir / "f"
    read = ["--ioengine=psync", "--rw=read", "--bs=4k"]

    def calls(tool: str, size: str) -> list[str]:
        fresh(f)
        job(run_fio(engine, ["--name=t", f"--filename={f}", "--rw=write", "--bs=4k", "--size=64k"]))
        if tool == "fio":
            return fio_calls(disk_dir, f, *read, f"--size={size}")
        return iolens_calls(engine, disk_dir, f, *read, f"--size={size}")

    for size, layout in (("32k", False), ("256k", True)):
        want, got = calls("fio", size), calls("iolens", size)
        assert without_opens(got) == without_opens(want), (size, got)
        assert ("unlink " in got) is layout and f.stat().st_size == max(64, int(size[:-1])) * KIB


@needs_strace
@needs_fio
def test_loops_invalidate_and_end_fsync_each_pass_as_fio(engine: Path, disk_dir: Path) -> None:
    # fio opens the files again for every loop (dropping their pages: invalidate=1) and runs end_fsync at the
    # end of each; its fsync= count starts again with each loop.
    f = disk_dir / "f"
    fresh(f)
    job(run_fio(engine, ["--name=t", f"--filename={f}", "--rw=write", "--bs=4k", "--size=64k"]))
    # 8 writes a loop; fio counts fsync= writes over the whole job (not per loop): 3 w, fsync, 3 w, fsync,
    # 2 w, end_fsync, 1 w, fsync, ... Each loop starts with a drop of the region's pages.
    args = [
        "--ioengine=psync",
        "--rw=randwrite",
        "--bs=4k",
        "--size=32k",
        "--loops=3",
        "--fsync=3",
        "--end_fsync=1",
    ]
    want = fio_calls(disk_dir, f, *args)
    got = iolens_calls(engine, disk_dir, f, *args)

    def syncs_and_writes(calls: list[str]) -> list[str]:
        return [c for c in calls if c.startswith(("write", "fsync"))]

    assert syncs_and_writes(got) == syncs_and_writes(want), "\n".join(got)
    drops = [c for c in got if c.endswith("POSIX_FADV_DONTNEED")]
    # fio opens the file once more for the end_fsync of each loop but the last, with one more drop just before
    # it: iolens drops once per loop (the pages are the same afterwards: the fsync writes them back, the next
    # loop's drop frees them).
    assert len(drops) == 3 and sum(c.endswith("POSIX_FADV_DONTNEED") for c in want) == 3 + 2
    # fio syncs after the Nth write only when another I/O follows: not after the 24th (end_fsync does it).
    assert (
        job(run_fio(engine, ["--name=t", f"--filename={f}", *args]))["sync"]["ios"]
        == want.count("fsync ")
        == 10
    )


@needs_strace
def test_time_based_random_job_drops_the_region_when_its_map_is_full(engine: Path, disk_dir: Path) -> None:
    f = disk_dir / "f"
    fresh(f)
    args = ["--ioengine=psync", "--rw=randread", "--bs=4k", "--size=16k", "--time_based", "--runtime=200ms"]
    got = iolens_calls(engine, disk_dir, f, *args)
    drops = sum(c == "fadvise64 0, 16384, POSIX_FADV_DONTNEED" for c in got)
    reads = sum(c.startswith("read ") for c in got)
    # One after the layout, one at open, one per pass of 4 reads (but the last), as fio; with norandommap
    # there is no map to fill, and no drop while the job runs.
    assert reads >= 8 and drops == 2 + (reads - 1) // 4, (reads, drops)
    got = iolens_calls(engine, disk_dir, f, *args, "--norandommap=1")
    assert sum(c == "fadvise64 0, 16384, POSIX_FADV_DONTNEED" for c in got) == 1  # the file exists now


def cache(engine: Path, d: Path, *more: str) -> dict[str, object]:
    c: dict[str, object] = job(
        run_fio(engine, ["--name=t", f"--directory={d}", "--bs=4k", "--size=4m", *more])
    )["cache"]
    return c


def resident(path: Path) -> int:
    fd = os.open(path, os.O_RDONLY)
    try:
        out = subprocess.run(
            ["fincore", "--bytes", "--raw", "--noheadings", "--output", "RES", str(path)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    finally:
        os.close(fd)
    return int(out.split()[0])


@pytest.mark.skipif(shutil.which("fincore") is None, reason="util-linux's fincore is not installed")
def test_cache_warning_follows_where_the_reads_came_from_on_disk(engine: Path, disk_dir: Path) -> None:
    f = disk_dir / "t.0.0"
    # Cold cache, random reads told to the kernel (fadvise_hint=1): every byte from the disk, no warning.
    cold = cache(engine, disk_dir, "--rw=randread")
    assert cold["cache_figure"] is False and cold["storage_read_bytes"] == 4 * MIB
    # The file is now resident (the reads brought it in): asis reads it from memory, and says so.
    assert resident(f) == 4 * MIB
    kept = cache(engine, disk_dir, "--rw=randread", "--invalidate=0")
    assert kept["cache_figure"] is True and kept["reads_from_memory"] is True
    assert kept["storage_read_bytes"] == 0 and "cache=asis" in str(kept["note"])
    # asis on a file that is not in memory reads from the disk: no warning.
    cache(engine, disk_dir, "--rw=randread", "--direct=1")  # cold again, O_DIRECT leaves nothing behind
    assert resident(f) == 0
    asis_cold = cache(engine, disk_dir, "--rw=randread", "--invalidate=0")
    assert asis_cold["cache_figure"] is False and asis_cold["storage_read_bytes"] == 4 * MIB
    # fio's pre_read is cache=hot: the file is read in before the job, the figure is memory's.
    hot = cache(engine, disk_dir, "--rw=randread", "--pre_read=1")
    assert hot["mode"] == "hot" and hot["cache_figure"] is True and hot["storage_read_bytes"] == 0
    # A job that reads its region again: with invalidate=1 each loop starts cold (fio's), so no warning;
    # with norandommap over several loops and invalidate=0 most reads hit memory.
    loops = cache(engine, disk_dir, "--rw=randread", "--loops=2")
    assert loops["cache_figure"] is False
    again = cache(engine, disk_dir, "--rw=randread", "--loops=3", "--invalidate=0", "--norandommap=1")
    assert again["cache_figure"] is True


def test_cache_warning_on_tmpfs(engine: Path, tmpfs_dir: Path) -> None:
    c = cache(engine, tmpfs_dir, "--rw=randread")
    assert c["cache_figure"] is True and c["evicted"] is False and c["storage_read_bytes"] == 0
    assert "tmpfs" in str(c["note"])


def test_fallocate_and_pre_read_values(engine: Path, tmpfs_dir: Path) -> None:
    for v in ("native", "posix", "keep", "truncate", "none", "0", "1"):
        assert (
            run_fio(
                engine, ["--name=t", f"--directory={tmpfs_dir}", "--size=64k", f"--fallocate={v}"]
            ).returncode
            == 0
        )
    bad = run_fio(engine, ["--name=t", f"--directory={tmpfs_dir}", "--size=64k", "--fallocate=sometimes"])
    assert bad.returncode == 2 and "fallocate" in bad.stderr
    bad = run_fio(
        engine, ["--name=t", f"--directory={tmpfs_dir}", "--size=64k", "--pre_read=1", "--cache=cold"]
    )
    assert bad.returncode == 2 and "pre_read" in bad.stderr


@needs_fio
def test_direct_with_a_block_size_the_device_cannot_take(engine: Path, disk_dir: Path) -> None:
    # fio starts and fails at the first I/O (EINVAL, exit 1); iolens refuses before any I/O (exit 2), naming
    # the option.
    args = ["--name=t", f"--filename={disk_dir / 'f'}", "--rw=randread", "--size=64k", "--direct=1"]
    fio = subprocess.run(["fio", "--output=/dev/null", *args, "--bs=1000"], capture_output=True, text=True)
    assert fio.returncode != 0 and "Invalid argument" in fio.stderr
    res = run_fio(engine, [*args, "--bs=1000"])
    assert res.returncode == 2 and "bs: 1000 is not a multiple of 512" in res.stderr
    res = run_fio(engine, [*args, "--bs=4k", "--offset=1000"])
    assert res.returncode == 2 and "offset" in res.stderr


def reads_by_file(log: Path, d: Path) -> list[tuple[str, int]]:
    """(file name, offset) of every pread64 on a file of directory d, in order."""
    out = []
    for line in log.read_text().splitlines():
        m = re.search(r"pread64\(\d+<" + re.escape(str(d)) + r"/(t\.[^>]+)>, .*, (\d+)\) = \d+", line)
        if m:
            out.append((m.group(1), int(m.group(2))))
    return out


@needs_strace
@needs_fio
@pytest.mark.parametrize("service", ["roundrobin", "sequential", "roundrobin:2", "sequential:3"])
def test_file_service_type_visits_the_files_in_fios_order(engine: Path, disk_dir: Path, service: str) -> None:
    args = ["--name=t", "--nrfiles=3", "--rw=read", "--bs=4k", "--size=48k", f"--file_service_type={service}"]
    seen = {}
    for tool in ("fio", "iolens"):
        d = disk_dir / tool
        d.mkdir()
        log = disk_dir / f"{tool}.strace"
        strace = ["strace", "-f", "-y", "-o", str(log), "-e", "trace=pread64"]
        if tool == "fio":
            subprocess.run(
                [*strace, "fio", "--output=/dev/null", f"--directory={d}", *args],
                check=True,
                capture_output=True,
            )
        else:
            job(run_fio(engine, ["--np", "1", f"--directory={d}", *args], launcher=strace))
        seen[tool] = reads_by_file(log, d)
    assert seen["iolens"] == seen["fio"] and len(seen["fio"]) == 12


@needs_strace
def test_random_jobs_serve_each_file_in_turn_with_its_own_random_map(engine: Path, disk_dir: Path) -> None:
    log = disk_dir / "iolens.strace"
    strace = ["strace", "-f", "-y", "-o", str(log), "-e", "trace=pread64"]
    args = ["--np", "1", f"--directory={disk_dir}", "--name=t", "--nrfiles=3", "--rw=randread", "--bs=4k"]
    job(run_fio(engine, [*args, "--size=96k", "--loops=2"], launcher=strace))
    ios = reads_by_file(log, disk_dir)
    assert [name for name, _ in ios] == ["t.0.0", "t.0.1", "t.0.2"] * 16
    for loop in (ios[:24], ios[24:]):  # every block of every file once per loop
        assert sorted(loop) == sorted((f"t.0.{k}", b * 4096) for k in range(3) for b in range(8))
    bad = run_fio(engine, [*args, "--size=96k", "--file_service_type=zipf:1.2"])
    assert bad.returncode == 2 and "file_service_type" in bad.stderr


@needs_fio
@pytest.mark.parametrize(
    "more",
    [["--rw=read"], ["--rw=randwrite", "--loops=2"], ["--rw=randread", "--ioengine=io_uring", "--iodepth=8"]],
)
def test_ramp_time_of_a_size_based_job_is_extra_io_as_fios(
    engine: Path, tmpfs_dir: Path, more: list[str]
) -> None:
    # fio resets its byte count when the ramp ends: a job without time_based runs through its region for the
    # ramp, then moves loops x size bytes, all of them in its figures.
    f = tmpfs_dir / "r"
    args = ["--name=r", f"--filename={f}", "--bs=4k", "--size=16m", "--ramp_time=150ms", *more]
    done = subprocess.run(["fio", "--output-format=json", *args], capture_output=True, text=True, check=True)
    fio_job = json.loads(done.stdout[done.stdout.index("{") :])["jobs"][0]
    d = "write" if "randwrite" in more[0] else "read"
    got = job(run_fio(engine, [*args, "--allow_overwrite=1"]))
    assert got[d]["bytes"] == fio_job[d]["io_bytes"] == (2 if "--loops=2" in more else 1) * 16 * MIB


def test_cache_warning_when_readahead_or_one_page_served_several_reads(engine: Path, disk_dir: Path) -> None:
    # Every byte of the file is fetched once in each case below; what differs is how many reads waited for
    # the disk. fadvise_hint=0 lets readahead bring in blocks a random job reads later (the thread waits for
    # far fewer reads than it makes); 512-byte reads find the page the first one fetched.
    args = ["--rw=randread", "--size=16m"]
    told = cache(engine, disk_dir, *args)
    assert told["cache_figure"] is False and told["storage_read_bytes"] == 16 * MIB
    ahead = cache(engine, disk_dir, *args, "--fadvise_hint=0")
    # Whether the kernel reads ahead for a random job depends on its heuristics (a run of adjacent blocks
    # grows a window) and the device's read_ahead_kb: flagged only when the threads waited for fewer than
    # half of their reads, and then for that reason.
    if ahead["cache_figure"]:
        assert "readahead" in str(ahead["note"]) and ahead["storage_read_bytes"] >= 16 * MIB // 2
    small = cache(engine, disk_dir, "--rw=randread", "--size=2m", "--bs=512")
    assert small["cache_figure"] is True and "smaller than a page" in str(small["note"])
    direct = cache(engine, disk_dir, "--rw=randread", "--size=2m", "--bs=512", "--direct=1")
    assert direct["cache_figure"] is False


@needs_strace
@needs_fio
def test_create_on_open_lays_nothing_out(engine: Path, disk_dir: Path) -> None:
    # fio: no layout (no fallocate, no writes before the job); the job's own open creates the file.
    f = disk_dir / "f"
    args = ["--ioengine=psync", "--rw=write", "--bs=4k", "--size=16k", "--create_on_open=1"]
    fresh(f)
    want = fio_calls(disk_dir, f, *args)
    fresh(f)
    got = iolens_calls(engine, disk_dir, f, *args)
    writes = ["write 4096"] * 4
    assert [c for c in want if not c.startswith(("open", "fadvise64"))] == writes
    assert [c for c in got if not c.startswith(("open", "fadvise64"))] == writes
    assert f.stat().st_size == 16 * KIB and (disk_dir / ".iolens-owned").read_text().split() == ["f"]
    # A job that reads a file that is not there: fio fails at its first read, iolens before any I/O.
    fresh(f)
    res = run_fio(engine, ["--name=t", f"--filename={f}", "--rw=read", "--size=16k", "--create_on_open=1"])
    assert res.returncode == 2 and "create_on_open" in res.stderr and not f.exists()


def write_offsets(log: Path) -> list[int]:
    """The write offsets of a fio iolog, version 2 (iolens) or 3 (fio 3.33 adds a time before each line)."""
    out = []
    for line in log.read_text().splitlines()[1:]:
        words = line.split()
        if "write" in words:
            out.append(int(words[words.index("write") + 1]))
    return out


def merged_requests(offsets: list[int], bs: int, batch: int) -> int:
    """The requests the block layer can make of each batch of writes between two fsyncs: the batch's runs of
    neighbouring blocks (neighbouring dirty pages are written back as one request)."""
    runs = 0
    for i in range(0, len(offsets), batch):
        b = sorted(offsets[i : i + batch])
        runs += 1 + sum(1 for x, y in zip(b, b[1:], strict=False) if y != x + bs)
    return runs


@needs_fio
def test_random_map_takes_the_next_free_block_as_fio_so_fsynced_batches_merge_alike(
    engine: Path, tmpfs_dir: Path
) -> None:
    # fio's random map: a draw that lands on a block done in this pass takes the next free block after it,
    # so late in a pass the writes run into neighbouring blocks, and a batch of writes between fsyncs
    # reaches the device as fewer requests than a uniform random order gives. For 1024 4 KiB writes in
    # batches of 32, fio 3.33 makes 910 runs; a uniform random permutation of the blocks makes about 997
    # (9.6% more), which the device saw as 9% more write requests than fio's (bench/fidelity).
    args = ["--name=t", "--rw=randwrite", "--bs=4k", "--size=4m", "--ioengine=psync"]
    fio_log, iolens_log = tmpfs_dir / "fio.iolog", tmpfs_dir / "iolens.iolog"
    subprocess.run(
        ["fio", "--output=/dev/null", *args, f"--filename={tmpfs_dir / 'a'}", f"--write_iolog={fio_log}"],
        check=True,
        capture_output=True,
        timeout=120,
    )
    job(run_fio(engine, [*args, f"--filename={tmpfs_dir / 'b'}", f"--write_iolog={iolens_log}"]))
    want, got = write_offsets(fio_log), write_offsets(iolens_log)
    assert sorted(got) == sorted(want) == [i * 4 * KIB for i in range(1024)]  # every block once
    fio_runs, iolens_runs = merged_requests(want, 4 * KIB, 32), merged_requests(got, 4 * KIB, 32)
    assert abs(iolens_runs - fio_runs) <= 0.06 * fio_runs, (iolens_runs, fio_runs)
    # With norandommap the draws are independent: blocks repeat, some are never written.
    job(
        run_fio(
            engine, [*args, f"--filename={tmpfs_dir / 'c'}", f"--write_iolog={iolens_log}", "--norandommap=1"]
        )
    )
    assert len(set(write_offsets(iolens_log))) < 1024


def test_a_random_bssplit_job_covers_its_region_once_per_loop_as_fios_map(
    engine: Path, tmpfs_dir: Path
) -> None:
    # fio keeps its random map in units of the smallest block size: an I/O takes the units it covers, and
    # one that would run into a done unit (or past its file's end) is shortened there. Every byte of each
    # file is then read exactly once per loop; without the map offsets would repeat and others be missed.
    log = tmpfs_dir / "iolog"
    args = ["--name=t", "--rw=randread", "--bssplit=4k/50:64k/50", "--size=2m", "--nrfiles=2", "--loops=2"]
    job(run_fio(engine, [*args, f"--directory={tmpfs_dir}", f"--write_iolog={log}"]))
    ios = iolog_ios(log)
    by_loop_file: dict[tuple[int, str], list[tuple[int, int]]] = {}
    done = 0
    for name, action, offset, length in ios:
        if action != "read":
            continue
        loop = done // (2 * MIB)
        by_loop_file.setdefault((loop, name), []).append((offset, length))
        done += length
    assert done == 2 * 2 * MIB and len(by_loop_file) == 4
    for extents in by_loop_file.values():
        covered = sorted(extents)
        assert covered[0][0] == 0 and sum(n for _, n in covered) == MIB
        assert all(a + n == b for (a, n), (b, _) in zip(covered, covered[1:], strict=False))
        assert all(n % (4 * KIB) == 0 for _, n in covered)
