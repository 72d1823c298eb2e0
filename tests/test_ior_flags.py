"""IOR 4's run-level flags, each by its effect: ranks used (-N), files made (-y, --dryRun), bytes moved
(stoneWallingWearOutIterations, minTimeDuration, --randomPrefill), time (-d, interIODelay, -T), whose data a
rank reads (-Z -X), memory held (-M), short transfers (-x), warnings (-j, --warningAsErrors), kept files
(-K)."""

from __future__ import annotations

import ctypes
import fcntl
import json
import os
import resource
import signal
import subprocess
import time
from pathlib import Path

import pytest

from .ior_helpers import run_engine

KIB = 1024


def _files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if not p.name.startswith("."))


def test_num_tasks_runs_only_the_first_n_ranks(engine: Path, tmpfs_dir: Path) -> None:
    r = run_engine(
        engine, ["-N", "2", "-F", "-t", "4k", "-b", "16k", "-w", "-k", "-o", str(tmpfs_dir / "f")], np=3
    )
    assert r.returncode == 0, r.stderr
    assert _files(tmpfs_dir) == ["f.00000000", "f.00000001"]
    ph = r.doc["phases"][0]
    assert ph["bytes"] == 2 * 16 * KIB and len(ph["per_rank"]) == 2
    assert r.doc["ior_flags"]["participating_ranks"] == 2


def test_num_tasks_under_mpirun_uses_a_sub_communicator(
    engine: Path, tmpfs_dir: Path, mpi_env: dict[str, str]
) -> None:
    r = run_engine(
        engine,
        ["-N", "2", "-t", "4k", "-b", "16k", "-w", "-r", "-W", "-o", str(tmpfs_dir / "s")],
        launcher=["mpirun", "-np", "3"],
        env=mpi_env,
    )
    assert r.returncode == 0, r.stderr
    write, read = r.doc["phases"]
    assert write["bytes"] == read["bytes"] == 2 * 16 * KIB
    assert write["verify"]["errors"] == 0 and len(write["per_rank"]) == 2


def test_num_tasks_above_the_job_warns_and_runs_all_or_fails_with_warning_as_errors(
    engine: Path, tmpfs_dir: Path
) -> None:
    args = ["-N", "5", "-t", "4k", "-b", "8k", "-w", "-o", str(tmpfs_dir / "n")]
    r = run_engine(engine, args, np=2)
    assert r.returncode == 0 and "more tasks requested (5) than available (2)" in r.stderr
    assert r.doc["phases"][0]["bytes"] == 2 * 8 * KIB
    strict = run_engine(engine, [*args, "--warningAsErrors"], np=2)
    assert strict.returncode == 2 and "-N: 5 ranks asked for" in strict.stderr


def test_fractional_inter_test_delay_waits_before_each_phase(engine: Path, tmpfs_dir: Path) -> None:
    t0 = time.monotonic()
    r = run_engine(
        engine, ["-d", "0.4", "-t", "4k", "-b", "8k", "-w", "-r", "-o", str(tmpfs_dir / "d")], np=1
    )
    assert r.returncode == 0, r.stderr
    assert time.monotonic() - t0 >= 0.8  # before the write and before the read, as IOR
    assert r.doc["config"]["inter-test-delay"] == pytest.approx(0.4)


def test_wear_out_iterations_stops_a_write_after_n_transfers(engine: Path, tmpfs_dir: Path) -> None:
    out = tmpfs_dir / "w"
    args = ["-F", "-t", "4k", "-b", "64k", "-w", "-r", "-W", "-k", "-O", "stoneWallingWearOutIterations=3"]
    r = run_engine(engine, [*args, "-o", str(out)], np=2)
    assert r.returncode == 0, r.stderr
    write, read = r.doc["phases"]
    assert write["bytes"] == read["bytes"] == 2 * 3 * 4 * KIB
    assert write["verify"]["bytes_checked"] == 2 * 3 * 4 * KIB
    assert Path(f"{out}.00000000").stat().st_size == 3 * 4 * KIB


def test_min_time_duration_repeats_the_phase_until_the_time_is_up(engine: Path, tmpfs_dir: Path) -> None:
    out = tmpfs_dir / "m"
    r = run_engine(
        engine, ["-t", "4k", "-b", "64k", "-w", "-k", "-O", "minTimeDuration=1", "-o", str(out)], np=1
    )
    assert r.returncode == 0, r.stderr
    ph = r.doc["phases"][0]
    assert ph["times"]["xfer_s"] >= 1.0
    assert ph["bytes"] > 64 * KIB and ph["bytes"] % (64 * KIB) == 0  # whole passes over the block
    assert out.stat().st_size == 64 * KIB  # the same offsets again, not a longer file
    both = run_engine(
        engine, ["-t", "4k", "-b", "64k", "-w", "-r", "-W", "-O", "minTimeDuration=1", "-o", str(out)]
    )
    assert both.returncode == 0, both.stderr
    write, read = both.doc["phases"]
    assert read["times"]["xfer_s"] >= 1.0 and read["bytes"] % (64 * KIB) == 0
    assert write["verify"]["bytes_checked"] == 64 * KIB and write["verify"]["errors"] == 0  # one pass checked


def test_inter_io_delay_sleeps_after_each_transfer(engine: Path, tmpfs_dir: Path) -> None:
    r = run_engine(
        engine, ["-t", "4k", "-b", "40k", "-w", "-O", "interIODelay=20000", "-o", str(tmpfs_dir / "i")], np=1
    )
    assert r.returncode == 0, r.stderr
    assert r.doc["phases"][0]["times"]["xfer_s"] >= 10 * 0.02


def test_max_time_duration_starts_no_phase_after_the_limit(engine: Path, tmpfs_dir: Path) -> None:
    # IOLENS_TEST_MINUTE_NS makes -T's minute 0.3 s; each iteration waits 0.2 s (-d) before each phase.
    env = {**os.environ, "IOLENS_TEST_MINUTE_NS": "300000000"}
    args = ["-T", "1", "-i", "5", "-d", "0.2", "-t", "4k", "-b", "8k", "-w", "-o", str(tmpfs_dir / "t")]
    r = run_engine(engine, args, np=1, env=env)
    assert r.returncode == 0, r.stderr
    assert 1 <= len(r.doc["phases"]) < 5
    assert r.doc["ior_flags"]["phases_skipped_by_time_limit"] == 5 - len(r.doc["phases"])


def _glibc_draws(ranks: int, seed: int) -> list[int]:
    libc = ctypes.CDLL("libc.so.6")
    shifts = []
    for rank in range(ranks):
        libc.srand(rank + seed)
        shifts.append(libc.rand() % ranks)
    return shifts


def test_reorder_tasks_random_reads_the_data_of_ranks_drawn_as_ior_draws(
    engine: Path, tmpfs_dir: Path
) -> None:
    base = ["-F", "-t", "4k", "-b", "16k", "-o", str(tmpfs_dir / "z")]
    w = run_engine(engine, [*base, "-w", "-k"], np=4)
    assert w.returncode == 0, w.stderr
    r = run_engine(engine, [*base, "-Z", "-X", "5", "-r", "-R", "-k"], np=4)
    assert r.returncode == 0, r.stderr
    # one node: every rank is eligible, so the first draw of srand(rank + 5) is taken
    assert r.doc["ior_flags"]["read_shifts"] == _glibc_draws(4, 5)
    assert r.doc["phases"][0]["verify"]["errors"] == 0
    both = run_engine(engine, [*base, "-Z", "-C", "-r"], np=4)
    assert both.returncode == 2 and "-Z: cannot be combined with -C" in both.stderr


def test_memory_per_node_is_held_split_over_the_ranks(engine: Path, tmpfs_dir: Path) -> None:
    r = run_engine(engine, ["-M", "64m", "-t", "4k", "-b", "8k", "-w", "-o", str(tmpfs_dir / "h")], np=2)
    assert r.returncode == 0, r.stderr
    assert r.doc["ior_flags"]["memory_held_per_rank_bytes"] == 32 * KIB * KIB
    t = run_engine(
        engine, ["-O", "memoryPerTask=8m", "-t", "4k", "-b", "8k", "-w", "-o", str(tmpfs_dir / "h")]
    )
    assert t.doc["ior_flags"]["memory_held_per_rank_bytes"] == 8 * KIB * KIB
    bad = run_engine(engine, ["-M", "150%", "-w", "-o", str(tmpfs_dir / "h")])
    assert bad.returncode == 2 and "-M: 150%" in bad.stderr


def _limited(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def test_single_xfer_attempt_makes_a_short_write_an_error_at_once(engine: Path, tmpfs_dir: Path) -> None:
    # A file size limit of 12 KiB cuts the second 8 KiB write short: without -x the remainder is sent again
    # (and fails: EFBIG); with -x the short write itself is the error.
    def run(*extra: str) -> subprocess.CompletedProcess[str]:
        cmd = [
            str(engine),
            "ior",
            "--quiet",
            "-t",
            "8k",
            "-b",
            "16k",
            "-w",
            *extra,
            "-o",
            str(tmpfs_dir / "x"),
        ]
        return subprocess.run(
            cmd, capture_output=True, text=True, timeout=60, preexec_fn=lambda: _limited(12 * KIB)
        )

    retried = run()
    assert retried.returncode == 1 and "File too large" in retried.stderr
    once = run("-x")
    assert once.returncode == 1 and "moved 4096 of 8192 bytes" in once.stderr


def test_keep_file_with_error_keeps_the_file_a_check_found_bad(engine: Path, tmpfs_dir: Path) -> None:
    out = tmpfs_dir / "k"
    assert run_engine(engine, ["-t", "4k", "-b", "8k", "-w", "-k", "-G", "1", "-o", str(out)]).returncode == 0
    r = run_engine(engine, ["-K", "-t", "4k", "-b", "8k", "-r", "-R", "-G", "2", "-o", str(out)])
    assert r.returncode == 1 and r.doc["config"]["keep-file-with-error"] is True
    assert out.exists()


def test_outlier_threshold_warns_about_a_rank_far_from_the_mean(engine: Path, tmpfs_dir: Path) -> None:
    # Rank 1's clock readings 3 s ahead (a test hook; same host, so no offset is measured to undo it): its
    # start and end times are 1.5 s from the mean, as are rank 0's.
    env = {**os.environ, "IOLENS_TEST_CLOCK_SKEW_NS": "0,3000000000"}
    args = ["-j", "1", "-t", "4k", "-b", "8k", "-w", "-o", str(tmpfs_dir / "j")]
    r = run_engine(engine, args, np=2, env=env)
    assert r.returncode == 0, r.stderr
    warnings = r.doc["ior_flags"]["warnings"]
    assert any("task 1, write start time is" in w for w in warnings), warnings
    assert "iolens-bench: warning: for " in r.stderr
    calm = run_engine(engine, args, np=2)
    assert calm.doc["ior_flags"]["warnings"] == []
    strict = run_engine(engine, [*args, "--warningAsErrors"], np=2, env=env)
    assert strict.returncode == 1 and "--warningAsErrors" in strict.doc["error"]["message"]


def test_dual_mount_puts_each_file_under_its_sockets_mount_point(engine: Path, tmpfs_dir: Path) -> None:
    for node in range(8):
        (tmpfs_dir / f"m{node}").mkdir()
    r = run_engine(engine, ["-y", "-F", "-t", "4k", "-b", "8k", "-w", "-k", "-o", str(tmpfs_dir / "m")], np=1)
    assert r.returncode == 0, r.stderr
    made = sorted(p.relative_to(tmpfs_dir).as_posix() for p in tmpfs_dir.glob("m*/data.*"))
    assert len(made) == 1 and made[0].endswith("/data.00000000")
    shared = run_engine(engine, ["-y", "-w", "-o", str(tmpfs_dir / "m")])
    assert shared.returncode == 2 and "-y: dual mount" in shared.stderr
    # the mount point of the node is checked before any I/O, as every -o directory is
    missing = run_engine(engine, ["-y", "-F", "-w", "-o", str(tmpfs_dir / "nomount")])
    assert missing.returncode == 2 and "nomount" in missing.stderr


def test_dry_run_does_no_io(engine: Path, tmpfs_dir: Path) -> None:
    r = run_engine(
        engine, ["--dryRun", "-t", "4k", "-b", "8k", "-w", "-r", "-o", str(tmpfs_dir / "dry")], np=2
    )
    assert r.returncode == 0, r.stderr
    assert [p.name for p in tmpfs_dir.iterdir()] == []
    assert r.doc["config"]["api"] == "null" and r.doc["config"]["dryRun"] is True


def test_random_prefill_fills_the_blocks_before_random_writes(engine: Path, tmpfs_dir: Path) -> None:
    # One random 4 KiB write of a 16 KiB block (stoneWallingWearOutIterations=1): with the prefill the rest
    # of the block holds 0xff, without it the rest is a hole of zeros.
    base = ["-z", "-t", "4k", "-b", "16k", "-w", "-k", "-O", "stoneWallingWearOutIterations=1"]
    filled, plain = tmpfs_dir / "filled", tmpfs_dir / "plain"
    a = run_engine(engine, [*base, "--randomPrefill=8k", "-o", str(filled)])
    b = run_engine(engine, [*base, "-o", str(plain)])
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    assert filled.stat().st_size == 16 * KIB
    assert filled.read_bytes().count(b"\xff" * 4096) >= 3
    assert b"\xff" * 64 not in plain.read_bytes()
    assert a.doc["phases"][0]["bytes"] == 4 * KIB  # the prefill is not counted
    no_z = run_engine(
        engine, ["--randomPrefill=8k", "-t", "4k", "-b", "16k", "-w", "-o", str(tmpfs_dir / "n")]
    )
    assert no_z.returncode == 2 and "--randomPrefill: only with random offsets" in no_z.stderr


def test_random_offset_seed_chooses_the_order_of_z(engine: Path, tmpfs_dir: Path) -> None:
    # One random 4 KiB transfer of 64 KiB: where it lands follows the -z seed alone.
    base = ["-z", "-t", "4k", "-b", "64k", "-w", "-k", "-O", "stoneWallingWearOutIterations=1"]

    def landed(seed: str, name: str) -> int:
        out = tmpfs_dir / name
        r = run_engine(engine, [*base, "--random-offset-seed", seed, "-o", str(out)])
        assert r.returncode == 0, r.stderr
        data = out.read_bytes()
        return next(i for i in range(0, len(data), 4096) if data[i : i + 4096] != bytes(4096))

    seen = {landed(str(s), f"s{s}") for s in range(8)}
    assert len(seen) > 1
    assert landed("3", "again") == landed("3", "again2")


def test_engine_refuses_a_script_file_it_cannot_run(engine: Path, tmpfs_dir: Path) -> None:
    r = run_engine(engine, ["-f", "x.ior", "-o", str(tmpfs_dir / "f")])
    assert r.returncode == 2 and "iolens ior -f x.ior" in r.stderr


def test_the_document_echoes_every_new_flag(engine: Path, tmpfs_dir: Path) -> None:
    r = run_engine(engine, ["-t", "4k", "-b", "8k", "-w", "-o", str(tmpfs_dir / "e")])
    cfg = r.doc["config"]
    for key in (
        "num-tasks",
        "dataPacketType",
        "max-time-duration",
        "reorder-tasks-random",
        "single-xfer-attempt",
        "outlier-threshold",
        "memory-per-node",
        "dual-mount",
        "dryRun",
        "randomPrefill",
        "random-offset-seed",
        "warningAsErrors",
        "min-time-duration",
    ):
        assert key in cfg, key
    assert json.dumps(cfg)


def test_posix_rangelocks_waits_for_a_conflicting_lock(engine: Path, tmpfs_dir: Path) -> None:
    out = tmpfs_dir / "locked"
    assert run_engine(engine, ["-t", "4k", "-b", "16k", "-w", "-k", "-o", str(out)]).returncode == 0
    read = [str(engine), "ior", "--quiet", "-t", "4k", "-b", "16k", "-r", "-k", "-o", str(out)]
    with out.open("r+b") as held:
        fcntl.lockf(held, fcntl.LOCK_EX, 4096, 0)  # the first transfer's range, held by another process
        assert subprocess.run(read, capture_output=True, timeout=60).returncode == 0  # no locks: not held up
        proc = subprocess.Popen(
            [*read, "--posix.rangelocks"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        time.sleep(0.5)
        assert proc.poll() is None  # waiting for the range
        fcntl.lockf(held, fcntl.LOCK_UN, 4096, 0)
        assert proc.wait(timeout=60) == 0
    other = run_engine(engine, ["-a", "io_uring", "--posix.rangelocks", "-w", "-o", str(tmpfs_dir / "u")])
    assert other.returncode == 2 and "only with the posix and pvsync2 backends" in other.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--dummy.delay-xfer=10"], "IOR's DUMMY delays are not supported"),
        (["-O", "GPUid=1"], "iolens has no GPU buffers"),
        (["-o", "/tmp/a@/tmp/b"], "IOR reads '@' as a separator of several file names"),
    ],
)
def test_ior_options_iolens_cannot_honour_are_refused_with_the_reason(
    engine: Path, tmpfs_dir: Path, args: list[str], message: str
) -> None:
    r = run_engine(engine, ["-w", "-o", str(tmpfs_dir / "r"), *args])
    assert r.returncode == 2 and message in r.stderr
    assert list(tmpfs_dir.iterdir()) == []
