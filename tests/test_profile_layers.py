"""The profiler runtime's POSIX and STDIO layers, and the calls it learnt late (the mkstemp family, tmpfile,
POSIX AIO, rewind, fsetpos/fgetpos), under small C programs compiled here with gcc.

Each program reports every call's result, errno and what it read back (its aiocbs, the signal of an AIO
notification, the data) with raw write system calls, so that the report never counts in the log: the
report must be the same with and without the runtime, and the log's counters must be exactly what the
program did. The two layers must be disjoint (a stdio call counts in STDIO_* only, a descriptor call in
POSIX_* only), the job's totals must count the program's I/O once, and a sync's time is write time, as in
Darshan.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from iolens.profile.job import load_job
from iolens.profile.reader import ProcessLog
from iolens.profile.report import job_report

from .conftest import ProfileBuild
from .test_profile_runtime import logs_in, only_log, plain_env, profiled_env, run

# What every program starts with: say() appends to a buffer written with a raw system call at exit.
PRELUDE = r"""
#define _GNU_SOURCE
#include <aio.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static char out_buf[1 << 16];
static size_t out_len;

static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out_buf + out_len, sizeof out_buf - out_len, fmt, ap);
    va_end(ap);
    if (n > 0 && (size_t)n < sizeof out_buf - out_len)
        out_len += (size_t)n;
}

static void flush_say(void)
{
    for (size_t at = 0; at < out_len;) {
        long n = syscall(SYS_write, 1, out_buf + at, out_len - at);
        if (n <= 0)
            break;
        at += (size_t)n;
    }
}

static char path_buf[8][4096];
static int path_n;
static const char *dir;
static char *P(const char *name)
{
    char *b = path_buf[path_n++ & 7];
    snprintf(b, sizeof path_buf[0], "%s/%s", dir, name);
    return b;
}
"""

MKSTEMP = r"""
static void made(const char *what, int fd, const char *name)
{
    say("%s %d %d\n", what, fd >= 0 ? 0 : fd, fd >= 0 ? 0 : errno);
    if (fd >= 0)
        say("NAME %s\n", name);
}

int main(int argc, char **argv)
{
    dir = argv[1];
    char *a = P("a-XXXXXX"), *b = P("b-XXXXXX"), *c = P("c-XXXXXX.dat"), *d = P("d-XXXXXX.log");
    char *e = P("e-XXXXXX"), *bad = P("bad");
    int fd = mkstemp(a);
    made("mkstemp", fd, a);
    say("write %zd\n", write(fd, "0123456789", 10));
    close(fd);
    fd = mkostemp(b, O_APPEND);
    made("mkostemp", fd, b);
    say("write %zd\n", write(fd, "abcde", 5));
    say("write %zd\n", write(fd, "fg", 2));
    close(fd);
    fd = mkstemps(c, 4);
    made("mkstemps", fd, c);
    say("suffix %s write %zd\n", c + strlen(c) - 4, write(fd, "xyz", 3));
    close(fd);
    fd = mkostemps(d, 4, O_CLOEXEC);
    made("mkostemps", fd, d);
    say("cloexec %d\n", (fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
    close(fd);
    fd = mkstemp(e);
    made("mkstemp", fd, e);
    say("pwrite %zd\n", pwrite(fd, "q", 1, 99));
    close(fd);
    errno = 0;
    fd = mkstemp(bad); /* no XXXXXX: EINVAL */
    made("mkstemp-bad", fd, bad);

    char buf[100], back[100];
    memset(buf, 't', sizeof buf);
    FILE *f = tmpfile(), *g = tmpfile(); /* both open at once: each its own inode */
    say("tmpfile %d %d\n", f != NULL, g != NULL);
    say("fwrite %zu\n", fwrite(buf, 1, sizeof buf, f));
    rewind(f);
    say("fread %zu same %d\n", fread(back, 1, sizeof back, f), memcmp(buf, back, sizeof buf) == 0);
    say("fputs %d\n", fputs("hello", g));
    say("fclose %d %d\n", fclose(f), fclose(g));
    flush_say();
    return 0;
}
"""

POSITIONS = r"""
int main(int argc, char **argv)
{
    dir = argv[1];
    char back[16] = { 0 };
    fpos_t end, mid;
    FILE *f = fopen(P("pos"), "w+");
    say("fopen %d\n", f != NULL);
    say("fputs %d\n", fputs("0123456789", f));             /* bytes 0..9 */
    say("fgetpos %d\n", fgetpos(f, &end));                   /* 10 */
    rewind(f);
    say("fread %zu %.4s\n", fread(back, 1, 4, f), back);     /* bytes 0..3 */
    say("fgetpos %d\n", fgetpos(f, &mid));                   /* 4 */
    say("fsetpos %d\n", fsetpos(f, &end));
    say("fputs %d\n", fputs("abc", f));                      /* bytes 10..12 */
    say("fsetpos %d\n", fsetpos(f, &mid));
    say("fread %zu %.3s\n", fread(back, 1, 3, f), back);     /* bytes 4..6 */
    say("ftell %ld\n", ftell(f));
    rewind(f);
    say("fgetc %c\n", fgetc(f));                             /* byte 0 */
    say("fclose %d\n", fclose(f));
    FILE *r = fopen(P("pos"), "r");
    say("fsetpos-other-stream %d\n", fsetpos(r, &end));      /* a position of another stream: 10 */
    say("fread %zu %.3s\n", fread(back, 1, 8, r), back);     /* bytes 10..12, then the end */
    say("fclose %d\n", fclose(r));
    flush_say();
    return 0;
}
"""

AIO = r"""
static volatile sig_atomic_t signals;
static void on_usr1(int sig) { (void)sig; signals++; }

static void wait_done(const struct aiocb *cb)
{
    const struct aiocb *list[1] = { cb };
    while (aio_error(cb) == EINPROGRESS)
        aio_suspend(list, 1, NULL); /* EINTR when the notification's signal comes: asked again */
}

static void show(const char *what, struct aiocb *cb, int fd)
{
    int err = aio_error(cb);
    ssize_t r = aio_return(cb);
    say("%s error=%d return=%zd fd=%d offset=%lld nbytes=%zu opcode=%d prio=%d notify=%d signo=%d\n",
        what, err, r, cb->aio_fildes == fd, (long long)cb->aio_offset, cb->aio_nbytes, cb->aio_lio_opcode,
        cb->aio_reqprio, cb->aio_sigevent.sigev_notify, cb->aio_sigevent.sigev_signo);
}

int main(int argc, char **argv)
{
    dir = argv[1];
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    int fd = open(P("aio"), O_RDWR | O_CREAT | O_TRUNC, 0644);
    static char wbuf[3][4096], rbuf[2][4096], sbuf[100];
    struct aiocb w[3], r[3], s, y, bad;
    memset(w, 0, sizeof w);
    for (int i = 0; i < 3; i++) {
        memset(wbuf[i], 'a' + i, sizeof wbuf[i]);
        w[i].aio_fildes = fd;
        w[i].aio_buf = wbuf[i];
        w[i].aio_nbytes = sizeof wbuf[i];
        w[i].aio_offset = (off_t)i * 4096;
        w[i].aio_sigevent.sigev_notify = SIGEV_NONE;
    }
    w[0].aio_sigevent.sigev_notify = SIGEV_SIGNAL;
    w[0].aio_sigevent.sigev_signo = SIGUSR1;
    for (int i = 0; i < 3; i++)
        say("aio_write %d\n", aio_write(&w[i]));
    for (int i = 0; i < 3; i++) {
        wait_done(&w[i]);
        show("write", &w[i], fd);
    }
    for (int k = 0; k < 2000 && signals == 0; k++)
        usleep(1000);
    say("signals %d\n", (int)signals);

    memset(r, 0, sizeof r);
    r[0].aio_fildes = r[1].aio_fildes = r[2].aio_fildes = fd;
    r[0].aio_buf = rbuf[0], r[0].aio_nbytes = 4096, r[0].aio_offset = 0, r[0].aio_lio_opcode = LIO_READ;
    r[1].aio_buf = rbuf[1], r[1].aio_nbytes = 2048, r[1].aio_offset = 8192, r[1].aio_lio_opcode = LIO_READ;
    r[2].aio_lio_opcode = LIO_NOP;
    struct aiocb *list[3] = { &r[0], &r[1], &r[2] };
    say("lio_listio %d\n", lio_listio(LIO_WAIT, list, 3, NULL));
    show("lio0", &r[0], fd);
    show("lio1", &r[1], fd);
    say("data %d %d\n", memcmp(rbuf[0], wbuf[0], 4096) == 0, memcmp(rbuf[1], wbuf[2], 2048) == 0);

    memset(&s, 0, sizeof s);
    s.aio_fildes = fd, s.aio_buf = sbuf, s.aio_nbytes = sizeof sbuf, s.aio_offset = 12200; /* 88 bytes left */
    say("aio_read %d\n", aio_read(&s));
    wait_done(&s);
    const struct aiocb *one[1] = { &s };
    say("aio_suspend %d\n", aio_suspend(one, 1, NULL)); /* done already: at once */
    show("short", &s, fd);
    say("aio_cancel %d\n", aio_cancel(fd, &s)); /* done already */

    memset(&y, 0, sizeof y);
    y.aio_fildes = fd;
    say("aio_fsync %d\n", aio_fsync(O_SYNC, &y));
    wait_done(&y);
    show("fsync", &y, fd);

    memset(&bad, 0, sizeof bad);
    bad.aio_fildes = 1000, bad.aio_buf = sbuf, bad.aio_nbytes = 10; /* not open: the request fails */
    errno = 0;
    int rb = aio_read(&bad);
    say("aio_read-bad %d %d\n", rb, rb < 0 ? errno : 0);
    if (rb == 0) {
        wait_done(&bad);
        show("bad", &bad, 1000);
    }
    say("close %d\n", close(fd));
    flush_say();
    return 0;
}
"""

STDIO = r"""
int main(int argc, char **argv)
{
    dir = argv[1];
    char line[64];
    FILE *f = fopen(P("text"), "w");
    for (int i = 0; i < 1000; i++)
        fprintf(f, "line %04d\n", i);                        /* 10 bytes each */
    static char block[8192];
    memset(block, 'b', sizeof block);
    say("fwrite %zu\n", fwrite(block, 1, sizeof block, f));
    say("fflush %d\n", fflush(f));
    say("fileno-ok %d\n", fileno(f) >= 0);
    say("fclose %d\n", fclose(f));
    f = fopen(P("text"), "r");
    int lines = 0;
    while (fgets(line, sizeof line, f) != NULL && line[0] == 'l')
        lines++;                                            /* 1000 lines, then the block's first 63 bytes */
    say("lines %d\n", lines);
    say("fseek %d\n", fseek(f, 5, SEEK_SET));
    int n = -1;
    int k = fscanf(f, "%d", &n);                            /* "0000" */
    say("fscanf %d %d\n", k, n);
    say("fclose %d\n", fclose(f));
    int fd = open(P("mixed"), O_RDWR | O_CREAT | O_TRUNC, 0644);
    say("write %zd\n", write(fd, "posix", 5));
    FILE *m = fdopen(fd, "r+");
    say("fdopen %d\n", m != NULL);
    say("fseek %d\n", fseek(m, 0, SEEK_END));
    say("fputs %d\n", fputs("stdio", m));
    say("fclose %d\n", fclose(m));
    flush_say();
    return 0;
}
"""

SYNC = r"""
int main(int argc, char **argv)
{
    dir = argv[1];
    static char block[1 << 20];
    memset(block, 's', sizeof block);
    int fd = open(P("synced"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (int i = 0; i < 8; i++)
        say("write %zd\n", write(fd, block, sizeof block));
    say("fsync %d\n", fsync(fd));
    say("write %zd\n", write(fd, block, 4096));
    say("fdatasync %d\n", fdatasync(fd));
    say("close %d\n", close(fd));
    flush_say();
    return 0;
}
"""


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    d = tmp_path / "logs"
    d.mkdir()
    return d


def compile_c(tmp_path: Path, name: str, body: str, *flags: str) -> Path:
    if shutil.which("gcc") is None:
        pytest.skip("gcc not installed")
    src = tmp_path / f"{name}.c"
    src.write_text(PRELUDE + body)
    exe = tmp_path / name
    r = subprocess.run(
        ["gcc", "-O0", "-Wall", "-Werror", *flags, "-o", str(exe), str(src), "-lrt"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    return exe


def both_ways(
    build: ProfileBuild, exe: Path, scratch: Path, logs: Path, **env: str
) -> tuple[str, ProcessLog, Path]:
    """The program's report without and with the runtime (the same, but for the names mkstemp made), its log,
    and the scratch directory of the profiled run."""
    a, b = scratch / "plain", scratch / "profiled"
    a.mkdir()
    b.mkdir()
    plain = run([str(exe), str(a)], plain_env())
    prof = run([str(exe), str(b)], profiled_env(build, logs, **env))
    assert plain.returncode == 0 and prof.returncode == 0, (plain.stderr, prof.stderr)
    unnamed = re.compile(r"^NAME .*\n", re.M)
    assert unnamed.sub("", prof.stdout.decode()) == unnamed.sub("", plain.stdout.decode())
    assert prof.stderr == plain.stderr
    return prof.stdout.decode(), only_log(logs), b


def posix_of(counters: dict[str, int]) -> dict[str, int]:
    """The POSIX counters that are not zero, but the buffer alignment (where the compiler put the data)."""
    return {
        k: v for k, v in counters.items() if k.startswith("POSIX_") and v and k != "POSIX_MEM_NOT_ALIGNED"
    }


def stdio_of(counters: dict[str, int]) -> dict[str, int]:
    return {k: v for k, v in counters.items() if k.startswith("STDIO_") and v}


def without_times(counters: dict[str, int]) -> dict[str, int]:
    return {k: v for k, v in counters.items() if "_TIME" not in k and "TIMESTAMP" not in k}


@pytest.mark.parametrize("bits", ["32", "64"])
def test_mkstemp_family_and_tmpfile_are_opens(
    bits: str, profile_build: ProfileBuild, tmp_path: Path, tmpfs_dir: Path, logs: Path
) -> None:
    """mkstemp, mkostemp, mkstemps, mkostemps (their *64 forms with _FILE_OFFSET_BITS=64) are POSIX opens of
    the name they made; tmpfile is a stream's open (STDIO) of a file named as /proc/self/fd names it."""
    exe = compile_c(tmp_path, "mk", MKSTEMP, f"-D_FILE_OFFSET_BITS={bits}")
    out, log, scratch = both_ways(profile_build, exe, tmpfs_dir, logs)
    assert "mkstemp-bad -1 22" in out and "cloexec 1" in out and "suffix .dat write 3" in out
    a, b, c, d, e = re.findall(r"^NAME (.*)$", out, re.M)
    assert all(Path(p).parent == scratch and Path(p).exists() for p in (a, b, c, d, e))
    files = {p: without_times(v) for p, v in log.files.items()}
    assert posix_of(files[a]) == {
        "POSIX_OPENS": 1, "POSIX_WRITES": 1, "POSIX_BYTES_WRITTEN": 10, "POSIX_MAX_BYTE_WRITTEN": 9,
        "POSIX_SIZE_WRITE_0_100": 1, "POSIX_ACCESS1_ACCESS": 10, "POSIX_ACCESS1_COUNT": 1,
    }  # fmt: skip
    # mkostemp's O_APPEND: the writes land at the end of the file
    assert files[b]["POSIX_O_APPEND_OPENS"] == 1 and files[b]["POSIX_BYTES_WRITTEN"] == 7
    assert files[b]["POSIX_MAX_BYTE_WRITTEN"] == 6
    assert files[c]["POSIX_OPENS"] == 1 and files[c]["POSIX_BYTES_WRITTEN"] == 3
    assert posix_of(files[d]) == {"POSIX_OPENS": 1}
    assert files[e]["POSIX_MAX_BYTE_WRITTEN"] == 99
    assert not any(stdio_of(files[p]) for p in (a, b, c, d, e))
    assert not any(p.endswith("/bad") for p in log.files)  # a failure on a path never seen: ERRORS only
    # the two tmpfile streams: STDIO counters only, Darshan's meanings (MAX_BYTE: the last byte's offset)
    tmp = sorted(
        (p for p in files if p.startswith("/tmp/")), key=lambda p: files[p].get("STDIO_BYTES_WRITTEN", 0)
    )
    assert len(tmp) == 2, sorted(files)
    assert stdio_of(files[tmp[0]]) == {"STDIO_OPENS": 1, "STDIO_WRITES": 1, "STDIO_BYTES_WRITTEN": 5,
                                       "STDIO_MAX_BYTE_WRITTEN": 4}  # fmt: skip
    assert stdio_of(files[tmp[1]]) == {
        "STDIO_OPENS": 1, "STDIO_WRITES": 1, "STDIO_BYTES_WRITTEN": 100, "STDIO_MAX_BYTE_WRITTEN": 99,
        "STDIO_SEEKS": 1, "STDIO_READS": 1, "STDIO_BYTES_READ": 100, "STDIO_MAX_BYTE_READ": 99,
    }  # fmt: skip
    assert not any(posix_of(files[p]) for p in tmp)
    assert all(log.files[p]["STDIO_F_CLOSE_START_TIMESTAMP"] > 0 for p in tmp)
    assert log.proc["OPENS"] == 7 and log.proc["ERRORS"] == 1 and log.proc["SEEKS"] == 1


@pytest.mark.parametrize("bits", ["32", "64"])
def test_rewind_fsetpos_fgetpos_are_stream_seeks(
    bits: str, profile_build: ProfileBuild, tmp_path: Path, tmpfs_dir: Path, logs: Path
) -> None:
    exe = compile_c(tmp_path, "pos", POSITIONS, f"-D_FILE_OFFSET_BITS={bits}")
    out, log, scratch = both_ways(profile_build, exe, tmpfs_dir, logs)
    assert "fread 4 0123" in out and "fread 3 456" in out and "ftell 7" in out and "fgetc 0" in out
    assert "fread 3 abc" in out
    c = without_times(log.files[str(scratch / "pos")])
    # two streams: 2 fopens; rewind twice + fsetpos three times; writes at 0..9 and 10..12; reads at 0..3,
    # 4..6, 0 (fgetc) and 10..12 (the read at the end moved nothing: Darshan's STDIO counts it not)
    assert stdio_of(c) == {
        "STDIO_OPENS": 2, "STDIO_SEEKS": 5, "STDIO_WRITES": 2, "STDIO_BYTES_WRITTEN": 13,
        "STDIO_MAX_BYTE_WRITTEN": 12, "STDIO_READS": 4, "STDIO_BYTES_READ": 11, "STDIO_MAX_BYTE_READ": 12,
    }  # fmt: skip
    assert posix_of(c) == {}
    assert log.proc["SEEKS"] == 5
    assert log.files[str(scratch / "pos")]["STDIO_F_META_TIME"] > 0


@pytest.mark.parametrize("bits", ["32", "64"])
def test_posix_aio_counts_as_darshan_does(
    bits: str, profile_build: ProfileBuild, tmp_path: Path, tmpfs_dir: Path, logs: Path
) -> None:
    """aio_write, lio_listio and aio_read requests are POSIX reads and writes counted at aio_return, timed
    from their submission; aio_fsync, aio_error, aio_suspend and aio_cancel are no reads or writes. The
    program sees the same results, the same aiocbs and the same notification signal."""
    exe = compile_c(tmp_path, "aio", AIO, f"-D_FILE_OFFSET_BITS={bits}")
    out, log, scratch = both_ways(profile_build, exe, tmpfs_dir, logs, IOLENS_TRACE="1")
    assert "signals 1" in out and "data 1 1" in out
    assert "short error=0 return=88" in out and "fsync error=0 return=0" in out
    c = without_times(log.files[str(scratch / "aio")])
    assert posix_of(c) == {
        "POSIX_OPENS": 1, "POSIX_WRITES": 3, "POSIX_BYTES_WRITTEN": 12288, "POSIX_MAX_BYTE_WRITTEN": 12287,
        "POSIX_READS": 3, "POSIX_BYTES_READ": 6232, "POSIX_MAX_BYTE_READ": 12287,
        "POSIX_SIZE_WRITE_1K_10K": 3, "POSIX_SIZE_READ_1K_10K": 2, "POSIX_SIZE_READ_0_100": 1,
        "POSIX_CONSEC_WRITES": 2, "POSIX_SEQ_WRITES": 2, "POSIX_SEQ_READS": 2, "POSIX_RW_SWITCHES": 1,
        "POSIX_FILE_NOT_ALIGNED": 1,
        **{k: v for k, v in posix_of(c).items() if "STRIDE" in k or "ACCESS" in k},
    }  # fmt: skip
    sizes = {c[f"POSIX_ACCESS{i}_ACCESS"]: c[f"POSIX_ACCESS{i}_COUNT"] for i in range(1, 5)}
    assert sizes == {4096: 4, 2048: 1, 88: 1, 0: 0}
    assert stdio_of(c) == {} and c.get("ERRORS", 0) == 0
    # a request on a descriptor that is not open fails in aio_return (or, in another C library, at once)
    at_return, at_submit = "bad error=9 return=-1" in out, "aio_read-bad -1 9" in out
    assert at_return != at_submit
    assert log.proc["AIOS"] == (8 if at_return else 7) and log.proc["ERRORS"] == 1
    assert log.proc["READS"] == 3 and log.proc["WRITES"] == 3
    assert log.proc["BYTES_READ"] == 6232 and log.proc["BYTES_WRITTEN"] == 12288
    # each request's time runs from its submission to its aio_return: the trace's aio_read/aio_write records
    done = [e for e in log.trace if e.op in ("aio_read", "aio_write") and e.result > 0]
    assert sorted(e.result for e in done) == [88, 2048, 4096, 4096, 4096, 4096]
    raw = log.files[str(scratch / "aio")]
    for kind in ("READ", "WRITE"):
        times = sum(e.dur_ns for e in done if e.op == f"aio_{kind.lower()}")
        assert abs(raw[f"POSIX_F_{kind}_TIME"] - times) <= 0.01 * times + 1000
    ops = {e.op for e in log.trace}
    assert {"lio_listio", "aio_fsync", "aio_error", "aio_suspend", "aio_cancel", "aio_return"} <= ops


def test_stdio_and_posix_layers_are_disjoint_and_totals_count_once(
    profile_build: ProfileBuild, tmp_path: Path, tmpfs_dir: Path, logs: Path, iolens_bin: list[str]
) -> None:
    exe = compile_c(tmp_path, "st", STDIO)
    out, log, scratch = both_ways(profile_build, exe, tmpfs_dir, logs)
    assert "lines 1000" in out and "fscanf 1 0" in out
    text = without_times(log.files[str(scratch / "text")])
    # 1000 fprintf + 1 fwrite; 1001 fgets with data (the 1000 lines and the block's first 63 bytes) and fscanf
    assert stdio_of(text) == {
        "STDIO_OPENS": 2, "STDIO_WRITES": 1001, "STDIO_BYTES_WRITTEN": 18192, "STDIO_MAX_BYTE_WRITTEN": 18191,
        "STDIO_FLUSHES": 1, "STDIO_SEEKS": 1, "STDIO_READS": 1002, "STDIO_BYTES_READ": 10063 + 4,
        "STDIO_MAX_BYTE_READ": 10062,
    }  # fmt: skip
    # fileno is a POSIX open of the stream's file (as in Darshan), and nothing else of it is POSIX
    assert posix_of(text) == {"POSIX_OPENS": 1, "POSIX_FILENOS": 1}
    mixed = without_times(log.files[str(scratch / "mixed")])
    assert posix_of(mixed) == {
        "POSIX_OPENS": 1, "POSIX_WRITES": 1, "POSIX_BYTES_WRITTEN": 5, "POSIX_MAX_BYTE_WRITTEN": 4,
        "POSIX_SIZE_WRITE_0_100": 1, "POSIX_ACCESS1_ACCESS": 5, "POSIX_ACCESS1_COUNT": 1,
    }  # fmt: skip
    assert stdio_of(mixed) == {
        "STDIO_OPENS": 1, "STDIO_FDOPENS": 1, "STDIO_SEEKS": 1, "STDIO_WRITES": 1, "STDIO_BYTES_WRITTEN": 5,
        "STDIO_MAX_BYTE_WRITTEN": 9,
    }  # fmt: skip
    assert (scratch / "mixed").read_bytes() == b"posixstdio"
    # the job's totals: each byte once, POSIX + STDIO; the layers on their own
    report = job_report(load_job(logs))
    s = report["summary"]
    assert s["bytes_written"] == 18192 + 5 + 5 and s["bytes_read"] == 10067
    assert s["writes"] == 1001 + 1 + 1 and s["reads"] == 1002
    layers = report["layers"]
    assert layers["posix"]["bytes_written"] == 5 and layers["stdio"]["bytes_written"] == 18197
    assert layers["stdio"]["reads"] == 1002 and layers["posix"]["reads"] == 0
    assert layers["stdio"]["files"] == 2 and layers["posix"]["files"] == 2
    assert layers["stdio"]["fdopens"] == 1 and layers["stdio"]["flushes"] == 1
    top = {f["path"]: f for f in report["top_files_by_bytes"]}
    assert top[str(scratch / "text")]["bytes_written"] == 18192
    assert report["ranks"] == [] and report["processes"][0]["bytes_written"] == 18202
    # the text report has the layers
    r = subprocess.run(
        [*iolens_bin, "profile", "report", str(logs)], capture_output=True, text=True, check=False
    )
    assert r.returncode == 0, r.stderr
    assert "Layers" in r.stdout and "STDIO" in r.stdout and "POSIX" in r.stdout


def test_stdio_bytes_are_what_strace_saw_the_c_library_write(
    profile_build: ProfileBuild, tmp_path: Path, tmpfs_dir: Path, logs: Path
) -> None:
    """The C library writes a stream's buffer with its own write system calls, which the runtime does not see:
    strace sees them, and their bytes are STDIO_BYTES_WRITTEN, while POSIX_BYTES_WRITTEN stays 0."""
    if shutil.which("strace") is None:
        pytest.skip("strace not installed")
    exe = compile_c(tmp_path, "st", STDIO)
    trace = tmp_path / "strace.txt"
    # strace itself is not profiled: the runtime goes to the traced program only (-E)
    preload = [
        f"-E{k}={v}" for k, v in profiled_env(profile_build, logs).items() if k.startswith(("LD_", "IOLENS_"))
    ]
    r = subprocess.run(
        ["strace", "-f", "-qq", "-e", "trace=openat,write", "-o", str(trace), *preload, str(exe),
         str(tmpfs_dir)],
        env=plain_env(), capture_output=True, check=False,
    )  # fmt: skip
    if r.returncode != 0 and b"ptrace" in r.stderr:
        pytest.skip("strace cannot trace here")
    assert r.returncode == 0, r.stderr
    fds: dict[str, str] = {}
    written = 0
    for line in trace.read_text().splitlines():
        m = re.search(r'openat\(AT_FDCWD, "([^"]+)", [^)]*\) = (\d+)', line)
        if m:
            fds[m[2]] = m[1]
            continue
        m = re.search(r"write\((\d+), .*\) = (\d+)$", line)
        if m and fds.get(m[1]) == str(tmpfs_dir / "text"):
            written += int(m[2])
    c = only_log(logs).files[str(tmpfs_dir / "text")]
    assert written == c["STDIO_BYTES_WRITTEN"] == 18192
    assert c["POSIX_BYTES_WRITTEN"] == 0 and c["POSIX_WRITES"] == 0


def test_sync_time_is_write_time(
    profile_build: ProfileBuild, tmp_path: Path, disk_dir: Path, logs: Path
) -> None:
    """fsync and fdatasync count in POSIX_F_WRITE_TIME (and the process's WRITE_TIME), as in Darshan, not in
    metadata time: the trace's durations of the writes and syncs add up to the file's write time."""
    exe = compile_c(tmp_path, "sync", SYNC)
    out, log, scratch = both_ways(profile_build, exe, disk_dir, logs, IOLENS_TRACE="1")
    assert "fsync 0" in out and "fdatasync 0" in out
    c = log.files[str(scratch / "synced")]
    assert c["POSIX_FSYNCS"] == 1 and c["POSIX_FDSYNCS"] == 1
    fid = next(e.file_id for e in log.trace if e.path == str(scratch / "synced"))
    mine = [e for e in log.trace if e.file_id == fid]
    syncs = sum(e.dur_ns for e in mine if e.op in ("fsync", "fdatasync"))
    writes = sum(e.dur_ns for e in mine if e.op == "write") + syncs
    meta = sum(e.dur_ns for e in mine if e.op in ("open", "close"))
    assert syncs > 0
    assert abs(c["POSIX_F_WRITE_TIME"] - writes) <= 0.01 * writes + 1000
    assert abs(c["POSIX_F_META_TIME"] - meta) <= 0.01 * meta + 1000
    assert log.proc["WRITE_TIME"] == c["POSIX_F_WRITE_TIME"]
    assert log.proc["META_TIME"] == c["POSIX_F_META_TIME"]
    s = job_report(load_job(logs))["summary"]
    assert abs(s["write_time_s"] * 1e9 - c["POSIX_F_WRITE_TIME"]) < 1000
    assert abs(s["meta_time_s"] * 1e9 - c["POSIX_F_META_TIME"]) < 1000


def test_python_text_io_is_posix_not_stdio(profile_build: ProfileBuild, tmpfs_dir: Path, logs: Path) -> None:
    """Python's file objects write with write(2) (POSIX), and dd's too: no STDIO counter, whatever moved."""
    import sys

    code = "import sys\nopen(sys.argv[1] + '/p', 'w').write('x' * 5000)\n"
    r = run([sys.executable, "-c", code, str(tmpfs_dir)], profiled_env(profile_build, logs))
    assert r.returncode == 0
    dd = shutil.which("dd")
    if dd is not None:
        r = run(
            [dd, "if=/dev/zero", f"of={tmpfs_dir}/d", "bs=4096", "count=3"], profiled_env(profile_build, logs)
        )
        assert r.returncode == 0
    written = 0
    for log in logs_in(logs):
        for path, c in log.files.items():
            if path.startswith(str(tmpfs_dir)):
                assert not stdio_of(c), (path, stdio_of(c))
                written += c["POSIX_BYTES_WRITTEN"]
    assert written == 5000 + (12288 if dd else 0)
    assert os.path.getsize(tmpfs_dir / "p") == 5000
