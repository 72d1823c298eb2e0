"""The profiler runtime (libiolens-profile.so, native/profiler) under real programs: it must not change what
a program does or prints, and its logs must count exactly what the program did.

The programs come from native/profiler/tests (the profile_build fixture): profile_calls runs one named case
of calls and prints each call's return value and errno; profile_threads, profile_sleeper and profile_mpi are
the threaded, killed and MPI cases. The logs are read with the Python reader (iolens.profile.reader).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import time
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from iolens.profile.job import Job, load_job
from iolens.profile.joblog import read_job_log
from iolens.profile.reader import ProcessLog, read_log

from .conftest import ProfileBuild

# Counters that depend on the clock, or on where the compiler put a string literal.
UNSTABLE = ("_TIME", "TIMESTAMP", "MEM_NOT_ALIGNED")

CASES = (
    "open read_write pread_pwrite vector sync stat access namespace dir mmap mmap_many copy dup stdio stdout "
    "stdio_more fd64 align fork vfork_exec spawn clone exec exec_self exit_status underscore_exit "
    "underscore_Exit return_status killed_by_signal abort segv signals pipeline errno_slow_path"
).split()


def profiled_env(build: ProfileBuild, logs: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOLENS_")}
    for var in ("SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID", "LSB_JOBINDEX", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                "PMIX_RANK", "SLURM_PROCID"):  # fmt: skip
        env.pop(var, None)
    # One log per process: an MPI rank's log is replaced by the job's log at MPI_Finalize unless told not to
    # (tests/test_profile_joblog.py turns it on).
    env.update(LD_PRELOAD=str(build.lib), IOLENS_PROFILE_DIR=str(logs), IOLENS_JOB_LOG="0")
    env.update(extra)
    return env


def plain_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("IOLENS_") and k != "LD_PRELOAD"}


def run(cmd: list[str], env: Mapping[str, str], cwd: Path | None = None, timeout: float = 120):
    return subprocess.run(cmd, env=dict(env), cwd=cwd, capture_output=True, timeout=timeout, check=False)


def logs_in(d: Path) -> list[ProcessLog]:
    return [read_log(p) for p in sorted(d.iterdir()) if p.suffix in (".iolp", ".iolpz")]


def only_log(d: Path) -> ProcessLog:
    logs = logs_in(d)
    assert len(logs) == 1, [log.name for log in logs]
    return logs[0]


def stable(counters: Mapping[str, int]) -> dict[str, int]:
    return {k: v for k, v in counters.items() if v and not any(u in k for u in UNSTABLE)}


def tree(d: Path) -> dict[str, bytes | None]:
    """What a directory holds: relative path -> contents (None for a directory)."""
    out: dict[str, bytes | None] = {}
    for p in sorted(d.rglob("*")):
        rel = str(p.relative_to(d))
        if p.is_symlink():
            out[rel] = os.readlink(p).encode()
        elif p.is_dir():
            out[rel] = None
        else:
            out[rel] = p.read_bytes()
    return out


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    d = tmp_path / "logs"
    d.mkdir()
    return d


def test_profile_calls_lists_every_case(profile_build: ProfileBuild) -> None:
    prog = str(profile_build.program("profile_calls"))
    out = subprocess.run([prog, "--list"], capture_output=True, text=True, check=True)
    assert out.stdout.split() == CASES


@pytest.mark.parametrize("case", CASES)
def test_case_behaves_the_same_with_the_runtime(
    case: str, profile_build: ProfileBuild, tmpfs_dir: Path, logs: Path
) -> None:
    """Return values, errno after every call (failures included: ENOENT, EBADF, short reads at EOF), the
    exit status or signal, and the files the case leaves are the same with and without the runtime."""
    calls = str(profile_build.program("profile_calls"))
    a, b = tmpfs_dir / "plain", tmpfs_dir / "profiled"
    a.mkdir()
    b.mkdir()
    plain = run([calls, str(a), case], plain_env())
    prof = run([calls, str(b), case], profiled_env(profile_build, logs))
    assert prof.stdout.decode() == plain.stdout.decode()
    assert prof.returncode == plain.returncode
    assert prof.stderr == plain.stderr
    assert tree(b) == tree(a)
    assert logs_in(logs), "the profiled run left no log"


def single(profile_build: ProfileBuild, scratch: Path, logs: Path, case: str, **env: str) -> ProcessLog:
    r = run(
        [str(profile_build.program("profile_calls")), str(scratch), case],
        profiled_env(profile_build, logs, **env),
    )
    assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()
    return only_log(logs)


# What each single-process case did, call by call (see profile_calls.c): the process counters, and the
# counters of each file it named (paths relative to its scratch directory; "." is the directory itself, a
# FILES record with flag 2 and no counters). Times, timestamps and buffer alignment are checked elsewhere.
EXPECTED: dict[str, tuple[dict[str, int], dict[str, dict[str, int]]]] = {
    "open": (
        # 10 opens of a, 2 of b (one EEXIST), 2 creats of c, the directory; ENOENT, EEXIST, close(-1),
        # close(999) fail; the directory's open and close are untracked.
        {"OPENS": 14, "ERRORS": 4, "UNTRACKED_OPS": 2},
        {
            "a": {"POSIX_OPENS": 10, "POSIX_O_SYNC_OPENS": 1, "POSIX_O_APPEND_OPENS": 1},
            "b": {"POSIX_OPENS": 1, "ERRORS": 1},
            "c": {"POSIX_OPENS": 2},
            ".": {},
        },
    ),
    "read_write": (
        {
            "OPENS": 1,
            "READS": 4,
            "WRITES": 3,
            "BYTES_READ": 16,
            "BYTES_WRITTEN": 12,
            "SEEKS": 3,
            "ERRORS": 4,
            "UNTRACKED_OPS": 3,
        },  # fmt: skip
        {
            "rw": {
                "POSIX_OPENS": 1,
                "POSIX_READS": 4,
                "POSIX_WRITES": 3,
                "POSIX_SEEKS": 3,
                "POSIX_BYTES_READ": 16,
                "POSIX_BYTES_WRITTEN": 12,
                "POSIX_MAX_BYTE_READ": 11,
                "POSIX_MAX_BYTE_WRITTEN": 11,
                "POSIX_CONSEC_READS": 2,
                "POSIX_CONSEC_WRITES": 2,
                "POSIX_SEQ_READS": 2,
                "POSIX_SEQ_WRITES": 2,
                "POSIX_RW_SWITCHES": 1,
                "POSIX_FILE_NOT_ALIGNED": 5,
                "POSIX_SIZE_READ_0_100": 4,
                "POSIX_SIZE_WRITE_0_100": 3,
                # sizes 4 (5 times), 8 and 0 (a read at the end of the file)
                "POSIX_ACCESS1_ACCESS": 4,
                "POSIX_ACCESS3_ACCESS": 8,
                "POSIX_ACCESS1_COUNT": 5,
                "POSIX_ACCESS2_COUNT": 1,
                "POSIX_ACCESS3_COUNT": 1,
                # strides 0 (4 times), -12 and -10, stored as two's complement
                "POSIX_STRIDE2_STRIDE": 2**64 - 12,
                "POSIX_STRIDE3_STRIDE": 2**64 - 10,
                "POSIX_STRIDE1_COUNT": 4,
                "POSIX_STRIDE2_COUNT": 1,
                "POSIX_STRIDE3_COUNT": 1,
                "ERRORS": 1,
            },  # fmt: skip
        },
    ),
    "pread_pwrite": (
        {
            "OPENS": 1,
            "READS": 5,
            "WRITES": 3,
            "BYTES_READ": 24,
            "BYTES_WRITTEN": 24,
            "ERRORS": 2,
            "UNTRACKED_OPS": 1,
        },
        {
            "p": {
                "POSIX_OPENS": 1,
                "POSIX_READS": 5,
                "POSIX_WRITES": 3,
                "POSIX_BYTES_READ": 24,
                "POSIX_BYTES_WRITTEN": 24,
                "POSIX_MAX_BYTE_READ": 4103,
                "POSIX_MAX_BYTE_WRITTEN": 4103,
                "POSIX_CONSEC_WRITES": 1,
                "POSIX_SEQ_READS": 3,
                "POSIX_SEQ_WRITES": 2,
                "POSIX_RW_SWITCHES": 1,
                "POSIX_FILE_NOT_ALIGNED": 4,
                "POSIX_SIZE_READ_0_100": 5,
                "POSIX_SIZE_WRITE_0_100": 3,
                "POSIX_ACCESS1_ACCESS": 8,
                "POSIX_ACCESS2_ACCESS": 4,
                "POSIX_ACCESS1_COUNT": 5,
                "POSIX_ACCESS2_COUNT": 2,
                "POSIX_ACCESS3_COUNT": 1,
                "POSIX_STRIDE2_STRIDE": 4080,
                "POSIX_STRIDE3_STRIDE": 4084,
                "POSIX_STRIDE4_STRIDE": 2**64 - 4100,
                "POSIX_STRIDE1_COUNT": 1,
                "POSIX_STRIDE2_COUNT": 1,
                "POSIX_STRIDE3_COUNT": 1,
                "POSIX_STRIDE4_COUNT": 1,
                "ERRORS": 1,
            },  # fmt: skip
        },
    ),
    "vector": (
        {"OPENS": 1, "READS": 7, "WRITES": 6, "BYTES_READ": 76, "BYTES_WRITTEN": 72, "SEEKS": 1, "ERRORS": 1},
        {
            "v": {
                "POSIX_OPENS": 1,
                "POSIX_READS": 7,
                "POSIX_WRITES": 6,
                "POSIX_SEEKS": 1,
                "POSIX_BYTES_READ": 76,
                "POSIX_BYTES_WRITTEN": 72,
                "POSIX_MAX_BYTE_READ": 59,
                "POSIX_MAX_BYTE_WRITTEN": 59,
                "POSIX_CONSEC_READS": 4,
                "POSIX_CONSEC_WRITES": 4,
                "POSIX_SEQ_READS": 5,
                "POSIX_SEQ_WRITES": 4,
                "POSIX_RW_SWITCHES": 1,
                "POSIX_FILE_NOT_ALIGNED": 11,
                "POSIX_SIZE_READ_0_100": 7,
                "POSIX_SIZE_WRITE_0_100": 6,
                "POSIX_ACCESS1_ACCESS": 12,
                "POSIX_ACCESS3_ACCESS": 16,
                "POSIX_ACCESS1_COUNT": 11,
                "POSIX_ACCESS2_COUNT": 1,
                "POSIX_ACCESS3_COUNT": 1,
                "POSIX_STRIDE2_STRIDE": 2**64 - 48,
                "POSIX_STRIDE3_STRIDE": 42,
                "POSIX_STRIDE4_STRIDE": 2**64 - 24,
                "POSIX_STRIDE1_COUNT": 8,
                "POSIX_STRIDE2_COUNT": 2,
                "POSIX_STRIDE3_COUNT": 1,
                "POSIX_STRIDE4_COUNT": 1,
                "ERRORS": 1,
            },  # fmt: skip
        },
    ),
    "sync": (
        {
            "OPENS": 1,
            "WRITES": 1,
            "BYTES_WRITTEN": 4,
            "FSYNCS": 3,
            "TRUNCATES": 4,
            "FALLOCATES": 3,
            "ERRORS": 4,
            "UNTRACKED_OPS": 1,
        },  # fmt: skip
        {
            "s": {
                "POSIX_OPENS": 1,
                "POSIX_WRITES": 1,
                "POSIX_FSYNCS": 1,
                "POSIX_FDSYNCS": 1,  # sync_file_range is no fdatasync (Darshan's meaning)
                "POSIX_TRUNCATES": 4,
                "POSIX_BYTES_WRITTEN": 4,
                "POSIX_MAX_BYTE_WRITTEN": 3,
                "POSIX_SIZE_WRITE_0_100": 1,
                "POSIX_ACCESS1_ACCESS": 4,
                "POSIX_ACCESS1_COUNT": 1,
                "ERRORS": 2,
            },  # fmt: skip
        },
    ),
    "stat": (
        # 11 stats of st by every entry point, stat of the directory (untracked), 3 failures; the pre-2.33
        # entry points (through symbols bound to GLIBC_2.2.5) add 4 stats and a failure on x86_64.
        {"OPENS": 2, "WRITES": 1, "BYTES_WRITTEN": 5, "STATS": 16, "ERRORS": 4, "UNTRACKED_OPS": 2},
        {
            "st": {
                "POSIX_OPENS": 2,
                "POSIX_WRITES": 1,
                "POSIX_STATS": 15,
                "POSIX_BYTES_WRITTEN": 5,
                "POSIX_MAX_BYTE_WRITTEN": 4,
                "POSIX_SIZE_WRITE_0_100": 1,
                "POSIX_ACCESS1_ACCESS": 5,
                "POSIX_ACCESS1_COUNT": 1,
            },  # fmt: skip
        },
    ),
    "access": ({"ACCESSES": 4, "ERRORS": 1}, {}),
    "namespace": (
        {
            "OPENS": 3,
            "WRITES": 2,
            "BYTES_WRITTEN": 7,
            "MKDIRS": 3,
            "RMDIRS": 2,
            "UNLINKS": 2,
            "RENAMES": 3,
            "CHMODS": 3,
            "LINKS": 4,
            "ERRORS": 4,
        },  # fmt: skip
        {
            # n1 was made behind the runtime's back (a raw system call): its renames are process totals only
            "n4": {"POSIX_OPENS": 1},
            "l1": {"POSIX_UNLINKS": 1},
            "l2": {"POSIX_UNLINKS": 1},
            # relative paths after chdir, and after fchdir with ".." and "." in them
            "sub/rel": {
                "POSIX_OPENS": 1,
                "POSIX_WRITES": 1,
                "POSIX_BYTES_WRITTEN": 3,
                "POSIX_MAX_BYTE_WRITTEN": 2,
                "POSIX_SIZE_WRITE_0_100": 1,
                "POSIX_ACCESS1_ACCESS": 3,
                "POSIX_ACCESS1_COUNT": 1,
            },
            "sub/rel2": {
                "POSIX_OPENS": 1,
                "POSIX_WRITES": 1,
                "POSIX_BYTES_WRITTEN": 4,
                "POSIX_MAX_BYTE_WRITTEN": 3,
                "POSIX_SIZE_WRITE_0_100": 1,
                "POSIX_ACCESS1_ACCESS": 4,
                "POSIX_ACCESS1_COUNT": 1,
            },
        },  # fmt: skip
    ),
    "dir": ({"READDIRS": 12, "OPENDIRS": 2, "ERRORS": 3}, {".": {}}),
    "mmap": (
        # 3 file mappings (one of a closed descriptor fails); msync and munmap of anonymous memory, and of a
        # file mapping's range already unmapped, are not counted; each piece of a mapping unmapped a page at
        # a time is.
        {"OPENS": 1, "TRUNCATES": 1, "MMAPS": 3, "MUNMAPS": 5, "MSYNCS": 2, "ERRORS": 1, "UNTRACKED_OPS": 1},
        {"m": {"POSIX_OPENS": 1, "POSIX_MMAPS": 3, "POSIX_TRUNCATES": 1}},
    ),
    "mmap_many": (
        # 4106 file mappings at once: the runtime remembers 4096, counts the 10 others as not remembered,
        # and so counts the munmap of the 4096 only
        {"MMAPS": 4106, "MUNMAPS": 4096, "MMAPS_UNTRACKED": 10},
        {"mm": {"POSIX_MMAPS": 4106}},
    ),
    "copy": (
        {
            "OPENS": 2,
            "READS": 4,
            "WRITES": 5,
            "BYTES_READ": 1400,
            "BYTES_WRITTEN": 2400,
            "COPY_FILE_RANGES": 2,
            "SENDFILES": 2,
            "ERRORS": 1,
            "UNTRACKED_OPS": 1,
        },  # fmt: skip
        {
            "src": {
                "POSIX_OPENS": 1,
                "POSIX_READS": 4,
                "POSIX_WRITES": 1,
                "POSIX_BYTES_READ": 1400,
                "POSIX_BYTES_WRITTEN": 1000,
                "POSIX_MAX_BYTE_READ": 999,
                "POSIX_MAX_BYTE_WRITTEN": 999,
                "POSIX_CONSEC_READS": 1,
                "POSIX_SEQ_READS": 2,
                "POSIX_RW_SWITCHES": 1,
                "POSIX_FILE_NOT_ALIGNED": 2,
                "POSIX_SIZE_READ_0_100": 1,
                "POSIX_SIZE_READ_100_1K": 3,
                "POSIX_SIZE_WRITE_100_1K": 1,
                "POSIX_ACCESS1_ACCESS": 300,
                "POSIX_ACCESS2_ACCESS": 400,
                "POSIX_ACCESS3_ACCESS": 600,
                "POSIX_ACCESS4_ACCESS": 1000,
                "POSIX_ACCESS1_COUNT": 1,
                "POSIX_ACCESS2_COUNT": 1,
                "POSIX_ACCESS3_COUNT": 1,
                "POSIX_ACCESS4_COUNT": 1,
                "POSIX_STRIDE1_STRIDE": 2**64 - 1000,
                "POSIX_STRIDE3_STRIDE": 600,
                "POSIX_STRIDE1_COUNT": 2,
                "POSIX_STRIDE2_COUNT": 1,
                "POSIX_STRIDE3_COUNT": 1,
            },
            "dst": {
                "POSIX_OPENS": 1,
                "POSIX_WRITES": 4,
                "POSIX_BYTES_WRITTEN": 1400,
                "POSIX_MAX_BYTE_WRITTEN": 1399,
                "POSIX_CONSEC_WRITES": 3,
                "POSIX_SEQ_WRITES": 3,
                "POSIX_FILE_NOT_ALIGNED": 3,
                "POSIX_SIZE_WRITE_0_100": 1,
                "POSIX_SIZE_WRITE_100_1K": 3,
                "POSIX_ACCESS1_ACCESS": 100,
                "POSIX_ACCESS2_ACCESS": 300,
                "POSIX_ACCESS3_ACCESS": 400,
                "POSIX_ACCESS4_ACCESS": 600,
                "POSIX_ACCESS1_COUNT": 1,
                "POSIX_ACCESS2_COUNT": 1,
                "POSIX_ACCESS3_COUNT": 1,
                "POSIX_ACCESS4_COUNT": 1,
                "POSIX_STRIDE1_COUNT": 3,
                "ERRORS": 1,
            },
        },  # fmt: skip
    ),
    "dup": (
        {"OPENS": 1, "WRITES": 4, "BYTES_WRITTEN": 16, "ERRORS": 4, "UNTRACKED_OPS": 4},
        {
            # dup'ed descriptors share one offset: the four writes are consecutive; POSIX_OPENS counts the
            # dups too, as Darshan's does
            "dp": {
                "POSIX_OPENS": 9,
                "POSIX_DUPS": 8,
                "POSIX_WRITES": 4,
                "POSIX_BYTES_WRITTEN": 16,
                "POSIX_MAX_BYTE_WRITTEN": 15,
                "POSIX_CONSEC_WRITES": 3,
                "POSIX_SEQ_WRITES": 3,
                "POSIX_FILE_NOT_ALIGNED": 3,
                "POSIX_SIZE_WRITE_0_100": 4,
                "POSIX_ACCESS1_ACCESS": 4,
                "POSIX_ACCESS1_COUNT": 4,
                "POSIX_STRIDE1_COUNT": 3,
            },  # fmt: skip
        },
    ),
    "stdio": (
        {"OPENS": 4, "READS": 9, "WRITES": 8, "BYTES_READ": 46, "BYTES_WRITTEN": 43, "SEEKS": 5, "ERRORS": 1},
        {
            # the stream calls count in the STDIO layer only (Darshan's meanings: a read at the end of the
            # file that moved nothing is none); fileno is a POSIX open of the stream's file, as in Darshan
            "sf": {
                "POSIX_OPENS": 1,
                "POSIX_FILENOS": 1,
                "STDIO_OPENS": 3,
                "STDIO_READS": 5,
                "STDIO_WRITES": 6,
                "STDIO_SEEKS": 3,
                "STDIO_FLUSHES": 2,
                "STDIO_BYTES_READ": 38,
                "STDIO_BYTES_WRITTEN": 30,
                "STDIO_MAX_BYTE_READ": 24,
                "STDIO_MAX_BYTE_WRITTEN": 29,
            },
            "sf2": {
                "STDIO_OPENS": 1,
                "STDIO_FDOPENS": 1,
                "STDIO_READS": 2,
                "STDIO_WRITES": 1,
                "STDIO_SEEKS": 2,
                "STDIO_BYTES_READ": 8,
                "STDIO_BYTES_WRITTEN": 4,
                "STDIO_MAX_BYTE_READ": 3,
                "STDIO_MAX_BYTE_WRITTEN": 3,
            },
            "sf3": {
                "STDIO_OPENS": 1,
                "STDIO_WRITES": 1,
                "STDIO_BYTES_WRITTEN": 9,
                "STDIO_MAX_BYTE_WRITTEN": 8,
            },
        },
    ),
    "stdout": (
        # puts (10 bytes), printf (9) and __printf_chk (6) reach stdout, redirected by the case to the file so
        {"WRITES": 3, "BYTES_WRITTEN": 25},
        {
            "so": {
                "STDIO_WRITES": 3,
                "STDIO_FLUSHES": 1,
                "STDIO_BYTES_WRITTEN": 25,
                "STDIO_MAX_BYTE_WRITTEN": 24,
            },
        },
    ),
    "stdio_more": (
        # sm: freopen64 (of a stream on sm0), vfprintf 6 bytes, __vfprintf_chk 4, fputc 1, putc 1, fputs 23;
        # then __isoc99_fscanf 5, __isoc99_vfscanf 4, fgetc/getc/fgetc 1 each, vfscanf 6, fgetc 1, getline 6,
        # getdelim 5, getline 5, getline and fgetc at the end (0-byte reads); getchar twice (stdin is sm).
        # smo (stdout): putchar 1, vprintf 3.
        {"OPENS": 2, "READS": 14, "WRITES": 7, "BYTES_READ": 37, "BYTES_WRITTEN": 39, "SEEKS": 1},
        {
            "sm0": {"STDIO_OPENS": 1},
            "sm": {
                "STDIO_OPENS": 1,
                "STDIO_READS": 12,  # the getline and fgetc at the end moved nothing: no STDIO read
                "STDIO_WRITES": 5,
                "STDIO_SEEKS": 1,
                "STDIO_BYTES_READ": 37,
                "STDIO_BYTES_WRITTEN": 35,
                "STDIO_MAX_BYTE_READ": 34,
                "STDIO_MAX_BYTE_WRITTEN": 34,
            },
            "smo": {
                "STDIO_WRITES": 2,
                "STDIO_FLUSHES": 1,
                "STDIO_BYTES_WRITTEN": 4,
                "STDIO_MAX_BYTE_WRITTEN": 3,
            },
        },
    ),
    "fd64": (
        # fcntl64 F_DUPFD and F_DUPFD_CLOEXEC (F_GETFL is no dup; fcntl64(-1) fails, untracked); a write
        # through a dup; __xstat64, __lxstat64, __fxstat64, __fxstatat64 and a failed __xstat64.
        {"OPENS": 1, "WRITES": 2, "BYTES_WRITTEN": 5, "STATS": 4, "ERRORS": 2, "UNTRACKED_OPS": 1},
        {
            "f64": {
                "POSIX_OPENS": 3,  # the open and the two dups
                "POSIX_DUPS": 2,
                "POSIX_WRITES": 2,
                "POSIX_STATS": 4,
                "POSIX_BYTES_WRITTEN": 5,
                "POSIX_MAX_BYTE_WRITTEN": 4,
                "POSIX_CONSEC_WRITES": 1,
                "POSIX_SEQ_WRITES": 1,
                "POSIX_FILE_NOT_ALIGNED": 1,
                "POSIX_SIZE_WRITE_0_100": 2,
                "POSIX_ACCESS1_ACCESS": 2,
                "POSIX_ACCESS2_ACCESS": 3,
                "POSIX_ACCESS1_COUNT": 1,
                "POSIX_ACCESS2_COUNT": 1,
                "POSIX_STRIDE1_COUNT": 1,
            },
        },  # fmt: skip
    ),
}

# The pre-2.33 stat entry points can be called only where glibc has them at that version.
if sys.platform != "linux" or os.uname().machine != "x86_64":
    EXPECTED["stat"] = (
        {"OPENS": 1, "WRITES": 1, "BYTES_WRITTEN": 5, "STATS": 12, "ERRORS": 3, "UNTRACKED_OPS": 2},
        {"st": {**EXPECTED["stat"][1]["st"], "POSIX_OPENS": 1, "POSIX_STATS": 11}},
    )
    fd64_proc, fd64_files = EXPECTED["fd64"]
    EXPECTED["fd64"] = (
        {**fd64_proc, "STATS": 0, "ERRORS": 1},
        {"f64": {k: v for k, v in fd64_files["f64"].items() if k != "POSIX_STATS"}},
    )


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_log_counts_exactly_what_the_case_did(
    case: str, profile_build: ProfileBuild, tmpfs_dir: Path, logs: Path
) -> None:
    log = single(profile_build, tmpfs_dir, logs, case)
    want_proc, want_files = EXPECTED[case]
    want_proc = {k: v for k, v in want_proc.items() if v}
    assert log.clean and not log.truncated
    assert stable(log.proc) == want_proc
    got = {}
    for path, counters in log.files.items():
        rel = os.path.relpath(path, tmpfs_dir)
        assert not rel.startswith(".."), f"{path}: a file outside the case's directory"
        got[rel] = stable(counters)
    assert got == want_files


def test_times_and_timestamps_follow_the_calls(
    profile_build: ProfileBuild, tmpfs_dir: Path, logs: Path
) -> None:
    log = single(profile_build, tmpfs_dir, logs, "read_write")
    c = log.files[str(tmpfs_dir / "rw")]
    end = log.end_ns
    assert 0 < c["POSIX_F_OPEN_START_TIMESTAMP"] <= c["POSIX_F_OPEN_END_TIMESTAMP"]
    assert (
        c["POSIX_F_OPEN_END_TIMESTAMP"]
        <= c["POSIX_F_WRITE_START_TIMESTAMP"]
        <= c["POSIX_F_WRITE_END_TIMESTAMP"]
    )
    assert (
        c["POSIX_F_WRITE_END_TIMESTAMP"]
        <= c["POSIX_F_READ_START_TIMESTAMP"]
        <= c["POSIX_F_READ_END_TIMESTAMP"]
    )
    assert (
        c["POSIX_F_READ_END_TIMESTAMP"]
        <= c["POSIX_F_CLOSE_START_TIMESTAMP"]
        <= c["POSIX_F_CLOSE_END_TIMESTAMP"]
    )
    assert c["POSIX_F_CLOSE_END_TIMESTAMP"] <= end + 1
    for kind in ("READ", "WRITE"):
        assert 0 < c[f"POSIX_F_MAX_{kind}_TIME"] <= c[f"POSIX_F_{kind}_TIME"]
    assert c["POSIX_F_META_TIME"] > 0
    assert log.proc["READ_TIME"] == c["POSIX_F_READ_TIME"]
    assert log.proc["WRITE_TIME"] == c["POSIX_F_WRITE_TIME"]
    # A process that ran for milliseconds: the TSC calibration must not be off by orders of magnitude.
    assert 1_000 < end < 5_000_000_000


def test_header_names_the_process(profile_build: ProfileBuild, tmpfs_dir: Path, logs: Path) -> None:
    log = single(profile_build, tmpfs_dir, logs, "open", IOLENS_JOB_ID="job-42", PMI_RANK="3")
    h = log.header
    assert h.job_id == "job-42" and log.name.startswith("job-42.")
    assert h.rank == 3
    assert h.exe == str(profile_build.program("profile_calls"))
    assert h.cmdline == [str(profile_build.program("profile_calls")), str(tmpfs_dir), "open"]
    assert h.parent_log == ""
    assert h.hostname == os.uname().nodename
    assert abs(h.start_wall_ns / 1e9 - time.time()) < 120
    assert log.file_mount(str(tmpfs_dir / "a")) is not None
    assert log.file_mount(str(tmpfs_dir / "a"))[1] == "tmpfs"
    assert log.file_flags(str(tmpfs_dir)) == 2  # opened with O_DIRECTORY: not a regular file


def test_scheduler_job_id_wins_and_a_generated_one_is_inherited(
    profile_build: ProfileBuild, tmpfs_dir: Path, logs: Path
) -> None:
    calls = str(profile_build.program("profile_calls"))
    r = run(
        [calls, str(tmpfs_dir), "open"],
        profiled_env(profile_build, logs, SLURM_JOB_ID="777", IOLENS_JOB_ID="x"),
    )
    assert r.returncode == 0
    assert only_log(logs).header.job_id == "777"
    shutil.rmtree(logs)
    logs.mkdir()
    r = run([calls, str(tmpfs_dir), "fork"], profiled_env(profile_build, logs))
    assert r.returncode == 0
    ids = {log.header.job_id for log in logs_in(logs)}
    assert len(ids) == 1
    (job,) = ids
    parent = min(logs_in(logs), key=lambda log: log.header.pid)
    assert job.startswith("iolens-") and job.endswith(f"-{parent.header.pid}")


@pytest.mark.parametrize(
    ("env", "job"),
    [
        ({"PBS_JOBID": "4242.pbs01"}, "4242.pbs01"),
        ({"PBS_JOBID": "4243[7].pbs01"}, "4243[7].pbs01"),  # a PBS subjob's id holds its index
        ({"LSB_JOBID": "5151"}, "5151"),
        ({"LSB_JOBID": "5151", "LSB_JOBINDEX": "0"}, "5151"),  # 0: not an array
        ({"LSB_JOBID": "5151", "LSB_JOBINDEX": "3"}, "5151[3]"),  # LSF's notation for an array element
        ({"SLURM_JOB_ID": "61", "SLURM_ARRAY_JOB_ID": "60", "SLURM_ARRAY_TASK_ID": "1"}, "61"),
    ],
)
def test_batch_system_job_ids(
    env: dict[str, str], job: str, profile_build: ProfileBuild, tmpfs_dir: Path, logs: Path
) -> None:
    """PBS and LSF job ids name the logs as Slurm's do; the tasks of an LSF job array (one LSB_JOBID) get
    their index, so that each is a job of its own (a Slurm array task has its own SLURM_JOB_ID)."""
    r = run(
        [str(profile_build.program("profile_calls")), str(tmpfs_dir), "open"],
        profiled_env(profile_build, logs, **env),
    )
    assert r.returncode == 0
    log = only_log(logs)
    assert log.header.job_id == job and log.name.startswith(job + ".")


def test_lsf_array_tasks_are_separate_jobs(
    profile_build: ProfileBuild, tmpfs_dir: Path, logs: Path, iolens_bin: list[str]
) -> None:
    calls = str(profile_build.program("profile_calls"))
    for index in ("1", "2"):
        work = tmpfs_dir / index
        work.mkdir()
        env = profiled_env(profile_build, logs, LSB_JOBID="5151", LSB_JOBINDEX=index)
        assert run([calls, str(work), "open"], env).returncode == 0
    jobs = profile_report(iolens_bin, logs)["jobs"]
    assert sorted(j["job_id"] for j in jobs) == ["5151[1]", "5151[2]"]


def test_excluded_paths_and_untracked_descriptors_make_no_records(
    profile_build: ProfileBuild, tmpfs_dir: Path, logs: Path
) -> None:
    log = single(profile_build, tmpfs_dir, logs, "read_write", IOLENS_PROFILE_EXCLUDE=f"/nothing,{tmpfs_dir}")
    assert dict(log.files) == {}
    # the calls still count in the process totals, as untracked ones
    p = log.proc
    assert p["OPENS"] == 1 and p["READS"] == 4 and p["WRITES"] == 3 and p["BYTES_WRITTEN"] == 12
    assert p["UNTRACKED_OPS"] == 16  # every call of the case: open, 3 writes, 4 reads, 4 lseeks, close, 3 on
    # the closed descriptor
    assert p["READ_TIME"] == 0 and p["WRITE_TIME"] == 0  # untracked calls are not timed


def test_a_path_under_an_excluded_prefix_is_excluded_only_where_it_really_leads(
    profile_build: ProfileBuild, tmpfs_dir: Path, disk_dir: Path, logs: Path
) -> None:
    """The quick check that skips the default excluded prefixes (/proc, /sys, /dev) without making the path
    absolute must not exclude a path that leaves the prefix with "..", or that reaches the kept /dev/shm
    through "//" or "/.": those are recorded under the path they lead to. Components of every length around
    the check's 8-byte steps ("firmware" fills one step exactly)."""
    target = disk_dir / "f"
    target.write_bytes(b"x")
    shm = tmpfs_dir / "g"
    shm.write_bytes(b"y")
    up = "/".join([".."] * (len(Path("/sys/firmware").parts) - 1))
    # "/proc/self/task/" is 16 bytes: its ".." starts just after the check's first 16-byte look
    leave = [f"/dev/..{target}", f"/dev/shm/../..{target}", f"/sys/firmware/{up}{target}",
             f"/sys/devices/{up}{target}", f"/proc/self/../..{target}", f"/proc/self/task/../../..{target}",
             f"/proc/self/fdinfo/../../..{target}"]  # fmt: skip
    rel = shm.relative_to("/dev/shm")
    kept = [f"/dev//shm/{rel}", f"/dev/./shm/{rel}", f"/dev/shm/./{rel}"]
    excluded = ["/dev/null", "/proc/self/status", "/sys/kernel", "/dev/zero", "/proc/self/maps"]
    program = "import os, sys\nfor p in sys.argv[1:]:\n    os.stat(p)\n"
    r = run([sys.executable, "-c", program, *leave, *kept, *excluded], profiled_env(profile_build, logs))
    assert r.returncode == 0, r.stderr.decode()
    (log,) = [x for x in logs_in(logs) if "-c" in x.header.cmdline]
    assert log.files[str(target)]["POSIX_STATS"] == len(leave)
    assert log.files[str(shm)]["POSIX_STATS"] == len(kept)
    system = [p for p in log.files if p.startswith(("/dev/", "/proc/", "/sys/"))]
    assert [p for p in system if not p.startswith("/dev/shm/")] == []


def test_short_prefixes_sharing_a_second_byte_are_each_checked(
    profile_build: ProfileBuild, tmpfs_dir: Path, disk_dir: Path, logs: Path
) -> None:
    """A list of its own (IOLENS_PROFILE_EXCLUDE) whose short prefixes share a second byte (/dx and /dev):
    the quick check tries each; /dev/shm is excluded with the rest of /dev (only the default list keeps it),
    and paths that leave a prefix are still recorded where they lead."""
    target = disk_dir / "f"
    target.write_bytes(b"x")
    shm = tmpfs_dir / "g"
    shm.write_bytes(b"y")
    leave = [f"/dev/..{target}", f"/proc/self/task/../../..{target}", f"/dx/..{target}"]
    excluded = ["/dev/null", str(shm), "/proc/self/status", "/dx/absent", "/dx"]
    program = (
        "import contextlib, os, sys\n"
        "for p in sys.argv[1:]:\n"
        "    with contextlib.suppress(OSError):\n"
        "        os.stat(p)\n"
    )
    env = profiled_env(profile_build, logs, IOLENS_PROFILE_EXCLUDE="/dx,/dev,/proc")
    r = run([sys.executable, "-c", program, *leave, *excluded], env)
    assert r.returncode == 0, r.stderr.decode()
    (log,) = [x for x in logs_in(logs) if "-c" in x.header.cmdline]
    assert log.files[str(target)]["POSIX_STATS"] == 2  # /dx/.. does not exist: the stat fails
    assert [p for p in log.files if p.startswith(("/dev/", "/proc/", "/dx"))] == []


def raw_records(path: Path) -> dict[int, int]:
    """Records per chunk kind in a log (docs/profile-log.md): what the runtime wrote, not what a reader made
    of it. Fixed-size kinds count used // record_size; FILES counts its variable records."""
    data = path.read_bytes()
    image = zlib.decompress(data[16:]) if data[:8] == b"IOLPZ001" else data
    size, count = struct.unpack_from("<IQ", image, 20)
    out: dict[int, int] = {}
    for k in range(count):
        at = 4096 + k * size
        _, kind, _, rsize, used = struct.unpack_from("<4sIIIQ", image, at)
        if rsize:
            n = used // rsize
        else:
            n, off = 0, at + 64
            while kind == 2 and off < at + 64 + used:
                off += 16 + (struct.unpack_from("<I", image, off + 8)[0] + 7) // 8 * 8
                n += 1
        out[kind] = out.get(kind, 0) + n
    return out


FILES_KIND, FILE_REC_KIND, FILE_DATA_KIND = 2, 4, 8


def test_a_file_never_read_or_written_has_no_data_record(
    profile_build: ProfileBuild, tmpfs_dir: Path, logs: Path
) -> None:
    """5000 files created, closed, stat'ed and removed (what a metadata benchmark does): each has its FILES
    and FILE_REC records and no FILE_DATA; 5000 files written once each have one FILE_DATA record each."""
    bench = str(profile_build.program("profile_bench"))
    for kind, n in (("meta", 5000), ("exit", 5000)):
        work = tmpfs_dir / kind
        work.mkdir()
        r = run([bench, kind, str(work), str(n)], profiled_env(profile_build, logs))
        assert r.returncode == 0, r.stderr.decode()
        (path,) = [p for p in logs.iterdir() if p.name.endswith(".iolpz")]
        log = read_log(path)
        ours = {p: c for p, c in log.files.items() if p.startswith(str(work) + "/")}
        assert len(ours) == n
        recs = raw_records(path)
        if kind == "meta":
            assert all(
                (c["POSIX_OPENS"], c["POSIX_STATS"], c["POSIX_UNLINKS"], c["POSIX_WRITES"]) == (1, 1, 1, 0)
                for c in ours.values()
            )
            assert recs.get(FILE_DATA_KIND, 0) == 0
        else:
            assert all((c["POSIX_WRITES"], c["POSIX_BYTES_WRITTEN"]) == (1, 4) for c in ours.values())
            assert recs[FILE_DATA_KIND] == n
        # one FILES and one FILE_REC record per file (and a few of the program's own, ld.so's)
        assert n <= recs[FILES_KIND] < n + 10 and n <= recs[FILE_REC_KIND] < n + 10
        path.unlink()


def test_paths_are_found_again_after_the_table_grows(
    profile_build: ProfileBuild, tmpfs_dir: Path, logs: Path
) -> None:
    """20k paths (the runtime's path table starts at 4096 slots and doubles at half full), each created,
    then stat'ed when the table is several times bigger than when the path went in: one FILES record each."""
    code = (
        "import os, sys\n"
        "d = sys.argv[1]\n"
        "names = [os.path.join(d, f'f{i}') for i in range(20000)]\n"
        "for n in names:\n"
        "    os.close(os.open(n, os.O_CREAT | os.O_WRONLY, 0o644))\n"
        "for n in names:\n"
        "    os.stat(n)\n"
    )
    r = run([sys.executable, "-c", code, str(tmpfs_dir)], profiled_env(profile_build, logs))
    assert r.returncode == 0, r.stderr.decode()
    (path,) = list(logs.iterdir())
    ours = {p: c for p, c in read_log(path).files.items() if p.startswith(str(tmpfs_dir) + "/f")}
    assert len(ours) == 20000
    assert all((c["POSIX_OPENS"], c["POSIX_STATS"]) == (1, 1) for c in ours.values())
    named = raw_records(path)[FILES_KIND]
    assert 20000 <= named < 20000 + 500  # the interpreter's own files besides ours, each once


def test_trace_records_every_call(profile_build: ProfileBuild, tmpfs_dir: Path, logs: Path) -> None:
    log = single(profile_build, tmpfs_dir, logs, "read_write", IOLENS_TRACE="1")
    assert log.trace_on
    rw = str(tmpfs_dir / "rw")
    ops = [(e.op, e.path, e.offset, e.size, e.result) for e in log.trace]
    assert ops == [
        ("open", rw, 0, 0, ops[0][4]),
        ("write", rw, 0, 4, 4),
        ("write", rw, 4, 4, 4),
        ("write", rw, 8, 4, 4),
        ("lseek", rw, 0, 0, 0),
        ("read", rw, 0, 4, 4),
        ("read", rw, 4, 100, 8),
        ("read", rw, 12, 100, 0),
        ("lseek", rw, 2, 0, 2),
        ("read", rw, 2, 4, 4),
        ("lseek", rw, 0, 0, 12),
        ("lseek", rw, 2**64 - 1, 0, -22),  # EINVAL
        ("close", rw, 0, 0, 0),
        ("read", None, 0, 4, -9),  # EBADF: the descriptor is closed
        ("write", None, 0, 4, -9),
        ("lseek", None, 0, 0, -9),
    ]
    assert ops[0][4] >= 3
    starts = [e.start_ns for e in log.trace]
    assert starts == sorted(starts)
    assert all(e.thread == 0 for e in log.trace)


def test_fork_child_logs_and_links_to_its_parent(
    profile_build: ProfileBuild, tmpfs_dir: Path, logs: Path
) -> None:
    r = run(
        [str(profile_build.program("profile_calls")), str(tmpfs_dir), "fork"],
        profiled_env(profile_build, logs),
    )
    assert r.returncode == 0
    parent, child = sorted(logs_in(logs), key=lambda log: log.header.pid)
    assert child.header.ppid == parent.header.pid
    assert child.header.parent_log and Path(child.header.parent_log).stem == parent.stem
    assert parent.proc["FORKS"] == 1 and parent.clean and child.clean
    assert child.header.exit_status == 3  # _exit(3)
    assert str(tmpfs_dir / "forked") in child.files and str(tmpfs_dir / "forked") not in parent.files
    assert child.files[str(tmpfs_dir / "forked")]["POSIX_BYTES_WRITTEN"] == 6
    assert parent.files[str(tmpfs_dir / "parent")]["POSIX_BYTES_WRITTEN"] == 7


def children_of(logs: list[ProcessLog], parent: ProcessLog) -> list[ProcessLog]:
    return [log for log in logs if log.header.parent_log and Path(log.header.parent_log).stem == parent.stem]


@pytest.mark.parametrize("case,name", [("vfork_exec", "vforked"), ("clone", "cloned")])
def test_vfork_and_clone_children_log_under_their_parent(
    case: str, name: str, profile_build: ProfileBuild, tmpfs_dir: Path, logs: Path
) -> None:
    r = run(
        [str(profile_build.program("profile_calls")), str(tmpfs_dir), case], profiled_env(profile_build, logs)
    )
    assert r.returncode == 0
    all_logs = logs_in(logs)
    assert len(all_logs) == 2
    parent = next(log for log in all_logs if not log.header.parent_log)
    (child,) = children_of(all_logs, parent)
    assert parent.proc["FORKS"] == 1
    assert parent.clean and child.clean
    # what the child did on the parent's memory (vfork: a close(-1) before its exec) is not the parent's
    assert str(tmpfs_dir / name) not in parent.files
    assert parent.proc.get("ERRORS", 0) == 0
    assert child.files[str(tmpfs_dir / name)]["POSIX_WRITES"] == 1


def test_posix_spawn_children_link_to_the_spawner(
    profile_build: ProfileBuild, tmpfs_dir: Path, logs: Path
) -> None:
    r = run(
        [str(profile_build.program("profile_calls")), str(tmpfs_dir), "spawn"],
        profiled_env(profile_build, logs),
    )
    assert r.returncode == 0
    all_logs = logs_in(logs)
    parent = next(log for log in all_logs if not log.header.parent_log)
    kids = children_of(all_logs, parent)
    assert len(kids) == 2 and len(all_logs) == 3
    assert parent.proc["SPAWNS"] == 2 and parent.proc["ERRORS"] == 1  # the third spawn: ENOENT
    written = {Path(p).name for kid in kids for p in kid.files}
    assert written == {"spawned", "spawnedp"}


def test_every_exec_form_ends_the_log_and_the_new_image_links_to_it(
    profile_build: ProfileBuild, tmpfs_dir: Path, logs: Path
) -> None:
    r = run(
        [str(profile_build.program("profile_calls")), str(tmpfs_dir), "exec"],
        profiled_env(profile_build, logs),
    )
    assert r.returncode == 0
    forms = ["execve", "execv", "execvp", "execvpe", "execl", "execlp", "execle", "fexecve", "execveat"]
    assert r.stdout.decode().count("child status = 0") == len(forms)
    all_logs = logs_in(logs)
    by_stem = {log.stem: log for log in all_logs}
    parent = next(log for log in all_logs if not log.header.parent_log)
    # two failed execs: counted as errors, the log goes on (and ends cleanly)
    assert parent.clean and not parent.exec_replaced
    assert (
        parent.proc.get("EXECS", 0) == 0 and parent.proc["ERRORS"] == 2 and parent.proc["FORKS"] == len(forms)
    )
    assert str(tmpfs_dir / "after_failed_exec") in parent.files
    images = [log for log in all_logs if log.files and Path(next(iter(log.files))).name in forms]
    assert sorted(Path(next(iter(log.files))).name for log in images) == sorted(forms)
    for image in images:
        before = by_stem[Path(image.header.parent_log).stem]
        assert before.exec_replaced and not before.clean and before.proc["EXECS"] == 1
        assert before.header.pid == image.header.pid
        assert Path(before.header.parent_log).stem == parent.stem
        assert image.clean
    # every log ended up compressed (the new images compressed the ones their exec ended)
    assert all(log.path.suffix == ".iolpz" for log in all_logs)


def test_exec_in_place_keeps_the_pid_and_chains_the_logs(
    profile_build: ProfileBuild, tmpfs_dir: Path, logs: Path
) -> None:
    r = run(
        [str(profile_build.program("profile_calls")), str(tmpfs_dir), "exec_self"],
        profiled_env(profile_build, logs),
    )
    assert r.returncode == 0
    first, second = sorted(logs_in(logs), key=lambda log: log.name)
    assert first.header.pid == second.header.pid
    assert first.exec_replaced and first.header.end_ns > 0
    assert Path(second.header.parent_log).stem == first.stem
    assert second.header.cmdline[-1] == "exec_self"
    assert str(tmpfs_dir / "before_exec") in first.files and str(tmpfs_dir / "exec_self") in second.files


@pytest.mark.parametrize(
    "case,status", [("exit_status", 7), ("underscore_exit", 9), ("underscore_Exit", 11), ("return_status", 4)]
)
def test_exit_status_is_recorded(
    case: str, status: int, profile_build: ProfileBuild, tmpfs_dir: Path, logs: Path
):
    r = run(
        [str(profile_build.program("profile_calls")), str(tmpfs_dir), case], profiled_env(profile_build, logs)
    )
    assert r.returncode == status
    log = only_log(logs)
    assert log.clean and log.path.suffix == ".iolpz"
    assert log.header.exit_status == status
    assert log.header.end_ns > 0
    assert len(log.files) == 1


@pytest.mark.parametrize("case,sig", [("killed_by_signal", signal.SIGTERM), ("abort", signal.SIGABRT),
                                      ("segv", signal.SIGSEGV)])  # fmt: skip
def test_death_by_signal_is_recorded(
    case: str, sig: int, profile_build: ProfileBuild, tmpfs_dir: Path, logs: Path
):
    r = run(
        [str(profile_build.program("profile_calls")), str(tmpfs_dir), case], profiled_env(profile_build, logs)
    )
    assert r.returncode == -sig  # the parent sees the same death
    log = only_log(logs)
    assert log.path.suffix == ".iolp"  # left raw: no compression in a dying process
    assert log.killed_by_signal and not log.clean
    assert log.header.exit_signal == sig
    assert log.header.end_ns > 0
    (counters,) = log.files.values()
    assert counters["POSIX_WRITES"] == 1


def test_shell_pipeline_every_process_logs(profile_build: ProfileBuild, tmpfs_dir: Path, logs: Path) -> None:
    """sh -c 'cat f | wc -c > g' (through system()): the caller, sh, and the images its children exec, each
    linked to the log of the process that started it; wc's output counted on g, whose descriptor it
    inherited."""
    r = run(
        [str(profile_build.program("profile_calls")), str(tmpfs_dir), "pipeline"],
        profiled_env(profile_build, logs),
    )
    assert r.returncode == 0
    assert (tmpfs_dir / "pout").read_text().strip() == "11"
    all_logs = logs_in(logs)
    by_stem = {log.stem: log for log in all_logs}
    names = {}
    for log in all_logs:
        parent = log.header.parent_log
        assert not parent or Path(parent).stem in by_stem, f"{log.name}: parent {parent} missing"
        names.setdefault(Path(log.header.exe).name, []).append(log)
    assert {"profile_calls", "cat", "wc"} <= set(names)
    (cat,) = names["cat"]
    (wc,) = names["wc"]
    assert cat.files[str(tmpfs_dir / "pin")]["POSIX_BYTES_READ"] == 11
    # "11" through printf (a STDIO write, not a POSIX one); wc ends the line with putchar_unlocked, which
    # <stdio.h> expands inline in a program built with optimisation: no library call that any interposer
    # could see.
    assert wc.files[str(tmpfs_dir / "pout")]["STDIO_BYTES_WRITTEN"] in (2, 3)
    assert wc.files[str(tmpfs_dir / "pout")]["STDIO_WRITES"] >= 1
    assert wc.files[str(tmpfs_dir / "pout")]["POSIX_BYTES_WRITTEN"] == 0
    # follow the links from cat up to the caller
    top = next(log for log in all_logs if Path(log.header.exe).name == "profile_calls")
    node, hops = cat, 0
    while node.header.parent_log and hops < 10:
        node, hops = by_stem[Path(node.header.parent_log).stem], hops + 1
    assert node is top
    assert all(log.clean or log.exec_replaced for log in all_logs)


def test_threads_count_exactly(profile_build: ProfileBuild, tmpfs_dir: Path, logs: Path) -> None:
    """8 threads x 100k 4-byte pwrites then 100k preads each, on a file of their own."""
    threads, ops = 8, 100_000
    r = run([str(profile_build.program("profile_threads")), str(tmpfs_dir), str(threads), str(ops)],
            profiled_env(profile_build, logs), timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stderr
    log = only_log(logs)
    assert log.threads >= threads
    for i in range(threads):
        c = log.files[str(tmpfs_dir / f"t{i}")]
        assert c["POSIX_OPENS"] == 1
        assert c["POSIX_WRITES"] == ops and c["POSIX_READS"] == ops
        assert c["POSIX_BYTES_WRITTEN"] == 4 * ops and c["POSIX_BYTES_READ"] == 4 * ops
        assert c["POSIX_CONSEC_WRITES"] == ops - 1 and c["POSIX_SEQ_READS"] == ops - 1
        assert c["POSIX_MAX_BYTE_WRITTEN"] == 4 * ops - 1  # the last byte's offset, as in Darshan
        assert c["POSIX_ACCESS1_ACCESS"] == 4 and c["POSIX_ACCESS1_COUNT"] == 2 * ops
        assert c["POSIX_RW_SWITCHES"] == 1
    p = log.proc
    assert p["WRITES"] == threads * ops and p["READS"] == threads * ops
    assert p["BYTES_WRITTEN"] == 4 * threads * ops
    assert p["OPENS"] == threads


def test_killed_process_leaves_a_readable_log(
    profile_build: ProfileBuild, tmpfs_dir: Path, logs: Path
) -> None:
    """kill -9 after 1000 writes, 100 fsyncs and 1000 preads: the raw log holds them all, trace included."""
    n = 1000
    prog = str(profile_build.program("profile_sleeper"))
    env = profiled_env(profile_build, logs, IOLENS_TRACE="1")
    proc = subprocess.Popen([prog, str(tmpfs_dir), str(n)], env=env, stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"ready\n"
    finally:
        proc.kill()
        proc.wait(timeout=30)
    log = only_log(logs)
    assert log.path.suffix == ".iolp"
    assert not log.clean and not log.killed_by_signal and not log.truncated
    c = log.files[str(tmpfs_dir / "sleeper")]
    assert c["POSIX_WRITES"] == n and c["POSIX_BYTES_WRITTEN"] == 8 * n
    assert c["POSIX_READS"] == n and c["POSIX_FSYNCS"] == n // 10
    ops = [e.op for e in log.trace if e.path == str(tmpfs_dir / "sleeper")]
    assert ops.count("write") == n and ops.count("pread") == n and ops.count("fsync") == n // 10
    assert ops[0] == "open"
    assert log.end_ns > 0  # the reader takes the last time recorded


@pytest.mark.mpi
def test_mpi_ranks_log_their_own_files(
    profile_build: ProfileBuild, tmpfs_dir: Path, logs: Path, mpi_env: dict[str, str]
) -> None:
    prog = profile_build.program("profile_mpi")
    env = {**mpi_env, **profiled_env(profile_build, logs, IOLENS_JOB_ID="mpi-job")}
    env["LD_PRELOAD"] = str(profile_build.lib)
    r = run(["mpirun", "-np", "2", str(prog), str(tmpfs_dir)], env, timeout=300)
    assert r.returncode == 0, r.stderr.decode()
    ranked = {log.header.rank: log for log in logs_in(logs) if log.header.rank >= 0}
    assert set(ranked) == {0, 1}
    for rank, log in ranked.items():
        assert log.header.job_id == "mpi-job" and log.clean
        c = log.files[str(tmpfs_dir / f"rank.{rank}")]
        assert c["POSIX_BYTES_WRITTEN"] == 1 << 20 and c["POSIX_BYTES_READ"] == 1 << 20
        assert c["POSIX_WRITES"] == 256 and c["POSIX_SIZE_WRITE_1K_10K"] == 256
        assert str(tmpfs_dir / f"rank.{1 - rank}") not in log.files


def test_python_writing_files_is_profiled_byte_exact(
    profile_build: ProfileBuild, tmpfs_dir: Path, logs: Path
) -> None:
    code = (
        "import os, sys\n"
        "d = sys.argv[1]\n"
        "with open(os.path.join(d, 'big'), 'wb') as f:\n"
        "    for i in range(100): f.write(bytes([i]) * 10000)\n"
        "with open(os.path.join(d, 'text'), 'w') as f: f.write('hello\\n' * 1000)\n"
        "print(len(open(os.path.join(d, 'big'), 'rb').read()), os.path.getsize(os.path.join(d, 'text')))\n"
    )
    a, b = tmpfs_dir / "a", tmpfs_dir / "b"
    a.mkdir()
    b.mkdir()
    plain = run([sys.executable, "-c", code, str(a)], plain_env())
    prof = run([sys.executable, "-c", code, str(b)], profiled_env(profile_build, logs))
    assert prof.returncode == plain.returncode == 0
    assert prof.stdout == plain.stdout == b"1000000 6000\n"
    assert tree(a) == tree(b)
    log = only_log(logs)
    big = log.files[str(b / "big")]
    assert big["POSIX_BYTES_WRITTEN"] == 1_000_000 and big["POSIX_BYTES_READ"] == 1_000_000
    assert log.files[str(b / "text")]["POSIX_BYTES_WRITTEN"] == 6000
    assert log.clean and log.header.exit_status == 0


def test_cp_and_tar_are_profiled_byte_exact(profile_build: ProfileBuild, tmpfs_dir: Path, logs: Path) -> None:
    for tool in ("cp", "tar"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not installed")
    src = tmpfs_dir / "src"
    src.mkdir()
    (src / "one").write_bytes(os.urandom(3 << 20) + b"tail")
    (src / "two").write_bytes(b"x" * 12345)
    for label, env in (("plain", plain_env()), ("prof", profiled_env(profile_build, logs))):
        out = tmpfs_dir / label
        out.mkdir()
        r = run(["cp", "-r", str(src), str(out / "copy")], env)
        assert r.returncode == 0, r.stderr
        r = run(["tar", "-cf", str(out / "a.tar"), "-C", str(src), "one", "two"], env)
        assert r.returncode == 0, r.stderr
        (out / "x").mkdir()
        r = run(["tar", "-xf", str(out / "a.tar"), "-C", str(out / "x")], env)
        assert r.returncode == 0, r.stderr
    assert tree(tmpfs_dir / "plain") == tree(tmpfs_dir / "prof")
    prof = tmpfs_dir / "prof"
    all_logs = logs_in(logs)
    by_exe: dict[str, list[ProcessLog]] = {}
    for log in all_logs:
        by_exe.setdefault(Path(log.header.exe).name, []).append(log)
    (cp,) = by_exe["cp"]
    assert cp.files[str(prof / "copy" / "one")]["POSIX_BYTES_WRITTEN"] == (3 << 20) + 4
    assert cp.files[str(prof / "copy" / "two")]["POSIX_BYTES_WRITTEN"] == 12345
    assert cp.files[str(src / "one")]["POSIX_BYTES_READ"] >= (3 << 20) + 4
    tars = by_exe["tar"]
    archive = str(prof / "a.tar")
    writer = next(log for log in tars if archive in log.files and log.files[archive]["POSIX_BYTES_WRITTEN"])
    assert writer.files[archive]["POSIX_BYTES_WRITTEN"] == (prof / "a.tar").stat().st_size
    reader = next(log for log in tars if str(prof / "x" / "one") in log.files)
    assert reader.files[str(prof / "x" / "one")]["POSIX_BYTES_WRITTEN"] == (3 << 20) + 4
    assert reader.files[str(prof / "x" / "two")]["POSIX_BYTES_WRITTEN"] == 12345


def test_runtime_never_writes_to_the_programs_output(profile_build: ProfileBuild, tmpfs_dir: Path) -> None:
    """Even when it cannot work (no writable log directory), the program's output and status are untouched;
    its own complaint goes to IOLENS_PROFILE_DEBUG."""
    debug = tmpfs_dir / "debug.txt"
    env = profiled_env(profile_build, tmpfs_dir / "missing-dir", IOLENS_PROFILE_DEBUG=str(debug))
    r = run(["sh", "-c", "echo out; echo err >&2; exit 5"], env)
    assert (r.returncode, r.stdout, r.stderr) == (5, b"out\n", b"err\n")
    assert "cannot create a log" in debug.read_text()


# --- trace names, mappings, alignment, the trace limit, an MPI job's report, `iolens profile` ---------------


def test_trace_names_the_path_of_every_path_call(
    profile_build: ProfileBuild, tmpfs_dir: Path, logs: Path
) -> None:
    """mkdir, rmdir, unlink of a missing path, stat of a directory or of a missing path, access, opendir /
    readdir / closedir: each trace record names its path, and none of these paths becomes a file of the
    log (the per-file counters never see them)."""
    traced: dict[str, list[tuple[str, str | None, int]]] = {}
    for case in ("namespace", "dir", "stat", "access"):
        scratch = tmpfs_dir / case
        scratch.mkdir()
        case_logs = logs / case
        case_logs.mkdir()
        log = single(profile_build, scratch, case_logs, case, IOLENS_TRACE="1")
        assert log.header.minor_version >= 1
        traced[case] = [
            (e.op, os.path.relpath(e.path, scratch) if e.path else None, e.result) for e in log.trace
        ]
        if case == "namespace":
            assert {"d1", "d2", "missing"}.isdisjoint(os.path.relpath(p, scratch) for p in log.files)
        if case == "stat":
            assert not [p for p in log.files if p.endswith("missing")]
    ns = traced["namespace"]
    assert ("mkdir", "d1", 0) in ns and ("mkdir", "d1", -17) in ns and ("mkdir", "d2", 0) in ns
    assert ("rmdir", "d1", 0) in ns and ("rmdir", "missing", -2) in ns
    assert ("unlink", "missing", -2) in ns and ("rename", "missing", -2) in ns
    assert all(path is not None for _, path, _ in ns)
    d = traced["dir"]
    assert d[0] == ("opendir", ".", d[0][2]) and d[0][2] >= 0
    assert ("opendir", "missing", -2) in d
    assert [p for op, p, _ in d if op == "readdir"] == ["."] * sum(op == "readdir" for op, _, _ in d)
    assert [p for op, p, _ in d if op == "closedir"] == [".", ".", None]  # the last: closedir(NULL)
    assert [p for op, p, _ in d if op == "getdents"] == [".", ".", None]  # the last: on descriptor -1
    st = traced["stat"]
    assert ("stat", ".", 0) in st and ("stat", "missing", -2) in st and ("statx", "missing", -2) in st
    assert [p for op, p, _ in st if p is None] == [None]  # fstat(-1)
    assert traced["access"] == [("access", "acc", 0), ("access", "missing", -2)] + [("access", "acc", 0)] * 3


def test_trace_paths_of_a_fork_child_are_in_its_own_log(
    profile_build: ProfileBuild, tmpfs_dir: Path, logs: Path
) -> None:
    """A fork child's log names the paths it traced itself (a path id of the parent's log means nothing in
    the child's)."""
    code = (
        "import os, sys\n"
        "d = sys.argv[1]\n"
        "os.mkdir(os.path.join(d, 'p1'))\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    os.mkdir(os.path.join(d, 'c1'))\n"
        "    os.rmdir(os.path.join(d, 'p1'))\n"
        "    os._exit(0)\n"
        "os.waitpid(pid, 0)\n"
    )
    r = run([sys.executable, "-c", code, str(tmpfs_dir)], profiled_env(profile_build, logs, IOLENS_TRACE="1"))
    assert r.returncode == 0, r.stderr
    parent, child = sorted(logs_in(logs), key=lambda log: log.header.pid)
    mine = str(tmpfs_dir)

    def ops(log: ProcessLog) -> list[tuple[str, str | None]]:
        return [(e.op, e.path) for e in log.trace if e.op in ("mkdir", "rmdir")]

    assert ops(parent) == [("mkdir", f"{mine}/p1")]
    assert ops(child) == [("mkdir", f"{mine}/c1"), ("rmdir", f"{mine}/p1")]


def test_misaligned_buffers_and_o_direct_opens_are_counted(
    profile_build: ProfileBuild, tmpfs_dir: Path, disk_dir: Path, logs: Path
) -> None:
    """Writes and reads from buffers not aligned to 8 bytes count in POSIX_MEM_NOT_ALIGNED (the aligned ones
    do not); an O_DIRECT open counts in POSIX_O_DIRECT_OPENS, on whichever of tmpfs and disk allows it."""
    prog = str(profile_build.program("profile_calls"))
    for scratch in (tmpfs_dir, disk_dir):
        plain = run([prog, str(scratch), "align"], plain_env()).stdout.decode()
        if "open(dio, O_DIRECT) = -1" not in plain:
            break
    else:
        pytest.skip("neither tmpfs nor the disk directory allows O_DIRECT here")
    for f in scratch.iterdir():
        f.unlink()
    log = single(profile_build, scratch, logs, "align")
    al = log.files[str(scratch / "al")]
    assert al["POSIX_MEM_NOT_ALIGNED"] == 3  # abuf+1, abuf+3, abuf+5; abuf and abuf+8 are aligned
    assert al["POSIX_O_DIRECT_OPENS"] == 0
    dio = log.files[str(scratch / "dio")]
    assert dio["POSIX_O_DIRECT_OPENS"] == 1 and dio["POSIX_OPENS"] == 1
    assert dio["POSIX_BYTES_WRITTEN"] == 4096 and dio["POSIX_BYTES_READ"] == 4096
    assert dio["POSIX_MEM_NOT_ALIGNED"] == 0


def profile_report(iolens_bin: list[str], path: Path) -> dict:
    r = subprocess.run(
        [*iolens_bin, "profile", "report", str(path), "--json"], capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_trace_limit_records_what_it_dropped(
    profile_build: ProfileBuild, tmpfs_dir: Path, logs: Path, iolens_bin: list[str]
) -> None:
    """IOLENS_TRACE_MAX=64k: one chunk of trace (1364 records); the other events are counted as dropped,
    the log says the trace was cut, and the report shows the count. The counters stay exact."""
    ops = 3000
    env = profiled_env(profile_build, logs, IOLENS_TRACE="1", IOLENS_TRACE_MAX="64k")
    r = run([str(profile_build.program("profile_threads")), str(tmpfs_dir), "1", str(ops)], env)
    assert r.returncode == 0, r.stderr
    log = only_log(logs)
    events = 2 * ops + 2  # open, the pwrites, the preads, close
    assert len(log.trace) == (64 * 1024 - 64) // 48
    assert log.header.trace_dropped == events - len(log.trace)
    assert any("the trace is incomplete" in m and str(log.header.trace_dropped) in m for m in log.messages)
    c = log.files[str(tmpfs_dir / "t0")]
    assert c["POSIX_WRITES"] == ops and c["POSIX_READS"] == ops
    report = profile_report(iolens_bin, logs)
    (job,) = report["jobs"]
    assert job["summary"]["trace_events"] == len(log.trace)
    assert job["summary"]["trace_dropped"] == log.header.trace_dropped
    assert any("the trace is incomplete" in m for m in job["messages"])


def test_mapping_table_overflow_is_reported(
    profile_build: ProfileBuild, tmpfs_dir: Path, logs: Path, iolens_bin: list[str]
) -> None:
    log = single(profile_build, tmpfs_dir, logs, "mmap_many")
    assert log.proc["MMAPS_UNTRACKED"] == 10
    assert any("10 file mapping(s) were not remembered" in m for m in log.messages)
    (job,) = profile_report(iolens_bin, logs)["jobs"]
    assert job["operations"]["MMAPS_UNTRACKED"] == 10
    assert any("file mapping(s) were not remembered" in m for m in job["messages"])


@pytest.mark.mpi
def test_mpi_job_report_sums_its_ranks(
    profile_build: ProfileBuild, tmpfs_dir: Path, logs: Path, mpi_env: dict[str, str], iolens_bin: list[str]
) -> None:
    """mpirun -np 2: the per-rank logs merge into one job whose totals are the sum of its ranks'."""
    prog = profile_build.program("profile_mpi")
    env = {**mpi_env, **profiled_env(profile_build, logs, IOLENS_JOB_ID="mpi-report")}
    r = run(["mpirun", "-np", "2", str(prog), str(tmpfs_dir)], env, timeout=300)
    assert r.returncode == 0, r.stderr.decode()
    (job,) = profile_report(iolens_bin, logs)["jobs"]
    assert job["job_id"] == "mpi-report"
    s = job["summary"]
    ranked = [p for p in job["processes"] if p["rank"] is not None]
    assert sorted(p["rank"] for p in ranked) == [0, 1] and s["ranks"] == 2
    assert s["processes"] >= 2
    by_rank = {x["rank"]: x for x in job["ranks"]}
    assert sorted(by_rank) == [0, 1]
    keys = ("bytes_read", "bytes_written", "reads", "writes")
    for key in keys:
        # the job is the sum of its processes, each rank the sum of its own (here one process a rank)
        assert s[key] == sum(p[key] for p in job["processes"])
        for rank in (0, 1):
            assert by_rank[rank][key] == sum(p[key] for p in ranked if p["rank"] == rank)
    # each rank's 1 MiB written and read back (what the MPI library reads, its configuration, comes on top)
    mine = {f["path"]: f for f in job["top_files_by_bytes"] if f["path"].startswith(str(tmpfs_dir))}
    assert sorted(mine) == [str(tmpfs_dir / "rank.0"), str(tmpfs_dir / "rank.1")]
    for rank in (0, 1):
        f = mine[str(tmpfs_dir / f"rank.{rank}")]
        assert f["bytes_written"] == f["bytes_read"] == 1 << 20 and f["processes"] == 1
        assert by_rank[rank]["bytes_written"] >= 1 << 20 and by_rank[rank]["bytes_read"] >= 1 << 20
        assert by_rank[rank]["writes"] >= 256 and by_rank[rank]["reads"] >= 256
    assert s["bytes_written"] >= 2 << 20 and s["bytes_read"] >= 2 << 20


def test_iolens_profile_with_the_real_runtime(
    profile_build: ProfileBuild, tmpfs_dir: Path, iolens_bin: list[str]
) -> None:
    """`iolens profile --out DIR -- CMD` with the built runtime, for python3 -c writing files, cp and tar:
    `iolens profile report --json` gives the bytes of the real file sizes."""
    for tool in ("cp", "tar"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not installed")
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOLENS_") and k != "LD_PRELOAD"}
    env["IOLENS_PROFILE_LIB"] = str(profile_build.lib)
    work = tmpfs_dir / "work"
    work.mkdir()

    def profiled(name: str, *cmd: str) -> dict[str, dict]:
        out = tmpfs_dir / f"logs-{name}"
        r = subprocess.run(
            [*iolens_bin, "profile", "--no-report", "--out", str(out), "--", *cmd],
            capture_output=True, text=True, timeout=300, env=env, cwd=work, check=False,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        (job,) = profile_report(iolens_bin, out)["jobs"]
        return {f["path"]: f for f in job["top_files_by_bytes"]}

    code = (
        "import sys\n"
        "with open('big', 'wb') as f:\n"
        "    for i in range(100): f.write(bytes([i]) * 10000)\n"
        "with open('text', 'w') as f: f.write('hello\\n' * 1000)\n"
        "assert len(open('big', 'rb').read()) == 1_000_000\n"
    )
    files = profiled("python", sys.executable, "-c", code)
    assert files[str(work / "big")]["bytes_written"] == (work / "big").stat().st_size == 1_000_000
    assert files[str(work / "big")]["bytes_read"] == 1_000_000
    assert files[str(work / "text")]["bytes_written"] == (work / "text").stat().st_size == 6000

    files = profiled("cp", "cp", "big", "big.copy")
    assert files[str(work / "big.copy")]["bytes_written"] == 1_000_000
    assert files[str(work / "big")]["bytes_read"] >= 1_000_000

    files = profiled("tar", "tar", "-cf", "a.tar", "big", "text")
    size = (work / "a.tar").stat().st_size
    assert files[str(work / "a.tar")]["bytes_written"] == size
    assert files[str(work / "big")]["bytes_read"] == 1_000_000
    assert files[str(work / "text")]["bytes_read"] == 6000
    (work / "x").mkdir()
    files = profiled("untar", "tar", "-xf", "a.tar", "-C", "x")
    # tar may stop before the end-of-archive blocks
    assert files[str(work / "a.tar")]["bytes_read"] >= size - 10240
    assert files[str(work / "x" / "big")]["bytes_written"] == 1_000_000
    assert files[str(work / "x" / "text")]["bytes_written"] == 6000


def test_random_access_advice_needs_accesses_that_follow_others(
    profile_build: ProfileBuild, tmpfs_dir: Path, iolens_bin: list[str]
) -> None:
    """A program that writes 1200 files once each does no random access (no write follows another in its
    file); one that reads a file's 2000 blocks from the last to the first does, and the advice says so."""

    def advice_of(name: str, code: str) -> dict[str, Any]:
        out = tmpfs_dir / f"logs-{name}"
        out.mkdir()
        r = run([sys.executable, "-c", code, str(tmpfs_dir / name)], profiled_env(profile_build, out))
        assert r.returncode == 0, r.stderr.decode()
        (job,) = profile_report(iolens_bin, out)["jobs"]
        return {a["rule"]: a for a in job["advice"]} | {"_patterns": job["access_patterns"]}

    once = (
        "import os, sys\n"
        "os.mkdir(sys.argv[1])\n"
        "for i in range(1200):\n"
        "    fd = os.open(os.path.join(sys.argv[1], str(i)), os.O_CREAT | os.O_WRONLY, 0o644)\n"
        "    os.write(fd, b'x' * 100)\n"
        "    os.close(fd)\n"
    )
    got = advice_of("once", once)
    assert got["_patterns"]["writes"] >= 1200 and got["_patterns"]["first_writes"] >= 1200
    assert "random_access" not in got

    backwards = (
        "import os, sys\n"
        "os.mkdir(sys.argv[1])\n"
        "fd = os.open(os.path.join(sys.argv[1], 'data'), os.O_CREAT | os.O_RDWR, 0o644)\n"
        "os.write(fd, b'y' * 4096 * 2000)\n"
        "for b in reversed(range(2000)):\n"
        "    assert len(os.pread(fd, 4096, b * 4096)) == 4096\n"
    )
    # What random_access weighs: the reads that follow another read of the file, and their sequential
    # share. (The rule itself stays quiet here: the file is in memory and 2000 cached reads take
    # milliseconds, under the gate; test_profile_report and the advice-quality suite cover it firing.)
    got = advice_of("backwards", backwards)
    p = got["_patterns"]
    following = p["reads"] - p["first_reads"]
    assert p["reads"] >= 2000 and following >= 1999 and p["seq_reads"] < 0.01 * following
    assert "random_access" not in got


def test_read_after_write_advice_needs_another_process_reading_later(
    profile_build: ProfileBuild, tmpfs_dir: Path, iolens_bin: list[str]
) -> None:
    """A shell that writes a file and execs cat on it is one process (not read after another's write); a
    file read by cat and then overwritten by cp was not read after the write; a file the shell writes and a
    forked cat then reads is read after another process's write. This is what shared_read_after_write
    weighs (the job's read_after_write, readers and writers); the rule itself stays quiet here (files in
    memory, milliseconds of I/O: under the gate), test_profile_report covers it firing."""

    def job_of(name: str, script: str) -> tuple[Job, dict[str, Any]]:
        out = tmpfs_dir / f"logs-{name}"
        out.mkdir()
        r = run(["sh", "-c", script], profiled_env(profile_build, out), cwd=tmpfs_dir)
        assert r.returncode == 0, r.stderr.decode()
        (report,) = profile_report(iolens_bin, out)["jobs"]
        assert "shared_read_after_write" not in {a["rule"] for a in report["advice"]}
        return load_job(out), report

    def after_write(job: Job, name: str) -> tuple[bool, int, int]:
        i = job.files.paths.index(str(tmpfs_dir / name))
        return bool(job.read_after_write[i]), int(job.writers[i]), int(job.readers[i])

    job, report = job_of("exec", "echo hello > ef; exec cat ef")
    assert after_write(job, "ef")[0] is False
    assert report["summary"]["processes"] == 1 and len(report["processes"]) == 2  # two logs, one process
    (tmpfs_dir / "a").write_text("old\n")
    (tmpfs_dir / "b").write_text("new\n")
    job, _ = job_of("overwrite", "cat a > /dev/null; cp b a")
    assert after_write(job, "a")[0] is False
    job, _ = job_of("fork", "echo hello > f; cat f > /dev/null; true")
    assert after_write(job, "f") == (True, 1, 1)


def test_iolens_profile_with_the_real_mpirun(
    profile_build: ProfileBuild, tmpfs_dir: Path, mpi_env: dict[str, str], iolens_bin: list[str]
) -> None:
    """`iolens profile --launcher mpirun --np 2` with the built runtime and the real mpirun: each rank logs
    (with its rank), the job report sums them, and mpirun itself is not profiled (no log of it)."""
    prog = profile_build.program("profile_mpi")
    out = tmpfs_dir / "logs"
    env = {k: v for k, v in mpi_env.items() if not k.startswith("IOLENS_") and k != "LD_PRELOAD"}
    env["IOLENS_PROFILE_LIB"] = str(profile_build.lib)
    r = subprocess.run(
        [*iolens_bin, "profile", "--launcher", "mpirun", "--np", "2", "--out", str(out), "--no-report", "--",
         str(prog), str(tmpfs_dir)],
        capture_output=True, text=True, timeout=300, env=env, check=False,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    (job,) = profile_report(iolens_bin, out)["jobs"]
    assert job["summary"]["ranks"] == 2
    assert sorted(p["rank"] for p in job["processes"] if p["rank"] is not None) == [0, 1]
    mine = {f["path"]: f for f in job["top_files_by_bytes"] if f["path"].startswith(str(tmpfs_dir / "rank."))}
    assert sorted(mine) == [str(tmpfs_dir / "rank.0"), str(tmpfs_dir / "rank.1")]
    assert all(f["bytes_written"] == f["bytes_read"] == 1 << 20 for f in mine.values())
    # (the ranks' logs are one job log's members: docs/profile.md, "One log per job")
    files = list(out.iterdir())
    logs = [log for p in files for log in (read_job_log(p).logs if p.suffix == ".iolj" else [read_log(p)])]
    assert any(p.suffix == ".iolj" for p in files)
    exes = {log.header.exe for log in logs}
    assert exes and not any(Path(e).name.startswith(("mpirun", "orterun", "prterun")) for e in exes)


# --- the runtime's own descriptors are invisible (docs/profile.md, "What the program sees") ------------


def _nofile(limit: int):
    """A preexec_fn setting RLIMIT_NOFILE (soft and hard) in the child before it execs."""
    import resource

    def set_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

    return set_limit


def fds_run(
    build: ProfileBuild,
    scratch: Path,
    mode: str,
    env: Mapping[str, str],
    limit: int | None = None,
    *args: str,
) -> str:
    r = subprocess.run(
        [str(build.program("profile_fds")), str(scratch), mode, *args],
        env=dict(env),
        capture_output=True,
        timeout=120,
        check=False,
        preexec_fn=_nofile(limit) if limit is not None else None,  # noqa: PLW1509 (no threads here)
    )
    assert r.returncode == 0, r.stderr.decode()
    assert r.stderr == b""
    return r.stdout.decode()


def fds_both(
    build: ProfileBuild, tmpfs_dir: Path, logs: Path, mode: str, limit: int | None = None, *args: str
) -> tuple[str, str]:
    """profile_fds MODE without and with the runtime, each in a scratch directory of its own."""
    a, b = tmpfs_dir / "plain", tmpfs_dir / "profiled"
    a.mkdir()
    b.mkdir()
    plain = fds_run(build, a, mode, plain_env(), limit, *args)
    prof = fds_run(build, b, mode, profiled_env(build, logs), limit, *args)
    return plain, prof


def test_the_programs_descriptor_table_is_its_own(
    profile_build: ProfileBuild, tmpfs_dir: Path, logs: Path
) -> None:
    """Every descriptor below 1024, /proc/self/fd, fcntl/close/readlink/dup2 on the number the runtime once
    kept its log at (512), and the numbers open() gives are what they are without the runtime."""
    plain, prof = fds_both(profile_build, tmpfs_dir, logs, "probe")
    assert prof == plain
    assert "fcntl(512, F_GETFD) = -1 errno=EBADF" in prof
    assert "readlink(/proc/self/fd/512) = -1 errno=ENOENT" in prof
    assert "first open = 3 errno=0" in prof
    assert only_log(logs).clean


def test_a_low_descriptor_limit_leaves_the_program_every_number(
    profile_build: ProfileBuild, tmpfs_dir: Path, logs: Path
) -> None:
    """ulimit -n 64: the runtime takes no number below the limit (its log is not at 3), so the first open()
    gets 3 and the program can open exactly as many descriptors as without it."""
    plain, prof = fds_both(profile_build, tmpfs_dir, logs, "probe", 64)
    assert prof == plain
    assert "RLIMIT_NOFILE soft 64" in prof and "first open = 3 errno=0" in prof
    shutil.rmtree(tmpfs_dir / "plain")
    shutil.rmtree(tmpfs_dir / "profiled")
    for p in logs.iterdir():
        p.unlink()
    plain, prof = fds_both(profile_build, tmpfs_dir, logs, "nofile", 64)
    assert prof == plain
    assert "first 3, opened 61, then errno=EMFILE" in prof
    log = only_log(logs)
    assert log.clean
    # the file opened after the limit was reached once is recorded, with its 8 bytes
    assert log.files[str(tmpfs_dir / "profiled" / "after")]["POSIX_BYTES_WRITTEN"] == 8


def test_close_range_and_closefrom_leave_a_complete_log(
    profile_build: ProfileBuild, tmpfs_dir: Path, logs: Path
) -> None:
    """A program that closes every descriptor above 2 (close_range(3, ~0U, 0), closefrom(3)) and then
    creates 3000 files (the log grows many times after it): every open gets 3, and the log is complete."""
    n = 3000
    plain, prof = fds_both(profile_build, tmpfs_dir, logs, "close_range", None, str(n))
    assert prof == plain
    assert f"{n} files, {10 * n} bytes, each open gave 3" in prof
    log = only_log(logs)
    assert log.clean and not log.truncated
    mine = {p: c for p, c in log.files.items() if p.startswith(str(tmpfs_dir / "profiled"))}
    assert len(mine) == n
    assert all(c["POSIX_BYTES_WRITTEN"] == 10 and c["POSIX_OPENS"] == 1 for c in mine.values())


def test_log_growth_in_other_threads_never_takes_the_programs_number(
    profile_build: ProfileBuild, tmpfs_dir: Path, logs: Path
) -> None:
    """RLIMIT_NOFILE 4 (only 3 free): while four threads record 20000 new paths (the log grows again and
    again), every open() of the main thread still gets 3, never EMFILE; and the log has every path."""
    out = fds_run(profile_build, tmpfs_dir, "threads", profiled_env(profile_build, logs), 4)
    assert out == "threads: every open gave 3\n"
    log = only_log(logs)
    assert log.clean
    assert sum(1 for p in log.files if "/t" in p and p.startswith(str(tmpfs_dir))) == 20000
